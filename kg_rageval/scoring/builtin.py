"""The declarations of the built-in metric families: parameters, inputs and metrics.

This is the one place where a family's options, defaults, allowed values, inputs and metric
names are written. ``kg-rageval score <family>`` flags, the audit config's
``families.<family>`` keys, the pytest plugin, ``score_distributed`` and ``kg-rageval metrics``
are derived from it. Standard library only (imported by the CLI at start-up).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kg_rageval.contract.ids import ID_PARAMS, INACTIVE, NOT_IN_ONTOLOGY
from kg_rageval.contract.metrics import MetricSpec, metric_specs
from kg_rageval.contract.params import Param
from kg_rageval.scoring.scorer import Input, Scorer

# ---------------------------------------------------------------------- shared options
HIER_RELATIONS = ("parent", "child", "ancestor", "descendant", "sibling", "cousin", "unrelated")
"""Confusion relations of a wrong prediction (:meth:`Ontology.relation`)."""


def _p(name: str, kind: str, default: Any, help: str, **kw: Any) -> Param:
    return Param(name, kind, default, help, **kw)


# ---------------------------------------------------------------------- hierarchy
_H_ERR = HIER_RELATIONS + ("inactive", "multi", "nil_gold", "nil_pred", NOT_IN_ONTOLOGY)
HIERARCHY = Scorer(
    name="hierarchy",
    target="kg_rageval.families.hierarchy:score_hierarchy",
    sections=("labels",),
    reads=(),
    description="Hierarchical P/R/F1, Wu-Palmer and the confusion taxonomy (labels section).",
    params=(
        _p(
            "include_root",
            "bool",
            False,
            "Count the root in the augmented sets (default: left out, it gives free credit).",
        ),
        _p(
            "lca_bounded",
            "bool",
            False,
            "Kosmopoulos' LCA-bounded hP/hR (one gold and one predicted node per record).",
        ),
        *ID_PARAMS,
        _p(
            "wup_lcs",
            "str",
            "nltk",
            "Wu-Palmer subsumer: NLTK's (deepest min-depth) or the deepest max-depth.",
            choices=("nltk", "max_depth"),
        ),
        _p(
            "wup_identical",
            "str",
            "one",
            "Wu-Palmer of a node with itself: 1, or NLTK's value (may be below 1 in a polyhierarchy).",
            choices=("one", "nltk"),
        ),
    ),
    metrics=metric_specs(
        "hierarchy",
        "hierarchy",
        (
            (
                "hierarchical_precision",
                "higher",
                "hP = Σ|Â_pred ∩ Â_gold| / Σ|Â_pred| over records (augmented "
                "ancestor sets, root left out by default)",
            ),
            ("hierarchical_recall", "higher", "hR = Σ|Â_pred ∩ Â_gold| / Σ|Â_gold|"),
            ("hierarchical_f1", "higher", "hF1 = 2·hP·hR / (hP + hR)"),
            ("macro_hierarchical_precision", "higher", "mean over records of |Â_pred ∩ Â_gold| / |Â_pred|"),
            ("macro_hierarchical_recall", "higher", "mean over records of |Â_pred ∩ Â_gold| / |Â_gold|"),
            ("macro_hierarchical_f1", "higher", "mean over records of the per-record hF1"),
            ("exact_accuracy", "higher", "items whose prediction equals the gold / items"),
            ("wu_palmer", "higher", "mean Wu-Palmer similarity 2·depth(lcs) / (depth(a) + depth(b))"),
            ("errors", "none", "count of wrong items"),
            ("mean_error_distance", "lower", "mean path length gold → prediction over wrong items"),
            (
                "missing_run_rate",
                "lower",
                "records with gold but no prediction (scored as an empty prediction) / items",
            ),
        ),
    )
    + metric_specs(
        "hierarchy",
        "hierarchy",
        [(f"error_count_{c}", "none", f"wrong items whose confusion category is {c!r}") for c in _H_ERR]
        + [(f"error_rate_{c}", "lower", f"wrong items of category {c!r} / wrong items") for c in _H_ERR],
    ),
)

# ---------------------------------------------------------------------- linking
_PRF = (("mention", "mentions (span detection)"), ("nil", "NIL decisions"))
_MATCH = (
    ("all_match", "span + id (NIL included)"),
    ("link_match", "span + id of in-KB gold"),
    ("nil_match", "span of NIL gold + NIL prediction"),
)
"""neleval's *strong* measures (identical spans); with ``overlap: true`` the same counts are
``overlap_*`` (a pair shares a character), never under neleval's names."""


def _prf_rows(prefix: str, what: str) -> list[tuple[str, str, str]]:
    return [
        (f"{prefix}_precision", "higher", f"matched {what} / predicted"),
        (f"{prefix}_recall", "higher", f"matched {what} / gold"),
        (f"{prefix}_f1", "higher", f"2·P·R / (P + R) of {prefix}"),
    ]


