"""``kg-rageval score hierarchy``: hierarchical P/R/F1, Wu-Palmer and the confusion taxonomy
over the ``labels`` section of a records file."""

from __future__ import annotations

import click

from kg_rageval.cli.common import (
    canonical_dicts,
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

_HEADLINE = (
    "hierarchical_precision",
    "hierarchical_recall",
    "hierarchical_f1",
    "macro_hierarchical_precision",
    "macro_hierarchical_recall",
    "macro_hierarchical_f1",
    "exact_accuracy",
    "wu_palmer",
    "errors",
    "mean_error_distance",
)


@click.command()
@ontology_option
@ontology_format_option
@data_option
@family_options("hierarchy")
@click.option(
    "--branch-depth",
    type=int,
    default=2,
    show_default=True,
    help="Per-branch breakdown down to this depth (root = 0).",
)
@click.option("--top", type=int, default=10, show_default=True, help="Most frequent confused pairs shown.")
@chunk_size_option
@score_output_options
def command(
    ontology_path,
    ontology_format,
    data_path,
    branch_depth,
    top,
    chunk_size,
    rows,
    fmt,
    ci,
    ci_level,
    seed,
    **kwargs,
) -> None:
    """Hierarchical P/R/F1, Wu-Palmer and the confusion taxonomy (labels section)."""
    from kg_rageval.families.hierarchy import confused_pairs, relation_counts
    from kg_rageval.scoring import get_scorer

    onto = load_ontology_cli(ontology_path, ontology_format)
    result = get_scorer("hierarchy").score(
        onto, data_path, chunk_size=chunk_size, **family_kwargs("hierarchy", kwargs)
    )
    ev = result.single
    canonical = with_intervals(result, ci, ci_level, seed)
    metrics = short_metrics(canonical, "hierarchy")
    branches = {
        node: {
            "n": g["n"],
            "depth": g["depth"],
            "metrics": canonical_dicts("hierarchy", g["metrics"], _HEADLINE),
        }
        for node, g in ev.rollup(onto, max_depth=branch_depth).items()
    }
    slice_keys = [k for k in ev.keys if k.startswith("slice:")]
    n_read = len(ev) + len(ev.unscored)
    payload = score_payload(
        result,
        data_path=data_path,
        n_records=n_read,
        onto=onto,
        rows=rows,
        breakdowns=slice_keys,
        metrics=canonical,
    )
    payload["relations"] = relation_counts(ev)
    payload["confused_pairs"] = confused_pairs(ev, top=top)
    payload["branches"] = branches

    def render(_: dict) -> str:
        out = [
            f"hierarchy: {len(ev)} records scored from {data_path}"
            + (f", {sum(ev.unscored_counts.values())} unscored" if ev.unscored else "")
        ]
        out.append(metrics_table({k: metrics[k] for k in _HEADLINE}))
        rel = payload["relations"]
        if rel:
            n_err = metrics["errors"].value or 0
            rows = [
                [name, cnt, (cnt / n_err) if (name != "exact" and n_err) else None]
                for name, cnt in rel.items()
            ]
            out.append("\nrelations (rate = count / errors):\n" + table(rows, ["relation", "count", "rate"]))
        if payload["confused_pairs"]:
            rows = [[p["gold"], p["pred"], p["relation"], p["count"]] for p in payload["confused_pairs"]]
            out.append("\nmost frequent confusions:\n" + table(rows, ["gold", "pred", "relation", "count"]))
        if branches:
            rows = [
                [
                    "  " * b["depth"] + node,
                    b["n"],
                    b["metrics"]["hierarchy.hierarchical_f1"]["value"],
                    b["metrics"]["hierarchy.exact_accuracy"]["value"],
                ]
                for node, b in branches.items()
            ]
            out.append(
                f"\nper branch (depth <= {branch_depth}):\n" + table(rows, ["node", "rows", "hF1", "exact"])
            )
        if ev.unscored:
            out.append("\nunscored: " + ", ".join(f"{k}: {v}" for k, v in ev.unscored_counts.items()))
        return "\n".join(out)

    emit_score(payload, fmt, render)
