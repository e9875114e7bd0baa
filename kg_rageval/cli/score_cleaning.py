"""``kg-rageval score cleaning``: boilerplate removal and PII scrubbing P/R/F1 on character spans
(strict and overlap), language-ID accuracy and macro F1, near-duplicate pair P/R/F1 (records'
detector or the MinHash/LSH reference, ``--minhash-threshold``) and Unicode health, per slice
and ontology branch (see ``docs/cleaning.md``)."""

from __future__ import annotations

from kg_rageval.cli.section_score import section_score_command

command = section_score_command(
    "cleaning",
    summary="Boilerplate, language ID, near duplicates, PII and Unicode health per slice and branch.",
    ontology_help="Ontology, for the per-branch roll-up of the records' gold_node (optional).",
    notes=[
        "micro sums over documents; _overlap: one-to-one spans sharing a character; per-language and "
        "per-PII-type tables and the PII recall failures are in meta (--format json)"
    ],
)
