"""Vectorised hierarchy comparisons of (gold, predicted) node pairs for linking: the fallback
used when :mod:`kg_rageval.hierarchy` (the project's hierarchy kernels, preferred) is absent.
``relation_codes`` and ``hier_counts`` equal that module's ``relation_codes`` and
``hierarchical_counts``; ``wu_palmer`` is the simpler depth form below, not NLTK's path form.

Small, self-contained kernels over the compiled :class:`~kg_rageval.ontology.Ontology` arrays,
used by :mod:`kg_rageval.linking.evaluate` for wrong links and over-links. They follow the
conventions of :meth:`Ontology.relation_index` (checked against it in the tests):

* ``relation_codes(onto, g, p)`` → int codes into :data:`~kg_rageval.ontology.RELATIONS`
  (exact, parent, ancestor, child, descendant, sibling, cousin, unrelated; first rule wins;
  the virtual root never makes two nodes siblings or cousins).
* ``hier_counts(onto, g, p)`` → ``(|T ∩ P̂|, |P̂|, |T|)`` with ``T``/``P̂`` the ancestor-or-self
  sets of the gold/predicted node (Kosmopoulos et al. 2015); the root (index 0) is left out
  (it is in every set and would give free credit) unless ``include_root=True``; the virtual
  root never counts.
* ``wu_palmer(onto, g, p)`` → ``2·d(lca) / (d(g) + d(p))`` with ``d = depth_max + 1`` (NLTK's
  root-depth-1 convention; the LCA is the deepest common ancestor-or-self by ``depth_max``).
  Two nodes whose only common ancestor is the virtual root score 0.
"""

from __future__ import annotations

import numpy as np

from ..ontology.builder import _gather

EXACT, PARENT, ANCESTOR, CHILD, DESCENDANT, SIBLING, COUSIN, UNRELATED = range(8)


def _rows(ptr: np.ndarray, idx: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pair index per entry, value per entry) for the CSR rows of ``nodes``."""
    lens = (ptr[nodes + 1] - ptr[nodes]).astype(np.int64)
    owner = np.repeat(np.arange(nodes.size, dtype=np.int64), lens)
    return owner, _gather(ptr, idx, nodes).astype(np.int64)


def _member(owner_a, val_a, owner_b, val_b, n_nodes: int, n_pairs: int) -> np.ndarray:
    """Per pair: does the multiset {val_a of pair} share an element with {val_b of pair}?"""
    out = np.zeros(n_pairs, dtype=bool)
    if owner_a.size == 0 or owner_b.size == 0:
        return out
    ka = np.unique(owner_a * n_nodes + val_a)
    kb = np.unique(owner_b * n_nodes + val_b)
    both = np.intersect1d(ka, kb, assume_unique=True)
    out[(both // n_nodes)] = True
    return out


def _contains(owner, val, pairs_val: np.ndarray, n_nodes: int, n_pairs: int) -> np.ndarray:
    """Per pair ``i``: is ``pairs_val[i]`` among the entries owned by ``i``?"""
    if owner.size == 0:
        return np.zeros(n_pairs, dtype=bool)
    keys = np.sort(owner * n_nodes + val)
    want = np.arange(n_pairs, dtype=np.int64) * n_nodes + pairs_val
    pos = np.searchsorted(keys, want)
    pos = np.minimum(pos, keys.size - 1)
    return keys[pos] == want


def relation_codes(onto, gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Relation code of each predicted node to its gold node (see the module docstring)."""
    g = np.asarray(gold, dtype=np.int64)
    p = np.asarray(pred, dtype=np.int64)
    m, n = g.size, len(onto)
    out = np.full(m, UNRELATED, dtype=np.int8)
    if m == 0:
        return out
    og, gp = _rows(onto.parent_ptr, onto.parent_idx, g)
    op, pp = _rows(onto.parent_ptr, onto.parent_idx, p)
    oga, ga = _rows(onto.anc_ptr, onto.anc_idx, g)
    opa, pa = _rows(onto.anc_ptr, onto.anc_idx, p)
    exact = g == p
    parent = _contains(og, gp, p, n, m)
    ancestor = _contains(oga, ga, p, n, m)
    child = _contains(op, pp, g, n, m)
    descendant = _contains(opa, pa, g, n, m)
    if onto.virtual_root:
        keep_g, keep_p = gp != 0, pp != 0
    else:
        keep_g = np.ones(gp.size, dtype=bool)
        keep_p = np.ones(pp.size, dtype=bool)
    sibling = _member(og[keep_g], gp[keep_g], op[keep_p], pp[keep_p], n, m)
    # grandparents: parents of parents
    ogg_inner, ggp = _rows(onto.parent_ptr, onto.parent_idx, gp)
    opp_inner, pgp = _rows(onto.parent_ptr, onto.parent_idx, pp)
    ogg, opp = og[ogg_inner], op[opp_inner]
    if onto.virtual_root:
        kg, kp = ggp != 0, pgp != 0
        ogg, ggp, opp, pgp = ogg[kg], ggp[kg], opp[kp], pgp[kp]
    cousin = _member(ogg, ggp, opp, pgp, n, m)
    # first matching rule wins: assign in reverse order
    out[cousin] = COUSIN
    out[sibling] = SIBLING
    out[descendant] = DESCENDANT
    out[child] = CHILD
    out[ancestor] = ANCESTOR
    out[parent] = PARENT
    out[exact] = EXACT
    return out


