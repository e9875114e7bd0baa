"""Retrieval benchmark: metrics vs pytrec_eval and ranx, TREC reading, filter replay.

    .venv/bin/python benchmarks/bench_retrieval.py            # the issue's sizes
    .venv/bin/python benchmarks/bench_retrieval.py --quick    # small smoke run

1. **Metrics**: ``--queries`` × ``--depth`` ranked documents (random scores, 10 graded gold per
   query), all metrics (Recall/Precision/Hit/nDCG/MRR@{1,5,10}, MRR, MAP, R-precision) in one
   pass. Each library is timed warm on its own prepared input, in the same process:
   ours ``evaluate_run(Qrels, Run)`` (numba kernel, compiled by a first call), ranx
   ``evaluate(Qrels, Run, metrics)`` (second call, after numba compilation), pytrec_eval
   ``RelevanceEvaluator.evaluate(run_dict)`` (its native input; includes its conversion into C
   structures). Preparation (dicts → each library's structures) is reported separately, and
   ours also straight from pytrec_eval's input dicts (``evaluate_dicts``: no interning).
2. **TREC run reading**: ``--trec-lines`` lines, ours ``read_run`` vs ``pytrec_eval.parse_run``.
3. **Files end to end** (``--files-lines`` run lines over ``--files-queries`` queries): read a
   TREC qrels and run file and compute the common measures (P@5, P@10, R@100, nDCG@10, AP,
   RR, R-prec, bpref, success@5) — ours ``load_qrels`` + ``load_run`` + ``compute`` +
   ``aggregate``; pytrec_eval ``parse_qrel`` + ``parse_run`` + ``RelevanceEvaluator``; ranx
   ``Qrels.from_file`` + ``Run.from_file`` + ``evaluate`` — and ours with every measure of
   ``TREC_ALL`` (73 values per query). Same files, same process, best of ``--repeat``.
4. **Filter replay**: the 350,000-concept synthetic ontology, a ``--corpus-docs`` corpus
   (1-3 categories, tenant, locale), ``--queries`` queries with 1-5 gold documents, a
   ``within`` filter and a locale filter each plus a tenant principal: entitlement +
   replay + false-exclusion counts (what ``score_retrieval`` does per query, vectorised).
5. **Entry points** (``--only entry``, sizes ``--entry-sizes 10000x1000,100000x100``): the same
   judgements and runs as TREC files, Python dicts and JSONL records, each read and evaluated
   as a user does it by ours, pytrec_eval and ranx (readers, conversions and evaluator
   construction included), the 14 measures they share, CPU time, interleaved, best of
   ``--repeat`` (:func:`bench_entry`).
6. **The CLI on TREC files** (``--only cli``, sizes ``--cli-sizes 10000x100,10000x1000,100000x100``,
   issue #33): ``kg-rageval score retrieval --qrels Q --run R`` (default measures, and
   ``--trec-eval``: trec_eval's default measures and output) against the trec_eval binary
   (``--trec-eval-bin PATH``, repeatable: e.g. the upstream ``make`` build and one at ``-O2``)
   and pytrec_eval (``parse_qrel`` + ``parse_run`` + ``RelevanceEvaluator`` over trec_eval's
   default measures + means) on the same files (10 judgements per query, 1,000,000 distinct
   document ids), each a fresh process: CPU time (user + sys) and peak RSS from ``os.wait4``,
   rounds interleaved, best of ``--repeat``. ``--tree DIR`` also runs another checkout's CLI
   (before/after) and every output is compared byte for byte (:func:`bench_cli`).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kg_rageval.families.retrieval import Corpus, Qrels, Run, evaluate_run, parse_filters, read_run, replay


def timed(fn, repeat=1):
    best = float("inf")
    out = None
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def make_data(nq: int, depth: int, seed: int = 0, n_docs: int | None = None):
    """``nq`` queries, ``depth`` random-scored documents each drawn from ``n_docs`` ids
    (default ``100 * depth``), 10 graded judgements per query (5 of them retrieved)."""
    rng = np.random.default_rng(seed)
    n_docs = 100 * depth if n_docs is None else n_docs
    qrels, run = {}, {}
    for q in range(nq):
        docs = rng.choice(n_docs, depth, replace=False)
        run[f"q{q}"] = dict(zip([f"d{x}" for x in docs], rng.random(depth).tolist()))
        gold = np.concatenate([rng.choice(docs, 5, replace=False), rng.choice(n_docs, 5, replace=False)])
        qrels[f"q{q}"] = {f"d{x}": int(rng.integers(1, 4)) for x in gold}
    return qrels, run


def bench_metrics(nq: int, depth: int, repeat: int) -> dict:
    qrels, run = make_data(nq, depth)
    res: dict = {"queries": nq, "depth": depth}
    res["ours_prepare"], (q, r) = timed(
        lambda: (lambda q: (q, Run.from_dict(run, vocab=q.vocab)))(Qrels.from_dict(qrels))
    )
    evaluate_run(q, r, (1, 5, 10))  # numba compile / warm-up
    res["ours_eval"], pq = timed(lambda: evaluate_run(q, r, (1, 5, 10)), repeat)
    from kg_rageval.families.retrieval.metrics import evaluate_dicts

    evaluate_dicts({"q": {"a": 1}}, {"q": {"a": 1.0}}, (1, 5, 10), engine="numba")  # compile
    res["ours_dicts"], pq2 = timed(lambda: evaluate_dicts(qrels, run, (1, 5, 10)), repeat)
    res["dicts_equal_arrays"] = all(np.allclose(pq.values[m], pq2.values[m], atol=1e-12) for m in pq.values)
    import pytrec_eval

    measures = {
        "P_1",
        "P_5",
        "P_10",
        "recall_1",
        "recall_5",
        "recall_10",
        "success_1",
        "success_5",
        "success_10",
        "ndcg_cut_5",
        "ndcg_cut_10",
        "recip_rank",
        "map",
        "Rprec",
    }
    res["pytrec_prepare"], ev = timed(lambda: pytrec_eval.RelevanceEvaluator(qrels, measures))
    res["pytrec_eval"], ref = timed(lambda: ev.evaluate(run), repeat)
    worst = 0.0
    for name, theirs in (
        ("map", "map"),
        ("ndcg@10", "ndcg_cut_10"),
        ("mrr", "recip_rank"),
        ("recall@5", "recall_5"),
    ):
        for i, qid in enumerate(pq.qids[:2000]):
            worst = max(worst, abs(pq.values[name][i] - ref[qid][theirs]))
    res["max_abs_diff_vs_pytrec"] = worst
    try:
        import ranx

        ms = [f"{m}@{k}" for k in (1, 5, 10) for m in ("recall", "precision", "hit_rate", "ndcg", "mrr")]
        ms += ["mrr", "map", "r-precision"]
        res["ranx_prepare"], (rq, rr) = timed(lambda: (ranx.Qrels(qrels), ranx.Run(run)))
        ranx.evaluate(rq, rr, ms)  # numba compilation
        res["ranx_eval"], rx = timed(lambda: ranx.evaluate(rq, rr, ms), repeat)
        res["max_abs_diff_vs_ranx_map"] = abs(pq.mean("map") - rx["map"])
    except ImportError:  # pragma: no cover
        res["ranx_eval"] = None
    return res


def bench_trec(lines: int) -> dict:
    import pytrec_eval

    rng = np.random.default_rng(1)
    per_q = 1000
    nq = max(1, lines // per_q)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "run.txt"
        with open(p, "w") as fh:
            for q in range(nq):
                docs = rng.choice(100_000, per_q, replace=False)
                sc = np.sort(rng.random(per_q))[::-1]
                fh.write(
                    "".join(f"q{q} Q0 d{d} {i + 1} {s:.6f} bench\n" for i, (d, s) in enumerate(zip(docs, sc)))
                )
        size = p.stat().st_size

        def theirs():
            with open(p) as fh:
                return pytrec_eval.parse_run(fh)

        read_run(p)  # numba compilation of the tokenizer (cached on disk afterwards)
        ours_t, theirs_t = [], []
        for _ in range(3):  # interleaved, best of 3: the machine is shared
            ours_t.append(timed(lambda: read_run(p))[0])
            theirs_t.append(timed(theirs)[0])
        t_ours, t_theirs = min(ours_t), min(theirs_t)
    return {"lines": nq * per_q, "bytes": size, "ours_read_run": t_ours, "pytrec_parse_run": t_theirs}


COMMON = {  # ours -> (pytrec_eval, ranx)
    "P@5": ("P_5", "precision@5"),
    "P@10": ("P_10", "precision@10"),
    "R@100": ("recall_100", "recall@100"),
    "nDCG@10": ("ndcg_cut_10", "ndcg@10"),
    "AP": ("map", "map"),
    "RR": ("recip_rank", "mrr"),
    "Rprec": ("Rprec", "r-precision"),
    "Bpref": ("bpref", "bpref"),
    "Success@5": ("success_5", "hit_rate@5"),
}


def bench_files(lines: int, nq: int, repeat: int) -> dict:
    """End to end from TREC files (see the module docstring, item 3)."""
    import pytrec_eval

    from kg_rageval.families.retrieval.measures import TREC_ALL, aggregate, compute
    from kg_rageval.families.retrieval.trec import load_qrels, load_run

    rng = np.random.default_rng(5)
    depth = max(1, lines // nq)
    out: dict = {"lines": depth * nq, "queries": nq, "depth": depth}
    with tempfile.TemporaryDirectory() as tmp:
        qp, rp = Path(tmp) / "qrels.txt", Path(tmp) / "run.txt"
        n_docs = 1_000_000
        with open(qp, "w") as fq, open(rp, "w") as fr:
            for lo in range(0, nq, 5000):
                hi = min(nq, lo + 5000)
                docs = rng.integers(0, n_docs, size=(hi - lo, depth))
                sc = -np.sort(-rng.random((hi - lo, depth)), axis=1)
                fr.write(
                    "".join(
                        f"q{lo + i} Q0 d{d} {j + 1} {s:.6f} bench\n"
                        for i in range(hi - lo)
                        for j, (d, s) in enumerate(zip(np.unique(docs[i]).tolist(), sc[i].tolist()))
                    )
                )
                gold = rng.integers(0, n_docs, size=(hi - lo, 5))
                fq.write(
                    "".join(
                        f"q{lo + i} 0 d{d} {g}\n"
                        for i in range(hi - lo)
                        for d, g in zip(
                            np.unique(np.concatenate((docs[i, :5], gold[i]))).tolist(),
                            rng.integers(0, 4, 10).tolist(),
                        )
                    )
                )
        out["bytes"] = rp.stat().st_size
        specs = list(COMMON)

        def ours(measures):
            q = load_qrels(qp)
            r = load_run(rp)
            pq = compute(q, r, measures)
            return aggregate(pq, "trec_eval")

        def theirs_pytrec():
            with open(qp) as fh:
                q = pytrec_eval.parse_qrel(fh)
            with open(rp) as fh:
                r = pytrec_eval.parse_run(fh)
            res = pytrec_eval.RelevanceEvaluator(q, {v[0] for v in COMMON.values()}).evaluate(r)
            return {m: float(np.mean([x[m] for x in res.values()])) for m in {v[0] for v in COMMON.values()}}

        try:
            import ranx

            def theirs_ranx():
                q = ranx.Qrels.from_file(str(qp), kind="trec")
                r = ranx.Run.from_file(str(rp), kind="trec")
                return ranx.evaluate(q, r, [v[1] for v in COMMON.values()])
        except ImportError:  # pragma: no cover
            theirs_ranx = None
        ours(specs)  # warm: numba kernels compile (cached on disk afterwards)
        if theirs_ranx is not None:
            theirs_ranx()  # numba compilation
        best: dict[str, float] = {}
        cpu: dict[str, float] = {}
        runs = [
            ("ours", lambda: ours(specs)),
            ("ours_all", lambda: ours(TREC_ALL)),
            ("pytrec_eval", theirs_pytrec),
        ]
        if theirs_ranx is not None:
            runs.append(("ranx", theirs_ranx))
        res: dict[str, object] = {}
        for _ in range(repeat):  # interleaved rounds, best of each: the machine is shared
            for name, fn in runs:
                gc.collect()
                c0, t0 = time.process_time(), time.perf_counter()
                res[name] = fn()
                t, c = time.perf_counter() - t0, time.process_time() - c0
                if t < best.get(name, float("inf")):
                    best[name], cpu[name] = t, c
        out.update(best)
        out.update({f"{k}_cpu": v for k, v in cpu.items()})
        agg, py = res["ours"], res["pytrec_eval"]
        out["max_diff_vs_pytrec_eval"] = max(abs(agg.values[k] - py[v[0]]) for k, v in COMMON.items())  # type: ignore
        if "ranx" in res:
            out["max_diff_vs_ranx_map"] = abs(agg.values["AP"] - res["ranx"]["map"])  # type: ignore
    return out


# ---------------------------------------------------------------- entry points (issue #20)

ENTRY_MEASURES = {  # ours (evaluate_run / score_retrieval name, compute name) -> pytrec_eval, ranx
    "precision@1": ("P@1", "P_1", "precision@1"),
    "precision@5": ("P@5", "P_5", "precision@5"),
    "precision@10": ("P@10", "P_10", "precision@10"),
    "recall@1": ("R@1", "recall_1", "recall@1"),
    "recall@5": ("R@5", "recall_5", "recall@5"),
    "recall@10": ("R@10", "recall_10", "recall@10"),
    "hit@1": ("Success@1", "success_1", "hit_rate@1"),
    "hit@5": ("Success@5", "success_5", "hit_rate@5"),
    "hit@10": ("Success@10", "success_10", "hit_rate@10"),
    "ndcg@5": ("nDCG@5", "ndcg_cut_5", "ndcg@5"),
    "ndcg@10": ("nDCG@10", "ndcg_cut_10", "ndcg@10"),
    "mrr": ("RR", "recip_rank", "mrr"),
    "map": ("AP", "map", "map"),
    "r_precision": ("Rprec", "Rprec", "r-precision"),
}
"""The 14 measures all three tools compute, under each tool's name."""


