"""An evaluation's stats summed per record, one stat column at a time: the bootstrap's resampling unit.

:class:`RecordStats` gives the per-record sums of
:meth:`~kg_rageval.results.evaluation.Evaluation.per_record_stats` column by column (and keeps them
for the audit's stages); :class:`AlignedRecords` the records of such a view that a paired
comparison aligns; :func:`sequential_sum` a column's sum in the order a stacked matrix adds it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from kg_rageval.results.colstore import ColumnStore
from kg_rageval.results.columns import Columns, _raw_column, _resident

_SUM_BLOCK = 1 << 16
"""Values per block of :func:`sequential_sum`."""


def sequential_sum(col: np.ndarray) -> float:
    """``col``'s sum added in order, first to last: the bits of that column in
    ``np.stack(cols, axis=1).sum(axis=0)`` for two or more columns (numpy adds the rows of a
    C-ordered matrix one after the other; a single column, ``col.sum()``, is summed pairwise),
    in blocks, without a copy of the column."""
    acc = np.zeros(1)
    for lo in range(0, len(col), _SUM_BLOCK):
        acc = np.cumsum(np.concatenate((acc, col[lo : lo + _SUM_BLOCK])))[-1:]
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
                self._probes = np.vstack(
                    [np.asarray(total, dtype=float).reshape(1, k), self.rows_at(_sample_index(self.n))]
                )
        return self._probes


class RecordStats(_RecordColumns):
    """The stats of an evaluation (or of the rows ``rows`` of it: a gate's scope) summed per
    record, as :meth:`~.evaluation.Evaluation.per_record_stats` gives them, but one stat column at a time:
    :meth:`column` sums a stat when it is asked for (and keeps it with ``keep``: the view
    :meth:`~.evaluation.Evaluation.record_stats` caches for the audit's stages), so a stage that reads the
    two stats of a ratio holds two per-record columns, not every stat of the family stacked.

    Records are in the order of their ids as text (``per_record_stats``). When the rows
    already hold one record each in that order (every streamed family on ordered ids), no
    row-to-record index is kept and a column is the stat itself (as float64, ``+ 0.0``: the
    bits ``np.bincount`` gives); otherwise ``inverse`` maps each row to its record and
    ``first`` each record to its first row."""

    def __init__(self, ev: Any, rows: np.ndarray | None = None, *, keep: bool = False):
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
        return np.stack(
            [np.bincount(pos, weights=self._stat(k, sel), minlength=len(idx)) for k in self.names], axis=1
        )

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
