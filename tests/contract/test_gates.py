"""The one gate expression grammar (kg_rageval.contract.gates): measure names with a parameter
group, function sugar, and the audit re-exporting the same parser."""

from __future__ import annotations

import pytest

from kg_rageval.base.errors import ConfigError
from kg_rageval.contract.gates import Gate, parse_gate
from kg_rageval.contract.names import MetricName


@pytest.mark.parametrize(
    "text, metric, use, scope, op, threshold, canonical",
    [
        ("P(rel=2)@10 >= 0.5", "P(rel=2)@10", "value", None, ">=", 0.5, "P(rel=2)@10 >= 0.5"),
        (
            "ci_low(trec.P(rel=2)@10)>.25",
            "trec.P(rel=2)@10",
            "ci_low",
            None,
            ">",
            0.25,
            "ci_low(trec.P(rel=2)@10) > 0.25",
        ),
        ("RBP(p=0.5, rel=1) <= 1", "RBP(p=0.5, rel=1)", "value", None, "<=", 1.0, "RBP(p=0.5, rel=1) <= 1"),
        (
            "recip_rank[slice:intent=lookup] >= 50%",
            "recip_rank",
            "value",
            "slice:intent=lookup",
            ">=",
            0.5,
            "recip_rank[slice:intent=lookup] >= 0.5",
        ),
        (
            "delta(retrieval.mrr) >= -0.02",
            "delta:retrieval.mrr",
            "value",
            None,
            ">=",
            -0.02,
            "delta:retrieval.mrr >= -0.02",
        ),
        (
            "ci_low(delta(mrr[node:T1])) >= 0",
            "delta:mrr",
            "ci_low",
            "node:T1",
            ">=",
            0.0,
            "ci_low(delta:mrr[node:T1]) >= 0",
        ),
        (
            "ci_high(p95(latency.total_ms)) < 800",
            "latency.total_ms.p95",
            "ci_high",
            None,
            "<",
            800.0,
            "ci_high(latency.total_ms.p95) < 800",
        ),
    ],
)
def test_gate_grammar(text, metric, use, scope, op, threshold, canonical):
    g = parse_gate(text)
    assert (g.metric, g.use, g.scope, g.op, g.threshold) == (metric, use, scope, op, threshold)
    assert str(g) == canonical
    assert parse_gate(str(g)) == g


@pytest.mark.parametrize(
    "text",
    ["ci_mid(mrr) >= 0.5", "__import__('os') >= 1", "P(rel) >= 1", "P(rel=2)(x=1)@10 >= 1", "f(a=1)) >= 0"],
)
def test_a_parameter_group_is_key_value_pairs_only(text):
    with pytest.raises(ConfigError, match="cannot parse gate"):
        parse_gate(text)


def test_metric_names_take_the_same_parameter_group():
    mn = MetricName.parse("ci_low(trec.P(rel=2)@10)[slice:a=b]")
    assert (mn.family, mn.metric, mn.bound, mn.scope) == ("trec", "P(rel=2)@10", "ci_low", "slice:a=b")
    assert str(mn) == "ci_low(trec.P(rel=2)@10[slice:a=b])"
    assert MetricName.parse("RBP(p=0.5)").family is None  # "RBP(p=0" is no family
    with pytest.raises(ConfigError):
        MetricName.parse("f(os)")


def test_the_audit_parses_with_the_contract_grammar():
    from kg_rageval.audit import gates as audit_gates

    assert audit_gates.parse_gate is parse_gate and audit_gates.Gate is Gate
