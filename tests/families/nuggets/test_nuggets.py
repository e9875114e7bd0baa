"""The nuggets family: the TREC 2024 RAG Track scores worked by hand (3 vital + 2 okay nuggets,
mixed assignments), against an independent implementation of nuggetizer's scoring formula and
of the paper's weighted score, ontology nuggets through the hierarchy, judge agreement against
scikit-learn, bad input."""

from __future__ import annotations

import json
import random

import pytest

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.scoring import get_scorer

S, P, N = "support", "partial_support", "not_support"


def _item(text, imp, a=None, h=None, concept=None):
    it = {"text": text, "importance": imp}
    if a is not None:
        it["assignment"] = a
    if h is not None:
        it["human_assignment"] = h
    if concept is not None:
        it["concept"] = concept
    return it


HAND = [
    # 3 vital (support, partial, not) + 2 okay (support, partial); the human differs on v2 and o1
    {
        "id": "a",
        "slices": {"run": "r1"},
        "nuggets": {
            "topic_id": "t1",
            "items": [
                _item("v1", "vital", S, S),
                _item("v2", "vital", P, S),
                _item("v3", "vital", N, N),
                _item("o1", "okay", S, P),
                _item("o2", "okay", P, P),
            ],
        },
    },
    # okay nuggets only: no vital score for this answer
    {"id": "b", "slices": {"run": "r2"}, "nuggets": {"items": [_item("o", "okay", S)]}},
    {"id": "c"},
    {"id": "d", "nuggets": {"items": []}},
]


def _m(res):
    return {k.split(".", 1)[1]: v.value for k, v in res.metrics().items()}


def test_hand_worked_scores():
    m = _m(get_scorer("nuggets").score(None, HAND))
    # answer a: s = 1, .5, 0, 1, .5; ss = 1, 0, 0, 1, 0; w = 1, 1, 1, .5, .5
    #   A = 3/5, A_strict = 2/5, V = 1.5/3, V_strict = 1/3,
    #   W = (1 + .5 + 0 + .5 + .25) / 4 = 2.25/4, W_strict = (1 + .5) / 4
    # answer b: every score 1, no vital nugget
    assert m["all"] == pytest.approx((3 / 5 + 1) / 2)
    assert m["all_strict"] == pytest.approx((2 / 5 + 1) / 2)
    assert m["vital"] == pytest.approx(0.5)  # answer a only: b has no vital score (not 0, not 1)
    assert m["vital_strict"] == pytest.approx(1 / 3)
    assert m["weighted"] == pytest.approx((2.25 / 4 + 1) / 2)
    assert m["weighted_strict"] == pytest.approx((1.5 / 4 + 1) / 2)
    assert m["no_vital_rate"] == 0.5
    # agreement over a's 5 pairs: 3 agree; both raters 2 support, 2 partial, 1 not:
    # p_e = (4 + 4 + 1) / 25, kappa = (0.6 - 0.36) / 0.64
    assert m["assignment_accuracy"] == pytest.approx(0.6)
    assert m["assignment_kappa"] == pytest.approx(0.375)
    assert m["unknown_answer_concept_rate"] is None  # no ontology nugget: missing evidence
    ev = get_scorer("nuggets").score(None, HAND)["nuggets"]
    assert [(u["record_id"], u["code"]) for u in ev.unscored] == [("c", "no_section"), ("d", "no_gold")]


def test_only_answers_without_vital_nuggets_leave_vital_missing():
    res = get_scorer("nuggets").score(None, [HAND[1]])
    vital = res.metrics()["nuggets.vital_strict"]
    assert vital.value is None and vital.missing == "no answer with a vital nugget"
    assert res.metrics()["nuggets.no_vital_rate"].value == 1.0


def test_human_assignment_is_scored_when_asked():
    m = _m(get_scorer("nuggets").score(None, HAND, assignment="human"))
    # answer a by the human: s = 1, 1, 0, .5, .5 -> A = 3/5, V = 2/3, V_strict = 2/3; b unscored
    assert (m["all"], m["vital"], m["vital_strict"]) == pytest.approx((3 / 5, 2 / 3, 2 / 3))
    ev = get_scorer("nuggets").score(None, HAND, assignment="human")["nuggets"]
    assert ("b", "missing_input") in [(u["record_id"], u["code"]) for u in ev.unscored]


