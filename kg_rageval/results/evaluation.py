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
"""

from __future__ import annotations

import itertools
import math
import weakref
from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, MutableMapping, MutableSequence,
                    Sequence, Sized)

import numpy as np

from kg_rageval.results.colstore import SPILL_ROWS, ColumnStore, SpilledArray
from kg_rageval.base.errors import InputError, MissingEvidence
from kg_rageval.base.memory import trim_heap
from kg_rageval.base.spool import SpooledText
from kg_rageval.results.recordstore import PackedValues, UnscoredRecords, text_column
from kg_rageval.results.resample import resample_indices

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.ontology import Ontology

_BOOTSTRAP_CELLS = 2_000_000
"""Weights per bootstrap block (resamples x records, 8 bytes each: 16 MB) for most sizes: a
block's memory, and how many resamples one ``weights @ stats`` product takes."""

_BOOTSTRAP_MIN_BLOCK, _BOOTSTRAP_MAX_CELLS = 8, 8_000_000
"""At least 8 resamples a block while that stays within 8,000,000 weights (64 MB; up to
1,000,000 records): a product reads the tall stats matrix once per block, and at 1,000,000
records a block of 2 (``_BOOTSTRAP_CELLS // n``) cost 2.5-3x the CPU per resample of a block
of 8 on one BLAS thread. The draws do not depend on the block size: one sequential stream
of ``rng.integers`` (tested)."""


