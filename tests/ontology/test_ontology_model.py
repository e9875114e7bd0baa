"""The compiled Ontology: numbering, closure, depths, relations, errors."""

from __future__ import annotations

import numpy as np
import pytest

from kg_rageval.base.errors import HierarchyCycleError, OntologyError, UnknownIdError
from kg_rageval.ontology import VIRTUAL_ROOT_ID, OntologyBuilder


def test_topological_numbering_and_closure(vehicles):
    o = vehicles
    assert o.ids[0] == "vehicle" and not o.virtual_root
    for i in range(len(o)):
        row = o.ancestor_indices(i)
        assert row[-1] == i and list(row) == sorted(row)
        assert all(p < i for p in o.parent_indices(i))
    assert o.ancestors("amphibious_car") == ["vehicle", "car", "boat"]
    assert o.descendants("boat") == ["submarine", "amphibious_car"]
    assert o.depth("amphibious_car") == 2 and o.depth("vehicle") == 0


def test_closure_matches_networkx(vehicles):
    import networkx as nx

    g = vehicles.to_networkx()
    for n in vehicles.ids:
        assert set(vehicles.ancestors(n)) == nx.descendants(g, n)  # edges point child -> parent


@pytest.mark.parametrize(
    "gold,pred,expected",
    [
        ("hatchback", "hatchback", "exact"),
        ("hatchback", "car", "parent"),
        ("hatchback", "vehicle", "ancestor"),
        ("car", "hatchback", "child"),
        ("vehicle", "hatchback", "descendant"),
        ("hatchback", "sedan", "sibling"),
        ("hatchback", "amphibious_car", "sibling"),
        ("hatchback", "submarine", "cousin"),
        ("submarine", "amphibious_car", "sibling"),
    ],
)
def test_relation(vehicles, gold, pred, expected):
    assert vehicles.relation(gold, pred) == expected


def test_lca_and_is_ancestor(vehicles):
    assert vehicles.lca("hatchback", "submarine") == "vehicle"
    assert vehicles.lca("sedan", "amphibious_car") == "car"
    assert vehicles.lca("car", "sedan") == "car"
    assert vehicles.is_ancestor("boat", "amphibious_car")
    assert not vehicles.is_ancestor("sedan", "sedan")


def test_virtual_root_for_several_roots():
    b = OntologyBuilder()
    for n in "abcd":
        b.add_node(n)
    b.add_edge("c", "a")
    b.add_edge("d", "b")
    o = b.build()
    assert o.virtual_root and o.ids[0] == VIRTUAL_ROOT_ID
    assert sorted(o.real_roots) == ["a", "b"]
    assert o.depth("c") == 2
    assert o.relation("a", "b") == "unrelated"  # the virtual root makes no siblings
    assert o.relation("c", "d") == "unrelated"
    assert o.summary()["nodes"] == 4 and o.summary()["max_depth"] == 1


def test_cycle_is_reported_with_its_path():
    b = OntologyBuilder("cyc.csv")
    for n in "xabc":
        b.add_node(n)
    b.add_edge("a", "x")
    b.add_edge("b", "a")
    b.add_edge("c", "b")
    b.add_edge("a", "c")
    with pytest.raises(HierarchyCycleError) as exc:
        b.build()
    cyc = exc.value.cycle
    assert cyc[0] == cyc[-1] and set(cyc) == {"a", "b", "c"}
    assert "cyc.csv" in str(exc.value)


def test_errors_are_clear():
    with pytest.raises(OntologyError, match="empty"):
        OntologyBuilder("e.ttl").build()
    b = OntologyBuilder()
    b.add_node("a", label="A", where="line 1")
    b.add_node("a", label="B", where="line 7")
    with pytest.raises(OntologyError, match="conflicting labels.*line 7"):
        b.build()
    b = OntologyBuilder()
    b.add_node("a")
    b.add_edge("a", "ghost", where="line 3")
    with pytest.raises(OntologyError, match="ghost.*line 3"):
        b.build()
    o = b.build(dangling="drop")
    assert o.diagnostics == {"dangling_edges_dropped": 1}


def test_unknown_id_and_resolve(vehicles):
    with pytest.raises(UnknownIdError, match="did you mean sedan"):
        vehicles.index("Sedan")
    assert vehicles.resolve("Amphibious car") == "amphibious_car"
    idx = vehicles.indices(["car", "boat"])
    assert idx.dtype == np.int32 and list(idx) == [1, 2]
    with pytest.raises(UnknownIdError) as exc:
        vehicles.indices(["car", "x", "y"])
    assert exc.value.ids == ["x", "y"]


def test_self_loop_dropped_and_counted():
    b = OntologyBuilder()
    b.add_node("a")
    b.add_node("b")
    b.add_edge("b", "a")
    b.add_edge("b", "b")
    o = b.build()
    assert o.parents("b") == ["a"] and o.diagnostics["self_loops_dropped"] == 1


def test_content_hash_independent_of_order():
    def build(order):
        b = OntologyBuilder()
        for n in order:
            b.add_node(n, label=n.upper())
        b.add_edge("b", "a")
        b.add_edge("c", "a")
        return b.build()

    assert build("abc").content_hash == build("cba").content_hash


def test_compiled_cache_round_trip(vehicles, tmp_path):
    from kg_rageval.ontology import load_ontology
    from kg_rageval.ontology.cache import save_compiled

    path = save_compiled(vehicles, tmp_path / "v")
    again = load_ontology(path)
    assert again.ids == vehicles.ids and again.labels == vehicles.labels
    assert again.content_hash == vehicles.content_hash
    assert np.array_equal(again.anc_idx, vehicles.anc_idx)
    assert again.relation("hatchback", "submarine") == "cousin"


def test_resolve_full_iri_and_curie():
    b = OntologyBuilder(prefixes={"DOID": "http://purl.obolibrary.org/obo/DOID_", "ex": "http://ex.org/"})
    b.add_node("DOID:162", label="cancer")
    b.add_node("http://ex.org/a", label="A")
    o = b.build()
    assert o.compact_iri("http://purl.obolibrary.org/obo/DOID_162") == "DOID:162"
    assert o.resolve("http://purl.obolibrary.org/obo/DOID_162") == "DOID:162"
    assert o.resolve("ex:a") == "http://ex.org/a"
    assert o.resolve("Cancer") == "DOID:162"
    assert o.compact_iri("http://other.org/x") == "http://other.org/x"
    with pytest.raises(UnknownIdError):
        o.resolve("http://purl.obolibrary.org/obo/DOID_999")
