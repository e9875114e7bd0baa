"""``kg-rageval score consistency``: self-consistency of n answers sampled at a temperature above
0, as concept-set agreement through the ontology, per ontology branch and slice (see
``docs/consistency.md``)."""

from __future__ import annotations

from kg_rageval.cli.section_score import section_score_command

command = section_score_command(
    "consistency",
    summary="Concept-set agreement (exact and through the hierarchy) of sampled answers.",
    ontology_help="Ontology the concepts are compared through.",
    ontology_required=True,
)
