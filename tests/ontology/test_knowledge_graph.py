"""Instances and relation triples of the compiled ontology (kg_rageval.ontology.graph)."""

from __future__ import annotations

import collections
import gzip
import json

import numpy as np
import pytest

from kg_rageval.base.errors import OntologyError, UnknownIdError
from kg_rageval.ontology import OntologyBuilder, Property, load_ontology
from kg_rageval.ontology.cache import load_compiled, save_compiled
from kg_rageval.ontology.graph import satisfies

KG = "attack/enterprise-attack-kg-18.1.json.gz"


def small():
    b = OntologyBuilder("small")
    b.add_node("Agent", label="agent")
    b.add_node("Group", label="group")
    b.add_node("Tool", label="tool")
    b.add_node("Technique", label="technique")
    b.add_node("T1", label="t1")
    b.add_node("T1.1", label="t1.1")
    for c, p in (("Group", "Agent"), ("T1", "Technique"), ("T1.1", "T1")):
        b.add_edge(c, p)
    b.add_instance("g1", label="APT-A", kind="group", types=["Group"])
    b.add_instance("g2", label="APT-B", kind="group", types=["Group"], status="revoked", replaced_by="g1")
    b.add_instance("x1", label="hammer", kind="tool", types=["Tool"])
    b.add_property(Property("uses", domain=("Agent", "tool"), range=("Technique", "tool")))
    b.add_triple("g1", "uses", "T1.1")
    b.add_triple("g1", "uses", "x1")
    b.add_triple("x1", "uses", "T1")
    b.add_triple("T1", "uses", "g2")  # violates both domain and range
    b.add_triple("g1", "uses", "T1.1")  # a repeat
    return b


def test_small_graph_arrays_lookups_and_subsumption():
    o = small().build()
    g = o.graph
    assert (len(o), g.n_instances, g.n_triples) == (7, 3, 4)  # 3 roots: a virtual root
    assert o.diagnostics["duplicate_triples"] == 1
    assert o.entity_index("g1") == 7 and o.entity_index("T1") == o.index("T1")
    with pytest.raises(UnknownIdError):
        o.index("g1")  # instances are not hierarchy nodes
    assert sorted(o.triples(subject="g1")) == [("g1", "uses", "T1.1"), ("g1", "uses", "x1")]
    assert o.triples(object="T1") == [("x1", "uses", "T1")]
    assert len(o.triples(predicate="uses")) == 4 and o.triples(predicate="nope") == []
    assert o.has_triple("g1", "uses", "x1") and not o.has_triple("x1", "uses", "g1")
    ents = o.entity_indices(["g1", "x1", "T1", "g2", "T1.1", "nope"])
    # domain (Agent class or tool kind): g1 is a Group ⊑ Agent; x1 of kind tool; T1 neither
    assert satisfies(o, ents, ("Agent", "tool")).tolist() == [True, True, False, True, False, False]
    # range: Technique ⊒ T1, T1.1 (subsumption of hierarchy nodes), tool kind
    assert satisfies(o, ents, ("Technique", "tool")).tolist() == [False, True, True, False, True, False]
    assert o.entity_status.tolist()[-3:] == [0, 2, 0]
    assert o.graph.instance_replaced_by.tolist() == [-1, 7, -1]
    s = o.summary()
    assert s["instances_by_kind"] == {"group": 2, "tool": 1} and s["relations_by_predicate"] == {"uses": 4}
    assert (s["nodes"], s["edges"]) == (6, 3)


