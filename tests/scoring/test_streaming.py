"""Streaming a records file through a family in chunks (``BoundScorer.score_path``) equals
scoring the whole file at once: rows, stats, keys, details, unscored records and their codes,
meta, metrics, the JSON of the evaluation and of the ``score`` commands, and the errors (file,
line, field, counts of places) — for every registered family, at tiny chunk sizes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from family_demo import family_inputs
from stream_helpers import (  # noqa: F401 (shared with other tests)
    FIXTURES,
    _assert_same,
    _json,
    _provenance_runs,
    _write,
    demo,
)

from kg_rageval.base.errors import InputError, KgRagevalError, MissingEvidence
from kg_rageval.cli.main import main
from kg_rageval.results.evaluation import Evaluation, concat_evaluations
from kg_rageval.results.evaluation_set import EvaluationSet
from kg_rageval.scoring import REGISTRY, get_scorer


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_chunked_equals_whole_for_every_family(name, demo, family_calls):
    bound = get_scorer(name).bind(demo["ontology"], **family_inputs(name, demo))
    try:
        whole = bound.score_whole(demo["path"])
    except KgRagevalError as exc:  # a family without evidence in the demo raises the same error
        with pytest.raises(type(exc)) as got:
            bound(demo["path"], chunk_size=3)
        assert str(got.value) == str(exc)
        return
    n_records = sum(1 for _ in open(demo["path"]))
    for size in (3, 7, 64):
        family_calls["calls"] = 0
        _assert_same(bound(demo["path"], chunk_size=size), whole)
        if get_scorer(name).streamable:  # it really streamed
            assert family_calls["calls"] >= -(-n_records // size), (name, size)
        else:
            assert family_calls["calls"] == 1


def test_streamable_families_are_declared():
    """The families whose result depends on several records at once take the whole list."""
    assert {n for n, sc in REGISTRY.items() if sc.streamable} == {
        "hierarchy",
        "linking",
        "relations",
        "context",
        "retrieval",
        "conformance",
        "generation",
        "provenance",
        "iterative",
        "parsing",
        "consistency",
        "routing",
        "nuggets",
        "chunking",
        "extraction",
    }


def test_chunked_scoring_keeps_the_whole_file_key_order(demo):
    res = get_scorer("hierarchy").score(demo["ontology"], demo["path"], chunk_size=5).single
    assert list(res.keys)[:1] == ["gold_node"]
    assert [k for k in res.keys if k.startswith("slice:")] == sorted(
        k for k in res.keys if k.startswith("slice:")
    )
    assert "slice:late" in res.keys and "slice:aaa" in res.keys
    rel = get_scorer("relations").score(demo["ontology"], demo["path"], chunk_size=5).single
    assert list(rel.keys)[-1] == "gold_node"  # relations writes its slices first


# ---------------------------------------------------------------------- bundled fixtures
@pytest.mark.parametrize(
    "family,onto,data,opts",
    [
        ("hierarchy", "hierarchy/vehicles.obo", "hierarchy/records.jsonl", {}),
        (
            "hierarchy",
            "hierarchy/vehicles.obo",
            "hierarchy/records_issues.jsonl",
            {"on_unknown_gold": "count"},
        ),
        ("hierarchy", "audit/vehicles.csv", "audit/records.jsonl", {}),
        ("linking", "linking/vehicles.tsv", "linking/records.jsonl", {}),
        ("linking", "linking/vehicles.tsv", "linking/records.jsonl", {"overlap": True}),
        ("linking", "audit/vehicles.csv", "audit/records.jsonl", {}),
        ("relations", "audit/vehicles.csv", "audit/records.jsonl", {}),
    ],
)
def test_chunked_equals_whole_on_fixtures(family, onto, data, opts):
    from kg_rageval.ontology import load_ontology

    o = load_ontology(FIXTURES / onto)
    bound = get_scorer(family).bind(o, **opts)
    path = FIXTURES / data
    try:
        whole = bound.score_whole(path)
    except KgRagevalError as exc:
        with pytest.raises(type(exc)) as got:
            bound(path, chunk_size=1)
        assert str(got.value) == str(exc)
        return
    for size in (1, 2, 3):
        _assert_same(bound(path, chunk_size=size), whole)


@pytest.mark.parametrize(
    "family,extra", [("hierarchy", ["--on-unknown-gold", "count"]), ("linking", ["--breakdown", "outcome"])]
)
def test_score_command_json_does_not_depend_on_the_chunk_size(family, extra, demo, capsys):
    base = [
        "score",
        family,
        "--ontology",
        str(demo["dir"] / "doid-cancer-slim.obo"),
        "--data",
        str(demo["path"]),
        "--format",
        "json",
        "--rows",
        "--ci",
        "20",
        *extra,
    ]
    assert main(base) == 0
    whole = capsys.readouterr().out
    assert main(base + ["--chunk-size", "3"]) == 0
    assert capsys.readouterr().out == whole
    payload = json.loads(whole)
    assert payload["counts"]["records"] == sum(1 for _ in open(demo["path"]))


# ---------------------------------------------------------------------- errors and edge cases
def _vehicles():
    from kg_rageval.ontology import load_ontology

    return load_ontology(FIXTURES / "hierarchy/vehicles.obo")


def _lab(i: int, gold="VH:sedan", pred="VH:car") -> dict:
    return {"id": f"q{i}", "labels": {"gold": [gold], "pred": [pred]}}


def _same_outcome(bound, path, size: int = 3):
    """The streamed call and the whole-file call give the same result or the same error."""
    try:
        want = bound.score_whole(path)
    except KgRagevalError as exc:
        with pytest.raises(type(exc)) as got:
            bound(path, chunk_size=size)
        assert str(got.value) == str(exc)
        return str(exc)
    _assert_same(bound(path, chunk_size=size), want)
    return want


def test_unknown_ids_error_counts_every_place_in_the_file(tmp_path):
    recs = [_lab(i) for i in range(12)]
    for i in (2, 5, 10):
        recs[i] = _lab(i, gold=f"VH:ghost{i}")
    msg = _same_outcome(get_scorer("hierarchy").bind(_vehicles()), _write(tmp_path, recs))
    assert "r.jsonl, record 'q2' (line 3), field labels.gold[0]" in msg and "and 2 more places" in msg
    assert "'VH:ghost10'" in msg


def test_first_malformed_record_in_the_file_wins_over_an_earlier_unknown_id(tmp_path):
    recs = [_lab(i) for i in range(12)]
    recs[1] = _lab(1, gold="VH:ghost")
    recs[9] = {"id": "q9", "labels": {"gold": [3], "pred": ["VH:car"]}}
    msg = _same_outcome(get_scorer("hierarchy").bind(_vehicles()), _write(tmp_path, recs))
    assert "record 'q9' (line 10), field labels.gold" in msg


def test_linking_span_error_names_file_and_line(tmp_path):
    recs = [
        {
            "id": f"m{i}",
            "text": "a sedan and a car",
            "mentions": {
                "gold": [{"start": 2, "end": 7, "id": "VH:sedan"}],
                "pred": [{"start": 2, "end": 7, "id": "VH:car"}],
            },
        }
        for i in range(10)
    ]
    recs[7]["mentions"]["pred"][0]["end"] = 99
    msg = _same_outcome(get_scorer("linking").bind(_vehicles()), _write(tmp_path, recs))
    assert "r.jsonl, record 'm7' (line 8), field mentions.pred[0]" in msg


def test_reading_errors_are_the_whole_file_reader_errors(tmp_path):
    bound = get_scorer("hierarchy").bind(_vehicles())
    dup = [_lab(i) for i in range(8)] + [_lab(1)]
    assert "duplicate record id 'q1' (first on line 2)" in _same_outcome(
        bound, _write(tmp_path, dup, "d.jsonl")
    )
    bad = [_lab(i) for i in range(6)] + ["{not json"]
    assert "line 7" in _same_outcome(bound, _write(tmp_path, bad, "b.jsonl"))
    with pytest.raises(InputError, match="no records to score"):
        bound(_write(tmp_path, [], "e.jsonl"), chunk_size=2)


def test_chunks_without_evidence_join_their_neighbours(tmp_path):
    bound = get_scorer("hierarchy").bind(_vehicles())
    bare = [{"id": f"n{i}"} for i in range(20)]
    labelled = [_lab(i) for i in range(4)]
    for recs in (bare[:7] + labelled + bare[7:], labelled + bare, bare + labelled, labelled[:1] + bare):
        res = _same_outcome(bound, _write(tmp_path, recs), size=3)
        assert res.single.unscored_counts == {"no labels section": 20}
        assert [u["code"] for u in res.single.unscored] == ["no_section"] * 20
    with pytest.raises(MissingEvidence, match="none of the 20 records"):
        bound(_write(tmp_path, bare), chunk_size=3)


def test_chunk_size_must_be_positive(tmp_path):
    from kg_rageval.base.errors import ConfigError

    path = _write(tmp_path, [_lab(1)])
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ConfigError, match="chunk_size must be a positive integer"):
            get_scorer("hierarchy").score(_vehicles(), path, chunk_size=bad)


# ---------------------------------------------------------------------- concatenation
def test_concat_equals_the_pairwise_fold_and_combines_meta():
    o = _vehicles()
    recs = [
        {
            "id": f"q{i}",
            "labels": {"gold": ["VH:sedan"], "pred": ["VH:saloon" if i % 3 else "VH:car"]},
            **({"slices": {"s1": "a"}} if i < 4 else {"slices": {"s0": "b"}}),
        }
        for i in range(9)
    ]
    from kg_rageval.families.hierarchy import score_hierarchy

    o_aliases = o
    parts = [score_hierarchy(o_aliases, recs[a:b], on_status="replace") for a, b in ((0, 2), (2, 6), (6, 9))]
    whole = score_hierarchy(o_aliases, recs, on_status="replace")
    fold = parts[0].merge(parts[1]).merge(parts[2])
    cat = concat_evaluations(parts)
    for got in (fold, cat):
        assert list(got.keys) == list(whole.keys) == ["gold_node", "slice:s0", "slice:s1"]
        assert got.meta == whole.meta
        assert got.to_dict() == whole.to_dict()
    assert isinstance(cat, Evaluation)


# ---------------------------------------------------------------------- against the outputs before streaming
GOLDEN = Path(__file__).resolve().parents[1] / "golden_stream"
_GOLDEN_CASES = {  # tests/golden_stream/<name>: the output of `main` before streaming (commit 299cca2; linking gained
    # the additive metric wrong_link_inactive and the stat rel_inactive since)
    "hierarchy_records.json": "score hierarchy --ontology fixtures/hierarchy/vehicles.obo --data "
    "fixtures/hierarchy/records.jsonl --format json --rows --ci 30",
    "hierarchy_issues_count.json": "score hierarchy --ontology fixtures/hierarchy/vehicles.obo --data "
    "fixtures/hierarchy/records_issues.jsonl --format json --rows --on-unknown-gold count",
    "hierarchy_audit.txt": "score hierarchy --ontology fixtures/audit/vehicles.csv --data fixtures/audit/records.jsonl "
    "--format text",
    "linking_records.json": "score linking --ontology fixtures/linking/vehicles.tsv --data fixtures/linking/records.jsonl "
    "--format json --rows --ci 30",
    "linking_records_overlap.json": "score linking --ontology fixtures/linking/vehicles.tsv --data "
    "fixtures/linking/records.jsonl --format json --rows --overlap",
    "linking_audit.json": "score linking --ontology fixtures/audit/vehicles.csv --data fixtures/audit/records.jsonl "
    "--format json --rows --breakdown outcome",
    "linking_audit.txt": "score linking --ontology fixtures/audit/vehicles.csv --data fixtures/audit/records.jsonl "
    "--format text --breakdown branch",
}


@pytest.mark.parametrize("name", sorted(_GOLDEN_CASES))
@pytest.mark.parametrize("chunk", [None, 2])
def test_output_is_byte_identical_to_before_streaming(name, chunk, monkeypatch, capsys):
    monkeypatch.chdir(FIXTURES.parent)
    args = _GOLDEN_CASES[name].split() + ([] if chunk is None else ["--chunk-size", str(chunk)])
    assert main(args) == 0
    assert capsys.readouterr().out == (GOLDEN / name).read_text()


def test_confidence_sweep_equals_per_threshold_masks():
    """The suffix-sum sweep equals counting the kept predictions at each threshold."""
    from kg_rageval.families.linking import confidence_sweep
    from kg_rageval.families.linking.evaluate import score_linking
    from kg_rageval.ontology import load_ontology
    from kg_rageval.records import read_records

    ev = score_linking(
        load_ontology(FIXTURES / "linking/vehicles.tsv"), read_records(FIXTURES / "linking/records.jsonl")
    )
    st = ev.stats
    sc = np.asarray([np.nan if s is None else s for s in ev.details["pred_score"]], dtype=float)
    has_p = st["n_pred"] > 0
    for t_list in (None, [0.0, 0.3, 0.55, 0.9, 5.0]):
        got = confidence_sweep(ev, t_list)
        ts = t_list or np.unique(sc[has_p]).tolist()
        assert [g["threshold"] for g in got] == ts
        for g, t in zip(got, ts):
            keep = has_p & (sc >= t)
            assert g["n_pred"] == int(keep.sum())
            tp, npd = float(st["all_tp"][keep].sum()), float(st["n_pred"][keep].sum())
            assert g["strong_all_match_precision"] == (tp / npd if npd else None)
            assert g["strong_all_match_recall"] == tp / float(st["n_gold"].sum())


def test_concatenation_equals_concat_evaluations():
    """The growing-column accumulator of the streaming path equals the one-shot concatenation
    (columns first seen later, dtype promotion bool -> float -> object, meta)."""
    from kg_rageval.families.hierarchy import score_hierarchy
    from kg_rageval.results.concatenation import Concatenation

    o = _vehicles()
    recs = [
        {
            "id": f"q{i}",
            "labels": {"gold": ["VH:sedan"], "pred": ["VH:saloon" if i % 3 else "VH:car"]},
            "slices": {f"s{i // 4}": i % 2},
        }
        for i in range(13)
    ]
    parts = [score_hierarchy(o, recs[a:b], on_status="replace") for a, b in ((0, 1), (1, 6), (6, 13))]
    parts[1].stats["items"] = parts[1].stats["items"].astype(float)  # bool then float pieces
    parts[2].details["wup"] = parts[2].details["wup"].astype(object)
    acc = Concatenation()
    for p in parts:
        acc.add(p)
    got, want = acc.result(), concat_evaluations(parts)
    assert list(got.keys) == list(want.keys) and got.meta == want.meta
    for g in ("stats", "keys", "details"):
        for k, v in getattr(want, g).items():
            assert getattr(got, g)[k].dtype == v.dtype and getattr(got, g)[k].tolist() == v.tolist(), (g, k)
    assert got.to_dict() == want.to_dict() == score_hierarchy(o, recs, on_status="replace").to_dict()


# ---------------------------------------------------------------------- provenance: the per-run members


@pytest.mark.slow
def test_provenance_streams_repeats_manifests_and_trail(demo, tmp_path, family_calls):
    """Chunked == whole with every per-run member: reproducibility rows repeat by repeat and
    its extra_in_repeat, one copy of the manifest rows, the trail's Turtle (byte for byte),
    triples, violations and messages; the repeat files are read once, when bound."""
    from kg_rageval.families.provenance.trail_parts import TrailText

    bound = get_scorer("provenance").bind(
        demo["ontology"], corpus=demo["inputs"]["corpus"], **_provenance_runs(demo, tmp_path)
    )
    whole = bound.score_whole(demo["path"])
    assert list(whole) == ["citations", "provenance_depth", "reproducibility", "run_manifests", "prov_trail"]
    rep = whole["reproducibility"]
    assert rep.details["repeat"].tolist() == sorted(rep.details["repeat"].tolist())
    assert rep.meta == {"repeats": 2, "extra_in_repeat": 4}
    assert {u["repeat"] for u in rep.unscored} == {1, 2}
    assert len(whole["run_manifests"]) == 2
    trail = whole["prov_trail"].meta
    assert isinstance(trail["turtle"], TrailText) and trail["triples"] > 5 * len(rep.unscored)
    n_records = sum(1 for _ in open(demo["path"]))
    for size in (1, 3, 7, 64):
        family_calls["calls"] = 0
        got = bound(demo["path"], chunk_size=size)
        assert family_calls["calls"] == -(-n_records // size)
        _assert_same(got, whole)
        t = got["prov_trail"].meta
        assert str(t["turtle"]) == str(trail["turtle"])  # the bytes prov.ttl gets
        assert (t["triples"], t["violations"], t["messages"]) == (
            trail["triples"],
            trail["violations"],
            trail["messages"],
        )


def test_provenance_partitions_fold_pairwise_to_the_whole(demo, tmp_path):
    """Evaluation.merge folded left to right, and concat_evaluations of parts cut anywhere,
    equal one call (the merge hooks are associative)."""
    from kg_rageval.records import read_records

    bound = get_scorer("provenance").bind(
        demo["ontology"], corpus=demo["inputs"]["corpus"], **_provenance_runs(demo, tmp_path)
    )
    recs = read_records(demo["path"])
    whole = bound(recs)
    cuts = [0, 5, 6, 90, 91, 250, len(recs)]
    parts = [bound(recs[a:b]) for a, b in zip(cuts, cuts[1:])]
    for m in whole:
        fold = parts[0][m]
        for p in parts[1:]:
            fold = fold.merge(p[m])
        for got in (fold, concat_evaluations([p[m] for p in parts])):
            _assert_same(EvaluationSet("provenance", {m: got}), EvaluationSet("provenance", {m: whole[m]}))


def test_trail_turtle_is_identical_chunked_and_whole(tmp_path):
    """The trail Turtle of a streamed file equals the one-call trail, and rdflib reads the
    same graph from it as from export_prov; with more than 50 violations (answers citing
    nothing, documents without a stable source id, a manifest lacking fields) the messages are
    the 50 smallest of all, the counts those of the whole trail."""
    from rdflib import Graph
    from rdflib.compare import isomorphic

    from kg_rageval.base.spool import write_text
    from kg_rageval.families.provenance import export_prov, read_corpus
    from kg_rageval.families.provenance.trail_parts import SpooledTrail
    from kg_rageval.records import read_records

    docs = [
        {"id": f"d{k}", **({"source_id": f"src-{k}"} if k % 3 else {"source_id": "ab" * 16})}
        for k in range(9)
    ]
    corpus = _write(tmp_path, docs, "corpus.jsonl")
    recs = []
    for i in range(200):
        cites = [f"d{(i * j) % 9}" for j in range(1, 1 + i % 3)] + (["ghost"] if i % 17 == 0 else [])
        recs.append(
            {
                "id": f"q {i}/x" if i % 11 == 0 else f"q{i}",
                "answer": {
                    "text": f"Answer {i} [1]." if cites else f"Answer {i}.",
                    "citations": cites,
                    **({"refused": True} if i % 13 == 0 else {}),
                },
            }
        )
    recs.insert(40, {"id": "no-answer"})
    path = _write(tmp_path, recs, "r.jsonl")
    man = tmp_path / "m.json"
    man.write_text(json.dumps({"run_id": "run x", "model": {"name": "m"}, "seed": 3}))
    bound = get_scorer("provenance").bind(_vehicles(), corpus=str(corpus), manifests=[str(man)])
    whole = bound.score_whole(path)
    meta = whole["prov_trail"].meta
    assert meta["violations"] > 50 and len(meta["messages"]) == 50 and not meta["conforms"]
    graph = export_prov(read_records(path), manifest=json.loads(man.read_text()), corpus=read_corpus(corpus))
    assert isomorphic(Graph().parse(data=str(meta["turtle"]), format="turtle"), graph)
    assert meta["triples"] == len(graph)
    for size in (1, 2, 3, 7, 50):
        got = bound(path, chunk_size=size)
        _assert_same(got, whole)
        out = tmp_path / f"prov{size}.ttl"
        turtle = got["prov_trail"].meta["turtle"]
        # two or more chunks: the answer blocks wait in one temporary file, never held
        assert isinstance(turtle, SpooledTrail) and len(turtle.head) < len(str(meta["turtle"])) // 2
        write_text(turtle, out)
        assert out.read_bytes() == str(meta["turtle"]).encode() == str(turtle).encode()
        assert turtle == meta["turtle"] and meta["turtle"] == turtle


def test_trail_text_pickles_with_its_parts():
    """Dask sends partition results between processes: the text keeps its parts."""
    import pickle

    from kg_rageval.families.provenance.trail import build_trail, trail_violations
    from kg_rageval.families.provenance.trail_parts import TrailText, join_trails, trail_text

    recs = [{"id": f"a{i}", "answer": {"text": "t", "citations": [f"d{i % 2}"]}} for i in range(4)]
    texts = [trail_text(t, trail_violations(t)) for t in (build_trail(recs[:2]), build_trail(recs[2:]))]
    back = [pickle.loads(pickle.dumps(t)) for t in texts]
    assert all(isinstance(b, TrailText) and b.parts == t.parts for b, t in zip(back, texts))
    whole = build_trail(recs)
    assert join_trails(back) == trail_text(whole, trail_violations(whole))


def test_spooled_trails_join_into_one_segment_of_their_spool(tmp_path):
    """Partitions' answer blocks (non-ASCII text among them) spooled one after the other join
    into the head and one segment of the spool, equal to the held join and the one-call trail;
    a spooled trail pickles as its text, and JSON gets the text; a held partition among spooled
    ones joins in memory, the same text."""
    import pickle

    from kg_rageval.base.spool import Spool, write_text
    from kg_rageval.families.provenance.trail import build_trail, trail_violations
    from kg_rageval.families.provenance.trail_parts import (
        SpooledTrail,
        TrailText,
        join_trails,
        spool_trail,
        trail_text,
    )
    from kg_rageval.results.jsonsafe import _jsonable

    recs = [
        {"id": f"a{i}", "answer": {"text": f"réponse {i} — ok", "citations": [f"d{i % 3}"]}} for i in range(9)
    ]
    parts = [recs[:2], recs[2:3], recs[3:7], recs[7:]]
    texts = [trail_text(t, trail_violations(t)) for t in map(build_trail, parts)]
    whole = build_trail(recs)
    one = trail_text(whole, trail_violations(whole))
    spool = Spool()
    spooled = [spool_trail(t, spool) for t in texts]
    assert all(isinstance(t, SpooledTrail) and t == h for t, h in zip(spooled, texts))
    assert spool.size == sum(len(t[t.parts.answers_at - 1 :].encode()) for t in texts)
    joined = join_trails(spooled)
    assert isinstance(joined, SpooledTrail) and (joined.start, joined.end) == (0, spool.size)
    assert joined == one == join_trails(texts) and joined.parts == join_trails(texts).parts
    back = pickle.loads(pickle.dumps(joined))
    assert type(back) is TrailText and back == one and back.parts == joined.parts
    assert _jsonable({"turtle": joined}, "meta") == {"turtle": str(one)}
    mixed = join_trails([spooled[0], texts[1], spooled[2], spooled[3]])
    assert type(mixed) is TrailText and mixed == one
    out = tmp_path / "t.ttl"
    write_text(joined, out)
    assert out.read_bytes() == str(one).encode("utf-8")
    empty = trail_text(build_trail([]), [])  # no answers: nothing to spool
    assert spool_trail(empty, spool) is empty


@pytest.mark.parametrize(
    "recs,where",
    [
        (
            [
                {"id": "r0", "answer": {"text": "x [1].", "citations": ["d1"]}},
                {"id": "r1", "answer": {"refused": True, "claims": "bad"}},
                {"id": "r2", "answer": {"text": "y", "citations": "bad"}},
            ],
            "record 'r2' (line 3), field answer.citations",
        ),
        (
            [
                {"id": "r0", "answer": {"refused": True, "claims": [{"text": "a"}], "text": 5}},
                {"id": "r1", "answer": {"text": "ok"}},
            ],
            "record 'r0' (line 1), field answer.text",
        ),
    ],
)
def test_provenance_errors_are_the_whole_file_errors(recs, where, tmp_path):
    """The citations member reads every record first; a refusal's claims are read after it
    (by the depth and trail members), so the first error is the whole-file one in every chunking."""
    corpus = _write(tmp_path, [{"id": "d1", "source_id": "s1"}], "corpus.jsonl")
    bound = get_scorer("provenance").bind(_vehicles(), corpus=str(corpus))
    path = _write(tmp_path, recs + [{"id": f"ok{i}", "answer": {"text": "z"}} for i in range(5)])
    for size in (1, 2):
        assert where in _same_outcome(bound, path, size=size)


# ---------------------------------------------------------------------- conformance and generation
def _aliases_onto():
    from kg_rageval.ontology import load_ontology

    return load_ontology(FIXTURES / "ontology/aliases.obo")


def test_conformance_meta_counts_of_some_chunks_stand_where_the_whole_call_writes_them(tmp_path):
    """Aliased and replaced output ids in a few chunks only: the summed counts, and their place
    before ``vocabularies`` (the key order of the JSON), equal the whole-file call's."""
    spec = tmp_path / "spec.yaml"
    spec.write_text("title: Answer\nfields:\n  disease: {kind: node, required: true}\n")
    out = {5: "EX:0090", 6: "EX:0091", 10: "EX:0004", 11: "EX:0098"}
    recs = [
        {
            "id": f"c{i}",
            "slices": {"s": i % 2} if i > 8 else {},
            "answer": {"output": {"disease": out.get(i, "EX:0002")}},
            "reference": {"output": {"disease": "EX:0003"}},
        }
        for i in range(13)
    ]
    recs.insert(3, {"id": "bare"})  # an unscored record in the first chunk
    path = _write(tmp_path, recs)
    bound = get_scorer("conformance").bind(_aliases_onto(), spec=str(spec), on_status="replace")
    for size in (1, 3, 7):
        whole = _same_outcome(bound, path, size)
    meta = whole.single.meta
    assert (meta["n_aliased"], meta["replaced_ids"]) == (3, 1)
    assert list(meta)[-3:] == ["n_aliased", "replaced_ids", "vocabularies"]
    assert whole.single.unscored == [
        {"record_id": "bare", "reason": "no answer section", "code": "no_section"}
    ]


