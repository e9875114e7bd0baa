"""Every loader option is reachable from the library, the CLI (ontology and score commands)
and the audit config, through one declaration (``kg_rageval.ontology.loaders.options``)."""

from __future__ import annotations

import json

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.cli.main import main
from kg_rageval.ontology import load_ontology
from kg_rageval.ontology.loaders.neo4j import resolve_mapping
from kg_rageval.ontology.loaders.options import LOADER_OPTIONS, ontology_option_kwargs


@pytest.fixture(scope="module")
def onto_dir(fixtures_dir):
    return fixtures_dir / "ontology"


def test_an_option_the_loader_does_not_take_names_the_ones_it_does(onto_dir):
    with pytest.raises(
        InputError,
        match=r"mini.obo: the obo loader does not take 'reasoner'; "
        r"its options: conflicts, dangling, hierarchy_relations, relationships, strict",
    ):
        load_ontology(onto_dir / "mini.obo", reasoner="hermit")
    with pytest.raises(InputError, match="the stix loader does not take 'follow_imports'"):
        load_ontology(onto_dir / "mini_attack.json", follow_imports=True)
    from kg_rageval.base.errors import ConfigError

    with pytest.raises(ConfigError, match=r"option.strict: expected true or false, got 'no'"):
        load_ontology(onto_dir / "mini.obo", strict="no")
    assert load_ontology(onto_dir / "mini_attack.json", source_names="mitre-attack").root_id == "mini-attack"
    # None means "not given"
    assert len(load_ontology(onto_dir / "mini.obo", reasoner=None, strict=None)) == 6


def test_every_declared_option_is_a_loader_keyword():
    import inspect

    from kg_rageval.ontology.loaders import available_formats

    taken = set()
    for spec in available_formats().values():
        taken |= set(inspect.signature(spec.load()).parameters)
    assert {o.name for o in LOADER_OPTIONS} <= taken


def test_ontology_option_pairs():
    assert ontology_option_kwargs(["lang=de", "matrix_root=false", 'source_names=["a", "b"]']) == {
        "lang": "de",
        "matrix_root": False,
        "source_names": ["a", "b"],
    }
    with pytest.raises(InputError, match="KEY=VALUE"):
        ontology_option_kwargs(["lang"])
    with pytest.raises(InputError, match="credentials come from the environment only"):
        ontology_option_kwargs(["password=hunter2"])


