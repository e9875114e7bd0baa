"""Retrieval evaluation: trec_eval's measures (exact under the ``trec_eval`` aggregation),
TREC/BEIR/JSON I/O, fusion, N-system comparison, reranking delta,
filter replay with entitlement, false exclusion and its attribution, per ontology node.

See ``docs/retrieval.md``. Heavy pieces import lazily; this package imports only numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kg_rageval.base.imports import lazy_exports

_WHERE = {
    "kg_rageval.contract.measures": (
        "MeasureSpec",
        "parse_measure",
        "parse_measures",
    ),
    ".compare": (
        "PairedComparison",
        "bootstrap_ci",
        "compare_runs",
        "paired_compare",
        "permutation_p",
    ),
    ".corpus": (
        "DEFAULT_ENTITLEMENT_FIELDS",
        "Corpus",
        "read_corpus",
    ),
    ".files": (
        "MeasuresFamily",
        "RunScore",
        "query_gold_nodes",
        "read_query_nodes",
        "score_run",
        "to_evaluation",
    ),
    ".filters": (
        "OPS",
        "Filter",
        "parse_filters",
        "predicate_counts",
        "replay",
    ),
    ".fusion": (
        "alpha_sweep",
        "convex",
        "convex_runs",
        "normalise",
        "rrf",
        "rrf_runs",
    ),
    ".measures": (
        "Aggregate",
        "PerQueryMeasures",
        "aggregate",
        "compute",
        "trec_eval_lines",
    ),
    ".metrics": (
        "PerQuery",
        "RetrievalFamily",
        "evaluate",
        "evaluate_dicts",
        "evaluate_run",
        "metric_names",
    ),
    ".preference": (
        "HardSoftResult",
        "PreferenceFamily",
        "hard_vs_soft",
        "score_preference",
    ),
    ".rerank": ("rerank_delta",),
    ".runs": (
        "Qrels",
        "Run",
        "Vocab",
    ),
    ".score": (
        "category_diagnosis",
        "score_retrieval",
    ),
    ".significance": (
        "Comparison",
        "branch_masks",
        "compare_systems",
        "html_section",
        "render",
    ),
    ".trec": (
        "load_qrels",
        "load_run",
        "read_beir_qrels",
        "read_json_qrels",
        "read_json_run",
        "read_qrels",
        "read_run",
        "write_beir_qrels",
        "write_qrels",
        "write_run",
    ),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

__all__ = [
    "Aggregate",
    "Comparison",
    "MeasureSpec",
    "MeasuresFamily",
    "PerQueryMeasures",
    "RunScore",
    "aggregate",
    "alpha_sweep",
    "branch_masks",
    "compare_systems",
    "compute",
    "convex",
    "convex_runs",
    "html_section",
    "load_qrels",
    "load_run",
    "normalise",
    "parse_measure",
    "parse_measures",
    "query_gold_nodes",
    "read_json_qrels",
    "read_json_run",
    "read_query_nodes",
    "render",
    "rerank_delta",
    "score_run",
    "to_evaluation",
    "trec_eval_lines",
    "Corpus",
    "DEFAULT_ENTITLEMENT_FIELDS",
    "Filter",
    "HardSoftResult",
    "OPS",
    "PairedComparison",
    "PreferenceFamily",
    "PerQuery",
    "Qrels",
    "RetrievalFamily",
    "Run",
    "Vocab",
    "bootstrap_ci",
    "category_diagnosis",
    "compare_runs",
    "evaluate",
    "evaluate_dicts",
    "evaluate_run",
    "hard_vs_soft",
    "metric_names",
    "paired_compare",
    "parse_filters",
    "permutation_p",
    "predicate_counts",
    "read_beir_qrels",
    "read_corpus",
    "read_qrels",
    "read_run",
    "replay",
    "rrf",
    "rrf_runs",
    "score_preference",
    "score_retrieval",
    "write_beir_qrels",
    "write_qrels",
    "write_run",
]


__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF, globals(), __all__)


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from kg_rageval.contract.measures import MeasureSpec, parse_measure, parse_measures
    from kg_rageval.families.retrieval.compare import (
        PairedComparison,
        bootstrap_ci,
        compare_runs,
        paired_compare,
        permutation_p,
    )
    from kg_rageval.families.retrieval.corpus import DEFAULT_ENTITLEMENT_FIELDS, Corpus, read_corpus
    from kg_rageval.families.retrieval.files import (
        MeasuresFamily,
        RunScore,
        query_gold_nodes,
        read_query_nodes,
        score_run,
        to_evaluation,
    )
    from kg_rageval.families.retrieval.filters import OPS, Filter, parse_filters, predicate_counts, replay
    from kg_rageval.families.retrieval.fusion import (
        alpha_sweep,
        convex,
        convex_runs,
        normalise,
        rrf,
        rrf_runs,
    )
    from kg_rageval.families.retrieval.measures import (
        Aggregate,
        PerQueryMeasures,
        aggregate,
        compute,
        trec_eval_lines,
    )
    from kg_rageval.families.retrieval.metrics import (
        PerQuery,
        RetrievalFamily,
        evaluate,
        evaluate_dicts,
        evaluate_run,
        metric_names,
    )
    from kg_rageval.families.retrieval.preference import (
        HardSoftResult,
        PreferenceFamily,
        hard_vs_soft,
        score_preference,
    )
    from kg_rageval.families.retrieval.rerank import rerank_delta
    from kg_rageval.families.retrieval.runs import Qrels, Run, Vocab
    from kg_rageval.families.retrieval.score import category_diagnosis, score_retrieval
    from kg_rageval.families.retrieval.significance import (
        Comparison,
        branch_masks,
        compare_systems,
        html_section,
        render,
    )
    from kg_rageval.families.retrieval.trec import (
        load_qrels,
        load_run,
        read_beir_qrels,
        read_json_qrels,
        read_json_run,
        read_qrels,
        read_run,
        write_beir_qrels,
        write_qrels,
        write_run,
    )