def test_merge_keeps_the_declared_order_of_additive_meta():
    """Entries only some partitions write: each partition's order and the declared order of
    ``additive_meta`` (linking writes ``unknown_ids`` before ``n_aliased``)."""
    from kg_rageval.families.linking.evaluate import LinkingFamily
    from kg_rageval.results.family import _merge_meta

    metas = [
        {"alignment": "strict", "records_scored": 2, "n_aliased": 1},
        {"alignment": "strict", "records_scored": 3, "unknown_ids": ["b", "a"]},
        {"alignment": "strict", "records_scored": 1, "unknown_ids": ["c"], "rollup_skipped": 9},
    ]
    got = _merge_meta(LinkingFamily(), metas)
    assert list(got.items()) == [
        ("alignment", "strict"),
        ("records_scored", 6),
        ("unknown_ids", ["a", "b", "c"]),
        ("n_aliased", 1),
    ]


def _generation_records() -> list[dict]:
    """Records for every generation member, with what depends on all records: answers without
    a judgment only in the first chunks (their code is ``missing_prediction`` once any answer
    is judged), calibration bins filled by different chunks, slices seen late."""
    recs = []
    for i in range(17):
        ans = {"text": f"A sedan is a car {i}.", "confidence": round((i * 0.137) % 1, 3)}
        if i >= 6:
            ans["judgment"] = {
                "claims": ["A sedan is a car."],
                "supported": ["A sedan is a car."] if i % 3 else [],
                "unsupported": [] if i % 3 else ["A sedan is a car."],
            }
        if i in (4, 9):
            ans.update(refused=True, text="")
        rec = {
            "id": f"g{i:02d}",
            "answer": ans,
            "retrieval": {"contexts": [{"id": f"d{i}", "text": "A sedan is a car with a closed body."}]},
            "reference": {"answer": "a sedan" if i % 4 else "a car", "answerable": i != 9},
        }
        if i >= 11:
            rec["slices"] = {"late": "x" if i % 2 else "y"}
        recs.append(rec)
    recs.insert(2, {"id": "nothing"})
    return recs


