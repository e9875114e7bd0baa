"""``kg-rageval audit --parquet DIR --mlflow URI``: per-record results, per-node roll-ups and gates
as Parquet beside the JSON report, and the metrics, gate outcomes, manifest and reports logged to
an MLflow run in a local file store (docs/interop.md, Out)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kg_rageval.cli.main import main

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "audit"


@pytest.fixture
def audit_dir(tmp_path):
    for f in ("real.yaml", "real_records.jsonl", "real_corpus.jsonl", "vehicles.csv"):
        shutil.copy(FIX / f, tmp_path / f)
    return tmp_path


def _report(out):
    return json.loads((out / "report.json").read_text())


def test_audit_parquet_writes_results_nodes_and_gates(audit_dir, capsys):
    pytest.importorskip("pyarrow", reason="the parquet extra")
    import pyarrow.parquet as pq

    out, pqdir = audit_dir / "out", audit_dir / "pq"
    code = main(
        ["audit", "-c", str(audit_dir / "real.yaml"), "--out", str(out), "--parquet", str(pqdir), "-q"]
    )
    assert code in (0, 1)
    report = _report(out)
    assert "wrote parquet" in capsys.readouterr().out
    gates = pq.read_table(pqdir / "gates.parquet").to_pylist()
    assert [g["gate"] for g in gates] == [g["gate"] for g in report["gates"]]
    assert [g["status"] for g in gates] == [g["status"] for g in report["gates"]]
    recall = next(g for g in gates if g["metric"] == "retrieval.recall@10")
    assert recall["observed"] == pytest.approx(0.625)  # (1 + 1 + 0 + 0.5) / 4, fixtures/audit/real.yaml
    met = pq.read_table(pqdir / "retrieval.metrics.parquet").to_pylist()
    assert next(m for m in met if m["metric"] == "retrieval.recall@10")["value"] == pytest.approx(0.625)
    rows = pq.read_table(pqdir / "retrieval.parquet")
    assert rows.num_rows == 4 and "record_id" in rows.column_names
    nodes = pq.read_table(pqdir / "nodes.parquet").to_pylist()
    by_id = {n["node_id"]: n for n in nodes}
    for nid, d in report.get("nodes", {}).items():  # the report's shown nodes agree
        for m, v in d["metrics"].items():
            assert by_id[nid][m] == pytest.approx(v, nan_ok=True) if v is not None else by_id[nid][m] is None


def test_audit_mlflow_logs_to_a_local_file_store(audit_dir, monkeypatch):
    pytest.importorskip("mlflow", reason="the mlflow extra")
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    store = audit_dir / "mlruns"
    out = audit_dir / "out"
    args = ["audit", "-c", str(audit_dir / "real.yaml"), "--out", str(out), "--mlflow", str(store)]
    code = main([*args, "--mlflow-experiment", "kg-test", "-q", "--format", "json"])
    report = _report(out)
    assert code == (0 if report["passed"] else 1)
    client = MlflowClient(tracking_uri=store.resolve().as_uri())
    exp = client.get_experiment_by_name("kg-test")
    (run,) = client.search_runs([exp.experiment_id])
    assert run.data.metrics["retrieval.recall_10"] == pytest.approx(0.625)
    assert run.data.metrics["retrieval.mrr"] == pytest.approx(0.625)
    statuses = [g["status"] for g in report["gates"]]
    for s in ("pass", "fail", "missing"):
        assert run.data.metrics[f"gates.{s}"] == statuses.count(s)
    assert run.data.tags["audit.passed"] == str(report["passed"]).lower()
    assert run.data.tags["gate.1"] == f"{report['gates'][0]['status']}: {report['gates'][0]['gate']}"
    arts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"manifest.json", "report.json"} <= arts
