"""Declarations of the query-reformulation families of issue #31 (``docs/rewrite.md``): rewrite
(expansion, HyDE, multi-query gains over the raw query) and iterative (search traces under budgets); and the
answer-level nuggets family (TREC 2024 RAG Track nugget scores, ``docs/nuggets.md``) and consistency
(self-consistency of sampled answers, ``docs/consistency.md``). Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kg_rageval.contract.ids import ID_PARAMS
from kg_rageval.contract.metrics import metric_specs
from kg_rageval.contract.params import Param
from kg_rageval.scoring.quality import CALIBRATION_METRICS
from kg_rageval.scoring.scorer import Scorer

_PAIRWISE_ONLY = ("judge_longer_win_rate", "human_longer_win_rate", "length_balanced_win_rate")
_ASSIGNMENT_CALIBRATION = tuple(
    (
        f"nugget_support.{n}",
        d,
        f"{f} (the automatic nugget assignment as a judge, human_assignment as the label)",
    )
    for n, d, f in CALIBRATION_METRICS
    if n not in _PAIRWISE_ONLY
)


def _rewrite_values(opts: Mapping[str, Any]) -> dict[str, set[str]]:
    return {"k": {str(k) for k in opts["k"]}, "size": {str(n) for n in range(1, opts["max_rewrites"] + 1)}}


_REWRITE_METRICS = (
    [
        (
            "raw.recall@{k}",
            "higher",
            "mean over records with relevant gold of |relevant ∩ raw top k| / |relevant|",
        )
    ]
    + [
        (
            f"{v}.recall@{{k}}",
            "higher",
            f"mean recall@k of the {v} variant (multi_query: union of every rewrite)",
        )
        for v in ("expansion", "hyde", "multi_query")
    ]
    + [
        (
            f"{v}.delta.recall@{{k}}",
            "higher",
            f"mean over records with both of recall@k({v}) − recall@k(raw): the paired gain",
        )
        for v in ("expansion", "hyde", "multi_query")
    ]
    + [
        (f"{v}.latency_ms.mean", "lower", f"mean latency_ms of the {v} variant")
        for v in ("raw", "expansion", "hyde", "multi_query")
    ]
    + [
        ("multi_query.union_{size}.recall@{k}", "higher", "recall@k of the union of the first N rewrites"),
        (
            "multi_query.union_{size}.delta.recall@{k}",
            "higher",
            "recall@k(union of N) − recall@k(raw), paired",
        ),
        ("multi_query.union_{size}.latency_ms.mean", "lower", "mean summed (or max) latency of N rewrites"),
        (
            "hyde.off_topic_rate",
            "lower",
            "HyDE records naming a concept outside the gold branch / HyDE records with concepts and gold",
        ),
    ]
)

REWRITE = Scorer(
    name="rewrite",
    target="kg_rageval.families.rewrite:score_rewrite",
    streamable=False,  # the union sizes and the frontier are taken over all records
    sections=("rewrite",),
    section_required=True,
    description="Query rewriting: expansion, HyDE and multi-query recall gains over the raw query (paired "
    "deltas), union Recall@k for N rewrites with latency, HyDE off-topic concepts.",
    template_values=_rewrite_values,
    metrics=metric_specs("rewrite", "rewrite", _REWRITE_METRICS),
    params=(
        Param("k", "int_list", (10,), "Cut-offs.", minimum=1),
        Param(
            "max_rewrites",
            "int",
            5,
            "Union sizes N = 1..max_rewrites reported for the multi-query rewrites.",
            minimum=1,
        ),
        Param(
            "branch_depth",
            "int",
            1,
            "Ontology depth (root 0) of the gold branch a HyDE concept must lie in.",
            minimum=0,
        ),
        Param(
            "union_latency",
            "str",
            "sum",
            "Latency of N rewrites: sum (one after the other) or max (in parallel).",
            choices=("sum", "max"),
        ),
    ),
)

# properties: the HAS / EXEMPT tables of kg_rageval.scoring.properties (rewrite)

ITERATIVE = Scorer(
    name="iterative",
    target="kg_rageval.families.iterative:score_iterative",
    sections=("iterative",),
    section_required=True,
    description="Iterative search traces under explicit budgets of calls, time and tokens: success, budget "
    "exhausted and wrong counted apart, steps to the first relevant document.",
    metrics=metric_specs(
        "iterative",
        "iterative",
        (
            (
                "success_rate",
                "higher",
                "records with a relevant document found within budget / scored records",
            ),
            (
                "budget_exhausted_rate",
                "lower",
                "records cut by a budget before a relevant document / scored records",
            ),
            (
                "wrong_rate",
                "lower",
                "records with every step taken and no relevant document (or a wrong answer)",
            ),
            (
                "steps_to_first_relevant.mean",
                "lower",
                "mean 1-based step of the first relevant document (successes)",
            ),
            ("calls.mean", "lower", "mean calls of the taken steps"),
            ("time_ms.mean", "lower", "mean time_ms of the taken steps"),
            ("tokens.mean", "lower", "mean tokens of the taken steps"),
        ),
    ),
    params=(
        Param("max_calls", "int", None, "Budget of calls (none: no limit).", nullable=True, minimum=0),
        Param(
            "max_time_ms", "float", None, "Budget of time in ms (none: no limit).", nullable=True, minimum=0
        ),
        Param("max_tokens", "int", None, "Budget of tokens (none: no limit).", nullable=True, minimum=0),
    ),
)

_PAPER = "Pradeep et al. 2024, arXiv 2411.09607, scoring section"
_NUGGETIZER = "nuggetizer core/metrics.py calculate_nugget_scores"
NUGGETS = Scorer(
    name="nuggets",
    target="kg_rageval.families.nuggets:score_nuggets",
    sections=("nuggets",),
    section_required=True,
    description="Nugget evaluation of answers as in the TREC 2024 RAG Track (AutoNuggetizer): All, Vital "
    "and Weighted scores, strict and with partial credit, per answer then averaged; ontology nuggets "
    "assigned through the hierarchy; judge–human assignment agreement (accuracy, Cohen's kappa), and the "
    "assignment calibrated as a judge (false approvals, Wilson CIs, PPI) by the judges family's calibration.",
    members=("nuggets", "assignment_calibration"),
    metrics=metric_specs("nuggets", "assignment_calibration", _ASSIGNMENT_CALIBRATION)
    + metric_specs(
        "nuggets",
        "nuggets",
        (
            (
                "all",
                "higher",
                "mean over answers of A = Σ s_i / |nuggets|, s_i = 1 support, 0.5 partial_support, "
                f"0 not_support ({_PAPER}; all_score of {_NUGGETIZER})",
            ),
            (
                "all_strict",
                "higher",
                "mean over answers of A_strict = |nuggets assigned support| / |nuggets| "
                f"({_PAPER}; strict_all_score of {_NUGGETIZER})",
            ),
            (
                "vital",
                "higher",
                "mean over answers with a vital nugget of V = Σ_vital s_i / |vital nuggets| "
                f"({_PAPER}; vital_score of {_NUGGETIZER}, which writes 0 where this leaves the answer out)",
            ),
            (
                "vital_strict",
                "higher",
                "mean over answers with a vital nugget of V_strict = |vital assigned support| / |vital| "
                f"({_PAPER}; strict_vital_score of {_NUGGETIZER}; the track's primary score)",
            ),
            (
                "weighted",
                "higher",
                f"mean over answers of W = Σ w_i s_i / Σ w_i, w_i = 1 vital, 0.5 okay ({_PAPER})",
            ),
            (
                "weighted_strict",
                "higher",
                f"mean over answers of W_strict = Σ w_i ss_i / Σ w_i, ss_i = 1 for support only ({_PAPER})",
            ),
            (
                "no_vital_rate",
                "none",
                "answers without a vital nugget (no vital score: missing evidence) / answers with nuggets",
            ),
            (
                "assignment_accuracy",
                "higher",
                "nuggets whose automatic assignment equals human_assignment / nuggets with both",
            ),
            (
                "assignment_kappa",
                "higher",
                "Cohen's kappa of the automatic against the human assignment over support, "
                "partial_support, not_support (the judges family's cohen_kappa)",
            ),
            (
                "unknown_answer_concept_rate",
                "lower",
                "answer concepts the ontology lacks / answer concepts read for ontology nuggets",
            ),
        ),
    ),
    params=(
        Param(
            "assignment",
            "str",
            "auto",
            "Which assignment is scored: auto (the item's assignment, else the ontology's for a concept "
            "nugget), ontology (always through the hierarchy) or human (human_assignment).",
            choices=("auto", "ontology", "human"),
        ),
        *ID_PARAMS,
    ),
)

# properties: the HAS / EXEMPT tables of kg_rageval.scoring.properties (nuggets)

CONSISTENCY = Scorer(
    name="consistency",
    target="kg_rageval.families.consistency:score_consistency",
    sections=("consistency",),
    section_required=True,
    description="Self-consistency: agreement of n answers sampled at T > 0 as concept-set agreement "
    "through the ontology (exact and ancestor-closure Jaccard), text repeats, majority share; per branch.",
    metrics=metric_specs(
        "consistency",
        "consistency",
        (
            (
                "concept_agreement.mean",
                "higher",
                "mean over records of the mean pairwise Jaccard |A ∩ B| / |A ∪ B| of the samples' "
                "concept sets (J(∅, ∅) = 1)",
            ),
            (
                "hier_agreement.mean",
                "higher",
                "the same Jaccard over ancestor-or-self closures, roots left out (a concept and its "
                "child agree in part)",
            ),
            (
                "text_agreement.mean",
                "higher",
                "mean pairwise exact match of case-folded, whitespace-collapsed texts (records whose "
                "samples all have a text)",
            ),
            ("modal_share.mean", "higher", "mean share of the samples naming the most frequent concept set"),
            ("unanimous_rate", "higher", "records whose samples all name the same concept set / records"),
            ("empty_sample_rate", "none", "samples naming no concept / samples"),
            (
                "not_in_ontology_rate",
                "lower",
                "named concept ids the ontology lacks (system fault, counted) / named ids",
            ),
            ("inactive_rate", "lower", "named ids that are deprecated or revoked / named ids"),
        ),
    ),
    params=(
        Param(
            "min_samples",
            "int",
            2,
            "Samples a record needs to be scored (fewer: a missing prediction).",
            minimum=2,
        ),
        *ID_PARAMS,
    ),
)

_CLASS_AVG = tuple(
    (f"{{p}}.{avg}.{k}", "higher", f"{avg} {k} over the {{what}} labels ({how})")
    for avg, how in (
        ("macro", "mean of the defined per-label values"),
        ("weighted", "support-weighted mean of the defined per-label values"),
        ("micro", "pooled tp / fp / fn: equal to accuracy for single-label decisions"),
    )
    for k in ("precision", "recall", "f1")
)


def _class_metrics(p: str, labels: tuple[str, ...], what: str) -> list[tuple[str, str, str]]:
    out = [(f"{p}.accuracy", "higher", f"records whose predicted {what} is the gold one / {what} decisions")]
    for lab in labels:
        out += [
            (f"{p}.{lab}.precision", "higher", f"tp / predicted {lab} (missing when never predicted)"),
            (f"{p}.{lab}.recall", "higher", f"tp / gold {lab} (missing when never gold)"),
            (f"{p}.{lab}.f1", "higher", f"2·tp / (2·tp + fp + fn) of {lab}"),
            (f"{p}.{lab}.support", "none", f"records whose gold {what} is {lab}"),
        ]
    return out + [(n.format(p=p), d, f.format(what=what)) for n, d, f in _CLASS_AVG]


ROUTING = Scorer(
    name="routing",
    target="kg_rageval.families.routing:score_routing",
    sections=("routing",),
    section_required=True,
    description="Routing: intent P/R/F1 (as scikit-learn's classification_report, zero_division=nan), "
    "routing correctness over ontology nodes with Wu-Palmer and hierarchical credit and the confusion "
    "taxonomy (ancestor, descendant, sibling branch, unrelated branch, unknown id), adaptive retrieval "
    "modes with over- and under-retrieval counted apart and cost per mode; per branch.",
    metrics=metric_specs(
        "routing",
        "routing",
        (
            *_class_metrics("intent", ("{intent:word}",), "intent"),
            ("route.accuracy", "higher", "records routed to exactly the gold node / route decisions"),
            (
                "route.wu_palmer.mean",
                "higher",
                "mean Wu-Palmer of (gold, routed) nodes, identical = 1, unknown routed node = 0",
            ),
            (
                "route.hierarchical_precision",
                "higher",
                "Σ |anc(p) ∩ anc(g)| / Σ |anc(p)| (ancestor-or-self sets, roots left out)",
            ),
            ("route.hierarchical_recall", "higher", "Σ |anc(p) ∩ anc(g)| / Σ |anc(g)|"),
            ("route.hierarchical_f1", "higher", "harmonic mean of hierarchical precision and recall"),
            ("route.ancestor_rate", "lower", "routed to an ancestor of the gold node (too general) / routes"),
            (
                "route.descendant_rate",
                "lower",
                "routed to a descendant of the gold node (too specific) / routes",
            ),
            (
                "route.sibling_branch_rate",
                "lower",
                "routed off the gold line but within a common branch below the root / routes",
            ),
            (
                "route.unrelated_branch_rate",
                "lower",
                "routed to a node sharing only the root (or nothing) with the gold node / routes",
            ),
            ("route.unknown_id_rate", "lower", "routed to a node the ontology lacks (system fault) / routes"),
            *_class_metrics("mode", ("no_retrieval", "one_shot", "iterative"), "mode"),
            (
                "mode.over_retrieval_rate",
                "lower",
                "predicted mode above gold (no_retrieval < one_shot < iterative) / mode decisions",
            ),
            ("mode.under_retrieval_rate", "lower", "predicted mode below gold / mode decisions"),
            *(
                (f"mode.{m}.cost.mean", "lower", f"mean recorded cost of the records routed to {m}")
                for m in ("no_retrieval", "one_shot", "iterative")
            ),
            ("mode.cost.mean", "lower", "mean recorded cost over the mode decisions with a cost"),
        ),
    ),
    params=ID_PARAMS,
)

REFORMULATION: tuple[Scorer, ...] = (REWRITE, ITERATIVE, NUGGETS, CONSISTENCY, ROUTING)