def _entry_files(qrels: dict, run: dict, tmp: Path) -> tuple[Path, Path, Path]:
    """The same judgements and runs as TREC qrels/run files and as JSONL records (the run as a
    ranked list in trec_eval's order: score descending, then document id descending)."""
    import json

    qp, rp, jp = tmp / "qrels.txt", tmp / "run.txt", tmp / "records.jsonl"
    with open(qp, "w") as fq, open(rp, "w") as fr, open(jp, "w") as fj:
        for q, judged in qrels.items():
            fq.write("".join(f"{q} 0 {d} {g}\n" for d, g in judged.items()))
            ranked = sorted(run[q].items(), key=lambda x: x[0], reverse=True)
            ranked.sort(key=lambda x: -x[1])
            fr.write("".join(f"{q} Q0 {d} {i + 1} {sc!r} bench\n" for i, (d, sc) in enumerate(ranked)))
            fj.write(
                json.dumps({"id": q, "retrieval": {"gold": judged, "run": [d for d, _ in ranked]}}) + "\n"
            )
    return qp, rp, jp


def bench_entry(
    nq: int,
    depth: int,
    repeat: int,
    tools: list[str],
    n_docs: int | None = None,
    kinds: tuple[str, ...] = ("files", "dicts", "records"),
) -> dict:
    """Retrieval from the inputs users have — TREC files, Python dicts, JSONL records — ours
    against pytrec_eval and ranx on the same inputs, the 14 measures of ``ENTRY_MEASURES``,
    CPU time (``time.process_time``) of each whole call as a user makes it (ranx's and
    pytrec_eval's own readers, dict conversions and evaluator construction included), rounds
    interleaved, best of ``repeat``; every library warmed up first (numba compilation).
    ``n_docs``: the documents are drawn from this many ids (``make_data``; ``--entry-docs``,
    e.g. 1,000,000 distinct doc ids); ``kinds``: which entry points (``--entry-kinds``)."""
    import json

    import pytrec_eval

    from kg_rageval.families.retrieval import score_retrieval
    from kg_rageval.families.retrieval.measures import aggregate, compute
    from kg_rageval.families.retrieval.metrics import evaluate_dicts
    from kg_rageval.families.retrieval.trec import load_qrels, load_run
    from kg_rageval.ontology.loaders.table import load_table
    from kg_rageval.records import read_records

    ranx = None
    if "ranx" in tools:
        import ranx
    onto = load_table(Path(__file__).resolve().parents[1] / "fixtures" / "retrieval" / "attack-mini.tsv")
    qrels, run = make_data(nq, depth, n_docs=n_docs)
    ks = (1, 5, 10)
    trec_names = {v[1] for v in ENTRY_MEASURES.values()}
    ranx_names = [v[2] for v in ENTRY_MEASURES.values()]
    specs = [v[0] for v in ENTRY_MEASURES.values()]
    out: dict = {"queries": nq, "depth": depth, "entries": nq * depth, "cpu": {}}
    out["distinct_docs"] = len(set().union(*run.values(), *qrels.values()))
    with tempfile.TemporaryDirectory() as tmp:
        qp, rp, jp = Path(tmp) / "qrels.txt", Path(tmp) / "run.txt", Path(tmp) / "records.jsonl"
        if {"files", "records"} & set(kinds):  # written only when read
            qp, rp, jp = _entry_files(qrels, run, Path(tmp))
            out["bytes"] = {
                "qrels": qp.stat().st_size,
                "run": rp.stat().st_size,
                "records": jp.stat().st_size,
            }

        def records_dicts():  # what a pytrec_eval/ranx user does with the records file
            qd, rd = {}, {}
            with open(jp) as fh:
                for line in fh:
                    r = json.loads(line)
                    sec = r["retrieval"]
                    qd[r["id"]] = sec["gold"]
                    n = len(sec["run"])
                    rd[r["id"]] = {d: float(n - i) for i, d in enumerate(sec["run"])}
            return qd, rd

        def pytrec_means(res):
            return {m: float(np.mean([x[m] for x in res.values()])) for m in trec_names}

        calls = {
            ("files", "ours"): lambda: (
                aggregate(compute(load_qrels(qp), load_run(rp), specs), "trec_eval").values
            ),
            ("files", "pytrec_eval"): lambda: pytrec_means(_pytrec_files(pytrec_eval, qp, rp, trec_names)),
            ("dicts", "ours"): lambda: _means(evaluate_run(*_from_dicts(qrels, run), ks)),
            ("dicts", "ours_evaluate_dicts"): lambda: _means(evaluate_dicts(qrels, run, ks)),
            ("dicts", "pytrec_eval"): lambda: pytrec_means(
                pytrec_eval.RelevanceEvaluator(qrels, trec_names).evaluate(run)
            ),
            ("records", "ours"): lambda: {
                m: v.value for m, v in score_retrieval(onto, read_records(jp), k=ks).metrics().items()
            },
            ("records", "pytrec_eval"): lambda: pytrec_means(
                (lambda qd, rd: pytrec_eval.RelevanceEvaluator(qd, trec_names).evaluate(rd))(*records_dicts())
            ),
        }
        if ranx is not None:
            calls[("files", "ranx")] = lambda: ranx.evaluate(
                ranx.Qrels.from_file(str(qp), kind="trec"),
                ranx.Run.from_file(str(rp), kind="trec"),
                ranx_names,
            )
            calls[("dicts", "ranx")] = lambda: ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), ranx_names)
            calls[("records", "ranx")] = lambda: (
                lambda qd, rd: ranx.evaluate(ranx.Qrels(qd), ranx.Run(rd), ranx_names)
            )(*records_dicts())
            ranx.evaluate(
                ranx.Qrels({"q": {"a": 1}}), ranx.Run({"q": {"a": 1.0}}), ranx_names
            )  # numba compile
        small_q, small_r = make_data(50, 10, seed=9)
        evaluate_run(*_from_dicts(small_q, small_r), ks, engine="numba")  # numba kernels compile
        evaluate_dicts(small_q, small_r, ks, engine="numba")
        from kg_rageval.families.retrieval import _kernels

        if _kernels.HAVE_NUMBA:  # the large-input kernels of from_dict (interning, row sort) load
            _kernels.intern_strings(np.frombuffer(b"a\nb\na", dtype=np.uint8), 3)
            _kernels.rank_rows(np.array([0, 2]), np.array([0.5, 0.7]))
        calls = {key: fn for key, fn in calls.items() if key[0] in kinds}
        results: dict = {}
        best: dict = {}
        for _ in range(repeat):  # interleaved rounds: the machine is shared
            for key, fn in calls.items():
                gc.collect()
                c0 = time.process_time()
                results[key] = fn()
                c = time.process_time() - c0
                best[key] = min(best.get(key, float("inf")), c)
                print(f"    {key[0]:8s} {key[1]:20s} {c:7.2f} s CPU", flush=True)
        out["cpu"] = {f"{a}.{b}": v for (a, b), v in best.items()}
        # agreement of the means (ours' per-entry-point names -> each tool's)
        worst = 0.0
        for entry in kinds:
            ours = results[(entry, "ours")]
            for name, (spec, trec, rx) in ENTRY_MEASURES.items():
                mine = ours[spec] if entry == "files" else ours[name]
                worst = max(worst, abs(mine - results[(entry, "pytrec_eval")][trec]))
                if ranx is not None:
                    out.setdefault("max_diff_vs_ranx", 0.0)
                    out["max_diff_vs_ranx"] = max(
                        out["max_diff_vs_ranx"], abs(mine - results[(entry, "ranx")][rx])
                    )
        if "dicts" in kinds:
            ed = results[("dicts", "ours_evaluate_dicts")]
            worst = max([worst] + [abs(ed[m] - results[("dicts", "ours")][m]) for m in ENTRY_MEASURES])
        out["max_diff_vs_pytrec_eval"] = worst
    return out


