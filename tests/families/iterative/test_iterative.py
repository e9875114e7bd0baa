"""The iterative family: traces under budgets of calls, time and tokens — success, budget
exhausted and wrong counted apart (figures worked by hand), per node, bad input."""

from __future__ import annotations

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.families.iterative import run_under_budget
from kg_rageval.pytest_plugin import check_gates
from kg_rageval.scoring import get_scorer


def _st(results, calls=1, ms=100, tokens=200):
    return {"query": "q", "results": results, "calls": calls, "time_ms": ms, "tokens": tokens}


RECORDS = [
    # relevant d1 at step 2; 2 calls, 300 ms, 500 tokens in all
    {
        "id": "a",
        "gold_node": "VH:sedan",
        "retrieval": {"gold": ["d1"]},
        "iterative": {"steps": [_st(["d9"]), _st(["d1"], calls=1, ms=200, tokens=300)], "correct": True},
    },
    # relevant at step 3 only, the third step costs 3 calls
    {
        "id": "b",
        "gold_node": "VH:sedan",
        "retrieval": {"gold": ["d2"]},
        "iterative": {"steps": [_st(["d9"]), _st(["d8"]), _st(["d2"], calls=3)]},
    },
    # every step taken, nothing relevant: wrong
    {"id": "c", "gold_node": "VH:boat", "retrieval": {"gold": ["d3"]}, "iterative": {"steps": [_st(["d9"])]}},
    # found at step 1 but the answer is wrong
    {
        "id": "d",
        "gold_node": "VH:boat",
        "retrieval": {"gold": ["d4"]},
        "iterative": {"steps": [_st(["d4"])], "correct": False},
    },
    {"id": "e", "retrieval": {"gold": ["d5"]}},
]


def test_outcomes_without_and_with_budgets():
    sc = get_scorer("iterative")
    m = {k: v.value for k, v in sc.score(None, RECORDS).metrics().items()}
    # no budget: a success (step 2), b success (step 3), c wrong, d wrong (answer)
    assert (m["iterative.success_rate"], m["iterative.wrong_rate"], m["iterative.budget_exhausted_rate"]) == (
        0.5,
        0.5,
        0.0,
    )
    assert m["iterative.steps_to_first_relevant.mean"] == 2.5
    assert m["iterative.calls.mean"] == (2 + 5 + 1 + 1) / 4
    # max_calls 3: b's third step (3 calls on top of 2) is not taken -> exhausted
    m = {k: v.value for k, v in sc.score(None, RECORDS, max_calls=3).metrics().items()}
    assert (m["iterative.success_rate"], m["iterative.budget_exhausted_rate"], m["iterative.wrong_rate"]) == (
        0.25,
        0.25,
        0.5,
    )
    assert m["iterative.calls.mean"] == (2 + 2 + 1 + 1) / 4  # cut steps cost nothing
    # max_time_ms 250: a's second step (100 + 200) is cut, b's third (300) too
    m = {k: v.value for k, v in sc.score(None, RECORDS, max_time_ms=250).metrics().items()}
    assert m["iterative.budget_exhausted_rate"] == 0.5 and m["iterative.success_rate"] == 0.0
    # max_tokens 499: a's 500 tokens do not fit; exactly 500 does (a budget is inclusive)
    steps = [
        {"results": ["d9"], "calls": 1, "time_ms": 100, "tokens": 200},
        {"results": ["d1"], "calls": 1, "time_ms": 200, "tokens": 300},
    ]
    fit = run_under_budget(steps, {"d1"}, {"calls": None, "time_ms": None, "tokens": 500}, None)
    assert (fit["outcome"], fit["taken"], fit["first_relevant"]) == ("success", 2, 2)
    ev = sc.score(None, RECORDS, max_tokens=499).single
    assert ev.keys["outcome"].tolist()[0] == "budget_exhausted"
    assert [(u["record_id"], u["code"]) for u in ev.unscored] == [("e", "no_section")]


def test_gates_per_node_and_min_rows(fixtures_dir):
    from kg_rageval.ontology import load_ontology

    onto = load_ontology(fixtures_dir / "hierarchy" / "vehicles.obo")
    res = get_scorer("iterative").score(onto, RECORDS, max_calls=3)
    results, _ = check_gates(
        res,
        ["iterative.success_rate[node:VH:car] >= 0.5", "iterative.budget_exhausted_rate[node:VH:boat] <= 0"],
        ontology=onto,
        min_rows=1,
    )
    assert [(r.status, r.observed) for r in results] == [("pass", 0.5), ("pass", 0.0)]
    thin, _ = check_gates(res, ["iterative.success_rate >= 0"], ontology=onto)
    assert thin[0].status == "missing"  # 4 records under the default 30


def test_bad_input_names_record_and_field():
    bad = [
        {
            "id": "x",
            "retrieval": {"gold": ["d1"]},
            "iterative": {"steps": [{"results": ["d1"], "tokens": -3}]},
        }
    ]
    with pytest.raises(InputError, match=r"'x'.*iterative.steps.0.tokens"):
        get_scorer("iterative").score(None, bad)


def _span(sid, parent, kind, start_ms, end_ms, attrs):
    a = [{"key": "openinference.span.kind", "value": {"stringValue": kind}}]
    for k, v in attrs.items():
        a.append({"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}})
    out = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": sid,
        "name": kind.lower(),
        "startTimeUnixNano": str(start_ms * 1_000_000),
        "endTimeUnixNano": str(end_ms * 1_000_000),
        "attributes": a,
    }
    if parent:
        out["parentSpanId"] = parent
    return out


def test_iterative_traces_from_otlp_spans(tmp_path):
    import json

    from kg_rageval.families.iterative.inputs import import_iterative_otlp

    root = "eee19b7ec3c1b174"
    spans = [
        _span(root, None, "AGENT", 0, 1000, {"input.value": "what is a sedan"}),
        _span(
            "eee19b7ec3c1b175",
            root,
            "LLM",
            10,
            60,
            {"llm.token_count.prompt": 100, "llm.token_count.completion": 20},
        ),
        _span(
            "eee19b7ec3c1b176",
            root,
            "RETRIEVER",
            70,
            170,
            {"input.value": "sedan", "retrieval.documents.0.document.id": "d9"},
        ),
        _span(
            "eee19b7ec3c1b177",
            root,
            "LLM",
            200,
            260,
            {"llm.token_count.prompt": 300, "llm.token_count.completion": 30},
        ),
        _span(
            "eee19b7ec3c1b178",
            root,
            "RETRIEVER",
            270,
            520,
            {"input.value": "sedan car", "retrieval.documents.0.document.id": "d1"},
        ),
    ]
    p = tmp_path / "trace.json"
    p.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    [rec] = import_iterative_otlp(p)
    steps = rec["iterative"]["steps"]
    assert [(s["query"], s["results"], s["time_ms"], s["tokens"]) for s in steps] == [
        ("sedan", ["d9"], 100.0, 120.0),
        ("sedan car", ["d1"], 250.0, 330.0),
    ]
    rec["retrieval"] = {"gold": ["d1"]}
    sc = get_scorer("iterative")
    assert sc.score(None, [rec]).metrics()["iterative.steps_to_first_relevant.mean"].value == 2
    cut = sc.score(None, [rec], max_tokens=400).metrics()  # 120 + 330 > 400: the second step is not taken
    assert cut["iterative.budget_exhausted_rate"].value == 1.0
