"""``kg-rageval score judges`` and ``score system`` end to end (exit codes, JSON, live judge)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from judge_server import FakeServer

from kg_rageval.cli.main import main


def _write(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(path)


def test_score_judges_json_and_rollup(tmp_path, capsys, fixtures_dir):
    recs = [
        {
            "id": f"r{i}",
            "labels": {"gold": ["car" if i < 2 else "boat"]},
            "judges": [
                {
                    "rubric": "refusal",
                    "judge": "j",
                    "human": h,
                    "output": {"verdict": v, "answerable": True, "refused": v != "correct"},
                }
            ],
        }
        for i, (v, h) in enumerate(
            [
                ("correct", "correct"),
                ("correct", "incorrect"),
                ("incorrect", "incorrect"),
                ("correct", "correct"),
            ]
        )
    ]
    data = _write(tmp_path / "r.jsonl", recs)
    onto = fixtures_dir / "audit" / "vehicles.csv"
    assert main(["score", "judges", "-d", data, "-O", str(onto), "--format", "json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["command"] == "score judges" and out["family"] == "judge" and out["counts"]["records"] == 4
    m = out["metrics"]
    assert m["judge.false_approval_rate"]["value"] == 0.5
    assert m["judge.refusal.false_approval_rate"]["value"] == 0.5
    assert m["judge.false_approval_rate"]["ci"][1] > 0.5  # the family's Wilson interval
    assert out["rollup"]["judge_calibration"]["car"]["metrics"]["false_approval_rate"]["value"] == 1.0
    assert main(["score", "judges", "-d", data, "--ppi-lambda", "x"]) == 2


def test_score_judges_live_endpoint_writes_records(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KGR_CLI_KEY", "sk-very-secret")
    recs = [
        {"id": f"r{i}", "query": "q", "answer": {"text": a}, "reference": {"answer": "Paris"}}
        for i, a in enumerate(["Paris", "Lyon"])
    ]
    data = _write(tmp_path / "r.jsonl", recs)
    out_path = tmp_path / "judged.jsonl"
    with FakeServer({"verdict": "correct", "score": 1.0}) as srv:
        code = main(
            [
                "score",
                "judges",
                "-d",
                data,
                "--endpoint",
                srv.base_url,
                "--model",
                "m",
                "--rubric",
                "answer_correctness",
                "--api-key-env",
                "KGR_CLI_KEY",
                "--concurrency",
                "1",
                "--price-prompt",
                "1",
                "--price-completion",
                "2",
                "--write-records",
                str(out_path),
                "--format",
                "json",
            ]
        )
    cap = capsys.readouterr()
    text = cap.out
    assert code in (0, None) and "sk-very-secret" not in text, cap.err
    out = json.loads(text)
    usage = out["judge_usage"]
    assert out["evaluations"]["judge_calibration"]["meta"]["judge_usage"] == usage
    assert usage["usage"]["requests"] == 2 and usage["usage"]["cost_usd"] == pytest.approx(2 * 140 / 1e6)
    assert usage["settings"]["api_key"] == "***"
    judged = [json.loads(x) for x in out_path.read_text().splitlines()]
    assert [len(r["judges"]) for r in judged] == [1, 1] and "sk-very-secret" not in out_path.read_text()


def test_score_system_records_and_traces(tmp_path, capsys):
    recs = [{"id": f"q{i}", "system": {"latency_ms": {"total": 100 * (i + 1)}}} for i in range(10)]
    data = _write(tmp_path / "s.jsonl", recs)
    assert main(["score", "system", "-d", data, "--bootstrap", "50", "--format", "json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["command"] == "score system" and out["family"] == "system" and out["counts"]["records"] == 10
    m = out["metrics"]["system.latency.total_ms.p95"]
    assert m["value"] == pytest.approx(955.0) and len(m["ci"]) == 2
    assert out["context"]["family"] == "context" and "context.citation_coverage" in out["context"]["metrics"]
    assert main(["score", "system"]) == 2  # neither --data nor --traces
    capsys.readouterr()
    assert main(["score", "system", "-d", data, "--bootstrap", "0"]) in (0, None)
    text = capsys.readouterr().out
    assert (
        "no record has: cost.usd_per_query, latency.generate_ms, latency.rerank_ms, latency.retrieve_ms"
        in text
    )
    assert "latency.total_ms.p95" in text and "latency.rerank_ms.p95" not in text