LINKING = Scorer(
    name="linking",
    target="kg_rageval.families.linking.evaluate:score_linking",
    sections=("mentions",),
    reads=("text", "query"),  # the text the spans index (records.record_text)
    description="Entity linking and NIL evaluation (mentions section).",
    # a record's mention lists parse into ~2 kB of dicts (hierarchy's labels: ~1 kB): half the
    # default chunk keeps the parsed chunk (and the small-object heap it leaves) near 75 MB
    chunk_size=32_768,
    params=(
        _p(
            "overlap",
            "bool",
            False,
            "Align overlapping spans (greedy one-to-one) instead of identical spans.",
        ),
        *ID_PARAMS,
        _p("allow_overlapping_gold", "bool", False, "Permit nested or crossing gold spans."),
    ),
    metrics=metric_specs(
        "linking",
        "linking",
        [row for m, what in _MATCH for row in _prf_rows(f"strong_{m}", what)],
        when=(("overlap", False),),
    )
    + metric_specs(
        "linking",
        "linking",
        [row for m, what in _MATCH for row in _prf_rows(f"overlap_{m}", "overlapping " + what)],
        when=(("overlap", True),),
    )
    + metric_specs(
        "linking",
        "linking",
        [row for prefix, what in _PRF for row in _prf_rows(prefix, what)]
        + [
            ("linking_macro_precision", "higher", "mean over records of the per-record link precision"),
            ("linking_macro_recall", "higher", "mean over records of the per-record link recall"),
            ("linking_macro_f1", "higher", "mean over records of the per-record link F1"),
            ("disambiguation_accuracy", "higher", "correct ids / matched in-KB gold spans"),
            ("over_links", "none", "NIL gold spans linked to a node (count)"),
            ("over_link_rate", "lower", "over-links / matched NIL gold spans"),
            (
                "over_link_near_rate",
                "lower",
                "over-links to a node near the gold's nearest node / over-links",
            ),
            ("abstentions", "none", "in-KB gold spans predicted NIL (count)"),
            ("correct_abstentions", "none", "NIL gold spans predicted NIL (count)"),
            ("abstention_rate", "lower", "abstentions / matched in-KB gold spans"),
            ("wrong_links", "none", "matched in-KB spans linked to another node (count)"),
            (
                "unknown_ids",
                "none",
                "ids not in the ontology, counted (predicted by default; gold with on_unknown_gold='count')",
            ),
            (
                "inactive_ids",
                "none",
                "predicted deprecated/revoked ids, flagged with their replacement (count)",
            ),
            (
                "missing_run_rate",
                "lower",
                "records with gold mentions but no mentions.pred (scored as no "
                "predicted mentions) / records with gold mentions",
            ),
            (
                "hierarchical_precision",
                "higher",
                "Σ|anc(pred) ∩ anc(gold)| / Σ|anc(pred)| over matched links",
            ),
            ("hierarchical_recall", "higher", "Σ|anc(pred) ∩ anc(gold)| / Σ|anc(gold)| over matched links"),
            ("hierarchical_f1", "higher", "2·hP·hR / (hP + hR)"),
            ("wu_palmer", "higher", "mean Wu-Palmer similarity of matched links"),
        ]
        + [
            (f"wrong_link_{r}", "lower", f"wrong links whose relation is {r!r} / wrong links")
            for r in HIER_RELATIONS + (NOT_IN_ONTOLOGY,)
        ]
        + [
            (
                f"wrong_link_{INACTIVE}",
                "lower",
                "wrong links to a flagged deprecated/revoked id (hierarchy's 'inactive') / wrong links",
            )
        ],
    ),
)

# ---------------------------------------------------------------------- retrieval


def _retrieval_values(opts: Mapping[str, Any]) -> dict[str, set[str]]:
    ks = {str(k) for k in opts["k"]}
    return {"k": ks, "attribution_k": {str(opts["attribution_k"] or max(int(k) for k in ks))}}


_R_ATTR = (
    ("hit", "queries whose gold is in the top k"),
    ("filter", "queries whose gold the filters excluded"),
    ("retriever", "queries whose gold the retriever never returned"),
    ("ranker", "queries whose gold was retrieved below k"),
)
_R_DOC_ATTR = (
    ("found", "gold documents in the top k"),
    ("filter", "gold documents the filters excluded"),
    ("retriever", "gold documents never retrieved"),
    ("ranker", "gold documents retrieved below k"),
)
_CORPUS_PARAMS = (
    _p(
        "category_field",
        "str",
        "categories",
        "Corpus field holding each document's ontology categories.",
        input="corpus",
    ),
    _p(
        "entitlement_fields",
        "str_list",
        ("tenant", "jurisdiction", "status"),
        "Corpus fields that decide eligibility.",
        flags=("--entitlement-field",),
        input="corpus",
    ),
)
"""Options of the retrieval corpus reader (retrieval and preference families)."""

