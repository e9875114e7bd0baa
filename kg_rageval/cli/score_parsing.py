"""``kg-rageval score parsing``: OCR / text-extraction quality against hand-cleaned references —
CER and WER (jiwer 4 default normalisation), extraction-length ratio, TEDS / TEDS-S of HTML
tables, per document class (see ``docs/ingestion.md``)."""

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
@family_options("parsing")
@chunk_size_option
@score_output_options
def command(
    ontology_path, ontology_format, data_path, chunk_size, rows, fmt, ci, ci_level, seed, **kwargs
) -> None:
    """CER, WER, extraction-length ratio and TEDS / TEDS-S per document class."""
    from kg_rageval.scoring import get_scorer

    onto = load_ontology_cli(ontology_path, ontology_format) if ontology_path else None
    evals = get_scorer("parsing").score(
        onto, data_path, chunk_size=chunk_size, where="score parsing", **family_kwargs("parsing", kwargs)
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
            "length_ratio: duplicated or wrong text of the right length still scores 1.0; read it beside cer"
        ],
    )
