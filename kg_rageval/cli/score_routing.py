"""``kg-rageval score routing``: intent classification, routing to ontology nodes with
hierarchy-aware credit and the confusion taxonomy, and adaptive retrieval modes, per ontology
branch and slice (see ``docs/routing.md``)."""

from __future__ import annotations

from kg_rageval.cli.section_score import section_score_command

command = section_score_command(
    "routing",
    summary="Intent P/R/F1, routing correctness over ontology nodes, adaptive retrieval modes.",
    ontology_help="Ontology whose nodes are the router's classes (needed for route decisions).",
    ontology_required=False,
)
