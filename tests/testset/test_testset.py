"""Ontology-driven test sets (kg_rageval.testset): every case's gold checked independently
through the ontology on the bundled ontologies, held-out copies against a rebuild, splits,
the planner against the closed form (scipy's normal quantiles), planted leakage, the manifest
and the CLI."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from collections import Counter

import numpy as np
import pytest

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.base.resources import bundled_ontology
from kg_rageval.cli.main import main
from kg_rageval.ontology import OntologyBuilder, load_ontology
from kg_rageval.testset import KINDS, build_testset, load_testset_config, without_leaves
from kg_rageval.testset import TestsetConfig as Config
from kg_rageval.testset import TestsetCorpus as Corpus
from kg_rageval.testset.check import check_leakage, labels_hash, verify_manifest_hash
from kg_rageval.testset.check import testset_manifest as make_manifest
from kg_rageval.testset.config import SETS, CheckConfig, PlanConfig
from kg_rageval.testset.plan import half_width, mde, n_for_delta, n_for_half_width, plan_testset
from kg_rageval.testset.split import record_sources, split_testset

BUNDLED = ["doid-cancer-slim.obo", "enterprise-attack-18.1.json.gz", "hcrt.ttl"]


def _corpus_docs(onto):
    from kg_rageval.demo.system import build_corpus

    return [
        {k: v for k, v in d.items() if k != "concept"}
        for d in build_corpus(onto, np.random.default_rng(0)).docs
    ]


@pytest.fixture(scope="module", params=BUNDLED)
def built(request):
    onto = load_ontology(bundled_ontology(request.param))
    docs = _corpus_docs(onto)
    corpus = Corpus.from_docs(docs, onto)
    result = build_testset(onto, corpus, Config(seed=3))
    return onto, docs, result


def _docs_about(docs, cid):
    return {d["id"] for d in docs if cid in d["categories"]}


def _rebuild_without(onto, held):
    """The ontology rebuilt from its public API without ``held`` (the independent reference)."""
    b = OntologyBuilder(onto.source)
    for i, nid in enumerate(onto.ids):
        if nid in held or (onto.virtual_root and i == 0):
            continue
        b.add_node(
            nid,
            label=onto.labels[i],
            synonyms=onto.synonyms[i],
            definition=onto.definitions[i],
            status=onto.status_of(nid),
            node_type=onto.node_types[i],
        )
    for c, p in onto.edges():
        if c in held or (onto.virtual_root and p == onto.ids[0]):
            continue
        b.add_edge(c, p)
    for nid in onto.ids:
        rep = onto.replacement(nid)
        if rep and nid not in held and rep not in held:
            b.add_node(nid, replaced_by=rep)
    for alias, t in zip(onto.alias_ids, onto.alias_targets.tolist()):
        if onto.ids[t] not in held:
            b.add_alias(alias, onto.ids[t])
    return b.build()


def test_every_case_is_what_its_kind_promises(built):
    onto, docs, res = built
    rel = onto.relation
    by_id = {r["id"]: r for r in res.records}
    copy = res.heldout_ontology
    kinds = Counter()
    for r in res.records:
        ts, kind = r["testset"], r["testset"]["kind"]
        kinds[kind] += 1
        assert r["slices"]["case_kind"] == kind and "intent" in r["slices"]
        gold = (r.get("labels") or {}).get("gold")
        gdocs = set(r["retrieval"]["gold"])
        q = r["query"]
        for m in (r.get("mentions") or {}).get("gold", []):  # every gold span names its concept
            if m["id"] is not None:
                i = onto.index(m["id"])
                names = {onto.labels[i].lower(), *(s.lower() for s in onto.synonyms[i])}
                assert q[m["start"] : m["end"]].lower() in names
        if kind in ("label_lookup", "synonym_lookup", "definition_lookup", "distractor", "counterfactual"):
            assert len(gold) == 1 and gdocs == _docs_about(docs, gold[0]) and r["reference"]["answerable"]
        if kind == "label_lookup":
            m = r["mentions"]["gold"][0]
            assert q[m["start"] : m["end"]] == onto.label(gold[0])
        elif kind == "synonym_lookup":
            assert ts["synonym"] in onto.synonyms[onto.index(gold[0])] and ts["synonym"] in q
        elif kind == "definition_lookup":
            assert onto.definitions[onto.index(gold[0])] and onto.label(gold[0]).lower() not in q.lower()
        elif kind == "sibling_contrast":
            assert rel(gold[0], ts["partner"]) == "sibling"
            assert _docs_about(docs, ts["partner"]) <= gdocs and _docs_about(docs, gold[0]) <= gdocs
        elif kind == "generalisation":
            c = ts["concepts"]["label"]
            assert gold and all(rel(c, g) == "parent" for g in gold)
            assert gdocs == set().union(*(_docs_about(docs, g) for g in gold))
        elif kind == "specialisation":
            c = ts["concepts"]["label"]
            assert gold and all(rel(c, g) == "child" for g in gold)
        elif kind == "counterfactual" and ts["role"] == "swapped":
            orig = by_id[ts["original"]]
            assert (
                orig["labels"]["gold"] == [ts["swapped_from"]] and orig["testset"]["session"] == ts["session"]
            )
            assert gold == [ts["concepts"]["label"]] and gold != [ts["swapped_from"]]  # the gold moved
            assert rel(ts["swapped_from"], gold[0]) == ts["swap_relation"] in ("sibling", "cousin")
            assert r["mentions"]["gold"][0]["id"] == gold[0]
        elif kind == "distractor":
            assert rel(gold[0], ts["near_miss"]) == ts["relation"] in ("sibling", "cousin")
            dd = set(ts["distractors"])
            assert dd and not dd & gdocs and dd <= _docs_about(docs, ts["near_miss"])
        elif kind == "nil_probe":
            cid = ts["held_out"]
            assert cid in onto and cid not in copy and "labels" not in r and not gdocs
            assert r["mentions"]["gold"][0]["id"] is None and r["reference"]["answerable"] is False
            near = ts["nearest"]
            assert near in copy and near in onto.parents(cid) and r["mentions"]["gold"][0]["nearest"] == near
            assert q[r["mentions"]["gold"][0]["start"] : r["mentions"]["gold"][0]["end"]] == onto.label(cid)
        elif kind in ("negation", "quantifier") and r["slices"].get("quantifier", "except") == "except":
            ex, par = ts["excluded"], ts["parent"]
            assert ex not in gold and all(rel(ex, g) == "sibling" and par in onto.parents(g) for g in gold)
            assert par in onto.parents(ex)
            assert {f["op"] for f in r["retrieval"]["gold_filters"]} == {"within", "not_in"}
        elif kind == "quantifier" and r["slices"]["quantifier"] == "only":
            c = gold[0]
            assert gdocs and all(next(d for d in docs if d["id"] == g)["categories"] == [c] for g in gdocs)
        elif kind == "quantifier" and r["slices"]["quantifier"] == "all":
            c = ts["concepts"]["label"]
            assert gold and all(onto.is_ancestor(c, g) for g in gold)
        elif kind == "out_of_scope":
            assert r["reference"]["answerable"] is False and not gdocs
            if gold:
                assert not _docs_about(docs, gold[0])
        elif kind == "multi_hop":
            assert len(gdocs) == 2 and set(ts["hops"]) == gdocs
            via = ts["via"]
            assert rel(via, gold[0]) == "parent"
            h1, h2 = ts["hops"]
            assert h1 in _docs_about(docs, via) and h2 in _docs_about(docs, gold[0])
    assert sum(res.produced.values()) == len(res.records)
    assert dict(kinds) == {k: v for k, v in res.produced.items() if v}
    # the bundled DO slim has every kind; ATT&CK no synonyms (its docs have none); the SKOS
    # vocabulary is flat (no siblings under a virtual root): those shortfalls are reported
    if onto.source.endswith("doid-cancer-slim.obo"):
        assert res.shortfall == {} and set(kinds) == set(KINDS)
    else:
        assert res.shortfall


def test_heldout_copy_equals_a_rebuild(built):
    onto, _docs, res = built
    held = set(res.held_out)
    if not held:  # the SKOS vocabulary is flat: no leaf has a real parent to be the nearest concept
        assert all(onto.parents(c) == [onto.root_id] for c in onto.ids[1:]) and onto.virtual_root
        assert res.produced["nil_probe"] == 0 and res.shortfall["nil_probe"] == 20
        return
    ref = _rebuild_without(onto, held)
    copy = res.heldout_ontology
    assert copy.ids == ref.ids or sorted(copy.ids) == sorted(ref.ids)
    assert copy.content_hash == ref.content_hash
    for nid in list(copy.ids)[:: max(1, len(copy) // 50)]:
        assert copy.ancestors(nid) == ref.ancestors(nid) and copy.depth(nid) == ref.depth(nid)
        assert sorted(copy.children(nid)) == sorted(ref.children(nid))


def test_heldout_rejects_inner_nodes(vehicles):
    with pytest.raises(InputError, match="has children"):
        without_leaves(vehicles, ["car"])
    small = without_leaves(vehicles, ["sedan", "submarine"])
    assert len(small) == len(vehicles) - 2 and small.children("boat") == ["amphibious_car"]
    assert set(small.parents("amphibious_car")) == {"car", "boat"} and small.children("car") != []
    assert "sedan" not in small and set(small.ancestors("amphibious_car")) == {"vehicle", "car", "boat"}


def test_deterministic_and_kinds_independent():
    onto = load_ontology(bundled_ontology("doid-cancer-slim.obo"))
    corpus = Corpus.from_docs(_corpus_docs(onto), onto)
    a = build_testset(onto, corpus, Config(seed=1)).records
    b = build_testset(onto, corpus, Config(seed=1)).records
    c = build_testset(onto, corpus, Config(seed=2)).records
    assert json.dumps(a) == json.dumps(b) and json.dumps(a) != json.dumps(c)
    counts = dict(Config().counts, multi_hop=0)
    d = build_testset(onto, corpus, Config(seed=1, counts=counts)).records

    def queries(recs, kind):
        return [r["query"] for r in recs if r["testset"]["kind"] == kind]

    assert queries(d, "label_lookup") == queries(a, "label_lookup") and not queries(d, "multi_hop")
    assert queries(d, "negation") == queries(a, "negation")


def test_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="unknown case kind"):
        load_testset_config(None, counts={"label_lookups": 3})
    p = tmp_path / "t.toml"
    p.write_text("sed = 1\n")
    with pytest.raises(ConfigError, match="sed"):
        load_testset_config(p)
    p.write_text("[split]\nproportions = {dev = 1.0}\n")
    with pytest.raises(ConfigError, match="unknown set"):
        load_testset_config(p)
    assert sum(Config().scaled(10_000).counts.values()) == 10_000


def test_unknown_category_names_the_line(tmp_path, vehicles):
    from kg_rageval.testset import read_testset_corpus

    p = tmp_path / "c.jsonl"
    p.write_text('{"id": "d1", "categories": ["car"]}\n{"id": "d2", "categories": ["carr"]}\n')
    with pytest.raises(InputError, match=r"line 2.*'carr' is not in the ontology"):
        read_testset_corpus(p, vehicles)
    c = read_testset_corpus(p, vehicles, unknown_categories="ignore")
    assert c.n_unknown_categories == 1 and c.docs_of(vehicles.index("car")).tolist() == [0]


# ------------------------------------------------------------------ paraphrase
def test_paraphrase_callable_relocates_mentions(tmp_path, monkeypatch):
    mod = tmp_path / "para_mod.py"
    mod.write_text(
        "def rewrite(text, *, seed, kind, prompt, model):\n"
        "    return 'Please tell me: ' + text if kind == 'label_lookup' else text\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    onto = load_ontology(bundled_ontology("doid-cancer-slim.obo"))
    corpus = Corpus.from_docs(_corpus_docs(onto), onto)
    cfg = Config(
        counts={"label_lookup": 5}, paraphrase={"callable": "para_mod:rewrite", "model": "m1", "seed": 7}
    )
    res = build_testset(onto, corpus, cfg)
    assert (
        res.paraphrase["n_changed"] == 5 and res.paraphrase["model"] == "m1" and res.paraphrase["seed"] == 7
    )
    for r in res.records:
        m = r["mentions"]["gold"][0]
        assert r["query"].startswith("Please tell me: ")
        assert r["query"][m["start"] : m["end"]] == onto.label(m["id"])
        assert r["testset"]["paraphrase"]["original"] == r["query"][len("Please tell me: ") :]
    man = make_manifest({"all": (tmp_path / "para_mod.py", res.records)})
    assert man["paraphrase"] == [
        {
            "generator": "para_mod:rewrite",
            "model": "m1",
            "records": 5,
            "seeds": [7, 11],
            "prompt_sha256": res.paraphrase["prompt_sha256"],
        }
    ]
    sys.modules.pop("para_mod", None)
    with pytest.raises(ConfigError, match="cannot import"):
        build_testset(onto, corpus, Config(counts={"label_lookup": 1}, paraphrase={"callable": "nope_x:f"}))


def test_paraphrase_keeps_mention_order():
    from kg_rageval.testset.config import ParaphraseConfig
    from kg_rageval.testset.paraphrase import Paraphraser

    rec = {
        "id": "x",
        "query": "How does chronic leukemia differ from leukemia?",
        "mentions": {"gold": [{"start": 9, "end": 25, "id": "A"}, {"start": 38, "end": 46, "id": "B"}]},
        "testset": {"kind": "sibling_contrast"},
    }
    para = Paraphraser(
        lambda t, **kw: "Compare chronic leukemia with leukemia, please.", name="t", cfg=ParaphraseConfig()
    )
    info = para.apply([rec])
    q = rec["query"]
    spans = [(q[m["start"] : m["end"]], m["id"]) for m in rec["mentions"]["gold"]]
    assert (
        spans == [("chronic leukemia", "A"), ("leukemia", "B")] and rec["mentions"]["gold"][1]["start"] == 30
    )
    rec2 = {
        "id": "y",
        "query": "What is sarcoma?",
        "mentions": {"gold": [{"start": 8, "end": 15, "id": "C"}]},
        "testset": {"kind": "label_lookup"},
    }
    info = Paraphraser(lambda t, **kw: "Explain that tumour type.", name="t", cfg=ParaphraseConfig()).apply(
        [rec2]
    )
    assert info["n_mentions_dropped"] == 1 and "mentions" not in rec2


def test_paraphrase_endpoint(monkeypatch):
    """An OpenAI-compatible endpoint (a local test server): prompt, model and seed are sent and
    recorded; the key comes from the environment and is sent as a bearer token only."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((self.path, self.headers.get("Authorization"), body))
            text = body["messages"][1]["content"]
            out = json.dumps(
                {"choices": [{"message": {"content": "Tell me, " + text[0].lower() + text[1:]}}]}
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(out.encode())

        def log_message(self, *a):
            pass

    srv = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    monkeypatch.setenv("TS_KEY", "s3cret")
    try:
        onto = load_ontology(bundled_ontology("doid-cancer-slim.obo"))
        corpus = Corpus.from_docs(_corpus_docs(onto), onto)
        cfg = Config(
            counts={"label_lookup": 3},
            paraphrase={
                "endpoint": f"http://127.0.0.1:{srv.server_port}/v1",
                "model": "para-1",
                "seed": 11,
                "api_key_env": "TS_KEY",
            },
        )
        res = build_testset(onto, corpus, cfg)
    finally:
        srv.shutdown()
    assert [s[0] for s in seen] == ["/v1/chat/completions"] * 3 and seen[0][1] == "Bearer s3cret"
    assert [s[2]["seed"] for s in seen] == [11, 12, 13] and seen[0][2]["model"] == "para-1"
    assert seen[0][2]["messages"][0]["content"] == cfg.paraphrase.prompt
    assert "s3cret" not in json.dumps(res.paraphrase) and "s3cret" not in json.dumps(res.records)
    for r in res.records:
        m = r["mentions"]["gold"][0]
        assert r["query"].startswith("Tell me, what is ") and r["query"][m["start"] : m["end"]] == onto.label(
            m["id"]
        )


# ------------------------------------------------------------------ split
@pytest.fixture(scope="module")
def doid_set():
    onto = load_ontology(bundled_ontology("doid-cancer-slim.obo"))
    docs = _corpus_docs(onto)
    res = build_testset(onto, Corpus.from_docs(docs, onto), Config())
    return onto, docs, res.records


def test_split_is_disjoint_by_source_and_session(doid_set):
    _onto, _docs, recs = doid_set
    props = {"development": 0.4, "calibration": 0.2, "release": 0.3, "monitoring": 0.1}
    sets = split_testset(recs, props, seed=0)
    assert sets == split_testset(recs, props, seed=0)
    ids = [r["id"] for s in SETS for r in sets[s]]
    assert sorted(ids) == sorted(r["id"] for r in recs)
    src = {s: {x for r in sets[s] for x in record_sources(r)} for s in SETS}
    ses = {s: {r["testset"].get("session") for r in sets[s]} - {None} for s in SETS}
    for a in SETS:
        for b in SETS:
            if a < b:
                assert not src[a] & src[b] and not ses[a] & ses[b]
    for s in SETS:
        assert abs(len(sets[s]) / len(recs) - props[s]) < 0.03
    # a session ties records with no shared document into one set
    pair = [r for r in recs if r["testset"].get("session") == "counterfactual-00001"]
    assert len(pair) == 2 and len({s for s in SETS for r in sets[s] if r in pair}) == 1


def test_split_groups_through_chains():
    recs = [
        {"id": "a", "testset": {"sources": ["s1"]}},
        {"id": "b", "testset": {"sources": ["s1", "s2"]}},
        {"id": "c", "testset": {"sources": ["s2"]}},
        {"id": "d", "retrieval": {"gold": {"x": 1}}},
        {"id": "e", "retrieval": {"gold": ["y"]}, "session": "t"},
        {"id": "f", "slices": {"session": "t"}},
    ]
    sets = split_testset(recs, {"development": 0.5, "release": 0.5}, seed=4, source_of={"x": "s3"})
    where = {r["id"]: s for s in SETS for r in sets[s]}
    assert where["a"] == where["b"] == where["c"] and where["e"] == where["f"]
    assert set(where.values()) <= {"development", "release"} and len(sets["calibration"]) == 0


# ------------------------------------------------------------------ planner
def test_planner_equals_closed_form(doid_set):
    from scipy.stats import norm

    z = norm.ppf(0.975)
    assert (
        half_width(200, 0.8) == pytest.approx(z * math.sqrt(0.16 / 200))
        and round(half_width(200, 0.8), 4) == 0.0554
    )
    assert n_for_half_width(0.055, 0.8) == math.ceil(z**2 * 0.16 / 0.055**2) == 204
    zz = norm.ppf(0.975) + norm.ppf(0.8)
    assert n_for_delta(0.05, 0.8, rho=0.5) == math.ceil(zz**2 * 2 * 0.16 * 0.5 / 0.05**2) == 503
    assert mde(400, 0.7, rho=0.3) == pytest.approx(zz * math.sqrt(2 * 0.21 * 0.7 / 400))
    onto, docs, recs = doid_set
    cfg = PlanConfig(p=0.7, half_width=0.1, delta=0.1, rho=0.2, branch_depth=1)
    plan = plan_testset(recs, onto, cfg, corpus=docs)
    need = math.ceil(z**2 * 0.21 / 0.01)
    assert plan["targets"]["n_needed_ci"] == need == 81
    assert plan["targets"]["n_needed_delta"] == math.ceil(zz**2 * 2 * 0.21 * 0.8 / 0.01)
    rows = {(r["group"], r["value"]): r for r in plan["rows"]}
    n_intent = Counter(r["slices"]["intent"] for r in recs)
    for intent, n in n_intent.items():
        row = rows[("slice:intent", intent)]
        assert row["n"] == n and row["half_width"] == pytest.approx(z * math.sqrt(0.21 / n))
        assert row["decides_ci"] == (n >= need) and row["short_ci"] == max(0, need - n)
    # branches: the gold node's depth-1 ancestor, counted independently
    from kg_rageval.audit.pernode import gold_node_of

    def branch(r):
        g = gold_node_of(r)
        if g is None:
            return "(no gold node)"
        anc = [a for a in onto.ancestors(g, include_self=True) if onto.depth(a) == 1]
        return min(anc, key=onto.index) if anc else g

    for b, n in Counter(branch(r) for r in recs).items():
        assert rows[("branch", b)]["n"] == n
    assert rows[("all", "all")]["n"] == len(recs) and plan["coverage"]["n_empty"] > 0


# ------------------------------------------------------------------ leakage + manifest
def test_leakage_finds_planted_duplicates(doid_set):
    pytest.importorskip("datasketch", reason="near-duplicate detection needs the testset extra")
    _onto, _docs, recs = doid_set
    sets = split_testset(recs, {"development": 0.5, "release": 0.5}, seed=0)
    clean = check_leakage({"development": sets["development"], "release": sets["release"]})
    assert clean["leaks"] == 0
    dev = [dict(r) for r in sets["development"]]
    rel = [dict(r) for r in sets["release"]]
    base = next(r for r in dev if r["testset"]["kind"] == "definition_lookup")
    near = next(r for r in dev if r["testset"]["kind"] == "definition_lookup" and r is not base)
    # exact duplicate (case and punctuation differ), near duplicate (one word changed), shared source
    rel.append(
        {
            "id": "planted-exact",
            "query": base["query"].upper().replace("?", " ?!"),
            "testset": {"sources": []},
        }
    )
    rel.append(
        {
            "id": "planted-near",
            "query": near["query"].replace("Which concept is", "Which concept was"),
            "testset": {"sources": []},
        }
    )
    rel.append(
        {
            "id": "planted-src",
            "query": "An unrelated question about soup?",
            "testset": {"sources": [base["testset"]["sources"][0]]},
        }
    )
    rep = check_leakage({"development": dev, "release": rel}, CheckConfig(threshold=0.8))
    assert rep["exact_duplicates"]["count"] == 1
    assert rep["exact_duplicates"]["examples"][0]["records"] == [
        ["development", base["id"]],
        ["release", "planted-exact"],
    ]
    assert rep["shared_sources"]["count"] == 1
    pairs = {(e["a"][1], e["b"][1]) for e in rep["near_duplicates"]["examples"]}
    assert (near["id"], "planted-near") in pairs and rep["near_duplicates"]["count"] == 1
    assert rep["leaks"] == 3


def test_manifest_hashes(tmp_path, doid_set):
    onto, _docs, recs = doid_set
    from kg_rageval.records import write_records

    p = tmp_path / "release.jsonl"
    write_records(p, recs, sort_keys=True)
    m = make_manifest({"release": (p, recs)}, ontology=onto, policy={"seed": 0})
    assert verify_manifest_hash(m) and m["ontology"]["content_hash"] == onto.content_hash
    assert m["sets"]["release"]["labels_sha256"] == labels_hash(recs)
    changed = [dict(r) for r in recs]
    changed[0] = {**changed[0], "labels": {"gold": ["DOID:162"]}}
    assert labels_hash(changed) != labels_hash(recs)
    assert labels_hash(list(reversed(recs))) == labels_hash(recs)  # order-independent
    m2 = make_manifest({"release": (p, recs)}, ontology=onto, policy={"seed": 1})
    assert m2["policy"]["sha256"] != m["policy"]["sha256"] and m2["hash"] != m["hash"]
    assert not verify_manifest_hash({**m, "labels_sha256": "sha256:0"})


# ------------------------------------------------------------------ CLI
def test_cli_build_plan_split_check(tmp_path, capsys):
    from kg_rageval.records import write_records

    onto_path = bundled_ontology("doid-cancer-slim.obo")
    onto = load_ontology(onto_path)
    write_records(tmp_path / "docs.jsonl", _corpus_docs(onto))
    out = tmp_path / "ts"
    args = ["-O", str(onto_path), "--corpus", str(tmp_path / "docs.jsonl")]
    assert main(["testset", "build", *args, "--out", str(out), "--n", "120", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["n_records"] == 120 == sum(payload["produced"].values())
    man = json.loads((out / "testset-manifest.json").read_text())
    assert man["hash"] == payload["manifest_hash"] and verify_manifest_hash(man)
    assert (
        load_ontology(out / "ontology-heldout.kgro").content_hash == man["heldout_ontology"]["content_hash"]
    )
    assert (
        main(["testset", "plan", *args[:2], "--records", str(out / "records.jsonl"), "--format", "json"]) == 0
    )
    plan = json.loads(capsys.readouterr().out)
    assert plan["rows"][0] == {**plan["rows"][0], "group": "all", "n": 120}
    assert (
        main(["testset", "split", "--records", str(out / "records.jsonl"), "--out", str(out / "sets")]) == 0
    )
    capsys.readouterr()
    if importlib.util.find_spec("datasketch") is None:  # a core install: refused, naming the extra
        assert main(["testset", "check", str(out / "sets"), *args, "--format", "json"]) == 2
        assert "needs datasketch: pip install 'kg-rageval[testset]'" in capsys.readouterr().err
        pytest.skip("testset check's near-duplicate detection needs the testset extra (datasketch)")
    assert main(["testset", "check", str(out / "sets"), *args, "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["leaks"] == 0 and (out / "sets" / "testset-manifest.json").exists()
    # a planted duplicate: exit 1
    dev = (out / "sets" / "development.jsonl").read_text().splitlines()
    first = json.loads(dev[0])
    with open(out / "sets" / "release.jsonl", "a") as fh:
        fh.write(json.dumps({"id": "dup", "query": first["query"]}) + "\n")
    assert main(["testset", "check", str(out / "sets")]) == 1
    assert "LEAKAGE" in capsys.readouterr().out
    assert main(["testset", "build", *args, "--out", str(out), "--config", str(tmp_path / "docs.jsonl")]) == 2
    assert "unknown test-set config file type" in capsys.readouterr().err
    assert (
        main(["testset", "plan", *args[:2], "--records", str(out / "records.jsonl"), "--half-width", "1"])
        == 2
    )
    assert "half_width" in capsys.readouterr().err


@pytest.mark.slow
def test_audit_cites_the_testset_manifest(tmp_path):
    from kg_rageval.audit.config import load_config
    from kg_rageval.audit.runner import run_audit
    from kg_rageval.demo import build_demo
    from kg_rageval.records import read_records
    from kg_rageval.testset.store import write_json

    built = build_demo(tmp_path / "demo", bootstrap=20)
    out = built["out"]
    recs = read_records(out / "records.jsonl")
    man = make_manifest({"release": (out / "records.jsonl", recs)}, policy={"seed": 0})
    write_json(out / "testset-manifest.json", man)
    with open(built["config"], "a", encoding="utf-8") as fh:
        fh.write("testset_manifest: testset-manifest.json\n")
    result = run_audit(load_config(built["config"]))
    cited = result.manifest["testset"]
    assert (
        cited["hash"] == man["hash"]
        and cited["sha256"] == result.manifest["inputs"]["testset_manifest"]["hash"]
    )
    assert cited["verified"] is True and cited["labels_sha256"] == man["labels_sha256"] == labels_hash(recs)
    assert cited["labels_set"] == "set 'release'" and cited["records"] == len(recs)
    assert {r.gate.metric: r.status for r in result.gate_results}["testset_manifest.verified"] == "pass"
