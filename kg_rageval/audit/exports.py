"""An audit's results out of kg-rageval: Parquet tables beside the JSON report
(``kg-rageval audit --parquet DIR``) and an MLflow run (``--mlflow URI``); ``docs/interop.md``,
*Out*.

:func:`write_audit_parquet` writes into ``DIR``

* ``<family>.<member>.parquet`` / ``<family>.<member>.metrics.parquet`` for every evaluation of
  every family that ran (:func:`kg_rageval.interop.export.write_parquet`: ``record_id``, the
  key columns, details, stats; the metrics with numerator, denominator and ``missing``);
* ``nodes.parquet``, the per-node roll-ups of every ontology node with rows
  (:func:`kg_rageval.audit.pernode.node_rollups`): ``node_id``, ``label``, ``depth`` (int64),
  ``n.<family>`` (int64, the node's rows in that family, null where none) and one float64
  column ``<family>.<metric>`` per metric (null where undefined on the node);
* ``gates.parquet``: ``gate``, ``metric``, ``op``, ``threshold``, ``scope``, ``status``
  (``pass`` / ``fail`` / ``missing``), ``observed`` (null when missing), ``reason``.

:func:`log_mlflow` logs to one new MLflow run (the ``mlflow`` extra, ``mlflow-skinny``): every
audit metric with a value as an MLflow metric (names with characters MLflow refuses, such as
``@``, get ``_`` in their place; a metric without a value is not logged as 0 but tagged
``missing.<name>`` with the reason), ``gates.pass`` / ``gates.fail`` / ``gates.missing``
counts as metrics, tags ``audit.passed``, ``audit.name``, ``audit.n_records`` and one
``gate.<n>`` tag per gate (``"<status>: <gate>"``), and the written report files (report.json,
manifest.json, ... and the Parquet folder) as artifacts. A ``file:`` URI or a plain path is
MLflow's file store, which MLflow 3 serves only with ``MLFLOW_ALLOW_FILE_STORE=true``: that is
set for such a URI (the user asked for a file store).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kg_rageval.audit.result import AuditResult

_BAD = re.compile(r"[^A-Za-z0-9_\-. /:]")


def _pa() -> Any:
    from kg_rageval.base.errors import InputError

    try:
        import pyarrow as pa
    except ImportError:
        raise InputError("Parquet export needs pyarrow: pip install 'kg-rageval[parquet]'") from None
    return pa


def _write_table(table: Any, path: Path) -> None:
    import pyarrow.parquet as pq

    from kg_rageval.base.outputs import atomic_path, writing

    tmp = atomic_path(path)
    try:
        with writing(path):
            pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def nodes_table(result: AuditResult) -> Any:
    """The per-node roll-ups of every node with rows, as the module docstring says."""
    from kg_rageval.audit.pernode import node_rollups

    pa = _pa()
    nodes = node_rollups(result.families, result.ontology) if result.ontology is not None else {}
    fams = sorted({f for d in nodes.values() for f in d["n"]})
    metrics = sorted({m for d in nodes.values() for m in d["metrics"]})
    cols: dict[str, Any] = {
        "node_id": pa.array(list(nodes), type=pa.string()),
        "label": pa.array([d["label"] for d in nodes.values()], type=pa.string()),
        "depth": pa.array([d["depth"] for d in nodes.values()], type=pa.int64()),
    }
    for f in fams:
        cols[f"n.{f}"] = pa.array([d["n"].get(f) for d in nodes.values()], type=pa.int64())
    for m in metrics:
        cols[m] = pa.array([d["metrics"].get(m) for d in nodes.values()], type=pa.float64())
    return pa.table(cols)


def gates_table(result: AuditResult) -> Any:
    pa = _pa()
    rows = [g.to_dict() for g in result.gate_results]
    return pa.table(
        {
            "gate": pa.array([r["gate"] for r in rows], type=pa.string()),
            "metric": pa.array([r["metric"] for r in rows], type=pa.string()),
            "op": pa.array([r["op"] for r in rows], type=pa.string()),
            "threshold": pa.array([r["threshold"] for r in rows], type=pa.float64()),
            "scope": pa.array(
                [None if r["scope"] is None else str(r["scope"]) for r in rows], type=pa.string()
            ),
            "status": pa.array([r["status"] for r in rows], type=pa.string()),
            "observed": pa.array([r["observed"] for r in rows], type=pa.float64()),
            "reason": pa.array([r["reason"] for r in rows], type=pa.string()),
        }
    )


def write_audit_parquet(result: AuditResult, folder: str | Path) -> list[Path]:
    """Write the audit's tables into ``folder`` (created); returns the paths written."""
    from kg_rageval.interop.export import write_parquet

    _pa()
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    evals = [ev for run in result.families.values() if run.status == "ran" for ev in run.evaluations]
    written = write_parquet(evals, out)
    for name, table in (("nodes.parquet", nodes_table(result)), ("gates.parquet", gates_table(result))):
        _write_table(table, out / name)
        written.append(out / name)
    return written


def metric_key(name: str) -> str:
    """An audit metric name as an MLflow metric key (characters MLflow refuses -> ``_``)."""
    return _BAD.sub("_", name)


def log_mlflow(
    result: AuditResult,
    tracking_uri: str,
    *,
    files: Sequence[str | Path] = (),
    experiment: str = "kg-rageval",
    run_name: str | None = None,
) -> str:
    """Log the audit to a new MLflow run at ``tracking_uri``; returns the run id."""
    import math

    from kg_rageval.base.errors import ConfigError

    if tracking_uri.startswith("file:") or "://" not in tracking_uri:
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        if "://" not in tracking_uri and not tracking_uri.startswith("file:"):
            tracking_uri = Path(tracking_uri).resolve().as_uri()
    try:
        from mlflow.entities import Metric, RunTag
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise ConfigError("--mlflow needs mlflow: pip install 'kg-rageval[mlflow]'") from None
    import time

    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp is not None else client.create_experiment(experiment)
    run = client.create_run(exp_id, run_name=run_name or result.config.name)
    rid = run.info.run_id
    now = int(time.time() * 1000)
    metrics, tags = [], []
    for name, m in sorted(result.metrics.items()):
        v = m.value
        if v is None or not math.isfinite(float(v)):
            tags.append(RunTag(f"missing.{metric_key(name)}", str(m.missing or "no value")[:5000]))
        else:
            metrics.append(Metric(metric_key(name), float(v), now, 0))
    for status, n in result.status_counts().items():
        metrics.append(Metric(f"gates.{status}", float(n), now, 0))
    tags += [
        RunTag("audit.passed", str(result.passed).lower()),
        RunTag("audit.name", str(result.config.name)),
        RunTag("audit.n_records", str(result.n_records)),
    ]
    tags += [
        RunTag(f"gate.{i}", f"{g.status}: {g.gate}"[:5000]) for i, g in enumerate(result.gate_results, 1)
    ]
    for i in range(0, len(metrics), 1000):  # MLflow takes at most 1000 metrics a batch
        client.log_batch(rid, metrics=metrics[i : i + 1000])
    for i in range(0, len(tags), 100):
        client.log_batch(rid, tags=tags[i : i + 100])
    for f in files:
        p = Path(f)
        if p.is_dir():
            client.log_artifacts(rid, str(p), artifact_path=p.name)
        elif p.is_file():
            client.log_artifact(rid, str(p))
    client.set_terminated(rid, "FINISHED")  # a failed gate is audit.passed=false, not a crash
    return str(rid)
