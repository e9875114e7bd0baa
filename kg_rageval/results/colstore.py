"""Result columns kept in a temporary file: the numeric buffers of a large streamed evaluation.

A streamed evaluation (:class:`~kg_rageval.results.concatenation.Concatenation`) holds every family's
result columns — stats, keys, details — until the audit's stages and reports have read them:
a few bytes a row each, but a few hundred bytes a record over all families, so a 1,000,000-
record audit's memory would grow with its records. Once an evaluation has more rows than
:data:`SPILL_ROWS` (the audit config's ``spill_rows``), its numeric buffers go to a
:class:`ColumnStore` instead: one anonymous temporary file (``tempfile.TemporaryFile`` in the
system's temporary directory, ``TMPDIR``: no name on disk, removed by the system when it is
closed or the process ends, never next to the inputs). What stays in memory is a
:class:`SpilledArray` handle per column (its offset, dtype and length).

Reading a column (:meth:`SpilledArray.read`) allocates a fresh array and fills it from the file
(``os.preadv``: no memory map stays resident), so the values are the stored bytes, bit for
bit; only the column being read is in memory, and it is freed with the caller's reference.
:meth:`SpilledArray.take` reads only the span of some rows (the few records a report lists).
A handle pickles as the array it holds (Dask, ``copy.deepcopy``), so a spilled evaluation
travels as an in-memory one.

Object columns (texts, lists, dicts) are Python objects, not buffers: they are never spilled.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from kg_rageval.base.spool import Spool

SPILL_ROWS = 65_536
"""Rows a streamed evaluation keeps in memory before its numeric column buffers go to a
temporary file (the audit config's ``spill_rows`` when not given; 0: never). Four chunks of the
audit's default 16,384 records: an audit of a few tens of thousands of records never touches
the disk, a larger one holds at most this many rows of each evaluation's columns."""


def _bytes(arr: np.ndarray) -> memoryview:
    return arr.data.cast("B") if arr.nbytes else memoryview(b"")


class ColumnStore(Spool):
    """An append-only anonymous temporary file of NumPy buffers (:meth:`put`; a
    :class:`~kg_rageval.base.spool.Spool` of bytes), read back by the :class:`SpilledArray` handles
    it returns. The file goes when the store is closed or garbage collected (every handle holds
    the store), or when the process ends."""

    def put(self, arr: np.ndarray) -> SpilledArray:
        """Append the buffer of the 1-D numeric (or bool) array ``arr``; its handle."""
        arr = np.ascontiguousarray(arr)
        if arr.ndim != 1 or arr.dtype.kind not in "biuf":
            raise ValueError(f"only 1-D numeric arrays are spilled, not {arr.dtype} of shape {arr.shape}")
        start, _ = self.append_bytes(_bytes(arr))
        return SpilledArray(self, start, arr.dtype, len(arr))

    def read_into(self, out: np.ndarray, offset: int) -> None:
        """Fill the contiguous array ``out`` with the bytes at ``offset``."""
        view, at, fd = _bytes(out), 0, self.fileno()
        while at < len(view):
            got = os.preadv(fd, [view[at:]], offset + at)
            if got <= 0:
                raise OSError("a spilled column's temporary file is shorter than written")
            at += got


class SpilledArray:
    """A 1-D numeric array kept in a :class:`ColumnStore`: ``n`` values of ``dtype`` at byte
    ``offset``. It answers ``len``, ``dtype``, ``shape`` and ``nbytes`` (bytes on disk) without
    reading; :meth:`read` (also ``np.asarray(handle)``) gives the array, :meth:`take` some of
    its rows. Never changed in place: a changed column is a new handle."""

    __slots__ = ("dtype", "n", "offset", "store")
    ndim = 1
    base = None

    def __init__(self, store: ColumnStore, offset: int, dtype: np.dtype, n: int) -> None:
        self.store, self.offset, self.dtype, self.n = store, offset, np.dtype(dtype), n

    def __len__(self) -> int:
        return self.n

    @property
    def shape(self) -> tuple[int]:
        return (self.n,)

    @property
    def nbytes(self) -> int:
        return self.n * self.dtype.itemsize

    def read(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Values ``lo:hi`` (default: all) as a fresh array."""
        hi = self.n if hi is None else hi
        out = np.empty(max(hi - lo, 0), dtype=self.dtype)
        if len(out):
            self.store.read_into(out, self.offset + lo * self.dtype.itemsize)
        return out

    def take(self, index: Any) -> np.ndarray:
        """``read()[index]``, reading only what ``index`` needs: a slice its span, integer
        positions the span from the smallest to the largest (a record's rows), a boolean mask
        the whole column."""
        if isinstance(index, slice):
            lo, hi, step = index.indices(self.n)
            if step == 1:
                return self.read(lo, max(lo, hi))
            return self.read()[index]
        idx = np.asarray(index)
        if idx.ndim == 0 and idx.dtype.kind in "iu":  # one row: a numpy scalar, as indexing gives
            i = int(idx) + self.n if int(idx) < 0 else int(idx)
            if not 0 <= i < self.n:
                raise IndexError(f"index {int(idx)} out of bounds for a spilled column of {self.n} rows")
            return self.read(i, i + 1)[0]
        if idx.dtype == bool or idx.ndim != 1 or not len(idx):
            return self.read()[idx]
        if idx.dtype.kind not in "iu":
            raise IndexError("a spilled column is indexed by a slice, integer positions or a mask")
        idx = np.where(idx < 0, idx + self.n, idx)
        lo, hi = int(idx.min()), int(idx.max()) + 1
        if lo < 0 or hi > self.n:
            raise IndexError(f"index out of bounds for a spilled column of {self.n} rows")
        return self.read(lo, hi)[idx - lo]

    __getitem__ = take

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.read()
        return out if dtype is None else out.astype(dtype, copy=False)

    def astype(self, dtype: Any, copy: bool = True) -> np.ndarray:
        return self.read().astype(dtype, copy=False)

    def copy(self) -> np.ndarray:
        return self.read()

    def tolist(self) -> list[Any]:
        return self.read().tolist()

    def __reduce__(self):  # pickles (Dask, deepcopy) as the array it holds
        return (np.asarray, (self.read(),))

    def __repr__(self) -> str:
        return f"SpilledArray({self.n} x {self.dtype}, offset {self.offset})"
