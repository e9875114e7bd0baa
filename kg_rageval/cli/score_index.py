"""``kg-rageval score index``: ANN Recall@k from the ANN and exact ids of each query, freshness
lag (p50 / p99) from commit to searchable and the stale-index rate, per slice and ontology
branch (see ``docs/ingestion.md``, *Index*). From vectors: ``kg-rageval index recall``."""

from __future__ import annotations

import click

from kg_rageval.cli.common import (
    chunk_size_option,
    data_option,
    emit_section_score,
    family_kwargs,
    family_options,
    load_ontology_cli,
    score_output_options,
)


@click.command()
@click.option(
    "--ontology",
    "-O",
    "ontology_path",
    default=None,
    help="Ontology, for the per-branch roll-up of the records' gold_node (optional).",
)
@click.option("--ontology-format", default=None, help="Loader name when the extension does not tell.")
@data_option
@family_options("index")
@chunk_size_option
@score_output_options
def command(
    ontology_path, ontology_format, data_path, chunk_size, rows, fmt, ci, ci_level, seed, **kwargs
) -> None:
    """ANN Recall@k, freshness lag p50 / p99 and stale-index rate per slice and branch."""
    from kg_rageval.scoring import get_scorer

    onto = load_ontology_cli(ontology_path, ontology_format) if ontology_path else None
    evals = get_scorer("index").score(
        onto, data_path, chunk_size=chunk_size, where="score index", **family_kwargs("index", kwargs)
    )
    emit_section_score(
        evals,
        data_path=data_path,
        onto=onto,
        rows=rows,
        fmt=fmt,
        ci=ci,
        ci_level=ci_level,
        seed=seed,
        notes=[
            "ann_recall@K: ann-benchmarks tie rule (distance <= k-th exact distance + 1e-3) where the "
            "records give distances, else id overlap; a lag quantile q needs ceil(1/(1-q)) lags"
        ],
    )
