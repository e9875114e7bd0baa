"""``kg-rageval ontology inspect|validate|compile|formats`` with the loaders of every format."""

from __future__ import annotations

import json

import pytest

from kg_rageval.cli.main import main


@pytest.fixture(scope="module")
def onto_dir(fixtures_dir):
    return fixtures_dir / "ontology"


def _json(capsys):
    return json.loads(capsys.readouterr().out)


def test_validate_exit_codes(onto_dir, capsys):
    assert main(["ontology", "validate", str(onto_dir / "invalid_shapes.ttl")]) == 1
    out = capsys.readouterr().out
    assert "3 violation(s)" in out and "ex:Unlabelled [rdfs:label]" in out
    assert main(["ontology", "validate", str(onto_dir / "clean.ttl")]) == 0
    assert "conforms" in capsys.readouterr().out
    assert main(["ontology", "validate", str(onto_dir / "deprecated_warning.ttl")]) == 1
    capsys.readouterr()
    assert main(["ontology", "validate", "--allow-warnings", str(onto_dir / "deprecated_warning.ttl")]) == 0
    capsys.readouterr()


def test_validate_json(onto_dir, capsys):
    assert main(["ontology", "validate", "--format", "json", str(onto_dir / "invalid_shapes.ttl")]) == 1
    d = _json(capsys)
    assert d["counts"] == {"Violation": 3, "Warning": 1, "Info": 0}
    assert {(r["severity"], r["focus"]) for r in d["results"]} == {
        ("Violation", "ex:Loop"),
        ("Violation", "ex:Old"),
        ("Violation", "ex:Unlabelled"),
        ("Warning", "ex:Old"),
    }


@pytest.mark.parametrize(
    "name,nodes,edges",
    [("animals.rdf", 12, 8), ("skos.ttl", 5, 4), ("mini.obo", 6, 4), ("mini_attack.json", 10, 10)],
)
def test_inspect_json_every_format(onto_dir, capsys, name, nodes, edges):
    assert main(["ontology", "inspect", "--format", "json", str(onto_dir / name)]) == 0
    d = _json(capsys)
    assert (d["nodes"], d["edges"]) == (nodes, edges)


def test_bad_input_exit_2(onto_dir, capsys):
    assert main(["ontology", "inspect", str(onto_dir / "xxe.rdf")]) == 2
    assert "external entity &secret;" in capsys.readouterr().err
    assert main(["ontology", "inspect", str(onto_dir / "cycle.obo")]) == 2
    assert "EX:1 -> EX:2 -> EX:3 -> EX:1" in capsys.readouterr().err
    assert main(["ontology", "inspect", str(onto_dir / "bad_syntax.ttl")]) == 2
    assert "line 6, column 16" in capsys.readouterr().err


def test_inspect_options_reach_the_loader(onto_dir, capsys):
    assert main(["ontology", "inspect", "--format", "json", "--dangling", "drop", str(onto_dir / "dangling.ttl")]) == 0
    assert _json(capsys)["diagnostics"] == {"dangling_edges_dropped": 1}
    assert main(["ontology", "inspect", "--format", "json", "--follow-imports", str(onto_dir / "imports_main.ttl")]) == 0
    assert _json(capsys)["diagnostics"] == {"owl_imports_followed": 1}


def test_compile_roundtrip(onto_dir, tmp_path, capsys):
    out = tmp_path / "mini.kgro"
    assert main(["ontology", "compile", "--format", "json", "-o", str(out), str(onto_dir / "mini_attack.json")]) == 0
    compiled = _json(capsys)
    assert main(["ontology", "inspect", "--format", "json", str(out)]) == 0
    assert _json(capsys)["content_hash"] == compiled["content_hash"]


def test_formats_lists_the_loaders(capsys):
    assert main(["ontology", "formats", "--format", "json"]) == 0
    names = {f["name"] for f in _json(capsys)}
    assert {"rdf", "owl", "obo", "stix", "table"} <= names