def _common(onto, g: np.ndarray, p: np.ndarray):
    """Per pair: sorted keys of ancestor-or-self entries shared by gold and prediction."""
    n, m = len(onto), g.size
    oga, ga = _rows(onto.anc_ptr, onto.anc_idx, g)
    opa, pa = _rows(onto.anc_ptr, onto.anc_idx, p)
    keys = np.concatenate([oga * n + ga, opa * n + pa])
    keys.sort(kind="stable")
    dup = keys[1:] == keys[:-1]
    shared = keys[1:][dup]
    return shared // n, shared % n, (oga, ga), (opa, pa)


def hier_counts(
    onto, gold: np.ndarray, pred: np.ndarray, *, include_root: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(|T ∩ P̂|, |P̂|, |T|)`` per pair (root excluded unless ``include_root``; the virtual
    root always)."""
    g = np.asarray(gold, dtype=np.int64)
    p = np.asarray(pred, dtype=np.int64)
    m = g.size
    if m == 0:
        z = np.zeros(0)
        return z, z, z
    owner, node, _, _ = _common(onto, g, p)
    vr = 1 if (onto.virtual_root or not include_root) else 0
    if vr:
        keep = node != 0
        owner = owner[keep]
    inter = np.bincount(owner, minlength=m).astype(float)
    size_p = (onto.anc_ptr[p + 1] - onto.anc_ptr[p] - vr).astype(float)
    size_g = (onto.anc_ptr[g + 1] - onto.anc_ptr[g] - vr).astype(float)
    return inter, size_p, size_g


def wu_palmer(onto, gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Wu-Palmer similarity per pair (see the module docstring)."""
    g = np.asarray(gold, dtype=np.int64)
    p = np.asarray(pred, dtype=np.int64)
    m = g.size
    if m == 0:
        return np.zeros(0)
    owner, node, _, _ = _common(onto, g, p)
    depth = onto.depth_max.astype(np.int64)
    lca_depth = np.full(m, -1, dtype=np.int64)
    np.maximum.at(lca_depth, owner, depth[node])
    top = 1 if onto.virtual_root else 0  # depth of the real roots
    d_l = lca_depth + 1 - top
    d_g = depth[g] + 1 - top
    d_p = depth[p] + 1 - top
    den = (d_g + d_p).astype(float)
    out = np.zeros(m)
    ok = (d_l > 0) & (den > 0)
    np.divide(2.0 * d_l, den, out=out, where=ok)
    return out
