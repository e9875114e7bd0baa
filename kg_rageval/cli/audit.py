"""``kg-rageval audit``: the release gate.

Exit codes: 0 every gate passes; 1 a gate failed or its evidence is missing (also: ``--verify``
reproduced the numbers of an audit that failed its gates); 2 invalid inputs or config (also: a
malformed manifest); 4 ``--verify`` found a difference: the evidence does NOT verify (a report,
input, number or gate decision differs from what the manifest records).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kg_rageval.cli.common import dask_options, fail, format_option, quiet_option


@click.command("audit")
@click.option(
    "--config",
    "-c",
    "config_path",
    type=click.Path(dir_okay=False),
    help="Audit config (TOML or YAML): inputs, families, slices, gates.",
)
@click.option(
    "--out",
    "-o",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Directory for report.json, report.md, report.html, junit.xml, manifest.json.",
)
@format_option
@quiet_option
@click.option(
    "--verify",
    "verify_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Re-run the audit a manifest.json describes and confirm identical numbers.",
)
@click.option(
    "--demo",
    "demo",
    is_flag=False,
    flag_value="doid",
    default=None,
    type=click.Choice(["doid", "attack"]),
    metavar="[doid|attack]",
    help="Build the bundled demo KG-RAG system (default: Disease Ontology cancer slim; "
    "'attack': MITRE ATT&CK), run it and audit it.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the demo system.")
@click.option(
    "--strict/--no-strict",
    default=None,
    help="Exit with the gate verdict (1 when a gate fails). On by default; --demo turns it "
    "off, since the demo is a showcase whose baseline fails some gates on purpose.",
)
@click.option(
    "--baseline-ontology",
    "baseline_ontology",
    type=click.Path(dir_okay=False),
    default=None,
    help="The ontology release the baseline was audited on: compare with it on the nodes "
    "unchanged between the two releases (docs/drift.md).",
)
@click.option(
    "--chunk-size",
    "chunk_size",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Records per chunk when the audit streams its records file (every family it runs "
    "is streamable; the config's chunk_size, default 16384); 0 reads the whole file at "
    "once. The report is the same either way.",
)
@click.option(
    "--spill-rows",
    "spill_rows",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Rows of a streamed family result held in memory before its numeric columns go to a "
    "temporary file in the system's temporary directory (the config's spill_rows, default "
    "65536); 0 keeps them in memory. The report is the same either way.",
)
@dask_options(
    "Run the streamed audit on the Dask cluster at ADDRESS (e.g. tcp://scheduler:8786): "
    "the records file is split into byte ranges, each read, accumulated and scored on a "
    "worker, merged here in file order (--dask-partitions); the report is the same. Needs "
    "kg-rageval[dask]; a held audit runs here.",
    "With --dask-scheduler/--dask-workers: split the records file into P byte ranges of "
    "whole chunks, each read, accumulated and scored on a worker and merged here in file "
    "order (default twice the worker threads); 0 reads the chunks here and sends only the "
    "families' calls. The report is the same.",
    partitions_min=0,
)
@click.option(
    "--parquet",
    "parquet_dir",
    type=click.Path(file_okay=False),
    default=None,
    metavar="DIR",
    help="Also write per-record results, metrics, per-node roll-ups and gates as Parquet into DIR "
    "(docs/interop.md, Out; the parquet extra).",
)
@click.option(
    "--mlflow",
    "mlflow_uri",
    default=None,
    metavar="URI",
    help="Log metrics, gate outcomes, the manifest and report files to a new MLflow run at this "
    "tracking URI (a path or file: URI is a local file store; the mlflow extra).",
)
@click.option(
    "--mlflow-experiment",
    default="kg-rageval",
    show_default=True,
    help="The MLflow experiment of --mlflow's run.",
)
def audit(
    config_path: str | None,
    out_dir: str | None,
    fmt: str,
    quiet: bool,
    verify_path: str | None,
    demo: str | None,
    seed: int,
    strict: bool | None,
    baseline_ontology: str | None = None,
    chunk_size: int | None = None,
    dask_scheduler: str | None = None,
    dask_workers: int | None = None,
    dask_partitions: int | None = None,
    spill_rows: int | None = None,
    parquet_dir: str | None = None,
    mlflow_uri: str | None = None,
    mlflow_experiment: str = "kg-rageval",
) -> None:
    """Run every configured metric family, decide the gates and write the reports.

    A gate whose evidence is missing fails. With --demo (no config needed) the demo system is
    built into --out (default ./kg-rageval-demo) and audited; --demo attack uses ATT&CK.
    The demo exits 0 once its reports are written (the gate verdict is in the report);
    add --strict for the release-gate exit code.
    """
    from kg_rageval.base.errors import KgRagevalError

    try:
        code = _audit(
            config_path,
            out_dir,
            fmt,
            quiet,
            verify_path,
            demo,
            seed,
            baseline_ontology,
            chunk_size,
            dask_scheduler,
            dask_workers,
            spill_rows,
            exports={"parquet": parquet_dir, "mlflow": mlflow_uri, "experiment": mlflow_experiment},
            dask_partitions=dask_partitions,
        )
    except (KgRagevalError, OSError) as exc:
        fail(exc)
    if strict is None:
        strict = not demo
    if code == 1 and not strict:
        if not quiet:
            click.echo(
                "note: gates failed (see the report); exit code 0 because --no-strict/--demo "
                "is in effect — use --strict for the release-gate exit code",
                err=True,
            )
        code = 0
    sys.exit(code)


def _audit(
    config_path,
    out_dir,
    fmt,
    quiet,
    verify_path,
    demo,
    seed,
    baseline_ontology=None,
    chunk_size=None,
    dask_scheduler=None,
    dask_workers=None,
    spill_rows=None,
    exports=None,
    dask_partitions=None,
) -> int:
    from kg_rageval.base.errors import ConfigError

    if verify_path:
        return _verify(verify_path, config_path, fmt, quiet)
    if demo:
        from kg_rageval.demo import build_demo

        out = Path(out_dir or ("kg-rageval-demo" if demo == "doid" else f"kg-rageval-demo-{demo}"))
        built = build_demo(out, seed=seed, progress=not quiet, profile=demo)
        config_path = str(built["config"])
        out_dir = str(out / "report")
        if not quiet and fmt == "text":
            click.echo(
                f"demo system built in {out}: {built['n_records']} queries, {built['n_documents']} documents",
                err=True,
            )
    if not config_path:
        raise ConfigError("give --config CONFIG (or --demo, or --verify MANIFEST)")
    from kg_rageval.audit.config import load_config

    config = load_config(config_path)  # a bad config is refused before --out is created or locked
    if baseline_ontology:
        from kg_rageval.audit.baseline import set_baseline_ontology

        set_baseline_ontology(config, baseline_ontology)
    if chunk_size is not None:
        config.chunk_size = chunk_size
    if spill_rows is not None:
        config.spill_rows = spill_rows
    if out_dir:
        from kg_rageval.audit.reports import out_lock

        with out_lock(Path(out_dir)):  # held for the whole audit, not only while writing
            return _run_and_report(
                config, out_dir, fmt, quiet, dask_scheduler, dask_workers, exports, dask_partitions
            )
    return _run_and_report(
        config, out_dir, fmt, quiet, dask_scheduler, dask_workers, exports, dask_partitions
    )


def _run_and_report(
    config, out_dir, fmt, quiet, dask_scheduler, dask_workers, exports=None, partitions=None
) -> int:
    from kg_rageval.audit.runner import run_audit

    if dask_scheduler is not None or dask_workers is not None:
        from kg_rageval.integrations.dask import audit_client

        with audit_client(dask_scheduler, dask_workers) as client:
            result = run_audit(config, progress=not quiet, client=client, partitions=partitions)
    else:
        result = run_audit(config, progress=not quiet)
    written = {}
    if out_dir:
        from kg_rageval.audit.reports import write_reports

        written = write_reports(result, out_dir, lock=False)  # _audit holds the lock
    exports = exports or {}
    if exports.get("parquet"):
        from kg_rageval.audit.exports import write_audit_parquet

        write_audit_parquet(result, exports["parquet"])
        written = {**written, "parquet": str(exports["parquet"])}
    if exports.get("mlflow"):
        from kg_rageval.audit.exports import log_mlflow

        files = [p for k, p in written.items() if k != "mlflow"]
        written = {
            **written,
            "mlflow_run": log_mlflow(
                result, exports["mlflow"], files=files, experiment=exports.get("experiment") or "kg-rageval"
            ),
        }
    wrote_back = None
    if config.report.write_back is not None:
        from kg_rageval.audit.writeback import write_back

        wrote_back = write_back(result)
    if fmt == "json":
        from kg_rageval.audit.report_json import dumps, report_dict

        payload = report_dict(result)
        payload["written"] = written
        if wrote_back is not None:
            payload["write_back"] = wrote_back
        click.echo(dumps(payload))
    else:
        click.echo(_text(result, written, quiet))
        if wrote_back is not None:
            click.echo(
                f"wrote back {wrote_back['written']} node(s) to {wrote_back['uri']} "
                f"(run {wrote_back['run_id']}, mode {wrote_back['mode']}; "
                f"{wrote_back['n_not_found']} not found in the graph)"
            )
    return result.exit_code


def _text(result, written: dict[str, str], quiet: bool) -> str:
    from kg_rageval.cli.common import table

    c = result.status_counts()
    lines = [
        f"audit {result.config.name}: {'PASSED' if result.passed else 'FAILED'} — "
        f"{c['pass']} pass, {c['fail']} fail, {c['missing']} missing evidence "
        f"({result.n_records} records, {result.seconds:.2f} s)"
    ]
    order = {"missing": 0, "fail": 1, "pass": 2}
    rows = [
        [r.status.upper(), str(r.gate), r.observed, r.reason]
        for r in sorted(result.gate_results, key=lambda r: order[r.status])
    ]
    lines.append(table(rows, ["status", "gate", "observed", "reason"]))
    if result.drivers and not quiet:
        lines.append("\nbranches driving the failures:")
        lines.append(
            table(
                [
                    [d["gate"], d["node"], d["label"] or "", d["n"], d["value"], d["impact"]]
                    for d in result.drivers[:5]
                ],
                ["gate", "node", "label", "rows", "value", "impact"],
            )
        )
    for kind, path in written.items():
        lines.append(f"wrote {kind}: {path}")
    return "\n".join(lines)


def _verify(manifest: str, config_path: str | None, fmt: str, quiet: bool) -> int:
    from kg_rageval.audit.verify import verify_manifest

    res = verify_manifest(manifest, config_path=config_path, progress=not quiet)
    if fmt == "json":
        from kg_rageval.audit.report_json import dumps

        click.echo(dumps(res))
    else:
        if res["ok"] and res["passed"]:
            click.echo(f"verified: identical numbers ({res['digest']['rerun']})")
        elif res["ok"]:
            click.echo(
                f"verified: identical numbers ({res['digest']['rerun']}), but the verified audit FAILED "
                "its gates"
            )
        else:
            click.echo("NOT verified:\n  " + "\n  ".join(res["differences"]))
    return verify_exit_code(res)


def verify_exit_code(res: dict) -> int:
    """0 verified and the audit passed; 1 verified (identical numbers) but the audit failed its
    gates; 4 NOT verified — one code per outcome, so a script can tell a failed release from
    tampered evidence."""
    if not res["ok"]:
        return 4
    return 0 if res["passed"] else 1
