"""How an evaluation stores its columns: compactly, read back as the arrays a family built.

:class:`Columns` holds one group of columns (``stats``, ``keys`` or ``details``): whole-number
stats in the smallest integer dtype (:func:`compact_stat`), object columns of few distinct
scalars as codes into them (:func:`compact_object`, :class:`CodedColumn`), numeric buffers of a
spilled evaluation in a temporary file (:class:`~kg_rageval.results.colstore.ColumnStore`).
Also the normalisation of columns given to an evaluation (:func:`_column`, :func:`_id_column`)
and the grouping codes of a key column (:func:`_factorize`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np

from kg_rageval.results.colstore import ColumnStore, SpilledArray
from kg_rageval.results.recordstore import text_column


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
    col = (
        values
        if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1
        else _object_column(values)
    )
    texts = text_column(col)
    return col if texts is None else texts


def record_id_texts(record_ids: np.ndarray) -> set[str]:
    """The distinct record ids as text (``str`` of each, as :meth:`~.evaluation.Evaluation.per_record_stats`
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
        if (
            isinstance(values, np.ndarray)
            and values.ndim == 1
            and (values.dtype == bool or (values.dtype.kind in "iu" and values.dtype.itemsize <= 4))
        ):
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


_STAT_STORES = (
    (0, 255, np.uint8),
    (0, 65535, np.uint16),
    (0, 2**32 - 1, np.uint32),
    (-128, 127, np.int8),
    (-32768, 32767, np.int16),
    (-(2**31), 2**31 - 1, np.int32),
)


def compact_stat(arr: np.ndarray) -> np.ndarray:
    """A float64 stats column whose values are all whole numbers (counts, 0/1 flags) as the
    smallest integer dtype holding each of them exactly (1, 2 or 4 bytes a row instead of 8);
    any other column as it is. :class:`Columns` reads an integer stats column back as float64,
    so every reader sees the values it was given: the same numbers, sums and rows (a ``-0.0``
    keeps the column float, as it would come back ``0.0``)."""
    if arr.dtype != np.float64 or not len(arr):
        return arr
    lo, hi = float(arr.min()), float(arr.max())
    for low, high, dtype in _STAT_STORES:  # noqa: B007 - dtype is the one the loop stops at (used below)
        if low <= lo and hi <= high:
            break
    else:
        return arr
    small = arr.astype(dtype)
    if not np.array_equal(small, arr):
        return arr
    sign = np.signbit(arr)
    if (lo >= 0 and sign.any()) or (lo < 0 and (sign & (arr == 0)).any()):
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
    return isinstance(arr, SpilledArray) or (
        isinstance(arr, CodedColumn) and isinstance(arr.codes, SpilledArray)
    )


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
    see :class:`~.concatenation.Concatenation`), every numeric buffer given is kept in that temporary file
    instead of memory (a :class:`~kg_rageval.results.colstore.SpilledArray`; a coded column's codes),
    and read from it, bit for bit, each time it is read: the reads above, :meth:`raw`,
    :meth:`raw_items` one column at a time, :meth:`take` only the rows asked for. Object
    columns stay in memory."""

    __slots__ = ("_raw", "_stats", "store")

    def __init__(
        self, kind: str, columns: Mapping[str, np.ndarray] | None = None, store: ColumnStore | None = None
    ):
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
        return sum(
            0
            if isinstance(a, SpilledArray)
            else (0 if a.values is None else a.values.nbytes)
            if _is_spilled(a)
            else a.nbytes
            for a in self._raw.values()
        )

    @property
    def spilled_nbytes(self) -> int:
        """Bytes of the buffers kept in the temporary file."""
        return sum(
            a.nbytes if isinstance(a, SpilledArray) else a.codes.nbytes if _is_spilled(a) else 0
            for a in self._raw.values()
        )


class StatColumns(Sequence):
    """The stats columns ``names`` of ``stats`` (an evaluation's :class:`Columns`) as the float64
    arrays ``stats[name]`` gives, each read when it is indexed or its turn comes in an iteration:
    a roll-up or a projection over them (:func:`~.rollup.rollup_sums`,
    :meth:`kg_rageval.results.forms.Projection.columns_of`) holds the column it reads, not all of them
    (a spilled evaluation reads each from its file)."""

    __slots__ = ("names", "stats")

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

    __slots__ = ("codes", "fresh", "values")
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

    def copy(self) -> CodedColumn:
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
    texts) stays as it is.

    A column of more than :data:`SAMPLE_ROWS` rows is sampled first (every ``len // SAMPLE_ROWS``-th
    row): when more than half the sampled values are distinct (record ids, free texts), the
    column is not coded and no row beyond the sample is hashed — a number column is kept as its
    NumPy array, anything else as it is. The sample only decides how a column is stored; every
    read gives the same values either way."""
    if not isinstance(arr, np.ndarray) or arr.dtype != object or len(arr) < 2:
        return arr
    if len(arr) > SAMPLE_ROWS and _mostly_distinct(arr[:: len(arr) // SAMPLE_ROWS].tolist()):
        vals = arr.tolist()
        types = set(map(type, vals))
        if len(types) == 1 and types <= {float, int, bool}:
            kind = types.pop()
            try:
                return CodedColumn(
                    np.array(vals, dtype={float: np.float64, int: np.int64, bool: np.bool_}[kind]), None
                )
            except OverflowError:  # ints beyond 64 bits
                return arr
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


def text_codes(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """An object column of texts and ``None`` as ``(codes, values)``: each row's position
    among the distinct values (first-seen order) and those values as an object array; ``None``
    for any other column. For :func:`compact_rows`, which stores selections of its rows."""
    vals = arr.tolist()
    if not set(map(type, vals)) <= _TEXT_TYPES:
        return None
    table: dict[Any, int] = {}
    codes = np.fromiter(map(table.setdefault, vals, range(len(vals))), dtype=np.intp, count=len(vals))
    # setdefault gave each value the row of its first occurrence: renumber those in order
    firsts = np.fromiter(table.values(), dtype=np.intp, count=len(table))
    renumber = np.empty(len(vals), dtype=np.intp)
    renumber[firsts] = np.arange(len(firsts))
    return renumber[codes], _object_column(list(table))


def compact_rows(codes: np.ndarray, values: np.ndarray, at: np.ndarray) -> Any:
    """:func:`compact_object` of the rows ``at`` of a text column given by :func:`text_codes`
    (``values[codes[at]]``), without reading their objects: the same stored column (codes
    into the distinct values of those rows in first-seen order, or the object array when a
    sample or the rows are mostly distinct)."""
    sub = codes[at]
    n = len(sub)
    if n < 2:
        return values[sub]
    if n > SAMPLE_ROWS:
        sample = sub[:: n // SAMPLE_ROWS]
        if len(np.unique(sample)) > len(sample) // 2:  # texts are equal exactly when codes are
            return values[sub]
    uniq, first = np.unique(sub, return_index=True)
    if len(uniq) > n // 2:
        return values[sub]
    order = uniq[np.argsort(first)]  # the distinct codes in first-seen order
    renumber = np.empty(len(values), dtype=np.intp)
    renumber[order] = np.arange(len(order))
    return CodedColumn(_narrow_codes(renumber[sub], len(order)), values[order])


SAMPLE_ROWS = 4096
"""Rows :func:`compact_object` samples before it codes a longer column."""


def _mostly_distinct(sample: list[Any]) -> bool:
    """More than half of ``sample`` distinct by Python equality (``1`` and ``True`` are one
    value here: the sample only decides how the column is stored). An unhashable value makes
    the column uncodable anyway: it counts as distinct."""
    try:
        return len(set(sample)) > len(sample) // 2
    except TypeError:
        return True


def _first_codes(values: list[Any]) -> np.ndarray:
    """For each position, the position of the first equal value (dict equality)."""
    first: dict[Any, int] = {}
    return np.fromiter(map(first.setdefault, values, itertools.count()), dtype=np.int64, count=len(values))


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
