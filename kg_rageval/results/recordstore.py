"""Per-record texts and unscored entries stored without a Python object per record.

A streamed evaluation (``contract.stream_families``) keeps its results while the records pass
chunk by chunk. A Python object that outlives its chunk — a record id string from the JSON
parse, an unscored entry dict — sits in the allocator's arenas among the chunk's freed parse
objects, so none of those arenas is ever given back: at 100,000 records the audit held 256
arenas (268 MB) for 61 MB of live small objects. The two per-record kinds of object an
:class:`~kg_rageval.results.evaluation.Evaluation` keeps are stored here as NumPy buffers instead:

* :func:`text_column` — a column of texts (record ids) as one fixed-width NumPy unicode array
  (``<U...``), when that is at most twice what the strings cost as objects (else as it was);
* :class:`UnscoredRecords` — the unscored entries (``{"record_id", "reason", "code", ...}``)
  as columns: the record ids by :func:`text_column`, the reasons and codes as 1-byte codes
  into their few distinct texts, the order of each entry's keys as a code into the distinct
  orders.

Reads give what was stored: a text column's ``tolist()`` the same ``str`` values (an element
is a ``numpy.str_``, a ``str`` subclass: equal, same hash), an unscored entry a fresh ``dict``
with the same keys in the same order and the same values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, MutableSequence
from typing import Any, overload

import numpy as np

_STR_OBJECT = 49 + 8
"""Bytes a short ASCII ``str`` costs as an object (header) plus its pointer in an array."""


_FEW = 4096
"""Up to this many texts the trailing-NUL check runs in Python: a fixed-width array drops a
text's trailing ``"\0"`` characters, so its lengths differ exactly where a text ends in one."""


def text_column(values: Any) -> np.ndarray | None:
    """``values`` (a sequence or 1-D array of ``str``) as a NumPy unicode array, or ``None``
    when they are not all texts or the unicode array would cost more than twice the strings
    as objects (4 bytes a character of the longest text, per row: one long text among short
    ones keeps the column as objects) or would not give them back (a text ending in ``"\\0"``,
    which a fixed-width array drops)."""
    if isinstance(values, np.ndarray):
        if values.dtype.kind == "U":  # joined chunks: the widest chunk's width for every row
            if not len(values) or values.ndim != 1:
                return values
            width = values.dtype.itemsize // 4
            return (
                values if 4 * width <= 2 * (_STR_OBJECT + float(np.strings.str_len(values).mean())) else None
            )
        if values.dtype != object or values.ndim != 1:
            return None
        seq = values.tolist()
    else:
        seq = values if isinstance(values, list) else list(values)
    if not seq:
        return np.zeros(0, "U1")
    if set(map(type, seq)) != {str}:
        return None
    lens = np.fromiter(map(len, seq), np.int64, len(seq))
    longest = int(lens.max())
    if 4 * max(longest, 1) > 2 * (_STR_OBJECT + float(lens.mean())):
        return None
    if len(seq) <= _FEW:  # the same test without numpy.strings (its import costs a tiny run ~1 ms)
        if any(t.endswith("\0") for t in seq):
            return None
        return np.array(seq, dtype=f"U{max(longest, 1)}")
    arr = np.array(seq, dtype=f"U{max(longest, 1)}")
    if not np.array_equal(np.strings.str_len(arr), lens):  # a trailing "\0" was dropped
        return None
    return arr


class _Coded:
    """A field of few distinct texts (and ``None``): codes into its distinct values."""

    __slots__ = ("codes", "values")

    def __init__(self, codes: np.ndarray, values: list[Any]) -> None:
        self.codes, self.values = codes, values

    def tolist(self) -> list[Any]:
        return list(map(self.values.__getitem__, self.codes.tolist()))

    def __getitem__(self, i: int) -> Any:
        return self.values[int(self.codes[i])]

    @property
    def nbytes(self) -> int:
        return int(self.codes.nbytes)


