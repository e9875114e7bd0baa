"""Hierarchical (ancestor-augmented) set overlap for concept-level correctness.

For a set of concepts C, ``augment(C)`` is the union of each concept's ancestor-or-self set
(:meth:`Ontology.ancestor_indices`) **without the root** (index 0: a real single root is in
every augmented set and would give free credit; a virtual root is no concept) — the project's
convention; the counts come from :func:`kg_rageval.hierarchy.hierarchical_counts`. So Sedan vs Hatchback in the vehicle taxonomy share only {car}: hP = hR = 1/2. With
P̂ = augment(answer concepts) and T = augment(reference concepts) the per-record counts are
``|P̂ ∩ T|``, ``|P̂|``, ``|T|``; hP = Σ|P̂∩T| / Σ|P̂|, hR = Σ|P̂∩T| / Σ|T| (Kosmopoulos et al.,
2015).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from ..ontology import Ontology


def hierarchical_counts(ontology: "Ontology", pred: Iterable[str], gold: Iterable[str], *, where: str | None = None) -> tuple[int, int, int]:
    """``(|P̂ ∩ T|, |P̂|, |T|)`` for one record (see the module docstring), computed by the
    hierarchy package's kernel; unknown ids raise :class:`~kg_rageval.errors.UnknownIdError`
    naming ``where``."""
    from ..hierarchy import hierarchical_counts as shared

    pi = [ontology.indices(list(pred), where=where).tolist()]
    gi = [ontology.indices(list(gold), where=where).tolist()]
    inter, n_pred, n_gold = shared(ontology, gi, pi)
    return int(inter[0]), int(n_pred[0]), int(n_gold[0])