def test_generation_streams_judgment_codes_orphans_and_calibration(tmp_path):
    o = _vehicles()
    path = _write(tmp_path, _generation_records())
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text(
        "".join(
            json.dumps({"id": j, "judgment": {"claims": ["x"], "supported": ["x"], "unsupported": []}}) + "\n"
            for j in ("g03", "zz-1", "g12", "aa-2", "zz-0")
        )
    )
    for opts in ({}, {"judgments": str(judgments)}, {"n_bins": 3}):
        bound = get_scorer("generation").bind(o, **opts)
        for size in (1, 3, 7, 64):
            whole = _same_outcome(bound, path, size)
        faith = whole["faithfulness"]
        codes = {u["record_id"]: u["code"] for u in faith.unscored}
        assert codes["g00"] == codes["g05"] == "missing_prediction"  # unjudged, first chunks
        reliability = whole["calibration"].meta["reliability"]
        assert sum(b["n"] for b in reliability) == int(whole["calibration"].totals()["n"]) == 16
        if "judgments" in opts:
            assert faith.meta == {
                "judgments_without_record": ["aa-2", "zz-0", "zz-1"],
                "n_judgments_without_record": 3,
            }
            assert "g03" not in codes
        else:
            assert faith.meta == {}


def test_generation_without_any_judgment_keeps_missing_input(tmp_path):
    recs = list(_generation_records()[:8])
    for r in recs:
        r.get("answer", {}).pop("judgment", None)
    path = _write(tmp_path, recs)
    whole = _same_outcome(get_scorer("generation").bind(_vehicles()), path, 2)
    assert {u["code"] for u in whole["faithfulness"].unscored if u["reason"] == "no judgment"} == {
        "missing_input"
    }


