"""``kg-rageval score consistency``: self-consistency of n answers sampled at a temperature above
0, as concept-set agreement through the ontology, per ontology branch and slice (see
``docs/consistency.md``)."""

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
    "--ontology", "-O", "ontology_path", required=True, help="Ontology the concepts are compared through."
)
@click.option("--ontology-format", default=None, help="Loader name when the extension does not tell.")
@data_option
@family_options("consistency")
@chunk_size_option
@score_output_options
def command(
    ontology_path, ontology_format, data_path, chunk_size, rows, fmt, ci, ci_level, seed, **kwargs
) -> None:
    """Concept-set agreement (exact and through the hierarchy) of sampled answers."""
    from kg_rageval.scoring import get_scorer

    onto = load_ontology_cli(ontology_path, ontology_format)
    evals = get_scorer("consistency").score(
        onto,
        data_path,
        chunk_size=chunk_size,
        where="score consistency",
        **family_kwargs("consistency", kwargs),
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
    )
