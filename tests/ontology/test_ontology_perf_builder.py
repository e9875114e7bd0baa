"""The performance rewrite of builder/model/cache keeps behaviour: bulk adds, content hash,
cache round trip of every column."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from kg_rageval.base.errors import OntologyError
from kg_rageval.ontology import OntologyBuilder, load_ontology
from kg_rageval.ontology.cache import save_compiled


def _reference_hash(o) -> str:
    """The content hash as first defined: one update per sorted node, then per sorted edge."""
    h = hashlib.sha256()
    for i in sorted(range(len(o.ids)), key=o.ids.__getitem__):
        rep = int(o.replaced_by[i])
        h.update(
            f"N\x1f{o.ids[i]}\x1f{o.labels[i] or ''}\x1f{int(o.status[i])}"
            f"\x1f{o.ids[rep] if rep >= 0 else ''}\n".encode()
        )
    for c, p in sorted(o.edges()):
        h.update(f"E\x1f{c}\x1f{p}\n".encode())
    return "sha256:" + h.hexdigest()


def _rich() -> OntologyBuilder:
    b = OntologyBuilder("rich")
    b.add_node("b:10", label="Ten", synonyms=["X", "Ten", "X"], definition="ten")
    b.add_node("é", label="Accent", status="deprecated", replaced_by="b:1")
    b.add_node("b:1", node_type="technique", synonyms=["one"])
    b.add_node("b:2", status="revoked", replaced_by="ghost")
    b.add_node("Z")
    for c, p in [("b:10", "b:1"), ("b:1", "é"), ("b:1", "Z"), ("b:2", "Z"), ("b:2", "Z")]:
        b.add_edge(c, p)
    return b


def test_content_hash_matches_reference_definition(vehicles):
    o = _rich().build()
    assert o.content_hash == _reference_hash(o)
    assert vehicles.content_hash == _reference_hash(vehicles)
    assert o.diagnostics == {"duplicate_edges": 1, "unknown_replacements": 1}
    assert o.virtual_root and o.replacement("é") == "b:1" and o.replacement("b:2") is None


def test_bulk_adds_equal_single_adds():
    single = OntologyBuilder("t")
    for nid, lab in [("a", "A"), ("b", None), ("c", "C"), ("a", "A")]:
        single.add_node(nid, label=lab)
    single.add_edge("b", "a")
    single.add_edge("c", "b")
    bulk = OntologyBuilder("t")
    bulk.add_nodes(["a", "b", "c", "a"], ["A", None, "C", "A"])
    bulk.add_edges(["b", "c"], ["a", "b"])
    o1, o2 = single.build(), bulk.build()
    assert o1.ids == o2.ids == ("a", "b", "c")
    assert o1.labels == o2.labels == ("A", None, "C")
    assert np.array_equal(o1.anc_idx, o2.anc_idx) and o1.content_hash == o2.content_hash
    assert bulk.n_nodes == 3 and bulk.n_edges == 2


def test_bulk_add_conflict_and_length_errors():
    b = OntologyBuilder("t")
    b.add_nodes(["a", "a"], ["A", "B"], where=["line 1", "line 2"])
    with pytest.raises(OntologyError, match=r"'a' has label 'A' \(line 1\) and 'B' \(line 2\)"):
        b.build()
    with pytest.raises(ValueError, match="labels has 1 entries"):
        b.add_nodes(["x", "y"], ["X"])
    with pytest.raises(ValueError, match="2 children but 1 parents"):
        b.add_edges(["x", "y"], ["a"])
    with pytest.raises(OntologyError, match="invalid node id"):
        b.add_nodes(["ok", ""])


def test_synonym_merge_rules():
    b = OntologyBuilder()
    b.add_node("a", synonyms=["s", "", "s"])
    b.add_node("a", label="L", synonyms=["L", "t"])  # the label itself is not a synonym
    o = b.build()
    assert o.synonyms == (("s", "t"),) and o.labels == ("L",)


def test_cache_round_trip_every_column(tmp_path):
    o = _rich().build()
    again = load_ontology(save_compiled(o, tmp_path / "rich"))
    for name in (
        "ids",
        "labels",
        "synonyms",
        "definitions",
        "node_types",
        "virtual_root",
        "diagnostics",
        "warnings",
    ):
        assert getattr(again, name) == getattr(o, name), name
    for name in (
        "parent_ptr",
        "parent_idx",
        "anc_ptr",
        "anc_idx",
        "depth_min",
        "depth_max",
        "status",
        "replaced_by",
    ):
        assert np.array_equal(getattr(again, name), getattr(o, name)), name
    assert again.synonyms[again.index("b:10")] == ("X",)
    assert again.definitions[again.index("b:10")] == "ten"
    assert again.content_hash == _reference_hash(o)
