"""Hierarchy-aware scoring: hierarchical P/R/F1, Wu-Palmer and the confusion taxonomy.

Kernels over integer node indices (:mod:`.kernels`) score a million pairs per call; the
family (:mod:`.family`) reads the ``labels`` section of records. See ``docs/hierarchy.md``.
"""

from kg_rageval.families.hierarchy.family import (
    ERROR_CATEGORIES,
    HierarchyFamily,
    confused_pairs,
    relation_counts,
    score_hierarchy,
)
from kg_rageval.families.hierarchy.kernels import (
    ANCESTOR,
    CHILD,
    COUSIN,
    DESCENDANT,
    EXACT,
    PARENT,
    SIBLING,
    UNRELATED,
    common_ancestor_counts,
    hierarchical_counts,
    pair_measures,
    path_length,
    relation_codes,
    relation_names,
    wu_palmer,
)

__all__ = [
    "ERROR_CATEGORIES",
    "HierarchyFamily",
    "confused_pairs",
    "relation_counts",
    "score_hierarchy",
    "ANCESTOR",
    "CHILD",
    "COUSIN",
    "DESCENDANT",
    "EXACT",
    "PARENT",
    "SIBLING",
    "UNRELATED",
    "common_ancestor_counts",
    "hierarchical_counts",
    "pair_measures",
    "path_length",
    "relation_codes",
    "relation_names",
    "wu_palmer",
]
