"""Retrieval metric kernels: the seed article's worked example, trec_eval (pytrec_eval) agreement
on thousands of generated queries, and the documented conventions (duplicates, missing runs,
no-gold queries, tie order)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.families.retrieval import Qrels, Run, _kernels, evaluate, evaluate_run, score_retrieval
from kg_rageval.ontology.loaders.table import load_table
from kg_rageval.records import read_records

pytrec_eval = pytest.importorskip("pytrec_eval")

TREC = {
    "P_{k}": "precision@{k}",
    "recall_{k}": "recall@{k}",
    "ndcg_cut_{k}": "ndcg@{k}",
    "success_{k}": "hit@{k}",
}
FLAT = {"recip_rank": "mrr", "map": "map", "Rprec": "r_precision"}


@pytest.fixture(scope="module")
def attack(fixtures_dir):
    return load_table(fixtures_dir / "retrieval" / "attack-mini.tsv")


def test_seed_four_query_example(attack, fixtures_dir):
    recs = read_records(fixtures_dir / "retrieval" / "seed_metrics.jsonl")
    m = score_retrieval(attack, recs, k=5).metrics()
    assert round(m["recall@5"].value, 3) == 0.750
    assert round(m["mrr"].value, 3) == 0.625
    assert round(m["ndcg@5"].value, 3) == 0.627
    assert m["recall@5"].denominator == 4
    # by hand: q1 hit at 2, q2 d2@1 d7@4, q3 d11@1, q4 none within 10
    assert m["hit@5"].value == 0.75
    assert m["precision@5"].value == pytest.approx((1 + 2 + 1 + 0) / 20)
    assert m["map"].value == pytest.approx((0.5 + (1 + 2 / 4) / 2 + 1 + 0) / 4)


def _generate(n_queries: int, seed: int, graded: bool, n_docs: int = 300):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(n_queries):
        nd = int(rng.integers(1, 40))
        judged = rng.choice(n_docs, nd, replace=False)
        levels = rng.integers(0, 4 if graded else 2, nd)
        qrels[f"q{q}"] = {f"d{d}": int(g) for d, g in zip(judged, levels)}
        if rng.random() < 0.9:  # ~10% missing runs
            nr = int(rng.integers(0, 120))
            docs = rng.choice(n_docs, nr, replace=False)
            # integer scores force many ties: trec_eval's order must decide them
            run[f"q{q}"] = {f"d{d}": float(s) for d, s in zip(docs, rng.integers(0, 6, nr))}
    for q in range(n_queries, n_queries + 20):  # run-only queries
        run[f"q{q}"] = {"d1": 1.0}
    return qrels, run


@pytest.mark.slow
@pytest.mark.parametrize("graded", [True, False])
@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_agrees_with_pytrec_eval_on_generated_queries(graded, engine):
    if engine == "numba" and not _kernels.HAVE_NUMBA:
        pytest.skip("numba not installed")
    qrels, run = _generate(3000, seed=7 if graded else 8, graded=graded)
    ks = (1, 3, 5, 10, 20)
    q = Qrels.from_dict(qrels)
    r = Run.from_dict(run, vocab=q.vocab)
    pq = evaluate_run(q, r, ks, engine=engine)
    ev = pytrec_eval.RelevanceEvaluator(
        qrels, {"P", "recall", "ndcg_cut", "success", "recip_rank", "map", "Rprec"}
    )
    ref = ev.evaluate(run)
    measures = {t.format(k=k): o.format(k=k) for k in ks for t, o in TREC.items()} | FLAT
    # pytrec_eval only offers success_{1,5,10} and ndcg_cut/P/recall at 5,10,... (trec_eval cut-offs)
    n_compared = 0
    for i, qid in enumerate(pq.qids):
        if qid not in ref or pq.n_rel[i] == 0:
            continue
        for theirs, ours in measures.items():
            if theirs in ref[qid]:
                assert pq.values[ours][i] == pytest.approx(ref[qid][theirs], abs=1e-12), (qid, ours)
                n_compared += 1
    assert n_compared > 2500 * 10
    # the dict path (ranks of judged documents only) gives the same per-query numbers
    from kg_rageval.families.retrieval.metrics import evaluate_dicts

    pd_ = evaluate_dicts(qrels, run, ks)
    for name in pq.values:
        np.testing.assert_allclose(pd_.values[name], pq.values[name], atol=1e-12, err_msg=name)
    # trec_eval -c: judged queries missing from the run count as 0 and stay in the mean
    missing = pq.missing & (pq.n_rel > 0)
    assert missing.sum() > 100
    assert (pq.values["map"][missing] == 0).all()
    assert set(pq.run_only) == {f"q{q}" for q in range(3000, 3020)}
    # pytrec_eval's mean (queries present in the run) differs from ours (-c) by exactly that
    present = [qq for qq in ref if pq.n_rel[q.qindex[qq]] > 0]
    pytrec_mean = np.mean([ref[qq]["map"] for qq in present])
    ours_c = pq.mean("map")
    assert ours_c == pytest.approx(pytrec_mean * len(present) / int((pq.n_rel > 0).sum()))


def test_numpy_and_numba_paths_agree():
    if not _kernels.HAVE_NUMBA:
        pytest.skip("numba not installed")
    qrels, run = _generate(500, seed=3, graded=True)
    q = Qrels.from_dict(qrels)
    r = Run.from_dict(run, vocab=q.vocab)
    for gain in ("graded", "binary"):
        a = evaluate_run(q, r, (1, 2, 7, 50), engine="numpy", gain=gain)
        b = evaluate_run(q, r, (1, 2, 7, 50), engine="numba", gain=gain)
        for name in a.values:
            np.testing.assert_allclose(a.values[name], b.values[name], atol=1e-12, err_msg=name)


def test_binary_ndcg_ignores_grade_levels():
    qrels = {"q": {"a": 3, "b": 1}}
    run = {"q": ["b", "a"]}
    graded = evaluate(qrels, run, 2)["ndcg@2"]
    binary = evaluate(qrels, run, 2, gain="binary")["ndcg@2"]
    # graded: (1 + 3/log2 3) / (3 + 1/log2 3); binary: both relevant -> 1
    assert graded == pytest.approx((1 + 3 / np.log2(3)) / (3 + 1 / np.log2(3)))
    assert binary == pytest.approx(1.0)


def test_tie_order_is_score_desc_then_doc_id_desc():
    r = Run.from_dict({"q": {"a": 1.0, "c": 1.0, "b": 2.0, "d": 0.5}})
    assert r.ranked("q") == ["b", "c", "a", "d"]
    # a grade-1 doc tied with a non-relevant one: trec_eval puts the larger id first
    assert evaluate({"q": {"a": 1}}, {"q": {"a": 1.0, "z": 1.0}}, 1)["precision@1"] == 0.0
    assert evaluate({"q": {"z": 1}}, {"q": {"a": 1.0, "z": 1.0}}, 1)["precision@1"] == 1.0


def test_duplicates_rejected_naming_the_query_or_deduped_and_counted(attack):
    recs = [{"id": "q9", "retrieval": {"gold": ["a"], "run": ["b", "a", "b"]}}]
    with pytest.raises(InputError, match=r"q9.*'b' more than once"):
        score_retrieval(attack, recs)
    ev = score_retrieval(attack, recs, dedupe=True, k=1)
    m = ev.metrics()
    assert m["n_duplicates_removed"].value == 1
    assert m["mrr"].value == 0.5
    with pytest.raises(InputError, match="'x' more than once"):
        Run.from_lists({"q": ["x", "x"]})
    assert Run.from_lists({"q": ["x", "y", "x"]}, dedupe=True).n_duplicates_removed == 1


def test_missing_run_counted_and_no_gold_is_a_separate_slice(attack):
    recs = [
        {"id": "a", "retrieval": {"gold": ["d1"], "run": ["d1"]}},
        {"id": "b", "retrieval": {"gold": ["d2"]}},  # missing run: scored as empty, counted
        {"id": "c", "retrieval": {"gold": [], "run": ["d3"]}},  # no gold: not a 0
        {"id": "d", "retrieval": {"gold": {"d4": 0}, "run": []}},  # judged non-relevant only
        {"id": "e", "query": "no retrieval section"},
    ]
    ev = score_retrieval(attack, recs, k=1)
    m = ev.metrics()
    assert m["recall@1"].value == 0.5 and m["recall@1"].denominator == 2
    assert m["n_missing_run"].value == 1 and m["missing_run_rate"].value == 0.5
    assert m["n_no_gold"].value == 2 and m["n_no_gold_nonempty_run"].value == 1
    assert ev.unscored_counts == {"no retrieval section": 1}
    assert list(ev.details["missing_run"]) == [False, True, False, False]
    # with nothing scorable the means are missing evidence, never 0
    ev0 = score_retrieval(attack, recs[2:4], k=1)
    assert ev0.metrics()["recall@1"].value is None
    assert "no scored queries" in ev0.metrics()["recall@1"].missing


def test_run_formats_and_bad_input(attack):
    recs = [
        {
            "id": "s",
            "retrieval": {"gold": {"x": 1}, "run": [{"id": "y", "score": 1}, {"id": "x", "score": 2}]},
        },
        {"id": "t", "retrieval": {"gold": {"x": 1}, "run": {"y": 2.0, "x": 1.0}}},
    ]
    m = score_retrieval(attack, recs, k=1).metrics()
    assert m["mrr"].value == pytest.approx((1 + 0.5) / 2)
    with pytest.raises(InputError, match=r"record 'b'.*retrieval.gold\['x'\].*grade must be a number"):
        score_retrieval(attack, [{"id": "b", "retrieval": {"gold": {"x": "high"}, "run": []}}])
    with pytest.raises(InputError, match=r"retrieval.run\[1\]"):
        score_retrieval(attack, [{"id": "b", "retrieval": {"gold": ["x"], "run": [["x", 1.0], "y"]}}])
    with pytest.raises(ValueError, match="positive"):
        score_retrieval(attack, recs, k=0)


def test_breakdown_and_slices(attack):
    recs = [
        {
            "id": "a",
            "slices": {"lane": "dense"},
            "retrieval": {"gold": ["d1"], "run": ["d1"], "gold_node": "T1003.001"},
        },
        {
            "id": "b",
            "slices": {"lane": "dense"},
            "retrieval": {"gold": ["d1"], "run": ["d2"], "gold_node": "T1003.002"},
        },
        {
            "id": "c",
            "slices": {"lane": "bm25"},
            "retrieval": {"gold": ["d1"], "run": ["d2", "d1"], "gold_node": "T1110"},
        },
    ]
    ev = score_retrieval(attack, recs, k=1)
    bd = ev.breakdown("slice:lane")
    assert bd["dense"]["metrics"]["recall@1"].value == 0.5
    assert bd["bm25"]["metrics"]["mrr"].value == 0.5
    roll = ev.rollup(attack)
    assert roll["T1003"]["metrics"]["recall@1"].value == 0.5
    assert roll["TA0006"]["n"] == 3 and roll["TA0006"]["metrics"]["mrr"].value == pytest.approx(
        (1 + 0 + 0.5) / 3
    )
    json.dumps(ev.to_dict(breakdowns=["slice:lane", "gold_node"]), allow_nan=False)


@pytest.mark.parametrize("engine,tie_limit", [("numpy", None), ("numpy", 0), ("numba", 0)])
def test_evaluate_dicts_equals_array_path(engine, tie_limit, monkeypatch):
    """Sparse path (ranks of judged documents only) and the ranked fallback (tie_limit=0)."""
    if engine == "numba" and not _kernels.HAVE_NUMBA:
        pytest.skip("numba not installed")
    from kg_rageval.families.retrieval import metrics
    from kg_rageval.families.retrieval.metrics import evaluate_dicts

    if tie_limit is not None:
        monkeypatch.setattr(metrics, "SPARSE_TIE_LIMIT", tie_limit)

    qrels, run = _generate(800, seed=21, graded=True)
    run["uneven"] = {f"d{i}": float(i % 3) for i in range(290)}  # ties, long row
    qrels["uneven"] = {"d5": 2, "d8": 1}
    q = Qrels.from_dict(qrels)
    a = evaluate_run(q, Run.from_dict(run, vocab=q.vocab), (1, 5, 10), engine="numpy")
    b = evaluate_dicts(qrels, run, (1, 5, 10), engine=engine)
    assert a.qids == b.qids and (a.missing == b.missing).all() and sorted(a.run_only) == sorted(b.run_only)
    for name in a.values:
        np.testing.assert_allclose(a.values[name], b.values[name], atol=1e-12, err_msg=name)
