"""The routing family: intent P/R/F1 equal to scikit-learn's classification_report
(zero_division=nan), routes over ontology nodes with hierarchy-aware credit and the confusion
taxonomy, adaptive retrieval modes with over- and under-retrieval apart, cost per mode.

Route figures worked by hand on fixtures/hierarchy/vehicles.obo (vehicle the root; car and boat
at depth 1; sedan, hatchback under car; submarine under boat), records of
fixtures/routing/decisions.jsonl:

====  ==========  ============  ================  ===============  ======================
rec   gold        routed        category          Wu-Palmer        hP inter / pred / gold
====  ==========  ============  ================  ===============  ======================
r1    sedan       sedan         exact             1                2 / 2 / 2
r2    sedan       car           ancestor          2·2/(1+0+4)=0.8  1 / 1 / 2
r3    car         sedan         descendant        0.8              1 / 2 / 1
r4    sedan       hatchback     sibling_branch    4/6              1 / 2 / 2
r5    sedan       submarine     unrelated_branch  2/6              0 / 2 / 2
r6    car         boat          unrelated_branch  2/4              0 / 1 / 1
r7    boat        X:not-a-node  unknown_id        0                0 / 1 / 1
====  ==========  ============  ================  ===============  ======================

Wu-Palmer sum 4.1 over 7; hP = 5/11, hR = 5/11. Intents r1..r5 (gold a a b c c, predicted
a b b a d) and modes r1..r6 are checked against scikit-learn below."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.runner import run_audit
from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.pytest_plugin import check_gates
from kg_rageval.scoring import get_scorer

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "fixtures" / "routing" / "decisions.jsonl"
ONTO = ROOT / "fixtures" / "hierarchy" / "vehicles.obo"


@pytest.fixture(scope="module")
def onto():
    from kg_rageval.ontology import load_ontology

    return load_ontology(ONTO)


def _values(res):
    return {k.removeprefix("routing."): v.value for k, v in res.metrics().items()}


def _records():
    return [json.loads(line) for line in DATA.read_text().splitlines()]


def test_routes_worked_by_hand(onto):
    res = get_scorer("routing").score(onto, _records())
    m = _values(res)
    assert m["route.accuracy"] == pytest.approx(1 / 7)
    assert m["route.wu_palmer.mean"] == pytest.approx(4.1 / 7)
    assert m["route.hierarchical_precision"] == pytest.approx(5 / 11)
    assert m["route.hierarchical_recall"] == pytest.approx(5 / 11)
    assert m["route.hierarchical_f1"] == pytest.approx(5 / 11)
    assert m["route.ancestor_rate"] == pytest.approx(1 / 7)
    assert m["route.descendant_rate"] == pytest.approx(1 / 7)
    assert m["route.sibling_branch_rate"] == pytest.approx(1 / 7)
    assert m["route.unrelated_branch_rate"] == pytest.approx(2 / 7)
    assert m["route.unknown_id_rate"] == pytest.approx(1 / 7)
    ev = res.single
    assert [(u["record_id"], u["code"]) for u in ev.unscored] == [("r8", "no_section")]
    assert ev.keys["gold_node"].tolist() == ["VH:sedan"] * 2 + ["VH:car"] + ["VH:sedan"] * 2 + [
        "VH:car",
        "VH:boat",
    ]


def test_modes_worked_by_hand(onto):
    m = _values(get_scorer("routing").score(onto, _records()))
    # r1 ok, r2 one_shot->iterative (over), r3 iterative->one_shot (under), r4 ok,
    # r5 no_retrieval->one_shot (over), r6 ok
    assert (m["mode.accuracy"], m["mode.over_retrieval_rate"], m["mode.under_retrieval_rate"]) == (
        pytest.approx(3 / 6),
        pytest.approx(2 / 6),
        pytest.approx(1 / 6),
    )
    # cost of the records routed to each mode: no_retrieval r1 (0), one_shot r3 r4 r5 (1 1 2),
    # iterative r2 (5; r6 has no cost)
    assert m["mode.no_retrieval.cost.mean"] == 0.0
    assert m["mode.one_shot.cost.mean"] == pytest.approx(4 / 3)
    assert m["mode.iterative.cost.mean"] == 5.0
    assert m["mode.cost.mean"] == pytest.approx(9 / 5)
    assert (m["mode.one_shot.precision"], m["mode.one_shot.recall"]) == (pytest.approx(1 / 3), 0.5)


def _sklearn_report(gold, pred):
    from sklearn.metrics import classification_report

    return classification_report(gold, pred, zero_division=np.nan, output_dict=True)


def _assert_same(m, prefix, rep):
    def same(ours, theirs):
        if isinstance(theirs, float) and math.isnan(theirs):
            assert ours is None  # missing evidence where scikit-learn says nan, never 0
        else:
            assert ours == pytest.approx(theirs, abs=1e-12)

    labels = [k for k in rep if k not in ("accuracy", "macro avg", "weighted avg", "micro avg")]
    for lab in labels:
        for ours, theirs in (("precision", "precision"), ("recall", "recall"), ("f1", "f1-score")):
            same(m[f"{prefix}.{lab}.{ours}"], rep[lab][theirs])
        assert m[f"{prefix}.{lab}.support"] == rep[lab]["support"]
    for avg in ("macro", "weighted"):
        for ours, theirs in (("precision", "precision"), ("recall", "recall"), ("f1", "f1-score")):
            same(m[f"{prefix}.{avg}.{ours}"], rep[f"{avg} avg"][theirs])
    same(m[f"{prefix}.accuracy"], rep["accuracy"])
    same(m[f"{prefix}.micro.f1"], rep["accuracy"])
    return labels


def test_fixture_equals_scikit_learn(onto):
    pytest.importorskip("sklearn")
    recs = _records()
    m = _values(get_scorer("routing").score(onto, recs))
    sec = [r["routing"] for r in recs if "routing" in r]
    it = [s["intent"] for s in sec if "intent" in s]
    rep = _sklearn_report([i["gold"] for i in it], [i["pred"] for i in it])
    assert _assert_same(m, "intent", rep) == ["a", "b", "c", "d"]
    # hand figures of the same report: c never predicted, d never gold
    assert m["intent.c.precision"] is None and m["intent.c.recall"] == 0.0 and m["intent.c.f1"] == 0.0
    assert m["intent.d.recall"] is None and m["intent.d.precision"] == 0.0
    assert m["intent.macro.precision"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert m["intent.weighted.precision"] == pytest.approx((0.5 * 2 + 0.5 * 1) / 3)
    assert m["intent.macro.f1"] == pytest.approx((0.5 + 2 / 3 + 0 + 0) / 4)
    md = [s["mode"] for s in sec if "mode" in s]
    rep = _sklearn_report([i["gold"] for i in md], [i["pred"] for i in md])
    _assert_same(m, "mode", rep)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_intents_equal_scikit_learn(seed):
    """Random labels where intent ``e`` is gold but never predicted and ``f`` predicted but
    never gold: scikit-learn's nan is our missing evidence."""
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(seed)
    n = 200
    gold = rng.choice(["a", "b", "c", "e"], size=n, p=[0.4, 0.3, 0.2, 0.1]).tolist()
    pred = rng.choice(["a", "b", "c", "f"], size=n).tolist()
    recs = [
        {"id": f"q{i}", "routing": {"intent": {"gold": g, "pred": p}}}
        for i, (g, p) in enumerate(zip(gold, pred))
    ]
    m = _values(get_scorer("routing").score(None, recs))
    rep = _sklearn_report(gold, pred)
    assert _assert_same(m, "intent", rep) == ["a", "b", "c", "e", "f"]
    assert m["intent.e.precision"] is None and m["intent.f.recall"] is None


