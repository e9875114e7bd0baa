"""``kg-rageval monitor alerts`` (and, later, ``sample``, ``shadow``, ``page``):
review-side monitoring commands (``docs/monitoring_review.md``). Each is a ``click.command``
the ``monitor`` group adds; :data:`review_group` holds them for tests until then."""

from __future__ import annotations

import sys

import click

from kg_rageval.cli.common import data_option, emit, fail, format_option, load_ontology_cli, ontology_option


def _traffic(data_path: str, ontology_path: str, window: str, branch_depth: int) -> list:
    from kg_rageval.monitor.traffic import iter_traffic

    onto = load_ontology_cli(ontology_path)
    return [
        r for chunk in iter_traffic(data_path, onto, window=window, branch_depth=branch_depth) for r in chunk
    ]


def _render_alerts(payload: dict) -> str:
    lines = [
        f"status: {payload['status']}  " + ", ".join(f"{k}={v}" for k, v in sorted(payload["counts"].items()))
    ]
    for a in payload["results"]:
        if a["status"] == "ok":
            continue
        ev = a["evidence"]
        est = "-" if ev["estimate"] is None else f"{ev['estimate']:.4g}"
        ci = "" if not ev["ci"] else f" [{ev['ci'][0]:.4g}, {ev['ci'][1]:.4g}]"
        lines.append(
            f"{a['status']:<22} {a['check']:<20} {a['window']} {a['branch']}: n={ev['n']} {est}{ci}"
            + (f"  — {a['triage']}" if a["triage"] else "")
        )
    lines.append(payload["note"])
    return "\n".join(lines)


@click.command("alerts")
@data_option
@ontology_option
@click.option(
    "--config",
    "-c",
    "config_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Alert thresholds (YAML, TOML or JSON; docs/monitoring_review.md).",
)
@click.option(
    "--deploys",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Deploy events (JSONL of {timestamp, release}) for the triage hint.",
)
@click.option("--window", default="1d", show_default=True, help="Window width (1d, 6h, ...) or 'release'.")
@click.option("--branch-depth", type=click.IntRange(0), default=1, show_default=True)
@format_option
def alerts(data_path, ontology_path, config_path, deploys, window, branch_depth, fmt, **_loader) -> None:
    """Guardrail alerts per window and branch. Exit 0 quiet, 1 alert, 2 input error."""
    from kg_rageval.base.errors import KgRagevalError
    from kg_rageval.monitor import alerts as al
    from kg_rageval.monitor.traffic import Windowing

    try:
        cfg = al.load_config(config_path)
        windowing = Windowing.parse(window)
        rows = _traffic(data_path, ontology_path, window, branch_depth)
        events = al.load_deploys(deploys) if deploys else []
        payload = al.evaluate(rows, cfg, windowing=windowing, deploys=events)
    except (KgRagevalError, OSError) as exc:
        fail(exc)
        return
    emit(payload, fmt, _render_alerts)
    sys.exit(1 if payload["status"] == "alert" else 0)


@click.command("sample")
@data_option
@ontology_option
@click.option(
    "--out",
    "-o",
    "out_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="Review queue (JSONL: id, window, branch, strata, inclusion_probability).",
)
@click.option(
    "--rate",
    type=click.FloatRange(0, 1),
    default=0.02,
    show_default=True,
    help="Uniform random stratum (0 disables it: a warning).",
)
@click.option(
    "--low-confidence",
    type=click.FloatRange(0, 1),
    default=0.3,
    show_default=True,
    help="Confidence below which a row is in the low-confidence stratum.",
)
@click.option("--low-confidence-rate", type=click.FloatRange(0, 1), default=0.5, show_default=True)
@click.option("--thumbs-down-rate", type=click.FloatRange(0, 1), default=0.5, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--window", default="1d", show_default=True)
@click.option("--branch-depth", type=click.IntRange(0), default=1, show_default=True)
@format_option
def sample(
    data_path,
    ontology_path,
    out_path,
    rate,
    low_confidence,
    low_confidence_rate,
    thumbs_down_rate,
    seed,
    window,
    branch_depth,
    fmt,
    **_loader,
) -> None:
    """Draw a review queue: a seeded random stratum plus oversampled low-confidence and
    thumbs-down outputs, each item with its inclusion probability."""
    import json

    from kg_rageval.base.errors import KgRagevalError
    from kg_rageval.base.outputs import refuse_overwrite, writing
    from kg_rageval.monitor import review as rv

    try:
        refuse_overwrite({"--out": out_path}, {"-d": data_path})
        design = rv.Design(rate, low_confidence, low_confidence_rate, thumbs_down_rate, seed)
        drawn = rv.draw(_traffic(data_path, ontology_path, window, branch_depth), design)
        with writing(out_path), open(out_path, "w", encoding="utf-8") as fh:
            for it in drawn.items:
                fh.write(json.dumps(it.to_dict(), ensure_ascii=False) + "\n")
    except (KgRagevalError, OSError, ValueError) as exc:
        fail(exc)
        return
    for w in drawn.warnings:
        click.echo(f"warning: {w}", err=True)
    payload = {
        "out": out_path,
        "n_population": drawn.n_population,
        "n_items": len(drawn.items),
        "strata": drawn.stratum_counts,
        "design": vars(design),
        "warnings": drawn.warnings,
    }
    emit(
        payload,
        fmt,
        lambda p: (
            f"{p['n_items']} of {p['n_population']} rows to review -> {p['out']}; "
            + ", ".join(f"{k}={v}" for k, v in sorted(p["strata"].items()))
        ),
    )


@click.command("shadow")
@data_option
@click.option(
    "--candidate",
    "cand_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Candidate records recorded beside production on the same traffic (same ids).",
)
@ontology_option
@click.option("--min-pairs", type=click.IntRange(1), default=30, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--branch-depth", type=click.IntRange(0), default=1, show_default=True)
@format_option
def shadow(data_path, cand_path, ontology_path, min_pairs, seed, branch_depth, fmt, **_loader) -> None:
    """Compare candidate outputs with production offline, paired by record id, per branch."""
    from kg_rageval.base.errors import KgRagevalError
    from kg_rageval.monitor.shadow import compare_shadow

    try:
        prod = _traffic(data_path, ontology_path, "1d", branch_depth)
        cand = _traffic(cand_path, ontology_path, "1d", branch_depth)
        payload = compare_shadow(prod, cand, min_pairs=min_pairs, seed=seed)
    except (KgRagevalError, OSError) as exc:
        fail(exc)
        return

    def text(p: dict) -> str:
        lines = [
            f"paired {p['n_paired']} (only production {p['only_production']}, "
            f"only candidate {p['only_candidate']}); delta = {p['delta']}"
        ]
        for m, body in p["metrics"].items():
            for g, r in body["groups"].items():
                if r["status"] != "compared":
                    lines.append(f"{m:<13} {g}: n={r['n']} {r['status']}")
                else:
                    lines.append(
                        f"{m:<13} {g}: n={r['n']} delta={r['mean_delta']:.4g} "
                        f"[{r['ci'][0]:.4g}, {r['ci'][1]:.4g}] p={r['p_value']:.3g}"
                    )
        return "\n".join(lines)

    emit(payload, fmt, text)


@click.group("review")
def review_group() -> None:
    """Temporary home of the review-side monitor commands (tests)."""


review_group.add_command(alerts)
review_group.add_command(sample)
review_group.add_command(shadow)