RETRIEVAL = Scorer(
    name="retrieval",
    target="kg_rageval.families.retrieval:score_retrieval",
    streamable=True,  # per-query sums in rank order: a query's value does not depend on its batch
    sections=("retrieval",),
    reads=(),
    description="Recall/Precision/Hit/nDCG/MRR@k, MAP, R-precision (trec_eval's per-query formulas; queries "
    "without relevant gold are a separate slice, not averaged in) and filter false exclusion.",
    inputs=(
        Input(
            "corpus",
            "Corpus JSONL (id, source_id, categories, entitlement and metadata fields): "
            "enables entitlement, filter replay, false exclusion and attribution.",
            loader="kg_rageval.families.retrieval.inputs:corpus",
        ),
    ),
    params=(
        _p("k", "int_list", (1, 5, 10), "Cut-offs.", minimum=1),
        _p(
            "gain",
            "str",
            "graded",
            "nDCG gain: the relevance level (trec_eval ndcg_cut) or 1 per relevant document.",
            choices=("graded", "binary"),
        ),
        _p(
            "dedupe",
            "bool",
            False,
            "Keep the first occurrence of a repeated run id (counted) instead of rejecting the record.",
        ),
        _p(
            "attribution_k",
            "int",
            None,
            "Cut-off of the filter/retriever/ranker attribution (default: the largest k).",
            minimum=1,
            nullable=True,
        ),
        _p(
            "entitlement_defaults",
            "mapping",
            None,
            "Principal fields applied to every record that does not "
            'set them (JSON object, e.g. {"status": "published"}).',
            nullable=True,
        ),
        _p(
            "engine",
            "str",
            "auto",
            "Metric kernel: numpy, numba, or auto (numba on large runs).",
            choices=("auto", "numpy", "numba"),
        ),
        *_CORPUS_PARAMS,
        *ID_PARAMS,
    ),
    template_values=_retrieval_values,
    metrics=metric_specs(
        "retrieval",
        "retrieval",
        [
            ("recall@{k}", "higher", "mean over scored queries of |relevant ∩ top k| / |relevant|"),
            ("precision@{k}", "higher", "mean over scored queries of |relevant ∩ top k| / k"),
            ("hit@{k}", "higher", "share of scored queries with a relevant document in the top k"),
            ("ndcg@{k}", "higher", "mean of DCG@k / IDCG@k, DCG = Σ gain_i / log2(i + 1)"),
            (
                "mrr@{k}",
                "higher",
                "mean of 1 / rank of the first relevant document within the top k (0 if none)",
            ),
            ("mrr", "higher", "mean of 1 / rank of the first relevant document (0 if none)"),
            ("map", "higher", "mean average precision: mean over queries of Σ P@rank(rel) / |relevant|"),
            ("r_precision", "higher", "mean of precision at R = |relevant|"),
            ("n_scored", "none", "queries scored (with relevant gold)"),
            ("n_missing_run", "none", "queries with gold but no run (scored as an empty run)"),
            ("n_no_gold", "none", "queries without relevant gold (not scored)"),
            ("n_no_gold_nonempty_run", "none", "queries without gold whose run is not empty"),
            ("n_duplicates_removed", "none", "repeated run ids removed (dedupe)"),
            ("n_filters_not_logged", "none", "queries whose filters were not logged"),
            ("n_gold_ineligible", "none", "gold documents the principal may not see"),
            ("n_gold_unknown", "none", "gold documents not in the corpus"),
            ("n_ineligible_retrieved", "none", "retrieved documents the principal may not see"),
            ("n_q_gold_all_ineligible", "none", "queries whose every gold document is ineligible"),
            ("fe_q_eligible", "none", "queries with an eligible gold document and logged filters"),
            ("fe_q_excluded", "none", "of those, queries whose filters exclude an eligible gold document"),
            (
                "fe_q_inconsistent",
                "none",
                "queries that retrieved a gold document their logged filters exclude",
            ),
            (
                "fe_docs_inconsistent",
                "none",
                "gold documents retrieved although the logged filters exclude them",
            ),
            (
                "filter_log_inconsistency_rate",
                "lower",
                "fe_q_inconsistent / fe_q_eligible (the log does not describe what the system did)",
            ),
            ("missing_run_rate", "lower", "n_missing_run / queries with gold"),
            ("filter_false_exclusion_rate", "lower", "fe_q_excluded / fe_q_eligible"),
            (
                "doc_exclusion_rate",
                "lower",
                "eligible gold documents the filters exclude / eligible gold documents",
            ),
            (
                "predicate_precision",
                "higher",
                "filter predicates matching the gold's categories / predicted predicates",
            ),
            (
                "predicate_recall",
                "higher",
                "filter predicates matching the gold's categories / gold predicates",
            ),
        ]
        + [
            (
                f"attribution@{{attribution_k}}.{part}",
                "none" if part != "hit" else "higher",
                f"share of queries: {what}",
            )
            for part, what in _R_ATTR
        ]
        + [
            (
                f"doc_attribution@{{attribution_k}}.{part}",
                "none" if part != "found" else "higher",
                f"share of gold documents: {what}",
            )
            for part, what in _R_DOC_ATTR
        ],
    ),
)

