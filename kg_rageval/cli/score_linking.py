"""``kg-rageval score linking``: entity linking and NIL evaluation of the ``mentions`` section
(see ``docs/linking.md``)."""

from __future__ import annotations

import click

from kg_rageval.cli.common import (
    breakdown_keys,
    chunk_size_option,
    data_option,
    emit_score,
    family_kwargs,
    family_options,
    load_ontology_cli,
    metrics_table,
    ontology_format_option,
    ontology_option,
    score_output_options,
    score_payload,
    short_metrics,
    table,
    with_intervals,
)


@click.command()
@ontology_option
@ontology_format_option
@data_option
@family_options("linking")
@click.option(
    "--breakdown",
    "breakdowns",
    multiple=True,
    metavar="KEY",
    help="Metrics per value of a row key: gold_node, node_type, branch, mention_type, "
    "outcome or slice:<name> (repeatable). Slices are included by default.",
)
@click.option(
    "--sweep/--no-sweep",
    default=True,
    show_default=True,
    help="Confidence sweep (P/R at score thresholds) when every prediction has a score.",
)
@chunk_size_option
@score_output_options
def command(
    ontology_path,
    ontology_format,
    data_path,
    breakdowns,
    sweep,
    chunk_size,
    rows,
    fmt,
    ci,
    ci_level,
    seed,
    **kwargs,
) -> None:
    """Mention detection, disambiguation, strong_*_match (overlap_*_match with --overlap), NIL handling and hierarchy-aware errors."""
    from kg_rageval.families.linking import confidence_sweep
    from kg_rageval.scoring import get_scorer

    onto = load_ontology_cli(ontology_path, ontology_format)
    result = get_scorer("linking").score(
        onto, data_path, chunk_size=chunk_size, **family_kwargs("linking", kwargs)
    )
    ev = result.single
    keys = breakdown_keys(ev, breakdowns)
    canonical = with_intervals(result, ci, ci_level, seed)
    n_read = ev.meta["records_scored"] + len(ev.unscored)  # every record is scored or unscored
    payload = score_payload(
        result,
        data_path=data_path,
        n_records=n_read,
        onto=onto,
        rows=rows,
        breakdowns=keys,
        metrics=canonical,
    )
    payload["confidence_sweep"] = confidence_sweep(ev) if sweep else None
    emit_score(payload, fmt, lambda p: _render(p, ev, keys, short_metrics(canonical, "linking")))


def _render(payload: dict, ev, keys: list[str], metrics: dict) -> str:
    meta = ev.meta
    parts = [
        f"{payload['counts']['records']} records read, {meta.get('records_scored', 0)} scored, "
        f"{len(ev)} rows ({meta.get('alignment')} alignment)"
    ]
    if ev.unscored:
        parts.append("unscored: " + ", ".join(f"{k}={v}" for k, v in ev.unscored_counts.items()))
    parts.append(metrics_table(metrics))
    mp = ev.family.match_prefix  # "strong" (identical spans) or "overlap"
    for k in keys:
        rows = []
        for value, g in ev.breakdown(k).items():
            m = g["metrics"]
            rows.append(
                [
                    str(value),
                    g["n"],
                    m["mention_f1"].value,
                    m[f"{mp}_all_match_f1"].value,
                    m[f"{mp}_link_match_f1"].value,
                    m["over_links"].value,
                    m["abstentions"].value,
                ]
            )
        parts.append(f"\n== by {k}")
        parts.append(table(rows, [k, "rows", "mention_f1", "all_f1", "link_f1", "over_links", "abstentions"]))
    sweep = payload.get("confidence_sweep")
    if sweep:
        step = max(1, len(sweep) // 10)
        rows = [
            [
                s["threshold"],
                s["n_pred"],
                s[f"{mp}_all_match_precision"],
                s[f"{mp}_all_match_recall"],
                s[f"{mp}_link_match_precision"],
                s[f"{mp}_link_match_recall"],
            ]
            for s in sweep[::step]
        ]
        parts.append("\n== confidence sweep (predictions with score >= threshold)")
        parts.append(table(rows, ["threshold", "n_pred", "all_P", "all_R", "link_P", "link_R"]))
    return "\n".join(parts)
