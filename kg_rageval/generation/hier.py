"""Hierarchical (ancestor-augmented) set overlap for concept-level correctness.

For a set of concepts C, ``augment(C)`` is the union of each concept's ancestor-or-self set
(:meth:`Ontology.ancestor_indices`) **without the root** (index 0: a real single root is in
every augmented set and would give free credit; a virtual root is no concept) — the project's
convention, shared with :func:`kg_rageval.hierarchy.hierarchical_counts`, which is used when
present. So Sedan vs Hatchback in the vehicle taxonomy share only {car}: hP = hR = 1/2. With
P̂ = augment(answer concepts) and T = augment(reference concepts) the per-record counts are
``|P̂ ∩ T|``, ``|P̂|``, ``|T|``; hP = Σ|P̂∩T| / Σ|P̂|, hR = Σ|P̂∩T| / Σ|T| (Kosmopoulos et al.,
2015).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from ..ontology import Ontology


def augment(ontology: "Ontology", ids: Iterable[str], *, where: str | None = None) -> np.ndarray:
    """Sorted unique ancestor-or-self indices of ``ids`` (root excluded)."""
    idx = ontology.indices(list(ids), where=where)
    if idx.size == 0:
        return np.zeros(0, dtype=np.int64)
    rows = [ontology.ancestor_indices(int(i)) for i in idx]
    out = np.unique(np.concatenate(rows))
    return out[out != 0]


def hierarchical_counts(ontology: "Ontology", pred: Iterable[str], gold: Iterable[str], *, where: str | None = None) -> tuple[int, int, int]:
    """``(|P̂ ∩ T|, |P̂|, |T|)`` for one record (see the module docstring)."""
    pred, gold = list(pred), list(gold)
    try:
        from ..hierarchy import hierarchical_counts as shared
    except ImportError:
        shared = None
    if shared is not None:
        pi = [ontology.indices(pred, where=where).tolist()]
        gi = [ontology.indices(gold, where=where).tolist()]
        inter, n_pred, n_gold = shared(ontology, gi, pi)
        return int(inter[0]), int(n_pred[0]), int(n_gold[0])
    return _own_counts(ontology, pred, gold, where=where)


def _own_counts(ontology: "Ontology", pred: list[str], gold: list[str], *, where: str | None = None) -> tuple[int, int, int]:
    """The fallback when :mod:`kg_rageval.hierarchy` is absent (same convention)."""
    p = augment(ontology, pred, where=where)
    t = augment(ontology, gold, where=where)
    inter = np.intersect1d(p, t, assume_unique=True).size
    return int(inter), int(p.size), int(t.size)
