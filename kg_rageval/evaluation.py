"""One result shape for every metric family: per-row sufficient statistics that add up.

A family scores its input into an :class:`Evaluation`: a column table with one row per scored
unit (a record, a mention, a label pair, ...). Each row carries

* ``record_id`` — the record it came from (the resampling unit of confidence intervals);
* ``stats`` — additive sufficient statistics (``tp``, ``n_pred``, ``rr_sum``, ...);
* ``keys`` — breakdown keys (``slice:intent``, ``gold_node``, ...);
* ``details`` — per-row diagnostics that are shown, never summed (a relation name, a reason).

Every metric is a function of *sums* of the stats (``Family.finalize``), so totals, breakdowns
by any key, roll-ups along the ontology hierarchy, bootstrap intervals and the merge of
partitions computed in parallel all come from the same two operations: sum rows, finalize.

Honest numbers: a ratio whose denominator is 0 becomes a :class:`Metric` with ``value=None``
and a ``missing`` reason — never a 0 or 1. Records that could not be scored are kept in
``Evaluation.unscored`` with their reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import numpy as np

from .errors import MissingEvidence

if TYPE_CHECKING:  # pragma: no cover
    from .ontology import Ontology


@dataclass(frozen=True)
class Metric:
    """A computed metric value with the numbers behind it.

    ``value`` is ``None`` exactly when the metric is undefined on this data; ``missing`` then
    says why (e.g. ``"no records with gold documents"``). ``ci`` is a (low, high) confidence
    interval when one was computed.
    """

    name: str
    value: float | None
    numerator: float | None = None
    denominator: float | None = None
    missing: str | None = None
    ci: tuple[float, float] | None = None

    @property
    def is_missing(self) -> bool:
        return self.value is None

    def require(self) -> float:
        """The value, or :class:`MissingEvidence` when it is undefined."""
        if self.value is None:
            raise MissingEvidence(f"{self.name}: {self.missing or 'missing evidence'}")
        return self.value

    def with_ci(self, ci: tuple[float, float] | None) -> "Metric":
        return Metric(self.name, self.value, self.numerator, self.denominator, self.missing, ci)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "value": _clean(self.value)}
        if self.numerator is not None:
            d["numerator"] = _clean(self.numerator)
        if self.denominator is not None:
            d["denominator"] = _clean(self.denominator)
        if self.missing:
            d["missing"] = self.missing
        if self.ci is not None:
            d["ci"] = [_clean(self.ci[0]), _clean(self.ci[1])]
        return d


def ratio(name: str, numerator: float, denominator: float, *, missing: str) -> Metric:
    """``numerator / denominator`` as a :class:`Metric`; an empty denominator is missing
    evidence (``value=None`` with the reason ``missing``), never 0 or 1."""
    if denominator == 0:
        return Metric(name, None, float(numerator), float(denominator), missing)
    return Metric(name, float(numerator) / float(denominator), float(numerator), float(denominator))


def harmonic(name: str, p: Metric, r: Metric) -> Metric:
    """F1 = 2·P·R/(P+R); missing when P or R is; 0 when P + R = 0 (both measured as 0)."""
    if p.value is None or r.value is None:
        return Metric(name, None, missing=p.missing or r.missing)
    if p.value + r.value == 0:
        return Metric(name, 0.0)
    return Metric(name, 2 * p.value * r.value / (p.value + r.value))


def mean_of(name: str, total: float, count: float, *, missing: str) -> Metric:
    """A mean of per-row values kept as (sum, count): same convention as :func:`ratio`."""
    return ratio(name, total, count, missing=missing)


def _clean(x: Any) -> Any:
    """JSON-safe number: NaN/inf never reach a report."""
    if isinstance(x, (np.floating, np.integer)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"non-finite number {x!r} in a metric")
    return x


class Family:
    """A metric family: the names of its sufficient statistics and how sums become metrics.

    Subclasses set ``name``, ``version`` and ``stats`` and implement :meth:`finalize`.
    ``version`` goes into every report manifest, so a changed definition gets a new version.
    """

    name: str = "family"
    version: str = "1"
    stats: tuple[str, ...] = ()

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:  # pragma: no cover
        raise NotImplementedError

    @property
    def qualified_name(self) -> str:
        return f"kg_rageval.{self.name}.v{self.version}"


@dataclass
class Evaluation:
    """Scored rows of one family; see the module docstring."""

    family: Family
    record_ids: np.ndarray
    stats: dict[str, np.ndarray]
    keys: dict[str, np.ndarray] = field(default_factory=dict)
    details: dict[str, np.ndarray] = field(default_factory=dict)
    unscored: list[dict[str, str]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.record_ids = np.asarray(self.record_ids, dtype=object)
        n = len(self.record_ids)
        for kind, cols in (("stats", self.stats), ("keys", self.keys), ("details", self.details)):
            for k, v in list(cols.items()):
                arr = np.asarray(v, dtype=float if kind == "stats" else None)
                if kind != "stats" and arr.dtype.kind not in "biuf":
                    arr = np.asarray(v, dtype=object)
                if len(arr) != n:
                    raise ValueError(f"{kind} column {k!r} has {len(arr)} rows, expected {n}")
                cols[k] = arr
        missing = set(self.family.stats) - set(self.stats)
        if missing:
            raise ValueError(f"{self.family.name}: missing stats columns {sorted(missing)}")

    # ------------------------------------------------------------------ sizes
    def __len__(self) -> int:
        return len(self.record_ids)

    @property
    def n_records(self) -> int:
        """Distinct records with at least one scored row."""
        return len(set(self.record_ids.tolist()))

    @property
    def unscored_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for u in self.unscored:
            out[u["reason"]] = out.get(u["reason"], 0) + 1
        return dict(sorted(out.items()))

    # ------------------------------------------------------------------ sums
    def totals(self, mask: np.ndarray | None = None) -> dict[str, float]:
        if mask is None:
            return {k: float(v.sum()) for k, v in self.stats.items()}
        return {k: float(v[mask].sum()) for k, v in self.stats.items()}

    def metrics(self) -> dict[str, Metric]:
        return self.family.finalize(self.totals())

    def breakdown(self, key: str) -> dict[Any, dict[str, Any]]:
        """Metrics per value of the key column ``key``: ``{value: {"n": rows, "metrics": ...}}``.

        Rows whose key is ``None`` are grouped under ``None``."""
        if key not in self.keys:
            raise KeyError(f"no breakdown key {key!r}; available: {sorted(self.keys)}")
        col = self.keys[key]
        values, inverse = np.unique(col.astype(str), return_inverse=True)
        originals: dict[int, Any] = {}
        for pos, g in enumerate(inverse.tolist()):
            originals.setdefault(g, col[pos])
        sums = {k: np.bincount(inverse, weights=v, minlength=len(values)) for k, v in self.stats.items()}
        out: dict[Any, dict[str, Any]] = {}
        counts = np.bincount(inverse, minlength=len(values))
        for g in range(len(values)):
            out[originals[g]] = {
                "n": int(counts[g]),
                "metrics": self.family.finalize({k: float(s[g]) for k, s in sums.items()}),
            }
        return out

    def rollup(self, ontology: "Ontology", key: str = "gold_node") -> dict[str, dict[str, Any]]:
        """Metrics per ontology node, pooling every row whose ``key`` node lies in the node's
        subtree (a row counts once per ancestor, also under several parents). Rows whose key is
        ``None`` or not an ontology id are left out and counted in ``meta['rollup_skipped']``."""
        col = self.keys[key]
        idx = np.asarray([ontology._index.get(v, -1) if isinstance(v, str) else -1 for v in col])
        ok = idx >= 0
        rows = np.flatnonzero(ok)
        self.meta["rollup_skipped"] = int((~ok).sum())
        nodes = idx[ok]
        lens = ontology.anc_ptr[nodes + 1] - ontology.anc_ptr[nodes]
        from .ontology.builder import _gather

        anc = _gather(ontology.anc_ptr, ontology.anc_idx, nodes)
        row_of = np.repeat(rows, lens)
        n = len(ontology)
        counts = np.bincount(anc, minlength=n)
        sums = {k: np.bincount(anc, weights=v[row_of], minlength=n) for k, v in self.stats.items()}
        out: dict[str, dict[str, Any]] = {}
        for node in np.flatnonzero(counts).tolist():
            out[ontology.ids[node]] = {
                "n": int(counts[node]),
                "depth": int(ontology.depth_min[node]),
                "metrics": self.family.finalize({k: float(s[node]) for k, s in sums.items()}),
            }
        return out

    def per_record_stats(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Stats summed per record: ``(record ids, {stat: array})``."""
        ids, inverse = np.unique(self.record_ids.astype(str), return_inverse=True)
        return ids, {
            k: np.bincount(inverse, weights=v, minlength=len(ids)) for k, v in self.stats.items()
        }

    def bootstrap(
        self,
        *,
        n_resamples: int = 1000,
        level: float = 0.95,
        seed: int = 0,
        metrics: Iterable[str] | None = None,
    ) -> dict[str, tuple[float, float] | None]:
        """Percentile bootstrap intervals, resampling *records* (all rows of a record travel
        together). A metric missing in a resample is skipped there; the interval is ``None``
        when it is missing in more than half of them."""
        ids, per = self.per_record_stats()
        n = len(ids)
        wanted = list(metrics) if metrics is not None else list(self.metrics())
        if n == 0:
            return {m: None for m in wanted}
        rng = np.random.default_rng(seed)
        names = list(per)
        mat = np.stack([per[k] for k in names], axis=1) if names else np.zeros((n, 0))
        samples: dict[str, list[float]] = {m: [] for m in wanted}
        chunk = max(1, min(n_resamples, 2_000_000 // max(n, 1)))
        done = 0
        while done < n_resamples:
            b = min(chunk, n_resamples - done)
            draws = rng.integers(0, n, size=(b, n))
            weights = np.zeros((b, n))
            np.add.at(weights, (np.repeat(np.arange(b), n), draws.ravel()), 1.0)
            sums = weights @ mat
            for row in sums:
                res = self.family.finalize(dict(zip(names, row.tolist())))
                for m in wanted:
                    v = res[m].value if m in res else None
                    if v is not None:
                        samples[m].append(v)
            done += b
        alpha = (1 - level) / 2
        out: dict[str, tuple[float, float] | None] = {}
        for m in wanted:
            s = samples[m]
            if len(s) * 2 < n_resamples:
                out[m] = None
            else:
                lo, hi = np.quantile(np.asarray(s), [alpha, 1 - alpha])
                out[m] = (float(lo), float(hi))
        return out

    # ------------------------------------------------------------------ partitions
    def merge(self, other: "Evaluation") -> "Evaluation":
        """Concatenate two partitions of the same family (the totals add)."""
        if other.family.qualified_name != self.family.qualified_name:
            raise ValueError("cannot merge evaluations of different families")
        keys = set(self.keys) | set(other.keys)
        details = set(self.details) | set(other.details)

        def cat(a: dict, b: dict, name: str, na: int, nb: int) -> np.ndarray:
            left = a.get(name, np.full(na, None, dtype=object))
            right = b.get(name, np.full(nb, None, dtype=object))
            if left.dtype.kind in "biuf" and right.dtype.kind in "biuf":
                return np.concatenate([left, right])
            return np.concatenate([left.astype(object), right.astype(object)])

        na, nb = len(self), len(other)
        return Evaluation(
            family=self.family,
            record_ids=np.concatenate([self.record_ids, other.record_ids]),
            stats={k: np.concatenate([self.stats[k], other.stats[k]]) for k in self.stats},
            keys={k: cat(self.keys, other.keys, k, na, nb) for k in keys},
            details={k: cat(self.details, other.details, k, na, nb) for k in details},
            unscored=self.unscored + other.unscored,
            meta={**other.meta, **self.meta},
        )

    # ------------------------------------------------------------------ output
    def rows(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Per-row results as dicts (record id, keys, details, stats)."""
        n = len(self) if limit is None else min(limit, len(self))
        cols = {"record_id": self.record_ids}
        cols.update(self.keys)
        cols.update(self.details)
        cols.update(self.stats)
        out = []
        for i in range(n):
            out.append({k: _py(v[i]) for k, v in cols.items()})
        return out

    def to_dict(self, *, rows: bool = True, breakdowns: Iterable[str] = ()) -> dict[str, Any]:
        d: dict[str, Any] = {
            "family": self.family.name,
            "version": self.family.qualified_name,
            "n_rows": len(self),
            "n_records": self.n_records,
            "unscored": self.unscored_counts,
            "metrics": {k: m.to_dict() for k, m in self.metrics().items()},
            "sums": {k: _clean(v) for k, v in self.totals().items()},
        }
        if self.meta:
            d["meta"] = self.meta
        bd = {}
        for key in breakdowns:
            bd[key] = {
                str(v): {"n": g["n"], "metrics": {k: m.to_dict() for k, m in g["metrics"].items()}}
                for v, g in self.breakdown(key).items()
            }
        if bd:
            d["breakdowns"] = bd
        if rows:
            d["rows"] = self.rows()
            d["unscored_records"] = self.unscored
        return d


def _py(v: Any) -> Any:
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        return v.item()
    return v


def empty_evaluation(family: Family, **kw: Any) -> Evaluation:
    """An evaluation with no scored rows (its metrics all report missing evidence)."""
    return Evaluation(family, np.asarray([], dtype=object), {k: np.zeros(0) for k in family.stats}, **kw)


def build_evaluation(
    family: Family,
    rows: Iterable[Mapping[str, Any]],
    *,
    keys: Iterable[str] = (),
    details: Iterable[str] = (),
    unscored: list[dict[str, str]] | None = None,
    meta: dict[str, Any] | None = None,
) -> Evaluation:
    """Convenience constructor from row dicts holding ``record_id``, the family's stats and
    the named key/detail fields (absent fields become ``None``; absent stats 0)."""
    rows = list(rows)
    keys, details = list(keys), list(details)
    return Evaluation(
        family=family,
        record_ids=np.asarray([r["record_id"] for r in rows], dtype=object),
        stats={s: np.asarray([float(r.get(s, 0.0)) for r in rows]) for s in family.stats},
        keys={k: np.asarray([r.get(k) for r in rows], dtype=object) for k in keys},
        details={k: np.asarray([r.get(k) for r in rows], dtype=object) for k in details},
        unscored=list(unscored or []),
        meta=dict(meta or {}),
    )


MetricFn = Callable[[Mapping[str, float]], Metric]
