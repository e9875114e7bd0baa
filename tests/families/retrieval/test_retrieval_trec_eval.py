"""trec_eval 10.0's own test directory (fixtures/trec_eval): every measure kg-rageval computes
equals trec_eval's expected output, per query and in aggregate, under the trec_eval mode;
readers for comment lines, trailing columns, gzip and JSON; the measure-name parser."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.contract.measures import parse_measure, parse_measures
from kg_rageval.families.retrieval import Qrels, Run, aggregate, compute, trec_eval_lines
from kg_rageval.families.retrieval.measures import TREC_ALL, TREC_DEFAULT
from kg_rageval.families.retrieval.trec import load_qrels, load_run, read_qrels, read_run

# (qrels, run, expected output, trec_eval options, measures, -q) — the Makefile's quicktest
CASES = [
    ("qrels.test", "results.test", "out.test", {}, TREC_DEFAULT, False),
    ("qrels.test.with-comments", "results.test", "out.test", {}, TREC_DEFAULT, False),
    ("qrels.comment.test", "results.comment.test.gz", "out.comment.test", {}, TREC_DEFAULT, False),
    ("qrels.test", "results.test", "out.test.a", {}, TREC_ALL, False),
    ("qrels.test", "results.test", "out.test.aq", {}, TREC_ALL, True),
    ("qrels.test", "results.trunc", "out.test.aqc", {"complete": True}, TREC_ALL, True),
    ("qrels.test", "results.trunc", "out.test.aqcM", {"complete": True, "depth": 100}, TREC_ALL, True),
    ("qrels.rel_level", "results.test", "out.test.aql", {"rel_level": 2}, TREC_ALL, True),
]


def _table(lines):
    out = {}
    for ln in lines:
        name, qid, value = ln.rstrip("\n").split("\t")
        out[(name.strip(), qid)] = value
    return out


@pytest.mark.parametrize("qf,rf,of,opts,measures,per_query", CASES, ids=[c[2] + ":" + c[0] for c in CASES])
def test_equals_trec_eval_expected_output(fixtures_dir, qf, rf, of, opts, measures, per_query):
    d = fixtures_dir / "trec_eval"
    opts = dict(opts)
    complete = opts.pop("complete", False)
    q = read_qrels(d / qf)
    r = read_run(d / rf, vocab=q.vocab)
    expected = _table(open(d / of, encoding="utf-8"))
    pq = compute(q, r, measures, **opts)
    ours = _table(
        trec_eval_lines(pq, run_id=expected[("runid", "all")], per_query=per_query, complete=complete)
    )
    assert ours, "nothing computed"
    wrong = {k: (v, expected.get(k)) for k, v in ours.items() if expected.get(k) != v}
    assert not wrong
    # every measure we compute is in trec_eval's output (same names, same queries)
    n_all = sum(1 for k in ours if k[1] == "all")
    assert n_all == len(measures) + 1  # + runid
    if per_query:
        qids = {k[1] for k in expected if k[1] != "all"}
        assert {k[1] for k in ours if k[1] != "all"} == qids


def test_measure_parameters_equal_trec_eval(fixtures_dir):
    """out.test.meas_params: trec_eval -q with -m P.5,7,3 -m recall.20,2000 -m success.2,5,20
    -m ndcg_cut.10,20,23.4 -m iprec_at_recall..10,.20,.25,.75,.50 (our cut-offs and recall
    levels as measure parameters)."""
    d = fixtures_dir / "trec_eval"
    q = read_qrels(d / "qrels.test")
    measures = [
        "P@3",
        "P@5",
        "P@7",
        "R@20",
        "R@2000",
        "Success@2",
        "Success@5",
        "Success@20",
        "nDCG@10",
        "nDCG@20",
        "nDCG@23",
        "IPrec@0.1",
        "IPrec@0.2",
        "IPrec@0.25",
        "IPrec@0.5",
        "IPrec@0.75",
    ]
    pq = compute(q, read_run(d / "results.test", vocab=q.vocab), measures)
    expected = _table(open(d / "out.test.meas_params", encoding="utf-8"))
    ours = _table(trec_eval_lines(pq, run_id="STANDARD", per_query=True))
    del ours[("runid", "all")]
    assert len(ours) == 16 * 4
    assert {k: v for k, v in ours.items() if expected[k] != v} == {}


def test_trec_eval_mode_vs_default_on_comment_data(fixtures_dir):
    """The issue's example: trec_eval -c averages the zero-relevance query in as 0 (MAP 0.2689
    over 31 queries); the default keeps it in the answerability slice (0.2779 over 30)."""
    d = fixtures_dir / "trec_eval"
    q = read_qrels(d / "qrels.comment.test")
    pq = compute(q, read_run(d / "results.comment.test.gz", vocab=q.vocab), ["AP"])
    te, de = aggregate(pq, "trec_eval"), aggregate(pq, "default")
    assert round(te.values["AP"], 4) == 0.2689 and te.n["AP"] == 31
    assert round(de.values["AP"], 4) == 0.2779 and de.n["AP"] == 30
    assert de.n_no_gold == 1 and de.n_no_gold_nonempty_run == 1
    assert te.values["AP"] == pytest.approx(de.values["AP"] * 30 / 31)


def test_no_complete_stops_at_missing_query(fixtures_dir):
    d = fixtures_dir / "trec_eval"
    q = read_qrels(d / "qrels.test")
    pq = compute(q, read_run(d / "results.trunc", vocab=q.vocab), ["AP"])
    with pytest.raises(InputError, match="'302' is judged but has no results"):
        aggregate(pq, "trec_eval", complete=False)
    assert aggregate(pq, "default").n_missing_run == 1


# ------------------------------------------------------------------ readers


def test_comment_lines_trailing_columns_blank_lines(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text(
        "# a comment\n  # indented comment\nq1 Q0 d#1 1 2.0 tag extra words\n\n"
        "q1 Q0 d2 2 1.0 tag\n#q1 Q0 d3 3 0.5 tag\n"
    )
    r = read_run(run)
    assert r.ranked("q1") == ["d#1", "d2"]
    qr = tmp_path / "qrels.txt"
    qr.write_text("# judged\nq1 0 d2 1\nq1 0 d#1 0\n")
    q = read_qrels(qr)
    assert q.to_dict() == {"q1": {"d2": 1.0, "d#1": 0.0}}


def test_reader_errors_name_line(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("# c\nq1 Q0 d1 1 2.0 tag\nq1 Q0 d2 1 2.0\n")
    with pytest.raises(InputError, match=r"line 3.*at least 6 columns"):
        read_run(run)
    qr = tmp_path / "qrels.txt"
    qr.write_text("# c\nq1 0 d1 1 extra\n")
    with pytest.raises(InputError, match=r"line 2.*expected 4 columns"):
        read_qrels(qr)
    dup = tmp_path / "dup.txt"
    dup.write_text("# c\nq1 Q0 d1 1 2.0 t\n# c2\nq1 Q0 d1 2 1.0 t\n")
    with pytest.raises(InputError, match=r"first on line 2.*line 4|line 4.*first on line 2"):
        read_run(dup)


def test_large_block_with_comments_and_extra_columns_numba_path(tmp_path):
    """Blocks over a MiB go through the compiled tokenizer; a line with trailing columns
    falls back to the numpy path, comment lines are blanked first."""
    lines = ["# header"] + [f"q{i // 100} Q0 d{i} {i % 100 + 1} {1000 - i % 100} tag" for i in range(40000)]
    lines[5000] += " trailing stuff"
    lines[9000] = "# comment in the middle"
    p = tmp_path / "big.txt.gz"
    with gzip.open(p, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    r = read_run(p)
    assert int(r.ptr[-1]) == 40000 - 1
    assert len(r) == 400


def test_json_and_beir_and_sniffing(tmp_path, fixtures_dir):
    qj = tmp_path / "q.json"
    qj.write_text(json.dumps({"q1": {"a": 2, "b": 0}, "q2": {"c": 1}}))
    rj = tmp_path / "r.json"
    rj.write_text(json.dumps({"q1": {"a": 0.5, "b": 0.9}, "q2": {"c": 0.1}}))
    q = load_qrels(qj)
    r = load_run(rj, vocab=q.vocab)
    assert q.to_dict() == {"q1": {"a": 2.0, "b": 0.0}, "q2": {"c": 1.0}}
    assert r.ranked("q1") == ["b", "a"]
    pq = compute(q, r, ["RR", "P@1"])
    assert pq.values["RR"].tolist() == [0.5, 1.0]
    beir = load_qrels(fixtures_dir / "retrieval" / "beir_qrels.tsv")
    assert len(beir) > 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"q1": {"a": "x"}}))
    with pytest.raises(InputError, match="score must be a number"):
        load_run(bad)
    for text, shown in (  # NaN/Infinity literals: the bounded JSON reader names the field
        ('{"q1": {"a": NaN}}', r"bad\.json, field q1\.a: non-finite number NaN is not allowed"),
        ('{"q1": {"a": 1.0, "b": -Infinity}}', r"bad\.json, field q1\.b: non-finite number -Infinity"),
        # an overflowing literal parses as inf: refused where the score is read
        ('{"q1": {"a": 1e999}}', r"bad\.json.*query 'q1', document 'a': score is not a finite number: inf"),
    ):
        bad.write_text(text)
        with pytest.raises(InputError, match=shown):
            load_run(bad)


# ------------------------------------------------------------------ names


@pytest.mark.parametrize(
    "name,canon,trec",
    [
        ("nDCG@10", "nDCG@10", "ndcg_cut_10"),
        ("ndcg_cut_10", "nDCG@10", "ndcg_cut_10"),
        ("ndcg@10", "nDCG@10", "ndcg_cut_10"),
        ("AP(rel=2)", "AP(rel=2)", None),
        ("RR", "RR", "recip_rank"),
        ("MRR", "RR", "recip_rank"),
        ("R@100", "R@100", "recall_100"),
        ("P(rel=2)@10", "P(rel=2)@10", None),
        ("P_10", "P@10", "P_10"),
        ("map", "AP", "map"),
        ("map_cut_5", "AP@5", "map_cut_5"),
        ("RBP(p=0.8)", "RBP", None),
        ("rbp", "RBP(p=0.9)", "rbp"),
        ("Judged@10", "Judged@10", None),
        ("bpref", "Bpref", "bpref"),
        ("iprec_at_recall_0.10", "IPrec@0.1", "iprec_at_recall_0.10"),
        ("NumRet(rel=1)", "NumRelRet(rel=1)", None),
        ("hit@5", "Success@5", "success_5"),
        ("recall@5", "R@5", "recall_5"),
        ("mrr@10", "RR@10", None),
        ("r_precision", "Rprec", "Rprec"),
        ("ERR@20", "ERR@20", None),
        ("set_F", "SetF", "set_F"),
        ("RBP", "RBP", None),
        ("RBP(rel=1,p=0.5)", "RBP(p=0.5,rel=1)", None),
        ("nDCG(dcg=exp-log2)@10", "nDCG(dcg=exp-log2)@10", None),
    ],
)
def test_measure_names(name, canon, trec):
    s = parse_measure(name)
    assert str(s) == canon
    assert s.trec_name == trec
    assert parse_measure(str(s)) == s
    ir_measures = pytest.importorskip("ir_measures")
    if name[0].isupper() and "@0." not in canon and not canon.startswith(("NumRelRet", "ERR")):
        assert str(ir_measures.parse_measure(canon)) == canon  # the same canonical spelling


@pytest.mark.parametrize(
    "bad,msg",
    [
        ("nDCG@0", "positive"),
        ("Foo@3", "unknown measure"),
        ("P", "needs a cut-off"),
        ("AP(x=1)", "no parameter 'x'"),
        ("RBP(p=1.5)", r"\(0, 1\)"),
        ("Bpref@5", "no cut-off"),
        ("P(rel=a)@5", "integer"),
    ],
)
def test_measure_name_errors(bad, msg):
    with pytest.raises(ValueError, match=msg):
        parse_measure(bad)


def test_parse_measures_splits_and_dedupes():
    assert [str(s) for s in parse_measures(["nDCG@10,P(rel=2)@5", "ndcg_cut_10 RR"])] == [
        "nDCG@10",
        "P(rel=2)@5",
        "RR",
    ]


# ------------------------------------------------------------------ hand-worked measures


def test_new_measures_by_hand():
    # ranking: a(2) x(unjudged) b(0) c(1) e(-1: pool, unjudged); qrels also hold d(3)
    q = Qrels.from_dict({"q": {"a": 2, "b": 0, "c": 1, "d": 3, "e": -1}})
    r = Run.from_lists({"q": ["a", "x", "b", "c", "e"]}, vocab=q.vocab)
    pq = compute(
        q,
        r,
        [
            "P(rel=2)@2",
            "Judged@4",
            "Unjudged@4",
            "Bpref",
            "Success@1",
            "ERR@4",
            "RBP(p=0.5,rel=1)",
            "RBP(p=0.5)",
            "P@2",
            "NumNonRelJudgedRet",
        ],
    )
    v = {k: float(x[0]) for k, x in pq.values.items()}
    assert v["P(rel=2)@2"] == 0.5
    assert v["P@2"] == 0.5
    assert v["Judged@4"] == 0.75  # a, b, c of a x b c
    assert v["Unjudged@4"] == 0.25
    # R = 3 (a, c, d), N = 1 (b): a above no non-relevant -> 1; c below b -> 1 - 1/1 = 0
    assert v["Bpref"] == pytest.approx(1 / 3)
    assert v["Success@1"] == 1.0
    # ERR, gmax = 3: rho(a) = 3/8, rho(c) = 1/8 at rank 4: 3/8 + (1/4)(5/8)(1/8)
    assert v["ERR@4"] == pytest.approx(3 / 8 + 0.25 * (5 / 8) * (1 / 8))
    # binary RBP, p = .5: rel at ranks 1 and 4: 0.5 * (1 + 0.125)
    assert v["RBP(p=0.5,rel=1)"] == pytest.approx(0.5 * (1 + 0.5**3))
    # graded RBP: gains g / 3: 0.5 * (2/3 + 1/3 * 0.125)
    assert v["RBP(p=0.5)"] == pytest.approx(0.5 * (2 / 3 + 0.125 / 3))
    assert v["NumNonRelJudgedRet"] == 1.0


def test_default_mode_answerability_slice_and_missing_runs():
    q = Qrels.from_dict({"a": {"d1": 1}, "b": {"d2": 0}, "c": {"d3": 1}})
    r = Run.from_lists({"a": ["d1"], "b": ["d2"], "z": ["d9"]}, vocab=q.vocab)
    pq = compute(q, r, ["P@1", "Judged@1", "P(rel=2)@1"])
    de = aggregate(pq)
    assert de.values["P@1"] == 0.5 and de.n["P@1"] == 2  # a=1, c missing=0; b is no-gold
    assert de.n_no_gold == 1 and de.n_missing_run == 1 and de.run_only == ["z"]
    assert de.values["P(rel=2)@1"] is None  # no query with a grade-2 document: missing evidence
    te = aggregate(pq, "trec_eval")
    assert te.values["P@1"] == pytest.approx(1 / 3) and te.values["P(rel=2)@1"] == 0.0


def test_depth_and_ties_follow_trec_eval():
    q = Qrels.from_dict({"q": {"b": 1}})
    r = Run.from_dict({"q": {"a": 1.0, "b": 1.0, "c": 2.0}}, vocab=q.vocab)  # ties: larger id first
    assert r.ranked("q") == ["c", "b", "a"]
    assert compute(q, r, ["RR"]).values["RR"][0] == 0.5
    assert compute(q, r, ["RR"], depth=1).values["RR"][0] == 0.0


# ------------------------------------------------------------------ references


def _generated(seed=3, nq=300):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for i in range(nq):
        docs = [f"d{j}" for j in rng.choice(80, 30, replace=False)]
        g = rng.integers(0, 4, size=12)
        if i % 17 == 0:
            g[:] = 0  # zero-relevance query
        qrels[f"q{i}"] = {
            d: int(x) for d, x in zip(rng.choice(docs + [f"x{j}" for j in range(10)], 12, replace=False), g)
        }
        if i % 11 == 0:
            continue  # missing run
        run[f"q{i}"] = {d: float(rng.integers(0, 6)) for d in docs}  # heavy ties
    return qrels, run


def test_agrees_with_pytrec_eval_per_query():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = _generated()
    pairs = {
        "map": "AP",
        "ndcg_cut_10": "nDCG@10",
        "P_5": "P@5",
        "recall_100": "R@100",
        "recip_rank": "RR",
        "bpref": "Bpref",
        "Rprec": "Rprec",
        "infAP": "infAP",
        "success_5": "Success@5",
        "ndcg": "nDCG",
        "set_P": "SetP",
        "set_F": "SetF",
        "num_rel_ret": "NumRelRet",
        "set_map": "SetAP",
    }
    # iprec_at_recall is left out: pytrec_eval embeds trec_eval 9.x, which turns recall levels into
    # document counts by (long)(r * R + 0.9); 10.0 (vendored outputs above, and ours) uses lround
    ev = pytrec_eval.RelevanceEvaluator(qrels, set(pairs))
    theirs = ev.evaluate(run)
    q = Qrels.from_dict(qrels)
    pq = compute(q, Run.from_dict(run, vocab=q.vocab), list(pairs.values()))
    checked = 0
    for i, qid in enumerate(pq.qids):
        if qid not in theirs:
            assert pq.ranked.missing[i]
            continue
        for tn, ours in pairs.items():
            assert pq.values[ours][i] == pytest.approx(theirs[qid][tn], abs=1e-12), (qid, tn)
            checked += 1
    assert checked > 3000


def test_agrees_with_ir_measures():
    ir_measures = pytest.importorskip("ir_measures")
    qrels, run = _generated(seed=5, nq=200)
    names = [
        "nDCG@10",
        "AP(rel=2)",
        "RR",
        "R@100",
        "P(rel=2)@10",
        "Judged@10",
        "Bpref",
        "Success@5",
        "infAP",
        "Rprec",
        "SetP",
        "SetR",
        "NumRet(rel=1)",
    ]
    measures = [ir_measures.parse_measure(n) for n in names]
    theirs: dict[tuple[str, str], float] = {}
    for m in ir_measures.iter_calc(measures, qrels, run):
        theirs[(m.query_id, str(m.measure))] = m.value
    q = Qrels.from_dict(qrels)
    pq = compute(q, Run.from_dict(run, vocab=q.vocab), names)
    # ir_measures' Judged sorts ties by doc id ascending (trec_eval: descending): tie-free run
    tie_free = {
        qid: {d: s + 1e-6 * k for k, (d, s) in enumerate(sorted(v.items()))} for qid, v in run.items()
    }
    pj = compute(q, Run.from_dict(tie_free, vocab=q.vocab), ["Judged@10"])
    for m in ir_measures.iter_calc([ir_measures.parse_measure("Judged@10")], qrels, tie_free):
        theirs[(m.query_id, "Judged@10")] = m.value
    n = 0
    for i, qid in enumerate(pq.qids):
        for name, spec in zip(names, pq.specs):
            key = (qid, str(ir_measures.parse_measure(name)))
            if key not in theirs:
                continue
            ours = pj.values["Judged@10"][i] if name == "Judged@10" else pq.values[str(spec)][i]
            assert ours == pytest.approx(theirs[key], abs=1e-12), key
            n += 1
    assert n > 1500


def test_lazy_vocabulary_across_blocks_hash_join_and_float_fast_path(tmp_path, monkeypatch):
    """Without a vocabulary, a run file gets its own (compiled interning across blocks, no
    dict); mapping it onto the qrels' ids by the hash join gives the dictionary's answer; the
    compiled float parser equals Python's float, exponents and bad numbers included."""
    from kg_rageval.families.retrieval import _kernels, trec
    from kg_rageval.families.retrieval.runs import LazyVocab, Vocab

    if not _kernels.HAVE_NUMBA:
        pytest.skip("numba not installed")
    rng = np.random.default_rng(4)
    lines = []
    for q in range(300):
        for j, d in enumerate(rng.choice(30000, 60, replace=False).tolist()):
            sc = f"{rng.random():.6f}" if j % 7 else f"{rng.random():.3e}"
            lines.append(f"q{q} Q0 doc{d} {j + 1} {sc} t")
    p = tmp_path / "run.txt"
    p.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(trec, "CHUNK_BYTES", 1 << 16)  # many blocks: ids recur across blocks
    monkeypatch.setattr(trec, "NUMBA_MIN_BYTES", 1 << 10)  # the compiled path on a small file
    lazy = read_run(p)
    plain = read_run(p, vocab=Vocab())
    assert isinstance(lazy.vocab, LazyVocab) and lazy.vocab._lazy_index is None
    assert len(lazy.vocab) == len(plain.vocab) == len({ln.split()[2] for ln in lines})
    assert (
        lazy.to_dict()
        == plain.to_dict()
        == {q: {d: float(s) for d, s in v.items()} for q, v in plain.to_dict().items()}
    )
    assert all(lazy.ranked(q) == plain.ranked(q) for q in plain.qids)
    qv = Vocab([f"doc{i}" for i in range(0, 30000, 97)] + ["not-in-run"])
    assert len(lazy.vocab) > 4 * len(qv) + 10_000  # the hash join, not the dictionary
    assert np.array_equal(qv.remap_from(lazy.vocab), qv.lookup(lazy.vocab.strings))
    lines[12345] = "q205 Q0 docX 1 0.5"  # an error in a block parsed by a worker thread
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"line 12346: expected at least 6 columns"):
        read_run(p)
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 1e-3 t\nq1 Q0 d3 3 1,5 t\n")
    with pytest.raises(InputError, match=r"line 3: score is not a number: '1,5'"):
        read_run(bad)