def _from_dicts(qrels, run):
    q = Qrels.from_dict(qrels)
    return q, Run.from_dict(run, vocab=q.vocab)


def _means(pq) -> dict:
    return {m: pq.mean(m) for m in pq.values}


def _pytrec_files(pytrec_eval, qp, rp, names):
    with open(qp) as fh:
        q = pytrec_eval.parse_qrel(fh)
    with open(rp) as fh:
        r = pytrec_eval.parse_run(fh)
    return pytrec_eval.RelevanceEvaluator(q, names).evaluate(r)


PYTREC_CLI = """import sys, pytrec_eval
with open(sys.argv[1]) as f:
    q = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    r = pytrec_eval.parse_run(f)
M = {"num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
     "iprec_at_recall", "P", "recall"}
res = pytrec_eval.RelevanceEvaluator(q, M).evaluate(r)
for m in sorted(next(iter(res.values()))):
    print(m, sum(x[m] for x in res.values()) / len(res))
"""
"""pytrec_eval over trec_eval's default measures (its own readers), means printed."""


def write_trec_pair(tmp: Path, nq: int, depth: int, n_docs: int = 1_000_000, seed: int = 5):
    """TREC qrels and run files: ``depth`` distinct documents per query drawn from ``n_docs``
    (listed in random order, scores with 6 decimals sorted descending: ties occur), 10
    judgements per query (5 of them retrieved), grades 0-3."""
    rng = np.random.default_rng(seed)
    qp, rp = tmp / f"qrels_{nq}x{depth}.txt", tmp / f"run_{nq}x{depth}.txt"
    with open(qp, "w") as fq, open(rp, "w") as fr:
        for lo in range(0, nq, 2000):
            hi = min(nq, lo + 2000)
            docs = rng.integers(0, n_docs, size=(hi - lo, depth))
            sc = -np.sort(-rng.random((hi - lo, depth)), axis=1)
            for i in range(hi - lo):
                u = np.unique(docs[i])
                rng.shuffle(u)
                fr.write(
                    "".join(
                        f"q{lo + i} Q0 d{d} {j + 1} {s:.6f} bench\n"
                        for j, (d, s) in enumerate(zip(u.tolist(), sc[i].tolist()))
                    )
                )
                gold = np.unique(np.concatenate((u[:5], rng.integers(0, n_docs, 5))))
                fq.write(
                    "".join(
                        f"q{lo + i} 0 d{d} {g}\n"
                        for d, g in zip(gold.tolist(), rng.integers(0, 4, len(gold)).tolist())
                    )
                )
    return qp, rp