def test_merged_calibration_recomputes_the_reliability_table():
    """Partitions merged (Dask, ``EvaluationSet.merge``) get the table of all their rows."""
    from kg_rageval.families.generation import score_calibration

    recs = [r for r in _generation_records() if "answer" in r]
    parts = [score_calibration(recs[a:b], n_bins=4) for a, b in ((0, 5), (5, 11), (11, len(recs)))]
    whole = score_calibration(recs, n_bins=4)
    assert concat_evaluations(parts).meta == parts[0].merge(parts[1]).merge(parts[2]).meta == whole.meta
    assert parts[0].meta["reliability"] != whole.meta["reliability"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "family,onto,data,opts",
    [
        ("conformance", "demo", "demo", {}),
        ("generation", "generation/vehicles.csv", "generation/records.jsonl", {}),
        (
            "generation",
            "generation/vehicles.csv",
            "generation/records.jsonl",
            {"judgments": "generation/judgments.jsonl", "judge": "ontology"},
        ),
    ],
)
def test_conformance_and_generation_on_fixtures(family, onto, data, opts, demo):
    from kg_rageval.ontology import load_ontology

    if onto == "demo":
        o, path, opts = demo["ontology"], demo["path"], {"spec": demo["inputs"]["spec"]}
    else:
        o, path = load_ontology(FIXTURES / onto), FIXTURES / data
        opts = {k: str(FIXTURES / v) if k == "judgments" else v for k, v in opts.items()}
    bound = get_scorer(family).bind(o, **opts)
    for size in (1, 2, 3):
        _same_outcome(bound, path, size)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["conformance", "generation"])
