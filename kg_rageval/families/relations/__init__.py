"""Relation answers against the knowledge graph: triple P/R/F1 with hierarchy-aware partial
credit, QALD-style answer sets with NIL, and a deterministic KG-grounded faithfulness verifier
(see :mod:`kg_rageval.families.relations.score` and ``docs/relations.md``)."""

from kg_rageval.families.relations.score import END_RELATIONS, FAMILY, RelationsFamily, score_relations

__all__ = ["END_RELATIONS", "FAMILY", "RelationsFamily", "score_relations"]
