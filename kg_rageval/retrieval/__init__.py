"""Retrieval evaluation: trec_eval-equal metrics, TREC/BEIR I/O, fusion, paired comparison,
filter replay with entitlement, false exclusion and its attribution, per ontology node.

See ``docs/retrieval.md``. Heavy pieces import lazily; this package imports only numpy.
"""

from .compare import PairedComparison, bootstrap_ci, compare_runs, paired_compare, permutation_p
from .corpus import DEFAULT_ENTITLEMENT_FIELDS, Corpus, read_corpus
from .filters import OPS, Filter, parse_filters, predicate_counts, replay
from .fusion import rrf, rrf_runs
from .metrics import PerQuery, RetrievalFamily, evaluate, evaluate_dicts, evaluate_run, metric_names
from .preference import HardSoftResult, PreferenceFamily, hard_vs_soft, score_preference
from .runs import Qrels, Run, Vocab
from .score import category_diagnosis, score_retrieval
from .trec import read_beir_qrels, read_qrels, read_run, write_beir_qrels, write_qrels, write_run

__all__ = [
    "Corpus", "DEFAULT_ENTITLEMENT_FIELDS", "Filter", "HardSoftResult", "OPS", "PairedComparison", "PreferenceFamily",
    "PerQuery", "Qrels", "RetrievalFamily", "Run", "Vocab", "bootstrap_ci", "category_diagnosis", "compare_runs",
    "evaluate", "evaluate_dicts", "evaluate_run", "hard_vs_soft", "metric_names", "paired_compare", "parse_filters",
    "permutation_p", "predicate_counts", "read_beir_qrels", "read_corpus", "read_qrels", "read_run",
    "replay", "rrf", "rrf_runs", "score_preference", "score_retrieval", "write_beir_qrels", "write_qrels", "write_run",
]