def test_streamed_chunks_equal_one_call(onto, tmp_path):
    one = _values(get_scorer("routing").score(onto, _records()))
    chunked = _values(get_scorer("routing").score(onto, str(DATA), chunk_size=2))
    assert chunked.keys() == one.keys()
    for k, v in one.items():
        assert (chunked[k] is None) == (v is None), k
        if v is not None:
            assert chunked[k] == pytest.approx(v), k


def test_nothing_scored_is_missing_evidence(onto):
    m = get_scorer("routing").score(onto, [{"id": "x"}]).metrics()
    rates = {k: v for k, v in m.items() if not k.endswith(".support")}
    assert rates and all(v.value is None and v.missing for v in rates.values())
    # a support is a count: 0 records of a mode is a measurement, not a missing one
    assert {v.value for k, v in m.items() if k.endswith(".support")} == {0.0}


def test_bad_input_names_record_and_field(onto):
    sc = get_scorer("routing")
    bad = [{"id": "g", "routing": {"route": {"gold": "VH:nope", "pred": "VH:car"}}}]
    with pytest.raises(InputError, match=r"'g'.*routing\.route\.gold"):
        sc.score(onto, bad)
    with pytest.raises(ConfigError, match="needs the ontology"):
        sc.score(None, [{"id": "n", "routing": {"route": {"gold": "VH:car", "pred": "VH:car"}}}])
    cases = [
        ({"mode": {"gold": "one_shot", "pred": "twice"}}, r"routing\.mode\.pred"),
        ({"mode": {"gold": "one_shot", "pred": "one_shot", "cost": -1}}, r"routing\.mode\.cost"),
        ({"intent": {"gold": "a b", "pred": "a"}}, r"routing\.intent\.gold"),
        ({"intent": {"gold": "a"}}, r"routing\.intent\.pred"),
        ({"intent": {"gold": "a", "pred": "a", "conf": 1}}, r"routing\.intent\.conf"),
        ({"rout": {}}, r"routing\.rout"),
        ({}, r"field routing"),
    ]
    for sec, field in cases:
        with pytest.raises(InputError, match=rf"'b'.*{field}"):
            sc.score(onto, [{"id": "b", "routing": sec}])