def test_fused_run_reader_equals_the_numpy_reader(tmp_path, monkeypatch):
    """The fused compiled reader (one pass: fields, score, query changes, one document table
    across blocks; trec_eval's order by a compiled merge sort comparing id bytes) gives the
    numpy reader's run exactly: ties broken by id descending with ids that are prefixes of
    each other and non-ASCII, rows out of order, a query split over the file, exponent scores,
    comments, blank lines, extra columns, dedupe and its counts, and the same errors."""
    from kg_rageval.families.retrieval import _kernels, trec

    if not _kernels.HAVE_NUMBA:
        pytest.skip("numba not installed")
    rng = np.random.default_rng(11)
    ids = ["d1", "d10", "d100", "d2", "dé", "dz", "d\u00e9t", "D1", "日本", "d1x"] + [
        f"doc{i}" for i in range(200)
    ]
    lines = ["# a comment line", ""]
    for q in range(120):
        qid = f"q{q % 97}"  # queries 0-22 come back later in the file
        docs = rng.choice(len(ids), 25, replace=False).tolist()
        for j, d in enumerate(docs):
            sc = [f"{rng.integers(0, 4) / 2:.1f}", f"{rng.random():.3e}", "-0.0", "0", "7"][j % 5]
            extra = " extra cols" if j % 9 == 0 else ""
            lines.append(f"{qid} Q0 {ids[d]} {j + 1} {sc} tag{extra}")
        if q % 10 == 0:
            lines.append(f"{qid} Q0 {ids[docs[0]]} 99 0.25 tag")  # a duplicate
    p = tmp_path / "run.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def both(**kw):
        monkeypatch.setattr(trec, "CHUNK_BYTES", 1 << 12)  # many blocks
        monkeypatch.setattr(trec, "NUMBA_MIN_BYTES", 0)
        fused = read_run(p, **kw)
        monkeypatch.setattr(trec, "NUMBA_MIN_BYTES", 1 << 62)
        plain = read_run(p, **kw)
        return fused, plain

    fused, plain = both(dedupe=True)
    assert fused.qids == plain.qids and np.array_equal(fused.ptr, plain.ptr)
    assert np.array_equal(fused.scores, plain.scores)
    assert all(fused.ranked(q) == plain.ranked(q) for q in plain.qids)
    assert np.array_equal(fused.duplicates, plain.duplicates)
    assert fused.n_duplicates_removed == plain.n_duplicates_removed == 84  # split queries repeat ids
    for q in plain.qids:  # trec_eval's order: score descending, then the id descending (strcmp)
        r = fused.ranked(q)
        sc = fused.scores[fused.ptr[fused.qindex[q]] : fused.ptr[fused.qindex[q] + 1]].tolist()
        keyed = [(s_, d.encode()) for s_, d in zip(sc, r)]
        assert keyed == sorted(keyed, reverse=True)
    with pytest.raises(InputError, match=r"run lists a document twice for one query \(first on line \d+\)"):
        both()


