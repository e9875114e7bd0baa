"""The demo KG-RAG system (kg_rageval.demo) and the README's `kg-rageval audit --demo`."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kg_rageval.cli.main import main
from kg_rageval.demo import build_demo, bundled_ontology
from kg_rageval.demo.bm25 import BM25


def test_bm25_by_hand():
    idx = BM25(["xx yy", "yy zz zz"], k1=1.2, b=0.75)
    # zz: df=1, N=2 → idf = ln(1 + 1.5/1.5) = ln 2; doc 1 has tf=2, |d|=3, avgdl=2.5
    expected = math.log(2) * 2 * 2.2 / (2 + 1.2 * (1 - 0.75 + 0.75 * 3 / 2.5))
    s = idx.scores("zz")
    assert s[0] == 0.0 and s[1] == pytest.approx(expected)
    # yy is in both docs: idf = ln(1 + 0.5/2.5); the shorter doc scores higher
    yy = idx.scores("yy")
    assert yy[0] > yy[1] > 0
    assert idx.search("yy", k=5, mask=np.array([False, True])) == [(1, pytest.approx(yy[1]))]
    assert idx.search("unknownword") == []


def test_bm25_over_documents_without_terms():
    # every document empty (average length 0): no term has a weight, every score is 0
    # (this raised "TypeError: 'float' object is not subscriptable")
    idx = BM25(["", "  "])
    assert idx.n_docs == 2 and idx.vocab == {}
    assert idx.scores("xx").tolist() == [0.0, 0.0] and idx.search("xx") == []


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    built = build_demo(out, seed=0, bootstrap=200)
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    corpus = [json.loads(x) for x in (out / "corpus.jsonl").read_text().splitlines()]
    return built, records, corpus


def test_demo_is_deterministic(demo, tmp_path):
    built, _, _ = demo
    again = build_demo(tmp_path / "again", seed=0, bootstrap=200)
    for name in ("records.jsonl", "baseline.jsonl", "corpus.jsonl", "audit.yaml", "schema.yaml"):
        assert (built["out"] / name).read_bytes() == (again["out"] / name).read_bytes()
    other = build_demo(tmp_path / "other", seed=1, bootstrap=200)
    assert (other["out"] / "records.jsonl").read_bytes() != (built["out"] / "records.jsonl").read_bytes()


def test_demo_records_have_the_hard_cases(demo):
    from kg_rageval.ontology import load_ontology

    built, records, corpus = demo
    onto = load_ontology(bundled_ontology("doid-cancer-slim.obo"))
    intents = {}
    for r in records:
        intents[r["slices"]["intent"]] = intents.get(r["slices"]["intent"], 0) + 1
    assert intents == {
        "label_lookup": 150,
        "synonym_lookup": 80,
        "description": 100,
        "sibling_contrast": 50,
        "unknown_concept": len(built["held_out"]),
    }
    held = set(built["held_out"])
    assert len(held) >= 10
    doc_ids = {d["id"] for d in corpus}
    assert not any(d["categories"][0] in held for d in corpus)  # held-out concepts are not indexed
    restricted = [d for d in corpus if d["tenant"] != ["acme", "globex"]]
    assert 0.05 * len(corpus) < len(restricted) < 0.2 * len(corpus)
    for r in records:
        ret = r["retrieval"]
        assert set(ret["run"]) <= doc_ids and len(ret["run"]) <= 10
        if r["slices"]["intent"] == "unknown_concept":
            assert r["mentions"]["gold"][0]["id"] is None and r["reference"]["answerable"] is False
            assert "labels" not in r
        else:
            g = r["labels"]["gold"][0]
            assert ret["gold"][f"doc:{g}:def"] == 2
            q = r["query"]
            for m in r.get("mentions", {}).get("gold", []):  # gold spans point at the concept's name
                name = q[m["start"] : m["end"]].lower()
                node = m["id"]
                assert name == onto.label(node).lower() or name in {
                    s.lower() for s in onto.synonyms[onto.index(node)]
                }
        # the category filter is `within` the parent of the linked concept (or the concept itself)
        pred = (r.get("labels") or {}).get("pred")
        if pred is None:  # NIL queries: the longest linked predicted mention
            linked = [m for m in r["mentions"]["pred"] if m["id"] is not None]
            pred = [max(linked, key=lambda m: (m["end"] - m["start"], -m["start"]))["id"]] if linked else []
        for f in ret["filters"]:
            assert f["op"] == "within" and pred
            assert f["value"] == pred[0] or f["value"] in onto.parents(pred[0])
        if not r["answer"]["refused"]:
            assert r["answer"]["citations"][0] == ret["run"][0]
            assert "[1]" in r["answer"]["text"]


@pytest.mark.slow
def test_demo_audit_command(tmp_path, capsys):
    out = tmp_path / "demo"
    code = main(["audit", "--demo", "--out", str(out), "--quiet", "--format", "json"])
    payload = json.loads(capsys.readouterr().out)
    # the demo is a showcase: it exits 0 once the reports are written, whatever the gates say;
    # the gate verdict stays in the report (and --strict returns it, see below)
    assert code == 0 and payload["exit_code"] == 1
    for f in ("report.json", "report.md", "report.html", "junit.xml", "manifest.json"):
        assert (out / "report" / f).exists()
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    gates = {g["gate"]: g for g in payload["gates"]}
    fams = payload["families"]
    # faithfulness of the extractive judge, recomputed from the records: mean over judged answers
    if fams.get("generation", {}).get("status") == "ran":
        vals = [
            len(r["answer"]["judgment"]["supported"]) / len(r["answer"]["judgment"]["claims"])
            for r in records
            if "judgment" in r["answer"]
        ]
        g = gates["generation.faithfulness >= 0.85"]
        assert g["observed"] == pytest.approx(sum(vals) / len(vals))
        assert g["status"] == "fail"  # templated "X is a kind of Y" claims are not in the documents
    if fams.get("linking", {}).get("status") == "ran":
        # every held-out (NIL) concept is linked or missed, never recognised as NIL by a dictionary:
        # 0 of 16, but 16 NIL mentions are fewer than the 30 rows a gate needs (min_rows)
        g = gates["linking.strong_nil_match_recall >= 0.5"]
        assert payload["metrics"]["linking.strong_nil_match_recall"]["value"] == 0.0
        assert g["status"] == "missing"
        assert "rests on a denominator of 16 over 296 records; it needs at least 30 rows" in g["reason"]
    if fams.get("retrieval", {}).get("status") == "ran":
        # the audit's own filter replay agrees with the retrieval family's attribution
        m = payload["metrics"]
        ex = payload["exclusions"]
        assert sum(ex["excluded_by_filter"].values()) == m["retrieval.doc_attribution@10.filter"]["numerator"]
        assert ex["excluded_by_entitlement"] == m["retrieval.n_gold_ineligible"]["value"]
    if fams.get("retrieval", {}).get("status") == "ran":
        # the baseline (same system without category filters): paired deltas over the same records
        d = payload["baseline"]["deltas"]["delta:retrieval.recall@10"]
        assert d["candidate"] == pytest.approx(payload["metrics"]["retrieval.recall@10"]["value"])
        assert d["value"] == pytest.approx(d["candidate"] - d["baseline"]) and d["paired_records"] == len(
            records
        )
        assert d["ci"][0] <= d["value"] <= d["ci"][1]
        # without filters nothing is excluded by a filter
        assert payload["baseline"]["deltas"]["delta:retrieval.doc_attribution@10.filter"]["baseline"] == 0.0
        assert gates["delta:retrieval.recall@10 >= -0.02"]["status"] in ("pass", "fail")
    if fams.get("hierarchy", {}).get("status") == "ran":
        # exact matches and abstentions counted from the records = the hierarchy family's relations
        labelled = [r["labels"] for r in records if "labels" in r]
        exact = sum(1 for lab in labelled if lab["pred"] and lab["pred"][0] == lab["gold"][0])
        assert payload["relations"]["hierarchy"]["exact"] == exact
        assert payload["relations"]["hierarchy"]["nil_pred"] == sum(1 for lab in labelled if not lab["pred"])
    for name, fam in fams.items():  # a family that did not run leaves its gates missing, never passing
        if fam["status"] != "ran":
            assert all(
                g["status"] == "missing" for g in payload["gates"] if g["metric"].startswith(name + ".")
            )
    # the manifest reproduces the numbers; the demo fails gates on purpose, so --verify exits 1
    capsys.readouterr()
    assert main(["audit", "--verify", str(out / "report" / "manifest.json"), "--quiet"]) == 1
    assert "verified: identical numbers" in capsys.readouterr().out


@pytest.mark.slow
def test_attack_demo(tmp_path):
    from kg_rageval.audit.config import load_config
    from kg_rageval.audit.runner import run_audit

    built = build_demo(tmp_path / "attack", seed=0, bootstrap=100, profile="attack")
    records = [json.loads(x) for x in (built["out"] / "records.jsonl").read_text().splitlines()]
    corpus = [json.loads(x) for x in (built["out"] / "corpus.jsonl").read_text().splitlines()]
    intents = {r["slices"]["intent"] for r in records}
    assert intents == {"label_lookup", "description", "sibling_contrast", "unknown_concept"}  # no synonyms
    assert not any("(Citation:" in d["text"] or "<code>" in d["text"] for d in corpus)
    assert all("technique" in r["reference"]["output"] for r in records if "output" in r["reference"])
    res = run_audit(load_config(built["config"]), progress=False)
    assert res.exit_code in (0, 1)
    ran = {f for f, r in res.families.items() if r.status == "ran"}
    thin = []
    for r in res.gate_results:
        fam = r.gate.metric.split(".", 1)[0]
        if fam in ran and r.status == "missing":  # only for too few rows (min_rows)
            assert "it needs at least 30 rows (min_rows)" in r.reason, (str(r.gate), r.reason)
            thin.append(str(r.gate))
        elif fam in ran:
            assert r.status in ("pass", "fail"), (str(r.gate), r.reason)
    if ran >= {"linking", "generation", "hierarchy"}:  # 24 NIL concepts, 25 records under TA0006
        assert sorted(thin) == [
            "generation.refusal_recall >= 0.5",
            "hierarchy.hierarchical_f1[node:TA0006] >= 0.7",
            "linking.strong_nil_match_recall >= 0.5",
        ]


def test_unknown_demo_profile(tmp_path):
    from kg_rageval.base.errors import InputError

    with pytest.raises(InputError, match="unknown demo 'snomed'"):
        build_demo(tmp_path, profile="snomed")
    assert main(["audit", "--demo", "snomed", "--out", str(tmp_path), "--quiet"]) == 2


_BLOCKER = """
import sys
BLOCK = {"spacy", "torch", "sentence_transformers", "transformers", "owlready2", "nltk", "neo4j",
         "outlines", "outlines_core", "dask", "distributed", "hiclass", "ranx", "pytrec_eval",
         "neleval", "seqeval", "arcadedb_embedded"}
