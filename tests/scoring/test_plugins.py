"""Families from outside the package (issue #27): a real ``kg_rageval.families`` entry point
(a ``*.dist-info/entry_points.txt`` on ``sys.path``, read by importlib.metadata) and a
``module:attribute`` path in the audit config reach the CLI, the audit, the pytest plugin and
``kg-rageval metrics``; a broken entry point is named and breaks nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_helpers import installed_entry_points

from kg_rageval.base.errors import ConfigError
from kg_rageval.scoring import (
    PLUGIN_ERRORS,
    REGISTRY,
    get_scorer,
    load_entry_points,
    load_family,
    unregister,
)

ONTO = str(Path(__file__).resolve().parents[2] / "fixtures" / "audit" / "vehicles.csv")


@pytest.fixture()
def labels(tmp_path):
    """Four records: r0, r1 right, r2 wrong, r3 without a prediction (unscored): accuracy 2/3."""
    path = tmp_path / "records.jsonl"
    rows = [("car", "car"), ("sedan", "sedan"), ("car", "sedan"), ("sedan", None)]
    path.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "labels": {"gold": [g], "pred": [p] if p else []}}) + "\n"
            for i, (g, p) in enumerate(rows)
        )
    )
    return path


@pytest.fixture()
def plugin(tmp_path):
    with installed_entry_points(tmp_path / "site", {"exact_label": "plugin_family:EXACT_LABEL"}):
        yield


@pytest.fixture()
def broken(tmp_path):
    with installed_entry_points(
        tmp_path / "site2",
        {
            "broken": "plugin_family:BROKEN",
            "missing": "no_such_plugin_module:FAMILY",
            "retrieval": "plugin_family:SHADOW",
        },
        dist="bad_plugin",
    ):
        yield


def test_an_entry_point_family_is_registered_when_loaded_explicitly(plugin):
    assert "exact_label" not in REGISTRY  # not on import: loading is explicit
    assert load_entry_points() == ["exact_label"]
    assert load_entry_points() == []  # once per process
    sc = get_scorer("exact_label")
    assert sc.target == "plugin_family:score_exact_label" and sc.metrics[0].family == "exact_label"


def test_cli_metrics_and_score_pick_up_the_entry_point_family(plugin, labels, cli):
    code, out, _ = cli(["metrics", "--family", "exact_label", "--format", "json"])
    assert code == 0
    fam = json.loads(out)["families"]["exact_label"]
    assert [m["name"] for m in fam["metrics"]] == ["exact_label.exact_label_accuracy"]
    assert [p["name"] for p in fam["parameters"]] == ["case_sensitive"]
    code, out, err = cli(["score", "exact_label", "-O", ONTO, "-d", str(labels), "--format", "json"])
    assert code == 0, err
    p = json.loads(out)
    assert p["command"] == "score exact_label" and p["family"] == "exact_label"
    m = p["metrics"]["exact_label.exact_label_accuracy"]
    assert (m["numerator"], m["denominator"]) == (2, 3) and m["value"] == pytest.approx(2 / 3)
    assert p["counts"]["records"] == 4 and p["counts"]["unscored"] == 1
    code, out, _ = cli(["score", "--help"])
    assert "exact_label" in out


def test_audit_and_assert_gates_read_the_entry_point_family(plugin, labels, tmp_path):
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.runner import run_audit
    from kg_rageval.ontology import load_ontology
    from kg_rageval.pytest_plugin import check_gates
    from kg_rageval.records import read_records

    cfg = config_from_mapping(
        {
            "ontology": str(ONTO),
            "records": str(labels),
            "families": {"exact_label": {}},
            "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
            "gates": ["exact_label_accuracy >= 0.5"],
            "missing_runs": {"budget": 0.5},
        }
    )
    res = run_audit(cfg, progress=False)
    got = {r.gate.metric: (r.status, r.observed) for r in res.gate_results}
    assert got["exact_label_accuracy"] == ("pass", pytest.approx(2 / 3))
    assert len(got) == 2 and ("pass", 0.25) in got.values()  # and the missing-run check: 1 of 4 records
    onto = load_ontology(ONTO)
    evs = list(get_scorer("exact_label").score(onto, read_records(labels)).values())
    results, _ = check_gates(evs, ["exact_label.exact_label_accuracy >= 0.9"], ontology=onto, min_rows=1)
    assert [(r.status, r.observed) for r in results] == [("fail", pytest.approx(2 / 3))]


def test_a_module_path_in_the_audit_config_registers_the_family(labels, tmp_path):
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.runner import run_audit

    try:
        cfg = config_from_mapping(
            {
                "ontology": ONTO,
                "records": str(labels),
                "plugins": ["plugin_family:EXACT_LABEL"],
                "families": {"exact_label": {"case_sensitive": False}},
                "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
                "gates": ["exact_label.exact_label_accuracy >= 0.6"],
                "missing_runs": {"budget": 0.5},
            }
        )
        assert [r.status for r in run_audit(cfg, progress=False).gate_results] == ["pass", "pass"]
        assert load_family("plugin_family:EXACT_LABEL") is REGISTRY["exact_label"]  # again: a no-op
    finally:
        unregister("exact_label")
    for path, msg in (
        ("plugin_family:nope", r"plugins\[0\] 'plugin_family:nope' failed to load: AttributeError"),
        ("plugin_family", r"plugins\[0\]: 'plugin_family' is not a 'module:attribute' path"),
        (
            "plugin_family:BROKEN",
            r"plugins\[0\] 'plugin_family:BROKEN' is a str, not a "
            r"kg_rageval.scoring.Scorer",
        ),
        ("plugin_family:SHADOW", r"family 'retrieval' may not shadow the built-in name 'retrieval'"),
    ):
        with pytest.raises(ConfigError, match=msg):
            config_from_mapping({"ontology": ONTO, "records": str(labels), "plugins": [path]})
    assert REGISTRY["retrieval"].target == "kg_rageval.families.retrieval:score_retrieval"


def test_a_broken_entry_point_is_named_and_breaks_no_other_command(broken, labels, cli):
    assert load_entry_points() == []  # none registered, nothing raised
    code, out, err = cli(["score", "hierarchy", "-O", ONTO, "-d", str(labels), "--format", "json"])
    assert code == 0, err
    assert json.loads(out)["family"] == "hierarchy"
    assert set(PLUGIN_ERRORS) == {"broken", "missing", "retrieval"}
    assert PLUGIN_ERRORS["broken"] == (
        "entry point 'broken' (plugin_family:BROKEN of bad_plugin 0.1, group "
        "'kg_rageval.families') is a str, not a kg_rageval.scoring.Scorer"
    )
    assert "No module named 'no_such_plugin_module'" in PLUGIN_ERRORS["missing"]
    assert "may not shadow the built-in name 'retrieval'" in PLUGIN_ERRORS["retrieval"]
    assert REGISTRY["retrieval"].target == "kg_rageval.families.retrieval:score_retrieval"
    code, out, err = cli(["metrics", "--format", "json"])
    assert code == 0 and "hierarchy" in json.loads(out)["families"]
    assert "warning: entry point 'missing' (no_such_plugin_module:FAMILY of bad_plugin 0.1" in err
    with pytest.raises(ConfigError, match=r"family 'broken' is not available: entry point 'broken'"):
        get_scorer("broken")
    code, _, err = cli(["score", "broken", "-O", ONTO, "-d", str(labels)])
    assert code == 2 and "broken" in err