def test_gates_per_branch_and_slice(onto):
    res = get_scorer("routing").score(onto, _records())
    results, _ = check_gates(
        res,
        [
            "routing.route.accuracy[node:VH:car] >= 0.1",  # r1..r6: 1/6
            "routing.route.wu_palmer.mean[slice:channel=web] >= 0.8",  # r1 r2 r3: 2.6/3
            "routing.route.accuracy[node:VH:boat] >= 0",  # r7 only: under min_rows 2
        ],
        ontology=onto,
        min_rows=2,
    )
    assert [(r.status, r.observed) for r in results][:2] == [
        ("pass", pytest.approx(1 / 6)),
        ("pass", pytest.approx(2.6 / 3)),
    ]
    assert results[2].status == "missing"


AUDIT_GATES = [
    "routing.route.accuracy[node:VH:car] >= 0.1",
    "routing.intent.macro.f1[slice:channel=web] >= 0.5",
    "routing.mode.over_retrieval_rate[slice:channel=api] <= 0.5",
    "routing.route.hierarchical_f1[node:VH:boat] >= 0",
]


def _audit(tmp_path, **extra):
    cfg = config_from_mapping(
        {
            "ontology": str(ONTO),
            "records": str(DATA),
            "families": {"routing": {}},
            "min_rows": 2,  # a 7-record toy file; a real audit keeps 30
            "gates": AUDIT_GATES,
            **extra,
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    return res, {str(r.gate): r for r in res.gate_results}


def test_audit_counts_a_record_without_a_decision_as_a_missing_run(tmp_path):
    """r8 has no routing section: with the routing family in the audit it is a missing run, and
    above the budget (default 0) every routing gate is missing evidence."""
    _, by = _audit(tmp_path)
    assert {by[g].status for g in AUDIT_GATES} == {"missing"}
    assert "missing runs" in by[AUDIT_GATES[0]].reason


def test_audit_gates_per_branch_and_slice(tmp_path):
    res, by = _audit(tmp_path, missing_runs={"budgets": {"routing": 0.2}})
    g = by["routing.route.accuracy[node:VH:car] >= 0.1"]
    assert (g.status, g.observed) == ("pass", pytest.approx(1 / 6))
    # web intents r1 r2 r3: gold a a b, pred a b b -> a: P 1 R .5 F1 2/3; b: P .5 R 1 F1 2/3
    g = by["routing.intent.macro.f1[slice:channel=web] >= 0.5"]
    assert (g.status, g.observed) == ("pass", pytest.approx(2 / 3))
    # api modes r4 r5 r6: r5 over-retrieves
    g = by["routing.mode.over_retrieval_rate[slice:channel=api] <= 0.5"]
    assert (g.status, g.observed) == ("pass", pytest.approx(1 / 3))
    # one record under boat: missing evidence, never a pass
    g = by["routing.route.hierarchical_f1[node:VH:boat] >= 0"]
    assert g.status == "missing"
    assert res.exit_code != 0


def test_score_command():
    from click.testing import CliRunner

    from kg_rageval.cli.main import cli

    out = CliRunner().invoke(
        cli, ["score", "routing", "-O", str(ONTO), "--data", str(DATA), "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    payload = json.loads(out.output)
    assert payload["counts"]["records"] == 8 and payload["counts"]["scored_records"] == 7
    m = payload["metrics"]
    assert math.isclose(m["routing.route.wu_palmer.mean"]["value"], 4.1 / 7)
    assert m["routing.route.unknown_id_rate"]["numerator"] == 1.0
    assert m["routing.intent.c.precision"]["value"] is None
