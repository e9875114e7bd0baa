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
``Evaluation.unscored`` with their reason. Stats must be finite (checked when the evaluation
is built); NaN or infinity never reaches a report (:meth:`Evaluation.to_dict` raises).

The full description, with worked examples, is ``docs/evaluation.md``.

Here: :class:`Evaluation` itself (sums, breakdowns, roll-ups, bootstrap intervals, merges,
output) and the concatenation of partitions (:func:`concat_evaluations`). Its metrics:
:mod:`.metric`; its family: :mod:`.family`; its columns: :mod:`.columns`; building one from
rows: :mod:`.builders`; a family's several evaluations: :mod:`.evaluation_set`; a streamed
concatenation: :mod:`.concatenation`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, MutableMapping, MutableSequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.results.bootstrap import bootstrap_weights, percentile_interval
from kg_rageval.results.columns import (
    Columns,
    _column,
    _factorize,
    _id_column,
    _is_none,
    _raw,
    _raw_column,
    _stored,
    record_id_texts,
)
from kg_rageval.results.family import Family, _merged_names
from kg_rageval.results.frames import _frame, _metric_rows
from kg_rageval.results.jsonsafe import _jsonable, _out_column
from kg_rageval.results.metric import LazyMetrics, Metric, _clean
from kg_rageval.results.record_stats import RecordStats, _RecordColumns
from kg_rageval.results.recordstore import UnscoredRecords
from kg_rageval.results.rollup import rollup_mask, rollup_sums

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.ontology import Ontology


def bootstrap_many(
    requests: Iterable[tuple[Any, ...]],
    *,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    pool: Any = None,
) -> list[dict[str, tuple[float, float] | None]]:
    """:meth:`Evaluation.bootstrap` of every ``(evaluation, metrics)`` request (``None``: all
    its metrics; a third item, when given, is the evaluation's :meth:`~Evaluation.per_record_stats`
    the caller already has), the same intervals bit for bit, with the weights of the evaluations that
    have the same number of records drawn once for all of them: the draws depend only on the
    number of records, ``n_resamples`` and ``seed`` (:func:`bootstrap_weights`), so one pass
    over the weight blocks serves every such evaluation
    (:func:`kg_rageval.results.forms.replicate_jobs`) and no weights are kept. An evaluation with its
    own :meth:`~Evaluation.bootstrap_replicates` (the system family's quantiles) is
    bootstrapped on its own. ``pool``: a :class:`~kg_rageval.results.bootstrap_pool.BootstrapPool`
    (a Dask client) the resample blocks are computed on, the same intervals bit for bit."""
    from kg_rageval.results.forms import replicate_jobs

    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise InputError(f"bootstrap: level must be between 0 and 1, got {level!r}")
    reqs = list(requests)
    reps: list[dict[str, np.ndarray] | None] = [None] * len(reqs)
    by_n: dict[int, list[tuple[int, Any]]] = {}
    for i, (ev, metrics, *given) in enumerate(reqs):
        if type(ev).bootstrap_replicates is not Evaluation.bootstrap_replicates:
            reps[i] = ev.bootstrap_replicates(n_resamples=n_resamples, seed=seed, metrics=metrics)
            continue
        job = ev._replicate_job(n_resamples, metrics, given[0] if given else None)
        if isinstance(job, dict):
            reps[i] = job
        else:
            by_n.setdefault(len(job.mats[0]), []).append((i, job))
    for group in by_n.values():
        for (i, _), got in zip(
            group, replicate_jobs([job for _, job in group], n_resamples, seed, bootstrap_weights, pool)
        ):
            reps[i] = got[0]
    return [
        {m: percentile_interval(s, n_resamples, level) for m, s in r.items()}  # type: ignore[union-attr]
        for r in reps
    ]


_CACHES = ("_record_stats", "_audit_rollups")
"""Attributes an :class:`Evaluation` may carry that are derived from its rows (not pickled)."""


