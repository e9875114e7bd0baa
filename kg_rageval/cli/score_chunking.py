"""``kg-rageval score chunking``: chunk traceability, metadata preservation (parent section,
parent document, ontology ancestry), structure cut rate and optional coherence, per document
class and ontology branch (see ``docs/ingestion.md``)."""

from __future__ import annotations

from kg_rageval.cli.section_score import section_score_command

command = section_score_command(
    "chunking",
    summary="Traceability, metadata preservation, structure cut rate (and coherence) of chunks.",
    ontology_help="Ontology: checks each chunk's ancestry as a root-to-category path and each category id; "
    "gives the per-branch roll-up (optional).",
    notes_without_ontology=["ancestry checked for shape only (no -O ontology)"],
)
