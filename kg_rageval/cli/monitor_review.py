"""``kg-rageval monitor alerts``, ``fer``, ``signals``, ``sample``, ``shadow`` (later ``page``):
review-side monitoring commands (``docs/monitoring_review.md``). Each is a ``click.command``
the ``monitor`` group adds; :data:`review_group` holds them for tests until then."""

from __future__ import annotations

import sys

import click

from kg_rageval.cli.common import (
    data_option,
    emit,
    fail,
    format_option,
    load_ontology_cli,
    loader_options,
    ontology_option,
)


def _traffic(data_path: str, ontology_path: str, window: str, branch_depth: int) -> list:
    from kg_rageval.monitor.traffic import iter_traffic

    onto = load_ontology_cli(ontology_path)
    return [
        r for chunk in iter_traffic(data_path, onto, window=window, branch_depth=branch_depth) for r in chunk
    ]


def _file_option(name: str, dest: str, help: str, *, required: bool = False):
    """An existing input file option (``None`` when not given and not required)."""
    return click.option(
        name, dest, required=required, default=None, type=click.Path(exists=True, dir_okay=False), help=help
    )


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
@click.option(
    "--data",
    "-d",
    "data_path",
    default=None,
    type=click.Path(exists=True, dir_okay=False),
    help="Production records (JSONL with timestamps); or --store.",
)
@click.option(
    "--store",
    "store_path",
    default=None,
    type=click.Path(exists=True, dir_okay=False),
    help="A window store (monitor ingest): the checks read its sums, read-only; or --data.",
)
@loader_options
@click.option(
    "--ontology",
    "-O",
    "ontology_path",
    default=None,
    help="Ontology of the branches (needed with --data, and for the sampled FER check).",
)
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
@_file_option("--queue", "queue_path", "Review queue of `monitor sample` (sampled FER check).")
@_file_option("--corpus", "corpus_path", "Corpus JSONL for the filter replay (sampled FER check).")
@_file_option(
    "--reviewed",
    "reviewed_path",
    "Reviewed records with retrieval.gold (sampled FER check; default: --data).",
)
@format_option
def alerts(
    data_path, ontology_path, config_path, deploys, window, branch_depth, queue_path, corpus_path,
    reviewed_path, fmt, store_path=None, **_loader,
) -> None:  # fmt: skip
    """Guardrail alerts per window and branch, from traffic (--data) or a window store
    (--store). Exit 0 quiet, 1 alert, 2 input error."""
    from kg_rageval.base.errors import ConfigError, KgRagevalError
    from kg_rageval.monitor import alerts as al
    from kg_rageval.monitor.traffic import Windowing

    try:
        if (data_path is None) == (store_path is None):
            raise ConfigError("give the traffic as --data or --store (one of them)")
        if data_path is not None and ontology_path is None:
            raise ConfigError("--data needs --ontology (the branches come from it)")
        cfg = al.load_config(config_path)
        windowing = Windowing.parse(window)
        events = al.load_deploys(deploys) if deploys else []
        fer = None
        if cfg.filter_false_exclusion_rate is not None and queue_path and corpus_path:
            from kg_rageval.monitor import fer as fe

            reviewed = reviewed_path or data_path
            if reviewed is None or ontology_path is None:
                raise ConfigError("the sampled FER check with --store needs --reviewed and --ontology")
            report = _sampled_fer(
                reviewed, ontology_path, queue_path, corpus_path, window,
                branch_depth, by_window=True, level=cfg.level, min_rows=cfg.min_rows,
            )  # fmt: skip
            fer = fe.fer_cells(report)
        if store_path is not None:
            from kg_rageval.monitor.store import WindowStore

            with WindowStore(store_path, read_only=True) as st:
                payload = al.evaluate_store(st, cfg, deploys=events, fer=fer)
        else:
            rows = _traffic(data_path, ontology_path, window, branch_depth)
            payload = al.evaluate(rows, cfg, windowing=windowing, deploys=events, fer=fer)
    except (KgRagevalError, OSError) as exc:
        fail(exc)
        return
    emit(payload, fmt, _render_alerts)
    sys.exit(1 if payload["status"] == "alert" else 0)


def _sampled_fer(
    data_path: str,
    ontology_path: str,
    queue_path: str,
    corpus_path: str,
    window: str,
    branch_depth: int,
    **kw,
) -> dict:
    from kg_rageval.families.retrieval import read_corpus
    from kg_rageval.monitor import fer as fe
    from kg_rageval.monitor.traffic import iter_traffic

    onto = load_ontology_cli(ontology_path)
    rows = [
        r for chunk in iter_traffic(data_path, onto, window=window, branch_depth=branch_depth) for r in chunk
    ]
    obs = fe.observations(rows, onto, read_corpus(corpus_path, onto))
    return fe.sampled_fer(obs, fe.load_queue(queue_path), **kw)


