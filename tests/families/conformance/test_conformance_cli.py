"""Conformance: SHACL validation of rendered outputs, the CLI, and the real ATT&CK bundle."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conformance_helpers import build_attack_like

from kg_rageval.families.conformance import derive_schema, load_spec, parse_spec, score_conformance
from kg_rageval.records import read_records

ROOT = Path(__file__).resolve().parents[3]
FIX = ROOT / "fixtures" / "conformance"
SHAPES = ROOT / "shapes" / "output-attack.ttl"


@pytest.fixture(scope="module")
def attack():
    return build_attack_like()


# ---------------------------------------------------------------------- SHACL
def test_shacl_shapes_on_fixture_records(attack):
    from kg_rageval.families.conformance.shacl import score_shacl

    ev = score_shacl(attack, read_records(FIX / "records.jsonl"), SHAPES, load_spec(FIX / "attack_spec.yaml"))
    rows = {r["record_id"]: r for r in ev.rows()}
    # r1 conforms; r2 is not JSON; r3 revoked technique + label as tactic; r4 conforms (SHACL
    # checks no domain/range here); r5 lacks the technique and has an extra field
    assert {k: r["conforming"] for k, r in rows.items()} == {"r1": 1, "r2": 0, "r3": 0, "r4": 1, "r5": 0}
    assert rows["r2"]["unrenderable"] == 1
    assert ev.unscored_counts == {"missing output": 1}
    assert ev.metrics()["shacl_conformance"].numerator == 2
    comps = {(r["path"], r["constraint"]) for r in rows["r5"]["results"]}
    assert comps == {
        ("kgro:technique", "sh:MinCountConstraintComponent"),
        ("kgro:rationale", "sh:ClosedConstraintComponent"),
    }
    r3 = {(r["path"], r["value"]) for r in rows["r3"]["results"]}
    assert r3 == {
        ("kgro:technique", "<urn:kg-rageval:node:T1086>"),
        ("kgro:tactic", "<urn:kg-rageval:node:Credential%20Access>"),
    }


def test_shacl_render(attack):
    from rdflib import URIRef
    from rdflib.namespace import RDFS

    from kg_rageval.families.conformance.shacl import KGRO, render_outputs

    spec = load_spec(FIX / "attack_spec.yaml")
    g = render_outputs(
        attack, [("q 1", {"technique": "T1003.001", "tactic": "TA0006", "confidence": 0.5})], spec
    )
    out = URIRef("urn:kg-rageval:record:q%201")
    tech = URIRef("urn:kg-rageval:node:T1003.001")
    assert (out, URIRef(KGRO + "technique"), tech) in g
    # the ancestor subgraph is described, the virtual root is not
    assert (tech, RDFS.subClassOf, URIRef("urn:kg-rageval:node:T1003")) in g
    assert (
        URIRef("urn:kg-rageval:node:T1003"),
        RDFS.subClassOf,
        URIRef("urn:kg-rageval:node:attack-pattern"),
    ) in g
    assert not list(g.triples((URIRef("urn:kg-rageval:node:attack-pattern"), RDFS.subClassOf, None)))
    assert float(g.value(out, URIRef(KGRO + "confidence"))) == 0.5


# ---------------------------------------------------------------------- CLI
@pytest.fixture()
def kgro(tmp_path, attack):
    from kg_rageval.ontology.cache import save_compiled

    return str(save_compiled(attack, tmp_path / "attack_like.kgro"))


def test_cli_json(kgro, tmp_path, capsys):
    from kg_rageval.cli.main import main

    out_schema = tmp_path / "schema.json"
    rc = main(
        [
            "score",
            "conformance",
            "--ontology",
            kgro,
            "--schema-spec",
            str(FIX / "attack_spec.yaml"),
            "--data",
            str(FIX / "records.jsonl"),
            "--format",
            "json",
            "--export-schema",
            str(out_schema),
            "--shapes",
            str(SHAPES),
        ]
    )
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    m = payload["metrics"]
    assert (
        m["conformance.schema_validity"]["numerator"] == 2
        and m["conformance.schema_validity"]["denominator"] == 5
    )
    assert m["conformance.triple_precision"]["value"] == 0.5
    assert payload["breakdowns"]["slice:intent"]["relations"]["n"] == 2
    assert payload["shacl"]["metrics"]["shacl_conformance"]["numerator"] == 2
    assert payload["schema"]["vocabularies"]["technique"] == {"size": 8, "mode": "enum"}
    exported = json.loads(out_schema.read_text())
    from kg_rageval.ontology.cache import load_compiled

    assert exported == derive_schema(load_compiled(kgro), load_spec(FIX / "attack_spec.yaml")).json_schema
    rc = main(
        [
            "score",
            "conformance",
            "--ontology",
            kgro,
            "--schema-spec",
            str(FIX / "attack_spec.yaml"),
            "--data",
            str(FIX / "records.jsonl"),
            "--format",
            "json",
            "--no-rows",
            "--engine",
            "jsonschema",
            "--export-schema",
            str(out_schema),
            "--export-flavor",
            "openai",
        ]
    )
    assert rc == 0
    again = json.loads(capsys.readouterr().out)
    assert again["evaluations"]["conformance"]["sums"] == payload["evaluations"]["conformance"]["sums"]
    assert "rows" not in again
    wrapped = json.loads(out_schema.read_text())
    assert wrapped["type"] == "json_schema" and wrapped["json_schema"]["schema"]["required"] == [
        "technique",
        "tactic",
    ]


def test_cli_text_and_bad_spec(kgro, tmp_path, capsys):
    from kg_rageval.cli.main import main

    rc = main(
        [
            "score",
            "conformance",
            "-O",
            kgro,
            "--schema-spec",
            str(FIX / "attack_spec.toml"),
            "-d",
            str(FIX / "records.jsonl"),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "schema_validity" in text and "Credential Access" in text and "TA0006 (label)" in text
    bad = tmp_path / "bad.yaml"
    bad.write_text("fields:\n  technique: {within: attack-pattern, kind: nodes}\n")
    rc = main(
        ["score", "conformance", "-O", kgro, "--schema-spec", str(bad), "-d", str(FIX / "records.jsonl")]
    )
    assert rc == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "fields.technique.kind" in err


# ---------------------------------------------------------------------- real ATT&CK
def test_real_attack_bundle(shared_data):
    from kg_rageval.ontology import load_ontology

    path = shared_data / "attack" / "enterprise-attack-techniques-18.1.json.gz"
    onto = load_ontology(path)
    # reference count straight from the bundle: attack-patterns neither revoked nor deprecated
    objs = json.load(gzip.open(path))["objects"]
    active = [
        o
        for o in objs
        if o["type"] == "attack-pattern" and not o.get("revoked") and not o.get("x_mitre_deprecated")
    ]
    assert len(active) == 691
    tech = onto.find_by_label("OS Credential Dumping")
    sub = onto.find_by_label("LSASS Memory")
    assert tech and sub, "the loader labels techniques with their names"
    types = sorted({onto.node_types[onto.index(tech[0])], onto.node_types[onto.index(sub[0])]} - {None})
    spec = parse_spec({"fields": {"technique": {"node_type": types, "required": True}}})
    d = derive_schema(onto, spec)
    assert len(d.vocabularies["technique"]) == 691
    assert d.validator.is_valid({"technique": sub[0]})
    revoked = [
        i for i in onto.ids if onto.status_of(i) == "revoked" and onto.node_types[onto.index(i)] in types
    ]
    assert revoked and not d.validator.is_valid({"technique": revoked[0]})
    ev = score_conformance(onto, [{"id": "a", "answer": {"output": {"technique": revoked[0]}}}], d)
    assert ev.metrics()["revoked_rate"].value == 1.0
    assert ev.rows()[0]["problems"]["inactive_ids"][0]["replacement"] == onto.replacement(revoked[0])
    # ATT&CK: T1086 (PowerShell) was revoked by T1059.001
    ev = score_conformance(onto, [{"id": "b", "answer": {"output": {"technique": "T1086"}}}], d)
    assert ev.rows()[0]["problems"]["inactive_ids"][0] == {
        "id": "T1086",
        "slot": "technique",
        "status": "revoked",
        "replacement": "T1059.001",
    }


def test_real_attack_shacl(shared_data):
    from kg_rageval.families.conformance.shacl import score_shacl
    from kg_rageval.ontology import load_ontology

    onto = load_ontology(shared_data / "attack" / "enterprise-attack-techniques-18.1.json.gz")
    spec = parse_spec(
        {
            "fields": {
                "technique": {"node_type": ["technique", "sub-technique"], "required": True},
                "tactic": {"node_type": "tactic", "required": True},
            }
        }
    )
    recs = [
        {"id": "ok-sub", "answer": {"output": {"technique": "T1003.001", "tactic": "TA0006"}}},
        {"id": "ok-tech", "answer": {"output": {"technique": "T1059", "tactic": "TA0002"}}},
        {"id": "revoked", "answer": {"output": {"technique": "T1086", "tactic": "TA0002"}}},
        {"id": "swapped", "answer": {"output": {"technique": "TA0006", "tactic": "T1003.001"}}},
    ]
    ev = score_shacl(onto, recs, SHAPES, spec)
    assert {r["record_id"]: r["conforming"] for r in ev.rows()} == {
        "ok-sub": 1,
        "ok-tech": 1,
        "revoked": 0,
        "swapped": 0,
    }
    js = score_conformance(onto, recs, spec)
    assert [r["valid"] for r in js.rows()] == [1, 1, 0, 0]  # JSON Schema and SHACL agree