# ---------------------------------------------------------------------- conformance
_C_FAIL = ("not_json", "missing_field", "extra_field", "wrong_type", "enum_violation", "other")
CONFORMANCE = Scorer(
    name="conformance",
    target="kg_rageval.families.conformance:score_conformance",
    sections=("answer",),
    reads=("reference",),
    description="Schema validity, vocabulary, status and domain/range conformance of answer.output.",
    inputs=(
        Input(
            "spec",
            "Output schema spec (YAML, JSON or TOML): which field holds which kind of node.",
            loader="kg_rageval.families.conformance.inputs:spec",
            required=True,
            flags=("--schema-spec",),
        ),
    ),
    params=(
        _p(
            "domain_semantics",
            "str",
            "any",
            "Several declared domain/range classes: any one suffices (union) or each must hold (RDFS).",
            choices=("any", "all"),
        ),
        _p(
            "engine",
            "str",
            "compiled",
            "Schema check: the compiled checker of the derived schema, the "
            "jsonschema Draft 2020-12 validator (reference), or the equivalent pydantic model.",
            choices=("compiled", "jsonschema", "pydantic"),
        ),
        *ID_PARAMS,
    ),
    metrics=metric_specs(
        "conformance",
        "conformance",
        [
            ("schema_validity", "higher", "outputs valid against the derived JSON Schema / outputs"),
            ("entity_vocabulary", "higher", "entity ids in the ontology / entity ids"),
            ("predicate_vocabulary", "higher", "predicates in the ontology / predicates"),
            ("field_conformance", "higher", "entity ids admitted by their field's node kind / entity ids"),
            ("vocabulary_conformance", "higher", "known ids (entities and predicates) / ids"),
            ("status_conformance", "higher", "active ids / known ids"),
            ("deprecated_rate", "lower", "deprecated ids / known ids"),
            ("revoked_rate", "lower", "revoked ids / known ids"),
            ("outputs_with_inactive_ids", "lower", "outputs naming a deprecated or revoked id / outputs"),
            (
                "domain_conformance",
                "higher",
                "triples whose subject satisfies the predicate's domain / checkable",
            ),
            (
                "range_conformance",
                "higher",
                "triples whose object satisfies the predicate's range / checkable",
            ),
            ("domain_range_conformance", "higher", "triples satisfying domain and range / checkable triples"),
            (
                "edge_support",
                "higher",
                "output triples the knowledge graph holds / triples with known ends and predicate",
            ),
            (
                "hallucinated_edge_rate",
                "lower",
                "output triples the graph lacks / triples with known ends and predicate",
            ),
            ("hallucinated_edges", "lower", "output triples the graph lacks (count)"),
            (
                "cardinality_conformance",
                "higher",
                "(subject, predicate) pairs within max_cardinality / pairs checked",
            ),
            ("semantic_precision", "higher", "predicted ids equal to the reference's / predicted ids"),
            ("semantic_recall", "higher", "reference ids predicted / reference ids"),
            (
                "valid_but_wrong_rate",
                "lower",
                "valid known ids that differ from the reference / compared ids",
            ),
            ("triple_precision", "higher", "predicted triples in the reference / predicted triples"),
            ("triple_recall", "higher", "reference triples predicted / reference triples"),
        ]
        + [
            (f"failure_rate_{k}", "lower", f"outputs failing the schema with {k!r} / outputs")
            for k in _C_FAIL
        ]
        + [
            (
                f"confusion_{r}",
                "lower",
                f"valid-but-wrong ids whose relation to the reference is {r!r} / valid-but-wrong ids"
                if r != "inactive"
                else "valid-but-wrong ids that are deprecated or revoked (filed before any relation) "
                "/ valid-but-wrong ids",
            )
            for r in HIER_RELATIONS + ("inactive",)
        ],
    ),
)

