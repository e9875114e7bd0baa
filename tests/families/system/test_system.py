"""System-level metrics: latency quantiles (and their bootstrap), cost, cache; context."""

from __future__ import annotations

import numpy as np
import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.families.system import QuantileEvaluation, score_context, score_system, weighted_quantile


def _records(lat, **extra):
    recs = []
    for i, t in enumerate(lat):
        s = {
            "latency_ms": {"total": t, "retrieve": t / 10},
            "cost_usd": t / 1e5,
            "tokens": {"prompt": 100, "completion": 10 + i},
            "cache": {"retrieval": i % 4 == 0},
        }
        recs.append({"id": f"q{i}", "system": s, "slices": {"intent": "a" if i % 2 else "b"}, **extra})
    return recs


def test_quantiles_match_numpy_and_missing_timings_are_counted():
    rng = np.random.default_rng(1)
    lat = rng.lognormal(6, 0.5, 200).round(1)
    recs = _records(lat.tolist())
    recs.append({"id": "no-timing", "system": {"cost_usd": 0.0}})
    recs.append({"id": "no-section"})
    ev = score_system(None, recs)
    assert isinstance(ev, QuantileEvaluation)
    m = ev.metrics()
    for q in (50, 95, 99):
        assert m[f"latency.total_ms.p{q}"].value == pytest.approx(np.quantile(lat, q / 100))
    assert m["latency.total_ms.mean"].value == pytest.approx(lat.mean())
    assert m["latency.total_ms.max"].value == lat.max()
    assert (m["latency.total_ms.n_missing"].value, m["latency.total_ms.missing_rate"].denominator) == (1, 201)
    costs = np.append(lat / 1e5, 0.0)
    assert m["cost.usd_per_query.p99"].value == pytest.approx(np.quantile(costs, 0.99))
    assert m["cost.usd_per_query.mean"].value == pytest.approx(costs.mean())
    assert m["cost.usd_total"].value == pytest.approx(costs.sum())
    assert m["cache.retrieval.hit_rate"].value == 0.25 and m["cache.retrieval.hit_rate"].denominator == 200
    assert m["tokens.total.mean"].value == pytest.approx(110 + 99.5)
    assert m["latency.rerank_ms.p95"].value is None and m["latency.rerank_ms.n_missing"].value == 201
    assert ev.unscored == [{"record_id": "no-section", "reason": "no system section", "code": "no_section"}]
    # sums alone never invent a quantile
    assert (
        ev.family.finalize(ev.totals())["latency.total_ms.p95"].missing
        == "a quantile needs the rows, not sums"
    )


def test_breakdown_and_rollup_use_the_group_rows(vehicles):
    lat = [100, 200, 300, 400, 1000, 2000]
    nodes = ["sedan", "sedan", "hatchback", "submarine", "amphibious_car", "submarine"]
    recs = [dict(r, gold_node=n) for r, n in zip(_records(lat), nodes)]
    ev = score_system(None, recs)
    by = ev.breakdown("slice:intent")
    a = [lat[i] for i in range(6) if i % 2]
    assert by["a"]["metrics"]["latency.total_ms.p95"].value == pytest.approx(np.quantile(a, 0.95))
    roll = ev.rollup(vehicles)
    car = [100, 200, 300, 1000]  # sedan, hatchback, amphibious_car
    boat = [400, 1000, 2000]  # submarine, amphibious_car
    assert roll["car"]["metrics"]["latency.total_ms.p50"].value == pytest.approx(np.median(car))
    assert roll["boat"]["metrics"]["latency.total_ms.p95"].value == pytest.approx(np.quantile(boat, 0.95))
    assert roll["vehicle"]["n"] == 6
    assert roll["vehicle"]["metrics"]["latency.total_ms.p99"].value == pytest.approx(np.quantile(lat, 0.99))
    # merge of partitions = scored at once
    left, right = score_system(None, recs[:3]), score_system(None, recs[3:])
    merged = left.merge(right)
    assert isinstance(merged, QuantileEvaluation)
    assert merged.metrics()["latency.total_ms.p95"].value == ev.metrics()["latency.total_ms.p95"].value