def test_instances_leave_hierarchy_and_hash_of_taxonomy_unchanged():
    b = small()
    with_graph = b.build()
    b2 = OntologyBuilder("small")
    for nid in with_graph.ids:
        b2.add_node(nid, label=with_graph.label(nid))
    for c, p in with_graph.edges():
        b2.add_edge(c, p)
    plain = b2.build()
    assert plain.ids == with_graph.ids and np.array_equal(plain.anc_idx, with_graph.anc_idx)
    assert plain.content_hash != with_graph.content_hash  # the graph is content
    # the taxonomy's hash is the pre-graph formula: nodes and edges only
    import hashlib

    order = sorted(plain.ids)
    text = "".join(f"N\x1f{i}\x1f{plain.label(i) or ''}\x1f0\x1f\n" for i in order)
    text += "".join(f"E\x1f{c}\x1f{p}\n" for c, p in sorted(plain.edges()))
    assert plain.content_hash == "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_dangling_triples_error_or_drop_and_unknown_types():
    b = small()
    b.add_triple("g1", "uses", "ghost")
    b.add_instance("g3", types=["NoSuchClass"])
    with pytest.raises(OntologyError, match="'ghost' in \\(g1, uses, ghost\\)"):
        b.build()
    o = b.build(dangling="drop")
    assert o.diagnostics["dangling_triples_dropped"] == 1
    assert o.diagnostics["instance_types_unknown"] == 1 and o.graph.n_triples == 4


def test_cache_round_trip(tmp_path):
    o = small().build()
    back = load_compiled(save_compiled(o, tmp_path / "s.kgro"))
    for name in ("instance_status", "instance_replaced_by", "type_ptr", "type_idx", "s", "p", "o"):
        assert np.array_equal(getattr(back.graph, name), getattr(o.graph, name)), name
    assert back.graph.instance_ids == o.graph.instance_ids
    assert back.graph.instance_kinds == o.graph.instance_kinds
    assert back.graph.predicates == o.graph.predicates
    assert back.properties == o.properties
    back_hash = back.content_hash
    object.__setattr__(back, "stored_hash", None)
    back.__dict__.pop("content_hash", None)
    assert back.content_hash == back_hash == o.content_hash


# ---------------------------------------------------------------------- ATT&CK 18.1
@pytest.fixture(scope="module")
def attack(shared_data):
    path = shared_data / KG
    if not path.exists():
        pytest.skip(f"{path} is absent")
    raw = json.loads(gzip.decompress(path.read_bytes()))
    return load_ontology(path), raw["objects"]


@pytest.mark.slow
@pytest.mark.shared_data
def test_attack_counts_equal_an_independent_count(attack):
    o, objects = attack
    by_type = collections.Counter(x["type"] for x in objects)
    assert by_type["attack-pattern"] == 835 and by_type["relationship"] == 20048
    kinds = o.graph.counts_by_kind()
    for t in (
        "intrusion-set",
        "malware",
        "tool",
        "course-of-action",
        "campaign",
        "x-mitre-data-source",
        "x-mitre-data-component",
    ):
        assert kinds[t] == by_type[t], t
    assert (kinds["intrusion-set"], kinds["malware"], kinds["tool"], kinds["course-of-action"]) == (
        187,
        696,
        91,
        268,
    )
    assert (kinds["campaign"], kinds["x-mitre-data-source"], kinds["x-mitre-data-component"]) == (52, 38, 109)
    types = collections.Counter(o.node_types)
    assert types["tactic"] == 14 and types["technique"] + types["sub-technique"] == 835
    rel = collections.Counter(x["relationship_type"] for x in objects if x["type"] == "relationship")
    assert o.graph.counts_by_predicate() == dict(rel)
    assert dict(rel) == {
        "uses": 17270,
        "mitigates": 1445,
        "detects": 691,
        "subtechnique-of": 477,
        "revoked-by": 140,
        "attributed-to": 25,
    }
    # detection strategies are not in the bundle: declared from the relationship ends
    assert kinds["x-mitre-detection-strategy"] == 691 == o.diagnostics["instances_declared_from_refs"]


