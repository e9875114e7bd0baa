"""``kg-rageval score relations``: relation answers against the knowledge graph — triple
P/R/F1 with hierarchy-aware partial credit, QALD answer sets with NIL, KG-grounded
faithfulness of claim triples (see ``docs/relations.md``)."""

from __future__ import annotations

import click

from kg_rageval.cli.common import (
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


@click.command()
@ontology_option
@ontology_format_option
@data_option
@family_options("relations")
@score_output_options
def command(ontology_path, ontology_format, data_path, rows, fmt, ci, ci_level, seed, **kwargs) -> None:
    """Triple P/R/F1 (exact and soft), answer-set P/R/F1 with NIL, KG-grounded faithfulness."""
    from kg_rageval.records import read_records, slice_keys
    from kg_rageval.scoring import get_scorer

    onto = load_ontology_cli(ontology_path, ontology_format)
    records = read_records(data_path)
    evals = get_scorer("relations").score(onto, records, **family_kwargs("relations", kwargs))
    canonical = with_intervals(evals, ci, ci_level, seed)
    keys = [f"slice:{k}" for k in slice_keys(records)]
    payload = score_payload(
        evals,
        data_path=data_path,
        n_records=len(records),
        onto=onto,
        rows=rows,
        breakdowns=keys,
        metrics=canonical,
    )
    emit_score(
        payload,
        fmt,
        lambda p: "\n".join([f"{p['counts']['records']} records"] + families_text(evals, metrics=canonical)),
    )
