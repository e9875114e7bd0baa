"""``kg-rageval score index``: ANN Recall@k from the ANN and exact ids of each query, freshness
lag (p50 / p99) from commit to searchable and the stale-index rate, per slice and ontology
branch (see ``docs/ingestion.md``, *Index*). From vectors: ``kg-rageval index recall``."""

from __future__ import annotations

from kg_rageval.cli.section_score import section_score_command

command = section_score_command(
    "index",
    summary="ANN Recall@k, freshness lag p50 / p99 and stale-index rate per slice and branch.",
    ontology_help="Ontology, for the per-branch roll-up of the records' gold_node (optional).",
    notes=[
        "ann_recall@K: ann-benchmarks tie rule (distance <= k-th exact distance + 1e-3) where the "
        "records give distances, else id overlap; a lag quantile q needs ceil(1/(1-q)) lags"
    ],
)
