"""Hostile inputs: a gate decided on a handful of rows is missing evidence, not a pass (issue #28).

Every point-value gate needs a declared minimum of rows (``min_rows``: 30 by default; a quantile
``pQ`` needs ``ceil(ln 0.05 / ln max(q, 1-q))``, 59 for a p95): the rows a metric rests on are
the smaller of its denominator and the records in the gate's scope (a quantile's values). The
cases are those the hostile run found passing: ``p95(latency.total_ms) <= 1500`` on 3 records,
``kg_faithfulness`` on 1 claim while 99 of 100 answers assert none, and 99 of 100 records with
an empty ``labels: {}``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.gates import evaluate_gates, parse_gate
from kg_rageval.audit.runner import run_audit
from kg_rageval.base.errors import ConfigError
from kg_rageval.contract.gates import RowMinimum, quantile_min_rows, thin_evidence
from kg_rageval.results.metric import Metric

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
VEHICLES = str(FIXTURES / "audit" / "vehicles.csv")


def _write(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _audit(tmp_path: Path, records, gates, families, ontology=VEHICLES, **extra):
    _write(tmp_path / "records.jsonl", records)
    cfg = config_from_mapping(
        {"ontology": ontology, "records": "records.jsonl", "families": families, "gates": gates, **extra},
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    return res, {str(r.gate): r for r in res.gate_results}


def _latencies(n: int):
    return [{"id": f"q{i:03d}", "system": {"latency_ms": {"total": 100.0 + i}}} for i in range(n)]


# ---------------------------------------------------------------------- the rule
def test_quantile_minimum_is_the_distribution_free_bound():
    # reference: the smallest n with max(q, 1-q) ** n <= 0.05 (the sample's extreme value is then
    # a 95 % bound on the quantile), found by counting up
    def ref(q):
        n = 1
        while max(q, 1 - q) ** n > 0.05:
            n += 1
        return n

    assert quantile_min_rows(0.95) == ref(0.95) == 59  # 0.95**58 = 0.0510, 0.95**59 = 0.0485
    assert quantile_min_rows(0.99) == ref(0.99) == 299
    assert quantile_min_rows(0.90) == ref(0.90) == 29
    assert quantile_min_rows(0.50) == ref(0.50) == 5
    assert quantile_min_rows(0.05) == 59  # symmetric: the smallest value bounds a p5
    rule = RowMinimum()
    assert rule.for_gate(parse_gate("p95(latency.total_ms) <= 1500"))[0] == 59
    assert rule.for_gate(parse_gate("p99(latency.total_ms) <= 1500"))[0] == 299
    assert rule.for_gate(parse_gate("p50(latency.total_ms) <= 1500"))[0] == 30  # the default is larger
    assert rule.for_gate(parse_gate("recall@10 >= 0.8"))[0] == 30


def test_rows_are_the_smaller_of_denominator_and_records():
    g = parse_gate("faithfulness >= 0.5")
    rule = RowMinimum()
    assert thin_evidence(g, Metric("f", 1.0, 1, 1, rows=100), rule) == (
        "missing evidence: faithfulness rests on a denominator of 1 over 100 records; "
        "it needs at least 30 rows (min_rows)"
    )
    assert "rests on 3 rows;" in thin_evidence(g, Metric("f", 0.9, 270, 300, rows=3), rule)
    assert thin_evidence(g, Metric("f", 0.9, 27, 30, rows=30), rule) is None  # exactly the minimum
    assert "a denominator of 29 over 30 records" in thin_evidence(g, Metric("f", 1.0, 29, 29, rows=30), rule)
    assert thin_evidence(g, Metric("f", 0.9), rule) is None  # a bare number: no count to check


def test_evaluate_gates_says_missing_with_count_and_minimum():
    metrics = {
        "mrr": Metric("mrr", 0.9, 2.7, 3),
        "recall@10": Metric("recall@10", 0.9, 27, 30),
        "ci": Metric("ci", 0.9, 2.7, 3, ci=(0.8, 0.95)),
    }
    gates = [parse_gate(t) for t in ("mrr >= 0.5", "recall@10 >= 0.5", "ci_low(ci) >= 0.5")]
    res = evaluate_gates(gates, metrics)
    assert [r.status for r in res] == ["missing", "pass", "pass"]  # a bound: bootstrap.min_units
    assert res[0].observed is None
    assert res[0].reason == (
        "missing evidence: mrr rests on a denominator of 3; it needs at least 30 rows (min_rows)"
    )
    low = evaluate_gates(gates, metrics, min_rows=RowMinimum(3))
    assert [r.status for r in low] == ["pass", "pass", "pass"]
    own = evaluate_gates(gates, metrics, min_rows=RowMinimum.of(3, {"recall@10": 31}))
    assert own[1].status == "missing" and "at least 31 rows (min_rows.metrics['recall@10'])" in own[1].reason


# ---------------------------------------------------------------------- p95 on 3 records
def test_p95_on_3_records_is_missing_evidence(tmp_path, cli):
    _write(tmp_path / "records.jsonl", _latencies(3))
    cfg = tmp_path / "audit.json"
    cfg.write_text(
        json.dumps(
            {
                "ontology": VEHICLES,
                "records": "records.jsonl",
                "families": {"system": {}},
                "gates": ["p95(latency.total_ms) <= 1500"],
            }
        )
    )
    out = tmp_path / "out"
    code, _, _ = cli(["audit", "-c", str(cfg), "--out", str(out), "-q"])
    assert code == 1  # before: 0 (p95 of 100, 101, 102 = 101.9 <= 1500)
    gate = next(g for g in json.loads((out / "report.json").read_text())["gates"] if g["use"] == "value")
    assert gate["status"] == "missing" and gate["observed"] is None
    assert "rests on 3 rows; it needs at least 59 rows (a p95 needs 59 rows" in gate["reason"]
    assert "system scored 3 of 3 records" in gate["reason"]
    # the report keeps the count, so the pytest plugin on report.json decides as the audit did
    # (it read no count and passed 101.9 before)
    from kg_rageval.pytest_plugin import check_gates

    report = json.loads((out / "report.json").read_text())
    assert report["metrics"]["system.latency.total_ms.p95"]["rows"] == 3
    (r,), _ = check_gates(report, ["p95(latency.total_ms) <= 1500"])
    assert r.status == "missing" and "rests on 3 rows; it needs at least 59 rows" in r.reason


def test_p95_at_exactly_59_rows_passes_and_58_is_missing(tmp_path):
    res, by = _audit(tmp_path, _latencies(59), ["p95(latency.total_ms) <= 1500"], {"system": {}})
    r = by["latency.total_ms.p95 <= 1500"]
    # type-7 p95 of 100..158: h = 58 * 0.95 = 55.1 -> 155 + 0.1 * (156 - 155)
    assert r.status == "pass" and r.observed == pytest.approx(155.1)
    res, by = _audit(tmp_path, _latencies(58), ["p95(latency.total_ms) <= 1500"], {"system": {}})
    r = by["latency.total_ms.p95 <= 1500"]
    assert r.status == "missing" and "rests on 58 rows; it needs at least 59 rows" in r.reason
    assert res.exit_code == 1


def test_declared_quantile_minimum_replaces_the_rule(tmp_path):
    _, by = _audit(
        tmp_path,
        _latencies(3),
        ["p95(latency.total_ms) <= 1500"],
        {"system": {}},
        min_rows={"metrics": {"p95(latency.total_ms)": 3}},
    )
    r = by["latency.total_ms.p95 <= 1500"]
    assert r.status == "pass" and r.observed == pytest.approx(101.9)  # h = 2 * 0.95 = 1.9


# ---------------------------------------------------------------------- 1 claim of 100 answers
@pytest.fixture()
def catalogue(tmp_path):
    from kg_rageval.ontology import load_ontology
    from kg_rageval.ontology.cache import save_compiled

    d = FIXTURES / "ontology"
    onto = load_ontology(d / "kg_catalogue.csv", triples=str(d / "kg_triples.csv"))
    save_compiled(onto, tmp_path / "cat.kgro")
    return str(tmp_path / "cat.kgro")


def _claims(n_claiming: int, n: int = 100):
    held = ["acme-x1", "compatible-with", "acme-dock"]  # a triple the graph holds: supported
    return [{"id": f"q{i:03d}", "relations": {"claims": [held] if i < n_claiming else []}} for i in range(n)]


def test_kg_faithfulness_on_1_claim_of_100_answers_is_missing(tmp_path, catalogue):
    res, by = _audit(
        tmp_path, _claims(1), ["relations.kg_faithfulness >= 0.9"], {"relations": {}}, ontology=catalogue
    )
    r = by["relations.kg_faithfulness >= 0.9"]
    assert r.status == "missing"  # before: pass, 1/1 = 1.0
    assert "rests on a denominator of 1 over 100 records; it needs at least 30 rows (min_rows)" in r.reason
    assert res.metrics["relations.kg_faithfulness"].value == 1.0  # the number itself is still reported
    assert res.exit_code == 1


def test_kg_faithfulness_on_exactly_30_claims_passes(tmp_path, catalogue):
    res, by = _audit(
        tmp_path, _claims(30), ["relations.kg_faithfulness >= 0.9"], {"relations": {}}, ontology=catalogue
    )
    r = by["relations.kg_faithfulness >= 0.9"]
    assert r.status == "pass" and r.observed == 1.0 and "(30/30)" in r.reason
    assert res.exit_code == 0


# ---------------------------------------------------------------------- empty labels
def _labels(n_gold: int, n: int = 100):
    leaves = ["sedan", "hatchback", "submarine", "amphibious_car"]
    return [
        {
            "id": f"q{i:03d}",
            "labels": {"gold": [leaves[i % 4]], "pred": [leaves[i % 4]]} if i < n_gold else {},
        }
        for i in range(n)
    ]


def test_99_of_100_empty_labels_are_missing_evidence(tmp_path):
    gates = ["hierarchy.hierarchical_f1 >= 0.9", "hierarchy.exact_accuracy >= 0.9"]
    res, by = _audit(tmp_path, _labels(1), gates, {"hierarchy": {}})
    f1, acc = by["hierarchy.hierarchical_f1 >= 0.9"], by["hierarchy.exact_accuracy >= 0.9"]
    assert f1.status == "missing" and acc.status == "missing"  # before: both passed on the one left
    assert "99/100 hierarchy records have no gold to score against" in f1.reason  # no_gold.budget
    # and with the scored-share check waived, the minimum of rows still holds
    res, by = _audit(tmp_path, _labels(1), gates, {"hierarchy": {}}, no_gold={"budget": 1.0})
    f1, acc = by["hierarchy.hierarchical_f1 >= 0.9"], by["hierarchy.exact_accuracy >= 0.9"]
    assert f1.status == "missing" and acc.status == "missing"
    assert "hierarchical_f1 rests on 1 row; it needs at least 30 rows (min_rows)" in f1.reason
    assert "exact_accuracy rests on a denominator of 1 over 1 record" in acc.reason
    # the family's records expose the share: 1 scored, 99 unscored for want of gold
    for r in (f1, acc):
        assert "hierarchy scored 1 of 100 records (unscored: labels.gold is absent ×99)" in r.reason
    assert res.exit_code == 1


def test_30_of_100_labelled_records_pass_only_with_a_declared_no_gold_budget(tmp_path):
    gates = ["hierarchy.exact_accuracy >= 0.9"]
    res, by = _audit(tmp_path, _labels(30), gates, {"hierarchy": {}})
    r = by["hierarchy.exact_accuracy >= 0.9"]  # 70 % without gold: above no_gold.budget 0.25
    assert r.status == "missing" and "70/100 hierarchy records have no gold" in r.reason
    res, by = _audit(tmp_path, _labels(30), gates, {"hierarchy": {}}, no_gold={"budget": 0.7})
    r = by["hierarchy.exact_accuracy >= 0.9"]
    assert r.status == "pass" and r.observed == 1.0 and "(30/30)" in r.reason
    assert res.exit_code == 0


def test_all_empty_labels_is_no_pass(tmp_path, cli):
    _write(tmp_path / "records.jsonl", _labels(0))
    cfg = tmp_path / "audit.json"
    cfg.write_text(
        json.dumps(
            {
                "ontology": VEHICLES,
                "records": "records.jsonl",
                "families": {"hierarchy": {}},
                "gates": ["hierarchy.hierarchical_f1 >= 0.9"],
            }
        )
    )
    code, out, err = cli(["audit", "-c", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert code != 0 and "PASS" not in out
    assert "none of the 100 records has a labels section with gold and pred lists" in err + out


# ---------------------------------------------------------------------- the config
def test_min_rows_config(tmp_path):
    base = {"ontology": VEHICLES, "records": "r.jsonl", "families": {"system": {}}}
    gates = ["p95(latency.total_ms) <= 1500", "latency.total_ms.mean <= 500"]
    cfg = config_from_mapping({**base, "gates": gates, "min_rows": 50}, base_dir=tmp_path)
    assert cfg.min_rows.default == 50
    rule = cfg.min_rows.rule()
    assert [rule.for_gate(g)[0] for g in cfg.all_gates()] == [59, 50]
    cfg = config_from_mapping(
        {**base, "gates": gates, "min_rows": {"default": 5, "metrics": {"latency.total_ms.p95": 20}}},
        base_dir=tmp_path,
    )
    assert [cfg.min_rows.rule().for_gate(g)[0] for g in cfg.all_gates()] == [20, 5]
    with pytest.raises(
        ConfigError, match=r"min_rows.metrics.latency.total_ms.p99: no gate reads this metric"
    ):
        config_from_mapping({**base, "gates": gates, "min_rows": {"metrics": {"p99(latency.total_ms)": 9}}})
    with pytest.raises(ConfigError, match=r"min_rows.default: Input should be greater than or equal to 1"):
        config_from_mapping({**base, "gates": gates, "min_rows": 0})
    with pytest.raises(ConfigError, match=r"min_rows.metrics: Value error, minimum for 'x' must be >= 1"):
        config_from_mapping({**base, "gates": gates, "min_rows": {"metrics": {"x": 0}}})
    # the default leaves the in-memory config hash as it was
    a = config_from_mapping({**base, "gates": gates}, base_dir=tmp_path)
    b = config_from_mapping({**base, "gates": gates, "min_rows": 30}, base_dir=tmp_path)
    assert a.content_hash == b.content_hash
    assert config_from_mapping({**base, "gates": gates, "min_rows": 31}).content_hash != a.content_hash


def test_bounded_gate_keeps_min_units_not_min_rows(tmp_path):
    # 40 values: enough for bootstrap.min_units (30) though below a p95's 59 for a point value
    gates = ["ci_high(p95(latency.total_ms)) <= 1500", "p95(latency.total_ms) <= 1500"]
    _, by = _audit(tmp_path, _latencies(40), gates, {"system": {}}, bootstrap={"n_resamples": 50})
    assert by["ci_high(latency.total_ms.p95) <= 1500"].status == "pass"
    assert by["latency.total_ms.p95 <= 1500"].status == "missing"
    _, by = _audit(tmp_path, _latencies(3), gates[:1], {"system": {}}, bootstrap={"n_resamples": 50})
    assert "needs at least 30 resampling units" in by["ci_high(latency.total_ms.p95) <= 1500"].reason


# ---------------------------------------------------------------------- the pytest plugin
def test_assert_gates_decides_the_minimum_as_the_audit(tmp_path):
    from kg_rageval.ontology import load_ontology
    from kg_rageval.pytest_plugin import GateFailure, assert_gates, check_gates
    from kg_rageval.scoring import get_scorer

    ev = get_scorer("system").score(load_ontology(VEHICLES), _latencies(3)).single
    with pytest.raises(GateFailure) as info:
        assert_gates([ev], ["p95(latency.total_ms) <= 1500"])
    (r,) = info.value.failed
    assert r.status == "missing" and "rests on 3 rows; it needs at least 59 rows" in r.reason
    (ok,) = assert_gates(
        [ev], ["p95(latency.total_ms) <= 1500"], min_rows={"metrics": {"p95(latency.total_ms)": 3}}
    )
    assert ok.status == "pass" and math.isclose(ok.observed, 101.9)
    # a mapping of metrics: the denominator is the count
    (m,), _ = check_gates({"mrr": Metric("mrr", 0.9, 2.7, 3)}, ["mrr >= 0.5"])
    assert m.status == "missing" and "a denominator of 3" in m.reason
    (m,), _ = check_gates({"mrr": Metric("mrr", 0.9, 2.7, 3)}, ["mrr >= 0.5"], min_rows=3)
    assert m.status == "pass"
    with pytest.raises(ConfigError, match="min_rows"):
        check_gates({"mrr": Metric("mrr", 0.9, 2.7, 3)}, ["mrr >= 0.5"], min_rows=0)


def test_point_value_and_bound_of_one_metric_are_decided_apart(tmp_path):
    # on main the second gate's metric (no interval) replaced the first's: the bound read MISSING
    gates = ["ci_high(p95(latency.total_ms)) <= 1500", "p95(latency.total_ms) <= 1500"]
    _, by = _audit(tmp_path, _latencies(59), gates, {"system": {}}, bootstrap={"n_resamples": 50})
    assert by["ci_high(latency.total_ms.p95) <= 1500"].status == "pass"
    assert by["latency.total_ms.p95 <= 1500"].status == "pass"
    assert by["latency.total_ms.p95 <= 1500"].observed == pytest.approx(155.1)
