"""Issue #19 part B through the audit: verdicts users can trust, every family reachable from
the audit config. Expected figures are worked by hand in each test."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.runner import run_audit
from kg_rageval.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT / "fixtures" / "generation"


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _by_gate(res) -> dict:
    return {str(r.gate): r for r in res.gate_results}


# ---------------------------------------------------------------- faithfulness judge by name
JUDGED = [
    # "sedan" and "car" are in the cited context: supported → 1
    {"id": "j1", "answer": {"text": "A sedan is a car.", "citations": ["d1"]},
     "retrieval": {"contexts": [{"id": "d1", "text": "A sedan is a car."}]}},
    # "boat" is not in the cited context: unsupported → 0
    {"id": "j2", "answer": {"text": "It is a boat.", "citations": ["d2"]},
     "retrieval": {"contexts": [{"id": "d2", "text": "A car."}]}},
]


def _judge_cfg(tmp_path: Path, judge) -> dict:
    _write(tmp_path / "r.jsonl", JUDGED)
    return {"ontology": str(GEN / "vehicles.csv"), "records": "r.jsonl",
            "families": {"generation": {"judge": judge}}, "gates": ["faithfulness >= 0.6"]}


def test_audit_runs_the_ontology_judge_named_in_the_config(tmp_path):
    res = run_audit(config_from_mapping(_judge_cfg(tmp_path, "ontology"), base_dir=tmp_path), progress=False)
    assert res.families["generation"].status == "ran"
    g = _by_gate(res)["faithfulness >= 0.6"]
    assert g.status == "fail" and g.observed == pytest.approx(0.5)


def test_audit_runs_a_judge_plugin(tmp_path, monkeypatch):
    (tmp_path / "my_judges.py").write_text(
        "class Lenient:\n"
        "    def __init__(self, ontology):\n        self.n = len(ontology)\n"
        "    def __call__(self, answer, contexts):\n"
        "        return {'claims': [answer], 'supported': [answer], 'unsupported': []}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    res = run_audit(config_from_mapping(_judge_cfg(tmp_path, "my_judges:Lenient"), base_dir=tmp_path), progress=False)
    g = _by_gate(res)["faithfulness >= 0.6"]
    assert g.status == "pass" and g.observed == 1.0
    sys.modules.pop("my_judges", None)


@pytest.mark.parametrize("name", ["gpt-judge", "no_such_module_xyz:Judge", "kg_rageval.audit.stub:nothing"])
def test_unknown_judge_is_exit_2_naming_the_key(tmp_path, name):
    from kg_rageval.cli.main import main

    cfg = _judge_cfg(tmp_path, name)
    with pytest.raises(ConfigError, match=r"families\.generation\.judge: "):
        run_audit(config_from_mapping(cfg, base_dir=tmp_path), progress=False)
    (tmp_path / "a.json").write_text(json.dumps(cfg))
    assert main(["audit", "--config", str(tmp_path / "a.json"), "--quiet"]) == 2