@dataclass
class Evaluation:
    """Scored rows of one family; see the module docstring and ``docs/evaluation.md``.

    Construction validates the columns: every column has one entry per row, stats are finite
    numbers (``ValueError`` otherwise) and every stat the family declares is present. Columns
    are normalised (stats to float64, except boolean arrays, which stay bool: 1 byte a row,
    the same sums, written as 0.0/1.0 in rows; keys/details to 1-D numeric or object arrays);
    the dicts passed in are copied, never modified.
    """

    family: Family
    record_ids: np.ndarray
    stats: MutableMapping[str, np.ndarray]
    keys: MutableMapping[str, np.ndarray] = field(default_factory=dict)
    details: MutableMapping[str, np.ndarray] = field(default_factory=dict)
    unscored: MutableSequence[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.record_ids = _id_column(self.record_ids)
        self.unscored = UnscoredRecords(self.unscored)
        n = len(self.record_ids)
        given = [_stored(self.stats), _stored(self.keys), _stored(self.details)]
        # a spilled evaluation's columns (given as its Columns) stay in their temporary file
        self.stats, self.keys, self.details = [
            Columns(kind, store=g.store if isinstance(g, Columns) else None)
            for kind, g in zip(("stats", "keys", "details"), (self.stats, self.keys, self.details))
        ]
        for kind, cols, items in zip(
            ("stats", "keys", "details"), (self.stats, self.keys, self.details), given
        ):
            for k, v in items:
                try:
                    arr = _column(v, kind)
                except ValueError as exc:
                    raise ValueError(f"{self.family.name}: {kind} column {k!r}: {exc}") from None
                if len(arr) != n:
                    raise ValueError(
                        f"{self.family.name}: {kind} column {k!r} has {len(arr)} rows, expected {n}"
                    )
                if (
                    kind == "stats"
                    and n
                    and isinstance(arr, np.ndarray)
                    and arr.dtype.kind == "f"
                    and not np.isfinite(arr).all()
                ):  # (a spilled column was checked as it was built)
                    bad = int(np.flatnonzero(~np.isfinite(arr))[0])
                    raise ValueError(
                        f"{self.family.name}: stats column {k!r} has the non-finite value "
                        f"{float(arr[bad])!r} at row {bad} (record {self.record_ids[bad : bad + 1].tolist()[0]!r}); "
                        "stats must be finite numbers"
                    )
                cols[k] = arr
        missing = set(self.family.stats) - set(self.stats)
        if missing:
            raise ValueError(f"{self.family.name}: missing stats columns {sorted(missing)}")

    def __getstate__(self) -> dict[str, Any]:  # pickles (Dask) without the audit's caches
        return {k: v for k, v in self.__dict__.items() if k not in _CACHES}

    # ------------------------------------------------------------------ sizes
    def __len__(self) -> int:
        return len(self.record_ids)

    @property
    def n_records(self) -> int:
        """Distinct records with at least one scored row (ids compared as text, as in
        :meth:`per_record_stats`)."""
        return len(record_id_texts(self.record_ids)) if len(self) else 0

    @property
    def unscored_counts(self) -> dict[str, int]:
        store = self.unscored
        if isinstance(store, UnscoredRecords) and store.all_have("reason"):
            return dict(sorted(store.counts("reason").items()))
        out: dict[str, int] = {}
        for u in self.unscored:
            out[u["reason"]] = out.get(u["reason"], 0) + 1
        return dict(sorted(out.items()))

    # ------------------------------------------------------------------ sums
    def totals(self, mask: np.ndarray | None = None) -> dict[str, float]:
        """Sum of every stats column (over the rows where ``mask`` holds, if given)."""
        if mask is None:
            return {k: float(v.sum()) for k, v in _raw(self.stats)}
        return {k: float(v[mask].sum()) for k, v in _raw(self.stats)}

    def metrics(self) -> dict[str, Metric]:
        """The family's metrics on the totals."""
        return self.family.finalize(self.totals())

    def subset(self, mask: np.ndarray) -> Evaluation:
        """The rows where the boolean ``mask`` holds (same family and meta; ``unscored`` is
        not carried, since it belongs to no row)."""
        mask = np.asarray(mask)
        if mask.dtype != bool or mask.shape != (len(self),):
            raise ValueError(f"subset needs a boolean mask of {len(self)} rows")
        meta = {k: v for k, v in self.meta.items() if k != "rollup_skipped"}
        return Evaluation(
            family=self.family,
            record_ids=self.record_ids[mask],
            stats={k: v[mask] for k, v in _raw(self.stats)},
            keys={k: v[mask] for k, v in _raw(self.keys)},
            details={k: v[mask] for k, v in _raw(self.details)},
            meta=meta,
        )

    def _groups(self, col: np.ndarray) -> tuple[np.ndarray, list[Any]]:
        """Breakdown groups of a key column: codes and group values, ``None`` (and NaN) as one
        group; numbers first in numeric order, then other values by their text, ``None``
        last."""
        codes, uniq = _factorize(col)
        none = [_is_none(u) for u in uniq]
        remap = np.empty(len(uniq), dtype=np.int64)
        if all(type(u) is str or z for u, z in zip(uniq, none)):  # texts (and None): sort in C
            texts = np.flatnonzero(~np.asarray(none, dtype=bool))
            order = texts[np.argsort(np.asarray([uniq[g] for g in texts.tolist()], dtype=str), kind="stable")]
            remap[order] = np.arange(len(order))
            values: list[Any] = [uniq[g] for g in order.tolist()]
            if len(order) < len(uniq):
                remap[np.asarray(none, dtype=bool)] = len(values)
                values.append(None)
            return remap[codes] if len(codes) else codes, values

        def rank(g: int) -> tuple:
            u = uniq[g]
            number = isinstance(u, (int, float)) and not none[g]
            return (none[g], not number, u if number else 0, str(u), type(u).__name__)

        values = []
        for_order = sorted(range(len(uniq)), key=rank)
        none_group = -1
        for g in for_order:
            if none[g]:
                if none_group < 0:
                    none_group = len(values)
                    values.append(None)
                remap[g] = none_group
            else:
                remap[g] = len(values)
                values.append(uniq[g])
        return remap[codes] if len(codes) else codes, values

    def breakdown(self, key: str) -> dict[Any, dict[str, Any]]:
        """Metrics per value of the key column ``key``: ``{value: {"n": rows, "metrics": ...}}``.

        Every row falls in exactly one group, so the groups' stats add up to the totals.
        Values are compared as Python values (``None`` and the string ``"None"`` differ);
        rows whose key is ``None`` (or NaN) are grouped under ``None``, which comes last;
        numeric values come first in numeric order, other values follow by their text."""
        if key not in self.keys:
            raise KeyError(f"no breakdown key {key!r}; available: {sorted(self.keys)}")
        codes, values = self._groups(self.keys[key])
        g = len(values)
        names = list(self.stats)
        counts = np.bincount(codes, minlength=g).tolist()
        sums = [
            np.bincount(codes, weights=v, minlength=g) for _, v in _raw(self.stats)
        ]  # one column read at a time
        table = np.stack(sums, axis=1).tolist() if names else [[] for _ in range(g)]
        fin = self.family.finalize
        return {values[i]: {"n": counts[i], "metrics": fin(dict(zip(names, table[i])))} for i in range(g)}

    def node_indices(self, ontology: Ontology, key: str = "gold_node") -> np.ndarray:
        """Ontology index of each row's ``key`` node; -1 where it is ``None``, not a string or
        not an ontology id (one C-level dict lookup per row)."""
        if key not in self.keys:
            raise KeyError(f"no key column {key!r}; available: {sorted(self.keys)}")
        col = self.keys[key]
        if not len(col) or col.dtype.kind in "biuf":  # numbers are never ontology ids
            return np.full(len(col), -1, dtype=np.int64)
        get = ontology.id_index.get
        values = col.tolist()
        try:
            return np.fromiter(map(get, values, itertools.repeat(-1)), dtype=np.int64, count=len(values))
        except TypeError:  # unhashable cells: look up the hashable strings only
            return np.fromiter(
                (get(v, -1) if isinstance(v, str) else -1 for v in values), dtype=np.int64, count=len(values)
            )

    def rollup(
        self,
        ontology: Ontology,
        key: str = "gold_node",
        *,
        min_rows: int = 1,
        max_depth: int | None = None,
        nodes: Iterable[str] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Metrics per ontology node, pooling every row whose ``key`` node lies in the node's
        subtree: ``{node_id: {"n": rows, "depth": depth_min, "metrics": ...}}``.

        A row counts once under each node of its node's ancestor-or-self set: a node with two
        parents counts under both parents and once (not twice) under their common ancestors.
        So a node's ``n`` is the number of rows in its subtree, and the nodes' numbers do not
        add up to the total. Rows whose key is ``None``, not a string or not an ontology id
        are left out and counted in ``meta['rollup_skipped']``. Only nodes with at least
        ``min_rows`` rows (and, if given, ``depth_min <= max_depth``; root depth 0; and, if
        given, among the ids ``nodes``) are reported, in ontology index order (topological:
        the root first).

        Cost: one pass over the rows and the ancestor rows of the nodes that have rows
        (:func:`rollup_sums`); only the kept nodes are summed. ``metrics`` of an entry is a
        read-only mapping that calls ``Family.finalize`` on first access, so nodes that are
        never looked at build no :class:`Metric`."""
        node = self.node_indices(ontology, key)
        ok = node >= 0
        self.meta["rollup_skipped"] = int((~ok).sum())
        keep = rollup_mask(ontology, np.ones(len(ontology), dtype=bool), max_depth, nodes)
        names = list(self.stats)
        # -1 rows left out; one stats column read at a time
        kept, pooled = rollup_sums(ontology, node, (v for _, v in _raw(self.stats)), keep)
        sel = pooled[:, 0] >= max(min_rows, 1)
        kept, pooled = kept[sel], pooled[sel]
        counts = np.rint(pooled[:, 0]).astype(np.int64).tolist()
        table = pooled[:, 1:].tolist()
        ids, fin = ontology.ids, self.family.finalize
        out: dict[str, dict[str, Any]] = {}
        for i, c, d, row in zip(kept.tolist(), counts, ontology.depth_min[kept].tolist(), table):
            out[ids[i]] = {"n": c, "depth": int(d), "metrics": LazyMetrics(fin, names, row)}
        return out

    def per_record_stats(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Stats summed per record: ``(record ids as text, sorted; {stat: array})``. Every stat
        column at once; :meth:`record_stats` reads one column at a time."""
        ids, inverse = np.unique(self.record_ids.astype(str), return_inverse=True)
        inverse = inverse.reshape(-1)
        return ids, {k: np.bincount(inverse, weights=v, minlength=len(ids)) for k, v in _raw(self.stats)}

    def record_stats(self) -> RecordStats:
        """The per-record stat sums of :meth:`per_record_stats` as a :class:`RecordStats`
        view that sums one stat column when it is asked for, cached on the evaluation (the
        audit's stages share it: the gates' bootstrap, failure drivers, failing records) until
        :meth:`drop_record_stats`."""
        view = self.__dict__.get("_record_stats")
        if view is None:
            view = self.__dict__["_record_stats"] = RecordStats(self, keep=True)
        return view

    def drop_record_stats(self) -> None:
        """Forget the cached :meth:`record_stats` view (and the columns it summed)."""
        self.__dict__.pop("_record_stats", None)

    def bootstrap_replicates(
        self,
        *,
        n_resamples: int = 1000,
        seed: int = 0,
        metrics: Iterable[str] | None = None,
    ) -> dict[str, np.ndarray]:
        """Each metric's value in each of ``n_resamples`` bootstrap resamples (NaN where the
        metric is missing in that resample).

        A resample draws as many *records* as there are (with replacement, uniformly, from
        ``np.random.default_rng(seed)``); all rows of a drawn record travel together, since
        the resampled sums are ``Σ_r count_r · stats_r`` over per-record stat sums. The draws
        depend only on the seed, the number of records and ``n_resamples``; records are
        ordered by id, so row order and partitioning do not change the result. Unknown metric
        names raise :class:`InputError`; no records give all-NaN replicates.

        Computed by :func:`kg_rageval.results.forms.replicate_values`: a ratio, count or F1 metric
        reads only its numerator and denominator projections of the resampled sums (one
        matrix product per block of resamples) and is evaluated for the whole block at once;
        any other metric is finalized per resample. Same draws and the same replicates as a
        ``finalize`` per resample (to the last bits where a numerator or denominator is a sum
        of several stats)."""
        job = self._replicate_job(n_resamples, metrics)
        if isinstance(job, dict):
            return job
        from kg_rageval.results.forms import replicate_values

        return replicate_values(
            job.finalize, job.names, job.mats, job.metrics, n_resamples, seed, bootstrap_weights
        )[0]

    def _replicate_job(self, n_resamples: Any, metrics: Iterable[str] | None, per_record: Any = None) -> Any:
        """The checked arguments of :meth:`bootstrap_replicates` as a
        :class:`~kg_rageval.results.forms.Replicates` job over the per-record stats (``per_record``: a
        per-record view, or :meth:`per_record_stats` when the caller has it; default: a
        :class:`RecordStats` view for this call alone), or the all-NaN replicates when there
        are no records."""
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
        if per_record is None or isinstance(per_record, _RecordColumns):
            # default: a view for this call alone, which keeps no column (one copy: the projections)
            source: Any = RecordStats(self) if per_record is None else per_record
            n, names = source.n, source.names
        else:  # (ids, {stat: array}) of per_record_stats()
            ids, per = per_record
            n, names = len(ids), list(per)
            source = np.stack([per[k] for k in names], axis=1) if names else np.zeros((n, 0))
        if n == 0:
            return {m: np.full(n_resamples, np.nan) for m in wanted}
        from kg_rageval.results.forms import Replicates

        return Replicates(self.family.finalize, names, [source], wanted)

    def bootstrap(
        self,
        *,
        n_resamples: int = 1000,
        level: float = 0.95,
        seed: int = 0,
        metrics: Iterable[str] | None = None,
    ) -> dict[str, tuple[float, float] | None]:
        """Percentile bootstrap intervals, resampling *records* (all rows of a record travel
        together; see :meth:`bootstrap_replicates`).

        The interval is the ``(1-level)/2`` and ``(1+level)/2`` quantiles (numpy's linear
        interpolation) of the replicates where the metric is defined. It is ``None`` when the
        metric is missing in more than half of the resamples (always so without records)."""
        return bootstrap_many([(self, metrics)], n_resamples=n_resamples, level=level, seed=seed)[0]

    # ------------------------------------------------------------------ partitions
    def merge(self, other: Evaluation) -> Evaluation:
        """Concatenate two partitions of the same family (the totals add):
        ``concat_evaluations([self, other])``.

        Key and detail columns present on one side only are filled with ``None`` on the
        other; an extra stats column present on one side only is filled with 0 (it is
        additive). ``unscored`` lists are concatenated; ``meta`` is combined with this
        side's entries winning, except the family's :attr:`Family.additive_meta` (summed or
        united) and ``rollup_skipped``, which describes a past roll-up and is dropped (a
        family may combine its ``meta`` and complete the result itself:
        :meth:`Family.merge_meta`, :meth:`Family.complete`)."""
        return _concat([self, other])

    # ------------------------------------------------------------------ output
    def rows(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Per-row results as dicts: ``record_id``, then the keys, details and stats (plain
        Python values: numpy scalars and arrays converted; a column named like an earlier one
        overwrites it)."""
        return self._rows(limit, json_safe=False)

    def _rows(self, limit: int | None, *, json_safe: bool) -> list[dict[str, Any]]:
        n = len(self) if limit is None else max(0, min(limit, len(self)))
        if not n:
            return []
        cols: dict[str, list[Any]] = {"record_id": _out_column(self.record_ids[:n], "record_id", json_safe)}
        for group in (self.keys, self.details, self.stats):
            for k, v in _stored(group):  # a spilled column: its first n rows read
                v = v[:n].astype(float) if group is self.stats and v.dtype.kind in "biu" else v[:n]
                cols[k] = _out_column(v, k, json_safe, nan_is_none=group is self.keys)
        names = list(cols)
        return [dict(zip(names, vals)) for vals in zip(*(cols[k] for k in names))]

    def to_pandas(self, what: str = "rows") -> Any:
        """A ``pandas.DataFrame`` of the rows (``what="rows"``: ``record_id``, keys, details,
        stats) or of the metrics (``what="metrics"``: one row per metric with ``value``,
        ``numerator``, ``denominator``, ``missing``, ``ci_low``, ``ci_high``). pandas is
        optional: without it this raises :class:`InputError` saying how to install it."""
        return _frame(self.rows() if what == "rows" else _metric_rows(self.metrics()), what)

    def to_dict(self, *, rows: bool = True, breakdowns: Iterable[str] = ()) -> dict[str, Any]:
        """The evaluation as JSON-safe data (``json.dumps(..., allow_nan=False)`` works): family,
        counts, metrics, sums, meta, the requested breakdowns (group values as text, ``None``
        as ``"None"``; colliding texts get their type, see :func:`_group_labels`) and, with
        ``rows``, the rows and unscored records. A NaN key is a missing key and is written as
        ``null`` (as :meth:`breakdown` groups it under ``None``); any other NaN or infinite
        number raises ``ValueError`` naming where it is."""
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
            d["meta"] = _jsonable(self.meta, "meta")
        bd = {key: breakdown_dicts(self, key) for key in breakdowns}
        if bd:
            d["breakdowns"] = bd
        if rows:
            d["rows"] = self._rows(None, json_safe=True)
            d["unscored_records"] = _jsonable(list(self.unscored), "unscored")
        return d


def breakdown_dicts(ev: Evaluation, key: str) -> dict[str, Any]:
    """One breakdown as :meth:`Evaluation.to_dict` writes it: ``{label: {"n", "metrics"}}``
    (labels by :func:`_group_labels`, metrics as dicts)."""
    groups = ev.breakdown(key)
    labels = _group_labels(list(groups))
    return {
        labels[i]: {"n": g["n"], "metrics": {k: m.to_dict() for k, m in g["metrics"].items()}}
        for i, g in enumerate(groups.values())
    }


def _group_labels(values: list[Any]) -> list[str]:
    """Text labels of breakdown groups: ``str(value)`` (``None`` as ``"None"``); values whose
    text collides with another group's (``1`` and ``"1"``, the string ``"None"`` and ``None``)
    get their type appended, ``"1 (int)"``, ``"1 (str)"``, ``"None (str)"``; ``None`` keeps
    ``"None"``."""
    text = [str(v) for v in values]
    seen: dict[str, int] = {}
    for t in text:
        seen[t] = seen.get(t, 0) + 1
    return [t if seen[t] == 1 or v is None else f"{t} ({type(v).__name__})" for t, v in zip(text, values)]


def _concat_column(cols: list[np.ndarray]) -> np.ndarray:
    """Concatenate column pieces as folding :meth:`Evaluation.merge` pairwise would: numeric
    pieces keep a numeric dtype; from the first non-numeric piece on, everything is an object
    column (the numeric prefix converted after its numeric concatenation)."""
    numeric = [c.dtype.kind in "biuf" for c in cols]
    if all(numeric):
        return np.concatenate(cols) if len(cols) > 1 else cols[0]
    j = numeric.index(False)
    head = [np.concatenate(cols[:j]).astype(object)] if j else []
    return np.concatenate(head + [c.astype(object) for c in cols[j:]])


def _completed(ev: Evaluation) -> Evaluation:
    """``ev`` after its family's :meth:`Family.complete` (concatenated partitions)."""
    if type(ev.family).complete is not Family.complete:
        ev.family.complete(ev)
    return ev


def concat_evaluations(parts: Iterable[Evaluation], *, consume: bool = False) -> Evaluation:
    """Concatenate partitions of one family in order: the same as folding
    :meth:`Evaluation.merge` left to right, with each column copied once (not once per
    partition). Column order: :func:`_merged_names`; a column missing in a partition is
    filled with 0 (stats) or ``None`` (keys, details); ``unscored`` lists are concatenated;
    ``meta``: the family's :meth:`Family.merge_meta` (default :func:`~.family._merge_meta`); then the
    family's :meth:`Family.complete`. A single partition is returned as it is.

    ``consume=True`` lets the columns of ``parts`` go as soon as they are copied (the parts are
    emptied), so peak memory is the result plus one column, not twice the result.

    An evaluation class with its own :meth:`Evaluation.merge` (the system family's quantiles)
    is merged with it, pairwise as a balanced tree (each row copied O(log k) times)."""
    items = list(parts)
    if not items:
        raise ValueError("nothing to concatenate")
    if any(type(p).merge is not Evaluation.merge for p in items):
        while len(items) > 1:
            nxt = [items[i].merge(items[i + 1]) for i in range(0, len(items) - 1, 2)]
            if len(items) % 2:
                nxt.append(items[-1])
            items = nxt
        return items[0]
    return _concat(items, consume=consume)


def _concat(parts: list[Evaluation], *, consume: bool = False) -> Evaluation:
    first = parts[0]
    if len(parts) == 1:
        return first
    for p in parts[1:]:
        if p.family.qualified_name != first.family.qualified_name:
            raise ValueError(
                f"cannot merge evaluations of different families "
                f"({first.family.qualified_name} and {p.family.qualified_name})"
            )
    sizes = [len(p) for p in parts]
    record_ids = np.concatenate([p.record_ids for p in parts])
    groups: list[dict[str, np.ndarray]] = []
    for attr, fill in (("stats", 0), ("keys", None), ("details", None)):
        dicts = [getattr(p, attr) for p in parts]
        out: dict[str, np.ndarray] = {}
        for name in _merged_names([list(d) for d in dicts]):
            cols = [
                _raw_column(d, name) if name in d else np.full(n, fill, dtype=float if fill == 0 else object)
                for d, n in zip(dicts, sizes)
            ]
            out[name] = _concat_column(cols)
            del cols
            if consume:
                for d in dicts:
                    d.pop(name, None)
        groups.append(out)
    unscored = UnscoredRecords.joined([p.unscored for p in parts])
    meta = first.family.merge_meta([p.meta for p in parts])
    if consume:
        for p in parts:
            p.record_ids = p.record_ids[:0]
    return _completed(
        Evaluation(
            family=first.family,
            record_ids=record_ids,
            stats=groups[0],
            keys=groups[1],
            details=groups[2],
            unscored=unscored,
            meta=meta,
        )
    )


def take_rows(ev: Evaluation, index: np.ndarray) -> None:
    """Keep ``ev``'s rows that the integer (or boolean) ``index`` selects, in its order, in
    place: every column; ``meta`` and ``unscored`` unchanged (for :meth:`Family.complete`)."""
    ev.drop_record_stats()
    ev.record_ids = ev.record_ids[index]
    for group in (ev.stats, ev.keys, ev.details):
        for k, v in _raw(group):  # one column at a time (a spilled one goes back to its file)
            group[k] = v[index]
