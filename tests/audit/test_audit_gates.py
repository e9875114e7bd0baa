"""Gate syntax, canonical form and decisions (kg_rageval.audit.gates)."""

from __future__ import annotations

import pytest

from kg_rageval.audit.gates import Gate, RowMinimum, evaluate_gates, parse_gate, parse_gates
from kg_rageval.base.errors import ConfigError
from kg_rageval.results.metric import Metric


@pytest.mark.parametrize(
    "text, gate",
    [
        ("recall@10 >= 0.85", Gate("recall@10", ">=", 0.85)),
        ("  mrr>0.6 ", Gate("mrr", ">", 0.6)),
        ("filter_false_exclusion_rate <= 0.02", Gate("filter_false_exclusion_rate", "<=", 0.02)),
        ("hierarchical_f1[node:TA0005] >= 0.7", Gate("hierarchical_f1", ">=", 0.7, "node:TA0005")),
        ("ci_low(faithfulness) >= 0.8", Gate("faithfulness", ">=", 0.8, None, "ci_low")),
        ("ci_high(x[slice:intent=lookup]) < 1e-1", Gate("x", "<", 0.1, "slice:intent=lookup", "ci_high")),
        ("ci_low(mrr)[slice:intent=lookup] >= .5", Gate("mrr", ">=", 0.5, "slice:intent=lookup", "ci_low")),
        ("retrieval.ndcg@10 == 1", Gate("retrieval.ndcg@10", "==", 1.0)),
        ("delta:recall@10 >= -0.02", Gate("delta:recall@10", ">=", -0.02)),
        ("nil_recall >= 85%", Gate("nil_recall", ">=", 0.85)),
        ("x[node:DOID:2531] >= 0.7", Gate("x", ">=", 0.7, "node:DOID:2531")),
    ],
)
def test_parse_and_canonical_round_trip(text, gate):
    g = parse_gate(text)
    assert g == gate
    assert parse_gate(str(g)) == g


def test_canonical_strings():
    assert (
        str(parse_gate("ci_low(mrr)[slice:intent=lookup]>=.5")) == "ci_low(mrr[slice:intent=lookup]) >= 0.5"
    )
    assert str(parse_gate("recall@10>=0.850")) == "recall@10 >= 0.85"
    assert parse_gate("a >= 1").key == "a" and parse_gate("a[node:X] >= 1").key == "a[node:X]"


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("recall@10 = 0.8", "use '=='"),
        ("recall@10 0.8", "no comparison operator"),
        ("recall@10 >= high", "cannot parse"),
        ("recall@10[team:x] >= 0.1", "scope"),
        ("recall@10[slice:intent] >= 0.1", "slice:<name>=<value>"),
        ("ci_mid(mrr) >= 0.5", "cannot parse"),
        ("__import__('os') >= 1", "cannot parse"),
        ("ci_low >= 0.5", "needs parentheses"),
    ],
)
def test_parse_errors_name_the_gate(text, fragment):
    with pytest.raises(ConfigError) as exc:
        parse_gate(text)
    assert fragment in str(exc.value)
    assert repr(text) in str(exc.value)


def test_all_parse_errors_at_once():
    with pytest.raises(ConfigError) as exc:
        parse_gates(["a >= 1", "b = 1", "c >> 2", "d <= 0.5"], source="audit.yaml")
    msg = str(exc.value)
    assert msg.startswith("audit.yaml: 2 invalid gates")
    assert "gates[1]" in msg and "gates[2]" in msg and "gates[0]" not in msg


def test_gate_rejects_bad_fields():
    with pytest.raises(ConfigError):
        Gate("m", "=>", 1.0)
    with pytest.raises(ConfigError):
        Gate("m", ">=", float("nan"))
    with pytest.raises(ConfigError):
        Gate("m", ">=", 1.0, use="median")


def test_evaluate_statuses():
    metrics = {
        "recall@10": Metric("recall@10", 0.9, 9, 10),
        "mrr": Metric("mrr", 0.55, 5.5, 10, ci=(0.4, 0.7)),
        "nil_recall": Metric("nil_recall", None, 0, 0, missing="no gold NIL mentions"),
        "x[slice:intent=a]": Metric("x", 0.3),
        "eq": Metric("eq", 0.1 + 0.2),
    }
    gates = [
        parse_gate(t)
        for t in [
            "recall@10 >= 0.9",  # pass at the boundary
            "recall@10 > 0.9",  # fail at the boundary
            "mrr >= 0.5",  # pass
            "ci_low(mrr) >= 0.5",  # fail: lower bound 0.4
            "ci_high(mrr) >= 0.7",  # pass
            "nil_recall >= 0.5",  # missing: empty denominator
            "ndcg@10 >= 0.5",  # missing: no such metric
            "x[slice:intent=a] < 0.5",  # pass, scoped key
            "eq == 0.3",  # pass within 1e-12
        ]
    ]
    res = evaluate_gates(gates, metrics, min_rows=RowMinimum(1))  # the minimum: test_min_rows_*
    assert [r.status for r in res] == [
        "pass",
        "fail",
        "pass",
        "fail",
        "pass",
        "missing",
        "missing",
        "pass",
        "pass",
    ]
    assert res[0].observed == 0.9 and "(9/10)" in res[0].reason
    assert res[3].observed == 0.4
    assert res[5].observed is None and "no gold NIL mentions" in res[5].reason
    assert "no family produced 'ndcg@10'" in res[6].reason


def test_bound_without_interval_is_missing():
    res = evaluate_gates([parse_gate("ci_low(mrr) >= 0.1")], {"mrr": Metric("mrr", 0.9)})
    assert res[0].status == "missing" and "no confidence interval" in res[0].reason


def test_non_finite_values_are_missing_not_compared():
    from kg_rageval.audit.gates import metric_dict

    nan = Metric("x", float("nan"))
    res = evaluate_gates(
        [parse_gate("x <= 1"), parse_gate("ci_low(y) >= 0")],
        {"x": nan, "y": Metric("y", 0.5, ci=(float("-inf"), 1.0))},
    )
    assert [r.status for r in res] == ["missing", "missing"]
    assert metric_dict(nan)["value"] is None and "non-finite" in metric_dict(nan)["missing"]
