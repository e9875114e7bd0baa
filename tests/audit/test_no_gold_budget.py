"""The scored-share check (issue #28): a family whose records mostly lack gold decides no gate."""

from __future__ import annotations

import json

import pytest

LEAVES = ["sedan", "hatchback", "submarine", "amphibious_car"]


def _audit(wd, cli, n_empty: int, **extra):
    recs = [
        {"id": f"q{i}", "labels": {"gold": [LEAVES[i % 4]], "pred": [LEAVES[i % 4]]}}
        if i >= n_empty
        else {"id": f"q{i}", "labels": {}}
        for i in range(1000)
    ]
    (wd / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    cfg = {
        "name": "no-gold",
        "ontology": "vehicles.csv",
        "records": "records.jsonl",
        "families": {"hierarchy": {}},
        "gates": ["hierarchy.hierarchical_f1 >= 0.9"],
        **extra,
    }
    (wd / "audit.json").write_text(json.dumps(cfg))
    code, _, err = cli(["audit", "-c", str(wd / "audit.json"), "--out", str(wd / "out"), "-q"])
    report = (
        json.loads((wd / "out" / "report.json").read_text())
        if (wd / "out" / "report.json").exists()
        else None
    )
    return code, report, err


def _gate(report, metric):
    return next(g for g in report["gates"] if g["metric"] == metric)


def test_970_of_1000_without_gold_is_missing_evidence(workdir, cli):
    code, report, _ = _audit(workdir, cli, 970)
    assert code == 1  # before: PASS on the 30 records that kept their gold (F1 1.0)
    f1 = _gate(report, "hierarchy.hierarchical_f1")
    assert f1["status"] == "missing"
    assert "970/1000 hierarchy records have no gold" in f1["reason"]
    share = _gate(report, "hierarchy.no_gold_rate")
    assert share["status"] == "fail" and share["observed"] == pytest.approx(0.97)


def test_a_few_without_gold_stay_within_the_budget(workdir, cli):
    code, report, _ = _audit(workdir, cli, 100)
    assert code == 0
    assert _gate(report, "hierarchy.no_gold_rate")["status"] == "pass"
    assert _gate(report, "hierarchy.hierarchical_f1")["status"] == "pass"


def test_the_budget_is_declared_per_family(workdir, cli):
    code, report, _ = _audit(workdir, cli, 970, no_gold={"budgets": {"hierarchy": 0.99}})
    assert code == 0 and _gate(report, "hierarchy.no_gold_rate")["status"] == "pass"
    code, _, err = _audit(workdir, cli, 970, no_gold={"budgets": {"hierarchi": 0.99}})
    assert code == 2 and "no_gold.budgets: 'hierarchi' is not a family of this audit" in err
