"""Provenance audits: citation completeness / precision / recall, provenance depth,
reproducibility, run manifests, the PROV-O trail and its SHACL shape, and the CLI.

Expected values are worked by hand from ``fixtures/generation/prov_*.jsonl`` and ``corpus.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.families.provenance import (
    Corpus,
    check_manifest,
    claim_citations,
    compare_manifests,
    export_prov,
    file_hash,
    is_stable_source_id,
    read_corpus,
    read_manifest,
    score_citations,
    score_depth,
    score_reproducibility,
    validate_prov,
)
from kg_rageval.families.provenance.trail import SHAPES, build_trail, check_trail, trail_turtle
from kg_rageval.records import read_records

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "generation"


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return read_corpus(FIX / "corpus.jsonl")


@pytest.fixture(scope="module")
def records():
    return read_records(FIX / "prov_records.jsonl")


@pytest.fixture(scope="module")
def manifest():
    return read_manifest(FIX / "manifest.json")


def test_stable_source_ids():
    assert is_stable_source_id("https://example.org/a")
    assert is_stable_source_id("attack:T1003.001")
    assert not is_stable_source_id("sha256:" + "ab" * 32)
    assert not is_stable_source_id("0123456789abcdef0123")  # bare chunk hash
    assert not is_stable_source_id("") and not is_stable_source_id(None)


def test_claim_citations_rules(records):
    by = {r["id"]: r for r in records}
    assert claim_citations(by["p1"]) == [
        ("A sedan is a car [1].", ["doc-1"]),
        ("It has a closed body [1].", ["doc-1"]),
    ]
    assert claim_citations(by["p2"]) == [("A hatchback is a car.", ["doc-2"]), ("It has a boot.", [])]
    assert claim_citations({"id": "x", "answer": {"text": "No markers.", "citations": ["doc-1"]}}) is None
    # several ids in one bracket; unknown markers are ignored
    r = {
        "id": "y",
        "answer": {"text": "A [doc-1, doc-2]. B [3]. C [doc-7].", "citations": ["doc-1", "doc-2"]},
    }
    assert claim_citations(r) == [
        ("A [doc-1, doc-2].", ["doc-1", "doc-2"]),
        ("B [3].", []),
        ("C [doc-7].", []),
    ]


def test_citation_completeness_precision_recall(records):
    ev = score_citations(records)
    m = ev.metrics()
    # p1 2/2, p2 1/2 (claim-level), p3 2/2, p4 refused → no claims
    assert (m["citation_completeness"].numerator, m["citation_completeness"].denominator) == (5, 6)
    # C∩G / C: p1 1/1, p2 1/2 (doc-1 has grade 0), p3 1/2 → 3/5; recall 3/3
    assert (m["citation_precision"].numerator, m["citation_precision"].denominator) == (3, 5)
    assert m["citation_recall"].value == 1.0
    assert m["no_claims"].value == 1


def test_answer_level_citations_leave_completeness_unscored():
    ev = score_citations(
        [{"id": "a", "answer": {"text": "One. Two.", "citations": ["d"]}, "retrieval": {"gold": ["d"]}}]
    )
    m = ev.metrics()
    assert m["citation_completeness"].value is None  # never a reassuring 1.0
    assert m["citation_precision"].value == 1.0
    assert ev.unscored_counts == {"no claim-level citations": 1}


def test_provenance_depth(records, corpus):
    ev = score_depth(records, corpus)
    m = ev.metrics()
    # cited: doc-1 ok; doc-2 ok, doc-3 hash source id; doc-4 no source id, doc-9 not in corpus
    assert (m["provenance_depth"].numerator, m["provenance_depth"].denominator) == (2, 5)
    assert (m["citation_in_corpus_rate"].numerator, m["citation_in_corpus_rate"].denominator) == (4, 5)
    rows = {r["record_id"]: r for r in ev.rows()}
    assert rows["p3"]["unresolved"] == "doc-4 doc-9"
    assert ev.meta["corpus_hash"] == file_hash(FIX / "corpus.jsonl")


def test_depth_without_citations_is_missing(corpus):
    m = score_depth([{"id": "a", "answer": {"text": "x"}}], corpus).metrics()
    assert m["provenance_depth"].value is None and m["provenance_depth"].missing == "no citations"


def test_reproducibility(records):
    repeat = read_records(FIX / "prov_repeat.jsonl")
    ev = score_reproducibility(records, [repeat, records])
    m = ev.metrics()
    # repeat 1: p1 same/same (trailing space stripped), p2 text differs/same set, p3 same/doc-9 dropped; p4 missing
    # repeat 2 (the base itself): 4/4 identical
    assert (m["identical_answer_rate"].numerator, m["identical_answer_rate"].denominator) == (6, 7)
    assert (m["identical_citation_rate"].numerator, m["identical_citation_rate"].denominator) == (6, 7)
    assert (m["identical_rate"].numerator, m["identical_rate"].denominator) == (5, 7)
    assert ev.unscored_counts == {"missing in repeat": 1}
    assert ev.unscored[0]["repeat"] == 1
    assert score_reproducibility(records, []).metrics()["identical_rate"].value is None


def test_manifest_check(manifest, corpus):
    from kg_rageval.ontology import load_ontology

    onto = load_ontology(str(FIX / "vehicles.csv"))
    ok = check_manifest(manifest, corpus_hash=corpus.hash, ontology_hash=onto.content_hash)
    assert ok["complete"] and ok["missing"] == [] and ok["mismatched"] == []
    broken = {**manifest, "seed": "1234", "decoding": {}, "model": {"name": "m"}}
    bad = check_manifest(broken, corpus_hash="sha256:other")
    assert not bad["complete"]
    assert bad["missing"] == ["model.version", "decoding", "seed"]
    assert [m["field"] for m in bad["mismatched"]] == ["corpus_hash"]
    assert compare_manifests([manifest, manifest]) == {"same_configuration": True, "differing": []}
    other = {**manifest, "seed": 7}
    assert compare_manifests([manifest, other]) == {"same_configuration": False, "differing": ["seed"]}


def test_read_manifest_errors(tmp_path):
    p = tmp_path / "m.json"
    p.write_text("[1]")
    with pytest.raises(InputError, match="must be a JSON object"):
        read_manifest(p)


def test_corpus_reader_errors(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": "a"}\n{"id": "a"}\n')
    with pytest.raises(InputError, match=r"line 2.*duplicate document id 'a' \(first on line 1\)"):
        read_corpus(p)


def test_empty_corpus_is_bad_input_not_zero_depth(tmp_path):
    # an empty snapshot would make every citation "unresolved" (depth 0/n): refuse it instead
    p = tmp_path / "c.jsonl"
    p.write_text("\n")
    with pytest.raises(InputError, match="c.jsonl: the corpus has no documents"):
        read_corpus(p)
    from kg_rageval.cli.main import main

    code = main(
        [
            "score",
            "provenance",
            "-O",
            str(FIX / "vehicles.csv"),
            "-d",
            str(FIX / "prov_records.jsonl"),
            "--corpus",
            str(p),
        ]
    )
    assert code == 2


def test_cli_prov_out_in_missing_folder_exits_2(tmp_path, capsys):
    from kg_rageval.cli.main import main

    code = main(
        [
            "score",
            "provenance",
            "-O",
            str(FIX / "vehicles.csv"),
            "-d",
            str(FIX / "prov_records.jsonl"),
            "--corpus",
            str(FIX / "corpus.jsonl"),
            "--prov-out",
            str(tmp_path / "no" / "trail.ttl"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "trail.ttl" in err and "Traceback" not in err


# ---------------------------------------------------------------- PROV-O + SHACL
def test_prov_trail_conforms(records, corpus, manifest):
    good = [r for r in records if r["id"] in ("p1", "p4")]  # resolved citations and a refusal
    g = export_prov(good, manifest=manifest, corpus=corpus)
    res = validate_prov(g)
    assert res["conforms"], res["messages"]
    from rdflib import URIRef
    from rdflib.namespace import PROV

    ans = URIRef("urn:kg-rageval:answer:run-a:p1")
    assert (ans, PROV.wasDerivedFrom, URIRef("urn:kg-rageval:doc:doc-1")) in g
    assert (ans, PROV.wasGeneratedBy, URIRef("urn:kg-rageval:run:run-a")) in g
    assert (URIRef("urn:kg-rageval:run:run-a"), PROV.wasAssociatedWith, None) in g


def test_broken_trails_do_not_conform(records, corpus, manifest):
    good = [r for r in records if r["id"] == "p1"]
    # 1. a run without seed and decoding configuration
    no_seed = {k: v for k, v in manifest.items() if k not in ("seed", "decoding")}
    res = validate_prov(export_prov(good, manifest=no_seed, corpus=corpus))
    assert not res["conforms"] and res["violations"] == 2
    assert any("seed" in m for m in res["messages"]) and any("decodingConfig" in m for m in res["messages"])
    # 2. an answer without any citation
    uncited = [{"id": "u", "answer": {"text": "Claim."}}]
    res = validate_prov(export_prov(uncited, manifest=manifest, corpus=corpus))
    assert not res["conforms"] and any("at least one cited document" in m for m in res["messages"])
    # 3. citations to a chunk-hash source, a document without source id and one not in the corpus
    res = validate_prov(export_prov(records, manifest=manifest, corpus=corpus))
    assert not res["conforms"] and res["violations"] == 3
    assert all("stable source id" in m for m in res["messages"])
    # 4. no manifest at all: the model run records nothing
    res = validate_prov(export_prov(good, corpus=corpus))
    assert not res["conforms"] and res["violations"] >= 5


def test_cli_score_provenance_json(tmp_path):
    from click.testing import CliRunner

    from kg_rageval.cli.main import cli

    trail = tmp_path / "trail.ttl"
    res = CliRunner().invoke(
        cli,
        [
            "score",
            "provenance",
            "-O",
            str(FIX / "vehicles.csv"),
            "-d",
            str(FIX / "prov_records.jsonl"),
            "--corpus",
            str(FIX / "corpus.jsonl"),
            "--repeat",
            str(FIX / "prov_repeat.jsonl"),
            "--manifest",
            str(FIX / "manifest.json"),
            "--prov-out",
            str(trail),
            "--format",
            "json",
            "--rows",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    m = out["metrics"]
    assert m["provenance.citation_completeness"]["numerator"] == 5
    assert m["provenance.provenance_depth"]["value"] == pytest.approx(0.4)
    assert m["provenance.identical_rate"]["value"] == pytest.approx(1 / 3)
    assert out["manifest"]["all_complete"] is True
    assert out["prov"]["conforms"] is False and out["prov"]["violations"] == 3
    assert trail.exists() and "prov:wasDerivedFrom" in trail.read_text()
    assert len([r for r in out["rows"] if r["member"] == "citations"]) == 4


def test_uncited_answers_count_as_zero_and_fail_the_gate():
    """Issue #19: 12 of 14 answers cite nothing; completeness is 2/14, not 1/1 — the gate fails."""
    from kg_rageval.audit.gates import RowMinimum, evaluate_gates, parse_gate

    recs = [
        {"id": f"c{i}", "answer": {"text": "Sepsis is an infection [1].", "citations": ["doc-1"]}}
        for i in range(2)
    ]
    recs += [{"id": f"u{i}", "answer": {"text": "Sepsis is an infection."}} for i in range(12)]
    recs.append({"id": "r", "answer": {"text": "I cannot answer.", "refused": True}})
    ev = score_citations(recs)
    m = ev.metrics()
    assert (m["citation_completeness"].numerator, m["citation_completeness"].denominator) == (2, 14)
    assert (m["uncited_answer_rate"].numerator, m["uncited_answer_rate"].denominator) == (12, 14)
    assert m["no_claims"].value == 1 and ev.unscored == []
    (res,) = evaluate_gates([parse_gate("citation_completeness >= 0.95")], m, min_rows=RowMinimum(1))
    assert res.status == "fail" and res.observed == pytest.approx(2 / 14)
    # two sentences without any citation: two uncited claims
    m2 = score_citations([{"id": "a", "answer": {"text": "One. Two."}}]).metrics()
    assert (m2["citation_completeness"].numerator, m2["citation_completeness"].denominator) == (0, 2)


