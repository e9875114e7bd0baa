"""The relations family: triples, answer sets, NIL and KG-grounded faithfulness."""

from __future__ import annotations

import json
import random

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.ontology import OntologyBuilder, Property, load_ontology
from kg_rageval.scoring import get_scorer


@pytest.fixture(scope="module")
def onto():
    b = OntologyBuilder("small")
    for nid in ("Agent", "Group", "Tool", "Technique", "T1", "T1.1", "T1.2", "T2"):
        b.add_node(nid, label=nid.lower())
    for c, p in (
        ("Group", "Agent"),
        ("T1", "Technique"),
        ("T2", "Technique"),
        ("T1.1", "T1"),
        ("T1.2", "T1"),
    ):
        b.add_edge(c, p)
    b.add_instance("g1", kind="group", types=["Group"])
    b.add_instance("g2", kind="group", types=["Group"])
    b.add_instance("x1", kind="tool", types=["Tool"])
    b.add_property(Property("uses", domain=("Agent", "tool"), range=("Technique", "tool")))
    b.add_property(Property("based-in", domain=("Agent",), range=("Agent",), max_cardinality=1))
    for t in (("g1", "uses", "T1.1"), ("g1", "uses", "x1"), ("x1", "uses", "T2"), ("g1", "based-in", "g2")):
        b.add_triple(*t)
    return b.build()


def score(onto, records, **kw):
    return get_scorer("relations").score(onto, records, **kw).single


def values(ev):
    return {k: m.value for k, m in ev.metrics().items()}


def test_hand_worked_triples_partial_credit_and_confusions(onto):
    recs = [
        {
            "id": "q1",
            "relations": {
                "gold": [["g1", "uses", "T1.1"], ["g1", "uses", "x1"]],
                # T1 for T1.1: one end one level up (credit 0.5); x1 exact (repeated once); an unknown id
                "answer": [
                    ["g1", "uses", "T1"],
                    ["g1", "uses", "x1"],
                    ["g1", "uses", "x1"],
                    ["g2", "uses", "zzz"],
                ],
            },
        },
        {
            "id": "q2",
            "relations": {
                "gold": [["g1", "uses", "T1"]],
                # a sibling object (no credit), a child object (credit 0.5 but the gold is taken once)
                "answer": [["g1", "uses", "T1.2"], ["g2", "uses", "T1"]],
            },
        },
    ]
    v = values(score(onto, recs))
    # exact: 1 (q1) + 0 (q2); answers 3 + 2 (repeat counted once); gold 2 + 1
    assert v["triple_precision"] == pytest.approx(1 / 5) and v["triple_recall"] == pytest.approx(1 / 3)
    # soft: q1 (g1 uses T1) ~ (g1 uses T1.1): 0.5; q2 (g1 uses T1.2) — the answer's object is a
    # child of the gold's: 0.5; (g2 uses T1): g2 is an instance, no hierarchy credit
    assert v["soft_triple_precision"] == pytest.approx(2 / 5) and v["soft_triple_recall"] == pytest.approx(
        2 / 3
    )
    assert v["partial_matches"] == 2
    # macro: q1 P 1/3 R 1/2 F .4; q2 P 0 R 0 F 0
    assert v["triple_macro_precision"] == pytest.approx(1 / 6)
    assert v["triple_macro_recall"] == pytest.approx(1 / 4) and v["triple_macro_f1"] == pytest.approx(0.2)
    # wrong ends: q1 T1 (object, parent of gold T1.1); q2 T1.2 (object, child of gold T1);
    # q2 g2 (subject, instance: unrelated); q1 (g2 uses zzz) unanchored
    assert v["wrong_object_parent"] == pytest.approx(1 / 3) and v["wrong_object_child"] == pytest.approx(
        1 / 3
    )
    assert v["wrong_subject_unrelated"] == pytest.approx(1 / 3)
    assert v["wrong_unanchored"] == 1 and v["triple_unknown_ids"] == 1


def test_partial_credit_zero_and_both_ends(onto):
    recs = [{"id": "q", "relations": {"gold": [["T1.1", "uses", "T1.2"]], "answer": [["T1", "uses", "T1"]]}}]
    v = values(score(onto, recs, partial_credit=0.5))
    assert v["soft_triple_recall"] == pytest.approx(0.25)  # both ends one level up: 0.5²
    v0 = values(score(onto, recs, partial_credit=0.0))
    assert v0["soft_triple_recall"] == 0.0 and v0["partial_matches"] == 0


