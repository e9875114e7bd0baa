"""The rewrite family: paired recall gains of expansion / HyDE / multi-query over the raw query,
union Recall@k for N rewrites with latency and the frontier, the HyDE off-topic slice through
the ontology (figures worked by hand), gates per slice, per node and on ci_low, bad input."""

from __future__ import annotations

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.ontology import load_ontology
from kg_rageval.pytest_plugin import check_gates
from kg_rageval.scoring import get_scorer


@pytest.fixture(scope="module")
def onto(fixtures_dir):
    return load_ontology(fixtures_dir / "hierarchy" / "vehicles.obo")


def _v(ranked, ms=None, concepts=None):
    out = {"ranked": ranked}
    if ms is not None:
        out["latency_ms"] = ms
    if concepts is not None:
        out["concepts"] = concepts
    return out


RECORDS = [
    {  # gold d1, d2; raw finds d1 (0.5); expansion both (1.0); HyDE names a boat: off topic
        "id": "q1",
        "gold_node": "VH:sedan",
        "retrieval": {"gold": ["d1", "d2"]},
        "rewrite": {
            "variants": {
                "raw": _v(["d1", "d9"], 40),
                "expansion": _v(["d2", "d1"], 60),
                "hyde": _v(["d9", "d8"], 300, ["VH:hatchback", "VH:submarine"]),
                "multi_query_1": _v(["d9"], 50),
                "multi_query_2": _v(["d2"], 55),
            }
        },
    },
    {  # gold d3; raw misses it (0); expansion finds it (1); HyDE on topic (amphibious car is a car)
        "id": "q2",
        "gold_node": "VH:hatchback",
        "retrieval": {"gold": {"d3": 2, "d4": 0}},
        "rewrite": {
            "variants": {
                "raw": _v(["d9"], 30),
                "expansion": _v(["d3"], 70),
                "hyde": _v(["d3"], 310, ["VH:amphibious_car"]),
                "multi_query_1": _v(["d3"], 45),
                "multi_query_2": _v(["d7"], 65),
            }
        },
    },
    {
        "id": "q3",
        "gold_node": "VH:submarine",
        "retrieval": {"gold": []},
        "rewrite": {"variants": {"raw": _v([])}},
    },
    {"id": "q4", "retrieval": {"gold": ["d1"]}},
]


def test_paired_deltas_unions_latency_and_off_topic_by_hand(onto):
    res = get_scorer("rewrite").score(onto, RECORDS, k=[1, 10])
    m = {k: v.value for k, v in res.metrics().items()}
    assert m["rewrite.raw.recall@10"] == 0.25  # (0.5 + 0) / 2
    assert m["rewrite.expansion.recall@10"] == 1.0
    assert m["rewrite.expansion.delta.recall@10"] == 0.75  # (0.5 + 1) / 2
    assert m["rewrite.expansion.recall@1"] == 0.75  # q1: d2 of {d1, d2}; q2: d3
    assert m["rewrite.expansion.delta.recall@1"] == 0.5  # (q1: .5 - .5 = 0; q2: 1 - 0 = 1) / 2
    assert m["rewrite.hyde.delta.recall@10"] == 0.25  # q1: 0 - .5; q2: 1 - 0
    # unions of the first N rewrites: N=1 q1 0, q2 1; N=2 q1 .5, q2 1; latency summed
    assert m["rewrite.multi_query.union_1.recall@10"] == 0.5
    assert m["rewrite.multi_query.union_2.recall@10"] == 0.75
    assert m["rewrite.multi_query.union_2.delta.recall@10"] == 0.5
    assert m["rewrite.multi_query.union_1.latency_ms.mean"] == 47.5
    assert m["rewrite.multi_query.union_2.latency_ms.mean"] == (105 + 110) / 2
    assert m["rewrite.multi_query.recall@10"] == 0.75
    assert m["rewrite.multi_query.union_3.recall@10"] is None  # no record has 3 rewrites: missing
    assert m["rewrite.hyde.off_topic_rate"] == 0.5
    ev = res.single
    assert [(u["record_id"], u["code"]) for u in ev.unscored] == [("q3", "no_gold"), ("q4", "no_section")]
    by = {p["point"]: p for p in ev.meta["frontier"]}
    assert by["raw"]["latency_ms"] == 35 and by["raw"]["pareto"]
    assert by["multi_query.union_1"]["pareto"] and by["multi_query.union_2"]["pareto"]
    par = get_scorer("rewrite").score(onto, RECORDS, union_latency="max").metrics()
    assert par["rewrite.multi_query.union_2.latency_ms.mean"].value == (55 + 65) / 2


