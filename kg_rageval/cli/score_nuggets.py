"""``kg-rageval score nuggets``: TREC 2024 RAG Track nugget scores of answers — All, Vital and
Weighted, strict and with partial credit — from records with a ``nuggets`` section or from the
track's assignment files (``--trec``), with judge–human agreement (see ``docs/nuggets.md``)."""

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
    help="Ontology: assigns concept nuggets through the hierarchy; per-branch roll-up (optional).",
)
@click.option("--ontology-format", default=None, help="Loader name when the extension does not tell.")
@data_option
@click.option(
    "--trec",
    is_flag=True,
    help="--data is a TREC RAG (AutoNuggetizer) assignment file, one answer a line, not records.",
)
@click.option(
    "--nugget-file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="With --trec: the track's nugget file (the importance of nuggets the assignments lack it for).",
)
@click.option(
    "--human",
    "human_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="With --trec: an assignment file of human labels (human_assignment, for the agreement).",
)
@family_options("nuggets")
@chunk_size_option
@score_output_options
def command(
    ontology_path,
    ontology_format,
    data_path,
    trec,
    nugget_file,
    human_path,
    chunk_size,
    rows,
    fmt,
    ci,
    ci_level,
    seed,
    **kwargs,
) -> None:
    """All / Vital / Weighted nugget scores (strict and not), averaged over answers."""
    from kg_rageval.base.errors import InputError
    from kg_rageval.scoring import get_scorer

    if (nugget_file or human_path) and not trec:
        raise InputError("--nugget-file and --human read TREC RAG files: pass --trec")
    onto = load_ontology_cli(ontology_path, ontology_format) if ontology_path else None
    data: object = data_path
    if trec:
        from kg_rageval.families.nuggets.inputs import read_trec_nuggets

        data = read_trec_nuggets(data_path, nuggets=nugget_file, human=human_path)
    evals = get_scorer("nuggets").score(
        onto,
        data,
        chunk_size=None if trec else chunk_size,
        where="score nuggets",
        **family_kwargs("nuggets", kwargs),
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
        unit="answers",
        member="nuggets",
        notes=[
            "vital, vital_strict: answers without a vital nugget are left out (no_vital_rate counts them)"
        ],
    )