def test_nil_is_counted_apart_never_a_free_one(onto):
    recs = [
        {"id": "n1", "relations": {"gold": [], "answer": []}},
        {"id": "n2", "relations": {"gold": [], "answer": [["g1", "uses", "x1"]]}},
        {"id": "a1", "relations": {"gold_answers": [], "answers": []}},
    ]
    ev = score(onto, recs)
    v = values(ev)
    assert (
        v["triple_nil_correct"] == 1
        and v["triple_nil_over_answered"] == 1
        and v["triple_nil_accuracy"] == 0.5
    )
    m = ev.metrics()
    for name in ("triple_precision", "triple_recall", "triple_f1", "answer_macro_f1", "answer_micro_recall"):
        assert m[name].value is None and m[name].missing, name
    assert v["answer_nil_accuracy"] == 1.0 and v["answer_nil_correct"] == 1


def test_answer_sets_qald_macro_and_micro(onto):
    recs = [
        {"id": "a", "relations": {"gold_answers": ["g1", "g2"], "answers": ["g1", "x1", "bogus"]}},
        {"id": "b", "relations": {"gold_answers": ["x1"], "answers": []}},  # abstention
        {"id": "c", "relations": {"gold_answers": [], "answers": ["g1"]}},  # NIL over-answered
    ]
    v = values(score(onto, recs))
    assert v["answer_macro_precision"] == pytest.approx(1 / 3)  # only the answered question
    assert v["answer_macro_recall"] == pytest.approx((1 / 2 + 0) / 2)
    assert v["answer_macro_f1"] == pytest.approx((0.4 + 0) / 2)
    assert v["answer_micro_precision"] == pytest.approx(1 / 4)  # 1 hit / (3 + 0 + 1)
    assert v["answer_micro_recall"] == pytest.approx(1 / 3)
    assert (
        v["answer_abstentions"] == 1 and v["answer_nil_over_answered"] == 1 and v["answer_unknown_ids"] == 1
    )


def test_kg_faithfulness_supported_contradicted_not_in_graph(onto):
    claims = [
        ["g1", "uses", "x1"],  # supported
        ["T1", "uses", "g1"],  # contradicted: T1 is no Agent nor tool (domain)
        ["g2", "uses", "T1"],  # consistent, absent: not in the graph
        ["g1", "based-in", "g1"],  # contradicted: based-in is functional, g1 already has g2
        ["g9", "uses", "T1"],
    ]  # unknown id: not in the graph
    v = values(score(onto, [{"id": "c", "relations": {"claims": claims}}]))
    assert v["kg_faithfulness"] == pytest.approx(1 / 5)
    assert v["kg_contradiction_rate"] == pytest.approx(2 / 5)
    assert v["kg_not_in_graph_rate"] == pytest.approx(2 / 5) and v["claims_unknown"] == 1


def test_bad_input_and_missing_prediction(onto):
    with pytest.raises(InputError, match="gold id 'nope'"):
        score(onto, [{"id": "x", "relations": {"gold": [["nope", "uses", "T1"]], "answer": []}}])
    with pytest.raises(InputError, match="relations.answer\\[0\\]"):
        score(onto, [{"id": "x", "relations": {"gold": [], "answer": [["a", "b"]]}}])
    ev = score(onto, [{"id": "x", "relations": {"gold": [["g1", "uses", "x1"]]}}, {"id": "y"}])
    assert [u["code"] for u in ev.unscored] == ["missing_prediction", "no_section"]


