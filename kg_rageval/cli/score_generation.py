"""``kg-rageval score generation``: faithfulness, correctness, refusal, unseen concepts and
calibration over a records file (see ``docs/generation.md``)."""

from __future__ import annotations

import click

from .common import (data_option, emit, families_text, format_option, load_ontology_cli,
                     ontology_format_option, ontology_option, payload_head)


@click.command()
@ontology_option
@ontology_format_option
@data_option
@click.option("--judgments", "judgments_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help='Faithfulness judgments JSONL: {"id": record id, "judgment": object or raw judge text}.')
@click.option("--judge", default="none", show_default=True, metavar="none|ontology|nli|MODULE:CALLABLE",
              help="Judge records without a judgment: the deterministic ontology verifier, an NLI "
                   "cross-encoder or a plugin (module:callable).")
@click.option("--nli-model", type=click.Path(exists=True, file_okay=False), default=None,
              help="Local NLI cross-encoder directory (for --judge nli; never downloaded).")
@click.option("--bins", type=click.IntRange(min=1), default=10, show_default=True, help="Calibration bins (equal width).")
@click.option("--strip-citations/--keep-citations", "strip_citations", default=True, show_default=True,
              help="Remove inline citation markers ([doc-12], [1]) from answers before exact match / token F1.")
@click.option("--rows/--no-rows", default=True, show_default=True, help="Include per-record rows in JSON output.")
@format_option
def command(ontology_path, ontology_format, data_path, judgments_path, judge, nli_model, bins, strip_citations, rows, fmt) -> None:
    """Faithfulness, answer correctness, refusal behaviour, unseen concepts and calibration."""
    from ..generation import load_judgments, score_generation
    from ..generation.judge_names import resolve_judge
    from ..generation.fields import all_slice_keys
    from ..records import read_records

    onto = load_ontology_cli(ontology_path, ontology_format)
    records = read_records(data_path)
    judgments = load_judgments(judgments_path) if judgments_path else None
    judge_fn = resolve_judge(judge, onto, nli_model=nli_model, key="--judge")
    evals = score_generation(records, onto, judgments=judgments, judge=judge_fn, n_bins=bins,
                             strip_citations=strip_citations)
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
