"""The vectorised input paths of retrieval equal the per-id dictionary paths they replace:
interning (``Vocab.codes`` through pandas' string hash table vs one ``setdefault`` per id),
``Qrels.from_dict`` / ``Run.from_dict`` / ``Run.from_lists`` arrays, ``evaluate_dicts``'s
sparse ranks — on generated data with tied scores, unjudged and missing documents, a shared
vocabulary that already holds ids, and non-string ids (which take the dictionary path)."""

from __future__ import annotations

import numpy as np
import pytest

from kg_rageval.families.retrieval import Qrels, Run, Vocab, evaluate_dicts, evaluate_run
from kg_rageval.families.retrieval import runs as runs_mod

pytest.importorskip("pandas")


def _generate(n_queries: int, seed: int, n_docs: int = 400):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(n_queries):
        judged = rng.choice(n_docs, int(rng.integers(1, 30)), replace=False)
        qrels[f"q{q}"] = {f"d{d}": int(g) for d, g in zip(judged, rng.integers(-1, 4, len(judged)))}
        if rng.random() < 0.9:
            docs = rng.choice(n_docs, int(rng.integers(0, 150)), replace=False)
            # integer scores: many ties, decided by the document id (trec_eval's order)
            run[f"q{q}"] = {f"d{d}": float(s) for d, s in zip(docs, rng.integers(0, 8, len(docs)))}
    run["only-in-run"] = {"d1": 1.0, "zz-unjudged": 0.5}
    return qrels, run


def _dict_path(monkeypatch):
    monkeypatch.setattr(runs_mod, "FACTORIZE_MIN", 10**12)


def _same_qrels(a: Qrels, b: Qrels) -> None:
    assert a.qids == b.qids and a.vocab.strings == b.vocab.strings
    np.testing.assert_array_equal(a.ptr, b.ptr)
    np.testing.assert_array_equal(a.docs, b.docs)
    np.testing.assert_array_equal(a.grades, b.grades)


def _same_run(a: Run, b: Run) -> None:
    assert a.qids == b.qids and a.vocab.strings == b.vocab.strings
    for f in ("ptr", "docs", "scores", "duplicates"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None) == (y is None), f
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=f)


def test_factorize_codes_first_seen():
    ids = ["b", "a", "b", "c", "a", "é", "x\x00y", "x\x00z", "x"]
    codes, distinct = runs_mod.factorize(ids)
    assert distinct == ["b", "a", "c", "é", "x\x00y", "x\x00z", "x"]
    assert codes.tolist() == [0, 1, 0, 2, 1, 3, 4, 5, 6]
    assert runs_mod.factorize(["a", 1, "b"]) is None  # not all strings: the dictionary path
    assert runs_mod.factorize(["a", None]) is None