# ---------------------------------------------------------------- the compiled trail (kg_rageval.families.provenance.trail)
# against the references: its Turtle parses (rdflib) to the graph export_prov builds, and
# check_trail gives pySHACL's verdicts, violation count, focus nodes and messages on conforming
# and broken trails; the compiled shape table equals the parsed shapes/provenance.ttl.
def _trail_cases(records, manifest):
    extra = [
        {"id": "u", "answer": {"text": "No citation."}},
        {
            "id": 'q"x\\y\nz é',
            "answer": {"text": 'quote " back \\ tab\t newline\n done', "citations": ["doc-1"]},
        },
        {"id": "r2", "answer": {"text": "", "refused": True, "citations": ["doc-2", "doc-unknown"]}},
        {
            "id": "a b/c?",
            "answer": {"citations": ["doc 1/x"], "claims": [{"text": "c", "citations": ["doc-4"]}]},
        },
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
    # one record id twice: the graph merges the two answers (one uncited, one citing doc-1)
    yield (
        "repeated id",
        [
            {"id": "d", "answer": {"text": "x"}},
            {"id": "d", "answer": {"text": "y [1]", "citations": ["doc-1"]}},
            {"id": "d", "answer": {"text": "z", "refused": True}},
        ],
        manifest,
    )


def test_turtle_is_the_exported_graph(records, corpus, manifest):
    from rdflib import Graph

    for name, recs, man in _trail_cases(records, manifest):
        want = export_prov(recs, manifest=man, corpus=corpus)
        got = Graph().parse(
            data=trail_turtle(build_trail(recs, manifest=man, corpus=corpus)), format="turtle"
        )
        assert set(got) == set(want), name
        assert len(build_trail(recs, manifest=man, corpus=corpus)) == len(want), name


def test_check_equals_pyshacl(records, corpus, manifest):
    kinds = set()
    for name, recs, man in _trail_cases(records, manifest):
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
    from kg_rageval.families.provenance.audit_trail import score_trail

    ev = score_trail(records, manifest=manifest, corpus=corpus)
    ids, stats = ev.per_record_stats()
    # p1 and p4 conform; p2 cites a hash-sourced doc, p3 one without source id and one absent
    assert dict(zip(ids.tolist(), stats["traceable"].tolist())) == {
        "p1": 1.0,
        "p2": 0.0,
        "p3": 0.0,
        "p4": 1.0,
    }
    assert ev.meta["violations"] == 3 and not ev.meta["conforms"]


def test_shape_table_is_the_bundled_shape():
    from rdflib import Graph, Namespace
    from rdflib.namespace import RDF

    from kg_rageval.base.resources import shape

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
            assert set(g.predicates(ps)) <= {
                sh[k]
                for k in (
                    "path",
                    "hasValue",
                    "minCount",
                    "maxCount",
                    "datatype",
                    "class",
                    "minLength",
                    "message",
                    "not",
                )
            }
            props.append(d)
        parsed[cls] = sorted(props, key=lambda d: d["path"])
    want = {c: sorted(ps, key=lambda d: d["path"]) for c, ps in SHAPES.items()}
    assert parsed == want