def bootstrap_block(n: int, n_resamples: int) -> int:
    """Resamples per block of :func:`bootstrap_weights` for ``n`` records:
    ``max(_BOOTSTRAP_CELLS // n, min(8, _BOOTSTRAP_MAX_CELLS // n))``, within 1 and
    ``n_resamples`` (20 at 100,000 records, 8 at 1,000,000, 4 at 2,000,000, 1 from
    8,000,000)."""
    n = max(n, 1)
    return max(1, min(n_resamples, max(_BOOTSTRAP_CELLS // n, min(_BOOTSTRAP_MIN_BLOCK, _BOOTSTRAP_MAX_CELLS // n))))


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
        """JSON-safe dict; a non-finite number raises ``ValueError``."""
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
    evidence (``value=None`` with the reason ``missing``), never 0 or 1.

    A NaN or infinite numerator or denominator raises ``ValueError`` (it is a bug upstream,
    not a measurement)."""
    num, den = float(numerator), float(denominator)
    if not (math.isfinite(num) and math.isfinite(den)):
        raise ValueError(f"{name}: non-finite ratio {numerator!r} / {denominator!r}")
    if den == 0:
        return Metric(name, None, num, den, missing)
    return Metric(name, num / den, num, den)


def harmonic(name: str, p: Metric, r: Metric) -> Metric:
    """F1 = 2·P·R/(P+R); missing when P or R is (with the reason of the first missing one);
    0 when P + R = 0 (both measured as 0)."""
    if p.value is None or r.value is None:
        why = (p.missing if p.value is None else None) or (r.missing if r.value is None else None)
        gone = p.name if p.value is None else r.name
        return Metric(name, None, missing=why or f"{gone} is missing")
    if p.value + r.value == 0:
        return Metric(name, 0.0)
    return Metric(name, 2 * p.value * r.value / (p.value + r.value))


class Metrics(dict):
    """``{name: Metric}`` filled by :meth:`add`, which keys each metric by its own name (so a
    family's ``finalize`` writes each name once)."""

    def add(self, *metrics: Metric) -> "Metrics":
        for m in metrics:
            self[m.name] = m
        return self


def named(*metrics: Metric) -> Metrics:
    """``{m.name: m}`` in the given order (a :class:`Metrics`)."""
    return Metrics().add(*metrics)


def mean_of(name: str, total: float, count: float, *, missing: str) -> Metric:
    """A mean of per-row values kept as (sum, count): same convention as :func:`ratio`."""
    return ratio(name, total, count, missing=missing)


def _clean(x: Any) -> Any:
    """JSON-safe number: NaN/inf never reach a report."""
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"non-finite number {x!r} in a metric")
    return x


def bootstrap_weights(n: int, n_resamples: int, seed: int) -> Iterator[tuple[int, np.ndarray]]:
    """The one resampling scheme of every bootstrap in kg-rageval (intervals, paired deltas;
    the draws are :func:`~kg_rageval.results.resample.resample_indices`).

    Yields ``(first resample, weights)`` chunks: ``weights[j, i]`` is how often record ``i``
    (of ``n``, in a fixed order) is drawn in resample ``first + j``; each resample draws ``n``
    records uniformly with replacement from ``np.random.default_rng(seed)``. Resampled sums
    are ``weights @ per_record_stats``; applying the same weights to two systems' stats
    aligned on the same record ids gives the paired bootstrap. Chunks of :func:`bootstrap_block` resamples bound memory
    to 8,000,000 weights (and one resample's ``n`` draws); the weights do not depend on the
    chunk size."""
    draws = resample_indices(n, n_resamples, seed)
    chunk = bootstrap_block(n, n_resamples)
    for lo in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - lo)
        weights = np.empty((b, n))
        for j in range(b):  # one resample's draws at a time: the same stream as a (b, n) call
            weights[j] = np.bincount(next(draws), minlength=n)
        yield lo, weights


def percentile_interval(samples: np.ndarray, n_resamples: int, level: float) -> tuple[float, float] | None:
    """The ``(1-level)/2`` and ``(1+level)/2`` quantiles (numpy's linear interpolation) of the
    defined (non-NaN) replicates; ``None`` when more than half of the ``n_resamples`` are
    undefined."""
    s = np.asarray(samples, dtype=float)
    s = s[~np.isnan(s)]
    if len(s) * 2 < n_resamples or len(s) == 0:
        return None
    alpha = (1 - level) / 2
    lo, hi = np.quantile(s, [alpha, 1 - alpha])
    return (float(lo), float(hi))



def bootstrap_many(requests: Iterable[tuple[Any, ...]], *, n_resamples: int = 1000,
                   level: float = 0.95, seed: int = 0) -> list[dict[str, tuple[float, float] | None]]:
    """:meth:`Evaluation.bootstrap` of every ``(evaluation, metrics)`` request (``None``: all
    its metrics; a third item, when given, is the evaluation's :meth:`~Evaluation.per_record_stats`
    the caller already has), the same intervals bit for bit, with the weights of the evaluations that
    have the same number of records drawn once for all of them: the draws depend only on the
    number of records, ``n_resamples`` and ``seed`` (:func:`bootstrap_weights`), so one pass
    over the weight blocks serves every such evaluation
    (:func:`kg_rageval.results.forms.replicate_jobs`) and no weights are kept. An evaluation with its
    own :meth:`~Evaluation.bootstrap_replicates` (the system family's quantiles) is
    bootstrapped on its own."""
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
        for (i, _), got in zip(group, replicate_jobs([job for _, job in group], n_resamples, seed,
                                                     bootstrap_weights)):
            reps[i] = got[0]
    return [{m: percentile_interval(s, n_resamples, level) for m, s in r.items()}  # type: ignore[union-attr]
            for r in reps]


class Family:
    """A metric family: the names of its sufficient statistics and how sums become metrics.

    Subclasses set ``name``, ``version`` and ``stats`` and implement :meth:`finalize`, which
    must return the same metric names for any sums (missing ones as ``value=None``).
    ``version`` goes into every report manifest, so a changed definition gets a new version.
    """

    name: str = "family"
    version: str = "1"
    stats: tuple[str, ...] = ()
    additive_meta: tuple[str, ...] = ()
    """``meta`` entries that describe the rows, so partitions combine them when merged (see
    :func:`concat_evaluations`): a number is summed, a list of ids becomes the sorted union
    (its first :data:`META_ID_LIST` entries, as the families write them). Declared in the
    order the family writes them in: a merge keeps every partition's order of entries and
    this one (see :func:`_merge_meta`)."""

    def complete(self, evaluation: "Evaluation") -> None:
        """Set the parts of ``evaluation`` that depend on all its rows at once (``meta``
        computed from the totals, such as calibration's reliability table; ``unscored`` codes
        that depend on whether any row was scored; the row order of a family that writes its
        rows grouped by something other than the record, as reproducibility by repeat; rows
        that describe the run rather than a record, as run manifests), in place. The family's
        scoring function calls it on its result, and a concatenation of partitions calls it
        again on the concatenated result (:func:`concat_evaluations`, :class:`Concatenation`,
        :meth:`Evaluation.merge`), so streamed and partitioned results equal the one-call
        result. It must depend only on the evaluation (rows, totals, meta, unscored) and give
        the same result when called twice. Default: nothing to do."""

    def merge_meta(self, metas: list[dict[str, Any]]) -> dict[str, Any]:
        """``meta`` of concatenated partitions, given each partition's in order (at least
        two): :func:`_merge_meta` (the first partition's value of an entry wins,
        :attr:`additive_meta` are summed or united). A family whose ``meta`` describes all its
        records at once (the PROV-O trail's Turtle) overrides it so that the merged ``meta``
        equals the one of a single call on all the records."""
        return _merge_meta(self, metas)

    def keep_meta(self, meta: dict[str, Any], held: list[dict[str, Any]]) -> dict[str, Any]:
        """What a :class:`Concatenation` keeps of one partition's ``meta`` until it merges
        them (``held``: what it keeps of the earlier partitions, in order), once there are
        two or more partitions. :meth:`merge_meta` of the kept metas must equal it of the
        given ones. Default: ``meta`` itself; a family with a large ``meta`` (the PROV-O
        trail's Turtle, which it spools to a temporary file) keeps a smaller equal one."""
        return meta

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:  # pragma: no cover
        raise NotImplementedError

    @property
    def qualified_name(self) -> str:
        return f"kg_rageval.{self.name}.v{self.version}"


# ---------------------------------------------------------------------- column helpers
def _object_column(values: Any) -> np.ndarray:
    """A 1-D object array of ``values`` (lists or tuples stay single cells)."""
    seq = values.tolist() if isinstance(values, np.ndarray) and values.ndim == 1 else list(values)
    arr = np.empty(len(seq), dtype=object)
    arr[:] = seq
    return arr


def _id_column(values: Any) -> np.ndarray:
    """A record-id column as an evaluation stores it: texts as one NumPy unicode array
    (:func:`~kg_rageval.results.recordstore.text_column`: no Python string per row, so a streamed
    result keeps no object of a chunk's parse), other ids (numbers, or texts a unicode array
    would not hold compactly) as a 1-D object array."""
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind == "U":
        return values if text_column(values) is not None else values.astype(object)
    col = values if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1 \
        else _object_column(values)
    texts = text_column(col)
    return col if texts is None else texts


def record_id_texts(record_ids: np.ndarray) -> set[str]:
    """The distinct record ids as text (``str`` of each, as :meth:`Evaluation.per_record_stats`
    compares them): a C-level ``set`` when every id is already a string (the usual case:
    readers give string ids), else numpy's text conversion."""
    values = record_ids.tolist()
    if set(map(type, values)) <= {str}:
        return set(values)
    return set(np.asarray(record_ids).astype(str).tolist())


def _column(values: Any, kind: str) -> Any:
    """A stats column (float64; a boolean array stays bool, 1 byte a row, its sums are the
    same; an integer array of at most 4 bytes a value is kept, :class:`Columns` reads it as
    float64) or a key/detail column (numeric/bool kept, a :class:`CodedColumn` kept, else
    object)."""
    if isinstance(values, (CodedColumn, SpilledArray)):
        return values  # stored compactly already (a spilled column: in a ColumnStore)
    if kind == "stats":
        if isinstance(values, np.ndarray) and values.ndim == 1 and (
                values.dtype == bool or values.dtype.kind in "iu" and values.dtype.itemsize <= 4):
            return values  # bool stays bool; whole numbers stored compactly (compact_stat) stay
        try:
            arr = np.asarray(values, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"stats must be numbers ({exc})") from None
        if arr.ndim != 1:
            raise ValueError(f"stats must be 1-D, got shape {arr.shape}")
        return arr
    if isinstance(values, np.ndarray) and values.ndim == 1:
        keep = values.dtype.kind in "biuf" or values.dtype == object
        return values if keep else _object_column(values)
    try:
        col: np.ndarray | None = np.asarray(values)
    except (TypeError, ValueError):
        col = None
    if col is not None and col.ndim == 1 and col.dtype.kind in "biuf":
        return col
    return _object_column(values)


_STAT_STORES = ((0, 255, np.uint8), (0, 65535, np.uint16), (0, 2**32 - 1, np.uint32),
                (-128, 127, np.int8), (-32768, 32767, np.int16), (-2**31, 2**31 - 1, np.int32))


def compact_stat(arr: np.ndarray) -> np.ndarray:
    """A float64 stats column whose values are all whole numbers (counts, 0/1 flags) as the
    smallest integer dtype holding each of them exactly (1, 2 or 4 bytes a row instead of 8);
    any other column as it is. :class:`Columns` reads an integer stats column back as float64,
    so every reader sees the values it was given: the same numbers, sums and rows (a ``-0.0``
    keeps the column float, as it would come back ``0.0``)."""
    if arr.dtype != np.float64 or not len(arr):
        return arr
    lo, hi = float(arr.min()), float(arr.max())
    for low, high, dtype in _STAT_STORES:
        if low <= lo and hi <= high:
            break
    else:
        return arr
    small = arr.astype(dtype)
    if not np.array_equal(small, arr):
        return arr
    sign = np.signbit(arr)
    if lo >= 0 and sign.any() or lo < 0 and (sign & (arr == 0)).any():
        return arr
    return small


def _raw(columns: Mapping[str, np.ndarray]) -> Iterator[tuple[str, np.ndarray]]:
    """``(name, stored array)`` of each column (:meth:`Columns.raw_items`: a spilled column
    read when its turn comes; a plain mapping's items)."""
    return columns.raw_items() if isinstance(columns, Columns) else iter(list(columns.items()))


def _stored(columns: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """``(name, stored entry)`` of each column, a spilled one as its handle
    (:meth:`Columns.stored_items`; a plain mapping's items)."""
    return columns.stored_items() if isinstance(columns, Columns) else iter(list(columns.items()))


def _resident(arr: Any) -> Any:
    """A stored column in memory: a :class:`~kg_rageval.results.colstore.SpilledArray` read, a
    :class:`CodedColumn` with spilled codes with its codes read; anything else as it is."""
    if isinstance(arr, SpilledArray):
        return arr.read()
    if isinstance(arr, CodedColumn) and isinstance(arr.codes, SpilledArray):
        return CodedColumn(arr.codes.read(), arr.values, arr.fresh)
    return arr


def _spilled(arr: Any, store: ColumnStore) -> Any:
    """A stored column kept in ``store``: a numeric array as its handle, a :class:`CodedColumn`
    with its codes there (its distinct values stay in memory); an object array as it is."""
    if isinstance(arr, np.ndarray) and arr.ndim == 1 and arr.dtype.kind in "biuf":
        return store.put(arr)
    if isinstance(arr, CodedColumn) and isinstance(arr.codes, np.ndarray):
        return CodedColumn(store.put(arr.codes), arr.values, arr.fresh)
    return arr


def _is_spilled(arr: Any) -> bool:
    return isinstance(arr, SpilledArray) or isinstance(arr, CodedColumn) and isinstance(arr.codes, SpilledArray)


def _compacted(arr: Any, stats: bool) -> Any:
    """How :class:`Columns` stores a column it is given: a NumPy stats column by
    :func:`compact_stat`, a key or detail column by :func:`compact_object`; a coded or spilled
    column as it is."""
    if isinstance(arr, np.ndarray):
        return compact_stat(arr) if stats else compact_object(arr)
    return arr


def _raw_column(columns: Mapping[str, np.ndarray], name: str) -> np.ndarray:
    """The stored array of one column (:meth:`Columns.raw`; a plain mapping's value)."""
    return columns.raw(name) if isinstance(columns, Columns) else columns[name]


class Columns(MutableMapping):
    """One group of an evaluation's columns (``stats``, ``keys`` or ``details``) by name,
    stored compactly and read as the arrays a family built: a stats column of whole numbers
    is held in the smallest integer dtype (:func:`compact_stat`) and read as float64; an
    object key or detail column of few distinct scalars as codes into them, one of a single
    number type as its NumPy array (:func:`compact_object`, :class:`CodedColumn`) and read as
    the object array; every other column as it is. Reading such a column gives a fresh array
    (changing it changes nothing stored; assign the column to change it). :meth:`raw` and
    :meth:`raw_items` give the stored arrays, for the evaluation's own sums, masks and
    concatenations (integer stats sum, mask and concatenate to the same values; a
    :class:`CodedColumn` is indexed like an array).

    With a ``store`` (:class:`~kg_rageval.results.colstore.ColumnStore`: a large streamed evaluation,
    see :class:`Concatenation`), every numeric buffer given is kept in that temporary file
    instead of memory (a :class:`~kg_rageval.results.colstore.SpilledArray`; a coded column's codes),
    and read from it, bit for bit, each time it is read: the reads above, :meth:`raw`,
    :meth:`raw_items` one column at a time, :meth:`take` only the rows asked for. Object
    columns stay in memory."""

    __slots__ = ("_raw", "_stats", "store")

    def __init__(self, kind: str, columns: Mapping[str, np.ndarray] | None = None,
                 store: ColumnStore | None = None):
        self._raw: dict[str, Any] = {}
        self._stats = kind == "stats"
        self.store = store
        for k, v in _stored(columns or {}):
            self[k] = v

    def __getitem__(self, name: str) -> np.ndarray:
        arr = _resident(self._raw[name])
        if isinstance(arr, CodedColumn):
            return arr.array()
        return arr.astype(np.float64) if self._stats and arr.dtype.kind in "iu" else arr

    def __setitem__(self, name: str, arr: Any) -> None:
        arr = _compacted(arr, self._stats)
        if self.store is not None:
            arr = _spilled(arr, self.store)
        self._raw[name] = arr

    def __delitem__(self, name: str) -> None:
        del self._raw[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, name: object) -> bool:
        return name in self._raw

    def __repr__(self) -> str:
        return f"Columns({dict(self.items())!r})"

    def __reduce__(self):  # pickles (Dask) with the stored arrays (a spilled one as its array)
        return (Columns, ("stats" if self._stats else "columns", self._raw))

    def raw(self, name: str) -> np.ndarray:
        """The stored array of column ``name`` (an integer stats column as integers; a spilled
        column read from its file)."""
        return _resident(self._raw[name])

    def raw_items(self) -> Iterator[tuple[str, np.ndarray]]:
        """``(name, stored array)`` of every column, a spilled one read when its turn comes
        (hold one at a time to hold one column)."""
        for name, arr in list(self._raw.items()):
            yield name, _resident(arr)

    def stored_items(self) -> Iterator[tuple[str, Any]]:
        """``(name, stored entry)`` of every column, a spilled one as its handle (nothing read)."""
        return iter(list(self._raw.items()))

    def take(self, name: str, rows: Any) -> Any:
        """``raw(name)[rows]`` (a slice, integer positions or a mask), reading only the span of
        ``rows`` of a spilled column (the few records a report lists)."""
        return self._raw[name][rows]

    def is_spilled(self, name: str) -> bool:
        """Whether column ``name`` is kept in the temporary file of :attr:`store`."""
        return _is_spilled(self._raw[name])

    @property
    def nbytes(self) -> int:
        """Bytes of the stored arrays' buffers held in memory (object cells counted as their
        pointers; a spilled column's distinct values only)."""
        return sum(0 if isinstance(a, SpilledArray) else
                   (0 if a.values is None else a.values.nbytes) if _is_spilled(a) else a.nbytes
                   for a in self._raw.values())

    @property
    def spilled_nbytes(self) -> int:
        """Bytes of the buffers kept in the temporary file."""
        return sum(a.nbytes if isinstance(a, SpilledArray) else a.codes.nbytes if _is_spilled(a) else 0
                   for a in self._raw.values())


class StatColumns(Sequence):
    """The stats columns ``names`` of ``stats`` (an evaluation's :class:`Columns`) as the float64
    arrays ``stats[name]`` gives, each read when it is indexed or its turn comes in an iteration:
    a roll-up or a projection over them (:func:`rollup_sums`,
    :meth:`kg_rageval.results.forms.Projection.columns_of`) holds the column it reads, not all of them
    (a spilled evaluation reads each from its file)."""

    __slots__ = ("stats", "names")

    def __init__(self, stats: Mapping[str, np.ndarray], names: Iterable[str]) -> None:
        self.stats, self.names = stats, list(names)

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self.stats[n] for n in self.names[i]]
        return self.stats[self.names[i]]

    def __iter__(self) -> Iterator[np.ndarray]:
        for n in self.names:
            yield self.stats[n]


_TEXT_TYPES = {str, type(None)}
_SCALAR_TYPES = {str, type(None), int, float, bool}


def _narrow_codes(codes: np.ndarray, n_values: int) -> np.ndarray:
    dtype = np.uint8 if n_values <= 256 else np.uint16 if n_values <= 65536 else np.int32
    return codes.astype(dtype, copy=False)


class CodedColumn:
    """A key or detail column of objects stored compactly, read (:meth:`array`) as the object
    array it was built from: ``codes`` (1-4 bytes a row) into ``values``, its distinct values
    (one object each); or, with ``values=None``, a column of one Python number type held as
    its NumPy array (``codes``: float64, int64 or bool; 8 or 1 bytes a row instead of a pointer
    and an object). With ``fresh``, a read gives each row its own shallow copy of a ``dict``
    value (a family whose rows each had their own dict, as conformance's ``problems``, stores
    one dict per distinct value). Indexing with a slice, mask or index array gives a
    :class:`CodedColumn` of those rows; the evaluation's own masks, row selections and
    concatenations use that."""

    __slots__ = ("codes", "values", "fresh")
    dtype = np.dtype(object)
    ndim = 1
    base = None

    def __init__(self, codes: Any, values: np.ndarray | None, fresh: bool = False):
        # codes: a NumPy array, or a SpilledArray inside a spilled evaluation's Columns
        self.codes, self.values, self.fresh = codes, values, fresh

    def __len__(self) -> int:
        return len(self.codes)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.codes.shape

    @property
    def nbytes(self) -> int:
        return self.codes.nbytes + (self.values.nbytes if self.values is not None else 0)

    def __getitem__(self, index: Any) -> Any:
        codes = self.codes[index]
        if np.ndim(codes) == 0:
            if self.values is None:
                return codes.item()
            v = self.values[codes]
            return dict(v) if self.fresh and type(v) is dict else v
        return CodedColumn(codes, self.values, self.fresh)

    def array(self) -> np.ndarray:
        """The object array of the column."""
        if self.values is None:
            return self.codes.astype(object)
        out = self.values[self.codes]
        if self.fresh:
            out = _object_column([dict(v) if type(v) is dict else v for v in out.tolist()])
        return out

    def tolist(self) -> list[Any]:
        return self.array().tolist()

    def astype(self, dtype: Any, copy: bool = True) -> np.ndarray:
        return self.array().astype(dtype, copy=False)

    def copy(self) -> "CodedColumn":
        return CodedColumn(self.codes.copy(), self.values, self.fresh)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.array()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __repr__(self) -> str:
        return f"CodedColumn({self.array()!r})"

    def __reduce__(self):
        return (CodedColumn, (self.codes, self.values, self.fresh))


def compact_object(arr: np.ndarray) -> Any:
    """An object column (key or detail) stored compactly when that saves memory and every
    read gives the same values (equal, of the same type, a float with its sign): a column of
    texts and ``None`` or of other scalars (``int``, ``float``, ``bool``; each value keyed by
    its type, floats by their bits: :func:`_value_key`) with at most half its rows distinct,
    as codes into its distinct values; a column of one Python number type with more distinct
    values, as its NumPy array. Anything else (lists, dicts, NumPy scalars, mostly distinct
    texts) stays as it is."""
    if not isinstance(arr, np.ndarray) or arr.dtype != object or len(arr) < 2:
        return arr
    vals = arr.tolist()
    types = set(map(type, vals))
    if not types <= _SCALAR_TYPES:
        return arr
    if len(types) == 1 and types <= {float, int, bool}:
        kind = types.pop()
        try:
            typed: np.ndarray = np.array(vals, dtype={float: np.float64, int: np.int64, bool: np.bool_}[kind])
        except OverflowError:  # ints beyond 64 bits
            return arr
        uniq, inv = np.unique(typed.view(np.int64) if kind is float else typed, return_inverse=True)
        if len(uniq) > len(vals) // 2:
            return CodedColumn(typed, None)
        values = (uniq.view(np.float64) if kind is float else uniq).astype(object)
        return CodedColumn(_narrow_codes(inv.reshape(-1), len(uniq)), values)
    if types <= _TEXT_TYPES:
        keys: list[Any] = vals
    elif float in types:  # -0.0 must not meet 0.0: each float by its bits
        keys = list(map(_value_key, vals))
    else:  # 1 and True apart
        keys = list(zip(map(type, vals), vals))
    table: dict[Any, Any] = dict.fromkeys(keys)  # the distinct keys, in first-seen order
    if len(table) > len(vals) // 2:
        return arr
    first = dict(zip(keys, vals))  # a key's value: any of its values (they are interchangeable)
    values = _object_column([first[k] for k in table])
    for i, k in enumerate(table):
        table[k] = i
    codes = np.fromiter(map(table.__getitem__, keys), dtype=np.int64, count=len(keys))
    return CodedColumn(_narrow_codes(codes, len(values)), values)


def _first_codes(values: list[Any]) -> np.ndarray:
    """For each position, the position of the first equal value (dict equality)."""
    first: dict[Any, int] = {}
    return np.fromiter(map(first.setdefault, values, itertools.count()), dtype=np.int64,
                       count=len(values))


def _factorize(col: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """Group codes ``0..g-1`` for a 1-D column and the first-seen value of each group.

    Numeric columns group by value (NaNs together); other columns by Python equality (so
    ``None`` and ``"None"`` are different groups); unhashable cells group by their text. Codes
    follow first appearance for object columns and ascending value for numeric ones."""
    if col.dtype.kind in "biuf":
        uniq, inv = np.unique(col, return_inverse=True)
        return inv.reshape(-1).astype(np.int64, copy=False), uniq.tolist()
    values = col.tolist()
    try:
        pos = _first_codes(values)
    except TypeError:  # unhashable cells (lists, dicts)
        pos = _first_codes([repr(v) for v in values])
    starts, inv = np.unique(pos, return_inverse=True)
    return inv.reshape(-1).astype(np.int64, copy=False), [values[i] for i in starts.tolist()]


def _is_none(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _py(v: Any) -> Any:
    """A plain Python value for output (numpy scalars and arrays converted)."""
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def _jsonable(v: Any, where: str) -> Any:
    """``v`` with numpy values converted, tuples as lists; NaN/inf raise naming ``where``."""
    v = _py(v)
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"non-finite number {v!r} in {where}")
    if isinstance(v, SpooledText):  # a text kept in a temporary file (the PROV-O trail)
        return v.text()
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x, f"{where}.{k}") for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        seq = sorted(v, key=str) if isinstance(v, (set, frozenset)) else v
        return [_jsonable(x, where) for x in seq]
    return v


_PLAIN = (str, int, bool, type(None))


def _out_column(col: np.ndarray, name: str, json_safe: bool, nan_is_none: bool = False) -> list[Any]:
    """A column as plain Python values; with ``json_safe``, NaN/inf raise naming the column,
    except NaN in a key column (``nan_is_none``), which is a missing key and comes out as
    ``None``."""
    vals = col.tolist()
    if col.dtype.kind in "biu":
        return vals
    if col.dtype.kind == "f":
        if json_safe and not np.isfinite(col).all():
            bad = ~np.isfinite(col)
            if nan_is_none and not np.isinf(col).any():
                return [None if b else v for v, b in zip(vals, bad.tolist())]
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"non-finite number {vals[i]!r} in column {name!r}, row {i}")
        return vals
    if all(type(v) in _PLAIN for v in vals):
        return vals
    if json_safe:
        if nan_is_none:
            vals = [None if isinstance(v, float) and v != v else v for v in vals]
        return [_jsonable(v, f"column {name!r}, row {i}") for i, v in enumerate(vals)]
    return [_py(v) for v in vals]


_ROLLUP_CHUNK = 4_000_000
"""Ancestor entries gathered per roll-up chunk; bounds the roll-up's working memory."""


def rollup_mask(ontology: "Ontology", keep: np.ndarray, max_depth: int | None = None,
                nodes: Iterable[str] | None = None) -> np.ndarray:
    """``keep`` narrowed to the nodes a bounded roll-up reports: depth (``depth_min``, root =
    0) at most ``max_depth``, and only ``nodes`` when given (an unknown id raises)."""
    if max_depth is not None:
        keep = keep & (ontology.depth_min <= max_depth)
    if nodes is not None:
        wanted = np.zeros(len(ontology), dtype=bool)
        wanted[[ontology.index(n) for n in nodes]] = True
        keep = keep & wanted
    return keep


def rollup_sums(ontology: "Ontology", node: np.ndarray, columns: Iterable[np.ndarray],
                keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Subtree sums of per-row columns for the nodes where ``keep`` holds.

    ``node`` is each row's ontology index (a negative one: the row is left out, as if the
    rows and ``columns`` had been masked — the same sums bit for bit, without masked copies of
    the columns), ``columns`` per-row values (an iterable, read once in order: a generator of
    columns read one at a time holds one). Returns
    ``(kept, pooled)``: the kept node indices with at least one row in their subtree, in index
    order, and ``pooled[j] = (rows, Σ column...)`` over the rows whose node has ``kept[j]`` in
    its ancestor-or-self set. One pass: rows are summed per distinct node (``bincount``), then
    each distinct node's sums are added to its kept ancestors (``np.repeat`` over the ancestor
    closure rows, ``bincount`` onto the kept nodes), in chunks of about ``_ROLLUP_CHUNK``
    ancestor entries. Work is rows + Σ ancestors of the nodes with rows, never nodes × rows.
    Each node's sum adds its descendants' sums in index order, whatever the chunking (the
    running sums go first into the next chunk's ``bincount``), so the floats are the same as
    the closure-matrix product ``closure.T @ own``."""
    if not len(node) or not keep.any():
        width = (len(columns) if isinstance(columns, Sized) else sum(1 for _ in columns)) + 1
        return np.zeros(0, dtype=np.int64), np.zeros((0, width))
    present, inv = np.unique(node, return_inverse=True)
    inv = inv.reshape(-1)
    own = np.stack([np.bincount(inv, minlength=len(present)).astype(float)]
                   + [np.bincount(inv, weights=c, minlength=len(present)) for c in columns], axis=1)
    width = own.shape[1]
    if present[0] < 0:  # the left-out rows: their own bin (each bin adds only its rows), dropped
        skip = int(np.searchsorted(present, 0))
        present, own = present[skip:], own[skip:]
        if not len(present):
            return np.zeros(0, dtype=np.int64), np.zeros((0, width))
    pos = np.cumsum(keep) - 1  # kept node index -> column of the pooled table
    n_keep = int(pos[-1]) + 1
    pooled = np.zeros((n_keep, width))
    lens = ontology.anc_ptr[present + 1] - ontology.anc_ptr[present]
    ends = np.cumsum(lens)
    lo = 0
    while lo < len(present):
        hi = int(np.searchsorted(ends, (ends[lo - 1] if lo else 0) + _ROLLUP_CHUNK, "right"))
        hi = max(hi, lo + 1)
        chunk_lens, anc = ontology.ancestor_rows(present[lo:hi])
        src = np.repeat(np.arange(lo, hi), chunk_lens)
        sel = keep[anc]
        src, tgt = src[sel], pos[anc[sel]]
        if lo:  # carry the running sums in front, so every node's sum is added in one order
            tgt = np.concatenate((np.arange(n_keep), tgt))
        for j in range(width):
            w = own[src, j]
            pooled[:, j] = np.bincount(tgt, weights=np.concatenate((pooled[:, j], w)) if lo else w,
                                       minlength=n_keep)
        lo = hi
    kept = np.flatnonzero(keep)
    has = pooled[:, 0] > 0
    return kept[has], pooled[has]


class LazyMetrics(Mapping):
    """A read-only ``{metric name: Metric}`` that finalizes its sums on first access (per-node
    roll-ups: a node that is never shown builds no :class:`Metric`)."""

    __slots__ = ("_fin", "_names", "_row", "_metrics")

    def __init__(self, finalize: Callable[[Mapping[str, float]], dict[str, Metric]],
                 names: list[str], row: list[float]):
        self._fin, self._names, self._row = finalize, names, row
        self._metrics: dict[str, Metric] | None = None

    def _get(self) -> dict[str, Metric]:
        if self._metrics is None:
            self._metrics = self._fin(dict(zip(self._names, self._row)))
        return self._metrics

    def __getitem__(self, name: str) -> Metric:
        return self._get()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return repr(self._get())

    def __reduce__(self):  # pickles (Dask) as the finalized dict
        return (dict, (self._get(),))


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
            for kind, g in zip(("stats", "keys", "details"), (self.stats, self.keys, self.details))]
        for kind, cols, items in zip(("stats", "keys", "details"), (self.stats, self.keys, self.details), given):
            for k, v in items:
                try:
                    arr = _column(v, kind)
                except ValueError as exc:
                    raise ValueError(f"{self.family.name}: {kind} column {k!r}: {exc}") from None
                if len(arr) != n:
                    raise ValueError(
                        f"{self.family.name}: {kind} column {k!r} has {len(arr)} rows, expected {n}")
                if kind == "stats" and n and isinstance(arr, np.ndarray) and arr.dtype.kind == "f" \
                        and not np.isfinite(arr).all():  # (a spilled column was checked as it was built)
                    bad = int(np.flatnonzero(~np.isfinite(arr))[0])
                    raise ValueError(
                        f"{self.family.name}: stats column {k!r} has the non-finite value "
                        f"{float(arr[bad])!r} at row {bad} (record {self.record_ids[bad:bad + 1].tolist()[0]!r}); "
                        "stats must be finite numbers")
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

    def subset(self, mask: np.ndarray) -> "Evaluation":
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
            order = texts[np.argsort(np.asarray([uniq[g] for g in texts.tolist()], dtype=str),
                                     kind="stable")]
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
        sums = [np.bincount(codes, weights=v, minlength=g) for _, v in _raw(self.stats)]  # one column read at a time
        table = np.stack(sums, axis=1).tolist() if names else [[] for _ in range(g)]
        fin = self.family.finalize
        return {
            values[i]: {"n": counts[i], "metrics": fin(dict(zip(names, table[i])))}
            for i in range(g)
        }

    def node_indices(self, ontology: "Ontology", key: str = "gold_node") -> np.ndarray:
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
            return np.fromiter(map(get, values, itertools.repeat(-1)), dtype=np.int64,
                               count=len(values))
        except TypeError:  # unhashable cells: look up the hashable strings only
            return np.fromiter((get(v, -1) if isinstance(v, str) else -1 for v in values),
                               dtype=np.int64, count=len(values))

    def rollup(
        self,
        ontology: "Ontology",
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
        return ids, {
            k: np.bincount(inverse, weights=v, minlength=len(ids)) for k, v in _raw(self.stats)
        }

    def record_stats(self) -> "RecordStats":
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

        return replicate_values(job.finalize, job.names, job.mats, job.metrics, n_resamples, seed,
                                bootstrap_weights)[0]

    def _replicate_job(self, n_resamples: Any, metrics: Iterable[str] | None,
                       per_record: Any = None) -> Any:
        """The checked arguments of :meth:`bootstrap_replicates` as a
        :class:`~kg_rageval.results.forms.Replicates` job over the per-record stats (``per_record``: a
        per-record view, or :meth:`per_record_stats` when the caller has it; default: a
        :class:`RecordStats` view for this call alone), or the all-NaN replicates when there
        are no records."""
        whole = isinstance(n_resamples, (int, np.integer)) and not isinstance(n_resamples, bool)
        if not whole or n_resamples < 1:
            raise InputError(
                f"bootstrap: n_resamples must be a positive integer, got {n_resamples!r}")
        point = self.metrics()
        wanted = list(metrics) if metrics is not None else list(point)
        unknown = [m for m in wanted if m not in point]
        if unknown:
            raise InputError(f"bootstrap: unknown metric(s) {unknown}; {self.family.name} "
                             f"has {sorted(point)}")
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
    def merge(self, other: "Evaluation") -> "Evaluation":
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
        cols: dict[str, list[Any]] = {
            "record_id": _out_column(self.record_ids[:n], "record_id", json_safe)}
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
    return {labels[i]: {"n": g["n"], "metrics": {k: m.to_dict() for k, m in g["metrics"].items()}}
            for i, g in enumerate(groups.values())}


def _group_labels(values: list[Any]) -> list[str]:
    """Text labels of breakdown groups: ``str(value)`` (``None`` as ``"None"``); values whose
    text collides with another group's (``1`` and ``"1"``, the string ``"None"`` and ``None``)
    get their type appended, ``"1 (int)"``, ``"1 (str)"``, ``"None (str)"``; ``None`` keeps
    ``"None"``."""
    text = [str(v) for v in values]
    seen: dict[str, int] = {}
    for t in text:
        seen[t] = seen.get(t, 0) + 1
    return [t if seen[t] == 1 or v is None else f"{t} ({type(v).__name__})"
            for t, v in zip(text, values)]


META_ID_LIST = 50
"""How many ids a family lists in a ``meta`` id list (``unknown_ids``, ...): the first ones in
sorted order."""


def _merged_names(parts: list[list[str]]) -> list[str]:
    """Column names of concatenated partitions, in an order consistent with every partition's
    own order (a column before another in one partition stays before it), so the order of a
    whole-input result is kept whichever partition a column first appears in. Columns that
    never stand side by side are taken by the first partition that has them, ``slice:*``
    keys by name (every family writes its slice keys sorted)."""
    if all(p == parts[0] for p in parts[1:]):
        return list(parts[0])
    import heapq

    rank: dict[str, tuple[int, str, int]] = {}
    preds: dict[str, set[str]] = {}
    for i, names in enumerate(parts):
        for j, name in enumerate(names):
            if name not in rank:
                rank[name] = (i, name if name.startswith("slice:") else "", j)
                preds[name] = set()
            if j:
                preds[name].add(names[j - 1])
    succ: dict[str, list[str]] = {n: [] for n in rank}
    for n, ps in preds.items():
        for q in ps:
            succ[q].append(n)
    left = {n: len(ps) for n, ps in preds.items()}
    ready = [(rank[n], n) for n, k in left.items() if k == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        _, n = heapq.heappop(ready)
        out.append(n)
        for m in succ[n]:
            left[m] -= 1
            if left[m] == 0:
                heapq.heappush(ready, (rank[m], m))
    if len(out) < len(rank):  # the partitions disagree on an order: first-seen order
        return list(rank)
    return out


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


def _merge_meta(family: Family, metas: list[dict[str, Any]]) -> dict[str, Any]:
    """``meta`` of concatenated partitions: the first partition's value of an entry wins (the
    pairwise ``{**other, **self}``), the family's :attr:`Family.additive_meta` are summed or
    united, ``rollup_skipped`` is dropped. Entries are in an order consistent with every
    partition's own order and with the declared order of ``additive_meta``
    (:func:`_merged_names`, as for columns), so an entry that only some partitions write (a
    count of aliased ids) stands where the whole-input call writes it."""
    if len(metas) == 1 or all(list(m) == list(metas[0]) for m in metas[1:]):
        order = list(metas[0])
    else:
        present = {k for m in metas for k in m}
        declared = [k for k in family.additive_meta if k in present]
        order = _merged_names([list(m) for m in metas] + [declared])
    meta: dict[str, Any] = {}
    for key in order:
        if key == "rollup_skipped":
            continue
        values = [m[key] for m in metas if key in m]
        if key not in family.additive_meta:
            meta[key] = values[0]
        elif all(isinstance(v, (list, tuple)) for v in values):
            meta[key] = sorted(set().union(*values))[:META_ID_LIST]
        else:
            meta[key] = sum(values)
    return meta


def _completed(ev: "Evaluation") -> "Evaluation":
    """``ev`` after its family's :meth:`Family.complete` (concatenated partitions)."""
    if type(ev.family).complete is not Family.complete:
        ev.family.complete(ev)
    return ev