def test_weighted_quantile_equals_repeat():
    rng = np.random.default_rng(0)
    for _ in range(50):
        v = rng.normal(size=20)
        w = rng.integers(0, 4, 20).astype(float)
        if w.sum() == 0:
            continue
        for q in (0.0, 0.5, 0.95, 0.99, 1.0):
            assert weighted_quantile(v, q, w) == pytest.approx(np.quantile(np.repeat(v, w.astype(int)), q))


def test_bootstrap_ci_on_quantiles_matches_hand_resampling():
    rng = np.random.default_rng(7)
    lat = rng.exponential(300, 120)
    ev = score_system(None, _records(lat.tolist()))
    reps = ev.bootstrap_replicates(n_resamples=300, seed=4, metrics=["latency.total_ms.p95"])
    ids = np.unique(np.asarray([f"q{i}" for i in range(120)]))  # record ids sorted as text
    vals = {f"q{i}": lat[i] for i in range(120)}
    x = np.asarray([vals[i] for i in ids])
    r2 = np.random.default_rng(4)
    hand = [np.quantile(x[r2.integers(0, 120, 120)], 0.95) for _ in range(300)]
    assert reps["latency.total_ms.p95"] == pytest.approx(hand)
    ci = ev.bootstrap(n_resamples=300, seed=4, metrics=["latency.total_ms.p95"])["latency.total_ms.p95"]
    assert ci == pytest.approx(tuple(np.quantile(hand, [0.025, 0.975])))


@pytest.mark.slow
def test_bootstrap_quantile_ci_coverage():
    """Percentile-bootstrap intervals of the p95 of exponential latencies (n = 300) cover the
    true p95 (−300·ln 0.05) in about 95 % of 100 simulations (accept 85-100 %)."""
    rng = np.random.default_rng(11)
    true = -300 * np.log(0.05)
    hits = 0
    for k in range(100):
        ev = score_system(None, _records(rng.exponential(300, 300).tolist()))
        reps = ev.bootstrap_replicates(n_resamples=200, seed=k, metrics=["latency.total_ms.p95"])
        lo, hi = np.quantile(reps["latency.total_ms.p95"], [0.025, 0.975])
        hits += lo <= true <= hi
    assert 0.85 <= hits / 100 <= 1.0


def test_bad_system_fields():
    with pytest.raises(InputError, match=r"system\.latency_ms\.total: expected a finite non-negative"):
        score_system(None, [{"id": "a", "system": {"latency_ms": {"total": -1}}}])
    with pytest.raises(InputError, match=r"system\.cache\.llm"):
        score_system(None, [{"id": "a", "system": {"cache": {"llm": "yes"}}}])
    with pytest.raises(InputError, match=r"system\.latency: unknown field"):
        score_system(None, [{"id": "a", "system": {"latency": {}}}])
    with pytest.raises(InputError, match=r"system\.tokens\.prompt: expected a non-negative integer"):
        score_system(None, [{"id": "a", "system": {"tokens": {"prompt": 1.5}}}])


