"""``kg-rageval monitor``: production traffic into a window store, drift per ontology branch
(``docs/monitoring.md``). Exit codes: 0 quiet, 1 alert (drift after correction), 2 input error.

The group stays open: other ``monitor`` subcommands are added to it from their own modules.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from kg_rageval.cli.common import dask_options, emit, format_option, load_ontology_cli, table

store_option = click.option(
    "--store",
    "store_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="The window store (one DuckDB file).",
)


@click.group("monitor")
def monitor() -> None:
    """Production monitoring: windows, a window store, drift per ontology branch, the monitoring page (report)."""


# ---------------------------------------------------------------------- monitor ingest
@monitor.command("ingest")
@click.argument("traffic", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@store_option
@click.option("--ontology", "-O", "ontology_path", required=True, help="The ontology the branches come from.")
@click.option("--ontology-format", default=None, help="Loader name when the extension does not tell.")
@click.option(
    "--window", default="1d", show_default=True, help="Window width (1d, 6h, 1w, ...) or 'release'."
)
@click.option(
    "--branch-depth",
    type=click.IntRange(0),
    default=1,
    show_default=True,
    help="Depth of the branches (root = 0).",
)
@click.option(
    "--traces",
    is_flag=True,
    help="TRAFFIC is OTLP/OpenInference trace JSON (one record per trace; its root span's start is the timestamp).",
)
@click.option("--replace", is_flag=True, help="Replace windows the store already holds (else refused).")
@click.option(
    "--reservoir",
    type=click.IntRange(0),
    default=2000,
    show_default=True,
    help="Embeddings kept per window and branch (a seeded bottom-k sample of record ids).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the embedding sample.")
@click.option(
    "--engine",
    type=click.Choice(["auto", "sql", "python"]),
    default="auto",
    show_default=True,
    help="Reader of a records file: sql (DuckDB reads it, for plain records; any other file goes record by record), python (record by record), auto (sql from 8 MB).",
)
@dask_options(
    "Aggregate on the Dask cluster at ADDRESS (e.g. tcp://scheduler:8786): the records "
    "files are split into line-aligned byte ranges, each staged on a worker, the partial sums "
    "added here; the store is the same. Needs kg-rageval[dask]; --traces reads here.",
    "With --dask-scheduler/--dask-workers: byte ranges to split the input into "
    "(default: twice the workers' threads).",
    partitions_min=1,
)
@format_option
def ingest(
    traffic,
    store_path,
    ontology_path,
    ontology_format,
    window,
    branch_depth,
    traces,
    replace,
    reservoir,
    seed,
    fmt,
    engine="auto",
    dask_scheduler=None,
    dask_workers=None,
    dask_partitions=None,
) -> None:
    """Read production traffic (records JSONL with timestamps, or OTLP traces) into windows of
    the store: per window x branch x intent x slice the mergeable sums. Several records files
    are one input, read in the order given."""
    from kg_rageval.integrations.dask import audit_client
    from kg_rageval.monitor.store import WindowStore, ingest, source_name

    onto = load_ontology_cli(ontology_path, ontology_format)
    files = traffic[0] if len(traffic) == 1 else list(traffic)
    with audit_client(dask_scheduler, dask_workers) as client, WindowStore(store_path) as store:
        summary = ingest(
            store, files, onto, traces=traces, window=window, branch_depth=branch_depth,
            replace=replace, reservoir=reservoir, seed=seed, engine=engine, client=client,
            partitions=dask_partitions,
        )  # fmt: skip
    payload = {"store": str(store_path), "traffic": source_name(traffic), **summary.to_dict()}
    emit(payload, fmt, _render_ingest)


def _render_ingest(p: dict[str, Any]) -> str:
    rows = [[w, n, "replaced" if w in p["replaced"] else "new"] for w, n in p["windows"].items()]
    return f"{p['traffic']} → {p['store']}\n" + table(rows, ["window", "rows", ""])


def drift_test_options(correction_scope: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The drift-test options ``monitor drift`` and ``monitor report`` share: ``--golden``,
    ``--ontology``, ``--alpha``, ``--correction`` (its help ends with ``correction_scope``),
    ``--permutations``, ``--sigma``."""
    options = [
        click.option(
            "--golden",
            type=click.Path(exists=True),
            default=None,
            help="Golden set (records file or test-set build) for new-concept drift.",
        ),
        click.option(
            "--ontology",
            "-O",
            "ontology_path",
            default=None,
            help="Ontology to canonicalise the golden set's ids.",
        ),
        click.option(
            "--alpha", type=float, default=0.05, show_default=True, help="Level of the corrected drift tests."
        ),
        click.option(
            "--correction",
            type=click.Choice(["holm", "bh"]),
            default="holm",
            show_default=True,
            help=f"Multiple-testing correction {correction_scope}.",
        ),
        click.option(
            "--permutations", type=click.IntRange(1), default=100, show_default=True, help="MMD permutations."
        ),
        click.option(
            "--sigma",
            type=float,
            default=None,
            help="RBF bandwidth (default: median heuristic on the reference).",
        ),
    ]

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return deco


