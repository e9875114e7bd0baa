"""The PROV-O trail the audit writes (``prov.ttl``) against the shipped shape, checked by pySHACL
itself (not the compiled check the family uses), and ``provenance.prov_traceable_rate`` in the
reports and gates (#28).

The demo writes the run manifest of its own system (``run-manifest.json``), so its trail
records the run's model (the demo system at this kg-rageval version), decoding settings, seed
and both hashes, and conforms. An audit without run manifests gets the 5 violations of an
unrecorded run and ``prov_traceable_rate`` is missing evidence (0 of N answers, denominator
shown), never a silent 0 and never a pass.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.reports import write_reports
from kg_rageval.audit.runner import run_audit

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "fixtures" / "generation"
SHAPE = ROOT / "shapes" / "provenance.ttl"
KGR = "https://w3id.org/kg-rageval#"
PROV = "http://www.w3.org/ns/prov#"
RUN_FIELDS = {PROV + "wasAssociatedWith"} | {
    KGR + f for f in ("decodingConfig", "seed", "corpusHash", "ontologyHash")
}


def _graph(ttl: Path):
    from rdflib import Graph

    return Graph().parse(ttl, format="turtle")


def _violations(graph) -> list[tuple[str, str]]:
    """``(focus node, result path)`` of every violation pySHACL finds against the shipped shape."""
    import pyshacl
    from rdflib import Graph, Namespace
    from rdflib.namespace import RDF

    sh = Namespace("http://www.w3.org/ns/shacl#")
    conforms, report, _ = pyshacl.validate(
        graph, shacl_graph=Graph().parse(SHAPE, format="turtle"), inference="none"
    )
    found = sorted(
        (str(report.value(r, sh.focusNode)), str(report.value(r, sh.resultPath)))
        for r in report.subjects(RDF.type, sh.ValidationResult)
    )
    assert conforms == (not found)
    return found


def _by_gate(res) -> dict:
    return {str(r.gate): r for r in res.gate_results}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from kg_rageval.demo import build_demo

    out = tmp_path_factory.mktemp("demo")
    build_demo(out, seed=0, bootstrap=50)
    return out


def _demo_audit(demo: Path, out: Path, *, manifests: bool = True, gates: tuple[str, ...] = ()):
    import yaml

    raw = yaml.safe_load((demo / "audit.yaml").read_text())
    if not manifests:
        raw["families"]["provenance"] = {}
    raw["gates"] = [*raw["gates"], *gates]
    res = run_audit(config_from_mapping(raw, base_dir=demo), progress=False)
    return res, write_reports(res, out)


def test_demo_trail_conforms_to_the_shipped_shape(demo, tmp_path):
    manifest = json.loads((demo / "run-manifest.json").read_text())
    from kg_rageval import __version__
    from kg_rageval.base.hashing import file_hash
    from kg_rageval.ontology import load_ontology

    # the demo's own run, recorded: kg-rageval's demo system at this version, its seed, the
    # hashes of the files it wrote
    assert manifest["model"]["version"] == __version__ and manifest["seed"] == 0
    assert manifest["corpus_hash"] == file_hash(demo / "corpus.jsonl")
    assert manifest["ontology_hash"] == load_ontology(demo / "doid-cancer-slim.obo").content_hash
    res, out = _demo_audit(demo, tmp_path / "rep", gates=("provenance.prov_traceable_rate >= 0.9",))
    g = _graph(Path(out["prov"]))
    assert _violations(g) == []
    from rdflib import Literal, URIRef
    from rdflib.namespace import XSD

    run = URIRef("urn:kg-rageval:run:demo-doid-seed-0")
    assert (run, URIRef(KGR + "seed"), Literal("0", datatype=XSD.integer)) in g
    agent = g.value(run, URIRef(PROV + "wasAssociatedWith"))
    assert str(g.value(agent, URIRef(KGR + "modelVersion"))) == __version__
    # every answer (393 cited answers and 3 refusals) is traceable: 396/396, and the gate passes
    answers = sum("answer" in json.loads(x) for x in (demo / "records.jsonl").read_text().splitlines())
    m = res.metrics["provenance.prov_traceable_rate"]
    assert (m.numerator, m.denominator, m.value) == (answers, answers, 1.0) and answers == 396
    assert _by_gate(res)["provenance.prov_traceable_rate >= 0.9"].status == "pass"
    md = Path(out["markdown"]).read_text()
    assert "## PROV-O trail" in md and "1.0000 (396/396 answers)" in md and "`prov.ttl` conforms" in md
    summary = json.loads(Path(out["json"]).read_text())["prov_trail"]
    assert summary["violations"] == 0 and summary["conforms"] and summary["run_recorded"]
    assert summary["prov_traceable_rate"]["denominator"] == 396


def test_removing_one_required_triple_is_caught(demo, tmp_path):
    from rdflib import URIRef

    res, out = _demo_audit(demo, tmp_path / "rep")
    run = URIRef("urn:kg-rageval:run:demo-doid-seed-0")
    g = _graph(Path(out["prov"]))
    g.remove((run, URIRef(KGR + "seed"), None))
    assert _violations(g) == [(str(run), KGR + "seed")]
    g = _graph(Path(out["prov"]))
    doc = URIRef("urn:kg-rageval:doc:doc%3ADOID%3A9952%3Adef")
    assert (doc, URIRef(KGR + "sourceId"), None) in g
    g.remove((doc, URIRef(KGR + "sourceId"), None))
    assert _violations(g) == [(str(doc), KGR + "sourceId")]


def test_without_run_manifests_the_rate_is_missing_evidence_not_zero(demo, tmp_path):
    gate = "provenance.prov_traceable_rate >= 0.9"
    res, out = _demo_audit(demo, tmp_path / "rep", manifests=False, gates=(gate,))
    # the trail of an unrecorded run: exactly the 5 run fields the shape requires
    found = _violations(_graph(Path(out["prov"])))
    assert [f for f, _ in found] == ["urn:kg-rageval:run:run"] * 5
    assert {p for _, p in found} == RUN_FIELDS
    m = res.metrics["provenance.prov_traceable_rate"]
    assert m.value is None and (m.numerator, m.denominator) == (0, 396) and "no run manifest" in m.missing
    r = _by_gate(res)[gate]
    assert r.status == "missing" and "no run manifest" in r.reason and not res.passed
    md = Path(out["markdown"]).read_text()
    assert "missing evidence (0/396 answers)" in md and "does not conform (5 SHACL violations)" in md
    html = Path(out["html"]).read_text()
    assert "<h2>PROV-O trail</h2>" in html and "0/396" in html and "no run manifest" in html
    summary = json.loads(Path(out["json"]).read_text())["prov_trail"]
    assert summary["violations"] == 5 and summary["run_recorded"] is False
    assert summary["prov_traceable_rate"]["value"] is None and summary["note"].startswith("missing evidence")


def _fixture_cfg(tmp_path: Path, records: list[dict], manifest: dict | None, gate: str) -> dict:
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    fam: dict = {}
    if manifest is not None:
        (tmp_path / "run.json").write_text(json.dumps(manifest))
        fam["manifests"] = ["run.json"]
    return {
        "ontology": str(GEN / "vehicles.csv"),
        "records": "records.jsonl",
        "corpus": str(GEN / "corpus.jsonl"),
        "families": {"provenance": fam},
        "gates": [gate],
        # a fixture of 2 to 4 answers: the gate is decided on them, not held to the 30-row default
        "min_rows": 1,
    }


def _fixture_records() -> list[dict]:
    return [json.loads(x) for x in (GEN / "prov_records.jsonl").read_text().splitlines() if x.strip()]


@pytest.mark.parametrize(
    ("ids", "drop", "status", "rate", "shacl"),
    [
        # p1 cites doc-1 (stable source id), p4 is a refusal: both traceable, trail conforms
        (("p1", "p4"), None, "pass", (2, 2), []),
        # p2 cites doc-3 (chunk-hash source id), p3 doc-4 (no source id) and doc-9 (absent): 2/4
        (
            ("p1", "p2", "p3", "p4"),
            None,
            "fail",
            (2, 4),
            [f"urn:kg-rageval:doc:doc-{d}" for d in (3, 4, 9)],
        ),
        # a manifest without its seed: recorded, but every answer's run fails the shape: 0/2, FAIL
        (("p1", "p4"), "seed", "fail", (0, 2), ["urn:kg-rageval:run:run-a"]),
    ],
)
def test_audit_with_a_run_manifest(tmp_path, ids, drop, status, rate, shacl):
    gate = "provenance.prov_traceable_rate >= 0.9"
    manifest = json.loads((GEN / "manifest.json").read_text())
    if drop:
        del manifest[drop]
    recs = [r for r in _fixture_records() if r["id"] in ids]
    res = run_audit(
        config_from_mapping(_fixture_cfg(tmp_path, recs, manifest, gate), base_dir=tmp_path), progress=False
    )
    out = write_reports(res, tmp_path / "rep")
    assert [f for f, _ in _violations(_graph(Path(out["prov"])))] == shacl
    m = res.metrics["provenance.prov_traceable_rate"]
    assert (m.numerator, m.denominator) == rate and m.value == rate[0] / rate[1]
    assert _by_gate(res)[gate].status == status
    summary = json.loads(Path(out["json"]).read_text())["prov_trail"]
    assert summary["violations"] == len(shacl) and summary["run_recorded"] is True


def test_fixture_audit_without_manifest_is_missing(tmp_path):
    gate = "provenance.prov_traceable_rate >= 0.9"
    recs = [r for r in _fixture_records() if r["id"] in ("p1", "p4")]
    res = run_audit(
        config_from_mapping(_fixture_cfg(tmp_path, recs, None, gate), base_dir=tmp_path), progress=False
    )
    r = _by_gate(res)[gate]
    assert r.status == "missing" and r.observed is None
    m = res.metrics["provenance.prov_traceable_rate"]
    assert (m.numerator, m.denominator) == (0, 2)
