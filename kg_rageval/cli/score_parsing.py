"""``kg-rageval score parsing``: OCR / text-extraction quality against hand-cleaned references —
CER and WER (jiwer 4 default normalisation), extraction-length ratio, TEDS / TEDS-S of HTML
tables, per document class (see ``docs/ingestion.md``)."""

from __future__ import annotations

from kg_rageval.cli.section_score import section_score_command

command = section_score_command(
    "parsing",
    summary="CER, WER, length ratio, TEDS / TEDS-S, reading / heading order and titles per document class.",
    ontology_help="Ontology, for the per-branch roll-up of the records' gold_node (optional).",
    notes=["length_ratio: duplicated or wrong text of the right length still scores 1.0; read it beside cer"],
)
