"""``kg-rageval score cleaning``: ANN Recall@k from the ANN and exact ids of each query, freshness
lag (p50 / p99) from commit to searchable and the stale-cleaning rate, per slice and ontology
branch (see ``docs/ingestion.md``, *Index*). From vectors: ``kg-rageval cleaning recall``."""

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
@family_options("cleaning")
@chunk_size_option
@score_output_options
def command(
    ontology_path, ontology_format, data_path, chunk_size, rows, fmt, ci, ci_level, seed, **kwargs
) -> None:
    """Boilerplate, language ID, near duplicates, PII and Unicode health per slice and branch."""
    from kg_rageval.scoring import get_scorer

    onto = load_ontology_cli(ontology_path, ontology_format) if ontology_path else None
    evals = get_scorer("cleaning").score(
        onto, data_path, chunk_size=chunk_size, where="score cleaning", **family_kwargs("cleaning", kwargs)
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
            "micro sums over documents; _overlap: one-to-one spans sharing a character; per-language and "
            "per-PII-type tables and the PII recall failures are in meta (--format json)"
        ],
    )
