"""Quantile metrics on the evaluation machinery: quantiles are not sums.

A p95 of latency cannot be computed from the sums of the groups it pools, so a family whose
metrics include quantiles (a :class:`RowFamily`) keeps the **per-row values** as stats
columns and computes each quantile over exactly the rows of the group asked for.
:class:`QuantileEvaluation` is an :class:`~kg_rageval.results.evaluation.Evaluation` whose every
grouping does so:

* ``metrics()`` — the sum metrics of ``finalize(totals)`` plus ``row_metrics`` over all rows;
* ``breakdown(key)`` — per group, the quantile over the group's rows (never an average of
  sub-group quantiles);
* ``rollup(ontology)`` — per node, the quantile over the rows of the node's subtree (each
  row once, also under several parents);
* ``bootstrap*`` — resamples *records* (all rows of a record travel together) and recomputes
  the quantile on each resample, with the row weights the draws give;
* ``subset`` / ``merge`` keep the class; ``merge`` concatenates the rows, so a merged
  evaluation gives the same quantiles as one scored at once.

``Family.finalize`` on sums alone (as a baseline comparison uses it) reports a quantile as
missing ("needs the rows"), never a number made up from sums.

Quantile definition: numpy's default (linear interpolation between order statistics, type 7
of Hyndman & Fan) over the rows whose value is present; a row drawn ``w`` times by the
bootstrap counts ``w`` times.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric
from kg_rageval.results.rollup import rollup_mask

QUANTILES: dict[str, float] = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


def weighted_quantile(values: np.ndarray, q: float, weights: np.ndarray | None = None) -> float | None:
    """Type-7 quantile of ``values`` where each value counts ``weights`` times (integers);
    equal to ``np.quantile(np.repeat(values, weights), q)``; ``None`` on no values."""
    order = np.argsort(values, kind="stable")
    return sorted_quantiles(values[order], [q], None if weights is None else weights[order])[0]


def sorted_quantiles(v: np.ndarray, qs: Iterable[float], w: np.ndarray | None = None) -> list[float | None]:
    """Type-7 quantiles of the **ascending** values ``v`` (each counted ``w`` times, integer
    weights); ``None`` for each when nothing is counted."""
    qs = list(qs)
    if w is None:
        n = len(v)
        if not n:
            return [None] * len(qs)
        h = (n - 1) * np.asarray(qs, dtype=float)
        lo = np.floor(h).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        return [float(x) for x in v[lo] + (h - lo) * (v[hi] - v[lo])]
    cw = np.cumsum(w)
    total = int(round(cw[-1])) if len(cw) else 0
    if total == 0:
        return [None] * len(qs)
    h = (total - 1) * np.asarray(qs, dtype=float)
    lo = np.floor(h)
    hi = np.minimum(lo + 1, total - 1)
    x_lo = v[np.searchsorted(cw, lo, side="right")]
    x_hi = v[np.searchsorted(cw, hi, side="right")]
    return [float(x) for x in x_lo + (h - lo) * (x_hi - x_lo)]


def sorted_quantiles_many(v: np.ndarray, qs: Iterable[float], w: np.ndarray) -> np.ndarray:
    """:func:`sorted_quantiles` of the ascending values ``v`` under each row of the weight
    matrix ``w`` (resamples × values, integer weights) at once: ``(rows, len(qs))``, NaN where
    a row counts nothing. The same floats as a call per row: the same cumulative counts
    (integers, exact), the same virtual index ``(total - 1)·q``, its floor, the same order
    statistics (how many counts lie at or below an index is what ``searchsorted`` on the
    cumulative counts returns) and the same ``x_lo + (h - lo)·(x_hi - x_lo)``."""
    q = np.asarray(list(qs), dtype=float)
    b, m = w.shape
    out = np.full((b, len(q)), np.nan)
    if not m or not len(q):
        return out
    cw = np.cumsum(w, axis=1)
    total = np.rint(cw[:, -1]).astype(np.int64)  # int(round(.)) of an integer-valued float
    ok = total > 0
    if not ok.any():
        return out
    cw, t = cw[ok], total[ok]
    h = (t - 1)[:, None] * q[None, :]
    lo = np.floor(h)
    hi = np.minimum(lo + 1, (t - 1)[:, None])
    i_lo = (cw[:, None, :] <= lo[:, :, None]).sum(axis=2)
    i_hi = (cw[:, None, :] <= hi[:, :, None]).sum(axis=2)
    x_lo, x_hi = v[i_lo], v[i_hi]
    out[ok] = x_lo + (h - lo) * (x_hi - x_lo)
    return out


class RowFamily(Family):
    """A family with metrics that need the rows: :meth:`row_metrics` computes them from the
    stats columns (and bootstrap row weights); :meth:`finalize` reports them missing."""

    def row_metrics(
        self, stats: Mapping[str, np.ndarray], weights: np.ndarray | None = None, only: set[str] | None = None
    ) -> dict[str, Metric]:  # pragma: no cover - abstract
        """The row metrics (all, or the names in ``only``)."""
        raise NotImplementedError

    def row_replicates(
        self, stats: Mapping[str, np.ndarray], weights: np.ndarray, only: set[str]
    ) -> dict[str, np.ndarray]:
        """The values of the row metrics in ``only`` under each row of ``weights`` (resamples ×
        rows), NaN where undefined: by default :meth:`row_metrics` per resample; a family may
        compute them at once, to the same floats (:class:`SystemFamily`)."""
        out = {m: np.full(len(weights), np.nan) for m in only}
        for b, w in enumerate(weights):
            res = self.row_metrics(stats, w, only)
            for m in only:
                got = res.get(m)
                if got is not None and got.value is not None:
                    out[m][b] = got.value
        return out

    def evaluation(self, **kw: Any) -> QuantileEvaluation:
        return QuantileEvaluation(family=self, **kw)


class QuantileEvaluation(Evaluation):
    """See the module docstring."""

    def _with(self, ev: Evaluation) -> QuantileEvaluation:
        return QuantileEvaluation(**{f.name: getattr(ev, f.name) for f in fields(Evaluation)})

    def _row_metrics(
        self, mask: np.ndarray | None = None, weights: np.ndarray | None = None
    ) -> dict[str, Metric]:
        fam = self.family
        assert isinstance(fam, RowFamily)
        stats = self.stats if mask is None else {k: v[mask] for k, v in self.stats.items()}
        return fam.row_metrics(stats, weights)

    def metrics(self) -> dict[str, Metric]:
        out = self.family.finalize(self.totals())
        out.update(self._row_metrics())
        return out

    def _metrics_of(self, mask: np.ndarray) -> dict[str, Metric]:
        """Metrics of the rows a boolean mask or an index array selects."""
        out = self.family.finalize(self.totals(mask))
        out.update(self._row_metrics(mask))
        return out

    def subset(self, mask: np.ndarray) -> QuantileEvaluation:
        return self._with(super().subset(mask))

    def merge(self, other: Evaluation) -> QuantileEvaluation:
        """Concatenated rows; a family whose quantities follow the data (``union``) becomes the
        union of both sides' (a stage only one partition saw is absent on the other's rows)."""
        merged = self._with(super().merge(other))
        union = getattr(self.family, "union", None)
        if union is None:
            return merged
        fam = union(other.family)
        stats = {k: merged.stats.get(k, np.zeros(len(merged))) for k in fam.stats}
        return QuantileEvaluation(
            family=fam,
            record_ids=merged.record_ids,
            stats=stats,
            keys=merged.keys,
            details=merged.details,
            unscored=merged.unscored,
            meta=merged.meta,
        )

    def breakdown(self, key: str) -> dict[Any, dict[str, Any]]:
        base = super().breakdown(key)
        codes, values = self._groups(self.keys[key])
        for i, v in enumerate(values):
            base[v]["metrics"] = self._metrics_of(codes == i)
        return base

    def rollup(
        self,
        ontology: Any,
        key: str = "gold_node",
        *,
        min_rows: int = 1,
        max_depth: int | None = None,
        nodes: Iterable[str] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Per node, the metrics over the rows of its subtree (each row once), in ontology
        index order, with ``n``, ``depth``, ``min_rows``, ``max_depth``, ``nodes`` and
        ``meta["rollup_skipped"]`` as :meth:`Evaluation.rollup`. The rows of every node come
        from one pass over the ancestor closure: (ancestor, row) pairs sorted by ancestor, so
        the cost is the sum of the subtree sizes, not nodes × rows."""
        idx = self.node_indices(ontology, key)
        ok = idx >= 0
        self.meta["rollup_skipped"] = int((~ok).sum())
        rows = np.flatnonzero(ok)
        lens, anc = ontology.ancestor_rows(idx[rows])
        pair_rows = np.repeat(rows, lens)
        order = np.argsort(anc, kind="stable")
        anc, pair_rows = anc[order], pair_rows[order]
        counts = np.bincount(anc, minlength=len(ontology))
        keep = rollup_mask(ontology, counts >= max(min_rows, 1), max_depth, nodes)
        starts = np.concatenate(([0], np.cumsum(counts)))
        out: dict[str, dict[str, Any]] = {}
        ids = ontology.ids
        for i in np.flatnonzero(keep).tolist():
            sel = np.sort(pair_rows[starts[i] : starts[i + 1]])
            out[ids[i]] = {
                "n": int(counts[i]),
                "depth": int(ontology.depth_min[i]),
                "metrics": self._metrics_of(sel),
            }
        return out

    def bootstrap_replicates(
        self, *, n_resamples: int = 1000, seed: int = 0, metrics: Iterable[str] | None = None
    ) -> dict[str, np.ndarray]:
        """Record-level bootstrap (see :meth:`Evaluation.bootstrap_replicates`); each
        resample's quantiles are computed over the rows with the weights its draws give.

        Blocks of resamples at once (:func:`~kg_rageval.results.bootstrap.bootstrap_weights`,
        the same draws): each resample's sums are its own ``weights @ stats`` product, as
        before; a sum metric that is one summed stat over another (a mean, a rate:
        :func:`~kg_rageval.results.forms.metric_forms`) or one summed stat is divided
        for the whole block, any other is finalized per resample; the row metrics come from
        :meth:`RowFamily.row_replicates`. The replicates are those of a ``finalize`` and a
        ``row_metrics`` per resample bit for bit (``tests/families/system/test_system_bootstrap.py``)."""
        whole = isinstance(n_resamples, (int, np.integer)) and not isinstance(n_resamples, bool)
        if not whole or n_resamples < 1:
            raise InputError(f"bootstrap: n_resamples must be a positive integer, got {n_resamples!r}")
        point = self.metrics()
        wanted = list(metrics) if metrics is not None else list(point)
        unknown = [m for m in wanted if m not in point]
        if unknown:
            raise InputError(
                f"bootstrap: unknown metric(s) {unknown}; {self.family.name} has {sorted(point)}"
            )
        out = {m: np.full(n_resamples, np.nan) for m in wanted}
        ids, inverse = _codes(self.record_ids.astype(str))
        n = len(ids)
        if n == 0:
            return out
        names = list(self.stats)
        mat = np.stack([self.stats[k] for k in names], axis=1) if names else np.zeros((len(self), 0))
        fam = self.family
        assert isinstance(fam, RowFamily)
        row_names = set(fam.row_metrics(self.stats))
        only = {m for m in wanted if m in row_names}
        summed = [m for m in wanted if m not in row_names]
        cols = _sum_columns(fam, names, summed, mat) if summed else {}
        checked = not cols
        from kg_rageval.results.bootstrap import bootstrap_weights

        for lo, counts in bootstrap_weights(n, n_resamples, seed):
            weights = np.ascontiguousarray(counts[:, inverse])  # each resample a contiguous row, as before
            if summed:
                sums = np.stack([w @ mat for w in weights]) if names else np.zeros((len(weights), 0))
                if not checked:  # the columns against finalize on the first resample, bit for bit
                    first = fam.finalize(dict(zip(names, sums[0].tolist())))
                    for m in list(cols):
                        got = _divided(sums[:1], *cols[m])[0]
                        want = first[m].value
                        if not (np.isnan(got) if want is None else got == want):
                            del cols[m]
                    checked = True
                loop = [m for m in summed if m not in cols]
                for m, (a, den) in cols.items():
                    out[m][lo : lo + len(weights)] = _divided(sums, a, den)
                for j, row in enumerate(sums.tolist()):
                    if loop:
                        res = fam.finalize(dict(zip(names, row)))
                        for m in loop:
                            got = res.get(m)
                            if got is not None and got.value is not None:
                                out[m][lo + j] = got.value
            if only:
                for m, vals in fam.row_replicates(self.stats, weights, only).items():
                    out[m][lo : lo + len(weights)] = vals
        return out


