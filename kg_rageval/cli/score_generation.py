"""``kg-rageval score generation``: faithfulness, correctness, refusal, unseen concepts and
calibration over a records file (see ``docs/generation.md``)."""

from __future__ import annotations

import click

from .common import (data_option, emit, families_text, family_kwargs, family_options, format_option, load_ontology_cli,
                     ontology_format_option, ontology_option, payload_head)


@click.command()
@ontology_option
@ontology_format_option
@data_option
@family_options("generation")
@click.option("--rows/--no-rows", default=True, show_default=True, help="Include per-record rows in JSON output.")
@format_option
def command(ontology_path, ontology_format, data_path, rows, fmt, **kwargs) -> None:
    """Faithfulness, answer correctness, refusal behaviour, unseen concepts and calibration."""
    from ..contract import get_scorer
    from ..generation.fields import all_slice_keys
    from ..records import read_records

    onto = load_ontology_cli(ontology_path, ontology_format)
    records = read_records(data_path)
    evals = get_scorer("generation").score(onto, records, where="score generation",
                                           **family_kwargs("generation", kwargs))
    keys = all_slice_keys(records)[1:]
    payload = {
        **payload_head("score generation", data_path, len(records), onto),
        "families": {name: ev.to_dict(rows=rows, breakdowns=keys) for name, ev in evals.items()},
    }
    emit(payload, fmt, lambda p: _render(p, evals))


def _render(payload: dict, evals: dict) -> str:
    parts = [f"{payload['n_records']} records, ontology {payload['ontology']['source']}"]
    parts.extend(families_text(evals, "scored rows"))
    for ev in evals.values():
        orphan = ev.meta.get("n_judgments_without_record")
        if orphan:
            parts.append(f"warning: {orphan} judgments name no record of the data file, e.g. "
                         + ", ".join(repr(i) for i in ev.meta["judgments_without_record"][:5]))
    return "\n".join(parts)
