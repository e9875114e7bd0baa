"""Roll-ups along the ontology: per-row sums pooled over each node's subtree.

:func:`rollup_sums` adds every row's columns to each node of its node's ancestor-or-self set
in one pass (rows + ancestors of the nodes with rows, never nodes × rows); :func:`rollup_mask`
narrows the reported nodes by depth or by id. Used by
:meth:`~kg_rageval.results.evaluation.Evaluation.rollup` and the audit's per-node tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Sized
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.ontology import Ontology


_ROLLUP_CHUNK = 4_000_000
"""Ancestor entries gathered per roll-up chunk; bounds the roll-up's working memory."""


def rollup_mask(
    ontology: Ontology, keep: np.ndarray, max_depth: int | None = None, nodes: Iterable[str] | None = None
) -> np.ndarray:
    """``keep`` narrowed to the nodes a bounded roll-up reports: depth (``depth_min``, root =
    0) at most ``max_depth``, and only ``nodes`` when given (an unknown id raises)."""
    if max_depth is not None:
        keep = keep & (ontology.depth_min <= max_depth)
    if nodes is not None:
        wanted = np.zeros(len(ontology), dtype=bool)
        wanted[[ontology.index(n) for n in nodes]] = True
        keep = keep & wanted
    return keep


def rollup_sums(
    ontology: Ontology, node: np.ndarray, columns: Iterable[np.ndarray], keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
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
    own = np.stack(
        [np.bincount(inv, minlength=len(present)).astype(float)]
        + [np.bincount(inv, weights=c, minlength=len(present)) for c in columns],
        axis=1,
    )
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
            pooled[:, j] = np.bincount(
                tgt, weights=np.concatenate((pooled[:, j], w)) if lo else w, minlength=n_keep
            )
        lo = hi
    kept = np.flatnonzero(keep)
    has = pooled[:, 0] > 0
    return kept[has], pooled[has]