def test_slices_roll_up_from_the_sums():
    ev = get_scorer("nuggets").score(None, HAND)["nuggets"]
    by = ev.breakdown("slice:run")
    assert by["r1"]["n"] == 1 and by["r1"]["metrics"]["all"].value == pytest.approx(3 / 5)
    assert by["r2"]["metrics"]["all"].value == 1.0
    assert by["r2"]["metrics"]["vital"].value is None  # r2's one answer has no vital nugget


# ---------------------------------------------------------------------- reference formulas
def nuggetizer_scores(nuggets):
    """nuggetizer's calculate_nugget_scores, written out again (0.0 where a list is empty)."""
    vital = [n for n in nuggets if n["importance"] == "vital"]

    def strict(ns):
        return sum(1 for n in ns if n["assignment"] == "support")

    def credit(ns):
        return strict(ns) + sum(0.5 for n in ns if n["assignment"] == "partial_support")

    return {
        "strict_vital_score": strict(vital) / len(vital) if vital else 0.0,
        "strict_all_score": strict(nuggets) / len(nuggets) if nuggets else 0.0,
        "vital_score": credit(vital) / len(vital) if vital else 0.0,
        "all_score": credit(nuggets) / len(nuggets) if nuggets else 0.0,
    }


def paper_weighted(nuggets, strict):
    """The paper's W / W_strict: Σ w_i s_i / Σ w_i, w = 1 vital, 0.5 okay."""
    s = {"support": 1.0, "partial_support": 0.0 if strict else 0.5, "not_support": 0.0}
    w = {"vital": 1.0, "okay": 0.5}
    return sum(w[n["importance"]] * s[n["assignment"]] for n in nuggets) / sum(
        w[n["importance"]] for n in nuggets
    )


def test_equals_the_nuggetizer_formula_on_random_answers():
    rng = random.Random(7)
    recs, ref = [], []
    for i in range(300):
        ns = [
            {
                "text": f"n{j}",
                "importance": rng.choice(["vital", "okay"]),
                "assignment": rng.choice([S, P, N]),
            }
            for j in range(rng.randint(1, 12))
        ]
        recs.append({"id": f"q{i}", "nuggets": {"topic_id": f"q{i}", "items": ns}})
        ref.append((ns, nuggetizer_scores(ns)))
    m = _m(get_scorer("nuggets").score(None, recs))
    with_vital = [r for ns, r in ref if any(n["importance"] == "vital" for n in ns)]
    assert len(with_vital) < len(ref)  # some answers have no vital nugget
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    assert m["all"] == pytest.approx(mean([r["all_score"] for _, r in ref]), rel=1e-12)
    assert m["all_strict"] == pytest.approx(mean([r["strict_all_score"] for _, r in ref]), rel=1e-12)
    # nuggetizer's vital mean counts an answer without vital nuggets as 0.0; ours leaves it out
    assert m["vital"] == pytest.approx(mean([r["vital_score"] for r in with_vital]), rel=1e-12)
    assert m["vital_strict"] == pytest.approx(mean([r["strict_vital_score"] for r in with_vital]), rel=1e-12)
    n0 = len(ref) - len(with_vital)
    assert m["vital"] * len(with_vital) / len(ref) == pytest.approx(
        mean([r["vital_score"] for _, r in ref]), rel=1e-12
    )
    assert m["no_vital_rate"] == n0 / len(ref)
    assert m["weighted"] == pytest.approx(mean([paper_weighted(ns, False) for ns, _ in ref]), rel=1e-12)
    assert m["weighted_strict"] == pytest.approx(mean([paper_weighted(ns, True) for ns, _ in ref]), rel=1e-12)


