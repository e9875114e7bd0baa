"""The audit config names an import: ``records: {format: ragas, path: ...}`` (docs/interop.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.runner import run_audit
from kg_rageval.base.errors import ConfigError

FIX = Path(__file__).resolve().parents[1] / ".." / "fixtures"


@pytest.fixture
def workdir(tmp_path):
    shutil.copy(FIX / "audit" / "vehicles.csv", tmp_path / "vehicles.csv")
    rows = [
        {"user_input": "which car?", "response": "a sedan", "reference": "a sedan"},
        {"user_input": "which truck?", "response": "a van", "reference": "a pickup"},
        {"user_input": "which bike?", "reference": "a bicycle"},  # no production answer: a missing run
    ]
    (tmp_path / "ragas.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_audit_reads_a_ragas_import_and_counts_the_missing_run(workdir):
    cfg = config_from_mapping(
        {
            "ontology": "vehicles.csv",
            "records": {"format": "ragas", "path": "ragas.jsonl"},
            "families": {"generation": {}},
            "missing_runs": {"budget": 1.0},
            "min_rows": 1,
            "gates": ["generation.exact_match >= 0.1"],
        },
        base_dir=workdir,
    )
    assert cfg.records == "ragas.jsonl" and cfg.records_format == "ragas"
    res = run_audit(cfg, progress=False)
    c = res.counts["families"]["generation"]
    assert c["family_records"] == 3 and c["missing_runs"] == 1
    gate = res.gate_results[0]
    assert gate.status == "pass" and gate.observed == pytest.approx(
        1 / 3
    )  # sedan == sedan; van != pickup; the missing one scores 0


@pytest.mark.parametrize(
    ("records", "match"),
    [
        (
            {"format": "raga", "path": "x.jsonl"},
            r"records\.format: unknown import format 'raga'.*did you mean 'ragas'",
        ),
        ({"format": "ragas", "path": "x.jsonl", "split": "a"}, r"records\.split: unknown key"),
        ({"format": "ragas"}, r"records: records needs format and path"),
    ],
)
def test_bad_import_in_the_config(records, match, workdir):
    with pytest.raises(ConfigError, match=match):
        config_from_mapping({"ontology": "vehicles.csv", "records": records}, base_dir=workdir)
