"""The compiled PROV-O trail (``kg_rageval.provenance.trail``) against the references: its Turtle
parses (rdflib) to the graph ``export_prov`` builds, and ``check_trail`` gives pySHACL's
verdicts, violation count, focus nodes and messages on conforming and broken trails; the
compiled shape table equals the parsed ``shapes/provenance.ttl``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_rageval.provenance import export_prov, read_corpus, read_manifest, validate_prov
from kg_rageval.provenance.trail import SHAPES, build_trail, check_trail, trail_turtle
from kg_rageval.records import read_records

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "generation"


@pytest.fixture(scope="module")
def corpus():
    return read_corpus(FIX / "corpus.jsonl")


@pytest.fixture(scope="module")
def records():
    return read_records(FIX / "prov_records.jsonl")


@pytest.fixture(scope="module")
def manifest():
    return read_manifest(FIX / "manifest.json")


def _cases(records, manifest):
    extra = [
        {"id": "u", "answer": {"text": "No citation."}},
        {"id": "q\"x\\y\nz é", "answer": {"text": 'quote " back \\ tab\t newline\n done', "citations": ["doc-1"]}},
        {"id": "r2", "answer": {"text": "", "refused": True, "citations": ["doc-2", "doc-unknown"]}},
        {"id": "a b/c?", "answer": {"citations": ["doc 1/x"], "claims": [{"text": "c", "citations": ["doc-4"]}]}},
    ]
    no_seed = {k: v for k, v in manifest.items() if k not in ("seed", "decoding")}
    yield "conforming", [r for r in records if r["id"] in ("p1", "p4")], manifest
    yield "all records", records + extra, manifest
    yield "no manifest", records + extra, None
    yield "no seed", records[:1], no_seed
    yield "bad time, bool seed", records, {**manifest, "started_at": "yesterday", "seed": True}
    yield "name only", records, {**manifest, "model": {"name": "m"}}
    yield "version not text", records, {**manifest, "model": {"name": "m", "version": 3}}
    yield "good time", records[:2], {**manifest, "started_at": "2026-01-02T03:04:05+01:00"}


def test_turtle_is_the_exported_graph(records, corpus, manifest):
    from rdflib import Graph

    for name, recs, man in _cases(records, manifest):
        want = export_prov(recs, manifest=man, corpus=corpus)
        got = Graph().parse(data=trail_turtle(build_trail(recs, manifest=man, corpus=corpus)), format="turtle")
        assert set(got) == set(want), name
        assert len(build_trail(recs, manifest=man, corpus=corpus)) == len(want), name


def test_check_equals_pyshacl(records, corpus, manifest):
    kinds = set()
    for name, recs, man in _cases(records, manifest):
        want = validate_prov(export_prov(recs, manifest=man, corpus=corpus))
        got = check_trail(build_trail(recs, manifest=man, corpus=corpus))
        assert got["conforms"] == want["conforms"], name
        assert got["violations"] == want["violations"], name
        assert got["focus_nodes"] == want["focus_nodes"], name
        assert got["messages"] == want["messages"], name
        kinds.update(m.rsplit(": ", 1)[-1].split(" ")[0] for m in got["messages"])
    # the broken cases exercise the shape's messages and pySHACL's default texts
    assert {"Less", "Value", "an", "a"} <= kinds


def test_trail_family_rows_follow_the_check(records, corpus, manifest):
    from kg_rageval.provenance.audit_trail import score_trail

    ev = score_trail(records, manifest=manifest, corpus=corpus)
    ids, stats = ev.per_record_stats()
    # p1 and p4 conform; p2 cites a hash-sourced doc, p3 one without source id and one absent
    assert dict(zip(ids.tolist(), stats["traceable"].tolist())) == {"p1": 1.0, "p2": 0.0, "p3": 0.0, "p4": 1.0}
    assert ev.meta["violations"] == 3 and not ev.meta["conforms"]


def test_shape_table_is_the_bundled_shape():
    from rdflib import Graph, Namespace
    from rdflib.namespace import RDF

    from kg_rageval.resources import shape

    sh = Namespace("http://www.w3.org/ns/shacl#")
    g = Graph().parse(shape("provenance.ttl"), format="turtle")
    parsed: dict[str, list[dict]] = {}
    for node in g.subjects(RDF.type, sh.NodeShape):
        cls = str(g.value(node, sh.targetClass))
        props = []
        for ps in g.objects(node, sh.property):
            d: dict = {"path": str(g.value(ps, sh.path))}
            for key in ("hasValue", "minCount", "maxCount", "datatype", "class", "minLength", "message"):
                v = g.value(ps, sh[key])
                if v is not None:
                    d[key] = v.toPython() if key in ("minCount", "maxCount", "minLength") else str(v)
            neg = g.value(ps, sh["not"])
            if neg is not None:
                d["notPattern"] = str(g.value(neg, sh.pattern))
            assert set(g.predicates(ps)) <= {sh[k] for k in ("path", "hasValue", "minCount", "maxCount", "datatype",
                                                            "class", "minLength", "message", "not")}
            props.append(d)
        parsed[cls] = sorted(props, key=lambda d: d["path"])
    want = {c: sorted(ps, key=lambda d: d["path"]) for c, ps in SHAPES.items()}
    assert parsed == want