def _codes(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ids, return_inverse=True)`` (sorted distinct values, each entry's index
    among them) by one stable sort, without the ``numpy.ma`` import of NumPy 2's ``unique``."""
    order = np.argsort(ids, kind="stable")
    srt = ids[order]
    new = np.ones(len(srt), dtype=bool)
    new[1:] = srt[1:] != srt[:-1]
    inverse = np.empty(len(ids), dtype=np.intp)
    inverse[order] = np.cumsum(new) - 1
    return srt[new], inverse


def _sum_columns(
    fam: Family, names: list[str], metrics: list[str], mat: np.ndarray
) -> dict[str, tuple[int, int | None]]:
    """The metrics that are one summed stat (``(column, None)``) or one summed stat divided by
    another (``(column, column)``, undefined where the divisor is 0) — the same float as
    ``finalize``, which divides the same two sums — as :func:`metric_forms` finds them on the
    zero, basis and total rows; any other form is finalized per resample."""
    from kg_rageval.results.forms import metric_forms

    forms = metric_forms(fam.finalize, names, metrics, mat.sum(axis=0)[None, :])
    out: dict[str, tuple[int, int | None]] = {}
    for m in metrics:
        f = forms.get(m)
        if f is None or f.a is None:
            continue
        a = _unit(f.a, f.a0)
        if a is None:
            continue
        if f.kind == "linear":
            out[m] = (a, None)
        elif f.kind == "ratio" and f.b is not None and (b := _unit(f.b, f.b0)) is not None:
            out[m] = (a, b)
    return out


def _unit(v: np.ndarray, v0: float) -> int | None:
    nz = np.flatnonzero(v)
    return int(nz[0]) if len(nz) == 1 and v[nz[0]] == 1.0 and v0 == 0.0 else None


def _divided(sums: np.ndarray, a: int, den: int | None) -> np.ndarray:
    if den is None:
        return sums[:, a]
    d = sums[:, den]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d != 0, sums[:, a] / np.where(d != 0, d, 1.0), np.nan)