# ---------------------------------------------------------------------- generation
GENERATION = Scorer(
    name="generation",
    target="kg_rageval.families.generation:score_generation",
    sections=("answer",),
    description="Faithfulness, answer correctness, refusal behaviour, unseen concepts and calibration.",
    members=("faithfulness", "correctness", "refusal", "unseen_concepts", "calibration"),
    inputs=(
        Input(
            "judgments",
            'Faithfulness judgments JSONL: {"id": record id, "judgment": object or raw judge text}.',
            loader="kg_rageval.families.generation.inputs:judgments",
        ),
    ),
    params=(
        _p(
            "judge",
            "str",
            "none",
            "Judge records without a judgment: none, the deterministic ontology "
            "verifier, a local NLI cross-encoder, or a plugin module:callable (a class is instantiated, "
            "with ontology= when it takes it; library: a Judge object).",
            choices=("none", "ontology", "nli"),
            accepts_object=True,
            pattern=r"[A-Za-z_][\w.]*:[A-Za-z_]\w*",
            pattern_text="module:callable",
        ),
        _p(
            "nli_model",
            "path",
            None,
            "Local NLI cross-encoder directory (for judge=nli; never downloaded).",
            nullable=True,
        ),
        _p("n_bins", "int", 10, "Calibration bins (equal width).", minimum=1, flags=("--bins",)),
        _p(
            "strip_citations",
            "bool",
            True,
            "Remove inline citation markers ([doc-12], [1]) from answers before exact match and token F1.",
        ),
        *ID_PARAMS,
        _p(
            "linker",
            "object",
            None,
            "Library only: the concept linker (default: the ontology's dictionary linker).",
        ),
    ),
    metrics=metric_specs(
        "generation",
        "faithfulness",
        [
            ("faithfulness", "higher", "mean over judged answers of supported claims / claims"),
            ("faithfulness_micro", "higher", "Σ supported claims / Σ claims"),
            ("answers_scored", "none", "answers with a valid judgment (count)"),
            ("invalid_judgment", "none", "judge outputs that could not be parsed (count)"),
            ("invalid_judgment_rate", "lower", "invalid judgments / judgments"),
            ("no_claims", "none", "answers the judge found no claims in (count)"),
            ("no_claims_rate", "none", "no-claim answers / valid judgments"),
        ],
    )
    + metric_specs(
        "generation",
        "correctness",
        [
            ("exact_match", "higher", "mean SQuAD exact match over answerable records with a reference"),
            ("token_f1", "higher", "mean SQuAD token F1 over answerable records with a reference"),
            (
                "concept_hP",
                "higher",
                "Σ|anc(answer concepts) ∩ anc(reference concepts)| / Σ|anc(answer concepts)|",
            ),
            (
                "concept_hR",
                "higher",
                "Σ|anc(answer concepts) ∩ anc(reference concepts)| / Σ|anc(reference concepts)|",
            ),
            ("concept_hF1", "higher", "2·hP·hR / (hP + hR) of the concepts"),
            (
                "concepts_not_in_ontology",
                "none",
                "given concept ids the ontology lacks (count; predicted by default)",
            ),
        ],
    )
    + metric_specs(
        "generation",
        "refusal",
        [
            ("refusal_precision", "higher", "correct refusals / refusals"),
            ("refusal_recall", "higher", "correct refusals / records that should abstain"),
            ("refusal_f1", "higher", "2·P·R / (P + R) of refusals"),
            ("over_refusal_rate", "lower", "refusals of answerable records / answerable records"),
        ],
    )
    + metric_specs(
        "generation",
        "unseen_concepts",
        [
            (
                "flag_rate",
                "none",
                "answers naming a concept absent from their context / answers with context",
            ),
            (
                "unseen_precision",
                "higher",
                "flagged concepts a human marked unseen / flags on labelled records",
            ),
            ("unseen_recall", "higher", "flagged concepts a human marked unseen / marked concepts"),
            ("unseen_f1", "higher", "2·P·R / (P + R) of unseen-concept flags"),
        ],
    )
    + metric_specs(
        "generation",
        "calibration",
        [
            ("ece", "lower", "expected calibration error Σ_bins |conf − acc| · n_bin / n"),
            ("accuracy", "higher", "correct answers / calibrated answers"),
            ("mean_confidence", "none", "mean stated confidence"),
            ("brier", "lower", "mean (confidence − correct)²"),
        ],
    ),
)

# ---------------------------------------------------------------------- provenance
PROVENANCE = Scorer(
    name="provenance",
    target="kg_rageval.families.provenance:score_provenance",
    streamable=True,  # the per-run members (reproducibility, run_manifests, prov_trail) merge as
    # one call gives them: their Family.merge_meta / complete (docs/provenance.md, "Streaming")
    sections=("answer",),
    description="Citation completeness and precision/recall, provenance depth, reproducibility, run "
    "manifests and the PROV-O trail.",
    members=("citations", "provenance_depth", "reproducibility", "run_manifests", "prov_trail"),
    inputs=(
        Input(
            "corpus",
            'Corpus snapshot JSONL: {"id", "source_id", "categories", ...} per document.',
            loader="kg_rageval.families.provenance.inputs:corpus",
            required=True,
        ),
    ),
    params=(
        _p(
            "repeats",
            "path_list",
            (),
            "Records of repeated runs of the same queries (reproducibility).",
            flags=("--repeat",),
            loader="kg_rageval.families.provenance.inputs:repeats",
        ),
        _p(
            "manifests",
            "path_list",
            (),
            "Run manifests (JSON; the first describes the scored run): checked "
            "against the corpus and ontology hashes and compared.",
            flags=("--manifest",),
            loader="kg_rageval.families.provenance.inputs:manifests",
        ),
        _p(
            "trail",
            "bool",
            True,
            "Build the PROV-O trail of the run and validate it with "
            "shapes/provenance.ttl (the audit writes it as prov.ttl).",
        ),
    ),
    metrics=metric_specs(
        "provenance",
        "citations",
        [
            (
                "citation_completeness",
                "higher",
                "claims with a citation / claims (an answer citing nothing: every claim uncited)",
            ),
            (
                "uncited_answer_rate",
                "lower",
                "non-refused answers with claims and no citation / answers with claims",
            ),
            ("citation_precision", "higher", "cited gold documents / cited documents"),
            ("citation_recall", "higher", "cited gold documents / gold documents"),
            ("citation_f1", "higher", "2·P·R / (P + R) of citations"),
            ("no_claims", "none", "answers without claims (count)"),
        ],
    )
    + metric_specs(
        "provenance",
        "provenance_depth",
        [
            ("provenance_depth", "higher", "citations resolving to a stable source id / citations"),
            ("citation_in_corpus_rate", "higher", "citations naming a corpus document / citations"),
        ],
    )
    + metric_specs(
        "provenance",
        "reproducibility",
        [
            ("identical_answer_rate", "higher", "repeated runs with the same answer text / pairs"),
            ("identical_citation_rate", "higher", "repeated runs with the same citations / pairs"),
            ("identical_rate", "higher", "repeated runs identical in answer and citations / pairs"),
        ],
    )
    + metric_specs(
        "provenance",
        "run_manifests",
        [
            (
                "manifest_completeness",
                "higher",
                "manifests with every required field and no hash differing from the snapshot / manifests",
            ),
            (
                "manifest_hash_match_rate",
                "higher",
                "manifests whose corpus and ontology hashes equal the snapshot's / manifests recording both",
            ),
            (
                "manifest_consistency",
                "higher",
                "later manifests pinning the first one's configuration / later manifests",
            ),
        ],
    )
    + metric_specs(
        "provenance",
        "prov_trail",
        [
            (
                "prov_traceable_rate",
                "higher",
                "answers whose PROV-O trail (answer, cited documents, run) conforms "
                "to shapes/provenance.ttl / answers (missing evidence without a run manifest)",
            ),
        ],
    ),
)