def _child(cmd: list[str], env: dict | None = None, cwd: str | None = None) -> tuple[float, float, bytes]:
    """CPU seconds (user + sys), peak RSS in MB and stdout of a fresh process (``cwd``: its tree,
    which ``python -m`` puts first on the path, before ``PYTHONPATH``)."""
    import os
    import subprocess

    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env, cwd=cwd)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err = p.stderr.read() if p.stderr else b""
        if p.returncode != 0:
            raise RuntimeError(f"{cmd[:4]} exited {p.returncode}: {err[-500:]!r}")
        out.seek(0)
        return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, out.read()


def bench_cli(
    sizes: list[tuple[int, int]], repeat: int, bins: list[str], trees: list[str], warm: bool = True
) -> list[dict]:
    """The CLI on TREC files against trec_eval and pytrec_eval (module docstring, item 6)."""
    import os

    root = str(Path(__file__).resolve().parents[1])
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for nq, depth in sizes:
            qp, rp = write_trec_pair(Path(tmp), nq, depth)
            tools: dict[str, tuple[list[str], dict | None, str | None]] = {}
            for label, tree in [("ours", root)] + [(f"tree:{t}", t) for t in trees]:
                cwd = str(Path(tree).resolve())
                env = dict(os.environ, PYTHONPATH=cwd)
                base = [sys.executable, "-m", "kg_rageval.cli.main", "score", "retrieval"]
                tools[label] = (base + ["--qrels", str(qp), "--run", str(rp)], env, cwd)
                tools[f"{label} --trec-eval"] = (
                    base + ["--qrels", str(qp), "--run", str(rp), "--trec-eval"],
                    env,
                    cwd,
                )
            for b in bins:
                tools[f"trec_eval {b}"] = ([b, str(qp), str(rp)], None, None)
            tools["pytrec_eval"] = ([sys.executable, "-c", PYTREC_CLI, str(qp), str(rp)], None, None)
            for cmd, env, cwd in tools.values() if warm else ():  # warm: numba's cache, the page cache
                _child(cmd, env, cwd)
            best: dict[str, tuple[float, float]] = {}
            outs: dict[str, bytes] = {}
            for _ in range(repeat):  # interleaved rounds: the machine is shared
                for name, (cmd, env, cwd) in tools.items():
                    cpu, rss, out = _child(cmd, env, cwd)
                    outs[name] = out
                    if cpu < best.get(name, (float("inf"), 0.0))[0]:
                        best[name] = (cpu, rss)
                    print(f"    {nq}x{depth} {name:40s} {cpu:7.2f} s CPU {rss:7.0f} MB", flush=True)
            res: dict = {"queries": nq, "depth": depth, "lines": nq * depth, "run_bytes": rp.stat().st_size}
            res["cpu"] = {k: v[0] for k, v in best.items()}
            res["rss_mb"] = {k: v[1] for k, v in best.items()}
            res["same_output_as"] = {
                f"tree:{t}{suffix}": outs[f"tree:{t}{suffix}"] == outs[f"ours{suffix}"]
                for t in trees
                for suffix in ("", " --trec-eval")
            }
            if bins:  # trec_eval's lines that ours --trec-eval prints differently
                mine = set(outs["ours --trec-eval"].splitlines())
                res["lines_differing_from_trec_eval"] = [
                    ln.decode() for ln in outs[f"trec_eval {bins[0]}"].splitlines() if ln not in mine
                ]
            results.append(res)
    return results