@pytest.mark.shared_data
def test_generated_answers_on_attack_equal_an_independent_set_computation(shared_data):
    o = load_ontology(shared_data / "attack" / "enterprise-attack-kg-18.1.json.gz")
    triples = o.triples(predicate="uses")
    by_group: dict[str, list] = {}
    for t in triples:
        by_group.setdefault(t[0], []).append(t)
    rng = random.Random(7)
    recs = []
    exact = n_pred = n_gold = 0
    hits = n_a = n_g = 0
    for k, (_grp, gold) in enumerate(sorted(by_group.items())[:150]):
        answer = [t for t in gold if rng.random() < 0.6] + [
            rng.choice(triples) for _ in range(rng.randint(0, 4))
        ]
        gs, as_ = set(gold), set(answer)
        exact += len(gs & as_)
        n_pred += len(as_)
        n_gold += len(gs)
        ga = {t[2] for t in gold}
        aa = {t[2] for t in answer}
        hits += len(ga & aa)
        n_a += len(aa)
        n_g += len(ga)
        recs.append(
            {
                "id": f"q{k}",
                "relations": {
                    "gold": [list(t) for t in gold],
                    "answer": [list(t) for t in answer],
                    "gold_answers": sorted(ga),
                    "answers": sorted(aa),
                },
            }
        )
    v = values(score(o, recs))
    assert v["triple_precision"] == pytest.approx(exact / n_pred)
    assert v["triple_recall"] == pytest.approx(exact / n_gold)
    assert v["answer_micro_precision"] == pytest.approx(hits / n_a)
    assert v["answer_micro_recall"] == pytest.approx(hits / n_g)
    # a technique answered for its sub-technique earns partial credit on ATT&CK
    rec = {
        "id": "p",
        "relations": {"gold": [["G0022", "uses", "T1003.001"]], "answer": [["G0022", "uses", "T1003"]]},
    }
    v = values(score(o, [rec]))
    assert v["soft_triple_recall"] == 0.5 and v["wrong_object_parent"] == 1.0


def test_cli_score_relations(onto, tmp_path):
    from kg_rageval.cli.main import main
    from kg_rageval.ontology.cache import save_compiled

    path = save_compiled(onto, tmp_path / "o.kgro")
    data = tmp_path / "r.jsonl"
    data.write_text(
        json.dumps(
            {"id": "q", "relations": {"gold": [["g1", "uses", "x1"]], "answer": [["g1", "uses", "x1"]]}}
        )
        + "\n"
    )
    assert main(["score", "relations", "--ontology", str(path), "--data", str(data), "--format", "json"]) == 0


def test_rows_attach_to_the_node_of_their_subject(onto):
    recs = [
        {"id": "a", "relations": {"gold": [["T1.1", "uses", "T2"]], "answer": [["T1.1", "uses", "T2"]]}},
        {"id": "b", "relations": {"gold": [["g1", "uses", "T1.1"]], "answer": []}},
        {"id": "c", "relations": {"node": "T2", "gold_answers": ["g1"], "answers": ["g1"]}},
    ]
    ev = score(onto, recs)
    assert ev.keys["gold_node"].tolist() == ["T1.1", "T1.1", "T2"]
    roll = ev.rollup(onto)
    assert roll["T1"]["n"] == 2 and roll["T1"]["metrics"]["triple_recall"].value == 0.5
    with pytest.raises(InputError, match="relations.node"):
        score(onto, [{"id": "x", "relations": {"node": "g1", "claims": []}}])


def test_audit_gates_on_relations(tmp_path, fixtures_dir):
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.runner import run_audit
    from kg_rageval.ontology.cache import save_compiled

    d = fixtures_dir / "ontology"
    onto = load_ontology(d / "kg_catalogue.csv", triples=str(d / "kg_triples.csv"))
    save_compiled(onto, tmp_path / "cat.kgro")
    cfg = config_from_mapping(
        {
            "ontology": str(tmp_path / "cat.kgro"),
            "records": str(fixtures_dir / "relations" / "catalogue.jsonl"),
            "families": {"relations": {"partial_credit": 0.5}},
            "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
            "gates": [
                "relations.triple_f1 >= 0.4",
                "relations.kg_faithfulness >= 0.9",
                "relations.answer_nil_accuracy >= 1",
            ],
        }
    )
    res = run_audit(cfg, progress=False)
    by = {str(r.gate): r for r in res.gate_results}
    assert by["relations.triple_f1 >= 0.4"].status == "pass" and by[
        "relations.triple_f1 >= 0.4"
    ].observed == pytest.approx(0.4)
    assert by["relations.kg_faithfulness >= 0.9"].status == "fail"
    assert by["relations.kg_faithfulness >= 0.9"].observed == pytest.approx(0.5)
    assert by["relations.answer_nil_accuracy >= 1"].status == "pass"
    assert res.exit_code == 1


