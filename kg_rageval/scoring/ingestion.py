"""Declarations of the ingestion families (``docs/ingestion.md``): ``parsing`` (OCR / text
extraction CER, WER, extraction-length ratio, TEDS / TEDS-S of HTML tables). Standard library
only. Their properties are listed in :mod:`.properties` with the other built-in families
(``properties.declare`` from here would close an import circle: properties -> registry ->
ingestion -> properties)."""

from __future__ import annotations

from kg_rageval.contract.metrics import metric_specs
from kg_rageval.scoring.scorer import Scorer

PARSING = Scorer(
    name="parsing",
    target="kg_rageval.families.parsing:score_parsing",
    sections=("parsing",),
    opt_in=True,  # records of other families carry no parsing section: run when the audit names it
    description="OCR / text extraction against hand-cleaned references: CER and WER from alignment "
    "counts (jiwer 4 default normalisation), extraction-length ratio, TEDS / TEDS-S of HTML tables; "
    "per document class (slice) and ontology branch.",
    metrics=metric_specs(
        "parsing",
        "parsing",
        (
            ("cer", "lower", "Σ (S + D + I) / Σ (S + D + H) over character alignments (= jiwer.cer)"),
            ("wer", "lower", "Σ (S + D + I) / Σ (S + D + H) over word alignments (= jiwer.wer)"),
            ("cer_substitution_rate", "lower", "Σ S / Σ reference characters"),
            ("cer_deletion_rate", "lower", "Σ D / Σ reference characters (text lost)"),
            ("cer_insertion_rate", "lower", "Σ I / Σ reference characters (text added)"),
            (
                "length_ratio",
                "none",
                "mean over records of extracted chars / reference chars; caveat: duplicated or "
                "wrong text of the right length still scores 1.0 — read it beside cer",
            ),
            (
                "teds",
                "higher",
                "mean over tables of 1 - EditDist(T_ref, T_ext) / max(|T_ref|, |T_ext|) "
                "(PubTabNet costs; an unrecognised table scores 0)",
            ),
            ("teds_s", "higher", "teds on the table structure only (cell content ignored)"),
            ("table_missing_rate", "lower", "tables with no extracted HTML / labelled tables"),
        ),
    ),
)

INGESTION: tuple[Scorer, ...] = (PARSING,)