def test_a_small_run_file_does_not_import_numba(tmp_path):
    """A tiny ``score retrieval --qrels/--run`` spent 72 % of its 1.2 s importing numba for the
    lazy vocabulary (issue #33); below NUMBA_MIN_BYTES the run is read by numpy."""
    import subprocess
    import sys

    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq2 Q0 d3 1 3.0 r\n")
    code = (
        "import sys; from kg_rageval.families.retrieval.trec import read_run; "
        f"r = read_run({str(tmp_path / 'run.txt')!r}); assert r.ranked('q1') == ['d1', 'd2'], r.ranked('q1'); "
        "print('numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_compiled_judgement_lookup_equals_numpy(monkeypatch):
    """``rank``'s compiled judgement lookup gives the numpy path's grades and pool flags, so
    every measure is the same bit for bit: a run with its own vocabulary (remapped), queries
    missing from the run and run-only queries, negative and zero grades, a depth cut."""
    from kg_rageval.families.retrieval import _kernels, measures
    from kg_rageval.families.retrieval.measures import TREC_ALL, compute, rank

    if not _kernels.HAVE_NUMBA:
        pytest.skip("numba not installed")
    rng = np.random.default_rng(3)
    qrels = {f"q{q}": {f"d{d}": int(rng.integers(-1, 4)) for d in rng.choice(300, 12)} for q in range(60)}
    run = {f"q{q}": {f"d{d}": float(rng.random()) for d in rng.choice(400, 40)} for q in range(5, 70)}
    q = Qrels.from_dict(qrels)
    for r in (Run.from_dict(run), Run.from_dict(run, vocab=q.vocab)):
        for depth in (None, 7):
            monkeypatch.setattr(measures, "JUDGE_KERNEL_MIN", 0)
            a = rank(q, r, depth=depth)
            pa = compute(q, r, TREC_ALL, depth=depth)
            monkeypatch.setattr(measures, "JUDGE_KERNEL_MIN", 1 << 62)
            b = rank(q, r, depth=depth)
            pb = compute(q, r, TREC_ALL, depth=depth)
            assert np.array_equal(a.ptr, b.ptr) and np.array_equal(a.grade, b.grade)
            assert np.array_equal(a.inq, b.inq) and a.inq.sum() > 5 and (a.grade < 0).any()
            assert np.array_equal(a.missing, b.missing) and a.run_only == b.run_only
            assert all(np.array_equal(pa.values[m], pb.values[m]) for m in pb.values)


def test_compiled_qrels_reader_and_shared_table_equal_the_numpy_readers(tmp_path, monkeypatch):
    """TREC qrels read by the fused compiled reader equal the numpy reader's (grades, codes in
    first-seen order, comments, negative and exponent grades, the same errors); a run read
    into the qrels' vocabulary continues its table (ids of at most 8 bytes matched in the slot,
    longer ones by the arena's bytes, across blocks and table growth) and scores exactly as a
    run read into a plain vocabulary."""
    from kg_rageval.families.retrieval import _kernels, trec
    from kg_rageval.families.retrieval.measures import compute
    from kg_rageval.families.retrieval.runs import LazyVocab, Vocab

    if not _kernels.HAVE_NUMBA:
        pytest.skip("numba not installed")
    monkeypatch.setattr(trec, "CHUNK_BYTES", 1 << 14)
    monkeypatch.setattr(trec, "NUMBA_MIN_BYTES", 1 << 8)
    rng = np.random.default_rng(3)
    ids = (
        [f"d{i}" for i in range(3000)]
        + [f"a-much-longer-document-id-{i}" for i in range(3000)]
        + ["12345678"]
    )
    ql, rl = ["# judged", ""], []
    for q in range(150):
        judged = rng.choice(len(ids), 12, replace=False).tolist()
        for j, d in enumerate(judged):
            g = ["0", "1", "2", "3", "-1", "1e0"][j % 6]
            ql.append(f"q{q} 0 {ids[d]} {g}")
        for j, d in enumerate(rng.choice(len(ids), 40, replace=False).tolist()):
            rl.append(f"q{q} Q0 {ids[d]} {j + 1} {rng.integers(0, 20) / 4:.2f} t")
    qp, rp = tmp_path / "q.txt", tmp_path / "r.txt"
    qp.write_text("\n".join(ql) + "\n")
    rp.write_text("\n".join(rl) + "\n")
    fast = read_qrels(qp)
    plain = read_qrels(qp, vocab=Vocab())
    assert isinstance(fast.vocab, LazyVocab) and fast.vocab.table is not None
    assert fast.vocab.strings == plain.vocab.strings and fast.qids == plain.qids
    assert np.array_equal(fast.ptr, plain.ptr) and np.array_equal(fast.docs, plain.docs)
    assert np.array_equal(fast.grades, plain.grades)
    n_judged = len(fast.vocab)
    run = read_run(rp, vocab=fast.vocab)
    assert run.vocab is fast.vocab and fast.vocab._lazy_index is None
    assert fast.vocab.strings[:n_judged] == plain.vocab.strings  # the qrels' ids keep their codes
    assert (
        len(fast.vocab)
        == len(set(fast.vocab.strings))
        == len({ln.split()[2] for ln in ql + rl if ln and not ln.startswith("#")})
    )
    other = read_run(rp, vocab=Vocab())
    assert run.to_dict() == other.to_dict()
    names = ["AP", "nDCG@10", "P@5", "RR", "Rprec", "Bpref", "Judged@10"]
    a, b = compute(fast, run, names), compute(read_qrels(qp, vocab=Vocab()), other, names)
    for k in b.values:
        assert np.array_equal(a.values[k], b.values[k]), k
    n_all = len(fast.vocab)
    assert fast.vocab.index[ids[5]] == fast.vocab.strings.index(ids[5])  # the dict: table given up
    assert fast.vocab.table is None and len(fast.vocab) == n_all == len(fast.vocab.index)
    for text, msg in [
        (
            "q1 0 d1 1\nq1 0 d2\n",
            r"line 2: expected 4 columns \(query, iteration, document, relevance\), found 3",
        ),
        ("q1 0 d1 1\nq1 0 d2 1 x\n", r"line 2: expected 4 columns .*found 5"),
        ("q1 0 d1 1\nq1 0 d2 1,5\n", r"line 2: relevance is not a number: '1,5'"),
        ("q1 0 d1 1\nq1 0 d1 2\n", r"document judged twice for one query"),
    ]:
        bad = tmp_path / "bad.txt"
        bad.write_text(text + "# pad to the compiled reader's threshold\n" * 10)
        with pytest.raises(InputError, match=msg):
            read_qrels(bad)
        with pytest.raises(InputError, match=msg):
            read_qrels(bad, vocab=Vocab())
