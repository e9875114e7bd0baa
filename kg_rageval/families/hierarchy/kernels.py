"""Vectorised hierarchy kernels over integer node indices (one call scores a million pairs).

Every kernel merges the two sorted ancestor-or-self rows of each pair: both rows are taken
as padded blocks of encoded keys (:mod:`kg_rageval.families.hierarchy.closure`), put side by side and
sorted row-wise in chunks; a value that appears twice in a sorted row is a *common ancestor*
of the pair, and the payload bits of its two copies give the upward distance from each member
and whether it is a grandparent of each.

Conventions (see ``docs/hierarchy.md``):

* depth: the ontology's ``depth_min``/``depth_max`` count edges from the root (root 0);
  Wu-Palmer uses NLTK's ``depth + 1`` (root depth 1);
* the *virtual root* (several real roots) never counts in the augmented sets of hierarchical
  P/R/F1 and never makes two nodes siblings or cousins; nor does the root make an obsolete term
  it holds only by compilation (:attr:`Ontology.placed_under_root`) a sibling; a *real* root counts only with
  ``include_root=True`` (by default it is left out: every node has it, so it gives free
  credit);
* a polyhierarchy node's augmented set is its full ancestor closure (all parents);
* an index ``-1`` in a single-node input means NIL (no node).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.families.hierarchy.closure import Closure, closure
from kg_rageval.ontology import RELATIONS, Ontology
from kg_rageval.ontology.csr import sorted_unique

#: Codes of :data:`kg_rageval.ontology.RELATIONS` as int8 constants.
EXACT, PARENT, ANCESTOR, CHILD, DESCENDANT, SIBLING, COUSIN, UNRELATED = range(8)
if RELATIONS[COUSIN] != "cousin" or len(RELATIONS) != 8:  # pragma: no cover
    raise ImportError("kg_rageval.ontology.RELATIONS changed: update the hierarchy codes")

_CELLS_PER_CHUNK = 1 << 20


# ---------------------------------------------------------------------------- input checks
def _as_index(ontology: Ontology, values, name: str, *, allow_nil: bool = False) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputError(f"{name} must be a 1-D array of node indices, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise InputError(f"{name} must hold integer node indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    lo = -1 if allow_nil else 0
    if arr.size and (arr.min() < lo or arr.max() >= len(ontology)):
        bad = arr[(arr < lo) | (arr >= len(ontology))][:5].tolist()
        allowed = f"{lo}..{len(ontology) - 1}" + (" (-1 = NIL)" if allow_nil else "")
        raise InputError(f"{name} holds indices outside {allowed}: {bad}")
    return arr


def _pairs(ontology: Ontology, a, b, names=("a_idx", "b_idx"), *, allow_nil=False):
    a = _as_index(ontology, a, names[0], allow_nil=allow_nil)
    b = _as_index(ontology, b, names[1], allow_nil=allow_nil)
    if a.shape != b.shape:
        raise InputError(f"{names[0]} and {names[1]} differ in length: {a.size} vs {b.size}")
    return a, b


# ---------------------------------------------------------------------------- the merge
def _sorted_block(cl: Closure, a: np.ndarray, b: np.ndarray, side: bool):
    """The two ancestor rows of each pair side by side, sorted row-wise: ``S`` (``m`` rows),
    ``tmax`` (the longest pair: later columns are padding) and the mask ``d`` (shape of ``S``)
    of cells equal, up to payload, to their left neighbour within the first ``tmax`` columns.

    Only the first ``w`` columns of each padded row are taken (``w`` = the longest row in the
    chunk), so that little padding is copied and sorted."""
    m = a.size
    la, lb = cl.lens[a], cl.lens[b]
    w = max(1, int(la.max()), int(lb.max())) if m else 1
    if cl.matrix is not None:
        ab = np.empty(2 * m, dtype=np.int64)
        ab[0::2] = a
        ab[1::2] = b
        S = cl.matrix_rows(ab, w).reshape(m, 2 * w)
        if side:  # b's copies get side bit 1 (its padding becomes pad + 1: still filtered)
            S.reshape(m, 2, w)[:, 1, :] += 1
    else:
        A = cl.rows(a, w)
        B = cl.rows(b, w)
        if side:
            B += 1
        S = np.concatenate([A, B], axis=1)
    S.sort(axis=1)
    tmax = max(2, int((la + lb).max())) if m else 2
    d = np.zeros(S.shape, dtype=bool)
    np.less(S[:, 1:tmax] ^ S[:, : tmax - 1], 1 << cl.pbits, out=d[:, 1:tmax])
    return S, tmax, d


class _Dups:
    """Common ancestors of each pair of a chunk, as flat arrays over the duplicate cells of the
    row-wise sorted block: ``lo``/``hi`` (the encoded keys of the two copies, ``lo <= hi``) and,
    computed on demand, ``r`` (pair within the chunk, ascending). ``x = lo >> pbits`` is the
    common ancestor; ``key & mask`` the payload (``dist << 2 | grand << 1 | side``, ``side`` 0 =
    a, 1 = b when built with ``side=True``). Every pair has a cell: the root (or virtual root)
    is common. With ``side=True`` a payload of 0 is ``a``'s own entry (``x == a``) and 1 is
    ``b``'s (``x == b``), which spares the kernels a gather of ``a``/``b`` per cell."""

    __slots__ = ("_r", "_starts", "cl", "hi", "lo", "m")

    def __init__(self, cl: Closure, a: np.ndarray, b: np.ndarray, *, side: bool = False):
        self.cl = cl
        self.m = m = a.size
        S, _, d = _sorted_block(cl, a, b, side)
        flat = S.reshape(-1)
        f = np.flatnonzero(d)  # the right-hand copy of each common ancestor
        lo = flat[f - 1]
        keep = lo < cl.pad  # padding cells pair up at the end of the shorter rows
        if not keep.all():
            f, lo = f[keep], lo[keep]
        self.lo = lo
        self.hi = flat[f]
        self._starts = np.searchsorted(f, np.arange(m, dtype=np.int64) * S.shape[1])
        self._r: np.ndarray | None = None

    @property
    def r(self) -> np.ndarray:
        if self._r is None:
            self._r = np.repeat(
                np.arange(self.m, dtype=np.int64), np.diff(np.append(self._starts, self.lo.size))
            )
        return self._r

    def rows_of(self, pos: np.ndarray) -> np.ndarray:
        """Pair of each cell in ``pos`` (without building :attr:`r`)."""
        return np.searchsorted(self._starts, pos, side="right") - 1

    @property
    def x(self) -> np.ndarray:
        return self.lo >> self.cl.pbits

    @property
    def mask(self) -> int:
        return (1 << self.cl.pbits) - 1

    def any(self, flag: np.ndarray) -> np.ndarray:
        """Per pair: does some common ancestor satisfy ``flag``?"""
        return np.bincount(self.r[flag], minlength=self.m) > 0

    def count(self) -> np.ndarray:
        return np.diff(np.append(self._starts, self.lo.size))

    def starts(self) -> np.ndarray:
        """Index of each pair's first cell."""
        return self._starts

    def side_dists(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Upward distances from a and from b to the common ancestor of cells ``pos``
        (needs ``side=True``)."""
        lo, hi = self.lo[pos] & self.mask, self.hi[pos] & self.mask
        lo_is_a = (lo & 1) == 0
        return (np.where(lo_is_a, lo, hi) >> 2).astype(np.int64), (np.where(lo_is_a, hi, lo) >> 2).astype(
            np.int64
        )


def _ordered_chunks(cl: Closure, a: np.ndarray, b: np.ndarray) -> Iterator[np.ndarray]:
    """Positions of pairs in chunks of similar total row length (so that little padding is
    sorted and scanned); each chunk fits :data:`_CELLS_PER_CHUNK` cells."""
    n = a.size
    if n == 0:
        return
    # group by the longer row (the block width), then by the pair's total (the scanned width);
    # small integer keys: NumPy's stable sort is a radix sort for 16-bit types, and 16-bit
    # temporaries keep the peak memory down
    wide = 2 * cl.width + 1
    small = cl.width * wide + wide < 2**15
    lens = cl.lens.astype(np.int16) if small else cl.lens
    la, lb = lens[a], lens[b]
    key = np.maximum(la, lb)
    key *= wide
    key += la
    key += lb
    del la, lb
    order = np.argsort(key, kind="stable")
    step = max(256, _CELLS_PER_CHUNK // max(1, 2 * cl.width))
    for start in range(0, n, step):
        yield order[start : start + step]


# ---------------------------------------------------------------------------- relations
def relation_codes(ontology: Ontology, gold_idx, pred_idx) -> np.ndarray:
    """Relation of each predicted node to its gold node, as int8 codes into
    :data:`kg_rageval.ontology.RELATIONS` (exact, parent, ancestor, child, descendant,
    sibling, cousin, unrelated; the first matching rule wins, in that order).

    Identical to :meth:`Ontology.relation_index` on every pair: ``parent`` means the
    prediction is a direct parent of the gold node (over-generalisation by one level),
    ``ancestor`` a proper ancestor two or more levels up (in a polyhierarchy a direct parent
    that is also reachable by a longer path is a ``parent``), ``child``/``descendant`` the
    same downwards, ``sibling`` a shared direct parent, ``cousin`` a shared grandparent (a
    parent of a parent); the virtual root never makes two nodes siblings or cousins.
    """
    gold, pred = _pairs(ontology, gold_idx, pred_idx, ("gold_idx", "pred_idx"))
    cl = closure(ontology)
    out = np.empty(gold.size, dtype=np.int8)
    for pos in _ordered_chunks(cl, gold, pred):
        a, b = gold[pos], pred[pos]
        out[pos] = _relation_codes(cl, a, b, _Dups(cl, a, b, side=True))
    return out


def _relation_codes(cl: Closure, a: np.ndarray, b: np.ndarray, dups: _Dups) -> np.ndarray:
    """Codes of one chunk; ``dups`` built with ``side=True``."""
    if a.size == 0:
        return np.zeros(0, dtype=np.int8)
    mask = dups.mask
    lo, hi = dups.lo & mask, dups.hi & mask
    # per common ancestor: a shared parent (both distances 1; lo <= hi) or a shared grandparent
    sib = (lo >= 4) & (hi < 8)
    cous = (lo & hi & 2) != 0
    cell = np.full(lo.size, UNRELATED, dtype=np.int8)
    cell[cous] = COUSIN
    cell[sib] = SIBLING
    if cl.excluded_root:
        cell[dups.lo < (1 << cl.pbits)] = UNRELATED  # x == 0, the virtual root
    elif cl.placed is not None:  # the root is no shared parent of an obsolete term placed under it
        at_root = np.flatnonzero(dups.lo < (1 << cl.pbits))
        rows = dups.rows_of(at_root)
        cell[at_root[cl.placed[a[rows]] | cl.placed[b[rows]]]] = UNRELATED
    code = np.minimum.reduceat(cell, dups.starts())
    # payload 0: a's own entry (a is an ancestor-or-self of b; b's copy, hi, has the distance);
    # payload 1: b's own entry with a's copy (hi) above it. a == b is set last.
    pos = np.flatnonzero(lo == 0)
    code[dups.rows_of(pos)] = np.where((hi[pos] >> 2) == 1, CHILD, DESCENDANT)
    pos = np.flatnonzero(lo == 1)
    code[dups.rows_of(pos)] = np.where((hi[pos] >> 2) == 1, PARENT, ANCESTOR)
    code[a == b] = EXACT
    return code


def relation_names(codes: np.ndarray) -> np.ndarray:
    """Relation names (object array) of int8 codes."""
    return np.asarray(RELATIONS, dtype=object)[np.asarray(codes, dtype=np.int64)]


# ---------------------------------------------------------------------------- distances
def path_length(ontology: Ontology, a_idx, b_idx) -> np.ndarray:
    """Length of the shortest path between ``a`` and ``b`` that goes up from each to a common
    ancestor: ``min over common ancestors x of dist(a, x) + dist(b, x)`` (NLTK's
    ``shortest_path_distance``; 0 for ``a == b``). Every pair is connected through the root."""
    a, b = _pairs(ontology, a_idx, b_idx)
    cl = closure(ontology)
    out = np.empty(a.size, dtype=np.int64)
    for pos in _ordered_chunks(cl, a, b):
        out[pos] = _min_path(cl, a[pos], b[pos])
    return out


def _min_path(cl: Closure, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _min_path_of(_Dups(cl, a, b))


def _min_path_of(dups: _Dups) -> np.ndarray:
    mask = dups.mask
    tot = ((dups.lo & mask) >> 2) + ((dups.hi & mask) >> 2)
    return np.minimum.reduceat(tot, dups.starts()).astype(np.int64)


# ---------------------------------------------------------------------------- hP / hR
def common_ancestor_counts(ontology: Ontology, a_idx, b_idx) -> np.ndarray:
    """``|A(a) ∩ A(b)|`` per pair, ancestor-or-self sets, root(s) included."""
    a, b = _pairs(ontology, a_idx, b_idx)
    cl = closure(ontology)
    out = np.empty(a.size, dtype=np.int64)
    for pos in _ordered_chunks(cl, a, b):
        aa, bb = a[pos], b[pos]
        _, tmax, d = _sorted_block(cl, aa, bb, False)
        pads = tmax - cl.lens[aa] - cl.lens[bb]  # padding cells among the first tmax, all equal
        out[pos] = np.count_nonzero(d[:, :tmax], axis=1) - np.maximum(pads - 1, 0)
    return out


def _root_excluded(ontology: Ontology, include_root: bool) -> int:
    """1 when index 0 is left out of augmented sets (virtual root, or real root by default)."""
    return 1 if (ontology.virtual_root or not include_root) else 0


def hierarchical_counts(
    ontology: Ontology,
    gold_sets,
    pred_sets,
    *,
    include_root: bool = False,
    lca_bounded: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-item sufficient statistics of hierarchical precision/recall (Kosmopoulos et al. 2015).

    Each item's gold set ``T`` and predicted set ``P`` are *augmented* with all their ancestors
    (the union of the ancestor-or-self closures of the item's nodes; several parents are all
    followed). Returns ``(inter, n_pred_aug, n_gold_aug)`` = ``(|P̂ ∩ T̂|, |P̂|, |T̂|)`` per item, so
    that micro ``hP = Σ inter / Σ n_pred_aug``, ``hR = Σ inter / Σ n_gold_aug``.

    Parameters
    ----------
    gold_sets, pred_sets
        Either 1-D integer arrays (one node per item; ``-1`` = NIL, an empty set) or sequences
        of per-item sequences of node indices (several nodes per item; empty = NIL).
    include_root
        Count the root (index 0) in the augmented sets. Default ``False``: the root is in every
        augmented set, so it would give every prediction, even an unrelated one, free credit.
        The virtual root of a multi-root ontology never counts.
    lca_bounded
        Kosmopoulos' LCA-bounded variant (hP_LCA), for one gold and one predicted node per item:
        each side is augmented only up to the *lowest common ancestors* ``L`` (the minimal
        elements of the common-ancestor set ``C``): ``T̂ = (A(g) \\ C) ∪ L``, ``P̂ = (A(p) \\ C)
        ∪ L``, so ``inter = |L|`` (1 in a tree). The root counts under the same rule as above.

    An empty set gives 0 for its side; the ratios are formed by the caller, who must treat an
    empty denominator as missing evidence, never as 0 or 1.
    """
    excl = _root_excluded(ontology, include_root)
    gold_sets, pred_sets = _flat_ints(gold_sets), _flat_ints(pred_sets)
    single = _single(gold_sets) and _single(pred_sets)
    if lca_bounded:
        if not single:
            raise InputError(
                "lca_bounded=True is defined for one gold and one predicted node per item; "
                "pass 1-D index arrays"
            )
        g, p = _pairs(ontology, gold_sets, pred_sets, ("gold_sets", "pred_sets"), allow_nil=True)
        return _lca_counts(ontology, g, p, excl)
    if single:
        g, p = _pairs(ontology, gold_sets, pred_sets, ("gold_sets", "pred_sets"), allow_nil=True)
        return _single_counts(ontology, g, p, excl)
    return _set_counts(ontology, gold_sets, pred_sets, excl)


def _flat_ints(x):
    """A list/tuple of plain integers is one node per item: make it a 1-D array."""
    if isinstance(x, (list, tuple)) and x and all(isinstance(v, (int, np.integer)) for v in x):
        return np.asarray(x, dtype=np.int64)
    return x


def _single(x) -> bool:
    if isinstance(x, np.ndarray):
        return x.ndim == 1 and x.dtype.kind in "iu"
    return False


def _single_counts(o: Ontology, g: np.ndarray, p: np.ndarray, excl: int):
    cl = closure(o)
    ok = (g >= 0) & (p >= 0)
    inter = np.zeros(g.size, dtype=np.int64)
    if ok.any():
        inter[ok] = common_ancestor_counts(o, g[ok], p[ok]) - excl
    n_gold = np.where(g >= 0, cl.lens[np.maximum(g, 0)] - excl, 0)
    n_pred = np.where(p >= 0, cl.lens[np.maximum(p, 0)] - excl, 0)
    return inter, n_pred.astype(np.int64), n_gold.astype(np.int64)


def _lca_counts(o: Ontology, g: np.ndarray, p: np.ndarray, excl: int):
    cl = closure(o)
    n = cl.n
    ok = np.flatnonzero((g >= 0) & (p >= 0))
    inter = np.zeros(g.size, dtype=np.int64)
    n_gold = np.where(g >= 0, cl.lens[np.maximum(g, 0)] - excl, 0).astype(np.int64)
    n_pred = np.where(p >= 0, cl.lens[np.maximum(p, 0)] - excl, 0).astype(np.int64)
    pptr = np.asarray(o.parent_ptr, dtype=np.int64)
    pidx = np.asarray(o.parent_idx, dtype=np.int64)
    for pos in _ordered_chunks(cl, g[ok], p[ok]):
        rows = ok[pos]
        dups = _Dups(cl, g[rows], p[rows])
        r, xs = dups.r, dups.x
        n_common = np.bincount(r, minlength=rows.size)
        # non-minimal common ancestors = parents of common ancestors (all of them are common)
        npar = pptr[xs + 1] - pptr[xs]
        par_pos = np.repeat(pptr[xs] - (np.cumsum(npar) - npar), npar) + np.arange(int(npar.sum()))
        par_keys = sorted_unique(np.repeat(r.astype(np.int64), npar) * n + pidx[par_pos])
        non_min = np.bincount(par_keys // n, minlength=rows.size)
        n_lca = n_common - non_min
        # augmented: (A \ C) ∪ L, with the root (index 0) removed when excluded and present
        root_in = (n_common == 1) if excl else np.zeros(rows.size, dtype=bool)  # C == {0}
        drop = root_in.astype(np.int64)
        inter[rows] = n_lca - drop
        n_gold[rows] = cl.lens[g[rows]] - n_common + n_lca - drop
        n_pred[rows] = cl.lens[p[rows]] - n_common + n_lca - drop
    return inter, n_pred, n_gold


def _set_counts(o: Ontology, gold_sets, pred_sets, excl: int):
    cl = closure(o)
    gi, gn, mg = _flatten(o, gold_sets, "gold_sets")
    pi, pn, mp = _flatten(o, pred_sets, "pred_sets")
    if mg != mp:
        raise InputError(f"gold_sets and pred_sets differ in length: {mg} vs {mp}")
    gk = _augmented_keys(cl, gi, gn, excl)
    pk = _augmented_keys(cl, pi, pn, excl)
    both = np.intersect1d(gk, pk, assume_unique=True)
    n = cl.n
    return (
        np.bincount(both // n, minlength=mg).astype(np.int64),
        np.bincount(pk // n, minlength=mg).astype(np.int64),
        np.bincount(gk // n, minlength=mg).astype(np.int64),
    )


def _flatten(o: Ontology, sets, name: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(item of each node, node, number of items) for a 1-D index array (-1 = NIL) or a
    sequence of per-item sequences (empty = NIL)."""
    if isinstance(sets, np.ndarray) and sets.ndim == 1 and sets.dtype.kind in "iu":
        arr = _as_index(o, sets, name, allow_nil=True)
        keep = arr >= 0
        return np.arange(arr.size, dtype=np.int64)[keep], arr[keep], arr.size
    if not isinstance(sets, Sequence):
        sets = list(sets)
    lens = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
    flat = np.fromiter((int(v) for s in sets for v in s), dtype=np.int64, count=int(lens.sum()))
    nodes = _as_index(o, flat, name)
    item = np.repeat(np.arange(len(sets), dtype=np.int64), lens)
    return item, nodes, len(sets)


def _augmented_keys(cl: Closure, item: np.ndarray, nodes: np.ndarray, excl: int) -> np.ndarray:
    """Sorted unique ``item * n + ancestor`` keys of each item's augmented set."""
    starts = cl.ptr[nodes]
    lens = cl.lens[nodes]
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    csum = np.cumsum(lens)
    pos = np.repeat(starts - (csum - lens), lens) + np.arange(total, dtype=np.int64)
    anc = cl.anc[pos]
    keys = np.repeat(item, lens) * cl.n + anc
    if excl:
        keys = keys[anc != 0]
    # sorted_unique, not np.unique: NumPy 2's hashing unique took 18.5 s on the 13.6M
    # ``item * n + ancestor`` keys of 300,000 sets (0.2 s sorted; the same array), and its
    # first call imports numpy.ma (issue #33)
    return sorted_unique(keys)


# ---------------------------------------------------------------------------- Wu-Palmer
def wu_palmer(
    ontology: Ontology,
    a_idx,
    b_idx,
    *,
    lcs: str = "nltk",
    identical: str = "nltk",
) -> np.ndarray:
    """Wu-Palmer similarity, reproducing NLTK's ``a.wup_similarity(b)`` by default.

    ``WuP = 2·depth(s) / (len(a, s) + len(b, s) + 2·depth(s))`` where

    * ``s`` (the least common subsumer) is chosen among the common ancestors-or-self of ``a``
      and ``b``: with ``lcs="nltk"`` those of greatest ``depth_min`` (NLTK's
      ``use_min_depth=True``), ties broken by the smallest id string (NLTK sorts synsets by
      name) — except that ``a`` itself wins when it is one of the tied candidates (NLTK checks
      only its ``self``, so the kernel is not symmetric in rare DAG cases); with
      ``lcs="max_depth"`` those of greatest ``depth_max`` (NLTK's default
      ``lowest_common_hypernyms``), same ties;
    * ``depth(s) = depth_max(s) + 1`` (its longest path to the root, root depth 1);
    * ``len(a, s)`` is NLTK's ``shortest_path_distance``: the fewest edges from ``a`` up to some
      common ancestor ``x`` of ``a`` and ``s`` plus from ``s`` up to ``x`` (usually, but not in
      every DAG, the upward distance from ``a`` to ``s``).

    NLTK oddity: with ``lcs="nltk"`` a node compared with *itself* can score below 1, when one
    of its ancestors (reached through another parent) has a greater ``depth_min`` than the node.
    ``identical="nltk"`` keeps that (exact reproduction); ``identical="one"`` scores identical
    nodes 1.0. With ``lcs="max_depth"`` identical nodes always score 1.

    The virtual root of a multi-root ontology counts as a real level here (depth 1), which
    differs from NLTK's ``simulate_root`` for verbs. Returns float64 in (0, 1].
    """
    a, b = _pairs(ontology, a_idx, b_idx)
    cl = closure(ontology)
    tables = _wup_tables(ontology, cl, lcs, identical)
    out = np.empty(a.size, dtype=np.float64)
    for pos in _ordered_chunks(cl, a, b):
        out[pos] = _wup_chunk(cl, a[pos], b[pos], *tables)
    if identical == "one":
        out[a == b] = 1.0
    return out


def _wup_tables(
    ontology: Ontology, cl: Closure, lcs: str, identical: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(rank_depth, score_of, depth_min, depth_max) for :func:`_wup_chunk`."""
    if lcs not in ("nltk", "max_depth"):
        raise InputError(f"lcs must be 'nltk' or 'max_depth', not {lcs!r}")
    if identical not in ("nltk", "one"):
        raise InputError(f"identical must be 'nltk' or 'one', not {identical!r}")
    n = cl.n
    dmin = np.asarray(ontology.depth_min, dtype=np.int64)
    dmax = np.asarray(ontology.depth_max, dtype=np.int64)
    rank_depth = dmin if lcs == "nltk" else dmax
    # score of a candidate: deeper first, then the smallest id string; shifted above 32 bits
    # so that a cell's position can ride in the low bits (one max-reduction finds the cell)
    score_of = (rank_depth * n + (n - 1 - cl.rank)) << 32
    return rank_depth, score_of, dmin, dmax


def pair_measures(
    ontology: Ontology, a_idx, b_idx, *, lcs: str = "nltk", identical: str = "nltk"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All pair kernels from one merge per chunk: ``(common, codes, wup, path)`` equal to
    :func:`common_ancestor_counts`, :func:`relation_codes`, :func:`wu_palmer` (same ``lcs``
    and ``identical``) and :func:`path_length` of the same pairs (``a`` = gold, ``b`` = pred
    for the relation codes). The family uses it so that every pair is merged once, not four
    times."""
    a, b = _pairs(ontology, a_idx, b_idx)
    cl = closure(ontology)
    tables = _wup_tables(ontology, cl, lcs, identical)
    common = np.empty(a.size, dtype=np.int64)
    codes = np.empty(a.size, dtype=np.int8)
    wup = np.empty(a.size, dtype=np.float64)
    path = np.empty(a.size, dtype=np.int64)
    for pos in _ordered_chunks(cl, a, b):
        aa, bb = a[pos], b[pos]
        dups = _Dups(cl, aa, bb, side=True)
        common[pos] = dups.count()
        codes[pos] = _relation_codes(cl, aa, bb, dups)
        wup[pos] = _wup_chunk(cl, aa, bb, *tables, dups=dups)
        path[pos] = _min_path_of(dups)
    if identical == "one":
        wup[a == b] = 1.0
    return common, codes, wup, path


def _wup_chunk(cl, a, b, rank_depth, score_of, dmin, dmax, dups=None) -> np.ndarray:
    if a.size == 0:
        return np.zeros(0)
    if dups is None:
        dups = _Dups(cl, a, b, side=True)
    x = dups.x
    # best candidate per pair: max of score << 32 | cell position (scores are unique per node)
    key = score_of[x]
    key |= np.arange(x.size, dtype=np.int64)
    jpos = np.maximum.reduceat(key, dups.starts()) & 0xFFFFFFFF
    s = x[jpos].astype(np.int64)
    # NLTK: ``self`` (a) is the subsumer when it is one of the deepest candidates; a's own
    # entry is the cell whose lower copy has payload 0
    apos = np.flatnonzero((dups.lo & dups.mask) == 0)
    arow = dups.rows_of(apos)
    wins = rank_depth[a[arow]] == rank_depth[s[arow]]
    jpos[arow[wins]] = apos[wins]
    s[arow[wins]] = a[arow[wins]]
    len_a, len_b = dups.side_dists(jpos)
    # NLTK's path length is min over x in A(s) of dist(a, x) + dist(s, x), usually dist(a, s).
    # For x a proper ancestor of s: dist(a, x) + dist(s, x) >= depth_min(a) - depth_min(x) + 1
    # >= depth_min(a) - depth_max(s) + 2, so dist(a, s) is exact unless it exceeds that bound;
    # the few pairs over it get the exact merge.
    bound = dmax[s] - 2
    need = np.flatnonzero(len_a > dmin[a] - bound)
    if need.size:
        len_a[need] = _min_path(cl, a[need], s[need])
    need = np.flatnonzero(len_b > dmin[b] - bound)
    if need.size:
        len_b[need] = _min_path(cl, b[need], s[need])
    depth = dmax[s] + 1
    return 2.0 * depth / (len_a + len_b + 2.0 * depth)