@pytest.mark.parametrize("n", [0, 1, 7, 5000])
def test_vocab_codes_equal_dict_path(n, monkeypatch):
    rng = np.random.default_rng(n)
    ids = [f"d{x}" for x in rng.integers(0, max(n // 3, 1), n)]
    seed = ["d3", "zzz", "d1"]
    fast = Vocab(seed)
    monkeypatch.setattr(runs_mod, "FACTORIZE_MIN", 1)
    got = fast.codes(ids)
    monkeypatch.setattr(runs_mod, "FACTORIZE_MIN", 10**12)
    slow = Vocab(seed)
    want = slow.codes(ids)
    np.testing.assert_array_equal(got, want)
    assert fast.strings == slow.strings and fast.index == slow.index


def test_vocab_codes_non_string_ids_fall_back(monkeypatch):
    monkeypatch.setattr(runs_mod, "FACTORIZE_MIN", 1)
    v = Vocab()
    assert v.codes([1, "1", 2, 1]).tolist() == [0, 1, 2, 0]
    assert v.strings == [1, "1", 2]


def test_from_dict_arrays_equal_dict_path(monkeypatch):
    qrels, run = _generate(600, seed=3)
    monkeypatch.setattr(runs_mod, "FACTORIZE_MIN", 1)
    q1 = Qrels.from_dict(qrels)
    r1 = Run.from_dict(run, vocab=q1.vocab)
    r1_own = Run.from_dict(run)
    l1 = Run.from_lists({q: list(d) + list(d)[:2] for q, d in run.items()}, vocab=Vocab(["d5"]), dedupe=True)
    _dict_path(monkeypatch)
    q2 = Qrels.from_dict(qrels)
    r2 = Run.from_dict(run, vocab=q2.vocab)
    r2_own = Run.from_dict(run)
    l2 = Run.from_lists({q: list(d) + list(d)[:2] for q, d in run.items()}, vocab=Vocab(["d5"]), dedupe=True)
    _same_qrels(q1, q2)
    _same_run(r1, r2)
    _same_run(r1_own, r2_own)
    _same_run(l1, l2)
    assert l1.n_duplicates_removed == l2.n_duplicates_removed > 0


def _compiled(monkeypatch):
    """Every large-input kernel on from one id (``FACTORIZE_MIN``: the pandas path too)."""
    pytest.importorskip("numba")
    monkeypatch.setattr(runs_mod, "FACTORIZE_MIN", 1)
    monkeypatch.setattr(runs_mod, "COMPILED_INTERN_MIN", 1)
    monkeypatch.setattr(runs_mod, "COMPILED_RANK_MIN", 1)


def test_compiled_interning_hand_worked(monkeypatch):
    from kg_rageval.families.retrieval import _kernels

    pytest.importorskip("numba")
    raw = np.frombuffer("b\na\nb\n\né\nx\x00y\n\na".encode(), dtype=np.uint8)
    codes, first = _kernels.intern_strings(raw, 8)  # b a b "" é x\0y "" a
    assert codes.tolist() == [0, 1, 0, 2, 3, 4, 2, 1] and first.tolist() == [0, 1, 3, 4, 5]
    assert _kernels.intern_strings(raw, 7) is None  # more rows than ids: an id held a newline
    assert _kernels.intern_strings(raw, 9) is None
    _compiled(monkeypatch)
    ids = ["b", "a", "b", "c", "a", "é", "x\x00y", "x\x00z", "x", ""]
    codes, distinct = runs_mod.factorize(ids)
    assert distinct == ["b", "a", "c", "é", "x\x00y", "x\x00z", "x", ""]
    assert codes.tolist() == [0, 1, 0, 2, 1, 3, 4, 5, 6, 7]
    assert runs_mod.factorize(["a", 1, "b"]) is None  # not all strings: the dictionary path


@pytest.mark.parametrize(
    "ids",
    [
        ["a\nb", "a", "b", "a\nb", "a"],  # a newline inside an id: the pandas / dictionary path
        ["\ud800", "a", "\ud800"],  # a lone surrogate cannot be encoded: likewise
        [1, "1", 2, 1],  # not strings: the dictionary path
    ],
)
def test_compiled_interning_falls_back(ids, monkeypatch):
    _compiled(monkeypatch)
    v = Vocab(["a"])
    got = v.codes(ids)
    _dict_path(monkeypatch)
    w = Vocab(["a"])
    np.testing.assert_array_equal(got, w.codes(ids))
    assert v.strings == w.strings


@pytest.mark.parametrize("n_seed", [0, 3, 2000])
def test_compiled_vocab_codes_equal_dict_path(n_seed, monkeypatch):
    """A vocabulary already holding ids (some of them among the new ids), many partitions
    (200,000 ids: 3 bits), non-ASCII ids; codes, order of the added ids and index equal."""
    rng = np.random.default_rng(n_seed)
    ids = [f"d{x}" if x % 7 else f"dé{x}" for x in rng.integers(0, 60_000, 200_000)]
    seed = [f"d{x}" for x in range(0, 2 * n_seed, 2)] + ["zzz"] * bool(n_seed)
    _compiled(monkeypatch)
    fast = Vocab(seed)
    got = fast.codes(ids)
    _dict_path(monkeypatch)
    slow = Vocab(seed)
    np.testing.assert_array_equal(got, slow.codes(ids))
    assert fast.strings == slow.strings and fast.index == slow.index


def test_compiled_ranking_equals_numpy(monkeypatch):
    """trec_order: the compiled row sort (rows with equal scores re-sorted by id) gives the
    numpy path's permutation, on square and uneven rows, ties, signed zeros and infinities."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(5)
    lens = rng.integers(0, 60, 3000)
    lens[::2] = 40
    ptr = runs_mod._csr(lens)
    n = int(ptr[-1])
    scores = rng.random(n)
    tied = rng.random(n) < 0.2
    scores[tied] = rng.integers(0, 4, int(tied.sum())).astype(float)
    scores[rng.random(n) < 0.01] = -0.0
    scores[rng.random(n) < 0.01] = np.inf
    v = Vocab()
    docs = v.codes([f"d{i}" for i in rng.permutation(n)])
    monkeypatch.setattr(runs_mod, "COMPILED_RANK_MIN", 1)
    monkeypatch.setattr(runs_mod, "FACTORIZE_MIN", 1)
    got = runs_mod.trec_order(ptr, scores, docs, v)
    want = runs_mod.trec_order(ptr, scores, docs, v, compiled=False)
    np.testing.assert_array_equal(got, want)
    # and by hand: score descending, then id descending within each row
    for r in (0, 1, 7):
        a, b = int(ptr[r]), int(ptr[r + 1])
        ids = [v.strings[d] for d in docs[a:b]]
        expect = sorted(range(b - a), key=lambda i: (scores[a + i], ids[i]), reverse=True)
        assert (got[a:b] - a).tolist() == expect


def test_compiled_from_dict_equals_dict_path(monkeypatch):
    qrels, run = _generate(600, seed=4)
    _compiled(monkeypatch)
    q1 = Qrels.from_dict(qrels)
    r1 = Run.from_dict(run, vocab=q1.vocab)
    r1_own = Run.from_dict(run)
    _dict_path(monkeypatch)
    q2 = Qrels.from_dict(qrels)
    r2 = Run.from_dict(run, vocab=q2.vocab)
    r2_own = Run.from_dict(run)
    _same_qrels(q1, q2)
    _same_run(r1, r2)
    _same_run(r1_own, r2_own)


def test_binary_and_mixed_qrels_shapes(monkeypatch):
    qrels = {"a": ["d1", "d2", "d1"], "b": {"d3": 2}, 7: {"d1": 1}}
    q = Qrels.from_dict(qrels)
    assert q.qids == ["a", "b", "7"] and q.to_dict() == {
        "a": {"d1": 1.0, "d2": 1.0},
        "b": {"d3": 2.0},
        "7": {"d1": 1.0},
    }


@pytest.mark.slow
@pytest.mark.parametrize("uneven", [False, True])  # the padded score grid / one query at a time
@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_evaluate_paths_equal(engine, uneven, monkeypatch):
    from kg_rageval.families.retrieval import _kernels

    if engine == "numba" and not _kernels.HAVE_NUMBA:
        pytest.skip("numba not installed")
    qrels, run = _generate(700, seed=11)
    if uneven:
        run["uneven"] = {f"d{i}": float(i % 4) for i in range(380)}  # a long row with ties
        qrels["uneven"] = {"d5": 2, "d8": 1, "d9": 0}
    q = Qrels.from_dict(qrels)
    ref = evaluate_run(q, Run.from_dict(run, vocab=q.vocab), (1, 3, 5, 10), engine=engine)
    _dict_path(monkeypatch)
    q2 = Qrels.from_dict(qrels)
    old = evaluate_run(q2, Run.from_dict(run, vocab=q2.vocab), (1, 3, 5, 10), engine=engine)
    for chunk in (10**9, 37):  # the sparse ranks in one grid or in small chunks
        monkeypatch.setattr("kg_rageval.families.retrieval.metrics._SPARSE_CHUNK", chunk)
        fast = evaluate_dicts(qrels, run, (1, 3, 5, 10), engine=engine)
        assert fast.qids == ref.qids and sorted(fast.run_only) == sorted(ref.run_only)
        np.testing.assert_array_equal(fast.missing, ref.missing)
        for name in ref.values:
            np.testing.assert_array_equal(ref.values[name], old.values[name], err_msg=name)
            np.testing.assert_allclose(fast.values[name], ref.values[name], rtol=0, atol=1e-12, err_msg=name)


def test_evaluate_dicts_nan_scores_take_the_ranked_path():
    qrels = {"q": {"a": 1, "b": 1}}
    run = {"q": {"a": float("nan"), "b": 0.5, "c": 0.9}}
    pq = evaluate_dicts(qrels, run, (1, 2))
    ref = evaluate_run(Qrels.from_dict(qrels), Run.from_dict(run), (1, 2))
    for name in ref.values:
        np.testing.assert_allclose(pq.values[name], ref.values[name], atol=1e-12, err_msg=name)


# ------------------------------------------------------------------ the records path


def _records(n: int, seed: int, docs: list[str], nodes: list[str], repeats: bool = True) -> list[dict]:
    """Every run shape, ties, repeated ids (with dedupe), unjudged and unknown documents,
    missing runs, records without relevant gold, slices and gold nodes."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        pick = lambda m: [docs[j] for j in rng.choice(len(docs), min(m, len(docs)), replace=False)]  # noqa: E731
        gold_ids = pick(int(rng.integers(1, 4))) + (["unknown-doc"] if i % 11 == 0 else [])
        gold = {d: int(g) for d, g in zip(gold_ids, rng.integers(0, 3, len(gold_ids)))} if i % 3 else gold_ids
        ranked = pick(int(rng.integers(0, 9))) + (["never-judged"] if i % 5 == 0 else [])
        sc = rng.integers(0, 3, len(ranked)).tolist()  # integer scores: ties
        shape = i % 6
        if shape == 0:
            run = ranked
        elif shape == 1:
            run = [[d, float(s)] for d, s in zip(ranked, sc)]
        elif shape == 2:
            run = dict(zip(ranked, sc))
        elif shape == 3:  # the checked parser's shape, or a common one
            run = [{"id": d, "score": s} if repeats else [d, s] for d, s in zip(ranked, sc)]
        elif shape == 4:
            run = ranked + ranked[:2] if repeats else ranked[::-1]  # repeated ids (dedupe)
        else:
            run = None if i % 4 else ranked
        sec = {"gold": gold}
        if run is not None:
            sec["run"] = run
        if i % 7 == 0:
            sec["gold_node"] = nodes[i % len(nodes)]
        rec = {"id": f"r{i}", "retrieval": sec, "slices": {"lane": ["a", "b", None][i % 3]}}
        if i % 13 == 0:
            rec = {"id": f"r{i}"}  # unscored: no retrieval section
        out.append(rec)
    return out


def _same_evaluation(a, b) -> None:
    assert a.record_ids.tolist() == b.record_ids.tolist()
    assert set(a.stats) == set(b.stats)
    for k in a.stats:
        np.testing.assert_allclose(a.stats[k], b.stats[k], rtol=0, atol=1e-12, err_msg=k)
    assert {k: v.tolist() for k, v in a.keys.items()} == {k: v.tolist() for k, v in b.keys.items()}
    assert {k: v.tolist() for k, v in a.details.items()} == {k: v.tolist() for k, v in b.details.items()}
    assert a.unscored == b.unscored and a.meta == b.meta


@pytest.mark.parametrize("repeats", [True, False])  # repeated ids and the {"id", "score"} shape, or not
@pytest.mark.parametrize("with_corpus", [False, True])
@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_score_retrieval_equals_reference(with_corpus, engine, repeats, fixtures_dir):
    import retrieval_reference as ref

    from kg_rageval.families.retrieval import read_corpus, score_retrieval
    from kg_rageval.ontology.loaders.table import load_table

    d = fixtures_dir / "retrieval"
    onto = load_table(d / "attack-mini.tsv")
    corpus = read_corpus(d / "category_corpus.jsonl", onto) if with_corpus else None
    docs = list(corpus.ids) if corpus is not None else [f"d{i}" for i in range(40)]
    recs = _records(400, seed=5, docs=docs, nodes=["T1003", "TA0006", "T1562.001"], repeats=repeats)
    if engine == "numba":
        pytest.importorskip("numba")
    principal = {"tenant": "acme", "status": "published"} if with_corpus else None
    if principal:
        for r in recs:
            if "retrieval" in r and int(r["id"][1:]) % 2:
                r["retrieval"]["principal"] = principal
                r["retrieval"]["filters"] = [{"field": "category", "op": "within", "value": "TA0006"}]
    for gain in ("graded", "binary"):
        got = score_retrieval(onto, recs, corpus, k=(1, 3, 5), gain=gain, dedupe=True, engine=engine)
        want = ref.score_retrieval(onto, recs, corpus, k=(1, 3, 5), gain=gain, dedupe=True)
        _same_evaluation(got, want)
    assert (got.stats["n_duplicates_removed"].sum() > 0) == repeats and got.stats["n_missing_run"].sum() > 0


@pytest.mark.parametrize(
    "sec,msg",
    [
        ({"gold": {"a": 1}, "run": ["b", "b"]}, "'b' more than once"),
        ({"gold": {"a": 1}, "run": [["b", 1.0], ["c", "x"]]}, "retrieval.run[1]"),
        ({"gold": {"a": 1}, "run": {"b": float("nan")}}, "finite"),
        ({"gold": {"a": 1}, "run": [["b", 10**400]]}, "too large"),
        ({"gold": {"a": float("inf")}, "run": ["a"]}, "finite"),
        ({"gold": {"a": 10**400}, "run": ["a"]}, "too large"),
        ({"gold": ["a", 3], "run": ["a"]}, "retrieval.gold[1]"),
        ({"gold": {"a": 1}, "run": ["a", 3]}, "retrieval.run[1]"),
    ],
)
def test_score_retrieval_bad_input_same_error(sec, msg, fixtures_dir):
    import retrieval_reference as ref

    from kg_rageval.base.errors import InputError
    from kg_rageval.families.retrieval import score_retrieval
    from kg_rageval.ontology.loaders.table import load_table

    onto = load_table(fixtures_dir / "retrieval" / "attack-mini.tsv")
    recs = [{"id": "ok", "retrieval": {"gold": ["a"], "run": ["a"]}}, {"id": "bad", "retrieval": sec}]
    with pytest.raises(InputError) as got:
        score_retrieval(onto, recs)
    with pytest.raises(InputError) as want:
        ref.score_retrieval(onto, recs)
    assert str(got.value) == str(want.value) and msg in str(got.value)


def test_evaluate_lists_equals_evaluate_run():
    from kg_rageval.families.retrieval.metrics import evaluate_lists

    qrels, run = _generate(300, seed=2)
    qids = list(qrels)
    golds = [qrels[q] for q in qids]
    ranked = [list(run[q]) if q in run else None for q in qids]
    got = evaluate_lists(golds, ranked, (1, 4, 10))
    q = Qrels.from_dict(dict(zip(map(str, range(len(qids))), golds)))
    want = evaluate_run(
        q,
        Run.from_lists({str(i): r for i, r in enumerate(ranked) if r is not None}, vocab=q.vocab),
        (1, 4, 10),
    )
    np.testing.assert_array_equal(got.missing, want.missing)
    for name in want.values:
        np.testing.assert_allclose(got.values[name], want.values[name], rtol=0, atol=1e-12, err_msg=name)


def test_per_query_values_do_not_depend_on_engine_or_batch(fixtures_dir):
    """Every float sum is a query's own sum in rank order from 0, in both engines: the numpy
    and numba kernels give the same bits, and so does a query scored in any batch (what lets
    records be scored in chunks)."""
    from kg_rageval.families.retrieval import _kernels, score_retrieval
    from kg_rageval.families.retrieval.metrics import evaluate_dicts
    from kg_rageval.ontology.loaders.table import load_table

    qrels, run = _generate(500, seed=13)
    q = Qrels.from_dict(qrels)
    r = Run.from_dict(run, vocab=q.vocab)
    engines = ["numpy"] + (["numba"] if _kernels.HAVE_NUMBA else [])
    base = evaluate_run(q, r, (1, 3, 10), engine="numpy")
    for engine in engines:
        for pq in (
            evaluate_run(q, r, (1, 3, 10), engine=engine),
            evaluate_dicts(qrels, run, (1, 3, 10), engine=engine),
        ):
            for name in base.values:
                np.testing.assert_array_equal(pq.values[name], base.values[name], err_msg=(engine, name))
    onto = load_table(fixtures_dir / "retrieval" / "attack-mini.tsv")
    recs = _records(300, seed=8, docs=[f"d{i}" for i in range(40)], nodes=["T1003"], repeats=False)
    for engine in engines:
        whole = score_retrieval(onto, recs, k=(1, 3, 5), engine=engine)
        parts = [
            score_retrieval(onto, recs[a:b], k=(1, 3, 5), engine=engine)
            for a, b in ((0, 7), (7, 150), (150, 300))
        ]
        for k_ in whole.stats:
            np.testing.assert_array_equal(
                np.concatenate([p.stats[k_] for p in parts]), whole.stats[k_], err_msg=k_
            )


def _filter_records(n: int, seed: int, docs: list[str]) -> list[dict]:
    """Records exercising the corpus paths: every filter operator (on a metadata field, on the
    category field, ``within`` with several values, a value the ontology lacks), filter lists
    shared by many records and unique ones, inconsistent logs (a retrieved gold document the
    logged filters exclude), unlogged filters, gold filters, restricted and absent principals,
    gold documents not in the corpus, gold of several categories and given gold nodes."""
    rng = np.random.default_rng(seed)
    filters = [
        [{"field": "category", "op": "within", "value": "TA0006"}],
        [{"field": "category", "op": "within", "value": ["TA0005", "T1003"], "source": "predicted"}],
        [{"field": "categories", "op": "eq", "value": "T1003.001"}],
        [
            {"field": "category", "op": "in", "value": ["T1110", "T1070"]},
            {"field": "kind", "op": "ne", "value": "proc"},
        ],
        [{"field": "kind", "op": "in", "value": ["desc", "faq"]}],
        [
            {"field": "kind", "op": "not_in", "value": ["desc"]},
            {"field": "category", "op": "within", "value": "T1562"},
        ],
        [{"field": "kind", "op": "eq", "value": "proc"}],
        [{"field": "nowhere", "op": "eq", "value": "x"}],
        [],
    ]
    out = []
    for i in range(n):
        pick = [docs[j] for j in rng.choice(len(docs), int(rng.integers(1, 4)), replace=False)]
        gold = {
            d: int(g) for d, g in zip(pick + (["not-in-corpus"] if i % 9 == 0 else []), rng.integers(0, 3, 4))
        }
        run = [docs[j] for j in rng.choice(len(docs), int(rng.integers(0, 6)), replace=False)]
        sec: dict = {"gold": gold if i % 4 else list(gold), "run": run}
        if i % 10:
            f = filters[i % len(filters)]
            sec["filters"] = [dict(x) for x in f] if i % 3 else f  # equal content, new objects, or shared
        if i % 5 == 0:
            sec["gold_filters"] = filters[(i // 5) % len(filters)]
        if i % 3:
            sec["principal"] = (
                {"tenant": ["acme"] if i % 7 == 0 else "acme"} if i % 6 else {"status": "published"}
            )
        if i % 17 == 0:
            sec["gold_node"] = "T1562"
        out.append({"id": f"q{i}", "retrieval": sec, "slices": {"lane": "ab"[i % 2]}})
    return out


@pytest.mark.parametrize("on_unknown", ["error", "count"])
def test_score_retrieval_corpus_paths_equal_reference(on_unknown, fixtures_dir):
    """The vectorised entitlement, gold-node, replay and attribution passes equal the
    per-record reference on every filter operator, inconsistent logs and shared filters."""
    import json

    import retrieval_reference as ref

    from kg_rageval.families.retrieval import score_retrieval
    from kg_rageval.families.retrieval.corpus import Corpus
    from kg_rageval.ontology.loaders.table import load_table

    d = fixtures_dir / "retrieval"
    onto = load_table(d / "attack-mini.tsv")
    docs = [json.loads(x) for x in (d / "category_corpus.jsonl").read_text().splitlines()]
    for j, doc in enumerate(docs):
        doc["kind"] = ["desc", "proc", ["desc", "faq"]][j % 3]
    corpus = Corpus.from_records(docs, onto)
    recs = _filter_records(600, seed=11, docs=[x["id"] for x in docs])
    if on_unknown == "count":
        for r in recs[1::25]:
            r["retrieval"]["filters"] = [{"field": "category", "op": "within", "value": "T9999"}]
    got = score_retrieval(onto, recs, corpus, k=(1, 3), on_unknown=on_unknown)
    want = ref.score_retrieval(onto, recs, corpus, k=(1, 3), on_unknown=on_unknown)
    _same_evaluation(got, want)
    st = got.stats  # every partition is exercised
    for name in (
        "fe_q_excluded",
        "fe_q_inconsistent",
        "att_q_hit",
        "att_q_filter",
        "att_q_ranker",
        "att_q_retriever",
        "n_gold_ineligible",
        "n_filters_not_logged",
        "pred_tp",
    ):
        assert st[name].sum() > 0, name
    assert {c for c in got.details["fe_cause"].tolist() if c} >= {"field:kind"}
    assert (got.meta.get("n_filter_ids_not_in_ontology", 0) > 0) == (on_unknown == "count")


def test_score_retrieval_bad_filter_names_the_record(fixtures_dir):
    from kg_rageval.base.errors import InputError
    from kg_rageval.families.retrieval import score_retrieval
    from kg_rageval.ontology.loaders.table import load_table

    onto = load_table(fixtures_dir / "retrieval" / "attack-mini.tsv")
    good = [{"field": "category", "op": "within", "value": "TA0006"}]
    recs = [{"id": f"q{i}", "retrieval": {"gold": ["a"], "run": ["a"], "filters": good}} for i in range(3)]
    recs.append(
        {
            "id": "bad",
            "_line": 4,
            "retrieval": {"gold": ["a"], "filters": [{"field": "category", "op": "near", "value": "x"}]},
        }
    )
    with pytest.raises(InputError, match=r"record 'bad' \(line 4\), field retrieval.filters\[0\].op: 'near'"):
        score_retrieval(onto, recs)


def test_score_retrieval_bad_principal_names_the_record(fixtures_dir):
    """The principal's fields are checked against the entitlement fields once per record
    without formatting its location; a bad one still raises naming the record and field."""
    from kg_rageval.base.errors import InputError
    from kg_rageval.families.retrieval import Corpus, score_retrieval
    from kg_rageval.ontology.loaders.table import load_table

    onto = load_table(fixtures_dir / "retrieval" / "attack-mini.tsv")
    corpus = Corpus.from_records([{"id": "a", "tenant": "acme"}, {"id": "b"}], onto)
    recs = [
        {"id": "ok", "retrieval": {"gold": ["a"], "run": ["a", "b"], "principal": {"tenant": "acme"}}},
        {
            "id": "bad",
            "retrieval": {"gold": ["a"], "run": ["a"], "principal": {"tenant": "acme", "locale": "en"}},
        },
    ]
    got = score_retrieval(onto, recs[:1], corpus)
    assert got.stats["n_ineligible_retrieved"].tolist() == [1.0]
    with pytest.raises(
        InputError, match=r"'bad'.*retrieval\.principal.*\['locale'\] are not entitlement fields"
    ):
        score_retrieval(onto, recs, corpus)


def test_vocab_tail_enters_the_index_when_read(monkeypatch):
    """Ids added by the compiled interning wait in the tail: ``len``, ``strings`` and codes
    are right before the dict is built; reading ``index`` builds it; a later small input (the
    dictionary path) continues the numbering."""
    _compiled(monkeypatch)
    v = Vocab(["x"])
    got = v.codes(["b", "x", "a", "b"])
    assert got.tolist() == [1, 0, 2, 1] and len(v) == 3 and v.strings == ["x", "b", "a"]
    assert v._tail == ["b", "a"]  # not yet in the dict
    monkeypatch.setattr(runs_mod, "FACTORIZE_MIN", 10**12)
    assert v.codes(["a", "c"]).tolist() == [2, 3]  # the dictionary path reads the index
    assert v.index == {"x": 0, "b": 1, "a": 2, "c": 3} and v._tail == []
    assert v.strings == ["x", "b", "a", "c"]


def test_score_retrieval_filter_memo_keeps_equal_non_strings_apart(fixtures_dir):
    """Logged filters are memoised on their content; ``1``, ``1.0``, ``True`` and ``"1"``
    (equal to each other in Python but for the string) are compared as their JSON spellings
    (``"1"``, ``"1.0"``, ``"true"``), so each record gets its own filter: the result equals
    the per-record reference, and the records filtering on the string ``"1"`` pass exactly the
    documents whose tier is 1."""
    import json

    import retrieval_reference as ref

    from kg_rageval.families.retrieval import score_retrieval
    from kg_rageval.families.retrieval.corpus import Corpus
    from kg_rageval.ontology.loaders.table import load_table

    d = fixtures_dir / "retrieval"
    onto = load_table(d / "attack-mini.tsv")
    docs = [json.loads(x) for x in (d / "category_corpus.jsonl").read_text().splitlines()]
    for j, doc in enumerate(docs):
        doc["tier"] = 1 if j % 2 else True
    corpus = Corpus.from_records(docs, onto)
    values = ["1", 1, True, 1.0]
    recs = [
        {
            "id": f"q{i}",
            "retrieval": {
                "gold": {docs[i % len(docs)]["id"]: 1},
                "run": [],  # not retrieved: excluded exactly when the logged filter fails it
                "filters": [{"field": "tier", "op": "eq", "value": values[(i // len(docs)) % 4]}],
            },
        }
        for i in range(8 * len(docs))
    ]
    got = score_retrieval(onto, recs, corpus, k=(1,))
    _same_evaluation(got, ref.score_retrieval(onto, recs, corpus, k=(1,)))
    excluded = got.stats["fe_docs_excluded"]
    for i in range(len(recs)):
        v, tier = values[(i // len(docs)) % 4], docs[i % len(docs)]["tier"]
        passes = json.dumps(v) == json.dumps(tier) if not isinstance(v, str) else v == json.dumps(tier)
        assert excluded[i] == (0 if passes else 1), (i, v, tier)
    assert 0 < excluded.sum() < len(recs)