def test_triples_as_objects_equal_triples_as_lists(onto):
    as_list = [
        {
            "id": "q",
            "relations": {
                "gold": [["g1", "uses", "x1"]],
                "answer": [["g1", "uses", "x1"], ["g2", "uses", "T1"]],
                "claims": [["g1", "uses", "x1"]],
            },
        }
    ]
    obj = lambda s, p, o: {"subject": s, "predicate": p, "object": o}  # noqa: E731
    as_obj = [
        {
            "id": "q",
            "relations": {
                "gold": [obj("g1", "uses", "x1")],
                "answer": [obj("g1", "uses", "x1"), obj("g2", "uses", "T1")],
                "claims": [obj("g1", "uses", "x1")],
            },
        }
    ]
    a, b = values(score(onto, as_list)), values(score(onto, as_obj))
    assert a == b and a["triple_precision"] == 0.5 and a["kg_faithfulness"] == 1.0
    with pytest.raises(InputError, match="relations.claims\\[0\\]"):
        score(onto, [{"id": "q", "relations": {"claims": [["g1", "uses"]]}}])


@pytest.fixture(scope="module")
def alias_onto():
    """``small`` plus alternative ids: ``T1-old`` of ``T1.1`` and ``Grp`` of ``Group``."""
    b = OntologyBuilder("aliased")
    for nid in ("Agent", "Group", "Technique", "T1", "T1.1", "T2"):
        b.add_node(nid, label=nid.lower())
    for c, p in (("Group", "Agent"), ("T1", "Technique"), ("T2", "Technique"), ("T1.1", "T1")):
        b.add_edge(c, p)
    b.add_alias("T1-old", "T1.1")
    b.add_alias("Grp", "Group")
    b.add_instance("g1", kind="group", types=["Group"])
    b.add_property(Property("uses", domain=("Agent",), range=("Technique",)))
    b.add_triple("g1", "uses", "T1.1")
    return b.build()


def test_alternative_ids_resolve_as_in_every_family(alias_onto):
    """An alt id names its concept (``IdResolver``, option ``aliases``), as hierarchy scores it:
    before, relations counted ``T1-old`` as an unknown id (answer precision 0)."""
    hier = (
        get_scorer("hierarchy")
        .score(alias_onto, [{"id": "h", "labels": {"gold": ["T1.1"], "pred": ["T1-old"]}}])
        .single
    )
    assert hier.metrics()["exact_accuracy"].value == 1.0
    recs = [
        {
            "id": "a",
            "relations": {
                "gold_answers": ["T1.1"],
                "answers": ["T1-old", "T2"],
                "gold": [["g1", "uses", "T1.1"]],
                "answer": [["g1", "uses", "T1-old"]],
                "claims": [["g1", "uses", "T1-old"]],
            },
        },
        {"id": "b", "relations": {"gold_answers": ["T1-old"], "answers": ["T1.1"]}},
    ]
    v = values(score(alias_onto, recs))
    assert v["answer_micro_precision"] == pytest.approx(2 / 3)  # T1-old is T1.1; T2 is wrong
    assert v["answer_micro_recall"] == 1.0 and v["answer_unknown_ids"] == 0
    assert v["triple_precision"] == 1.0 and v["triple_unknown_ids"] == 0
    assert v["kg_faithfulness"] == 1.0 and v["claims_unknown"] == 0
    # aliases=False: the alt id is a predicted id the ontology lacks (counted), and as gold an error
    v = values(score(alias_onto, recs[:1], aliases=False))
    assert (
        v["answer_micro_precision"] == 0.0 and v["answer_unknown_ids"] == 1 and v["triple_unknown_ids"] == 1
    )
    with pytest.raises(InputError, match="T1-old"):
        score(alias_onto, recs[1:], aliases=False)


def test_unknown_id_options_as_in_every_family(alias_onto):
    rec = {"id": "a", "relations": {"gold_answers": ["nope"], "answers": ["nope", "T1.1"]}}
    with pytest.raises(InputError, match="nope"):
        score(alias_onto, [rec])
    v = values(score(alias_onto, [rec], on_unknown_gold="count"))  # an opaque concept: matches itself
    assert v["answer_micro_precision"] == 0.5 and v["answer_micro_recall"] == 1.0
    ok = {"id": "b", "relations": {"gold_answers": ["T1.1"], "answers": ["T1.1", "zzz"]}}
    assert values(score(alias_onto, [ok]))["answer_unknown_ids"] == 1
    with pytest.raises(InputError, match="zzz"):
        score(alias_onto, [ok], on_unknown="error")