def test_quantile_gate_in_the_audit(tmp_path, vehicles):
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.runner import run_audit

    lat = [100.0] * 56 + [5000.0, 6000.0, 5500.0, 7000.0]  # 60 records: a p95 needs 59 (min_rows)
    recs = [dict(r, gold_node="sedan" if i < 20 else "submarine") for i, r in enumerate(_records(lat))]
    cfg = config_from_mapping(
        {
            "ontology": "x.csv",
            "records": "r.jsonl",
            "families": ["system"],
            "gates": [
                "p95(latency.total_ms) <= 1500",
                "p50(system.latency.total_ms) <= 150",
                "latency.total_ms.p95[node:car] <= 1500",
                "ci_high(p99(latency.total_ms)) <= 10000",
                "latency.total_ms.missing_rate <= 0",
            ],
            # the car branch has 20 records, fewer than a p95's 59: declared for this scope
            "min_rows": {"metrics": {"latency.total_ms.p95[node:car]": 20}},
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False, inputs={"ontology": vehicles, "records": recs, "paths": {}})
    by = {str(r.gate): r for r in res.gate_results}
    assert by["latency.total_ms.p95 <= 1500"].status == "fail"
    assert by["latency.total_ms.p95 <= 1500"].observed == pytest.approx(np.quantile(lat, 0.95))
    assert by["system.latency.total_ms.p50 <= 150"].status == "pass"
    assert by["latency.total_ms.p95[node:car] <= 1500"].status == "pass"  # the slow ones are boats
    assert by["ci_high(latency.total_ms.p99) <= 10000"].status == "pass"
    assert by["latency.total_ms.missing_rate <= 0"].status == "pass"


# ------------------------------------------------------------------ context
def _ctx(rid, ids, cites, correct, pos=None, tokens=None):
    rec = {
        "id": rid,
        "retrieval": {"contexts": [{"id": d, "text": d} for d in ids]},
        "answer": {"text": "x", "citations": cites},
        "reference": {"correct": correct},
    }
    sec = {}
    if pos is not None:
        sec["gold_position"] = pos
    if tokens:
        sec["tokens"], sec["original_tokens"] = tokens
    if sec:
        rec["context"] = sec
    return rec


def test_context_coverage_positions_and_compression():
    recs = [
        _ctx("a", ["c1", "c2", "c3", "c4"], ["c1", "c1", "c3"], True, pos=0, tokens=(200, 1000)),
        _ctx("b", ["c1", "c2"], ["c2", "zz"], False, pos=1, tokens=(900, 1000)),
        _ctx("c", ["c1", "c2", "c3"], [], False, pos=1),
        _ctx("d", ["c1", "c2", "c3"], ["c2"], True, pos=1),
        {"id": "e", "retrieval": {"contexts": []}, "answer": {"text": "x"}, "reference": {"correct": True}},
        {"id": "f", "retrieval": {"run": ["x"]}},
    ]
    ev = score_context(None, recs)
    m = ev.metrics()
    assert (m["citation_coverage"].numerator, m["citation_coverage"].denominator) == (4, 12)
    assert m["citation_coverage_macro"].value == pytest.approx((2 / 4 + 1 / 2 + 0 + 1 / 3) / 4)
    assert m["empty_context_rate"].value == pytest.approx(1 / 5)
    assert m["cited_outside_context_rate"].value == pytest.approx(1 / 5)
    assert m["accuracy_gold_first"].value == 1.0
    assert m["accuracy_gold_last"].value == 0.0  # b: position 1 of 2
    assert m["accuracy_gold_middle"].value == 0.5  # c, d
    assert m["middle_gap"].value == pytest.approx(0.0)
    assert m["compression_ratio"].value == pytest.approx(1100 / 2000)
    assert {k: g["metrics"]["accuracy"].value for k, g in ev.breakdown("compression_bin").items()} == {
        "<=0.25": 1.0,
        ">0.75": 0.0,
        None: 2 / 3,
    }
    assert ev.unscored == [{"record_id": "f", "reason": "no context", "code": "no_section"}]


def test_context_position_derived_from_gold_and_bad_positions():
    rec = _ctx("a", ["c1", "c2", "c3"], [], True)
    rec["retrieval"]["gold"] = ["c3"]
    assert score_context(None, [rec]).metrics()["accuracy_gold_last"].value == 1.0
    with pytest.raises(InputError, match="gold_position: 5 is not below the 3 chunks"):
        score_context(None, [_ctx("a", ["c1", "c2", "c3"], [], True, pos=5)])


def test_quantile_gate_syntax_round_trips():
    from kg_rageval.audit.gates import parse_gate

    g = parse_gate("p95(latency.total_ms)[node:car] <= 1.5e3")
    assert (g.metric, g.scope, g.threshold) == ("latency.total_ms.p95", "node:car", 1500.0)
    assert parse_gate(str(g)) == g
    b = parse_gate("ci_high(p99(system.latency.ttft_ms)) < 800")
    assert (b.metric, b.use) == ("system.latency.ttft_ms.p99", "ci_high")


def test_system_metric_names_resolve_through_the_registry():
    from kg_rageval.base.errors import ConfigError
    from kg_rageval.scoring import REGISTRY, resolve_metric

    assert str(resolve_metric("latency.total_ms.p95")) == "system.latency.total_ms.p95"
    assert str(resolve_metric("latency.my_stage_ms.p50")) == "system.latency.my_stage_ms.p50"
    assert str(resolve_metric("ci_high(cache.llm.hit_rate)")) == "ci_high(system.cache.llm.hit_rate)"
    with pytest.raises(ConfigError, match="did you mean 'system.latency.{stage}_ms.p99'"):
        resolve_metric("latency.total_ms.p96", scope=["system"])  # (other tests register stub families)
    ev = score_system(None, _records([1.0, 2.0]))
    sc = REGISTRY["system"]
    for name in ev.metrics():  # every produced metric is declared
        assert sc.find_metric(name) is not None, name


def test_merge_of_partitions_with_different_quantities():
    recs = _records([100.0, 200.0, 300.0, 400.0])
    recs[3]["system"]["tokens"]["reasoning"] = 7
    recs[3]["system"]["cache"] = {"llm": True}
    recs[3]["system"]["latency_ms"]["guardrail"] = 5.0
    whole = score_system(None, recs)
    merged = score_system(None, recs[:2]).merge(score_system(None, recs[2:]))
    a, b = whole.metrics(), merged.metrics()
    assert set(a) == set(b)
    for k in a:
        assert (a[k].value, a[k].missing) == (b[k].value, b[k].missing), k
    assert b["latency.guardrail_ms.p50"].value == 5.0 and b["cache.llm.hit_rate"].value == 1.0


def test_assert_gates_on_system_evaluations():
    from kg_rageval.pytest_plugin import GateFailure, assert_gates

    ev = score_system(None, _records([100.0] * 19 + [3000.0]))
    gates = ["p50(latency.total_ms) <= 150", "system.cache.retrieval.hit_rate >= 0.25"]
    with pytest.raises(GateFailure, match="rests on 20 rows; it needs at least 30 rows"):
        assert_gates(ev, gates)
    assert_gates(ev, gates, min_rows=20)

    with pytest.raises(GateFailure, match="latency.total_ms.p99"):
        assert_gates(ev, ["p99(latency.total_ms) <= 1500"])


def test_a_record_without_total_latency_is_a_missing_run(vehicles, tmp_path):
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.runner import run_audit

    recs = _records([100.0] * 9)
    recs.append({"id": "timed-out", "system": {"latency_ms": {"retrieve": 30.0}}})
    cfg = config_from_mapping(
        {
            "ontology": "x.csv",
            "records": "r.jsonl",
            "families": ["system"],
            "gates": ["p95(latency.total_ms) <= 1500"],
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False, inputs={"ontology": vehicles, "records": recs, "paths": {}})
    by = {str(r.gate): r for r in res.gate_results}
    assert by["latency.total_ms.p95 <= 1500"].status == "missing"  # never a PASS that hides the timeout
    assert by["system.missing_run_rate <= 0"].status == "fail"
    assert res.counts["families"]["system"]["missing_runs"] == 1


def test_rollup_nodes_counts_and_sum_metrics_match_the_framework(vehicles):
    from kg_rageval.results.evaluation import Evaluation

    nodes = [
        "sedan",
        "amphibious_car",
        "submarine",
        "boat",
        None,
        "not-a-node",
        "hatchback",
        "amphibious_car",
    ]
    recs = [
        dict(r, gold_node=n) if n else r
        for r, n in zip(_records([float(10 * i + 5) for i in range(8)]), nodes)
    ]
    ev = score_system(None, recs)
    plain = Evaluation(ev.family, ev.record_ids, ev.stats, ev.keys)
    for kw in ({}, {"min_rows": 2}, {"max_depth": 1}):
        mine, ref = ev.rollup(vehicles, **kw), Evaluation.rollup(plain, vehicles, **kw)
        assert list(mine) == list(ref), kw
        assert ev.meta["rollup_skipped"] == plain.meta["rollup_skipped"] == 2
        for node in ref:
            assert (mine[node]["n"], mine[node]["depth"]) == (ref[node]["n"], ref[node]["depth"])
            for name in ("latency.total_ms.mean", "cache.retrieval.hit_rate", "cost.usd_total"):
                assert mine[node]["metrics"][name].value == pytest.approx(ref[node]["metrics"][name].value)
