"""SHACL validation of compiled ontologies (any source format)."""

from __future__ import annotations

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.ontology import OntologyBuilder, load_ontology
from kg_rageval.ontology.validate import (
    ID_NS,
    bundled_shapes,
    ontology_to_graph,
    self_loops,
    validate_ontology,
)


@pytest.fixture(scope="module")
def onto_dir(fixtures_dir):
    return fixtures_dir / "ontology"


def _triples(report):
    return sorted((r.severity, r.focus, r.path, r.value) for r in report.results)


def test_invalid_fixture_fails(onto_dir):
    report = validate_ontology(load_ontology(onto_dir / "invalid_shapes.ttl"))
    assert _triples(report) == [
        ("Violation", "ex:Loop", "rdfs:subClassOf", "ex:Loop"),
        ("Violation", "ex:Old", "rdfs:subClassOf", "ex:Young"),
        ("Violation", "ex:Unlabelled", "rdfs:label", None),
        ("Warning", "ex:Old", "owl:deprecated", "true"),
    ]
    assert report.counts() == {"Violation": 3, "Warning": 1, "Info": 0}
    assert not report.passes() and not report.passes(allow_warnings=True)
    d = report.to_dict()
    assert d["conforms"] is False and len(d["results"]) == 4
    assert d["results"][0]["severity"] == "Violation"  # sorted: violations first
    text = report.to_text()
    assert "does not conform (3 violation(s), 1 warning(s)" in text
    assert "ex:Loop [rdfs:subClassOf]: the class is declared a subclass of itself" in text


def test_clean_fixture_passes(onto_dir):
    report = validate_ontology(load_ontology(onto_dir / "clean.ttl"))
    assert report.results == [] and report.passes()
    assert report.to_dict()["conforms"] is True and report.nodes == 4


def test_warnings_only(onto_dir):
    report = validate_ontology(load_ontology(onto_dir / "deprecated_warning.ttl"))
    assert _triples(report) == [("Warning", "ex:Old", "owl:deprecated", "true")]
    assert not report.passes() and report.passes(allow_warnings=True)
    # worded as the exit code decides: exit 0 reads "conforms, with 1 warning(s)", not "does not conform"
    assert report.to_text().startswith(
        f"{report.source}: conforms, with 1 warning(s) (0 violation(s), 1 warning(s)"
    )
    assert report.verdict(fail_on_warnings=True) == "fails on 1 warning(s) (--fail-on-warnings)"


def test_validate_cli_verdict_matches_its_exit_code(onto_dir, capsys):
    from kg_rageval.cli.main import main

    path = str(onto_dir / "deprecated_warning.ttl")
    assert main(["ontology", "validate", path]) == 0
    assert ": conforms, with 1 warning(s) (" in capsys.readouterr().out
    assert main(["ontology", "validate", path, "--fail-on-warnings"]) == 1
    assert ": fails on 1 warning(s) (--fail-on-warnings) (" in capsys.readouterr().out
    assert main(["ontology", "validate", str(onto_dir / "invalid_shapes.ttl"), "--format", "json"]) == 1
    import json

    assert json.loads(capsys.readouterr().out)["verdict"] == "does not conform"


def test_non_rdf_sources_are_rendered(onto_dir):
    """STIX ids (no prefix) and OBO CURIEs validate through the same shapes."""
    stix = validate_ontology(load_ontology(onto_dir / "mini_attack.json"))
    assert _triples(stix) == [
        ("Warning", "T1055.099", "owl:deprecated", "true"),
        ("Warning", "T1098", "owl:deprecated", "true"),
        ("Warning", "T1099", "owl:deprecated", "true"),
    ]
    g, back = ontology_to_graph(load_ontology(onto_dir / "mini_attack.json"))
    assert back[ID_NS + "T1003.001"] == "T1003.001"
    obo = validate_ontology(load_ontology(onto_dir / "mini.obo"))
    assert {r.focus for r in obo.results} == {"EX:0005", "EX:0006"}


def test_builder_ontology_without_labels():
    b = OntologyBuilder("mem")
    b.add_node("a", label="A")
    b.add_node("b")
    b.add_edge("b", "a")
    b.add_edge("a", "a")  # dropped by compiling, rendered back for the shapes
    o = b.build()
    assert self_loops(o) == ["a"]
    assert _triples(validate_ontology(o)) == [
        ("Violation", "a", "rdfs:subClassOf", "a"),
        ("Violation", "b", "rdfs:label", None),
    ]


def test_replacement_chain_warning():
    b = OntologyBuilder("mem")
    for i, status, rep in [
        ("r", "active", None),
        ("x", "revoked", "y"),
        ("y", "deprecated", "z"),
        ("z", "active", None),
    ]:
        b.add_node(i, label=i.upper(), status=status, replaced_by=rep)
    for i in "xyz":
        b.add_edge(i, "r")
    report = validate_ontology(b.build())
    assert ("Warning", "x", "dcterms:isReplacedBy", "y") in _triples(report)
    assert report.counts() == {"Violation": 0, "Warning": 3, "Info": 0}


def test_shapes_location_and_custom_shapes(onto_dir, tmp_path):
    assert bundled_shapes().name == "ontology.ttl" and bundled_shapes().parent.name == "shapes"
    custom = tmp_path / "custom.ttl"
    custom.write_text(
        "@prefix sh: <http://www.w3.org/ns/shacl#> .\n@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
        "@prefix skos: <http://www.w3.org/2004/02/skos/core#> .\n"
        "<urn:s> a sh:NodeShape ; sh:targetClass owl:Class ; sh:property [ sh:path skos:definition ;"
        ' sh:minCount 1 ; sh:severity sh:Info ; sh:message "no definition" ] .\n'
    )
    report = validate_ontology(load_ontology(onto_dir / "clean.ttl"), shapes=custom)
    assert report.counts() == {"Violation": 0, "Warning": 0, "Info": 3}  # Root, A, AB
    assert report.passes()  # Info never fails
    with pytest.raises(InputError, match="no such shapes file"):
        validate_ontology(load_ontology(onto_dir / "clean.ttl"), shapes=tmp_path / "nope.ttl")


def test_missing_bundled_shapes_is_a_clear_error(monkeypatch):
    import kg_rageval.ontology.validate as v

    monkeypatch.setattr(v, "SHAPES_FILE", "absent.ttl")
    with pytest.raises(InputError, match="bundled SHACL shapes are missing.*pass shapes=PATH"):
        v.bundled_shapes()


@pytest.mark.shared_data
def test_real_ontologies(shared_data):
    hcrt = validate_ontology(load_ontology(shared_data / "skos" / "hcrt.ttl"))
    assert hcrt.results == []
    doid = validate_ontology(load_ontology(shared_data / "doid" / "DO_cancer_slim.obo"))
    assert _triples(doid) == [("Warning", "DOID:0080191", "owl:deprecated", "true")]


def test_one_shapes_loader_for_ontology_and_output_validation(onto_dir):
    from kg_rageval.families.conformance import shacl
    from kg_rageval.ontology import validate as v

    assert shacl.load_shapes is v.load_shapes  # one reader, one set of errors
    bad = onto_dir / "bad_syntax.ttl"
    with pytest.raises(InputError, match=r"bad_syntax\.ttl: cannot parse the SHACL shapes: .*line 6"):
        v.load_shapes(bad)
    with pytest.raises(InputError, match="cannot parse the SHACL shapes"):
        validate_ontology(load_ontology(onto_dir / "clean.ttl"), shapes=bad)