def test_agreement_equals_sklearn_kappa():
    from sklearn.metrics import accuracy_score, cohen_kappa_score

    rng = random.Random(3)
    recs, a, h = [], [], []
    for i in range(60):
        items = []
        for j in range(rng.randint(1, 6)):
            x = rng.choice([S, P, N])
            y = x if rng.random() < 0.6 else rng.choice([S, P, N])
            has_h = rng.random() < 0.8
            items.append(_item(f"n{j}", "vital", x, y if has_h else None))
            if has_h:
                a.append(x)
                h.append(y)
        recs.append({"id": f"q{i}", "nuggets": {"items": items}})
    m = _m(get_scorer("nuggets").score(None, recs))
    assert m["assignment_accuracy"] == pytest.approx(accuracy_score(h, a), rel=1e-12)
    assert m["assignment_kappa"] == pytest.approx(cohen_kappa_score(a, h), rel=1e-12)
    # the same pairs through the judges family's calibration (rubric nugget_support)
    assert m["nugget_support.accuracy"] == m["assignment_accuracy"]
    assert m["nugget_support.cohen_kappa"] == pytest.approx(cohen_kappa_score(a, h), rel=1e-12)
    rejected = [x for x, y in zip(a, h) if y != S]
    assert m["nugget_support.false_approval_rate"] == pytest.approx(
        sum(x == S for x in rejected) / len(rejected), rel=1e-12
    )


def test_assignment_calibrated_as_a_judge_by_hand():
    """Four nuggets: judge S/S/P/N against human S/P/P/(none). Labelled: 3; the human rejects
    2 (P, P), of which the judge approves 1 (S vs P): false approval 1/2; the human approves 1
    (S), the judge too: false rejection 0/1; label agreement 2/3; the unlabelled N nugget is a
    PPI verdict without a label."""
    rec = {
        "id": "q1",
        "nuggets": {
            "items": [
                _item("a", "vital", S, S),
                _item("b", "okay", S, P),
                _item("c", "vital", P, P),
                _item("d", "okay", N, None),
            ]
        },
    }
    res = get_scorer("nuggets").score(None, [rec])
    cal = res["assignment_calibration"]
    assert len(cal) == 4 and cal.meta["assignment"] == "auto"
    m = _m(res)
    assert m["nugget_support.accuracy"] == 2 / 3
    assert m["nugget_support.false_approval_rate"] == 1 / 2
    assert m["nugget_support.false_rejection_rate"] == 0.0
    assert m["nugget_support.judge_approval_rate"] == 2 / 4
    assert m["nugget_support.human_approval_rate"] == 1 / 3
    lo, hi = (
        m["nugget_support.false_approval_rate_wilson_low"],
        m["nugget_support.false_approval_rate_wilson_high"],
    )
    assert lo < 0.5 < hi
    # no human assignment anywhere: the label metrics are missing evidence, not 0 or 1
    bare = {"id": "q2", "nuggets": {"items": [_item("a", "vital", S, None)]}}
    got = get_scorer("nuggets").score(None, [bare]).metrics()
    assert got["nuggets.nugget_support.accuracy"].value is None
    assert got["nuggets.nugget_support.accuracy"].missing
    assert got["nuggets.nugget_support.judge_approval_rate"].value == 1.0


def test_nugget_support_entries_in_the_judges_section():
    """The rubric is one of the judges family's: a judge file can carry nugget assignments."""
    from kg_rageval.families.judges.run import items_for

    recs = [
        {
            "id": "q1",
            "judges": [{"rubric": "nugget_support", "judge": "j", "output": {"verdict": v}, "human": h}],
        }
        for v, h in (("support", "support"), ("support", "not_support"), ("not_support", "not_support"))
    ]
    m = get_scorer("judge").score(None, recs).metrics()
    assert m["judge.nugget_support.accuracy"].value == 2 / 3
    assert m["judge.nugget_support.false_approval_rate"].value == 1 / 2
    rec = {"id": "q", "query": "Q?", "answer": {"text": "A."}, "nuggets": {"items": [_item("x", "vital")]}}
    assert items_for(rec, "nugget_support") == [
        {"question": "Q?", "answer": "A.", "nugget": "x", "item": "nugget:0"}
    ]


# ---------------------------------------------------------------------- ontology nuggets
@pytest.fixture(scope="module")
def vehicles(fixtures_dir):
    from kg_rageval.ontology import load_ontology

    return load_ontology(fixtures_dir / "hierarchy" / "vehicles.obo")


def _concept_rec(rid, answer, concept="VH:car", **extra):
    items = [_item("a car", "vital", concept=concept, **extra), _item("a boat", "okay", concept="VH:boat")]
    return {"id": rid, "gold_node": "VH:car", "nuggets": {"items": items, "answer_concepts": answer}}


