"""The one ``kg-rageval score <family>`` command of a section family (parsing, chunking, index,
consistency, …): ``--ontology``/``--ontology-format``, ``--data``, the family's own options
(:func:`~kg_rageval.cli.common.family_options`), ``--chunk-size`` and the score output options,
then :func:`~kg_rageval.cli.common.emit_section_score`. A family whose command needs more
(``score nuggets --trec``) writes its own on the same helpers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

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


def section_score_command(
    family: str,
    *,
    summary: str,
    ontology_help: str,
    ontology_required: bool = False,
    notes: Sequence[str] = (),
    notes_without_ontology: Sequence[str] = (),
    unit: str = "records",
) -> click.Command:
    """The click command of ``kg-rageval score <family>``.

    ``summary`` is its help line; ``ontology_help`` the help of ``--ontology`` (required when
    ``ontology_required``); ``notes`` are printed under the text table, and
    ``notes_without_ontology`` too when no ontology was given."""

    def command(
        ontology_path: str | None,
        ontology_format: str | None,
        data_path: str,
        chunk_size: int | None,
        rows: bool,
        fmt: str,
        ci: int,
        ci_level: float,
        seed: int,
        **kwargs: Any,
    ) -> None:
        from kg_rageval.scoring import get_scorer

        onto = load_ontology_cli(ontology_path, ontology_format) if ontology_path else None
        evals = get_scorer(family).score(
            onto,
            data_path,
            chunk_size=chunk_size,
            where=f"score {family}",
            **family_kwargs(family, kwargs),
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
            unit=unit,
            notes=[*notes, *(notes_without_ontology if onto is None else ())],
        )

    command.__doc__ = summary
    decorators: list[Callable[[Any], Any]] = [
        click.command(name=family),
        click.option(
            "--ontology",
            "-O",
            "ontology_path",
            required=ontology_required,
            default=None,
            help=ontology_help,
        ),
        click.option("--ontology-format", default=None, help="Loader name when the extension does not tell."),
        data_option,
        family_options(family),
        chunk_size_option,
        score_output_options,
    ]
    fn: Any = command
    for deco in reversed(decorators):
        fn = deco(fn)
    return fn  # type: ignore[no-any-return]
