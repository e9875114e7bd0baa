"""Ontology drift: what changed between two releases, re-basing records onto the new one, and
honest comparison of audits across releases (``docs/drift.md``).

* :func:`diff_ontologies` — added, removed, deprecated, revoked, merged, moved, relabelled, ...
  nodes of two compiled ontologies (any two loadable sources), vectorised over the indexes.
* :func:`rebase_records` — every ontology id of a records file mapped through replacement and
  merge chains into the new release, with a report of what moved or could not be mapped.
* :func:`stability` — per branch: what changed and how much the metrics moved because of the
  ontology alone (the same predictions scored under both releases).
"""

from kg_rageval.drift.diff import CHANGE_KINDS, OntologyDiff, diff_ontologies
from kg_rageval.drift.rebase import IdMapping, RebaseReport, build_mapping, rebase_records

__all__ = [
    "CHANGE_KINDS",
    "IdMapping",
    "OntologyDiff",
    "RebaseReport",
    "build_mapping",
    "diff_ontologies",
    "rebase_records",
]
