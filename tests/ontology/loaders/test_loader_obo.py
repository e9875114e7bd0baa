"""OBO 1.4 parser: tags, escapes, errors with line numbers, agreement with the OWL release."""

from __future__ import annotations

import pytest

from kg_rageval.base.errors import HierarchyCycleError, InputError, OntologyError
from kg_rageval.ontology import VIRTUAL_ROOT_ID, load_ontology
from kg_rageval.ontology.loaders.obo import load_obo


@pytest.fixture(scope="module")
def onto_dir(fixtures_dir):
    return fixtures_dir / "ontology"


@pytest.fixture(scope="module")
def mini(onto_dir):
    return load_ontology(onto_dir / "mini.obo")


def test_terms_edges_and_text(mini):
    o = mini
    # the obsolete parentless EX:0005 and EX:0006 are not roots: no virtual root
    assert sorted(o.ids) == [f"EX:000{i}" for i in range(1, 7)] and VIRTUAL_ROOT_ID not in o
    assert o.root_id == "EX:0001" and o.placed_under_root == ("EX:0005", "EX:0006")
    assert o.parents("EX:0005") == ["EX:0001"] and o.depth("EX:0002") == 1
    assert o.parents("EX:0004") == ["EX:0002", "EX:0003"]  # `! plant` comment stripped
    assert o.parents("EX:0003") == ["EX:0001"]  # {qualifier} stripped; relationship: not an edge
    assert o.label("EX:0002") == "animal"
    assert o.synonyms[o.index("EX:0002")] == ("beast", "creature", "fauna member")
    assert o.definitions[o.index("EX:0001")] == 'A living thing, with an escaped "quote" and a colon: here.'
    assert o.node_types[o.index("EX:0001")] == "mini_namespace"
    assert o.prefixes == {"EX": "http://example.org/ex/"}  # from idspace


def test_obsolete_replaced_by_and_consider(mini):
    assert mini.status_of("EX:0005") == "deprecated" and mini.replacement("EX:0005") == "EX:0002"
    assert mini.status_of("EX:0006") == "deprecated" and mini.replacement("EX:0006") is None
    assert "consider EX:0002, EX:0003" in mini.warnings[0]
    assert mini.diagnostics == {
        "obsolete_with_consider_only": 1,
        "alt_ids": 1,
        "relationship_lines_ignored": 1,
        "instances_skipped": 1,
        "obsolete_terms_placed_under_root": 2,
    }


def test_typedef_becomes_property(mini):
    (p,) = mini.properties
    assert (p.id, p.label, p.domain, p.range) == ("part_of", "part of", ("EX:0001",), ("EX:0001",))


@pytest.mark.parametrize(
    "name,message",
    [
        (
            "bad_synonym.obo",
            r"line 10: synonym: expected a scope \(EXACT, BROAD, NARROW, RELATED\).*'SOMETIMES'",
        ),
        ("unterminated.obo", r"line 6: def: unterminated quoted string"),
        ("no_id.obo", r"line 7: \[Term\] stanza has no 'id:' line"),
        ("no_colon.obo", r"line 5: expected 'tag: value', found 'this line has no colon'"),
    ],
)
def test_malformed_files_name_the_line(onto_dir, name, message):
    with pytest.raises(InputError, match=message) as err:
        load_ontology(onto_dir / name)
    assert str(err.value).startswith(str(onto_dir / name))


def test_bad_values(tmp_path):
    f = tmp_path / "x.obo"
    f.write_text("[Term]\nid: EX:1\nis_obsolete: maybe\n")
    with pytest.raises(InputError, match="line 3: is_obsolete: expected true or false"):
        load_obo(f)
    f.write_text("[Term]\nid: EX:1\n\n[Frame]\nid: EX:2\n")
    with pytest.raises(InputError, match=r"line 4: unknown stanza \[Frame\]"):
        load_obo(f)
    f.write_text("[Term]\nid: EX:1 EX:2\n")
    with pytest.raises(InputError, match="line 2: id: expected one identifier"):
        load_obo(f)


def test_continuation_and_escapes(tmp_path):
    f = tmp_path / "x.obo"
    f.write_text('[Term]\nid: EX:1\nname: a long \\\nname\ndef: "tab\\there\\nnewline" []\n')
    o = load_obo(f)
    assert o.label("EX:1") == "a long name"
    assert o.definitions[0] == "tab\there\nnewline"


def test_dangling_duplicate_cycle_empty(onto_dir):
    with pytest.raises(OntologyError, match=r"'EX:404' \(line 11\)"):
        load_ontology(onto_dir / "dangling.obo")
    o = load_ontology(onto_dir / "dangling.obo", dangling="drop")
    assert o.parents("EX:2") == ["EX:1"] and o.diagnostics == {"dangling_edges_dropped": 1}
    with pytest.raises(
        OntologyError, match=r"'EX:1' has label 'heart' \(line 3\) and 'cardiac organ' \(line 7\)"
    ):
        load_ontology(onto_dir / "duplicate.obo")
    o = load_ontology(onto_dir / "duplicate.obo", conflicts="keep-first")
    assert o.label("EX:1") == "heart" and o.diagnostics["conflicting_labels"] == 1
    with pytest.raises(HierarchyCycleError, match="EX:1 -> EX:2 -> EX:3 -> EX:1"):
        load_ontology(onto_dir / "cycle.obo")
    with pytest.raises(OntologyError, match="empty"):
        load_ontology(onto_dir / "empty.obo")


@pytest.mark.shared_data
def test_doid_obo_agrees_with_owl(shared_data):
    """The OBO and OWL files of one DO release compile to the same ontology (same hash)."""
    obo = load_ontology(shared_data / "doid" / "DO_cancer_slim.obo")
    owl = load_ontology(shared_data / "doid" / "DO_cancer_slim.owl")
    so = obo.summary()
    assert (so["nodes"], so["edges"], so["n_roots"], so["deprecated"]) == (730, 657, 75, 1)
    assert set(obo.edges()) == set(owl.edges())
    assert obo.labels == owl.labels and obo.definitions == owl.definitions
    assert [set(s) for s in obo.synonyms] == [set(s) for s in owl.synonyms]
    assert obo.prefixes == owl.prefixes == {"DOID": "http://purl.obolibrary.org/obo/DOID_"}
    assert obo.content_hash == owl.content_hash
    assert obo.replacement("DOID:0080191") is None  # DOID:0050657 is outside the slim
    assert obo.diagnostics == {
        "alt_ids": 209,
        "unknown_replacements": 1,
        "obsolete_terms_placed_under_root": 1,
    }
    assert obo.placed_under_root == owl.placed_under_root == ("DOID:0080191",)  # not a root