# ---------------------------------------------------------------------- monitor drift
@monitor.command("drift")
@store_option
@click.option(
    "--reference", required=True, help="The reference window (its key, as `monitor windows` lists)."
)
@click.option("--current", default=None, help="The current window (default: the latest window).")
@click.option("--rolling", is_flag=True, help="Every window after the reference against the reference.")
@drift_test_options("across branches and tests")
@click.option("--classifier", is_flag=True, help="Also the classifier two-sample test (needs scikit-learn).")
@click.option(
    "--min-rows",
    type=click.IntRange(2),
    default=10,
    show_default=True,
    help="Embeddings per window and branch below which MMD is insufficient evidence.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@format_option
def drift(
    store_path, reference, current, rolling, golden, ontology_path, alpha, correction, permutations,
    sigma, classifier, min_rows, seed, fmt,
) -> None:  # fmt: skip
    """Drift per ontology branch between --reference and --current (or, with --rolling, each
    later window against the reference): branch mix, new concepts, MMD on query embeddings.
    Exit 1 when a corrected test alerts."""
    from kg_rageval.base.errors import ConfigError
    from kg_rageval.monitor.drift import drift_report, golden_concepts
    from kg_rageval.monitor.store import WindowStore

    onto = load_ontology_cli(ontology_path) if ontology_path else None
    gold = golden_concepts(golden, onto) if golden else None
    with WindowStore(store_path, read_only=True) as store:
        windows = store.windows()
        store.require(reference)
        if rolling:
            if current is not None:
                raise ConfigError("--rolling compares every later window: leave out --current")
            targets = [w for w in windows if w > reference]
        else:
            targets = [current or windows[-1]]
        reports = [
            drift_report(
                store, reference, w, golden=gold, alpha=alpha, correction=correction,
                n_permutations=permutations, sigma=sigma, seed=seed, classifier=classifier,
                min_rows=min_rows,
            )
            for w in targets
        ]  # fmt: skip
    payload: dict[str, Any] = (
        {
            "store": str(store_path),
            "reference": reference,
            "alert": any(r["alert"] for r in reports),
            "windows": reports,
        }
        if rolling
        else {"store": str(store_path), **reports[0]}
    )
    emit(payload, fmt, _render_drift)
    if payload["alert"]:
        sys.exit(1)


def _render_drift(p: dict[str, Any]) -> str:
    out = []
    for r in p.get("windows", [p]):
        rows = [
            [
                t["test"], t["branch"] or "(all)", t["n_reference"], t["n_current"], t["statistic"],
                t["p_value"], t["p_adjusted"], "DRIFT" if t["drift"] else (t["reason"] or ""),
            ]
            for t in r["tests"]
        ]  # fmt: skip
        out.append(f"{r['reference']} → {r['current']} ({r['correction']}, alpha {r['alpha']}): "
                   + ("ALERT" if r["alert"] else "quiet"))  # fmt: skip
        out.append(table(rows, ["test", "branch", "n ref", "n cur", "statistic", "p", "p adj", ""]))
    return "\n".join(out)


# ---------------------------------------------------------------------- monitor report
@monitor.command("report")
@store_option
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the monitoring page (one self-contained HTML file).",
)
@click.option(
    "--json",
    "json_out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the payload as JSON (for machines).",
)
@click.option("--reference", default=None, help="The reference window (default: the first window shown).")
@click.option("--current", default=None, help="The last window shown (default: the latest window).")
@click.option(
    "--last", type=click.IntRange(2), default=None, help="Show only the last N windows up to --current."
)
@drift_test_options("across the tests of each window")
@click.option(
    "--min-rows",
    type=click.IntRange(2),
    default=10,
    show_default=True,
    help="Embeddings per window and branch below which MMD is insufficient evidence.",
)
@click.option(
    "--rate-min-rows",
    type=click.IntRange(1),
    default=30,
    show_default=True,
    help="Rows of a rate cell below which it is insufficient evidence.",
)
@click.option(
    "--budget",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="False-alarm budget of each rate's control bands.",
)
@click.option(
    "--across-windows",
    is_flag=True,
    help="Correct the drift p-values of every compared window as one family (default: each window on its own).",
)
@click.option(
    "--rate-reference",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="The first N windows shown pooled as the rate bands' reference.",
)
@click.option(
    "--alerts-config",
    "alerts_config",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Guardrail thresholds (as monitor alerts -c): the checks run on the store's sums and show on the page.",
)
@click.option(
    "--deploys",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Deploy events (JSONL of {timestamp, release}) for the guardrails' triage hint.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@format_option
def report(
    store_path, html_out, json_out, reference, current, last, golden, ontology_path, alpha, correction,
    permutations, sigma, min_rows, rate_min_rows, budget, across_windows, rate_reference, seed, fmt,
    alerts_config=None, deploys=None,
) -> None:  # fmt: skip
    """The monitoring page of a store (read-only): drift per window against the reference and
    rates with binomial control bands, per branch, alerts marked; --html a self-contained page,
    --json the payload. Exit 0 quiet, 1 alert, 2 input error."""
    import json
    from pathlib import Path

    from kg_rageval.base.outputs import refuse_overwrite
    from kg_rageval.monitor.drift import golden_concepts
    from kg_rageval.monitor.page import monitor_report, render_html
    from kg_rageval.monitor.store import WindowStore

    refuse_overwrite(
        {"--html": html_out, "--json": json_out},
        {
            "--store": store_path,
            "--golden": golden,
            "--ontology": ontology_path,
            "--alerts-config": alerts_config,
            "--deploys": deploys,
        },
    )
    from kg_rageval.monitor import alerts as al

    onto = load_ontology_cli(ontology_path) if ontology_path else None
    gold = golden_concepts(golden, onto) if golden else None
    guard = al.load_config(alerts_config) if alerts_config else None
    events = al.load_deploys(deploys) if deploys else []
    with WindowStore(store_path, read_only=True) as store:
        payload = monitor_report(
            store, reference=reference, current=current, last=last, golden=gold, alpha=alpha,
            correction=correction, n_permutations=permutations, sigma=sigma, seed=seed,
            min_rows=min_rows, rate_min_rows=rate_min_rows, budget=budget, rate_reference=rate_reference,
            across_windows=across_windows, guardrails=guard, deploys=events,
        )  # fmt: skip
    if json_out:
        Path(json_out).write_text(json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    if html_out:
        Path(html_out).write_text(render_html(payload), encoding="utf-8")
    emit(payload, fmt, _render_report)
    if payload["status"] == "alert":
        sys.exit(1)


def _render_report(p: dict[str, Any]) -> str:
    rows = [[a["kind"], a["check"], a["window"], a["branch"], a["status"]] for a in p["alerts"]]
    head = (
        f"{p['store']}: {len(p['windows'])} windows, reference {p['reference']}: "
        f"{p['status'].upper()} ({len(p['alerts'])} alert(s))\n{p['correction_note']}"
    )
    return head + ("\n" + table(rows, ["kind", "check", "window", "branch", "status"]) if rows else "")


# ---------------------------------------------------------------------- monitor windows
@monitor.command("windows")
@store_option
@format_option
def windows(store_path, fmt) -> None:
    """The windows a store holds (rows, first and last timestamp, source)."""
    from kg_rageval.monitor.store import WindowStore

    with WindowStore(store_path, read_only=True) as store:
        info = store.window_info()
    emit(
        {"store": str(store_path), "windows": info},
        fmt,
        lambda p: table(
            [[w["win"], w["rows"], w["first_ts"], w["last_ts"], w["source"]] for w in p["windows"]],
            ["window", "rows", "first", "last", "source"],
        ),
    )


# ---------------------------------------------------------------------- monitor calibrate
@monitor.command("calibrate")
@click.option(
    "--trials", type=click.IntRange(1), default=200, show_default=True, help="Seeded trials per scenario."
)
@click.option(
    "--n", "n_rows", type=click.IntRange(2), default=30, show_default=True, help="Rows per branch and window."
)
@click.option("--dim", type=click.IntRange(1), default=8, show_default=True, help="Embedding dimension.")
@click.option("--branches", type=click.IntRange(1), default=3, show_default=True)
@click.option(
    "--shift", type=float, default=0.5, show_default=True, help="Mean shift injected in one branch."
)
@click.option(
    "--mix-shift",
    type=click.FloatRange(0, 1, max_open=True),
    default=0.0,
    show_default=True,
    help="Share of a branch's rows moved to the shifted one.",
)
@click.option("--alpha", type=float, default=0.05, show_default=True)
@click.option("--correction", type=click.Choice(["holm", "bh"]), default="holm", show_default=True)
@click.option("--permutations", type=click.IntRange(1), default=100, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@format_option
def calibrate(
    trials, n_rows, dim, branches, shift, mix_shift, alpha, correction, permutations, seed, fmt
) -> None:
    """False-alarm rate on simulated no-shift windows and detection power on an injected shift,
    of the whole drift report (every test, corrected together), with Wilson intervals."""
    from kg_rageval.monitor.calibrate import calibrate as run

    r = run(
        trials=trials, n=n_rows, dim=dim, branches=branches, shift=shift, mix_shift=mix_shift,
        alpha=alpha, correction=correction, n_permutations=permutations, seed=seed,
    )  # fmt: skip
    emit(
        r,
        fmt,
        lambda p: (
            f"{p['trials']} trials, {p['branches']} branches x {p['n_per_branch']} rows, {p['correction']} at {p['alpha']}\n"
            f"false-alarm rate {p['false_alarm_rate']:.3f} [{p['false_alarm_ci'][0]:.3f}, {p['false_alarm_ci'][1]:.3f}]\n"
            f"power (shift {p['shift']}, mix {p['mix_shift']}) {p['power']:.3f} [{p['power_ci'][0]:.3f}, {p['power_ci'][1]:.3f}]"
        ),
    )


# ---------------------------------------------------------------------- monitor embedding
@monitor.command("embedding")
@click.argument("probes", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--model-a", required=True, help="The encoder version of the reference (a key of `embeddings`)."
)
@click.option("--model-b", required=True, help="The new encoder version.")
@click.option(
    "-k", "k", type=click.IntRange(1), default=10, show_default=True, help="Neighbours compared / Recall@k."
)
@click.option(
    "--min-stability",
    type=click.FloatRange(0, 1),
    default=None,
    help="Exit 1 when the neighbour stability is below it.",
)
@format_option
def embedding(probes, model_a, model_b, k, min_stability, fmt) -> None:
    """Embedding drift between two encoder versions on a pinned probe set: neighbour stability
    (mean top-k Jaccard) and Recall@k per version."""
    from kg_rageval.monitor.embedding import embedding_drift, read_probe_set

    r = embedding_drift(read_probe_set(probes), model_a, model_b, k=k)
    r.pop("per_probe")
    emit(
        r,
        fmt,
        lambda p: (
            f"{p['model_a']} → {p['model_b']}: neighbour stability (top-{p['k']} Jaccard) "
            f"{p['neighbour_stability']:.4f} over {p['n_probes']} probes\n"
            + "\n".join(
                f"Recall@{p['k']} {m}: {v if v is None else round(v, 4)}"
                for m, v in p[f"recall@{p['k']}"].items()
            )
        ),
    )
    if min_stability is not None and r["neighbour_stability"] < min_stability:
        sys.exit(1)


def _add_review_commands() -> None:
    """The review side of monitoring (``monitor alerts|fer|signals|sample|shadow``, cli/monitor_review.py)."""
    from kg_rageval.cli.monitor_review import alerts, fer, sample, shadow, signals

    for cmd in (alerts, fer, signals, sample, shadow):
        monitor.add_command(cmd)


_add_review_commands()
