"""``kg-rageval score <family>`` for a family without a command of its own: a plugin family
(entry point group ``kg_rageval.families``, ``docs/plugins.md``). The command is built from the
family's declaration — its inputs and parameters are the flags, as for every built-in family —
and writes the one score envelope (:func:`~kg_rageval.cli.common.score_payload`)."""

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
    ontology_format_option,
    ontology_option,
    score_output_options,
    score_payload,
    with_intervals,
)


def make_command(family: str) -> click.Command:
    """The ``score <family>`` command of a registered family (flags from its declaration)."""
    from kg_rageval.scoring import get_scorer

    sc = get_scorer(family)

    @click.command(name=family, help=sc.description or f"Score the {family} family.")
    @ontology_option
    @ontology_format_option
    @data_option
    @family_options(family)
    @chunk_size_option
    @score_output_options
    def command(
        ontology_path, ontology_format, data_path, chunk_size, rows, fmt, ci, ci_level, seed, **kwargs
    ) -> None:
        onto = load_ontology_cli(ontology_path, ontology_format)
        evals = get_scorer(family).score(
            onto, data_path, chunk_size=chunk_size, where=f"score {family}", **family_kwargs(family, kwargs)
        )
        canonical = with_intervals(evals, ci, ci_level, seed)
        keys = sorted({k for ev in evals.values() for k in ev.keys if k.startswith("slice:")})
        payload = score_payload(
            evals,
            data_path=data_path,
            n_records=_count_records(data_path),
            onto=onto,
            rows=rows,
            breakdowns=keys,
            metrics=canonical,
        )
        emit_score(
            payload,
            fmt,
            lambda p: "\n".join(
                [f"{p['counts']['records']} records"] + families_text(evals, metrics=canonical)
            ),
        )

    return command


def _count_records(path: str) -> int:
    from kg_rageval.records import iter_record_chunks

    return sum(len(ch) for ch in iter_record_chunks(path, 65_536))
