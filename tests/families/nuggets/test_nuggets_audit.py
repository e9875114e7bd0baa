"""The nuggets family as a release gate: overall, per run (slice) and per ontology branch, and
missing evidence (a branch whose answers have no vital nugget) never a pass."""

from __future__ import annotations

import json

import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.runner import run_audit

S, P, N = "support", "partial_support", "not_support"


def _rec(i, node, run, labels, imps):
    items = [
        {"text": f"n{j}", "importance": imp, "assignment": a} for j, (a, imp) in enumerate(zip(labels, imps))
    ]
    return {"id": f"q{i}", "gold_node": node, "slices": {"run": run}, "nuggets": {"items": items}}


RECORDS = [
    _rec(0, "VH:sedan", "A", [S, P, N, S, P], ["vital"] * 3 + ["okay"] * 2),  # V_strict 1/3
    _rec(1, "VH:hatchback", "A", [S, S], ["vital", "okay"]),  # V_strict 1
    _rec(2, "VH:boat", "B", [S, N], ["okay", "okay"]),  # no vital nugget
]
GATES = [
    "nuggets.vital_strict >= 0.6",
    "nuggets.vital_strict[node:VH:car] >= 0.6",
    "nuggets.all[slice:run=A] >= 0.6",
    "nuggets.vital_strict[node:VH:boat] >= 0.5",
]


def test_nuggets_gates_overall_per_run_and_branch(tmp_path):
    data = tmp_path / "r.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    cfg = config_from_mapping(
        {
            "ontology": str(_onto()),
            "records": str(data),
            "families": {"nuggets": {}},
            "gates": GATES,
            "min_rows": 1,  # a 3-record toy file; a real audit keeps 30
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    by = {str(r.gate): r for r in res.gate_results}
    g = by["nuggets.vital_strict >= 0.6"]
    assert (g.status, g.observed) == ("pass", pytest.approx((1 / 3 + 1) / 2))
    g = by["nuggets.vital_strict[node:VH:car] >= 0.6"]  # sedan + hatchback roll up to car
    assert (g.status, g.observed) == ("pass", pytest.approx(2 / 3))
    g = by["nuggets.all[slice:run=A] >= 0.6"]  # A = (3/5 + 1) / 2
    assert (g.status, g.observed) == ("pass", pytest.approx(0.8))
    assert by["nuggets.vital_strict[node:VH:boat] >= 0.5"].status == "missing"  # no vital nugget: no score
    assert res.exit_code != 0


def _onto():
    from pathlib import Path

    return Path(__file__).resolve().parents[3] / "fixtures" / "hierarchy" / "vehicles.obo"