def test_conformance_and_generation_json_does_not_depend_on_the_chunk_size(family, demo, capsys):
    base = [
        "score",
        family,
        "--ontology",
        str(demo["dir"] / "doid-cancer-slim.obo"),
        "--data",
        str(demo["path"]),
        "--format",
        "json",
        "--rows",
        "--ci",
        "20",
    ]
    if family == "conformance":
        base += ["--spec", demo["inputs"]["spec"]]
    assert main(base) == 0
    whole = capsys.readouterr().out
    for size in ("1", "3"):
        assert main(base + ["--chunk-size", size]) == 0
        assert capsys.readouterr().out == whole


def test_streamed_results_share_equal_record_id_columns():
    """Two families' streamed results with the same ids in the same order hold one record-id
    array; different ids, or ids that are not all texts, get their own."""
    from kg_rageval.results.concatenation import Concatenation
    from kg_rageval.results.family import Family

    class _Toy(Family):
        name, stats = "toy_ids", ("n",)

    def streamed(ids, cut=2):
        acc = Concatenation()
        for part in (ids[:cut], ids[cut:]):
            acc.add(Evaluation(_Toy(), np.array(part, dtype=object), {"n": np.ones(len(part))}))
        return acc.result()

    ids = [f"q{i}" for i in range(5)]
    a, b = streamed(ids), streamed(["".join(["q", str(i)]) for i in range(5)], cut=3)
    assert a.record_ids is b.record_ids and a.record_ids.tolist() == ids
    assert streamed(ids[:4] + ["x"]).record_ids is not a.record_ids
    nums, mixed = streamed([1, 2, 3]), streamed([1.0, 2, 3])
    assert nums.record_ids is not mixed.record_ids and type(mixed.record_ids[0]) is float


