"""The audit over fixtures/quality (judge, system and context families; numbers worked by
hand in fixtures/quality/audit.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_rageval.audit.config import load_config
from kg_rageval.audit.runner import run_audit
from kg_rageval.cli.main import main

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "quality"


def test_quality_gates_decisions():
    res = run_audit(load_config(FIX / "audit.yaml"), progress=False)
    by = {str(r.gate): r for r in res.gate_results}
    assert by["latency.total_ms.p95 <= 1500"].observed == pytest.approx(2550.0)
    assert by["latency.total_ms.p95 <= 1500"].status == "fail"
    assert by["latency.total_ms.p50 <= 1000"].observed == pytest.approx(900.0)
    assert by["judge.false_approval_rate <= 0.05"].observed == pytest.approx(0.5)
    assert by["judge.false_approval_rate <= 0.05"].status == "fail"
    assert by["judge.accuracy >= 0.7"].observed == pytest.approx(0.75)
    assert by["context.citation_coverage >= 0.4"].observed == pytest.approx(6 / 14)
    assert by["system.cache.retrieval.hit_rate >= 0.5"].status == "pass"
    car = [r for r in res.gate_results if r.gate.scope == "node:car"]
    assert len(car) == 1 and car[0].observed == pytest.approx(400 + 0.95 * 2 * 200)  # 400, 600, 800
    assert res.exit_code == 1


def test_quality_audit_cli(tmp_path):
    assert main(["audit", "--config", str(FIX / "audit.yaml"), "--quiet", "--out", str(tmp_path)]) == 1
    assert (tmp_path / "report.json").is_file()
