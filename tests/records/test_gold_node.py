"""The one ``gold_node`` rule (``kg_rageval.records.gold_node``) and the places that use it."""

from __future__ import annotations

import pytest

from kg_rageval.records import gold_node, gold_nodes
from kg_rageval.records.fields import row_keys, stated_row_keys

CANON = {"A": "A", "B": "B", "A-old": "A"}.get  # a resolver: alt id A-old → A; others unknown


@pytest.mark.parametrize(
    "record, expected",
    [
        ({"gold_node": "B", "labels": {"gold": ["A"]}}, "B"),  # the record's own gold_node wins
        ({"labels": {"gold": ["A"]}}, "A"),  # else its single gold label
        ({"labels": {"gold": "A"}}, "A"),  # a string is one label
        ({"labels": {"gold": ["A", "B"]}}, None),  # several labels: no single node
        ({"labels": {"gold": []}}, None),  # NIL: none
        ({"gold_node": "", "labels": {"gold": ["A"]}}, "A"),  # an empty string states nothing
        ({"gold_node": 3, "labels": {"gold": ["A"]}}, "A"),  # nor does a non-string
        ({}, None),
    ],
)
def test_the_rule_without_a_resolver(record, expected):
    assert gold_node(record) == expected
    assert row_keys(record)["gold_node"] == expected == stated_row_keys(record)["gold_node"]


def test_fallback_is_the_family_node_after_the_record_level_sources():
    assert gold_node({"labels": {"gold": ["A", "B"]}}, fallback="F") == "F"
    assert gold_node({"labels": {"gold": ["A"]}}, fallback="F") == "A"
    assert gold_node({"gold_node": "B"}, fallback="F") == "B"
    assert gold_node({}, fallback=None) is None


def test_with_a_resolver_ids_resolve_and_unknown_ones_are_skipped():
    assert gold_node({"gold_node": "A-old"}, resolve=CANON) == "A"  # alt id → its concept
    assert gold_node({"gold_node": "zzz", "labels": {"gold": ["B"]}}, resolve=CANON) == "B"
    assert (
        gold_node({"gold_node": "zzz", "labels": {"gold": ["yyy"]}}, resolve=CANON, fallback="A-old") == "A"
    )
    assert gold_node({"gold_node": "zzz"}, resolve=CANON) is None
    assert gold_node({"gold_node": "zzz"}) == "zzz"  # no resolver: as given


def test_gold_nodes_of_many_records_resolve_each_candidate_once():
    """``gold_nodes`` gives ``gold_node`` of each record with its own fallback; the resolver is
    asked once per distinct candidate (it is pure), also for the candidates it does not know."""
    asked: list[str] = []

    def resolve(c: str) -> str | None:
        asked.append(c)
        return CANON(c)

    records = [
        {"gold_node": "A-old"},
        {"gold_node": "zzz", "labels": {"gold": ["B"]}},
        {"labels": {"gold": ["A", "B"]}},
        {"gold_node": "A-old", "labels": {"gold": ["B"]}},
        {"gold_node": "zzz"},
        {},
    ]
    got = gold_nodes(records, resolve=resolve, fallbacks=["F", None, "B", None, "zzz", "A"])
    assert got == ["A", "B", "B", "A", None, "A"]
    assert sorted(asked) == ["A", "A-old", "B", "zzz"]
    assert gold_nodes(records[:3]) == ["A-old", "zzz", None]
    assert gold_nodes([]) == []


def test_pernode_and_conformance_use_the_rule():
    from kg_rageval.audit.pernode import gold_node_of
    from kg_rageval.families.conformance.metrics import record_gold_node
    from kg_rageval.ontology import OntologyBuilder

    # several gold labels: no single node (before: the first label), so the mention fallback
    assert gold_node_of({"labels": {"gold": ["A", "B"]}, "mentions": {"gold": [{"id": "M"}]}}) == "M"
    assert gold_node_of({"labels": {"gold": ["A", "B"]}}) is None
    assert gold_node_of({"gold_node": "G", "labels": {"gold": ["A"]}}) == "G"
    b = OntologyBuilder("o")
    for n in ("root", "A", "B"):
        b.add_node(n)
    b.add_edge("A", "root")
    b.add_edge("B", "root")
    b.add_alias("A-old", "A")
    o = b.build()
    assert record_gold_node({"gold_node": "A-old"}, o) == "A"  # before: exact ids only (None)
    assert record_gold_node({"gold_node": "zzz", "labels": {"gold": ["B"]}}, o) == "B"
    assert record_gold_node({}, o, reference_node="B") == "B"
    assert record_gold_node({"labels": {"gold": ["A", "B"]}}, o, reference_node="zzz") is None


def test_hierarchy_and_relations_rows_follow_the_rule():
    from kg_rageval.ontology import OntologyBuilder, Property
    from kg_rageval.scoring import get_scorer

    b = OntologyBuilder("o")
    for n in ("root", "A", "B", "C"):
        b.add_node(n)
    for n in ("A", "B", "C"):
        b.add_edge(n, "root")
    b.add_alias("A-old", "A")
    b.add_instance("i1", kind="thing", types=["C"])
    b.add_property(Property("p"))
    b.add_triple("i1", "p", "B")
    o = b.build()
    h = (
        get_scorer("hierarchy")
        .score(
            o,
            [
                {"id": "1", "labels": {"gold": ["A"], "pred": ["B"]}},
                {"id": "2", "gold_node": "C", "labels": {"gold": ["A"], "pred": ["A"]}},  # stated wins
                {"id": "3", "gold_node": "A-old", "labels": {"gold": ["B"], "pred": ["B"]}},  # resolved
                {"id": "4", "gold_node": "zzz", "labels": {"gold": ["B"], "pred": ["B"]}},  # unknown: skipped
            ],
        )
        .single
    )
    assert list(h.keys["gold_node"]) == ["A", "C", "A", "B"]
    r = (
        get_scorer("relations")
        .score(
            o,
            [
                {"id": "1", "relations": {"gold": [["i1", "p", "B"]], "answer": []}},  # the triple's object
                {"id": "2", "gold_node": "C", "relations": {"gold": [["i1", "p", "B"]], "answer": []}},
                {
                    "id": "3",
                    "labels": {"gold": ["A-old"]},
                    "relations": {"node": "B", "gold_answers": ["B"], "answers": []},
                },
                {"id": "4", "relations": {"node": "A-old", "gold_answers": ["B"], "answers": []}},
            ],
        )
        .single
    )
    assert list(r.keys["gold_node"]) == ["B", "C", "A", "A"]