# ---------------------------------------------------------------------- relations
_END_RELS = ("parent", "ancestor", "child", "descendant", "sibling", "cousin", "unrelated")
RELATIONS = Scorer(
    name="relations",
    target="kg_rageval.families.relations:score_relations",
    sections=("relations",),
    section_required=True,
    description="Relation answers against the knowledge graph: triple P/R/F1 with hierarchy-aware partial "
    "credit, QALD answer sets with NIL, KG-grounded faithfulness (relations section).",
    params=(
        _p(
            "partial_credit",
            "float",
            0.5,
            "Credit of a triple end one level apart in the hierarchy (a technique "
            "for its sub-technique); a triple's credit is the product over its ends; 0 disables soft matching.",
            minimum=0.0,
        ),
        *ID_PARAMS,
    ),
    metrics=metric_specs(
        "relations",
        "relations",
        [
            (
                "triple_precision",
                "higher",
                "Σ exact answer triples / Σ answer triples (records with non-empty gold)",
            ),
            ("triple_recall", "higher", "Σ exact answer triples / Σ gold triples"),
            ("triple_f1", "higher", "2·P·R / (P + R) of the triples"),
            ("soft_triple_precision", "higher", "(Σ exact + Σ partial credit) / Σ answer triples"),
            ("soft_triple_recall", "higher", "(Σ exact + Σ partial credit) / Σ gold triples"),
            ("soft_triple_f1", "higher", "2·P·R / (P + R) of the soft triple P and R"),
            (
                "triple_macro_precision",
                "higher",
                "mean over records with gold and answer triples of exact / answer",
            ),
            ("triple_macro_recall", "higher", "mean over records with gold triples of exact / gold"),
            ("triple_macro_f1", "higher", "mean over records with gold triples of the per-record F1"),
            ("partial_matches", "none", "answer triples matched with partial credit (count)"),
            (
                "triple_nil_accuracy",
                "higher",
                "records with empty gold and empty answer / records with empty gold",
            ),
            ("triple_nil_correct", "none", "records with empty gold and empty answer (correct abstentions)"),
            ("triple_nil_over_answered", "lower", "records with empty gold and a non-empty answer (count)"),
            (
                "triple_unknown_ids",
                "lower",
                "answer triples naming an id that is neither node nor instance (count)",
            ),
            (
                "triple_unknown_predicates",
                "lower",
                "answer triples with a predicate the ontology lacks (count)",
            ),
            (
                "wrong_unanchored",
                "none",
                "wrong answer triples sharing no predicate + end with a gold triple (count)",
            ),
        ]
        + [
            (
                f"wrong_{side}_{r}",
                "none",
                f"wrong {side} ends whose relation to the gold end is {r!r} / wrong ends",
            )
            for side in ("subject", "object")
            for r in _END_RELS
        ]
        + [
            ("answer_macro_precision", "higher", "mean over answered questions with gold of |A ∩ G| / |A|"),
            ("answer_macro_recall", "higher", "mean over questions with gold of |A ∩ G| / |G|"),
            (
                "answer_macro_f1",
                "higher",
                "mean over questions with gold of the per-question F1 (abstention 0)",
            ),
            ("answer_micro_precision", "higher", "Σ |A ∩ G| / Σ |A| over all questions"),
            ("answer_micro_recall", "higher", "Σ |A ∩ G| / Σ |G|"),
            ("answer_micro_f1", "higher", "2·P·R / (P + R) of the micro answer P and R"),
            ("answer_abstentions", "none", "questions with gold answers and an empty answer (count)"),
            ("answer_nil_accuracy", "higher", "NIL questions answered empty / NIL questions"),
            ("answer_nil_correct", "none", "NIL questions answered empty (count)"),
            ("answer_nil_over_answered", "lower", "NIL questions with a non-empty answer (count)"),
            ("answer_unknown_ids", "lower", "answer ids that are neither node nor instance (count)"),
            ("kg_faithfulness", "higher", "claims the graph holds / claims"),
            (
                "kg_contradiction_rate",
                "lower",
                "claims the graph rules out (domain, range, cardinality) / claims",
            ),
            ("kg_not_in_graph_rate", "lower", "claims neither held nor ruled out / claims"),
            ("claims_unknown", "lower", "claims naming an unknown id or predicate (count)"),
        ],
    ),
)


