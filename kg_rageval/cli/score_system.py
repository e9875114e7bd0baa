"""``kg-rageval score system``: latency quantiles per stage (with bootstrap intervals), cost per
query, tokens, cache hit rates and context construction, from records or from OTLP traces
(see ``docs/system.md``)."""

from __future__ import annotations

import click

from kg_rageval.cli.common import emit_score, family_kwargs, family_options, score_payload


@click.command()
@click.option(
    "--data",
    "-d",
    "data_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Records file (JSONL, see docs/records.md).",
)
@click.option(
    "--traces",
    "traces_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="OTLP JSON traces (OpenTelemetry / OpenInference, e.g. a Phoenix export) instead of records.",
)
@click.option(
    "--id-attribute",
    default=None,
    help="Root-span attribute holding the record id (traces; default: trace id).",
)
@click.option(
    "--write-records",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the records imported from --traces here (JSONL).",
)
@click.option(
    "--ontology",
    "-O",
    "ontology_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Ontology, for the per-branch roll-up (optional).",
)
@click.option("--ontology-format", default=None, help="Loader name when the extension does not tell.")
@family_options("system")
@click.option(
    "--ci",
    "--bootstrap",
    "n_resamples",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Bootstrap resamples (by record) for the intervals of the quantiles and means; 0 = none.",
)
@click.option(
    "--ci-level",
    "--level",
    "level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Confidence level of the intervals.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap resampling.")
@click.option(
    "--rows/--no-rows", default=False, show_default=True, help="Include per-record rows in JSON output."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "csv"]),
    default="text",
    show_default=True,
    help="Output: a human table, JSON (the envelope of every score command) or CSV (system's metrics).",
)
def command(
    data_path,
    traces_path,
    id_attribute,
    write_records,
    ontology_path,
    ontology_format,
    n_resamples,
    level,
    seed,
    rows,
    fmt,
    **kwargs,
) -> None:
    """Latency p50/p95/p99 per stage, $/query, tokens, cache hit rates, context coverage.

    JSON: the envelope of every ``score`` command for the system family (``score_payload``),
    ``context``: the same envelope for the context family, and ``rollup`` (family → node →
    metrics, with ``-O``). Intervals (``--ci N``, also ``--bootstrap``; default 1000) are on the
    quantiles and means of system and on every defined context metric."""
    from kg_rageval.base.errors import ConfigError
    from kg_rageval.cli.common import load_ontology_cli
    from kg_rageval.records import read_records
    from kg_rageval.scoring import get_scorer

    opts = family_kwargs("system", kwargs)
    if (data_path is None) == (traces_path is None):
        raise ConfigError("give exactly one of --data (records) and --traces (OTLP JSON)")
    from kg_rageval.base.outputs import refuse_overwrite

    refuse_overwrite(
        {"--write-records": write_records},
        {"--data": data_path, "--traces": traces_path, "--ontology": ontology_path},
    )
    if traces_path:
        from kg_rageval.families.system.otlp import import_otlp
        from kg_rageval.records import write_records as write

        records = import_otlp(traces_path, id_attribute=id_attribute)
        if write_records:
            write(write_records, records)
    else:
        records = read_records(data_path)
    onto = load_ontology_cli(ontology_path, ontology_format) if ontology_path else None
    sets = {
        "system": get_scorer("system").bind(onto, where="score system", **opts)(records),
        "context": get_scorer("context").bind(onto, where="score system")(records),
    }
    evals = {name: res[name] for name, res in sets.items()}
    intervals: dict[str, dict[str, tuple[float, float]]] = {}
    payloads: dict[str, dict] = {}
    for name, ev in evals.items():
        metrics = sets[name].metrics()
        if n_resamples and len(ev):
            wanted = [
                m
                for m, v in ev.metrics().items()
                if v.value is not None
                and (name != "system" or m.rsplit(".", 1)[-1] in ("p50", "p95", "p99", "mean"))
            ]
            cis = ev.bootstrap(n_resamples=n_resamples, level=level, seed=seed, metrics=wanted)
            intervals[name] = {m: ci for m, ci in cis.items() if ci is not None}
            for m, ci in intervals[name].items():
                metrics[f"{name}.{m}"] = metrics[f"{name}.{m}"].with_ci(ci)
        keys = [k for k in ev.keys if k.startswith("slice:")] + (
            [k for k in ("gold_position_bucket", "compression_bin") if k in ev.keys]
            if name == "context"
            else []
        )
        payloads[name] = score_payload(
            sets[name],
            data_path=data_path or traces_path,
            n_records=len(records),
            onto=onto,
            rows=rows,
            breakdowns=keys,
            metrics=metrics,
        )
        payloads[name]["command"] = "score system"
    payload = {**payloads["system"], "context": payloads["context"]}
    if onto is not None:
        from kg_rageval.audit.gates import metric_dict
        from kg_rageval.audit.pernode import safe_rollup

        payload["rollup"] = {
            name: {
                n: {"n": e["n"], "metrics": {k: metric_dict(m) for k, m in e["metrics"].items()}}
                for n, e in safe_rollup(ev, onto).items()
            }
            for name, ev in evals.items()
            if "gold_node" in ev.keys
        }
    emit_score(payload, fmt, lambda p: _render(p, evals, intervals))


def _render(payload: dict, evals: dict, intervals: dict) -> str:
    from kg_rageval.cli.common import metrics_table

    parts = [f"{payload['counts']['records']} records"]
    for name, ev in evals.items():
        ms = ev.metrics()
        absent = sorted(
            {
                k.rsplit(".", 1)[0]
                for k, m in ms.items()
                if k.endswith(".n_missing") and m.numerator == m.denominator and m.denominator
            }
        )
        cis = intervals.get(name, {})
        shown = {
            k: (m.with_ci(cis[k]) if k in cis else m)
            for k, m in ms.items()
            if not any(k.startswith(a + ".") for a in absent)
        }
        parts.append(f"\n== {name} ({len(ev)} records)")
        parts.append(metrics_table(shown))
        if absent:
            parts.append("no record has: " + ", ".join(absent))
        if ev.unscored:
            parts.append("unscored: " + ", ".join(f"{k}={v}" for k, v in ev.unscored_counts.items()))
    return "\n".join(parts)
