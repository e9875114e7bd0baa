"""TREC/BEIR readers and writers: round trips, line-numbered errors, agreement with
pytrec_eval's parsers and trec_eval numbers on files, and ranx where its conventions agree."""

from __future__ import annotations

import numpy as np
import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.families.retrieval import (
    Qrels,
    Run,
    evaluate_run,
    read_beir_qrels,
    read_qrels,
    read_run,
    write_beir_qrels,
    write_qrels,
    write_run,
)

pytrec_eval = pytest.importorskip("pytrec_eval")


def test_fixture_files_match_pytrec_eval(fixtures_dir):
    d = fixtures_dir / "retrieval"
    q = read_qrels(d / "qrels.txt")
    r = read_run(d / "run.txt", vocab=q.vocab)
    with open(d / "qrels.txt") as fh:
        pq_qrels = pytrec_eval.parse_qrel(fh)
    with open(d / "run.txt") as fh:
        pq_run = pytrec_eval.parse_run(fh)
    assert q.to_dict() == {k: {d_: float(g) for d_, g in v.items()} for k, v in pq_qrels.items()}
    assert r.to_dict() == pq_run
    # trec_eval's order: q1 d3 (0.8) before d1 (0.8); q2 d7 before d2 (tied 1.5)
    assert r.ranked("q1") == ["d8", "d3", "d1"]
    assert r.ranked("q2") == ["d7", "d2", "d9"]
    res = evaluate_run(q, r, (1, 2, 5))
    ref = pytrec_eval.RelevanceEvaluator(pq_qrels, {"P_5", "ndcg_cut_5", "recip_rank", "map"}).evaluate(
        pq_run
    )
    for qid in ref:
        i = q.qindex[qid]
        assert res.values["precision@5"][i] == pytest.approx(ref[qid]["P_5"])
        assert res.values["ndcg@5"][i] == pytest.approx(ref[qid]["ndcg_cut_5"])
        assert res.values["mrr"][i] == pytest.approx(ref[qid]["recip_rank"])
        assert res.values["map"][i] == pytest.approx(ref[qid]["map"])
    # by hand: q2 gains d7=2, d2=1 ranked d7, d2 -> ideal order -> nDCG 1; q3 RR 1/2
    assert res.values["ndcg@5"][q.qindex["q2"]] == pytest.approx(1.0)
    assert res.values["mrr"][q.qindex["q3"]] == 0.5
    # q5 is judged but absent from the run: counted missing (trec_eval -c), not dropped
    assert res.missing[q.qindex["q5"]] and "q5" not in ref
    assert res.run_only == ["q6"]
    assert res.mean("mrr") == pytest.approx((0.5 + 1 + 0.5 + 0 + 0) / 5)


def test_beir_qrels(fixtures_dir, tmp_path):
    q = read_beir_qrels(fixtures_dir / "retrieval" / "beir_qrels.tsv")
    assert q.to_dict() == {"q1": {"d3": 1.0}, "q2": {"d2": 1.0, "d7": 2.0}}
    write_beir_qrels(tmp_path / "b.tsv", q)
    assert read_beir_qrels(tmp_path / "b.tsv").to_dict() == q.to_dict()
    bad = tmp_path / "bad.tsv"
    bad.write_text("qid\tdoc\tscore\nq1\td1\t1\n")
    with pytest.raises(InputError, match="line 1.*BEIR header"):
        read_beir_qrels(bad)