# ---------------------------------------------------------------------- hard filter vs soft boost
PREFERENCE = Scorer(
    name="preference",
    target="kg_rageval.families.retrieval.preference:score_preference",
    streamable=False,  # meta describes the whole comparison
    sections=("retrieval",),
    description="Hard filter or soft boost for a relevance preference, one per query or global "
    "(seed Part 5).",
    opt_in=True,
    inputs=(
        Input(
            "corpus",
            "Corpus JSONL (categories, entitlement and metadata fields) to replay the preference on.",
            loader="kg_rageval.families.retrieval.inputs:corpus",
            required=True,
        ),
    ),
    params=(
        _p(
            "preference",
            "mapping",
            None,
            'The preference filter {field, op, value}; value {"from": '
            '"labels.pred"} reads it per query from a record path; absent: each record\'s '
            "retrieval.preference.",
            nullable=True,
        ),
        _p("k", "int", 10, "Cut-off of the comparison.", minimum=1),
        _p("boost", "float", 0.1, "Soft: score + boost for the documents passing the preference.", minimum=0),
        *_CORPUS_PARAMS,
        *ID_PARAMS,
    ),
    metrics=metric_specs(
        "preference",
        "preference",
        [
            (
                "hard_recall",
                "higher",
                "mean over compared queries of recall@k with the preference as a hard filter",
            ),
            ("soft_recall", "higher", "mean recall@k with the preference as a soft boost"),
            ("hard_precision", "higher", "mean precision@k, hard filter"),
            ("soft_precision", "higher", "mean precision@k, soft boost"),
            ("precision_gain", "higher", "mean paired hard − soft precision@k (gate its ci_low)"),
            ("recall_delta", "higher", "mean hard − soft recall@k"),
            (
                "exclusion_rate",
                "lower",
                "queries whose every eligible gold document fails the preference / queries",
            ),
            (
                "unknown_preference",
                "none",
                "queries whose preference names a concept the ontology lacks (count)",
            ),
        ],
    ),
)


