"""Index evaluation (issue #30, *Index*; ``docs/ingestion.md``): ANN Recall@k against exact
brute-force search with the ann-benchmarks tie rule, freshness lag from commit to searchable
(p50 / p99) and the share of queries answered against a stale index — from records
(:mod:`.score`, the ``index`` family) or from vectors (:mod:`.exact`, :mod:`.backends`,
``kg-rageval index recall``)."""

from kg_rageval.families.index.score import EPSILON, IndexFamily, min_rows_for, query_hits, score_index

__all__ = ["EPSILON", "IndexFamily", "min_rows_for", "query_hits", "score_index"]