def test_round_trip_generated(tmp_path):
    rng = np.random.default_rng(0)
    qrels = {
        f"q{i}": {f"d{j}": int(rng.integers(0, 3)) for j in rng.choice(50, 5, replace=False)}
        for i in range(200)
    }
    run = {
        f"q{i}": {f"d{j}": float(rng.integers(0, 4)) for j in rng.choice(50, 20, replace=False)}
        for i in range(200)
    }
    q = Qrels.from_dict(qrels)
    r = Run.from_dict(run, vocab=q.vocab)
    write_qrels(tmp_path / "q.txt", q)
    write_run(tmp_path / "r.txt", r)
    q2 = read_qrels(tmp_path / "q.txt")
    r2 = read_run(tmp_path / "r.txt", vocab=q2.vocab)
    assert q2.to_dict() == q.to_dict()
    assert [r2.ranked(x) for x in r2.qids] == [r.ranked(x) for x in r.qids]
    a = evaluate_run(q, r, (5, 10))
    b = evaluate_run(q2, r2, (5, 10))
    for name in a.values:
        np.testing.assert_allclose(a.values[name], b.values[name])
    with open(tmp_path / "r.txt") as fh:
        assert pytrec_eval.parse_run(fh) == r.to_dict()
    # numbers from the written files equal trec_eval's on the same files
    with open(tmp_path / "q.txt") as fh:
        ref_q = pytrec_eval.parse_qrel(fh)
    with open(tmp_path / "r.txt") as fh:
        ref_r = pytrec_eval.parse_run(fh)
    ref = pytrec_eval.RelevanceEvaluator(ref_q, {"ndcg_cut_10", "map", "P_5", "Rprec"}).evaluate(ref_r)
    checked = 0
    for qid, vals in ref.items():
        i = q2.qindex[qid]
        if b.n_rel[i] == 0:
            continue
        assert b.values["ndcg@10"][i] == pytest.approx(vals["ndcg_cut_10"], abs=1e-12)
        assert b.values["map"][i] == pytest.approx(vals["map"], abs=1e-12)
        assert b.values["precision@5"][i] == pytest.approx(vals["P_5"], abs=1e-12)
        assert b.values["r_precision"][i] == pytest.approx(vals["Rprec"], abs=1e-12)
        checked += 1
    assert checked > 150


def test_line_numbered_errors(tmp_path):
    p = tmp_path / "r.txt"
    p.write_text("q1 Q0 d1 1 0.5 t\n\nq1 Q0 d2 2 0.4\n")
    with pytest.raises(InputError, match=r"r.txt, line 3: expected at least 6 columns"):
        read_run(p)
    p.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 high t\n")
    with pytest.raises(InputError, match=r"line 2: score is not a number: 'high'"):
        read_run(p)
    p.write_text("q1 Q0 d1 1 0.5 t\nq2 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n")
    with pytest.raises(
        InputError, match=r"line 3: run lists a document twice for one query \(first on line 1\)"
    ):
        read_run(p)
    r = read_run(p, dedupe=True)
    assert r.n_duplicates_removed == 1 and r.ranked("q1") == ["d1"] and r.scores[0] == 0.5
    qp = tmp_path / "q.txt"
    qp.write_text("q1 0 d1 1\nq1 0 d2 x\n")
    with pytest.raises(InputError, match=r"line 2: relevance is not a number"):
        read_qrels(qp)
    qp.write_text("q1 0 d1 1\nq1 0 d1 0\n")
    with pytest.raises(InputError, match=r"line 2: document judged twice"):
        read_qrels(qp)
    with pytest.raises(InputError, match="no such file"):
        read_qrels(tmp_path / "absent.txt")


@pytest.mark.slow
def test_chunked_reading_keeps_line_numbers(tmp_path, monkeypatch):
    from kg_rageval.families.retrieval import trec

    monkeypatch.setattr(trec, "CHUNK_BYTES", 64)
    p = tmp_path / "r.txt"
    lines = [f"q{i % 3} Q0 d{i} {i} {1.0 / (i + 1)} t" for i in range(40)]
    lines[33] = "q1 Q0 d33 33 0.1"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="line 34: expected at least 6 columns"):
        read_run(p)
    lines[33] = "q1 Q0 d33 33 0.1 t"
    p.write_text("\n".join(lines))  # no trailing newline
    r = read_run(p)
    assert sum(len(r.ranked(q)) for q in r.qids) == 40


@pytest.mark.slow
def test_ranx_agrees_where_conventions_match():
    """ranx breaks score ties its own way and cannot hold a judged query without a run, so
    it is compared on tie-free runs covering every judged query."""
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(11)
    qrels, run = {}, {}
    for i in range(1000):
        judged = rng.choice(200, 8, replace=False)
        qrels[f"q{i}"] = {f"d{j}": int(rng.integers(1, 4)) for j in judged}
        docs = rng.choice(200, 50, replace=False)
        run[f"q{i}"] = {f"d{j}": float(s) for j, s in zip(docs, rng.permutation(50) + 0.5)}
    q = Qrels.from_dict(qrels)
    pq = evaluate_run(q, Run.from_dict(run, vocab=q.vocab), (5, 10))
    ours = {
        "ndcg@10": pq.mean("ndcg@10"),
        "recall@5": pq.mean("recall@5"),
        "precision@5": pq.mean("precision@5"),
        "mrr": pq.mean("mrr"),
        "map": pq.mean("map"),
        "r-precision": pq.mean("r_precision"),
        "hit_rate@5": pq.mean("hit@5"),
    }
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), list(ours))
    for name, v in ours.items():
        assert v == pytest.approx(theirs[name], abs=1e-9), name


