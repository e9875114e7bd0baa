"""CSR (compressed sparse row) helpers shared by the ontology builder, the hierarchy closure
and the families: the one implementation of gathering several rows without a Python loop."""

from __future__ import annotations

import numpy as np


def csr_positions(ptr: np.ndarray, rows: np.ndarray, *, drop_last: bool = False) -> np.ndarray:
    """Positions (into the values array) of the concatenated CSR rows ``rows``, in row order;
    with ``drop_last`` each row's last entry is left out."""
    rows = np.asarray(rows, dtype=np.int64)
    starts = ptr[rows]
    lens = ptr[rows + 1] - starts - (1 if drop_last else 0)
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    csum = np.cumsum(lens)
    offsets = np.repeat(starts - (csum - lens), lens).astype(np.int64, copy=False)
    offsets += np.arange(total, dtype=np.int64)
    return offsets


def csr_gather(ptr: np.ndarray, values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The values of CSR rows ``rows`` concatenated (``values[:0]`` when all are empty)."""
    pos = csr_positions(ptr, rows)
    return values[pos] if pos.size else values[:0]


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique`` by sorting (NumPy 2's hash-based unique is slower on large int arrays, and
    its first call imports ``numpy.ma``, a few ms of every tiny command that calls it).

    The sort is NumPy's stable one (timsort for int64), which merges already-sorted runs in
    linear time: the keys here are concatenations of sorted ancestor rows, or edge lists in
    table order, so this is ~15x faster than the default introsort on the 350k-concept DAG."""
    if a.size == 0:
        return a
    a = np.sort(a, kind="stable")
    keep = np.empty(a.size, dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]
