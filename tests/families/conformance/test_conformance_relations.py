"""Conformance relation checks over the real ATT&CK 18.1 knowledge graph: predicate
vocabulary, domain/range by subsumption and kind, cardinality and hallucinated edges."""

from __future__ import annotations

import pytest

from kg_rageval.families.conformance import score_conformance
from kg_rageval.ontology import load_ontology


def T(s, p, o):
    return {"subject": s, "predicate": p, "object": o}


SPEC = {"title": "Relations", "fields": {"relations": {"kind": "triples", "predicates": "ontology"}}}


@pytest.fixture(scope="module")
def kg(shared_data):
    return load_ontology(shared_data / "attack" / "enterprise-attack-kg-18.1.json.gz")


@pytest.mark.slow
@pytest.mark.shared_data
def test_relation_checks_on_attack(kg):
    out = {
        "relations": [
            T("G0022", "uses", "T1003.001"),  # in the graph; domain group, range sub-technique
            T("G0022", "uses", "T1110"),  # consistent but not in the graph: hallucinated edge
            T("T1003", "uses", "G0022"),  # domain and range both violated, not in the graph
            T("G0022", "usez", "T1003"),  # unknown predicate
        ]
    }
    ev = score_conformance(kg, [{"id": "r", "answer": {"output": out}}], SPEC)
    m = {k: v.value for k, v in ev.metrics().items()}
    assert m["predicate_vocabulary"] == pytest.approx(3 / 4)
    assert m["domain_conformance"] == pytest.approx(2 / 3) and m["range_conformance"] == pytest.approx(2 / 3)
    assert m["domain_range_conformance"] == pytest.approx(2 / 3)
    assert m["edge_support"] == pytest.approx(1 / 3) and m["hallucinated_edges"] == 2
    assert m["hallucinated_edge_rate"] == pytest.approx(2 / 3)
    problems = ev.rows()[0]["problems"]
    assert problems["hallucinated_edges"] == [["G0022", "uses", "T1110"], ["T1003", "uses", "G0022"]]
    assert ev.metrics()["cardinality_conformance"].value is None  # no predicate declares one


@pytest.mark.shared_data
def test_cardinality_when_declared(kg):
    from dataclasses import replace

    props = tuple(replace(p, max_cardinality=1) if p.id == "attributed-to" else p for p in kg.properties)
    onto = replace(kg, properties=props)
    camp = kg.triples(predicate="attributed-to")[0]
    other = "C0001" if camp[0] != "C0001" else "C0002"
    out = {"relations": [T(*camp), T(camp[0], "attributed-to", "G0016"), T(other, "attributed-to", camp[2])]}
    ev = score_conformance(onto, [{"id": "r", "answer": {"output": out}}], SPEC)
    # two (subject, attributed-to) pairs: the first names two groups
    assert ev.metrics()["cardinality_conformance"].value == pytest.approx(1 / 2)
    card = [v for v in ev.rows()[0]["problems"]["domain_range_violations"] if v["side"] == "cardinality"]
    assert card == [
        {
            "subject": camp[0],
            "predicate": "attributed-to",
            "side": "cardinality",
            "objects": sorted({camp[2], "G0016"}),
            "max_cardinality": 1,
        }
    ]


@pytest.mark.shared_data
def test_triple_slots_admit_instances_by_kind(kg):
    spec = {
        "title": "Uses",
        "fields": {
            "relations": {
                "kind": "triples",
                "predicates": ["uses"],
                "subject": {"node_type": ["intrusion-set", "campaign"]},
                "object": {"node_type": ["technique", "sub-technique", "malware", "tool"]},
            }
        },
    }
    out = {
        "relations": [
            T("G0022", "uses", "T1003.001"),
            T("G0022", "uses", "S0002"),
            T("T1003", "uses", "G0022"),
            T("G0057", "uses", "T1003"),
        ]
    }  # G0057 is a revoked group
    ev = score_conformance(kg, [{"id": "r", "answer": {"output": out}}], spec)
    m = {k: v.value for k, v in ev.metrics().items()}
    assert m["entity_vocabulary"] == 1.0  # instance ids are known entities
    # admitted: G0022 ×2 (subjects), T1003.001, S0002, T1003 (objects) — not T1003 as a subject,
    # not G0022 as an object, not the revoked G0057
    assert m["field_conformance"] == pytest.approx(5 / 8)
    assert [x["value"] for x in ev.rows()[0]["problems"]["not_admitted"]] == ["T1003", "G0057", "G0022"]
    assert m["revoked_rate"] == pytest.approx(1 / 8)
    problems = ev.rows()[0]["problems"]
    assert {x["id"]: x["replacement"] for x in problems["inactive_ids"]} == {
        "G0057": kg.entity_id(int(kg.graph.instance_replaced_by[kg.entity_index("G0057") - len(kg)]))
    }
    assert m["schema_validity"] == 0.0  # the wrong kinds and the revoked group fail the schema's enum
