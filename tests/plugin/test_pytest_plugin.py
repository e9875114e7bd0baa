"""The pytest plugin: assert_gates, the assert_gates fixture and the kg_rageval_audit marker."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from kg_rageval.base.errors import ConfigError
from kg_rageval.pytest_plugin import GateFailure, assert_gates, check_gates
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.metric import Metric

pytest_plugins = ["pytester"]

# gold, pred, intent — stub_accuracy 3/5; per branch (subtree pooled): car 3/4, boat 1/2,
# sedan 1/2, submarine 0/1, hatchback 1/1, amphibious_car 1/1
RECORDS = [
    ("r1", "sedan", "sedan", "lookup"),
    ("r2", "sedan", "hatchback", "lookup"),
    ("r3", "hatchback", "hatchback", "compare"),
    ("r4", "submarine", "boat", "compare"),
    ("r5", "amphibious_car", "amphibious_car", "lookup"),
]


def _evaluation():
    from kg_rageval.audit.stub import StubFamily

    rows = [
        {"record_id": r, "correct": float(g == p), "n": 1.0, "gold_node": g, "slice:intent": s}
        for r, g, p, s in RECORDS
    ]
    return build_evaluation(StubFamily(), rows, keys=["gold_node", "slice:intent"])


def test_plain_metrics_pass_and_fail():
    res = assert_gates(
        {"hierarchical_f1": 0.82, "mrr": Metric("mrr", 0.5, 1, 2)},
        {"hierarchical_f1": ">= 0.8", "mrr": "> 0.4"},
        min_rows=1,  # toy data; a denominator of 2 is below the default 30
    )
    assert [r.status for r in res] == ["pass", "pass"]
    with pytest.raises(GateFailure) as exc:
        assert_gates({"hierarchical_f1": 0.75}, {"hierarchical_f1": ">= 0.8"})
    assert "FAIL    hierarchical_f1 >= 0.8: value 0.7500 violates >= 0.8" in str(exc.value)
    assert isinstance(exc.value, AssertionError) and len(exc.value.failed) == 1


def test_missing_evidence_fails():
    with pytest.raises(GateFailure) as exc:
        assert_gates(
            {"hierarchical_f1": 0.9, "recall@10": Metric("recall@10", None, missing="no gold documents")},
            ["hierarchical_f1 >= 0.8", "recall@10 >= 0.85", "ci_low(hierarchical_f1) >= 0.7", "mrr > 0"],
        )
    msg = str(exc.value)
    assert "1 of 4" not in msg and "3 of 4 gate(s) not passed" in msg
    assert "MISSING recall@10 >= 0.85: missing evidence: no gold documents" in msg
    assert "MISSING ci_low(hierarchical_f1) >= 0.7: missing evidence: no confidence interval" in msg
    assert "MISSING mrr > 0: missing evidence: no family produced 'mrr'" in msg
    with pytest.raises(ConfigError, match="no gates"):
        assert_gates({"a": 1.0}, {})


def test_report_dict_and_metric_dicts():
    report = {
        "metrics": {
            "mrr": {"name": "mrr", "value": 0.4},
            "f1": {"name": "f1", "value": None, "missing": "no predictions"},
        }
    }
    results, _ = check_gates(report, {"mrr": ">= 0.3", "f1": ">= 0.1"})
    assert [(r.status, r.observed) for r in results] == [("pass", 0.4), ("missing", None)]
    assert "no predictions" in results[1].reason


def test_evaluation_worst_branches(vehicles):
    ev = _evaluation()
    with pytest.raises(GateFailure) as exc:
        assert_gates(ev, {"stub_accuracy": ">= 0.9"}, ontology=vehicles, top=4, min_rows=1)
    branches = exc.value.branches["stub_accuracy >= 0.9"]
    # the audit's ranking, impact = w·(V − v) with V = 0.6: submarine 1·0.6, sedan 2·0.1 (deeper
    # than boat), boat 2·0.1; car (0.75 over 4 rows) fails the gate but is better than the whole,
    # so it does not drive the failure
    assert [b["node"] for b in branches] == ["submarine", "sedan", "boat"]
    assert [b["value"] for b in branches] == [0.0, 0.5, 0.5]
    assert [round(b["impact"], 12) for b in branches] == [0.6, 0.2, 0.2]
    msg = str(exc.value)
    assert "value 0.6000 (3/5) violates >= 0.9" in msg
    assert "- submarine 'Submarine' (depth 2, n=1): 0.0000" in msg
    assert "hatchback" not in msg.split("worst branches:")[1]  # 1.0 meets the gate
    # the family-qualified name works too; without an ontology there are no branches
    results = assert_gates(ev, {"stub.stub_accuracy": ">= 0.6"}, min_rows=1)
    assert results[0].observed == pytest.approx(0.6)


def test_scoped_gates_from_evaluation(vehicles):
    ev = _evaluation()
    res = assert_gates(
        ev,
        ["stub_accuracy[slice:intent=lookup] >= 0.66", "stub_accuracy[node:car] >= 0.75"],
        ontology=vehicles,
        min_rows=1,
    )
    assert [r.observed for r in res] == [pytest.approx(2 / 3), 0.75]
    # a slice value no row has is a typo, as in the audit: a ConfigError naming the values
    with pytest.raises(
        ConfigError, match=r"no row has intent='lokup' \(did you mean 'lookup'\?\); values: compare, lookup"
    ):
        assert_gates(ev, ["stub_accuracy[slice:intent=lokup] >= 0.5"])


def test_plugin_import_is_light():
    code = (
        "import sys, kg_rageval.pytest_plugin as p; "
        "print(sorted(m for m in ('numpy', 'kg_rageval.audit', 'kg_rageval.results.evaluation', 'scipy') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------- through pytest
@pytest.fixture
def audit_project(pytester, vehicles):
    """A project with an edge table, records and two audit configs, plus a conftest that
    registers the audit's stub family."""
    table = (
        "child\tparent\tlabel\n"
        + "".join(f"{c}\t{p}\t{vehicles.label(c)}\n" for c, p in vehicles.edges())
        + "vehicle\t\tVehicle\n"
    )
    pytester.makefile(".tsv", vehicles=table)
    lines = [
        f'{{"id": "{r}", "slices": {{"intent": "{s}"}}, "labels": {{"gold": ["{g}"], "pred": ["{p}"]}}}}'
        for r, g, p, s in RECORDS
    ]
    pytester.makefile(".jsonl", records="\n".join(lines) + "\n")
    # 5 toy records: min_rows declared (the minimum itself: tests/audit/test_hostile_min_rows.py)
    base = 'ontology = "vehicles.tsv"\nrecords = "records.jsonl"\nmin_rows = 1\n[families.stub]\n'
    pytester.makefile(
        ".toml",
        good='name = "good"\ngates = ["stub_accuracy >= 0.5"]\n' + base,
        bad='name = "bad"\ngates = ["stub_accuracy >= 0.9", "recall@10 >= 0.8"]\n' + base,
    )
    pytester.makeconftest(
        textwrap.dedent("""
        from kg_rageval.audit.families import FamilySpec, register_family
        register_family(FamilySpec("stub", "kg_rageval.audit.stub:score_stub", ("labels",)))
    """)
    )
    return pytester