def bench_filters(nq: int, n_docs: int, n_concepts: int) -> dict:
    from benchmarks.synthetic import build_ontology

    out: dict = {"queries": nq, "corpus_docs": n_docs, "concepts": n_concepts}
    out["ontology_build"], onto = timed(lambda: build_ontology(n_concepts))
    rng = np.random.default_rng(2)
    n = len(onto)
    ncat = rng.integers(1, 4, n_docs)
    cat_ptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(ncat, out=cat_ptr[1:])
    cats = rng.integers(1, n, int(cat_ptr[-1]))
    # ascending and unique within each document
    row = np.repeat(np.arange(n_docs), ncat)
    order = np.lexsort((cats, row))
    cats = cats[order]
    tenant = rng.integers(0, 10, n_docs)
    locale = rng.integers(0, 5, n_docs)
    one = np.arange(n_docs + 1, dtype=np.int64)
    t0 = time.perf_counter()
    corpus = Corpus.from_arrays(
        [f"doc{i}" for i in range(n_docs)],
        cat_ptr,
        cats,
        {
            "tenant": (one, tenant, [f"t{i}" for i in range(10)]),
            "locale": (one, locale, ["en-US", "en-GB", "de-DE", "fr-FR", "nl-NL"]),
        },
    )
    out["corpus_build"] = time.perf_counter() - t0
    # queries: 1-5 gold docs; the within filter is an ancestor of a gold category (passes) or a
    # random concept (usually excludes)
    ng = rng.integers(1, 6, nq)
    gold = rng.integers(0, n_docs, int(ng.sum()))
    pair_q = np.repeat(np.arange(nq), ng)
    filters = []
    starts = np.concatenate(([0], np.cumsum(ng)[:-1]))
    for q in range(nq):
        d0 = int(gold[starts[q]])
        c0 = int(cats[cat_ptr[d0]])
        if rng.random() < 0.7:
            anc = onto.ancestor_indices(c0)
            x = int(anc[rng.integers(0, len(anc))])
        else:
            x = int(rng.integers(1, n))
        loc = ["en-US", "en-GB", "de-DE", "fr-FR", "nl-NL"][int(rng.integers(0, 5))]
        filters.append(
            parse_filters(
                [
                    {"field": "category", "op": "within", "value": onto.ids[x]},
                    {"field": "locale", "op": "in", "value": [loc, "en-US"]},
                ],
                f"q{q}",
            )
        )
    principal = {"tenant": ["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"]}

    def work():
        eligible = corpus.eligible(gold, principal)
        keep = eligible
        passes, _ = replay(corpus, onto, pair_q[keep], gold[keep], filters)
        q_elig = np.bincount(pair_q[keep], minlength=nq)
        q_pass = np.bincount(pair_q[keep][passes], minlength=nq)
        excluded = int(((q_elig > 0) & (q_pass == 0)).sum())
        return excluded, int((q_elig > 0).sum()), int(passes.sum()), int(keep.sum())

    out["replay"], (excl, denom, npass, npairs) = timed(work, 2)
    # the same queries end to end through score_retrieval (records with 100-document runs)
    from kg_rageval.families.retrieval import score_retrieval

    records = []
    for q in range(nq):
        g = gold[starts[q] : starts[q] + ng[q]]
        run = rng.integers(0, n_docs, 100)
        run = list(dict.fromkeys([f"doc{d}" for d in np.concatenate([g[:1], run]).tolist()]))
        fl = filters[q]
        records.append(
            {
                "id": f"q{q}",
                "retrieval": {
                    "gold": [f"doc{d}" for d in g.tolist()],
                    "run": run[1:] if q % 3 else run,
                    "filters": [{"field": f.field, "op": f.op, "value": list(f.values)} for f in fl],
                    "principal": principal,
                },
            }
        )
    out["score_retrieval"], ev = timed(lambda: score_retrieval(onto, records, corpus, k=(1, 5, 10)))
    out["score_retrieval_fe"] = ev.metrics()["filter_false_exclusion_rate"].value
    out["filter_false_exclusion_rate"] = excl / denom
    out["pairs"] = npairs
    out["pairs_passing"] = npass
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--depth", type=int, default=1_000)
    ap.add_argument("--trec-lines", type=int, default=1_000_000)
    ap.add_argument("--corpus-docs", type=int, default=1_000_000)
    ap.add_argument("--files-lines", type=int, default=10_000_000)
    ap.add_argument("--files-queries", type=int, default=100_000)
    ap.add_argument("--concepts", type=int, default=350_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument(
        "--skip", action="append", default=[], choices=["metrics", "trec", "files", "filters", "entry", "cli"]
    )
    ap.add_argument(
        "--only",
        choices=["metrics", "trec", "files", "filters", "entry", "cli"],
        default=None,
        help="run this part only",
    )
    ap.add_argument(
        "--entry-sizes",
        default="10000x1000,100000x100",
        help="QUERIESxDEPTH list for the entry-point comparison",
    )
    ap.add_argument("--entry-tools", default="pytrec_eval,ranx")
    ap.add_argument(
        "--entry-docs",
        type=int,
        default=None,
        help="draw the entry points' documents from this many ids (default 100 x depth; "
        "1000000: the 1M-distinct-doc-id case of #33)",
    )
    ap.add_argument(
        "--entry-kinds", default="files,dicts,records", help="entry points to time (files,dicts,records)"
    )
    ap.add_argument("--cli-sizes", default="10000x100,10000x1000,100000x100", help="QUERIESxDEPTH list")
    ap.add_argument("--trec-eval-bin", action="append", default=[], help="a trec_eval binary (repeatable)")
    ap.add_argument("--tree", action="append", default=[], help="another checkout's CLI, compared")
    ap.add_argument("--no-warm", action="store_true", help="cli: no unmeasured first run of each tool")
    ap.add_argument("--json", default=None, help="write the figures here")
    a = ap.parse_args()
    if a.only:
        a.skip = [p for p in ("metrics", "trec", "files", "filters", "entry", "cli") if p != a.only]
    figures: dict = {}
    if a.quick:
        a.queries, a.depth, a.trec_lines, a.corpus_docs, a.concepts, a.repeat = (
            500,
            100,
            20_000,
            20_000,
            5_000,
            1,
        )
        a.files_lines, a.files_queries = 50_000, 1_000
        a.entry_sizes = "300x100,1000x20"
        a.cli_sizes = "200x100"
    if "metrics" not in a.skip:
        m = bench_metrics(a.queries, a.depth, a.repeat)
        print(f"metrics {m['queries']} queries x {m['depth']} docs (all metrics, warm):")
        print(
            f"  ours evaluate_run      {m['ours_eval']:.3f} s   (prepare from dicts {m['ours_prepare']:.2f} s)"
        )
        print(
            f"  ours evaluate_dicts    {m['ours_dicts']:.3f} s   (from the same dicts pytrec_eval takes; "
            f"equal to evaluate_run: {m['dicts_equal_arrays']})"
        )
        print(
            f"  pytrec_eval evaluate   {m['pytrec_eval']:.3f} s   ({m['pytrec_eval'] / m['ours_eval']:.1f}x ours; "
            f"{m['pytrec_eval'] / m['ours_dicts']:.1f}x ours from dicts)"
        )
        if m.get("ranx_eval"):
            print(
                f"  ranx evaluate          {m['ranx_eval']:.3f} s   ({m['ranx_eval'] / m['ours_eval']:.1f}x ours; "
                f"prepare {m['ranx_prepare']:.2f} s)"
            )
        print(
            f"  max |ours - pytrec_eval| = {m['max_abs_diff_vs_pytrec']:.2e}; "
            f"|MAP ours - ranx| = {m.get('max_abs_diff_vs_ranx_map', float('nan')):.2e}"
        )
    if "trec" not in a.skip:
        t = bench_trec(a.trec_lines)
        print(f"TREC run reading, {t['lines']} lines ({t['bytes'] / 1e6:.0f} MB):")
        print(f"  ours read_run          {t['ours_read_run']:.3f} s (parsed, interned, ranked)")
        print(
            f"  pytrec_eval.parse_run  {t['pytrec_parse_run']:.3f} s ({t['pytrec_parse_run'] / t['ours_read_run']:.1f}x ours)"
        )
    if "files" not in a.skip:
        f = bench_files(a.files_lines, a.files_queries, a.repeat)
        print(
            f"files end to end: {f['lines']} run lines ({f['bytes'] / 1e6:.0f} MB), {f['queries']} queries "
            f"x {f['depth']}, read + 9 common measures + means:"
        )
        print(
            f"  ours load + compute + aggregate   {f['ours']:.2f} s wall, {f['ours_cpu']:.2f} s CPU   "
            f"(all {len(TREC_ALL_NAMES)} TREC_ALL measures: {f['ours_all']:.2f} s)"
        )
        print(
            f"  pytrec_eval parse + evaluate      {f['pytrec_eval']:.2f} s wall, {f['pytrec_eval_cpu']:.2f} s CPU   "
            f"({f['pytrec_eval'] / f['ours']:.1f}x ours)"
        )
        if "ranx" in f:
            print(
                f"  ranx from_file + evaluate         {f['ranx']:.2f} s wall, {f['ranx_cpu']:.2f} s CPU   "
                f"({f['ranx'] / f['ours']:.1f}x ours)"
            )
        print(
            f"  max |mean ours - pytrec_eval| = {f['max_diff_vs_pytrec_eval']:.1e}; "
            f"|MAP ours - ranx| = {f.get('max_diff_vs_ranx_map', float('nan')):.1e}"
        )
    if "entry" not in a.skip:
        figures["entry"] = []
        for size in a.entry_sizes.split(","):
            nq, depth = (int(x) for x in size.split("x"))
            print(
                f"entry points, {nq} queries x {depth} docs (CPU s, best of {a.repeat}, same run):",
                flush=True,
            )
            kinds = tuple(a.entry_kinds.split(","))
            e = bench_entry(nq, depth, a.repeat, a.entry_tools.split(","), a.entry_docs, kinds)
            figures["entry"].append(e)
            cpu = e["cpu"]
            print(f"  {e['distinct_docs']} distinct document ids")
            for entry in kinds:
                mine = cpu[f"{entry}.ours"]
                line = f"  {entry:8s} ours {mine:6.2f}"
                for tool in ("pytrec_eval", "ranx"):
                    if f"{entry}.{tool}" in cpu:
                        line += (
                            f"   {tool} {cpu[f'{entry}.{tool}']:6.2f} ({cpu[f'{entry}.{tool}'] / mine:.2f}x)"
                        )
                if entry == "dicts":
                    line += f"   ours evaluate_dicts {cpu['dicts.ours_evaluate_dicts']:6.2f}"
                print(line)
            print(
                f"  max |mean ours - pytrec_eval| = {e['max_diff_vs_pytrec_eval']:.1e}; "
                f"vs ranx {e.get('max_diff_vs_ranx', float('nan')):.1e}"
            )
    if "cli" not in a.skip:
        sizes = [tuple(int(x) for x in z.split("x")) for z in a.cli_sizes.split(",")]
        figures["cli"] = bench_cli(sizes, a.repeat, a.trec_eval_bin, a.tree, not a.no_warm)  # type: ignore[arg-type]
        for c in figures["cli"]:
            print(
                f"score retrieval --qrels/--run, {c['queries']} queries x {c['depth']} (best of {a.repeat}):"
            )
            mine = c["cpu"]["ours"]
            for name, cpu in c["cpu"].items():
                print(f"  {name:40s} {cpu:7.2f} s CPU {c['rss_mb'][name]:7.0f} MB  ({cpu / mine:.2f}x ours)")
            print(f"  outputs identical to the other trees: {c['same_output_as']}")
            if "lines_differing_from_trec_eval" in c:
                print(
                    f"  trec_eval lines ours --trec-eval prints otherwise: {c['lines_differing_from_trec_eval']}"
                )
    if "filters" not in a.skip:
        f = bench_filters(a.queries, a.corpus_docs, a.concepts)
        print(f"filter replay: {f['queries']} queries, {f['corpus_docs']} docs, {f['concepts']} concepts:")
        print(
            f"  entitlement + within/in replay + false exclusion  {f['replay']:.3f} s "
            f"({f['pairs']} eligible gold pairs, {f['pairs_passing']} pass; FE rate {f['filter_false_exclusion_rate']:.3f})"
        )
        print(
            f"  score_retrieval end to end (100-doc runs, all metrics + replay + attribution)  "
            f"{f['score_retrieval']:.2f} s (FE rate {f['score_retrieval_fe']:.3f})"
        )
        print(
            f"  (setup: ontology build {f['ontology_build']:.1f} s, corpus arrays {f['corpus_build']:.2f} s)"
        )
    if a.json:
        import json

        Path(a.json).write_text(json.dumps(figures, indent=1))


from kg_rageval.families.retrieval.measures import TREC_ALL as TREC_ALL_NAMES  # noqa: E402

if __name__ == "__main__":
    main()