def test_concepts_support_through_the_hierarchy(vehicles):
    sc = get_scorer("nuggets")
    cases = [
        (["VH:car"], 1.0),  # the same concept: support
        (["VH:sedan"], 1.0),  # more specific: support
        (["VH:vehicle"], 0.5),  # more general: partial support
        (["VH:boat"], 0.0),  # a sibling branch: not the car nugget (the boat nugget: support)
        (["VH:submarine", "VH:vehicle"], 0.5),  # the best over the answer's concepts
        ([], 0.0),
    ]
    for answer, vital in cases:
        m = _m(sc.score(vehicles, [_concept_rec("x", answer)]))
        assert m["vital"] == vital, answer
    # boat answer: car nugget not supported, boat nugget supported (weight .5): W = .5 / 1.5
    m = _m(sc.score(vehicles, [_concept_rec("x", ["VH:boat"])]))
    assert m["weighted"] == pytest.approx(0.5 / 1.5) and m["all_strict"] == 0.5


def test_stated_assignment_wins_in_auto_and_the_ontology_one_when_asked(vehicles):
    sc = get_scorer("nuggets")
    rec = _concept_rec("x", ["VH:vehicle"], a=S, h=P)  # the judge said support, the hierarchy partial
    assert _m(sc.score(vehicles, [rec]))["vital"] == 1.0
    m = _m(sc.score(vehicles, [rec], assignment="ontology"))
    assert m["vital"] == 0.5
    assert m["assignment_accuracy"] == 1.0  # ontology (partial) against the human (partial)


def test_unknown_concepts_gold_error_predicted_counted(vehicles, tmp_path):
    sc = get_scorer("nuggets")
    m = _m(sc.score(vehicles, [_concept_rec("x", ["VH:car", "VH:spaceship"])]))
    assert m["unknown_answer_concept_rate"] == 0.5 and m["vital"] == 1.0
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps(_concept_rec("x", ["VH:car"], concept="VH:hovercraft")) + "\n")
    with pytest.raises(
        InputError, match=r"r.jsonl, record 'x' \(line 1\), field nuggets.items.0.concept: .*'VH:hovercraft'"
    ):
        sc.score(vehicles, str(p))
    counted = _m(sc.score(vehicles, str(p), on_unknown_gold="count"))
    assert counted["vital"] == 0.0
    with pytest.raises(ConfigError, match="ontology"):
        sc.score(None, [_concept_rec("x", ["VH:car"])])


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "items,field",
    [
        ([{"text": "x", "importance": "essential", "assignment": S}], "nuggets.items.0.importance"),
        ([{"text": "x", "importance": "vital", "assignment": "yes"}], "nuggets.items.0.assignment"),
        ([{"text": "x", "importance": "vital"}], "nuggets.items.0.assignment"),
        ([{"importance": "vital", "assignment": S}], "nuggets.items.0.text"),
        ([{"text": "x", "importance": "vital", "assignment": S, "score": 1}], "nuggets.items.0.score"),
        (
            [{"text": "x", "importance": "vital", "human_assignment": "maybe", "assignment": S}],
            "nuggets.items.0.human_assignment",
        ),
    ],
)
def test_bad_input_names_file_line_and_field(tmp_path, items, field):
    p = tmp_path / "bad.jsonl"
    p.write_text(
        json.dumps({"id": "ok", "nuggets": {"items": [_item("a", "vital", S)]}})
        + "\n"
        + json.dumps({"id": "x", "nuggets": {"items": items}})
        + "\n"
    )
    with pytest.raises(InputError) as got:
        get_scorer("nuggets").score(None, str(p))
    msg = str(got.value)
    assert "\n" not in msg and f"bad.jsonl, record 'x' (line 2), field {field}" in msg, msg


def test_bad_section_names_the_field():
    sc = get_scorer("nuggets")
    with pytest.raises(InputError, match=r"record 'x', field nuggets: expected an object"):
        sc.score(None, [{"id": "x", "nuggets": [1]}])
    with pytest.raises(InputError, match=r"field nuggets.topic_id: expected the topic id"):
        sc.score(None, [{"id": "x", "nuggets": {"topic_id": 3, "items": []}}])
    with pytest.raises(InputError, match=r"field nuggets.answer_concepts: a concept nugget needs"):
        sc.score(None, [{"id": "x", "nuggets": {"items": [_item("a", "vital", concept="VH:car")]}}])
