"""Instances and relations from RDF/OWL (rdflib vs owlready2), OBO relationship lines and
triple tables."""

from __future__ import annotations

import numpy as np
import pytest

from kg_rageval.base.errors import OntologyError
from kg_rageval.ontology import load_ontology
from kg_rageval.ontology.graph import satisfies

NS = "http://example.org/kg#"


def test_owl_individuals_and_assertions_agree_with_owlready2(fixtures_dir):
    owlready2 = pytest.importorskip("owlready2")
    path = fixtures_dir / "ontology" / "kg_individuals.owl"
    o = load_ontology(path)
    w = owlready2.World()
    ref = w.get_ontology(path.resolve().as_uri()).load()
    g = o.graph
    types = {
        g.instance_ids[k]: sorted(o.ids[c] for c in g.instance_types(k).tolist())
        for k in range(g.n_instances)
    }
    for ind in ref.individuals():  # owlready2: the owl:NamedIndividual ones
        assert types[ind.iri] == sorted(c.iri for c in ind.is_a)
        assert g.instance_labels[g.instance_ids.index(ind.iri)] == ind.label[0]
    # kg:cn is typed by a class only (not a NamedIndividual): an instance for us too
    assert types[NS + "cn"] == [NS + "Country"]
    want = {(a.iri, p.iri, b.iri) for p in ref.object_properties() for a, b in p.get_relations()}
    assert set(o.triples()) == want and len(want) == 4
    for p in ref.object_properties():
        prop = o.property(p.iri)
        assert list(prop.domain) == [d.iri for d in p.domain] and list(prop.range) == [r.iri for r in p.range]
        assert (prop.max_cardinality == 1) == (owlready2.FunctionalProperty in p.is_a)
    # domain/range by subsumption: every assertion satisfies its property's declaration
    pos = g.positions(predicate=g.predicate_index(NS + "uses"))
    assert satisfies(o, g.s[pos], o.property(NS + "uses").domain).all()  # Group ⊑ Agent
    assert satisfies(o, g.o[pos], o.property(NS + "uses").range).all()  # Malware ⊑ Software
    assert not satisfies(o, o.entity_indices([NS + "cn"]), (NS + "Software",)).any()


def test_obo_relationship_lines(fixtures_dir):
    path = fixtures_dir / "ontology" / "kg_relationships.obo"
    plain = load_ontology(path)
    assert plain.diagnostics["relationship_lines_ignored"] == 3 and not plain.graph
    rel = load_ontology(path, relationships="relation")
    assert sorted(rel.triples()) == [
        ("X:2", "part_of", "X:1"),
        ("X:3", "adjacent_to", "X:2"),
        ("X:3", "part_of", "X:2"),
    ]
    assert rel.ids == plain.ids and np.array_equal(rel.anc_idx, plain.anc_idx)
    hier = load_ontology(path, relationships="hierarchy")
    assert hier.parents("X:3") == ["X:2"] and hier.triples() == [("X:3", "adjacent_to", "X:2")]
    assert hier.diagnostics.get("duplicate_edges") == 1  # X:2 is_a and part_of X:1: one edge
    with pytest.raises(Exception, match="relationships must be"):
        load_ontology(path, relationships="edges")


def test_obo_relationship_to_an_unknown_term_is_an_error(tmp_path):
    p = tmp_path / "bad.obo"
    p.write_text("[Term]\nid: X:1\nname: a\nrelationship: part_of X:9\n")
    with pytest.raises(OntologyError, match="'X:9'"):
        load_ontology(p, relationships="relation")


def test_table_with_a_triples_file(fixtures_dir):
    d = fixtures_dir / "ontology"
    o = load_ontology(d / "kg_catalogue.csv", triples=str(d / "kg_triples.csv"))
    assert o.graph.instance_ids == ("acme-x1", "acme-dock") and o.graph.instance_kinds == (
        "product",
        "product",
    )
    assert sorted(o.triples()) == [
        ("acme-dock", "in-category", "docks"),
        ("acme-x1", "compatible-with", "acme-dock"),
        ("acme-x1", "in-category", "laptops"),
    ]
    assert o.diagnostics["duplicate_triples"] == 1
    assert len(o) == 3 and o.summary()["instances_by_kind"] == {"product": 2}


def test_graph_database_relation_types_by_mapping():
    from kg_rageval.ontology.loaders.neo4j import _compile, resolve_mapping

    m = resolve_mapping(
        {
            "node_label": "Technique",
            "id_property": "id",
            "label_properties": ["name"],
            "relationships": ["SUB_OF"],
            "relation_types": ["USES"],
        }
    )
    assert m.triple_query() == (
        "MATCH (s)-[r:`USES`]->(o) WHERE s.`id` IS NOT NULL AND o.`id` IS NOT NULL RETURN s.`id` AS subject, "
        "labels(s)[0] AS subject_kind, type(r) AS predicate, o.`id` AS object, labels(o)[0] AS object_kind"
    )
    nodes = [{"id": "T1003", "l0": "OS Credential Dumping"}, {"id": "T1003.001", "l0": "LSASS Memory"}]
    edges = [{"child": "T1003.001", "parent": "T1003"}]
    triples = [
        {
            "subject": "G0022",
            "subject_kind": "Group",
            "predicate": "USES",
            "object": "T1003.001",
            "object_kind": "Technique",
        },
        {
            "subject": "G0022",
            "subject_kind": "Group",
            "predicate": "USES",
            "object": "S0002",
            "object_kind": "Software",
        },
    ]
    o = _compile(nodes, edges, m, "bolt://x", dangling="drop", conflicts="keep-first", triples=triples)
    assert o.graph.instance_ids == ("G0022", "S0002") and o.graph.instance_kinds == ("Group", "Software")
    assert sorted(o.triples()) == [("G0022", "USES", "S0002"), ("G0022", "USES", "T1003.001")]
    assert resolve_mapping("n10s-owl").triple_query() is None
    with pytest.raises(Exception, match="invalid relationship type"):
        resolve_mapping({"relation_types": ["USES`) DETACH DELETE n //"]})