def concat_evaluations(parts: Iterable[Evaluation], *, consume: bool = False) -> Evaluation:
    """Concatenate partitions of one family in order: the same as folding
    :meth:`Evaluation.merge` left to right, with each column copied once (not once per
    partition). Column order: :func:`_merged_names`; a column missing in a partition is
    filled with 0 (stats) or ``None`` (keys, details); ``unscored`` lists are concatenated;
    ``meta``: the family's :meth:`Family.merge_meta` (default :func:`_merge_meta`); then the
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
            raise ValueError(f"cannot merge evaluations of different families "
                             f"({first.family.qualified_name} and {p.family.qualified_name})")
    sizes = [len(p) for p in parts]
    record_ids = np.concatenate([p.record_ids for p in parts])
    groups: list[dict[str, np.ndarray]] = []
    for attr, fill in (("stats", 0), ("keys", None), ("details", None)):
        dicts = [getattr(p, attr) for p in parts]
        out: dict[str, np.ndarray] = {}
        for name in _merged_names([list(d) for d in dicts]):
            cols = [_raw_column(d, name) if name in d else np.full(n, fill, dtype=float if fill == 0 else object)
                    for d, n in zip(dicts, sizes)]
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
    return _completed(Evaluation(family=first.family, record_ids=record_ids, stats=groups[0], keys=groups[1],
                                 details=groups[2], unscored=unscored, meta=meta))


def take_rows(ev: Evaluation, index: np.ndarray) -> None:
    """Keep ``ev``'s rows that the integer (or boolean) ``index`` selects, in its order, in
    place: every column; ``meta`` and ``unscored`` unchanged (for :meth:`Family.complete`)."""
    ev.drop_record_stats()
    ev.record_ids = ev.record_ids[index]
    for group in (ev.stats, ev.keys, ev.details):
        for k, v in _raw(group):  # one column at a time (a spilled one goes back to its file)
            group[k] = v[index]


_SUM_BLOCK = 1 << 16
"""Values per block of :func:`sequential_sum`."""


def sequential_sum(col: np.ndarray) -> float:
    """``col``'s sum added in order, first to last: the bits of that column in
    ``np.stack(cols, axis=1).sum(axis=0)`` for two or more columns (numpy adds the rows of a
    C-ordered matrix one after the other; a single column, ``col.sum()``, is summed pairwise),
    in blocks, without a copy of the column."""
    acc = np.zeros(1)
    for lo in range(0, len(col), _SUM_BLOCK):
        acc = np.cumsum(np.concatenate((acc, col[lo:lo + _SUM_BLOCK])))[-1:]
    return float(acc[0])


class _RecordColumns:
    """Per-record stat sums read one stat column at a time (see :class:`RecordStats`):
    ``n`` records, the stats ``names``; a subclass sums a column (``_sum``), the rows of some
    records (``rows_at``) and one resample (``resampled``). With ``keep``, a column is kept
    once summed (a view the audit's stages share); otherwise it is summed each time it is read
    (a view for one computation: the projections built from it are the only copy). A kept
    column goes to the ``store`` when there is one (the temporary file of a spilled
    evaluation's columns) and is read back from it, bit for bit."""

    names: list[str]
    n: int

    def __init__(self, keep: bool = False, store: ColumnStore | None = None) -> None:
        self.keep = keep
        self.store = store
        self._cols: dict[str, Any] = {}
        self._probes: np.ndarray | None = None

    def __len__(self) -> int:
        return self.n

    def _sum(self, name: str) -> np.ndarray:  # pragma: no cover - every subclass sums
        raise NotImplementedError

    def rows_at(self, index: Iterable[int]) -> np.ndarray:  # pragma: no cover
        """The per-record stat rows of the records ``index`` (sorted positions), as
        ``matrix()[index]``."""
        raise NotImplementedError

    def resampled(self, weights: np.ndarray) -> list[float]:  # pragma: no cover
        """Every stat's sum over one resample (``weights[i]``: draws of record ``i``), as
        ``weights @ matrix()`` up to the order of the additions (for the forms' checks)."""
        raise NotImplementedError

    def column(self, name: str) -> np.ndarray:
        """The per-record sums of stat ``name`` (``per_record_stats()[1][name]``, bit for
        bit), kept once summed when the view keeps its columns."""
        col = self._cols.get(name)
        if col is None:
            col = self._sum(name)
            if self.keep:
                self._cols[name] = col if self.store is None else self.store.put(col)
            return col
        return _resident(col)

    def _peek(self, name: str) -> np.ndarray:
        """The column, kept if it was, else summed and not kept."""
        col = self._cols.get(name)
        return self._sum(name) if col is None else _resident(col)

    def matrix(self) -> np.ndarray:
        """Every stat's per-record sums stacked (records × stats), not kept: for a metric
        that is finalized record by record."""
        if not self.names:
            return np.zeros((self.n, 0))
        return np.stack([self._peek(k) for k in self.names], axis=1)

    def probe_rows(self) -> np.ndarray:
        """The rows the verified forms are probed on (:func:`kg_rageval.results.forms._sample_rows`
        of :meth:`matrix`, bit for bit): the per-record total (summed as the stacked matrix's
        ``sum(axis=0)`` sums it), then five sample records. Every stat is summed, one at a
        time."""
        if self._probes is None:
            from kg_rageval.results.forms import _sample_index

            k = len(self.names)
            if not self.n:
                self._probes = np.zeros((0, k))
            else:
                if k == 1:  # one column: numpy sums it pairwise
                    total = [float(self._peek(self.names[0]).sum())]
                else:
                    total = [sequential_sum(self._peek(n)) for n in self.names]
                self._probes = np.vstack([np.asarray(total, dtype=float).reshape(1, k),
                                          self.rows_at(_sample_index(self.n))])
        return self._probes


class RecordStats(_RecordColumns):
    """The stats of an evaluation (or of the rows ``rows`` of it: a gate's scope) summed per
    record, as :meth:`Evaluation.per_record_stats` gives them, but one stat column at a time:
    :meth:`column` sums a stat when it is asked for (and keeps it with ``keep``: the view
    :meth:`Evaluation.record_stats` caches for the audit's stages), so a stage that reads the
    two stats of a ratio holds two per-record columns, not every stat of the family stacked.

    Records are in the order of their ids as text (``per_record_stats``). When the rows
    already hold one record each in that order (every streamed family on ordered ids), no
    row-to-record index is kept and a column is the stat itself (as float64, ``+ 0.0``: the
    bits ``np.bincount`` gives); otherwise ``inverse`` maps each row to its record and
    ``first`` each record to its first row."""

    def __init__(self, ev: Evaluation, rows: np.ndarray | None = None, *, keep: bool = False):
        super().__init__(keep, ev.stats.store if isinstance(ev.stats, Columns) else None)
        self.ev = ev
        self.rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        self.names = list(ev.stats)
        texts = (ev.record_ids if rows is None else ev.record_ids[rows]).astype(str)
        self.inverse: np.ndarray | None = None
        self.first: np.ndarray | None = None
        if len(texts) > 1 and not bool((texts[1:] > texts[:-1]).all()):
            _, first, inverse = np.unique(texts, return_index=True, return_inverse=True)
            self.first, self.inverse = first, inverse.reshape(-1)
        self.n = len(texts) if self.first is None else len(self.first)

    def _stat(self, name: str, index: np.ndarray | None = None) -> np.ndarray:
        """Stat ``name`` on the view's rows (or on its rows ``index``), without a copy of the
        whole column for ``index`` (a whole-number column as stored, in its integer dtype: it
        sums, adds and multiplies to the float64 values)."""
        v = _raw_column(self.ev.stats, name)
        if index is not None:
            return v[index if self.rows is None else self.rows[index]]
        return v if self.rows is None else v[self.rows]

    def _sum(self, name: str) -> np.ndarray:
        v = self._stat(name)
        if self.inverse is None:
            return np.add(v, 0.0, dtype=float)
        return np.bincount(self.inverse, weights=v, minlength=self.n)

    def ids(self, index: Any = None) -> np.ndarray:
        """The records' ids as text (``per_record_stats()[0]``), or those at ``index``."""
        pick = self.first
        if index is not None:
            pick = np.asarray(index, dtype=np.int64) if pick is None else pick[index]
        if self.rows is not None:
            pick = self.rows if pick is None else self.rows[pick]
        rid = self.ev.record_ids if pick is None else self.ev.record_ids[pick]
        return rid.astype(str)

    def record_rows(self, j: int) -> np.ndarray:
        """The evaluation's rows of record ``j`` (indices into the whole evaluation)."""
        local = np.asarray([j]) if self.inverse is None else np.flatnonzero(self.inverse == j)
        return local if self.rows is None else self.rows[local]

    def rows_at(self, index: Iterable[int]) -> np.ndarray:
        """``matrix()[index]`` (sorted record positions), summing only those records' rows."""
        idx = np.asarray(list(index), dtype=np.int64)
        if not self.names:
            return np.zeros((len(idx), 0))
        if self.inverse is None:
            return np.stack([np.add(self._stat(k, idx), 0.0, dtype=float) for k in self.names], axis=1)
        sel = np.flatnonzero(np.isin(self.inverse, idx))  # their rows, in row order
        pos = np.searchsorted(idx, self.inverse[sel])
        return np.stack([np.bincount(pos, weights=self._stat(k, sel), minlength=len(idx))
                         for k in self.names], axis=1)

    def resampled(self, weights: np.ndarray) -> list[float]:
        # products summed by numpy, not one BLAS call per stat (each may wake BLAS threads)
        w = weights if self.inverse is None else weights[self.inverse]
        return [float(np.multiply(w, self._stat(k)).sum()) for k in self.names]


class AlignedRecords(_RecordColumns):
    """The records ``at`` (increasing positions) of a :class:`RecordStats` view, with the stats
    ``names`` in that order: a paired comparison's candidate or baseline records, aligned on
    the ids both scored, as the stacked matrix ``np.stack([per[k][at] for k in names], 1)``
    gives them, one column at a time."""

    def __init__(self, view: RecordStats, at: np.ndarray, names: list[str] | None = None):
        super().__init__(keep=False)
        self.view, self.at = view, np.asarray(at, dtype=np.int64)
        self.names = list(view.names if names is None else names)
        self.n = len(self.at)

    def _sum(self, name: str) -> np.ndarray:
        return self.view._peek(name)[self.at]

    def rows_at(self, index: Iterable[int]) -> np.ndarray:
        idx = np.asarray(list(index), dtype=np.int64)
        if not self.names:
            return np.zeros((len(idx), 0))
        rows = self.view.rows_at(self.at[idx])
        order = [self.view.names.index(k) for k in self.names]
        return rows[:, order]

    def resampled(self, weights: np.ndarray) -> list[float]:
        w = np.zeros(len(self.view))
        w[self.at] = weights
        got = dict(zip(self.view.names, self.view.resampled(w)))
        return [got[k] for k in self.names]


class _Column:
    """One column being appended to: its pieces as they come (a piece that is a view of a larger
    array is copied, so that it holds only its own rows), joined once by :meth:`array` into the
    dtype folding pairwise merges would give (numeric pieces promote; from the first non-numeric
    piece on, an object column, the numeric prefix converted after its promotion). No spare
    capacity is held and each value is copied once (a buffer grown by a quarter held up to a
    fifth spare and copied each value about five times).

    With ``share`` (key and detail columns), pieces coded by their distinct values
    (:class:`CodedColumn`) are recoded into one table of the column's distinct values, so the
    joined column is coded too: a value is one object, a row 1-4 bytes. Once the table holds
    more than :data:`SHARED_TEXTS_MIN` values and more than half the rows, the column stops
    coding (mostly distinct values: codes save nothing) and joins as objects.

    With a ``store`` (:meth:`spill`), numeric pieces (and codes) are kept in that temporary
    file until :meth:`array` reads them back, one piece at a time."""

    __slots__ = ("pieces", "size", "table", "uniques", "coded", "fresh", "store")

    def __init__(self, first: Any, *, share: bool = False, store: ColumnStore | None = None):
        self.pieces: list[Any] = []
        self.size = 0
        self.table: dict[Any, int] | None = {} if share else None
        self.uniques: list[Any] = []
        self.coded: list[bool] = []  # pieces holding codes into ``uniques``
        self.fresh = False
        self.store = store
        self.append(first)

    def spill(self, store: ColumnStore) -> None:
        """Keep the pieces so far, and those appended from now on, in ``store``."""
        self.store = store
        self.pieces = [_spilled(p, store) for p in self.pieces]

    def _keep(self, piece: Any) -> None:
        self.pieces.append(piece if self.store is None else _spilled(piece, self.store))

    def append(self, piece: Any) -> None:
        if isinstance(piece, CodedColumn) and isinstance(piece.values, PackedValues):
            self._keep(piece)  # joined as one buffer (:func:`_packed_join`), never unpacked
            self.coded.append(False)
            self.size += len(piece)
            return
        if self.table is not None and isinstance(piece, CodedColumn) and piece.values is not None:
            table, uniques = self.table, self.uniques
            self.fresh |= piece.fresh
            remap = np.empty(len(piece.values), dtype=np.int32)
            for i, v in enumerate(piece.values.tolist()):
                k = _value_key(v)
                code = table.get(k)
                if code is None:
                    code = table[k] = len(uniques)
                    uniques.append(v)
                remap[i] = code
            self._keep(remap[_resident(piece).codes])
            self.coded.append(True)
            self.size += len(piece)
            if len(table) > max(SHARED_TEXTS_MIN, self.size // 2):
                self.table = None  # mostly distinct values: codes save nothing
            return
        self._keep(piece.copy() if piece.base is not None else piece)
        self.coded.append(False)
        self.size += len(piece)

    def array(self) -> Any:
        pieces, self.pieces = self.pieces, []
        coded, self.coded = self.coded, []
        if pieces and all(isinstance(p, CodedColumn) and isinstance(p.values, PackedValues) for p in pieces):
            return _packed_join(pieces)
        if pieces and all(coded):
            codes = _joined_codes(pieces)
            return CodedColumn(_narrow_codes(codes, len(self.uniques)), _object_column(self.uniques), self.fresh)
        values = CodedColumn(np.zeros(0, np.int32), _object_column(self.uniques), self.fresh) if any(coded) else None
        numeric = [not c and p.dtype.kind in "biuf" for p, c in zip(pieces, coded)]
        j = numeric.index(False) if not all(numeric) else len(pieces)
        head = np.result_type(*(p.dtype for p in pieces[:j])) if j else None
        dtype = head if j == len(pieces) else np.dtype(object)
        out = np.empty(self.size, dtype=dtype)
        at = 0
        for i, p in enumerate(pieces):
            pieces[i] = None  # type: ignore[call-overload]  # each piece goes once copied
            p = _resident(p)  # a spilled piece read back
            if coded[i]:
                p = CodedColumn(p, values.values, values.fresh).array()  # type: ignore[union-attr]
            elif isinstance(p, CodedColumn):
                p = p.array()
            elif i < j and p.dtype != head:
                p = p.astype(head)
            out[at:at + len(p)] = p
            at += len(p)
        return out


def _packed_join(pieces: list[CodedColumn]) -> CodedColumn:
    """Coded pieces with :class:`~kg_rageval.results.recordstore.PackedValues` as one coded column: the
    value buffers one after the other, each piece's codes (read back if spilled) shifted past
    the earlier values."""
    shift: np.ndarray = np.cumsum([0] + [len(p.values) for p in pieces[:-1]])  # type: ignore[arg-type]
    values = PackedValues.joined([p.values for p in pieces])  # type: ignore[misc]
    codes = np.concatenate([_resident(p).codes.astype(np.int64) + s for p, s in zip(pieces, shift.tolist())])
    return CodedColumn(_narrow_codes(codes, len(values)), values,  # type: ignore[arg-type]
                       any(p.fresh for p in pieces))


def _joined_codes(pieces: list[Any]) -> np.ndarray:
    """The code pieces of a coded :class:`_Column` joined (each spilled one read in turn)."""
    if len(pieces) == 1:
        return _resident(pieces[0])
    out = np.empty(sum(len(p) for p in pieces), dtype=np.result_type(*(p.dtype for p in pieces)))
    at = 0
    for i, p in enumerate(pieces):
        pieces[i] = None
        out[at:at + len(p)] = _resident(p)
        at += len(p)
    return out


SHARED_TEXTS_MIN = 4096
"""Distinct values a streamed key or detail column keeps coded before it checks whether its
values are mostly distinct (more distinct values than half its rows: it stops coding)."""


def _value_key(v: Any) -> Any:
    """A dict key equal for two values exactly when either can stand for the other in every
    output: a text or ``None`` itself; another value with its type (``1``, ``1.0`` and ``True``
    differ), a float by its bits (``-0.0`` is not ``0.0``), an unhashable one by its ``repr``."""
    if v is None or type(v) is str:
        return v
    if type(v) is float:
        return (float, v.hex())
    try:
        hash(v)
    except TypeError:  # a dict or list (built from JSON data): by its text, which shows types
        return (type(v), repr(v))
    return (type(v), v)


class Concatenation:
    """Partitions of one family appended in order as they are scored; :meth:`result` equals
    :func:`concat_evaluations` of them (and so the pairwise fold of :meth:`Evaluation.merge`),
    but a partition's columns are kept as pieces of the result's columns (:class:`_Column`) and
    the partition itself can be dropped at once: memory is the result plus one partition, never
    all partitions and the result together. An evaluation class with its own ``merge`` is kept and merged at the end.

    Once the rows appended exceed ``spill_rows`` (default :data:`~kg_rageval.results.colstore.SPILL_ROWS`;
    0: never), the numeric pieces of the stats, keys and details go to a temporary file
    (:mod:`kg_rageval.results.colstore`), those appended later too, and the result keeps its numeric
    columns in a temporary file of its own (its :class:`Columns` have a ``store``): built one
    column at a time (pieces read back, joined, stored as :class:`Columns` stores it, written
    out), the same stored arrays bit for bit as without spilling, read from the file when read.
    Record ids, ``unscored``, ``meta`` and object columns stay in memory."""

    def __init__(self, spill_rows: int | None = None) -> None:
        self.spill_rows = SPILL_ROWS if spill_rows is None else spill_rows
        self.pieces: ColumnStore | None = None  # the pieces' temporary file, once spilling
        self.spilled = False
        """Whether the columns went to a temporary file (more rows than ``spill_rows``)."""
        self.n = 0
        self.family: Family | None = None
        self.only: Evaluation | None = None  # the partition, while there is one
        self.custom: list[Evaluation] = []
        self.record_ids: list[np.ndarray] = []
        self.cols: tuple[dict[str, _Column], ...] = ({}, {}, {})
        self.names: tuple[list[list[str]], ...] = ([], [], [])
        self.unscored: list[Any] = []
        self.metas: list[dict[str, Any]] = []

    def add(self, ev: Evaluation) -> None:
        if self.family is None:
            self.family = ev.family
            if type(ev).merge is not Evaluation.merge:
                self.custom.append(ev)
                return
        elif ev.family.qualified_name != self.family.qualified_name:
            raise ValueError(f"cannot merge evaluations of different families "
                             f"({self.family.qualified_name} and {ev.family.qualified_name})")
        if self.custom:
            self.custom.append(ev)
            return
        self.only = ev if not self.metas else None
        m = len(ev)
        self.record_ids.append(ev.record_ids)
        for g, (group, fill) in enumerate(((ev.stats, 0), (ev.keys, None), (ev.details, None))):
            cols = self.cols[g]
            self.names[g].append(list(group))
            for name, col in _raw(group):
                have = cols.get(name)
                if have is None and not self.n:
                    cols[name] = _Column(col, share=g > 0, store=self.pieces)
                elif have is None:  # first seen here: the earlier rows get the fill value
                    have = cols[name] = _Column(np.full(self.n, fill, dtype=float if fill == 0 else object),
                                                share=g > 0, store=self.pieces)
                    have.append(col)
                else:
                    have.append(col)
            for name, have in cols.items():
                if name not in group:
                    have.append(np.full(m, fill, dtype=float if fill == 0 else object))
        self.unscored.append(ev.unscored)
        if self.metas and type(self.family).keep_meta is not Family.keep_meta:
            if len(self.metas) == 1:  # a second partition: the first one's is kept too
                self.metas[0] = self.family.keep_meta(self.metas[0], [])
            self.metas.append(self.family.keep_meta(ev.meta, self.metas))
        else:
            self.metas.append(ev.meta)
        self.n += m
        if self.pieces is None and self.only is None and 0 < self.spill_rows < self.n:  # two partitions or more
            self.pieces, self.spilled = ColumnStore(), True
            for pending in self.cols:
                for column in pending.values():
                    column.spill(self.pieces)

    def result(self) -> Evaluation:
        if self.family is None:
            raise ValueError("nothing to concatenate")
        if self.custom:
            return concat_evaluations(self.custom)
        if self.only is not None:  # one partition: itself, as concat_evaluations returns it
            return self.only
        store = None if self.pieces is None else ColumnStore()
        groups = [{name: self._joined(self.cols[g][name], g, store) for name in _merged_names(self.names[g])}
                  for g in range(3)]
        if self.pieces is not None:
            self.pieces.close()  # every piece is read back: the pieces' file goes
            self.pieces = None
        pieces, self.record_ids = self.record_ids, []
        record_ids = _shared_ids(_id_column(
            np.concatenate(pieces) if all(p.dtype.kind == "U" for p in pieces) else _concat_column(pieces)))
        del pieces
        trim_heap()
        unscored, self.unscored = UnscoredRecords.joined(self.unscored), []
        ev = Evaluation(family=self.family, record_ids=record_ids, stats=groups[0], keys=groups[1],
                        details=groups[2], unscored=unscored, meta=self.family.merge_meta(self.metas))
        for columns in (ev.stats, ev.keys, ev.details):
            assert isinstance(columns, Columns)
            columns.store = store  # a column changed later (Family.complete) is kept there too
        return _completed(ev)

    @staticmethod
    def _joined(col: _Column, group: int = 0, store: ColumnStore | None = None) -> Any:
        """One column joined, its pieces' memory returned to the system before the next column
        is built (freed pieces would otherwise stay in the heap while the joined columns take
        fresh memory: the result twice over). With a ``store``, the joined column is stored
        as the result's :class:`Columns` would store it (:func:`_column`, :func:`_compacted`)
        and kept in ``store``: one column in memory at a time."""
        out = col.array()
        if store is not None:
            kind = ("stats", "keys", "details")[group]
            out = _spilled(_compacted(_column(out, kind), kind == "stats"), store)
        trim_heap()
        return out


_IDS: "weakref.WeakValueDictionary[tuple[Any, ...], np.ndarray]" = weakref.WeakValueDictionary()
"""The record-id columns of streamed results alive now, by (rows, first id, last id)."""


def _shared_ids(ids: np.ndarray) -> np.ndarray:
    """``ids``, or an equal record-id column of another streamed result that is still alive
    (the families of one stream each join the same ids in the same order: one array of
    pointers, not one per evaluation). Record-id columns are never changed in place."""
    if not len(ids) or ids.dtype.kind != "U" and (
            ids.dtype != object or not set(map(type, ids.tolist())) <= {str}):
        return ids  # texts only: equal texts stand for each other, 1 and 1.0 would not
    key = (len(ids), ids[0], ids[-1])
    have = _IDS.get(key)
    if have is not None and np.array_equal(have, ids):
        return have
    _IDS[key] = ids
    return ids


def empty_evaluation(family: Family, **kw: Any) -> Evaluation:
    """An evaluation with no scored rows (its metrics all report missing evidence)."""
    return Evaluation(family, np.asarray([], dtype=object), {k: np.zeros(0) for k in family.stats}, **kw)


_PLAIN_NUMBERS = {float, int, bool}


def build_evaluation(
    family: Family,
    rows: Iterable[Mapping[str, Any]],
    *,
    keys: Iterable[str] = (),
    details: Iterable[str] = (),
    unscored: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
) -> Evaluation:
    """Convenience constructor from row dicts holding ``record_id``, the family's stats and
    the named key/detail fields (absent fields become ``None``; absent stats 0).

    A row without ``record_id`` or with a stat that is not a finite number raises
    :class:`InputError` naming the row and field."""
    rows = list(rows)
    keys, details = list(keys), list(details)
    for i, r in enumerate(rows):
        if "record_id" not in r:
            raise InputError(f"{family.name}: row {i} has no 'record_id' (fields: {sorted(r)})")
    stats: dict[str, np.ndarray] = {}
    for s in family.stats:
        try:
            vals = [r.get(s, 0.0) for r in rows]
            # plain numbers (the common case) convert in one C-level pass, as float() would
            col = np.asarray(vals if set(map(type, vals)) <= _PLAIN_NUMBERS else [float(v) for v in vals],
                             dtype=float)
            bad = np.flatnonzero(~np.isfinite(col))
        except (TypeError, ValueError):
            bad = None
        if bad is None or bad.size:
            for i, r in enumerate(rows):
                v = r.get(s, 0.0)
                try:
                    ok = math.isfinite(float(v))
                except (TypeError, ValueError):
                    ok = False
                if not ok:
                    raise InputError(f"{family.name}: row {i} (record {r['record_id']!r}): stat "
                                     f"{s!r} is {v!r}, expected a finite number")
        stats[s] = col
    return Evaluation(
        family=family,
        record_ids=_object_column([r["record_id"] for r in rows]),
        stats=stats,
        keys={k: _object_column([r.get(k) for r in rows]) for k in keys},
        details={k: _object_column([r.get(k) for r in rows]) for k in details},
        unscored=list(unscored or []),
        meta=dict(meta or {}),
    )


def columns_evaluation(
    family: Family,
    record_ids: list[Any],
    stats: Iterable[Iterable[float]],
    *,
    keys: Mapping[str, list[Any]] | None = None,
    details: Mapping[str, list[Any]] | None = None,
    unscored: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
) -> Evaluation:
    """What :func:`build_evaluation` makes of row dicts, from columns: ``stats`` holds one
    sequence of finite numbers per name of ``family.stats``, in that order (a family building
    its rows as tuples passes ``zip(*rows)``); ``keys`` and ``details`` one list of values each.
    The same columns (float stats, object ids, keys and details), without a dict per row."""
    cols = list(stats)
    if not cols and not record_ids:  # zip(*[]) of no rows
        cols = [()] * len(family.stats)
    if len(cols) != len(family.stats):
        raise ValueError(f"{family.name}: {len(cols)} stats columns for {len(family.stats)} stats")
    return Evaluation(
        family=family,
        record_ids=_object_column(record_ids),
        stats={s: np.asarray(c, dtype=float) for s, c in zip(family.stats, cols)},
        keys={k: _object_column(v) for k, v in (keys or {}).items()},
        details={k: _object_column(v) for k, v in (details or {}).items()},
        unscored=list(unscored or []),
        meta=dict(meta or {}),
    )


MetricFn = Callable[[Mapping[str, float]], Metric]


class EvaluationSet(dict):
    """What every family's scorer returns: its evaluations by member name (``Family.name``).

    A family with one evaluation (hierarchy, linking, retrieval, conformance) has one member
    named like the family; generation has ``faithfulness``, ``correctness``, ``refusal``,
    ``unseen_concepts``, ``calibration``; provenance ``citations``, ``provenance_depth`` (and
    ``reproducibility`` with repeated runs). It is a ``dict`` (``result["refusal"]``), plus:

    * :meth:`metrics` — every metric under its canonical name ``<family>.<metric>``;
    * :meth:`owner` — the member evaluation that produces a metric;
    * :meth:`merge` — member-wise :meth:`Evaluation.merge` (partitions, Dask);
    * :attr:`single` — the one evaluation of a one-member family.
    """

    def __init__(self, family: str, members: Mapping[str, Evaluation] | Iterable[tuple[str, Evaluation]] = ()):
        super().__init__(members)
        self.family = family

    def __reduce__(self):  # pickling keeps the family name (Dask)
        return (EvaluationSet, (self.family, list(self.items())))

    @property
    def evaluations(self) -> list[Evaluation]:
        return list(self.values())

    @property
    def single(self) -> Evaluation:
        if len(self) != 1:
            raise ValueError(f"{self.family}: {len(self)} evaluations ({', '.join(self)}), not one")
        return next(iter(self.values()))

    def owner(self, metric: str) -> tuple[str, Evaluation] | None:
        """``(member, evaluation)`` producing the bare ``metric``, else ``None``."""
        for name, ev in self.items():
            if metric in ev.metrics():
                return name, ev
        return None

    def metrics(self) -> dict[str, Metric]:
        """``{"<family>.<metric>": Metric}`` over every member (names unique within a family)."""
        out: dict[str, Metric] = {}
        for ev in self.values():
            for name, m in ev.metrics().items():
                key = f"{self.family}.{name}"
                if key in out:
                    raise ValueError(f"{self.family}: metric {name!r} produced by two members")
                out[key] = Metric(key, m.value, m.numerator, m.denominator, m.missing, m.ci)
        return out

    def merge(self, other: "EvaluationSet") -> "EvaluationSet":
        return concat_sets([self, other])

    def to_pandas(self, what: str = "rows") -> Any:
        """Rows of every member (a ``member`` column first) or the canonical metrics, as a
        ``pandas.DataFrame`` (see :meth:`Evaluation.to_pandas`)."""
        if what == "rows":
            return _frame([{"member": m, **r} for m, ev in self.items() for r in ev.rows()], what)
        return _frame(_metric_rows(self.metrics()), what)

    @property
    def unscored_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for ev in self.values():
            for k, v in ev.unscored_counts.items():
                out[k] = out.get(k, 0) + v
        return dict(sorted(out.items()))


def concat_sets(parts: Iterable[EvaluationSet], *, consume: bool = False) -> EvaluationSet:
    """Member-wise :func:`concat_evaluations` of partitions' :class:`EvaluationSet` objects
    (every partition must have the same members)."""
    parts = list(parts)
    if not parts:
        raise ValueError("nothing to concatenate")
    first = parts[0]
    for p in parts[1:]:
        if set(p) != set(first):
            raise ValueError(f"{first.family}: cannot merge results with members {sorted(first)} and {sorted(p)}")
    if len(parts) == 1:
        return first
    return EvaluationSet(first.family, {k: concat_evaluations([p[k] for p in parts], consume=consume)
                                        for k in first})


def as_evaluation_set(family: str, result: Any) -> EvaluationSet:
    """A family function's result as an :class:`EvaluationSet`: one :class:`Evaluation`
    (member named by its ``Family.name``), a mapping of them, or a list/tuple of them.
    Anything else is a family bug (``TypeError``)."""
    if isinstance(result, EvaluationSet):
        return result if result.family == family else EvaluationSet(family, result)
    if isinstance(result, Evaluation):
        return EvaluationSet(family, {result.family.name: result})
    if isinstance(result, Mapping) and all(isinstance(v, Evaluation) for v in result.values()) and result:
        return EvaluationSet(family, {str(k): v for k, v in result.items()})
    if isinstance(result, (list, tuple)) and result and all(isinstance(v, Evaluation) for v in result):
        return EvaluationSet(family, {v.family.name: v for v in result})
    raise TypeError(f"family {family!r} returned {type(result).__name__}, not an Evaluation or a mapping of them")


def _metric_rows(metrics: Mapping[str, Metric]) -> list[dict[str, Any]]:
    return [{"metric": k, "value": m.value, "numerator": m.numerator, "denominator": m.denominator,
             "missing": m.missing, "ci_low": m.ci[0] if m.ci else None, "ci_high": m.ci[1] if m.ci else None}
            for k, m in metrics.items()]


def _frame(rows: list[dict[str, Any]], what: str) -> Any:
    if what not in ("rows", "metrics"):
        raise InputError(f"to_pandas: what must be 'rows' or 'metrics', not {what!r}")
    try:
        import pandas as pd
    except ImportError:
        raise InputError("to_pandas needs pandas (pip install pandas)") from None
    return pd.DataFrame(rows)