@pytest.mark.shared_data
def test_attack_triples_equal_the_json_and_status_flags(attack):
    o, objects = attack
    aid = {}
    for x in objects:
        for ref in x.get("external_references") or ():
            if ref.get("source_name") == "mitre-attack" and ref.get("external_id"):
                aid[x["id"]] = ref["external_id"]
                break
    # objects whose id a technique already holds keep their STIX id (loader convention)
    techniques = {
        aid[x["id"]] for x in objects if x["type"] in ("attack-pattern", "x-mitre-tactic", "x-mitre-matrix")
    }
    for x in objects:
        if (
            x["type"] not in ("attack-pattern", "x-mitre-tactic", "x-mitre-matrix", "relationship")
            and aid.get(x["id"]) in techniques
        ):
            aid[x["id"]] = x["id"]
    want = {
        (
            aid.get(x["source_ref"], x["source_ref"]),
            x["relationship_type"],
            aid.get(x["target_ref"], x["target_ref"]),
        )
        for x in objects
        if x["type"] == "relationship"
    }
    got = set(o.triples())
    assert got == want and len(got) == 20048
    assert ("G0022", "uses", "T1003.001") in got and o.has_triple("G0022", "uses", "T1003.001")
    revoked = collections.Counter(
        x["type"] for x in objects if x.get("revoked") and x["type"] != "attack-pattern"
    )
    g = o.graph
    got_revoked = collections.Counter(
        k for k, st in zip(g.instance_kinds, g.instance_status.tolist()) if st == 2
    )
    assert got_revoked == revoked == {"intrusion-set": 6, "malware": 2}
    deprecated = collections.Counter(
        x["type"]
        for x in objects
        if x.get("x_mitre_deprecated") and not x.get("revoked") and x["type"] not in ("attack-pattern",)
    )
    got_dep = collections.Counter(k for k, st in zip(g.instance_kinds, g.instance_status.tolist()) if st == 1)
    assert got_dep == deprecated
    # a revoked group's replacement is its revoked-by target
    k = next(
        i
        for i, st in enumerate(g.instance_status.tolist())
        if st == 2 and g.instance_kinds[i] == "intrusion-set"
    )
    rep = o.entity_id(int(g.instance_replaced_by[k]))
    assert (g.instance_ids[k], "revoked-by", rep) in got


@pytest.mark.shared_data
def test_attack_every_uses_triple_checks_domain_and_range(attack):
    o, objects = attack
    g = o.graph
    for pred in ("uses", "mitigates", "detects", "subtechnique-of", "attributed-to"):
        prop = o.property(pred)
        pos = g.positions(predicate=g.predicate_index(pred))
        assert pos.size
        assert satisfies(o, g.s[pos], prop.domain).all(), pred
        assert satisfies(o, g.o[pos], prop.range).all(), pred
    # and the check can fail: techniques and mitigations are no subject of `uses`
    pos = g.positions(predicate=g.predicate_index("mitigates"))
    assert not satisfies(o, g.o[pos], o.property("uses").domain).any()
    assert not satisfies(o, g.s[pos], o.property("uses").domain).any()


@pytest.mark.slow
@pytest.mark.shared_data
def test_attack_graph_round_trips_through_the_cache(attack, tmp_path, shared_data):
    # The load time target (< 2 s) is a benchmark figure in docs/performance.md, not a timed test.
    SHARED_DATA = shared_data
    o = load_ontology(SHARED_DATA / KG)
    back = load_compiled(save_compiled(o, tmp_path / "kg.kgro"))
    assert set(back.triples()) == set(o.triples()) and back.graph.counts_by_kind() == o.graph.counts_by_kind()
    plain = load_ontology(SHARED_DATA / KG, instances=False)
    assert not plain.graph and plain.ids == o.ids


def test_a_tampered_graph_in_a_cache_is_refused(tmp_path):
    from kg_rageval.base.errors import InputError

    o = small().build()
    path = save_compiled(o, tmp_path / "s.kgro")
    z = dict(np.load(path, allow_pickle=False))
    z["kg_o"] = z["kg_o"].copy()
    z["kg_o"][0] = (z["kg_o"][0] + 1) % (len(o) + o.graph.n_instances)  # another triple object
    for name, drop_mac in (("keyed.kgro", False), ("foreign.kgro", True)):
        arrays = dict(z)
        if drop_mac:  # a cache from elsewhere: no digest, verified in full (content hash)
            import json

            head = json.loads(arrays["header"].tobytes().decode())
            head.pop("mac", None), head.pop("mac_key", None)
            arrays["header"] = np.frombuffer(json.dumps(head).encode(), dtype=np.uint8)
        with open(tmp_path / name, "wb") as fh:
            np.savez(fh, **arrays)
        with pytest.raises(InputError):
            load_compiled(tmp_path / name)
