"""The file families in the audit: ``trec`` reads its qrels and run from the config's
``qrels``/``run`` keys and its gates read trec_eval's numbers (fixtures/trec_eval/out.test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.runner import run_audit
from kg_rageval.base.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
TE = ROOT / "fixtures" / "trec_eval"


def _expected(name: str) -> float:
    for ln in (TE / "out.test").read_text().splitlines():
        m, q, v = ln.split("\t")
        if m.strip() == name and q == "all":
            return float(v)
    raise KeyError(name)


def _config(tmp_path, **extra):
    (tmp_path / "records.jsonl").write_text('{"id": "r1"}\n')
    data = {
        "ontology": str(ROOT / "ontologies" / "doid-cancer-slim.obo"),
        "records": str(tmp_path / "records.jsonl"),
        "qrels": str(TE / "qrels.test"),
        "run": str(TE / "results.test"),
        "families": {"trec": {"mode": "trec_eval", "measures": ["recip_rank", "bpref", "P(rel=2)@10"]}},
        "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
        "gates": ["recip_rank >= 0.4", "bpref < 0.2", "trec.P(rel=2)@10 > 0", "ERR@10 >= 0"],
        **extra,
    }
    return config_from_mapping(data, base_dir=tmp_path)


def test_trec_gates_in_the_audit_equal_trec_eval(tmp_path):
    res = run_audit(_config(tmp_path), progress=False)
    assert res.families["trec"].status == "ran"
    got = {str(r.gate): (r.status, r.observed) for r in res.gate_results}
    assert got["recip_rank >= 0.4"] == ("pass", pytest.approx(_expected("recip_rank"), abs=5e-5))  # 0.4064
    assert got["bpref < 0.2"] == ("pass", pytest.approx(_expected("bpref"), abs=5e-5))  # 0.1981
    assert got["trec.P(rel=2)@10 > 0"] == ("fail", 0.0)  # qrels.test has no grade 2
    assert got["ERR@10 >= 0"] == ("missing", None)  # not among the configured measures: never a pass


def test_without_its_files_the_trec_family_is_missing_input(tmp_path):
    cfg = _config(tmp_path, run=None)
    res = run_audit(cfg, progress=False)
    assert res.families["trec"].status == "missing_input"
    assert all(r.status == "missing" for r in res.gate_results)


def test_a_bad_measure_option_is_a_config_error(tmp_path):
    cfg = _config(tmp_path, families={"trec": {"measures": ["nDCG@ten"]}}, gates=["trec.RR >= 0"])
    with pytest.raises(ConfigError, match="nDCG@ten"):
        run_audit(cfg, progress=False)


def test_an_empty_run_file_is_a_missing_run_for_every_query_never_a_pass(tmp_path):
    """An empty run (#28: was an IndexError traceback) is a run with no rows: each of the
    qrels' queries is a missing run, so ``bpref < 0.2`` (0 on no rows) must not PASS: the
    default completeness gate (missing_runs.budget 0) fails the audit."""
    (tmp_path / "empty.run").write_text("")
    cfg = _config(tmp_path, run=str(tmp_path / "empty.run"), gates=["bpref < 0.2"])
    res = run_audit(cfg, progress=False)
    assert res.families["trec"].status == "ran"
    got = {str(r.gate): (r.status, r.observed) for r in res.gate_results}
    assert got["bpref < 0.2"] == ("missing", 0.0)  # 0 on no rows: missing evidence, not a pass
    assert got["trec.missing_run_rate <= 0"] == ("fail", 1.0)  # every query is a missing run
    assert not res.passed and res.exit_code == 1
