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
    # SHACL warnings only (a deprecated class): shown, exit 0; --fail-on-warnings makes them fail
    assert main(["ontology", "validate", str(onto_dir / "deprecated_warning.ttl")]) == 0
    out = capsys.readouterr().out
    assert "0 violation(s), 1 warning(s)" in out and "Warning" in out
    assert main(["ontology", "validate", "--fail-on-warnings", str(onto_dir / "deprecated_warning.ttl")]) == 1
    capsys.readouterr()
    assert main(["ontology", "validate", "--format", "json", str(onto_dir / "deprecated_warning.ttl")]) == 0
    d = _json(capsys)
    assert d["counts"] == {"Violation": 0, "Warning": 1, "Info": 0} and d["exit_code"] == 0
    assert d["fail_on_warnings"] is False
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
    assert (
        main(
            ["ontology", "inspect", "--format", "json", "--dangling", "drop", str(onto_dir / "dangling.ttl")]
        )
        == 0
    )
    assert _json(capsys)["diagnostics"] == {"dangling_edges_dropped": 1}
    assert (
        main(
            [
                "ontology",
                "inspect",
                "--format",
                "json",
                "--follow-imports",
                str(onto_dir / "imports_main.ttl"),
            ]
        )
        == 0
    )
    assert _json(capsys)["diagnostics"] == {"owl_imports_followed": 1}


def test_compile_roundtrip(onto_dir, tmp_path, capsys):
    out = tmp_path / "mini.kgro"
    assert (
        main(["ontology", "compile", "--format", "json", "-o", str(out), str(onto_dir / "mini_attack.json")])
        == 0
    )
    compiled = _json(capsys)
    assert main(["ontology", "inspect", "--format", "json", str(out)]) == 0
    assert _json(capsys)["content_hash"] == compiled["content_hash"]


def test_formats_lists_the_loaders(capsys):
    assert main(["ontology", "formats", "--format", "json"]) == 0
    names = {f["name"] for f in _json(capsys)}
    assert {"rdf", "owl", "obo", "stix", "table"} <= names


def test_cli_error_paths_are_one_line_exit_2_and_bugs_exit_3(onto_dir, tmp_path, capsys, monkeypatch):
    # an output path in a missing folder: exit 2 with one line, no traceback
    code = main(["ontology", "compile", str(onto_dir / "animals.ttl"), "-o", str(tmp_path / "no" / "x.kgro")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "x.kgro" in err
    # a multi-line parser message is folded onto one line
    import kg_rageval.cli.ontology as cmd
    from kg_rageval.base.errors import InputError

    def multi_line(*a, **k):
        raise InputError("2 problems:\n  a: bad\n  b: worse", source="f.yaml")

    monkeypatch.setattr(cmd, "load_ontology_cli", multi_line)
    code = main(["ontology", "inspect", str(onto_dir / "animals.ttl")])
    assert code == 2 and capsys.readouterr().err == "error: f.yaml: 2 problems: a: bad; b: worse\n"

    # a bug is exit 3 ("internal error"), never 1, which means a gate failed
    def bug(*a, **k):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(cmd, "load_ontology_cli", bug)
    code = main(["ontology", "inspect", str(onto_dir / "animals.ttl")])
    err = capsys.readouterr().err
    assert (
        code == 3 and err.splitlines()[-1] == "error: internal error (please report): ZeroDivisionError: boom"
    )

    # running out of memory on an input is not a bug: one line, exit 2, the limits to lower
    def too_big(*a, **k):
        raise MemoryError

    monkeypatch.setattr(cmd, "load_ontology_cli", too_big)
    code = main(["ontology", "inspect", str(onto_dir / "animals.ttl")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: out of memory: ") and "--limit NAME=N" in err


def test_usage_errors_are_one_line_with_a_help_hint(tmp_path, capsys):
    missing = tmp_path / "nope.ttl"
    assert main(["ontology", "inspect", str(missing)]) == 2
    assert capsys.readouterr().err == f"error: {missing}: no such file\n"
    assert main(["ontology", "inspect", "--nope", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: No such option '--nope'") and err.count("\n") == 1
    assert main(["ontology"]) == 2  # a bare group shows its commands
    assert "inspect" in capsys.readouterr().err