# ---------------------------------------------------------------------- TREC files
_T_FORMULA: dict[str, tuple[str, str]] = {
    # measure template: (direction, formula); names are the ir_measures spellings
    # (kg_rageval.contract.measures), "(rel={rel})" the graded-relevance threshold
    "P@{k}": ("higher", "mean over queries of |relevant ∩ top k| / k (trec_eval P_k)"),
    "P(rel={rel})@{k}": ("higher", "P@k with grade >= rel as relevant (graded P)"),
    "R@{k}": ("higher", "mean of |relevant ∩ top k| / |relevant| (trec_eval recall_k)"),
    "R": ("higher", "mean of |relevant ∩ retrieved| / |relevant| (trec_eval set_recall)"),
    "AP": ("higher", "mean average precision Σ P@rank(rel) / |relevant| (trec_eval map)"),
    "AP(rel={rel})": ("higher", "AP with grade >= rel as relevant"),
    "AP@{k}": ("higher", "AP over the top k (trec_eval map_cut_k)"),
    "GMAP": ("higher", "geometric mean of AP, floor 1e-5 (trec_eval gm_map)"),
    "RR": ("higher", "mean of 1 / rank of the first relevant document (trec_eval recip_rank)"),
    "RR@{k}": ("higher", "RR within the top k"),
    "Rprec": ("higher", "mean precision at R = |relevant| (trec_eval Rprec)"),
    "nDCG": ("higher", "nDCG over the whole ranking, gain = grade (trec_eval ndcg)"),
    "nDCG@{k}": ("higher", "DCG@k / IDCG@k, gain = grade (trec_eval ndcg_cut_k)"),
    "Success@{k}": (
        "higher",
        "queries with a relevant document in the top k / queries (trec_eval success_k)",
    ),
    "Bpref": ("higher", "mean of 1/R Σ_rel (1 − |judged non-relevant above| / min(R, N)) (trec_eval bpref)"),
    "GMBpref": ("higher", "geometric mean of Bpref (trec_eval gm_bpref)"),
    "infAP": ("higher", "inferred AP on incomplete judgements (trec_eval infAP)"),
    "Judged@{k}": ("higher", "judged documents in the top k / k"),
    "Unjudged@{k}": ("lower", "unjudged documents in the top k / k (trec_eval unj_k)"),
    "ERR@{k}": ("higher", "expected reciprocal rank Σ_r 1/r R_r Π_{i<r}(1 − R_i), R = (2^g − 1) / 2^gmax"),
    "RBP": ("higher", "rank-biased precision (1 − p) Σ p^(i−1) rel_i, p = 0.8"),
    "IPrec@{level}": ("higher", "interpolated precision at recall level (trec_eval iprec_at_recall_level)"),
    "11ptAvg": ("higher", "mean interpolated precision at the 11 recall levels (trec_eval 11pt_avg)"),
    "SetP": ("higher", "|relevant ∩ retrieved| / |retrieved| (trec_eval set_P)"),
    "SetR": ("higher", "|relevant ∩ retrieved| / |relevant|"),
    "SetF": ("higher", "F1 of SetP and SetR (trec_eval set_F)"),
    "SetAP": ("higher", "SetP · SetR (trec_eval set_map)"),
    "NumQ": ("none", "queries (count, trec_eval num_q)"),
    "NumRet": ("none", "retrieved documents (sum over queries)"),
    "NumRel": ("none", "relevant documents (sum over queries)"),
    "NumRelRet": ("none", "relevant retrieved documents (sum over queries)"),
    "NumNonRelJudgedRet": ("none", "judged non-relevant retrieved documents (sum over queries)"),
}
TREC = Scorer(
    name="trec",
    target="kg_rageval.families.retrieval.files:score_trec",
    streamable=False,  # the evidence is the qrels and run files, not the records
    sections=(),
    description="Every ir_measures/trec_eval measure from TREC/BEIR/JSON qrels and a run (score retrieval "
    "--qrels/--run); metric names are the ir_measures spellings, any alias accepted.",
    opt_in=True,
    members=("retrieval_measures",),
    inputs=(
        Input(
            "qrels",
            "Qrels: TREC (qid iter doc rel), BEIR TSV or ranx/ir_measures JSON.",
            loader="kg_rageval.families.retrieval.inputs:qrels",
            required=True,
        ),
        Input(
            "run",
            "Run: TREC (six or more columns) or ranx/ir_measures JSON.",
            loader="kg_rageval.families.retrieval.inputs:run",
            required=True,
        ),
    ),
    params=(
        _p(
            "measures",
            "str_list",
            (),
            "Measures to compute, any spelling (nDCG@10, P(rel=2)@10, recip_rank, "
            "ndcg_cut_10); empty: the default set of score retrieval --qrels.",
            flags=("--measure",),
        ),
        _p(
            "mode",
            "str",
            "default",
            "Aggregation: default (queries with a relevant document) or trec_eval "
            "(every judged query, trec_eval -c).",
            choices=("default", "trec_eval"),
        ),
        _p("rel_level", "int", 1, "Relevance threshold: grade >= this is relevant (trec_eval -l)."),
        _p(
            "depth",
            "int",
            None,
            "Evaluate only the first N ranked documents per query (trec_eval -M).",
            minimum=1,
            nullable=True,
        ),
        _p("complete", "bool", True, "With mode trec_eval: -c (missing runs score 0)."),
        _p(
            "dedupe",
            "bool",
            False,
            "Keep the first of a repeated run document instead of rejecting the run.",
            input="run",
        ),
    ),
    metrics=metric_specs(
        "trec",
        "retrieval_measures",
        [(n, d, f) for n, (d, f) in _T_FORMULA.items()]
        + [
            ("n_queries", "none", "qrels queries"),
            ("n_missing_run", "none", "qrels queries the run does not rank"),
            ("n_no_gold", "none", "qrels queries without a relevant document"),
        ],
    ),
)

# ---------------------------------------------------------------------- SHACL
SHACL = Scorer(
    name="shacl",
    target="kg_rageval.families.conformance.shacl:score_shacl",
    streamable=False,  # one pySHACL run over every output
    sections=("answer",),
    description="answer.output rendered as RDF and validated against SHACL shapes with pySHACL (score "
    "conformance --shapes).",
    opt_in=True,
    members=("conformance_shacl",),
    inputs=(
        Input(
            "shapes",
            "SHACL shapes file (Turtle or any RDF syntax rdflib reads).",
            loader="kg_rageval.families.conformance.inputs:shapes",
            required=True,
        ),
        Input(
            "spec",
            "Output schema spec: which field holds which kind of node (optional).",
            loader="kg_rageval.families.conformance.inputs:spec",
            flags=("--schema-spec",),
        ),
    ),
    metrics=metric_specs(
        "shacl",
        "conformance_shacl",
        [
            ("shacl_conformance", "higher", "outputs conforming to the shapes / outputs"),
            ("violations_per_output", "lower", "validation results (any severity) / outputs"),
            ("unrenderable_rate", "lower", "outputs that are not a JSON object / outputs"),
        ],
    ),
)

BUILTIN: tuple[Scorer, ...] = (
    HIERARCHY,
    LINKING,
    RETRIEVAL,
    CONFORMANCE,
    GENERATION,
    PROVENANCE,
    RELATIONS,
    PREFERENCE,
)
DETERMINISTIC = ("hierarchy", "linking", "retrieval", "conformance", "provenance", "relations")
FILE_FAMILIES: tuple[Scorer, ...] = (TREC, SHACL)
"""Families whose evidence is an input file besides the records (opt-in: the audit runs them
when its config names them): the TREC-file measures and SHACL conformance."""

__all__ = ["BUILTIN", "DETERMINISTIC", "FILE_FAMILIES", "MetricSpec"]