def test_marker_runs_the_audit(audit_project):
    audit_project.makepyfile(
        test_release=textwrap.dedent("""
        import pytest

        @pytest.mark.kg_rageval_audit("good.toml")
        def test_good(request):
            pass

        @pytest.mark.kg_rageval_audit("bad.toml")
        def test_bad():
            pass

        @pytest.mark.kg_rageval_audit("bad.toml")
        def test_body_fails_first():
            assert 1 == 2, "the body's own failure"

        def test_fixture(assert_gates):
            assert_gates({"hierarchical_f1": 0.7}, {"hierarchical_f1": ">= 0.8"})
    """)
    )
    result = audit_project.runpytest("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=1, failed=3)
    out = result.stdout.str()
    assert "kg-rageval audit 'bad': 2 of 3 gate(s) not passed" in out  # + the missing-run budget gate
    assert "FAIL    stub_accuracy >= 0.9: value 0.6000 (3/5) violates >= 0.9" in out
    assert "MISSING recall@10 >= 0.8" in out
    assert "- submarine 'Submarine' (depth 2, n=1): 0.0000" in out
    assert "the body's own failure" in out
    assert "FAIL    hierarchical_f1 >= 0.8: value 0.7000 violates >= 0.8" in out


def test_marker_without_config_file(pytester):
    pytester.makepyfile(
        textwrap.dedent("""
        import pytest

        @pytest.mark.kg_rageval_audit("nope.toml")
        def test_x():
            pass
    """)
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*audit config*nope.toml does not exist*"])
