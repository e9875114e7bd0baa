"""Per-ontology tables behind the hierarchy kernels, computed once and cached.

For every entry ``(v, x)`` of the ancestor-or-self closure (``Ontology.anc_ptr/anc_idx``) we
compute

* ``dist``: the shortest *upward* path length from ``v`` to its ancestor ``x`` (0 for
  ``x == v``, 1 for a direct parent). In a polyhierarchy this can be smaller than
  ``depth_min[v] - depth_min[x]``;
* ``grand``: whether ``x`` is a *grandparent* of ``v`` (a parent of one of ``v``'s parents,
  i.e. reachable by a path of exactly two edges; a grandparent may also be a direct parent).

Both are filled level by level (a node's row is the merge of its parents' rows), vectorised.
The kernels then work on *encoded keys*: ``key = x << pbits | dist << 2 | grand << 1 | side``
(``side`` is 0 for the first and 1 for the second member of a pair), sorted row by row, so
that merging two ancestor rows is one row-wise sort of a small padded 2-D block. Only the keys
are kept (``dist`` and ``grand`` live in their payload bits), once: as the padded matrix when it
is small enough, else as the flat array in closure layout; the closure itself is the
ontology's ``anc_idx``, not a copy.

The tables are cached per :class:`~kg_rageval.ontology.Ontology` object (a weak reference, so
they go away with the ontology).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from kg_rageval.ontology import Ontology
from kg_rageval.ontology.csr import csr_gather, csr_positions

_CACHE: weakref.WeakKeyDictionary[Ontology, Closure] = weakref.WeakKeyDictionary()

#: Above this many cells the padded key matrix is not kept; rows are gathered per chunk.
MAX_MATRIX_CELLS = 60_000_000


@dataclass(frozen=True, eq=False)
class Closure:
    """Cached closure payloads and encoded key rows of one ontology (see module docstring)."""

    n: int
    ptr: np.ndarray  # anc_ptr (int64)
    anc: np.ndarray  # anc_idx (the ontology's own array, int32: no copy)
    lens: np.ndarray  # row lengths
    width: int  # longest row
    pbits: int  # payload bits: dist bits + grand bit + side bit
    dtype: type  # int32 when every key fits, else int64
    pad: int  # key of padding cells (larger than every real key, side bit 0)
    keys: np.ndarray | None  # encoded closure entries (layout of anc), only when there is no matrix
    matrix: np.ndarray | None  # (n, width) padded encoded rows, or None when too large
    rank: np.ndarray  # rank of each id string in sorted order (NLTK's tie-break by name)
    excluded_root: bool  # the root (index 0) is virtual
    placed: np.ndarray | None = None  # bool per node: an obsolete term the compiler placed under the root

    @property
    def dist_mask(self) -> int:
        return (1 << (self.pbits - 2)) - 1

    def matrix_rows(self, nodes: np.ndarray, w: int) -> np.ndarray:
        """The first ``w`` columns of the padded key matrix at ``nodes`` (needs :attr:`matrix`).

        Gathered as one fixed-size record per row (a void view with the matrix's row stride):
        a 1-D fancy index copies each row prefix in one block, about twice as fast as
        ``matrix[nodes, :w]`` and without copying the unused columns as ``np.take`` would."""
        M = self.matrix
        if M is None:
            raise ValueError("matrix_rows needs the padded matrix; this closure keeps flat keys")
        if w >= self.width:
            return np.take(M, nodes, axis=0)
        it = M.itemsize
        rows = np.ndarray(
            (M.shape[0],), dtype=np.dtype((np.void, it * w)), buffer=M, strides=(it * self.width,)
        )
        return rows[nodes].view(M.dtype).reshape(len(nodes), w)

    def rows(self, nodes: np.ndarray, width: int | None = None) -> np.ndarray:
        """Padded encoded ancestor rows of ``nodes`` as an ``(len(nodes), w)`` block; ``w`` is
        the longest of those rows (or ``width``). Padding cells hold :attr:`pad`."""
        lens = self.lens[nodes]
        w = int(lens.max()) if width is None and lens.size else (width or 0)
        w = max(w, 1)
        if self.matrix is not None:
            return self.matrix_rows(nodes, w)
        keys = self.keys
        assert keys is not None  # kept whenever there is no matrix
        starts = self.ptr[nodes]
        cols = np.arange(w, dtype=np.int64)
        idx = starts[:, None] + cols[None, :]
        np.minimum(idx, keys.size - 1, out=idx)
        out = keys[idx]
        out[cols[None, :] >= lens[:, None]] = self.pad
        return out


def closure(ontology: Ontology) -> Closure:
    """The cached :class:`Closure` of ``ontology`` (built on first use)."""
    c = _CACHE.get(ontology)
    if c is None:
        c = _build(ontology)
        _CACHE[ontology] = c
    return c


def _build(o: Ontology) -> Closure:
    n = len(o)
    ptr = np.asarray(o.anc_ptr, dtype=np.int64)
    anc = np.asarray(o.anc_idx)
    dist, grand = _payloads(o, ptr, anc)
    lens = np.diff(ptr)
    width = int(lens.max()) if n else 1
    dbits = max(1, int(dist.max()).bit_length() if dist.size else 1)
    pbits = dbits + 2
    top = (n + 1) << pbits
    dtype = np.int32 if top < 2**31 - 1 else np.int64
    enc = anc.astype(np.int64) << pbits
    enc |= dist.astype(np.int64) << 2
    del dist
    enc |= grand.astype(np.int64) << 1
    del grand
    keys = enc.astype(dtype)
    del enc
    pad = n << pbits
    matrix = None
    flat_keys: np.ndarray | None = keys
    if n * width <= MAX_MATRIX_CELLS:  # the padded rows replace the flat keys
        matrix = np.full((n, width), pad, dtype=dtype)
        row = np.repeat(np.arange(n, dtype=np.int64), lens)
        col = np.arange(anc.size, dtype=np.int64) - np.repeat(ptr[:-1], lens)
        matrix[row, col] = keys
        del row, col
        flat_keys = None
    del keys
    order = sorted(range(n), key=o.ids.__getitem__)
    rank = np.empty(n, dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(n, dtype=np.int64)
    return Closure(
        n=n,
        ptr=ptr,
        anc=anc,
        lens=lens,
        width=width,
        pbits=pbits,
        dtype=dtype,
        pad=pad,
        keys=flat_keys,
        matrix=matrix,
        rank=rank,
        excluded_root=bool(o.virtual_root),
        placed=_placed_mask(o),
    )


def _placed_mask(o: Ontology) -> np.ndarray | None:
    """Nodes of :attr:`Ontology.placed_under_root` (their link to the root is no evidence)."""
    if not o.placed_under_root:
        return None
    mask = np.zeros(len(o), dtype=bool)
    mask[o.indices(o.placed_under_root)] = True
    return mask


def _payloads(o: Ontology, ptr: np.ndarray, anc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shortest upward distance and grandparent flag of every closure entry (level by level:
    ``dist(v, x) = 1 + min over parents p of dist(p, x)``; ``grand(v, x)`` = some parent ``p``
    has ``dist(p, x) == 1``)."""
    n = len(o)
    dist = np.zeros(anc.size, dtype=np.int32)
    grand = np.zeros(anc.size, dtype=bool)
    if n == 0:
        return dist.astype(np.int16), grand
    pptr = np.asarray(o.parent_ptr, dtype=np.int64)
    pidx = np.asarray(o.parent_idx, dtype=np.int64)
    level = np.asarray(o.depth_max, dtype=np.int64)
    order = np.argsort(level, kind="stable")
    bounds = np.searchsorted(level[order], np.arange(int(level.max()) + 2))
    for lv in range(1, int(level.max()) + 1):
        nodes = order[bounds[lv] : bounds[lv + 1]]
        if not nodes.size:
            continue
        nodes = np.sort(nodes)
        npar = pptr[nodes + 1] - pptr[nodes]
        par = csr_gather(pptr, pidx, nodes)
        child_local = np.repeat(np.arange(nodes.size, dtype=np.int64), npar)
        plen = ptr[par + 1] - ptr[par]
        pos = csr_positions(ptr, par)
        x = anc[pos]
        d = dist[pos].astype(np.int64) + 1
        gp = (dist[pos] == 1).astype(np.int64)
        who = np.repeat(child_local, plen)
        # sort by (child, x, dist, not-grand): first of each (child, x) group has the min dist;
        # the grand flag is OR-reduced over the group
        key = (who * n + x) * 2
        big = (key * (int(d.max()) + 2) + d) * 2 + (1 - gp)
        srt = np.argsort(big, kind="stable")
        k_sorted = key[srt]
        first = np.ones(k_sorted.size, dtype=bool)
        first[1:] = k_sorted[1:] != k_sorted[:-1]
        group = np.cumsum(first) - 1
        dmin = d[srt][first]
        gor = np.zeros(int(first.sum()), dtype=bool)
        np.logical_or.at(gor, group, gp[srt].astype(bool))
        # destination: each node's closure row without its last entry (the node itself)
        dest = csr_positions(ptr, nodes, drop_last=True)
        if dest.size != dmin.size:  # pragma: no cover - closure inconsistent with parents
            raise RuntimeError("ancestor closure does not match the parent links")
        dist[dest] = dmin
        grand[dest] = gor
    dmax = int(dist.max()) if dist.size else 0
    return dist.astype(np.int16 if dmax < 2**15 else np.int32), grand
