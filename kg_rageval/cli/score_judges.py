"""``kg-rageval score judges``: judge calibration against human labels, PPI estimates,
position bias and agreement between judges over the records' ``judges`` sections; optionally
judging the records first with a live OpenAI-compatible endpoint (see ``docs/judges.md``).
The flags come from the family's declaration (:mod:`kg_rageval.scoring.quality`)."""

from __future__ import annotations

import click

from kg_rageval.cli.common import (
    data_option,
    emit_score,
    families_text,
    family_kwargs,
    family_options,
    score_output_options,
    score_payload,
    with_intervals,
)


@click.command()
@data_option
@click.option(
    "--ontology",
    "-O",
    "ontology_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Ontology, for the per-branch roll-up (optional).",
)
@click.option("--ontology-format", default=None, help="Loader name when the extension does not tell.")
@family_options("judge")
@click.option(
    "--write-records",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="With --endpoint: write the records with the live judge's entries here (JSONL).",
)
@score_output_options
def command(
    data_path, ontology_path, ontology_format, write_records, rows, fmt, ci, ci_level, seed, **kwargs
) -> None:
    """Judge calibration: accuracy, Cohen's kappa, false approvals/rejections, PPI, position bias.

    JSON: the envelope of every ``score`` command (``score_payload``; the metrics carry the
    family's Wilson / PPI intervals, ``--ci N`` replaces them with bootstrap ones) plus
    ``rollup`` (member → node → metrics, with ``-O``) and ``judge_usage`` (the live judge's
    calls, with ``--endpoint``)."""
    from kg_rageval.cli.common import load_ontology_cli
    from kg_rageval.records import read_records
    from kg_rageval.scoring import get_scorer

    opts = family_kwargs("judge", kwargs)
    from kg_rageval.base.outputs import refuse_overwrite

    refuse_overwrite({"--write-records": write_records}, {"--data": data_path, "--ontology": ontology_path})
    records = read_records(data_path)
    onto = load_ontology_cli(ontology_path, ontology_format) if ontology_path else None
    usage = None
    if opts.get("endpoint") or opts.get("model"):
        from kg_rageval.families.judges.run import LIVE_PARAMS, live_judge

        records, usage = live_judge(records, **{k: opts.pop(k) for k in LIVE_PARAMS if k in opts})
        if write_records:
            from kg_rageval.records import write_records as write

            write(write_records, records)
    bound = get_scorer("judge").bind(onto, where="score judges", **opts)
    evals = bound(records)
    if usage is not None:
        for ev in evals.values():
            ev.meta["judge_usage"] = usage
    canonical = with_intervals(evals, ci, ci_level, seed)
    keys = sorted(
        {k for ev in evals.values() for k in ev.keys if k.startswith("slice:") or k == "length_bin"}
    )
    payload = score_payload(
        evals,
        data_path=data_path,
        n_records=len(records),
        onto=onto,
        rows=rows,
        breakdowns=keys,
        metrics=canonical,
    )
    payload["command"] = "score judges"
    if onto is not None:
        payload["rollup"] = {name: _rollup(ev, onto) for name, ev in evals.items()}
    if usage is not None:
        payload["judge_usage"] = usage
    emit_score(payload, fmt, lambda p: _render(p, evals, canonical))


def _rollup(ev, onto) -> dict:
    from kg_rageval.audit.gates import metric_dict
    from kg_rageval.audit.pernode import safe_rollup

    return {
        n: {"n": e["n"], "metrics": {k: metric_dict(m) for k, m in e["metrics"].items()}}
        for n, e in safe_rollup(ev, onto).items()
    }


def _render(payload: dict, evals, metrics: dict) -> str:
    cal = evals["judge_calibration"]
    parts = [
        f"{payload['counts']['records']} records; judge {cal.meta.get('judge')!r} calibrated"
        + (f", compared with {cal.meta['second_judge']!r}" if cal.meta.get("second_judge") else "")
    ]
    shown = _ShownSet({name: _Shown(ev) for name, ev in evals.items()})
    parts.extend(families_text(shown, "rows", metrics))
    usage = cal.meta.get("judge_usage")
    if usage:
        u = usage["usage"]
        parts.append(
            f"\nlive judge {u['model']}: {u['requests']} requests, {u['cache_hits']} cache hits, "
            f"{u['retries']} retries, {u['failures']} failures, {u['total_tokens']} tokens, "
            f"${u['cost_usd']:.6f}"
        )
    return "\n".join(parts)


class _ShownSet(dict):
    """The members as shown, under the family's name (for the canonical metric names)."""

    family = "judge"


class _Shown:
    """An evaluation whose per-rubric metrics of absent rubrics are left out of the table."""

    def __init__(self, ev) -> None:
        self.ev, self.unscored, self.unscored_counts = ev, ev.unscored, ev.unscored_counts

    def __len__(self) -> int:
        return len(self.ev)

    def metrics(self) -> dict:
        ms = self.ev.metrics()
        absent = {
            k.split(".", 1)[0]
            for k, m in ms.items()
            if k.endswith(".invalid_output_rate") and m.value is None
        }
        return {k: m for k, m in ms.items() if k.split(".", 1)[0] not in absent or "." not in k}
