"""A copy of the ontology with some leaf concepts held out (the NIL probes' ontology).

:func:`without_leaves` removes leaves from the compiled arrays directly (vectorised, no
rebuild): a leaf is nobody's parent or ancestor, so dropping it keeps the topological
numbering, the depths and every other node's ancestor row; only the indices are renumbered.
The copy's :attr:`~kg_rageval.ontology.Ontology.content_hash` equals that of the same ontology
built without those nodes (tested).

:func:`nearest_kept` names, for each held-out leaf, the nearest concept still in the copy: its
deepest direct parent (ties: the smallest id), never the virtual root.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.ontology.graph import EMPTY_GRAPH


def _remap_csr(
    ptr: np.ndarray, idx: np.ndarray, keep_rows: np.ndarray, new_of: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``keep_rows`` of CSR (ptr, idx), values renumbered through ``new_of`` (values
    mapped to -1 are dropped)."""
    counts = np.diff(ptr)
    row_of = np.repeat(np.arange(len(counts)), counts)
    vals = new_of[idx]
    keep = keep_rows[row_of] & (vals >= 0)
    new_counts = np.bincount(row_of[keep], minlength=len(counts))[keep_rows]
    new_ptr = np.zeros(len(new_counts) + 1, dtype=ptr.dtype)
    np.cumsum(new_counts, out=new_ptr[1:])
    return new_ptr, vals[keep].astype(idx.dtype)


def without_leaves(ontology: Any, leaf_ids: Sequence[str]) -> Any:
    """The ontology without the given leaf concepts (an error names a non-leaf or unknown id).

    The copy is the taxonomy only: instances and relation triples (``Ontology.graph``) are not
    carried over (their entity numbering would shift; NIL probes test linking, not relations)."""
    n = len(ontology)
    drop = np.zeros(n, dtype=bool)
    ptr, _ = ontology.child_ptr_idx
    for cid in leaf_ids:
        i = ontology.id_index.get(cid)
        if i is None:
            raise InputError(f"held-out concept {cid!r} is not in the ontology")
        if ptr[i + 1] != ptr[i] or i == 0:
            raise InputError(f"held-out concept {cid!r} has children (only leaves can be held out)")
        drop[i] = True
    keep = ~drop
    new_of = np.full(n, -1, dtype=np.int64)
    new_of[keep] = np.arange(int(keep.sum()))
    parent_ptr, parent_idx = _remap_csr(ontology.parent_ptr, ontology.parent_idx, keep, new_of)
    anc_ptr, anc_idx = _remap_csr(ontology.anc_ptr, ontology.anc_idx, keep, new_of)
    kept = np.flatnonzero(keep).tolist()

    def pick(t: tuple) -> tuple:
        return tuple(t[i] for i in kept)

    rep = ontology.replaced_by[keep]
    rep = np.where(rep >= 0, new_of[np.maximum(rep, 0)], -1).astype(ontology.replaced_by.dtype)
    alias_keep = [k for k, t in enumerate(ontology.alias_targets.tolist()) if keep[t]]
    return dataclasses.replace(
        ontology,
        ids=pick(ontology.ids),
        parent_ptr=parent_ptr,
        parent_idx=parent_idx,
        anc_ptr=anc_ptr,
        anc_idx=anc_idx,
        depth_min=ontology.depth_min[keep],
        depth_max=ontology.depth_max[keep],
        labels=pick(ontology.labels),
        synonyms=pick(ontology.synonyms),
        definitions=pick(ontology.definitions),
        node_types=pick(ontology.node_types),
        status=ontology.status[keep],
        replaced_by=rep,
        source=f"{ontology.source} (held out: {len(leaf_ids)} concepts)",
        stored_hash=None,
        alias_ids=tuple(ontology.alias_ids[k] for k in alias_keep),
        alias_targets=new_of[ontology.alias_targets[alias_keep]].astype(ontology.alias_targets.dtype)
        if alias_keep
        else np.zeros(0, dtype=ontology.alias_targets.dtype),
        diagnostics=dict(ontology.diagnostics),
        warnings=tuple(ontology.warnings),
        graph=EMPTY_GRAPH,
        placed_under_root=tuple(i for i in ontology.placed_under_root if i not in set(leaf_ids)),
    )


def nearest_kept(ontology: Any, i: int) -> int | None:
    """The deepest direct parent of node ``i`` (ties: smallest id); ``None`` for a top-level
    concept (its only parent is the root or the virtual root)."""
    parents = [int(p) for p in ontology.parent_indices(i).tolist() if not (ontology.virtual_root and p == 0)]
    if not parents:
        return None
    return min(parents, key=lambda p: (-int(ontology.depth_max[p]), ontology.ids[p]))
