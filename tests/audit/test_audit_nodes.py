"""The audit's per-node section is bounded to the nodes shown, gated and driving failures
(``report.node_rollup: true``, ``report.node_depth``); ``"all"`` gives every node, and the
bounded section equals the full one on the nodes it keeps."""

from __future__ import annotations

import json

import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.runner import run_audit

BASE = {
    "ontology": "vehicles.csv",
    "records": "real_records.jsonl",
    "corpus": "real_corpus.jsonl",
    "families": {"hierarchy": {}, "retrieval": {"k": [1, 10]}},
    "missing_runs": {"budget": 1.0},
    "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
    "gates": ["hierarchy.hierarchical_f1 >= 0.99"],
}


def audit(workdir, **report):
    cfg = config_from_mapping(
        {
            **BASE,
            "node_gates": {"sedan": ["hierarchy.exact_accuracy >= 0"]},
            "report": {"formats": ["json"], **report},
        },
        base_dir=workdir,
    )
    return run_audit(cfg, progress=False)


def test_bounded_nodes_equal_full_on_kept_nodes(workdir):
    full = audit(workdir, node_rollup="all").nodes
    # hierarchy gold nodes sedan, hatchback (depth 2); a retrieval query's node is boat (1)
    assert set(full) == {"vehicle", "boat", "car", "sedan", "hatchback"}
    shown = audit(workdir, node_depth=0)
    drivers = {d["node"] for d in shown.drivers}
    assert "hatchback" in drivers and drivers <= {"car", "hatchback"}  # hatchback's hF1 is 2/3
    # depth 0 (vehicle), the gated node (sedan) and the drivers; boat (depth 1) is left out
    assert set(shown.nodes) == {"vehicle", "sedan"} | drivers
    for nid, d in shown.nodes.items():
        assert d == full[nid]
    assert full["car"]["metrics"]["hierarchy.hierarchical_f1"] == pytest.approx(6 / 7)
    assert list(shown.nodes) == [k for k in full if k in shown.nodes]  # same (depth, id) order
    assert audit(workdir, node_rollup=False).nodes == {}
    # the default depth (3) keeps every node of this shallow taxonomy
    assert audit(workdir).nodes == full


def test_report_json_nodes_section_is_the_bounded_one(workdir, tmp_path):
    from kg_rageval.audit.report_json import write_json

    res = audit(workdir, node_depth=0)
    path = tmp_path / "report.json"
    write_json(res, path)
    nodes = json.loads(path.read_text())["nodes"]
    assert set(nodes) == {"vehicle", "sedan"} | {d["node"] for d in res.drivers}  # no boat
    assert "boat" not in nodes and "hatchback" in nodes
    assert nodes["sedan"]["metrics"]["hierarchy.hierarchical_f1"] == 1.0


def test_node_gate_keeps_its_subtree_down_to_node_depth(workdir):
    cfg = config_from_mapping(
        {
            **BASE,
            "node_gates": {"car": ["hierarchy.exact_accuracy >= 0.99"]},
            "report": {"formats": ["json"], "node_depth": 1},
        },
        base_dir=workdir,
    )
    nodes = run_audit(cfg, progress=False).nodes
    # depth <= 1 (vehicle, boat, car) and car's subtree to depth 2 (sedan, hatchback)
    assert set(nodes) == {"vehicle", "boat", "car", "sedan", "hatchback"}
    cfg = config_from_mapping(
        {
            **BASE,
            "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
            "gates": ["hierarchy.exact_accuracy[node:boat] >= 0"],
            "report": {"formats": ["json"], "node_depth": 0},
        },
        base_dir=workdir,
    )
    assert set(run_audit(cfg, progress=False).nodes) == {"vehicle", "boat"}  # all gates pass
