"""End-to-end audits on fixtures with known answers, through a stub family (kg_rageval.audit.stub).

fixtures/audit/records.jsonl over the vehicles taxonomy (fixtures/audit/vehicles.csv):
8 records scored, 5 correct → stub_accuracy = 5/8 = 0.625; intent=lookup 3/5, compare 2/3;
subtree car {r1 ✓, r2 ✗, r4 ✓, r6 ✗, r7 ✓} = 3/5; subtree boat {r3 ✓, r4 ✓, r5 ✓, r8 ✗} = 3/4;
r9 has gold labels but no prediction → 1 missing run of 9 records with a labels section.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from kg_rageval.audit.config import config_from_mapping, load_config
from kg_rageval.audit.families import (
    REGISTRY,
    FamilySpec,
    normalize_result,
    register_family,
    unregister_family,
)
from kg_rageval.audit.runner import run_audit
from kg_rageval.base.errors import ConfigError
from kg_rageval.cli.main import main

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "audit"


def _statuses(result):
    return {str(r.gate): r.status for r in result.gate_results}


def test_pass_config_exact_values(stub):
    res = run_audit(load_config(FIX / "pass.yaml"), progress=False)
    assert res.exit_code == 0 and res.passed
    obs = {str(r.gate): r.observed for r in res.gate_results}
    assert obs["stub_accuracy >= 0.6"] == pytest.approx(5 / 8)
    assert obs["stub_accuracy[node:boat] >= 0.75"] == pytest.approx(3 / 4)
    assert obs["stub_accuracy[slice:intent=compare] > 0.6"] == pytest.approx(2 / 3)
    assert obs["stub_accuracy[node:car] == 0.6"] == pytest.approx(3 / 5)
    assert obs["stub.missing_run_rate <= 0.2"] == pytest.approx(1 / 9)
    # the CI bound was computed (seeded) and lies within [0, 1]
    m = res.metrics["stub.stub_accuracy"]
    assert m.value == pytest.approx(0.625) and m.numerator == 5 and m.denominator == 8
    assert res.counts["families"]["stub"]["missing_runs"] == 1
    assert res.counts["families"]["stub"]["unscored_reasons"] == {"missing run": 1}


def test_fail_config(stub):
    res = run_audit(load_config(FIX / "fail.toml"), progress=False)
    assert res.exit_code == 1
    assert _statuses(res) == {
        "stub_accuracy >= 0.7": "fail",
        "stub_accuracy[slice:intent=lookup] >= 0.5": "pass",
        "stub.missing_run_rate <= 0.2": "pass",
    }
    # drivers: branches worse than the global 5/8, ranked by impact = rows × (0.625 − value):
    # hatchback 1 × 0.625, submarine 2 × (0.625 − 0.5), car 5 × (0.625 − 0.6); the root
    # (everything, 0.625) and boat (0.75) drive nothing
    drivers = [(d["node"], round(d["impact"], 6)) for d in res.drivers]
    assert drivers == [("hatchback", 0.625), ("submarine", 0.25), ("car", 0.125)]
    car = res.drivers[2]
    # car lacks 5 × (0.7 − 0.6) = 0.5 of the 8 × (0.7 − 0.625) = 0.6 missing units: 5/6 of the
    # deficit, for 5/8 of the rows
    assert car["deficit"] == pytest.approx(0.5) and car["deficit_share"] == pytest.approx(5 / 6)
    assert car["size_share"] == pytest.approx(5 / 8)


def test_missing_evidence_fails(stub):
    res = run_audit(load_config(FIX / "missing.yaml"), progress=False)
    assert res.exit_code == 1
    st = _statuses(res)
    assert st["faithfulness >= 0.5"] == "missing"
    # 1/9 missing runs is above the 5 % budget: the family's gates are missing evidence
    assert st["stub_accuracy >= 0.5"] == "missing"
    assert st["stub.missing_run_rate <= 0.05"] == "fail"
    by = {str(r.gate): r for r in res.gate_results}
    assert "missing runs above budget" in by["stub_accuracy >= 0.5"].reason
    assert "no family produced 'faithfulness'" in by["faithfulness >= 0.5"].reason


def test_unknown_slice_name_or_value_is_a_config_error(stub, workdir):
    """A slice the records do not have is a typo (exit 2 with a "did you mean"), decided before
    any family runs; a known slice value and node are fine."""
    base = {
        "ontology": "vehicles.csv",
        "records": "records.jsonl",
        "families": {"stub": {}},
        "missing_runs": {"budget": 0.5},
    }
    res = run_audit(
        config_from_mapping(
            {
                **base,
                "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
                "gates": ["stub_accuracy[node:sedan] >= 0.1", "stub_accuracy[slice:intent=lookup] >= 0.1"],
            },
            base_dir=workdir,
        ),
        progress=False,
    )
    assert [r.status for r in res.gate_results[:2]] == ["pass", "pass"]
    with pytest.raises(
        ConfigError,
        match=r"no record has intent='lookp' \(did you mean 'lookup'\?\); values: compare, lookup",
    ):
        run_audit(
            config_from_mapping(
                {**base, "gates": ["stub_accuracy[slice:intent=lookp] >= 0.1"]}, base_dir=workdir
            ),
            progress=False,
        )
    with pytest.raises(ConfigError, match=r"no record has the slice 'intnt' \(did you mean 'intent'\?\)"):
        run_audit(
            config_from_mapping(
                {**base, "gates": ["stub_accuracy[slice:intnt=lookup] >= 0.1"]}, base_dir=workdir
            ),
            progress=False,
        )
    cfg = workdir / "bad.yaml"
    cfg.write_text(
        "ontology: vehicles.csv\nrecords: records.jsonl\nfamilies: {stub: {}}\n"
        "gates: ['stub_accuracy[slice:intent=nosuch] >= 0.1']\n"
    )
    assert main(["audit", "--config", str(cfg), "--quiet"]) == 2


def test_gate_on_unknown_node_is_a_config_error(stub, workdir):
    cfg = config_from_mapping(
        {
            "ontology": "vehicles.csv",
            "records": "records.jsonl",
            "families": {"stub": {}},
            "node_gates": {"sedann": ["stub_accuracy >= 0.1"]},
        },
        base_dir=workdir,
    )
    with pytest.raises(ConfigError, match="node 'sedann' is not in the ontology"):
        run_audit(cfg, progress=False)


def test_gate_on_a_metric_its_family_lacks_is_a_config_error(stub, workdir):
    # the family ran and does not produce the name: a typo, not missing evidence
    cfg = config_from_mapping(
        {
            "ontology": "vehicles.csv",
            "records": "records.jsonl",
            "families": {"stub": {}},
            "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
            "gates": ["stub.stub_acuracy >= 0.1"],
        },
        base_dir=workdir,
    )
    with pytest.raises(
        ConfigError, match="no family produces metric 'stub.stub_acuracy'.*stub.stub_accuracy"
    ):
        run_audit(cfg, progress=False)


def test_no_gates_fails(stub, workdir):
    cfg = config_from_mapping(
        {
            "ontology": "vehicles.csv",
            "records": "records.jsonl",
            "families": {"stub": {}},
            "missing_runs": {"budget": 1.0},
        },
        base_dir=workdir,
    )
    res = run_audit(cfg, progress=False)
    assert res.exit_code == 1
    assert res.gate_results[-1].status == "missing" and "no gates" in res.gate_results[-1].reason


def test_family_without_evidence_or_module(workdir):
    register_family(FamilySpec("ghost", "kg_rageval.no_such_module:score", ("labels",)))
    register_family(FamilySpec("nosection", "kg_rageval.audit.stub:score_stub", ("nothing_here",)))
    register_family(FamilySpec("broken", "kg_rageval.audit.stub:StubFamily", ("labels",)))  # wrong call
    try:
        cfg = config_from_mapping(
            {
                "ontology": "vehicles.csv",
                "records": "records.jsonl",
                "families": {"ghost": {}, "nosection": {}, "broken": {}},
                "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
                "gates": ["ghost.x >= 0", "nosection.stub_accuracy >= 0", "broken.y >= 0"],
            },
            base_dir=workdir,
        )
        res = run_audit(cfg, progress=False)
    finally:
        for n in ("ghost", "nosection", "broken"):
            unregister_family(n)
    assert res.families["ghost"].status == "unavailable"
    assert res.families["nosection"].status == "no_evidence"
    assert res.families["broken"].status == "error"
    assert [r.status for r in res.gate_results] == ["missing"] * 3
    assert "did not run (unavailable" in res.gate_results[0].reason


def test_ambiguous_metric_needs_family_prefix(workdir):
    register_family(FamilySpec("stub", "kg_rageval.audit.stub:score_stub", ("labels",)))
    register_family(FamilySpec("stub2", "kg_rageval.audit.stub:score_stub", ("labels",)))
    try:
        cfg = config_from_mapping(
            {
                "ontology": "vehicles.csv",
                "records": "records.jsonl",
                "families": {"stub": {}, "stub2": {}},
                "missing_runs": {"budget": 0.5},
                "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
                "gates": ["stub_accuracy >= 0.5", "stub2.stub_accuracy >= 0.5"],
            },
            base_dir=workdir,
        )
        res = run_audit(cfg, progress=False)
    finally:
        unregister_family("stub")
        unregister_family("stub2")
    assert res.gate_results[0].status == "missing" and "ambiguous" in res.gate_results[0].reason
    assert res.gate_results[1].status == "pass" and res.gate_results[1].observed == pytest.approx(0.625)


def test_config_errors_name_file_and_key(tmp_path):
    p = tmp_path / "a.yaml"
    p.write_text("ontology: x.csv\nrecords: r.jsonl\ngate: ['a >= 1']\nbootstrap: {n_resamples: 0}\n")
    with pytest.raises(ConfigError) as exc:
        load_config(p)
    msg = str(exc.value)
    assert str(p) in msg and "gate: unknown key" in msg and "bootstrap.n_resamples" in msg
    p.write_text("records: r.jsonl\ngates: ['a = 1', 'b >= 1', 'c >=']\n")
    with pytest.raises(ConfigError) as exc:
        load_config(p)
    assert "ontology: required key is missing" in str(exc.value)
    p.write_text(
        "ontology: x.csv\nrecords: r.jsonl\ngates: ['a = 1', 'b >= 1', 'c >=']\n"
        "slice_gates: {intent: ['d >= 1']}\n"
    )
    with pytest.raises(ConfigError) as exc:
        load_config(p)
    msg = str(exc.value)
    assert (
        "3 invalid gates" in msg and "gates[0]" in msg and "gates[2]" in msg and "slice_gates.intent" in msg
    )
    bad = tmp_path / "b.toml"
    bad.write_text("ontology = [")
    with pytest.raises(ConfigError, match=r"b\.toml: cannot parse the config: Invalid value"):
        load_config(bad)
    (tmp_path / "c.ini").write_text("x")
    with pytest.raises(ConfigError, match="unknown config file type '.ini'; use .yaml, .yml, .json or .toml"):
        load_config(tmp_path / "c.ini")
    (tmp_path / "d.json").write_text('{"name": "x",}')
    with pytest.raises(
        ConfigError, match=r"d\.json: cannot parse the config: Expecting property name .*line 1 column 14"
    ):
        load_config(tmp_path / "d.json")


def test_cli_exit_codes(stub, tmp_path, capsys):
    assert main(["audit", "--config", str(FIX / "pass.yaml"), "--quiet"]) == 0
    assert main(["audit", "--config", str(FIX / "fail.toml"), "--quiet"]) == 1
    assert main(["audit", "--config", str(FIX / "missing.yaml"), "--quiet"]) == 1
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        f"ontology: {FIX / 'vehicles.csv'}\nrecords: nope.jsonl\ngates: ['stub_accuracy >= 0.1']\n"
    )
    assert main(["audit", "--config", str(bad), "--quiet"]) == 2  # records file missing
    assert main(["audit", "--config", str(tmp_path / "absent.yaml"), "--quiet"]) == 2
    assert main(["audit", "--quiet"]) == 2  # no config
    err = capsys.readouterr().err
    assert "records file does not exist" in err and "no such config file" in err


def test_cli_json_output(stub, capsys):
    code = main(["audit", "--config", str(FIX / "fail.toml"), "--quiet", "--format", "json"])
    assert code == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["exit_code"] == 1 and payload["summary"]["fail"] == 1


def _no_nan(obj):
    if isinstance(obj, float):
        assert math.isfinite(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _no_nan(v)
    elif isinstance(obj, list):
        for v in obj:
            _no_nan(v)


def test_reports_round_trip_and_junit(stub, tmp_path):
    from kg_rageval.audit.report_json import dumps, report_dict
    from kg_rageval.audit.reports import write_reports

    res = run_audit(load_config(FIX / "missing.yaml"), progress=False)
    written = write_reports(res, tmp_path)
    text = Path(written["json"]).read_text()
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-finite {c} in JSON"))
    _no_nan(doc)
    assert json.loads(dumps(doc)) == doc == json.loads(dumps(report_dict(res)))
    assert doc["summary"] == {
        "pass": 0,
        "fail": 1,
        "missing": 3,
        "gates": 4,
        "records": 10,
        "seconds": doc["summary"]["seconds"],
    }
    assert doc["coverage"]["axes"]["intent"] == ["compare", "lookup"]
    assert doc["nodes"]["car"]["metrics"]["stub.stub_accuracy"] == pytest.approx(0.6)
    assert doc["relations"] == {"stub": {"exact": 5, "parent": 2, "sibling": 1}}
    root = ET.parse(written["junit"]).getroot()
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == 4 and suite.get("failures") == "4"
    kinds = sorted(c.find("failure").get("type") for c in cases)
    assert kinds == ["gate-failed", "missing-evidence", "missing-evidence", "missing-evidence"]
    md = Path(written["markdown"]).read_text()
    assert md.startswith("# Audit vehicles-missing: FAILED") and "| MISSING | `faithfulness >= 0.5`" in md
    html = Path(written["html"]).read_text()
    # self-contained: one inline script (table sorting/filtering), nothing loaded from elsewhere
    assert html.count("<script") == 1 and "<script>" in html and " src=" not in html
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html


def test_coverage_and_exclusions(stub):
    res = run_audit(load_config(FIX / "pass.yaml"), progress=False)
    cov = res.coverage
    # branches: the two depth-1 nodes plus "(no gold node)" for r10; doc types from the corpus
    assert cov["axes"]["branch"] == ["(no gold node)", "boat", "car"]
    assert cov["axes"]["doc_type"] == ["(none)", "definition", "manual"]
    cells = {(c["intent"], c["doc_type"], c["branch"]): c["n"] for c in cov["cells"]}
    assert cells[("lookup", "(none)", "car")] == 2  # r7, r9
    assert cells[("lookup", "definition", "car")] == 2  # r1, r2
    assert cells[("lookup", "manual", "boat")] == 1  # r8
    assert cov["n_cells"] == 18 and cov["n_empty"] == 11 and cov["n_thin"] == 7
    ex = res.exclusions
    assert ex == {
        "gold_documents": 3,
        "excluded_by_filter": {"category": 1},
        "excluded_by_branch": {"car": 1},
        "excluded_by_entitlement": 1,
        "inconsistent_filter_log": 0,
        "inconsistent_examples": [],
    }


def test_baseline_deltas_and_budget(stub, workdir):
    base = workdir / "baseline.jsonl"
    lines = [json.loads(x) for x in (workdir / "records.jsonl").read_text().splitlines()]
    for r in lines:  # the baseline gets r2 and r6 right, r1 wrong: 6/8 correct
        if r["id"] in ("r2", "r6"):
            r["labels"]["pred"] = r["labels"]["gold"]
        if r["id"] == "r1":
            r["labels"]["pred"] = ["hatchback"]
    base.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    cfg = config_from_mapping(
        {
            "ontology": "vehicles.csv",
            "records": "records.jsonl",
            "families": {"stub": {}},
            "missing_runs": {"budget": 0.5},
            "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
            "gates": ["stub_accuracy >= 0.5"],
            "baseline": {"records": "baseline.jsonl", "budgets": {"stub_accuracy": 0.1}},
            "bootstrap": {"n_resamples": 300, "seed": 3, "min_units": 5},
        },
        base_dir=workdir,
    )
    res = run_audit(cfg, progress=False)
    d = res.metrics["delta:stub.stub_accuracy"]
    assert d.value == pytest.approx(5 / 8 - 6 / 8)
    assert d.ci is not None and d.ci[0] <= d.value <= d.ci[1]
    st = _statuses(res)
    assert st["delta:stub_accuracy >= -0.1"] == "fail"  # regression of 0.125 > budget 0.1
    worst = res.baseline["worst_queries"]["stub.stub_accuracy"]
    # per-query deltas, worst first: r2 and r6 regress (0 - 1), r1 improves (1 - 0)
    assert [(w["record_id"], w["delta"]) for w in worst] == [("r2", -1.0), ("r6", -1.0), ("r1", 1.0)]
    # HTML: delta rows sit in the baseline section (gated ones shown), not in the metrics table
    from kg_rageval.audit.report_html import html_report

    html = html_report(res)
    metrics_part = html.split("<h2>Metrics</h2>", 1)[1].split("<h2>Baseline comparison</h2>", 1)[0]
    baseline_part = html.split("<h2>Baseline comparison</h2>", 1)[1]
    assert "delta:" not in metrics_part
    assert (
        "<th>gated delta</th>" in baseline_part and "<code>delta:stub.stub_accuracy</code>" in baseline_part
    )
    assert "-0.1250" in baseline_part.split("</table>", 1)[0]
    # the failed delta gate lists the records that regressed: r2 and r6 (1 → 0), not r1 (0 → 1)
    (fd,) = [f for f in res.failing if f["gate"].startswith("delta:")]
    assert [(r["id"], r["value"], r["baseline"], r["deficit"]) for r in fd["records"]] == [
        ("r2", 0.0, 1.0, 1.0),
        ("r6", 0.0, 1.0, 1.0),
    ]
    assert fd["n_driving"] == 2 and fd["records"][0]["gold"] == ["hatchback"]


def test_manifest_verify(stub, workdir, capsys):
    out = workdir / "out"
    assert main(["audit", "--config", str(workdir / "pass.yaml"), "--out", str(out), "--quiet"]) == 0
    man = json.loads((out / "manifest.json").read_text())["manifest"]
    assert man["inputs"]["ontology"]["content_hash"].startswith("sha256:")
    assert man["families"]["stub"]["versions"] == ["kg_rageval.stub.v1"]
    assert man["seeds"]["bootstrap_seed"] == 7
    assert main(["audit", "--verify", str(out / "manifest.json"), "--quiet"]) == 0
    assert "verified: identical numbers" in capsys.readouterr().out
    rec = workdir / "records.jsonl"
    rec.write_text(rec.read_text().replace('"pred": ["boat"]', '"pred": ["submarine"]'))
    assert main(["audit", "--verify", str(out / "manifest.json"), "--quiet"]) == 4  # not verified
    out_text = capsys.readouterr().out
    assert "input records changed" in out_text and "metric values or gate decisions differ" in out_text


def test_normalize_result_shapes(stub):
    from dataclasses import dataclass

    from kg_rageval.audit.stub import StubFamily
    from kg_rageval.results.builders import empty_evaluation

    a, b = empty_evaluation(StubFamily()), empty_evaluation(StubFamily())

    @dataclass
    class Res:
        first: object
        more: dict

    assert normalize_result(a) == [a]
    assert normalize_result({"x": a, "y": [b, a]}) == [a, b]
    assert normalize_result(Res(a, {"k": b})) == [a, b]
    assert normalize_result(None) == [] and "stub" in REGISTRY


def test_slices_option_limits_breakdowns(stub, workdir):
    base = {
        "ontology": "vehicles.csv",
        "records": "records.jsonl",
        "families": {"stub": {}},
        "missing_runs": {"budget": 0.5},
        "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
        "gates": ["stub_accuracy >= 0"],
    }
    res = run_audit(config_from_mapping(base, base_dir=workdir), progress=False)
    lookup = res.slices["stub"]["slice:intent"]["lookup"]
    assert lookup["n"] == 5 and lookup["metrics"]["stub_accuracy"]["value"] == pytest.approx(0.6)
    res = run_audit(config_from_mapping({**base, "slices": ["region"]}, base_dir=workdir), progress=False)
    assert res.slices == {}


def test_families_shorthands(workdir):
    a = config_from_mapping(
        {"ontology": "o.csv", "records": "r.jsonl", "families": ["hierarchy", "retrieval"]}
    )
    b = config_from_mapping({"ontology": "o.csv", "records": "r.jsonl", "families": {"hierarchy": None}})
    assert a.families == {"hierarchy": {}, "retrieval": {}} and b.families == {"hierarchy": {}}
    with pytest.raises(ConfigError, match="families.hierarchy"):
        config_from_mapping({"ontology": "o.csv", "records": "r.jsonl", "families": {"hierarchy": 3}})


def test_config_errors_are_one_line_exit_2(tmp_path):
    from click.testing import CliRunner

    from kg_rageval.cli.main import cli

    cfg = tmp_path / "bad.yaml"
    cfg.write_text(
        f"name: x\nontology: {FIX / 'vehicles.csv'}\nrecords: {FIX / 'records.jsonl'}\n"
        'families: {hierarchy: {}}\ngates: ["a >> 1", "b >= x"]\n'
    )
    res = CliRunner().invoke(cli, ["audit", "-c", str(cfg), "-o", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 2
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        f"error: {cfg}: 2 invalid gates: gates[0]: cannot parse gate 'a >> 1'"
    )
    assert "; gates[1]: cannot parse gate 'b >= x'" in lines[0]