def test_concatenation_shares_equal_texts_of_key_and_detail_columns():
    """Key and detail columns of few distinct texts are stored as codes into one object per
    distinct text (parsed JSON gives a fresh one per record), in each chunk and in the
    streamed concatenation; the values, and every output, are unchanged. A column of other
    objects is left as it is, and a column of mostly distinct texts stops coding."""
    from kg_rageval.families.hierarchy import score_hierarchy
    from kg_rageval.results.columns import CodedColumn
    from kg_rageval.results.concatenation import SHARED_TEXTS_MIN, Concatenation, _Column

    o = _vehicles()
    # "".join makes a fresh string object per record, as a JSON parser does
    recs = [
        {
            "id": f"q{i}",
            "labels": {"gold": ["VH:sedan"], "pred": ["VH:car"]},
            "slices": {"intent": "".join(["look", "up"]) if i % 2 else None},
        }
        for i in range(12)
    ]
    assert (
        len({id(r["slices"]["intent"]) for r in recs if r["slices"]["intent"]}) == 6
    )  # six fresh strings in
    parts = [score_hierarchy(o, recs[a:b], on_status="replace") for a, b in ((0, 5), (5, 12))]
    assert all(isinstance(p.keys.raw("slice:intent"), CodedColumn) for p in parts)
    assert [len({id(v) for v in p.keys["slice:intent"] if v is not None}) for p in parts] == [1, 1]
    acc = Concatenation()
    for p in parts:
        acc.add(p)
    got = acc.result()
    stored = got.keys.raw("slice:intent")
    assert isinstance(stored, CodedColumn) and stored.codes.dtype == np.uint8
    assert stored.values.tolist() == [None, "lookup"]
    out = got.keys["slice:intent"]
    assert out.dtype == object and out.tolist() == [None, "lookup"] * 6
    assert len({id(v) for v in out if v is not None}) == 1
    assert (
        got.to_dict()
        == concat_evaluations(parts).to_dict()
        == score_hierarchy(o, recs, on_status="replace").to_dict()
    )

    lists = _Column(np.array([["a"], ["a"]] + [None], dtype=object)[:2], share=True)
    lists.append(np.array([None, 1], dtype=object))  # not coded: kept as it is
    joined = lists.array()
    assert joined.tolist() == [["a"], ["a"], None, 1] and joined[0] is not joined[1]

    n = SHARED_TEXTS_MIN * 3
    texts = np.array([f"t{i}" for i in range(n)], dtype=object)
    distinct = _Column(CodedColumn(np.arange(n), texts), share=True)
    assert distinct.table is None  # more distinct values than half the rows: no more coding
    distinct.append(CodedColumn(np.zeros(1, np.uint8), np.array(["t0"], object)))
    distinct.append(np.array(["t0"], dtype=object))
    whole = distinct.array()
    assert type(whole) is np.ndarray and whole.tolist() == texts.tolist() + ["t0", "t0"]