def _object_array(values: list[Any]) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def _column(values: list[Any]) -> Any:
    """One field of unscored entries: texts (and ``None``) with at most half of them distinct
    as 1-4 byte codes into the distinct values (:class:`_Coded`); other texts by
    :func:`text_column`; anything else (numbers, mostly distinct texts a unicode array would
    not hold compactly) an object array."""
    if set(map(type, values)) <= {str, type(None)}:
        table: dict[Any, int] = {}
        codes = [table.setdefault(v, len(table)) for v in values]
        if len(table) <= max(1, len(values) // 2):
            n = len(table)
            dtype = np.uint8 if n <= 256 else np.uint16 if n <= 65536 else np.int32
            return _Coded(np.asarray(codes, dtype=dtype), list(table))
        texts = text_column(values)
        if texts is not None:
            return texts
    return _object_array(values)


def _values(col: Any) -> list[Any]:
    return col.tolist()


def _at(col: Any, i: int) -> Any:
    """Entry ``i`` of a stored field as the value it was given (a text as ``str``)."""
    v = col[i]
    return str(v) if isinstance(col, np.ndarray) and col.dtype.kind == "U" else v


class UnscoredRecords(MutableSequence):
    """An evaluation's unscored entries (dicts such as ``{"record_id": "q7", "reason": "no
    answer", "code": "no_section"}``) stored as columns (see the module docstring); a list of
    dicts to read: ``len``, indexing and iteration give fresh dicts (changing one changes
    nothing stored), ``==`` compares with a list of dicts, and ``append``, ``extend``,
    ``insert``, item assignment, deletion and ``sort(key=...)`` change the stored entries.
    Built from any iterable of dicts; :meth:`joined` concatenates several in order without
    building their dicts."""

    __slots__ = ("_cols", "_layout", "_layouts", "_n")
    _n: int
    _layouts: list[tuple[str, ...]]
    _layout: np.ndarray
    _cols: dict[str, Any]

    def __init__(self, entries: Iterable[dict[str, Any]] = ()) -> None:
        if isinstance(entries, UnscoredRecords):
            self._n, self._layouts, self._layout, self._cols = (
                entries._n,
                entries._layouts,
                entries._layout,
                entries._cols,
            )
            return
        self._set(list(entries))

    def _set(self, entries: list[dict[str, Any]]) -> None:
        for i, u in enumerate(entries):
            if not isinstance(u, dict):
                raise TypeError(f"unscored entry {i} is a {type(u).__name__}, not a dict")
        self._n = len(entries)
        orders = [tuple(u) for u in entries]
        table: dict[tuple[str, ...], int] = {}
        codes = [table.setdefault(o, len(table)) for o in orders]
        self._layouts = list(table)
        self._layout = np.asarray(codes, dtype=np.uint8 if len(table) <= 256 else np.int32)
        names = list(dict.fromkeys(k for o in self._layouts for k in o))
        one = len(self._layouts) == 1  # else an entry without a key holds None there (unread)
        self._cols = {
            k: _column([u[k] for u in entries] if one else [u.get(k) for u in entries]) for k in names
        }

    @classmethod
    def joined(cls, parts: Iterable[Iterable[dict[str, Any]]]) -> UnscoredRecords:
        """The entries of ``parts`` in order, as one store (a text field joined as one array)."""
        stores = [p if isinstance(p, UnscoredRecords) else cls(p) for p in parts]
        stores = [s for s in stores if s._n]
        out = cls()
        if not stores:
            return out
        if len(stores) == 1:
            return cls(stores[0])
        table: dict[tuple[str, ...], int] = {}
        codes = []
        for s in stores:
            remap = np.asarray([table.setdefault(o, len(table)) for o in s._layouts], dtype=np.int64)
            codes.append(remap[s._layout])
        out._n = sum(s._n for s in stores)
        out._layouts = list(table)
        out._layout = np.concatenate(codes).astype(np.uint8 if len(table) <= 256 else np.int32)
        names = list(dict.fromkeys(k for o in out._layouts for k in o))
        out._cols = {}
        for k in names:
            cols = [s._cols.get(k) for s in stores]
            joined: np.ndarray | None = (
                np.concatenate(cols)  # type: ignore[arg-type]
                if all(isinstance(c, np.ndarray) and c.dtype.kind == "U" for c in cols)
                else None
            )
            if joined is not None and text_column(joined) is not None:
                out._cols[k] = joined
            else:
                vals: list[Any] = []
                for s, c in zip(stores, cols):
                    vals.extend(_values(c) if c is not None else [None] * s._n)
                out._cols[k] = _column(vals)
        return out

    # -------------------------------------------------------------- reading
    def __len__(self) -> int:
        return self._n

    def tolist(self) -> list[dict[str, Any]]:
        """Every entry as a fresh dict, in order."""
        if not self._n:
            return []
        cols = {k: _values(c) for k, c in self._cols.items()}
        if len(self._layouts) == 1:
            names = self._layouts[0]
            return [dict(zip(names, vals)) for vals in zip(*(cols[k] for k in names))]
        layouts = self._layouts
        return [{k: cols[k][i] for k in layouts[c]} for i, c in enumerate(self._layout.tolist())]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.tolist())

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self.tolist()[index]
        i = range(self._n)[index]  # IndexError as a list raises it
        return {k: _at(self._cols[k], i) for k in self._layouts[int(self._layout[i])]}

    def all_have(self, field: str) -> bool:
        """Whether every entry has ``field``."""
        return all(field in o for o in self._layouts)

    def counts(self, field: str) -> dict[Any, int]:
        """``{value: entries}`` of one field over the entries that have it (without building
        the entries)."""
        col = self._cols.get(field)
        if col is None:
            return {}
        has = np.asarray([field in o for o in self._layouts])[self._layout]
        if isinstance(col, _Coded):
            n = np.bincount(np.asarray(col.codes, dtype=np.int64)[has], minlength=len(col.values))
            return {v: int(c) for v, c in zip(col.values, n.tolist()) if c}
        out: dict[Any, int] = {}
        for v, h in zip(_values(col), has.tolist()):
            if h:
                out[v] = out.get(v, 0) + 1
        return out

    def __eq__(self, other: object) -> bool:
        if isinstance(other, UnscoredRecords):
            return self.tolist() == other.tolist()
        if isinstance(other, (list, tuple)):
            return self.tolist() == list(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"UnscoredRecords({self.tolist()!r})"

    def __add__(self, other: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        return self.tolist() + list(other)

    def __radd__(self, other: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(other) + self.tolist()

    def __reduce__(self):  # pickles (Dask) as the stored columns
        return (_rebuild, (self._n, self._layouts, self._layout, self._cols))

    @property
    def nbytes(self) -> int:
        """Bytes of the stored arrays' buffers."""
        return int(self._layout.nbytes + sum(c.nbytes for c in self._cols.values()))

    # -------------------------------------------------------------- changing
    def __setitem__(self, index: Any, value: Any) -> None:
        entries = self.tolist()
        entries[index] = value
        self._set(entries)

    def __delitem__(self, index: Any) -> None:
        entries = self.tolist()
        del entries[index]
        self._set(entries)

    def insert(self, index: int, value: dict[str, Any]) -> None:
        entries = self.tolist()
        entries.insert(index, value)
        self._set(entries)

    def append(self, value: dict[str, Any]) -> None:
        self.insert(self._n, value)

    def extend(self, values: Iterable[dict[str, Any]]) -> None:
        joined = UnscoredRecords.joined([self, list(values)])
        self._n, self._layouts, self._layout, self._cols = (
            joined._n,
            joined._layouts,
            joined._layout,
            joined._cols,
        )

    def __iadd__(self, values: Iterable[dict[str, Any]]) -> UnscoredRecords:
        self.extend(values)
        return self

    def sort(self, *, key: Callable[[dict[str, Any]], Any] | None = None, reverse: bool = False) -> None:
        """Sort the entries in place (stable), as ``list.sort`` sorts the dicts."""
        entries = self.tolist()
        entries.sort(key=key, reverse=reverse)  # type: ignore[arg-type]
        self._set(entries)


def _rebuild(
    n: int, layouts: list[tuple[str, ...]], layout: np.ndarray, cols: dict[str, Any]
) -> UnscoredRecords:
    out = UnscoredRecords()
    out._n, out._layouts, out._layout, out._cols = n, layouts, layout, cols
    return out


class PackedValues:
    """Python values (plain data: dicts, lists, texts, numbers) pickled into one byte buffer,
    read by position as fresh copies of the values: the distinct values of a
    :class:`~kg_rageval.results.columns.CodedColumn` (``values``) whose values are containers, as
    conformance's ``problems``, without a Python object per value kept. Indexed like the
    object array it stands for: an integer gives the value, an integer array the object array
    of those values (each distinct position unpickled once, so equal positions give the same
    object, as indexing an object array would)."""

    __slots__ = ("buf", "ends")
    dtype = np.dtype(object)
    ndim = 1

    def __init__(self, buf: bytes, ends: np.ndarray) -> None:
        self.buf, self.ends = buf, ends

    @classmethod
    def of(cls, values: Iterable[Any]) -> PackedValues:
        import pickle

        parts = [pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL) for v in values]
        ends = np.cumsum(np.fromiter(map(len, parts), np.int64, len(parts)))
        return cls(b"".join(parts), ends)

    @classmethod
    def joined(cls, parts: list[PackedValues]) -> PackedValues:
        """The values of ``parts`` one after the other (positions shift by the earlier parts'
        lengths)."""
        if len(parts) == 1:
            return parts[0]
        shift = np.cumsum([0] + [len(p.buf) for p in parts[:-1]])
        return cls(
            b"".join(p.buf for p in parts),
            np.concatenate([p.ends + s for p, s in zip(parts, shift.tolist())]),
        )

    def __len__(self) -> int:
        return len(self.ends)

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.ends),)

    @property
    def nbytes(self) -> int:
        return len(self.buf) + int(self.ends.nbytes)

    def _one(self, i: int) -> Any:
        import pickle

        n = len(self.ends)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of bounds for {n} packed values")
        i %= n
        lo = int(self.ends[i - 1]) if i else 0
        return pickle.loads(memoryview(self.buf)[lo : int(self.ends[i])])

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, (int, np.integer)):
            return self._one(int(index))
        pos = np.arange(len(self.ends))[index]
        if np.ndim(pos) == 0:
            return self._one(int(pos))
        flat = pos.reshape(-1).tolist()
        got = {p: self._one(p) for p in dict.fromkeys(flat)}
        return _object_array([got[p] for p in flat]).reshape(np.shape(pos))

    def tolist(self) -> list[Any]:
        return [self._one(i) for i in range(len(self.ends))]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.tolist())

    def __reduce__(self):
        return (PackedValues, (self.buf, self.ends))

    def __repr__(self) -> str:
        return f"PackedValues({self.tolist()!r})"
