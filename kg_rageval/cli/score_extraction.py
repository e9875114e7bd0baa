"""``kg-rageval score extraction``: NER P/R/F1 per entity type (seqeval default or strict
mode), relation P/R/F1 per relation type (TACRED convention), hierarchy-aware type credit and
domain/range violations through the ontology (see ``docs/extraction.md``)."""

from __future__ import annotations

from kg_rageval.cli.section_score import section_score_command

command = section_score_command(
    "extraction",
    summary="NER and relation extraction P/R/F1 per type, hierarchy credit and domain/range violations.",
    ontology_help="Ontology whose classes are the entity types and whose properties the relations (optional).",
    notes=[
        "per type: --rows or the slice:entity_type / slice:relation_type breakdowns; macro averages "
        "(seqeval's zero_division=0) in meta.macro; relations in --negative-labels count nowhere (TACRED)"
    ],
    notes_without_ontology=["no ontology: no hierarchy credit, no unknown-type or domain/range check"],
)