def test_gates_on_slices_nodes_ci_low_and_min_rows(onto):
    res = get_scorer("rewrite").score(onto, RECORDS)
    results, _ = check_gates(
        res,
        [
            "rewrite.expansion.delta.recall@10 >= 0.02",
            "rewrite.hyde.delta.recall@10[slice:hyde_topic=off_topic] >= 0",
            "rewrite.expansion.delta.recall@10[node:VH:car] >= 0.5",
        ],
        ontology=onto,
        min_rows=1,
    )
    assert [r.status for r in results] == ["pass", "fail", "pass"]
    assert results[1].observed == -0.5  # q1 alone: HyDE off topic lost d1
    # the default minimum of rows (30): two paired records are missing evidence, not a pass
    thin, _ = check_gates(res, ["rewrite.expansion.delta.recall@10 >= 0.02"], ontology=onto)
    assert thin[0].status == "missing"


def test_bad_input_names_record_and_field(onto):
    bad = [{"id": "x", "retrieval": {"gold": ["d1"]}, "rewrite": {"variants": {"raw": {"ranked": "d1"}}}}]
    with pytest.raises(InputError, match=r"'x'.*rewrite.variants.raw.ranked"):
        get_scorer("rewrite").score(onto, bad)
    gap = [
        {"id": "y", "retrieval": {"gold": ["d1"]}, "rewrite": {"variants": {"multi_query_2": {"ranked": []}}}}
    ]
    with pytest.raises(InputError, match="numbered 1..n"):
        get_scorer("rewrite").score(onto, gap)
    unk = [
        {
            "id": "z",
            "gold_node": "VH:car",
            "retrieval": {"gold": ["d1"]},
            "rewrite": {"variants": {"hyde": {"ranked": [], "concepts": ["VH:plane"]}}},
        }
    ]
    # a concept the ontology lacks is the system's fault: counted off-topic, never an abort
    m = get_scorer("rewrite").score(onto, unk).metrics()
    assert m["rewrite.hyde.off_topic_rate"].value == 1.0


def test_records_from_one_trec_run_per_variant(tmp_path, onto):
    from kg_rageval.families.rewrite.inputs import records_from_runs

    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 1\nq2 0 d3 2\n")
    (tmp_path / "raw.trec").write_text("q1 Q0 d1 1 2.0 raw\nq1 Q0 d9 2 1.0 raw\nq2 Q0 d9 1 1.0 raw\n")
    (tmp_path / "exp.trec").write_text("q1 Q0 d2 1 2.0 e\nq1 Q0 d1 2 1.0 e\nq2 Q0 d3 1 1.0 e\n")
    recs = records_from_runs(
        tmp_path / "qrels", {"raw": tmp_path / "raw.trec", "expansion": tmp_path / "exp.trec"}
    )
    m = get_scorer("rewrite").score(onto, recs).metrics()
    assert m["rewrite.expansion.delta.recall@10"].value == 0.75  # as the records example
    (tmp_path / "bad.trec").write_text("q1 Q0 d1 1 x raw\n")
    with pytest.raises(InputError, match=r"bad.trec.*line 1"):
        records_from_runs(tmp_path / "qrels", {"raw": tmp_path / "bad.trec"})