def _render_fer(p: dict) -> str:
    def fmt(e: dict) -> str:
        if e.get("status") != "estimated":
            return f"n={e['n']} {INSUFFICIENT_TEXT}"
        lo, hi = e["ci"]
        return f"n={e['n']} {e['estimate']:.4g} [{lo:.4g}, {hi:.4g}]"

    lines = [f"sampled {p['metric']} ({p['definition']}); not in queue: {p['not_in_queue']}"]
    for r in p["results"]:
        lines.append(
            f"{r['window']} {r['branch']}: weighted {fmt(r['weighted'])}; "
            f"random stratum {fmt(r['random_stratum'])}"
        )
    lines.append(f"weighted: {WEIGHTED_TEXT}")
    return "\n".join(lines)


INSUFFICIENT_TEXT = "insufficient evidence"
WEIGHTED_TEXT = "all strata, weighted by 1/inclusion_probability; random stratum: that stratum alone"


@click.command("fer")
@data_option
@ontology_option
@_file_option(
    "--queue",
    "queue_path",
    "The review queue `monitor sample` wrote (inclusion probabilities).",
    required=True,
)
@_file_option(
    "--corpus",
    "corpus_path",
    "Corpus JSONL (document fields and entitlements) for the filter replay.",
    required=True,
)
@click.option(
    "--by-window", is_flag=True, help="Per window and branch (default: per branch over all windows)."
)
@click.option("--min-rows", type=click.IntRange(1), default=30, show_default=True)
@click.option(
    "--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95, show_default=True
)
@click.option("--window", default="1d", show_default=True)
@click.option("--branch-depth", type=click.IntRange(0), default=1, show_default=True)
@format_option
def fer(
    data_path, ontology_path, queue_path, corpus_path, by_window, min_rows, level, window, branch_depth,
    fmt, **_loader,
) -> None:  # fmt: skip
    """Sampled filter false-exclusion rate on reviewed filtered queries (-d: records with the
    reviewer's retrieval.gold), per branch, weighted by the queue's inclusion probabilities."""
    from kg_rageval.base.errors import KgRagevalError

    try:
        payload = _sampled_fer(
            data_path, ontology_path, queue_path, corpus_path, window, branch_depth,
            by_window=by_window, level=level, min_rows=min_rows,
        )  # fmt: skip
    except (KgRagevalError, OSError) as exc:
        fail(exc)
        return
    emit(payload, fmt, _render_fer)


@click.command("signals")
@data_option
@ontology_option
@click.option(
    "--label",
    default="review.faithful",
    show_default=True,
    help="The reviewed boolean field (dotted path in the record) the signals are set against.",
)
@click.option(
    "--signal",
    "signal_names",
    multiple=True,
    help="A signal to report (repeatable; default: all): cited_click, dwell_ms, regenerated, "
    "copied, shared, exported, followup_doubt.",
)
@click.option("--by", type=click.Choice(["all", "branch", "intent"]), default="all", show_default=True)
@click.option(
    "--doubt-pattern",
    "doubt",
    multiple=True,
    help="A regular expression for a doubting follow-up (repeatable; replaces the default list).",
)
@click.option("--min-rows", type=click.IntRange(1), default=30, show_default=True)
@click.option(
    "--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95, show_default=True
)
@click.option("--bootstrap", "n_boot", type=click.IntRange(1), default=1000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--branch-depth", type=click.IntRange(0), default=1, show_default=True)
@format_option
def signals(
    data_path, ontology_path, label, signal_names, by, doubt, min_rows, level, n_boot, seed,
    branch_depth, fmt, **_loader,
) -> None:  # fmt: skip
    """Implicit signals (click-through, dwell, regeneration, copy/share/export, doubting
    follow-ups) as candidates: their association with reviewed labels, with n and intervals.
    No direction is assigned."""
    import re

    from kg_rageval.base.errors import ConfigError, KgRagevalError
    from kg_rageval.monitor import signals as sg

    try:
        bad = [s for s in signal_names if s not in sg.SIGNALS]
        if bad:
            raise ConfigError(f"--signal {bad[0]!r}: expected one of {', '.join(sg.SIGNALS)}")
        for pat in doubt:
            try:
                re.compile(pat)
            except re.error as exc:
                raise ConfigError(f"--doubt-pattern {pat!r}: {exc}") from None
        rows = _traffic(data_path, ontology_path, "1d", branch_depth)
        payload = sg.signal_report(
            rows, label=label, signals=signal_names or sg.SIGNALS, by=by, level=level,
            min_rows=min_rows, n_boot=n_boot, seed=seed, doubt=doubt or sg.DOUBT_PATTERNS,
        )  # fmt: skip
    except (KgRagevalError, OSError) as exc:
        fail(exc)
        return

    def text(p: dict) -> str:
        lines = [f"{p['n_reviewed']} of {p['n_rows']} rows reviewed ({p['label']})"]
        for r in p["results"]:
            head = f"{r['signal']:<15} {r['group']}: n={r['n']}"
            if r["status"] != "estimated":
                lines.append(f"{head} {r['status']} ({r['reason']})")
                continue
            lo, hi = r["ci"] if r["ci"] else (float("nan"), float("nan"))
            p_ = r.get("chi2_p", r.get("p_value"))
            lines.append(f"{head} {r['statistic']} {r['estimate']:+.4g} [{lo:+.4g}, {hi:+.4g}] p={p_:.3g}")
        lines.append(p["note"])
        return "\n".join(lines)

    emit(payload, fmt, text)


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
review_group.add_command(fer)
review_group.add_command(signals)