@pytest.mark.parametrize("compiled", [False, True])
def test_tokenizer_paths_agree(tmp_path, monkeypatch, compiled):
    from kg_rageval.families.retrieval import _kernels, trec

    if compiled and not _kernels.HAVE_NUMBA:
        pytest.skip("numba not installed")
    monkeypatch.setattr(trec, "NUMBA_MIN_BYTES", 0 if compiled else 1 << 62)
    monkeypatch.setattr(trec, "CHUNK_BYTES", 256)  # many blocks, lines cut at block ends
    p = tmp_path / "r.txt"
    lines = []
    for i in range(300):
        lines.append(f"q{i // 7}\tQ0  dök{i % 11}-{i} {i} {((i * 37) % 13) / 3:.4f} tag\r")
        if i % 50 == 0:
            lines.append("   ")
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = read_run(p)
    ref = {}
    for ln in lines:
        parts = ln.split()
        if parts:
            ref.setdefault(parts[0], {})[parts[2]] = float(parts[4])
    assert r.to_dict() == ref
    assert r.ranked("q3") == [
        d for d, _ in sorted(ref["q3"].items(), key=lambda x: (-x[1], [-ord(c) for c in x[0]]))
    ]
    lines[123] = "q17 Q0 d1 1 0.5"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"line 124: expected at least 6 columns"):  # lines[123] is line 124
        read_run(p)


def test_codes_array_matches_dict_interning():
    from kg_rageval.families.retrieval.runs import Vocab

    rng = np.random.default_rng(4)
    words = [f"doc-{i}" * int(rng.integers(1, 4)) for i in range(500)] + ["ü", "日本", "a", "a\u0301"]
    ids = [words[int(i)] for i in rng.integers(0, len(words), 5000)]
    v1, v2 = Vocab(["pre-existing", "doc-3"]), Vocab(["pre-existing", "doc-3"])
    a = v1.codes(ids)
    b = v2.codes_array(np.asarray(ids))
    c = v2.codes_array(np.asarray([x.encode() for x in ids]))
    assert v1.strings == v2.strings and (a == b).all() and (a == c).all()


def test_gzip_files(tmp_path):
    import gzip

    p = tmp_path / "run.txt.gz"
    with gzip.open(p, "wt") as fh:
        fh.write("q1 Q0 b 1 2.0 t\nq1 Q0 a 2 2.0 t\nq2 Q0 c 1 1.0 t\n")
    r = read_run(p)
    assert r.ranked("q1") == ["b", "a"] and r.ranked("q2") == ["c"]


def test_gzip_and_json_inputs_are_bounded(tmp_path):
    """A .gz run decompressing past max_gz_bytes and a JSON run larger than max_doc_bytes are
    refused, naming the file (the whole-file and chunked readers go through base/safe_io)."""
    import gzip
    import json

    from kg_rageval.base.errors import LimitExceeded
    from kg_rageval.base.limits import limits
    from kg_rageval.families.retrieval import load_run

    body = "".join(f"q1 Q0 d{i} {i + 1} {100 - i}.0 t\n" for i in range(100))  # 1,974 bytes
    p = tmp_path / "big.txt.gz"
    with gzip.open(p, "wt") as fh:
        fh.write(body)
    with (
        limits({"max_gz_bytes": 1000}),
        pytest.raises(LimitExceeded, match=r"big\.txt\.gz.*more than 1000 bytes.*max_gz_bytes = 1000"),
    ):
        read_run(p)
    assert read_run(p).ranked("q1")[:2] == ["d0", "d1"]  # within the default limit
    j = tmp_path / "run.json"
    j.write_text(json.dumps({"q1": {f"d{i}": float(i) for i in range(20)}}))  # 248 bytes
    with (
        limits({"max_doc_bytes": 100}),
        pytest.raises(LimitExceeded, match=r"run\.json.*the score JSON .*is 248 bytes.*max_doc_bytes = 100"),
    ):
        load_run(j)
    jz = tmp_path / "run.json.gz"
    with gzip.open(jz, "wt") as fh:
        fh.write(j.read_text())
    with (
        limits({"max_gz_bytes": 200}),
        pytest.raises(LimitExceeded, match=r"run\.json\.gz.*more than 200 bytes"),
    ):
        load_run(jz)
    assert load_run(jz).ranked("q1")[:2] == ["d19", "d18"]
