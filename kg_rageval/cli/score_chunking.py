"""``kg-rageval score chunking``: chunk traceability, metadata preservation (parent section,
parent document, ontology ancestry), structure cut rate and optional coherence, per document
class and ontology branch (see ``docs/ingestion.md``)."""

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
    help="Ontology: checks each chunk's ancestry as a root-to-category path and each category id; "
    "gives the per-branch roll-up (optional).",
)
@click.option("--ontology-format", default=None, help="Loader name when the extension does not tell.")
@data_option
@family_options("chunking")
@chunk_size_option
@score_output_options
def command(
    ontology_path, ontology_format, data_path, chunk_size, rows, fmt, ci, ci_level, seed, **kwargs
) -> None:
    """Traceability, metadata preservation, structure cut rate (and coherence) of chunks."""
    from kg_rageval.scoring import get_scorer

    onto = load_ontology_cli(ontology_path, ontology_format) if ontology_path else None
    evals = get_scorer("chunking").score(
        onto, data_path, chunk_size=chunk_size, where="score chunking", **family_kwargs("chunking", kwargs)
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
        notes=["ancestry checked for shape only (no -O ontology)"] if onto is None else [],
    )
