"""``kg-rageval score relations``: relation answers against the knowledge graph — triple
P/R/F1 with hierarchy-aware partial credit, QALD answer sets with NIL, KG-grounded
faithfulness of claim triples (see ``docs/relations.md``)."""

from __future__ import annotations

import click

from .common import (data_option, emit, families_text, family_kwargs, family_options, format_option, load_ontology_cli,
                     ontology_format_option, ontology_option, payload_head)


@click.command()
@ontology_option
@ontology_format_option
@data_option
@family_options("relations")
@click.option("--rows/--no-rows", default=False, show_default=True, help="Include per-record rows in JSON output.")
@format_option
def command(ontology_path, ontology_format, data_path, rows, fmt, **kwargs) -> None:
    """Triple P/R/F1 (exact and soft), answer-set P/R/F1 with NIL, KG-grounded faithfulness."""
    from ..contract import get_scorer
    from ..records import read_records, slice_keys

    onto = load_ontology_cli(ontology_path, ontology_format)
    records = read_records(data_path)
    evals = get_scorer("relations").score(onto, records, **family_kwargs("relations", kwargs))
    keys = [f"slice:{k}" for k in slice_keys(records)]
    payload = {
        **payload_head("score relations", data_path, len(records), onto),
        "families": {name: ev.to_dict(rows=rows, breakdowns=keys) for name, ev in evals.items()},
    }
    emit(payload, fmt, lambda p: "\n".join([f"{p['n_records']} records"] + families_text(evals)))