def test_cli_strict_and_source_names(onto_dir, capsys):
    rare = str(onto_dir / "do_rare_slim_shape.obo")
    assert main(["ontology", "inspect", rare, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["diagnostics"]["ambiguous_aliases"] == 1 and d["n_roots"] == 1
    assert main(["ontology", "inspect", rare, "--strict-ontology"]) == 2
    assert "1 alias(es) name two different concepts" in capsys.readouterr().err
    assert main(["ontology", "validate", rare, "--strict-ontology"]) == 2
    capsys.readouterr()
    assert main(["ontology", "inspect", rare, "--reasoner", "hermit"]) == 2
    assert "the obo loader does not take 'reasoner'" in capsys.readouterr().err
    ics = str(onto_dir / "ics_attack_deprecated.json")
    assert main(["ontology", "inspect", ics, "--source-name", "mitre-attack", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["diagnostics"]["objects_without_attack_id"] == 12
    assert main(["ontology", "inspect", ics, "--format", "json"]) == 0
    assert "objects_without_attack_id" not in json.loads(capsys.readouterr().out)["diagnostics"]
    assert (
        main(
            [
                "ontology",
                "inspect",
                str(onto_dir / "mini_attack.json"),
                "--ontology-option",
                "matrix_root=false",
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["virtual_root"] is True


def test_cli_imports_and_conflict_policy(onto_dir, capsys):
    imp = str(onto_dir / "imports_main.ttl")
    assert main(["ontology", "inspect", imp, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["diagnostics"] == {
        "owl_imports_not_followed": 1,
        "parents_declared_from_edges": 1,
    }
    assert main(["ontology", "inspect", imp, "--follow-imports", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["diagnostics"] == {"owl_imports_followed": 1} and d["labelled"] == 2
    conf = str(onto_dir / "conflicting_labels.ttl")
    assert main(["ontology", "inspect", conf]) == 2
    assert "1 duplicate id(s) with conflicting labels" in capsys.readouterr().err
    assert main(["ontology", "inspect", conf, "--conflicts", "keep-first", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["diagnostics"]["conflicting_labels"] == 1


def test_score_commands_take_loader_options(onto_dir, tmp_path, capsys):
    data = tmp_path / "r.jsonl"
    data.write_text(
        json.dumps({"id": "r1", "labels": {"gold": "DOID:1000001", "pred": "DOID:1000002"}}) + "\n"
    )
    rare = str(onto_dir / "do_rare_slim_shape.obo")
    assert main(["score", "hierarchy", "--ontology", rare, "--data", str(data), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (
        d["metrics"]["hierarchy.hierarchical_precision"]["value"] == 0.0
    )  # unrelated: the root gives nothing
    assert main(["score", "hierarchy", "--ontology", rare, "--strict-ontology", "--data", str(data)]) == 2
    assert "name two different concepts" in capsys.readouterr().err


def _audit(tmp_path, onto_dir, options, capsys):
    (tmp_path / "records.jsonl").write_text(
        json.dumps({"id": "r1", "labels": {"gold": "DOID:1000001", "pred": "DOID:1000001"}}) + "\n"
    )
    cfg = tmp_path / "audit.json"
    cfg.write_text(
        json.dumps(
            {
                "ontology": {"path": str(onto_dir / "do_rare_slim_shape.obo"), "options": options},
                "records": "records.jsonl",
                "families": {"hierarchy": {}},
                "min_rows": 1,  # one record; the minimum itself: tests/audit/test_hostile_min_rows.py
                "gates": ["hierarchy.exact_accuracy >= 1"],
                "report": {"formats": ["json"]},
            }
        )
    )
    code = main(["audit", "--config", str(cfg), "--quiet", "--format", "json"])
    return code, capsys.readouterr()


def test_audit_config_takes_the_same_options(onto_dir, tmp_path, capsys):
    code, out = _audit(tmp_path, onto_dir, {}, capsys)
    assert code == 0 and json.loads(out.out)["ontology"]["nodes"] == 6
    code, out = _audit(tmp_path, onto_dir, {"strict": True}, capsys)
    assert code == 2 and "name two different concepts" in out.err
    code, out = _audit(tmp_path, onto_dir, {"reasoner": "hermit"}, capsys)
    assert code == 2 and "the obo loader does not take 'reasoner'" in out.err
    code, out = _audit(tmp_path, onto_dir, {"strict": "yes"}, capsys)  # never truthy
    assert code == 2 and "ontology.options.strict: expected true or false, got 'yes'" in out.err
    code, out = _audit(tmp_path, onto_dir, {"conflicts": "keep_first"}, capsys)
    assert code == 2 and "ontology.options.conflicts: 'keep_first' is not one of error, keep-first" in out.err
    code, out = _audit(tmp_path, onto_dir, {"auth": {"user": "u", "password": "p"}}, capsys)
    assert code == 2 and "credentials come from the environment only" in out.err


def test_audit_refuses_credentials_in_a_uri(tmp_path, capsys):
    cfg = tmp_path / "audit.json"
    cfg.write_text(
        json.dumps(
            {"ontology": "bolt://alice:s3cret@db.example:7687", "records": "r.jsonl", "gates": ["x >= 1"]}
        )
    )
    assert main(["audit", "--config", str(cfg), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "the URI holds credentials" in err and "s3cret" not in err


def test_mapping_files(tmp_path):
    from kg_rageval.base.errors import ConfigError

    p = tmp_path / "m.yaml"
    p.write_text("preset: n10s-skos\nnode_label: Topic\n")
    m = resolve_mapping(str(p))
    assert (m.node_label, m.relationships, m.id_property) == ("Topic", ("skos__broader",), "uri")
    (tmp_path / "m.json").write_text(json.dumps({"node_label": "C", "relationships": ["broader"]}))
    assert resolve_mapping(tmp_path / "m.json").relationships == ("broader",)
    (tmp_path / "bad.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="holds a mapping of fields, not list"):
        resolve_mapping(str(tmp_path / "bad.yaml"))
    (tmp_path / "typo.yaml").write_text("node_lable: C\n")
    with pytest.raises(ConfigError, match="unknown graph mapping option.*node_lable"):
        resolve_mapping(str(tmp_path / "typo.yaml"))
    with pytest.raises(ConfigError, match="no such graph mapping file"):
        resolve_mapping(str(tmp_path / "absent.yml"))


def test_compiled_cache_keeps_strict_and_refuses_other_options(onto_dir, tmp_path):
    from kg_rageval.base.errors import OntologyError
    from kg_rageval.ontology.cache import save_compiled

    kgro = save_compiled(load_ontology(onto_dir / "do_rare_slim_shape.obo"), tmp_path / "rare")
    assert load_ontology(kgro).diagnostics["ambiguous_aliases"] == 1
    with pytest.raises(
        OntologyError, match=r"ambiguous_aliases: 1, multiple_replacements: 1\), refused in strict"
    ):
        load_ontology(kgro, strict=True)
    with pytest.raises(InputError, match="the compiled loader does not take 'dangling'; its options: strict"):
        load_ontology(kgro, dangling="drop")
    clean = save_compiled(load_ontology(onto_dir / "mini.obo"), tmp_path / "mini")
    assert len(load_ontology(clean, strict=True)) == 6