class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCK:
            raise ImportError(f"{name} is not part of the core install")
        return None
sys.meta_path.insert(0, _Blocker())
"""


@pytest.mark.slow
def test_demo_runs_on_the_core_install(tmp_path):
    """The README's command needs only the core dependencies: optional extras are blocked."""
    import os
    import subprocess
    import sys

    (tmp_path / "sitecustomize.py").write_text(_BLOCKER)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "core install" in probe.stderr  # the blocker works
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kg_rageval.cli.main",
            "audit",
            "--demo",
            "--strict",
            "--out",
            str(tmp_path / "d"),
            "--quiet",
            "--format",
            "json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    payload = json.loads(proc.stdout)
    assert {f: v["status"] for f, v in payload["families"].items()} == dict.fromkeys(
        ("hierarchy", "linking", "retrieval", "conformance", "generation", "provenance"), "ran"
    )
    # every family ran; the only missing gates are the two on the 16 held-out (NIL) concepts,
    # fewer than the 30 rows a gate needs
    thin = sorted(g["gate"] for g in payload["gates"] if g["status"] == "missing")
    assert thin == ["generation.refusal_recall >= 0.5", "linking.strong_nil_match_recall >= 0.5"]
    assert payload["summary"]["missing"] == 2


def test_demo_links_all_queries_in_one_batched_call():
    """``run_system`` links every query with one ``find_many``; ``answer`` given those links
    equals ``answer`` finding them itself (one ``find`` per query, the code before #20)."""
    from kg_rageval.base.resources import bundled_ontology
    from kg_rageval.demo import PROFILES
    from kg_rageval.demo.system import DemoSystem, build_corpus, generate_queries
    from kg_rageval.ontology import load_ontology

    onto = load_ontology(bundled_ontology(PROFILES["doid"].ontology))
    rng = np.random.default_rng(0)
    corpus = build_corpus(onto, rng)
    queries = [q["query"] for q in generate_queries(onto, corpus, rng, noun=PROFILES["doid"].noun)]
    system = DemoSystem(onto, corpus)
    links = system.link_many(queries)
    assert links == [system.linker.find(q) for q in queries] and sum(map(len, links)) > len(queries) // 2
    principal = {"tenant": "acme"}
    assert [system.answer(q, principal, lk) for q, lk in zip(queries, links)] == [
        system.answer(q, principal) for q in queries
    ]
