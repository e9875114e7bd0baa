"""Streamed concatenation: partitions of one family appended as they are scored, joined once.

:class:`Concatenation` equals :func:`~kg_rageval.results.evaluation.concat_evaluations` of its
partitions, but keeps each partition's columns as pieces (:class:`_Column`) so a partition can
be dropped at once, and spills numeric pieces to a temporary file past ``spill_rows``.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from kg_rageval.base.memory import trim_heap
from kg_rageval.results.colstore import SPILL_ROWS, ColumnStore
from kg_rageval.results.columns import (
    CodedColumn,
    Columns,
    _column,
    _compacted,
    _id_column,
    _narrow_codes,
    _object_column,
    _raw,
    _resident,
    _spilled,
    _value_key,
)
from kg_rageval.results.evaluation import Evaluation, _completed, _concat_column, concat_evaluations
from kg_rageval.results.family import Family, _merged_names
from kg_rageval.results.recordstore import PackedValues, UnscoredRecords


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

    __slots__ = ("coded", "fresh", "pieces", "size", "store", "table", "uniques")

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
            return CodedColumn(
                _narrow_codes(codes, len(self.uniques)), _object_column(self.uniques), self.fresh
            )
        values = (
            CodedColumn(np.zeros(0, np.int32), _object_column(self.uniques), self.fresh)
            if any(coded)
            else None
        )
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
            out[at : at + len(p)] = p
            at += len(p)
        return out


def _packed_join(pieces: list[CodedColumn]) -> CodedColumn:
    """Coded pieces with :class:`~kg_rageval.results.recordstore.PackedValues` as one coded column: the
    value buffers one after the other, each piece's codes (read back if spilled) shifted past
    the earlier values."""
    shift: np.ndarray = np.cumsum([0] + [len(p.values) for p in pieces[:-1]])  # type: ignore[arg-type]
    values = PackedValues.joined([p.values for p in pieces])  # type: ignore[misc]
    codes = np.concatenate([_resident(p).codes.astype(np.int64) + s for p, s in zip(pieces, shift.tolist())])
    return CodedColumn(
        _narrow_codes(codes, len(values)),
        values,  # type: ignore[arg-type]
        any(p.fresh for p in pieces),
    )


def _joined_codes(pieces: list[Any]) -> np.ndarray:
    """The code pieces of a coded :class:`_Column` joined (each spilled one read in turn)."""
    if len(pieces) == 1:
        return _resident(pieces[0])
    out = np.empty(sum(len(p) for p in pieces), dtype=np.result_type(*(p.dtype for p in pieces)))
    at = 0
    for i, p in enumerate(pieces):
        pieces[i] = None
        out[at : at + len(p)] = _resident(p)
        at += len(p)
    return out


SHARED_TEXTS_MIN = 4096
"""Distinct values a streamed key or detail column keeps coded before it checks whether its
values are mostly distinct (more distinct values than half its rows: it stops coding)."""


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
            raise ValueError(
                f"cannot merge evaluations of different families "
                f"({self.family.qualified_name} and {ev.family.qualified_name})"
            )
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
                    have = cols[name] = _Column(
                        np.full(self.n, fill, dtype=float if fill == 0 else object),
                        share=g > 0,
                        store=self.pieces,
                    )
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
        if (
            self.pieces is None and self.only is None and 0 < self.spill_rows < self.n
        ):  # two partitions or more
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
        groups = [
            {name: self._joined(self.cols[g][name], g, store) for name in _merged_names(self.names[g])}
            for g in range(3)
        ]
        if self.pieces is not None:
            self.pieces.close()  # every piece is read back: the pieces' file goes
            self.pieces = None
        pieces, self.record_ids = self.record_ids, []
        record_ids = _shared_ids(
            _id_column(
                np.concatenate(pieces) if all(p.dtype.kind == "U" for p in pieces) else _concat_column(pieces)
            )
        )
        del pieces
        trim_heap()
        unscored, self.unscored = UnscoredRecords.joined(self.unscored), []
        ev = Evaluation(
            family=self.family,
            record_ids=record_ids,
            stats=groups[0],
            keys=groups[1],
            details=groups[2],
            unscored=unscored,
            meta=self.family.merge_meta(self.metas),
        )
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


_IDS: weakref.WeakValueDictionary[tuple[Any, ...], np.ndarray] = weakref.WeakValueDictionary()
"""The record-id columns of streamed results alive now, by (rows, first id, last id)."""


def _shared_ids(ids: np.ndarray) -> np.ndarray:
    """``ids``, or an equal record-id column of another streamed result that is still alive
    (the families of one stream each join the same ids in the same order: one array of
    pointers, not one per evaluation). Record-id columns are never changed in place."""
    if not len(ids) or (
        ids.dtype.kind != "U" and (ids.dtype != object or not set(map(type, ids.tolist())) <= {str})
    ):
        return ids  # texts only: equal texts stand for each other, 1 and 1.0 would not
    key = (len(ids), ids[0], ids[-1])
    have = _IDS.get(key)
    if have is not None and np.array_equal(have, ids):
        return have
    _IDS[key] = ids
    return ids
