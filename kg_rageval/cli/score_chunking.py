"""``kg-rageval score chunking``: chunk traceability, metadata preservation (parent section,
parent document, ontology ancestry), structure cut rate and optional coherence, per document
class and ontology branch (see ``docs/ingestion.md``)."""

from __future__ import annotations

import click

from kg_rageval.cli.common import (
    chunk_size_option,
    data_option,
    emit_score,
    families_text,
    family_kwargs,
    family_options,
    load_ontology_cli,
    score_output_options,
    score_payload,
    with_intervals,
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
    ev = evals.single
    keys = [k for k in ev.keys if k.startswith("slice:")]
    canonical = with_intervals(evals, ci, ci_level, seed) if len(ev) else evals.metrics()
    n_read = len(ev) + len(ev.unscored)
    payload = score_payload(
        evals, data_path=data_path, n_records=n_read, onto=onto, rows=rows, breakdowns=keys, metrics=canonical
    )
    emit_score(
        payload,
        fmt,
        lambda p: "\n".join(
            [f"{p['counts']['records']} records"]
            + families_text(evals, "scored records", canonical)
            + (["ancestry checked for shape only (no -O ontology)"] if onto is None else [])
        ),
    )
