"""Test-set benchmarks (docs/performance.md, "Test sets").

    python benchmarks/bench_testset.py build [--nodes 350000] [--docs 100000] [--queries 10000]
    python benchmarks/bench_testset.py check [--queries 100000]

``build``: ``kg-rageval testset build``'s work — read a ``--docs`` corpus JSONL, build
``--queries`` cases of every kind, write records, the held-out ontology copy (.kgro), heldout.json
and the manifest — over the synthetic 350,000-node DAG (benchmarks/synthetic.py) with
realistic multi-word labels (1–5 words from a 6,000-word vocabulary), a synonym for a third of
the nodes and a definition for half. Documents: one or two concepts each (definition / glossary
/ note types), about 30 % of the concepts documented. The ontology is compiled first and saved
as .kgro; its load time is reported apart.

``check``: ``testset check`` over ``--queries`` queries (built cases, realistic labels) split
into the four sets, with 100 planted exact duplicates (case and punctuation changed), 100
near duplicates (" now" appended to a query of 60+ characters) and 100 shared sources: shared sources, exact duplicates, MinHash/LSH near duplicates (datasketch,
128 permutations, threshold 0.8) and the manifest.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import make_dag  # noqa: E402


def _vocab(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return list({"".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(6500)})[:6000]


def build_ontology(n: int, seed: int = 0):
    from kg_rageval.ontology import OntologyBuilder

    rng = random.Random(seed)
    vocab = _vocab(rng)
    child, parent = make_dag(n, seed=seed)
    b = OntologyBuilder(f"synthetic-testset-{n}")
    seen: set[str] = set()
    for i in range(n):
        while True:
            w = rng.choices(vocab, k=rng.choice([1, 2, 2, 3, 3, 3, 4, 5]))
            lab = " ".join(w).capitalize()
            if lab not in seen:
                seen.add(lab)
                break
        syn = ["-".join(reversed(w))] if i % 3 == 0 else []
        definition = (
            f"A {' '.join(rng.choices(vocab, k=6))} that {' '.join(rng.choices(vocab, k=5))}."
            if i % 2
            else None
        )
        b.add_node(f"SCT:{i}", label=lab, synonyms=syn, definition=definition)
    b.add_edges([f"SCT:{c}" for c in child.tolist()], [f"SCT:{p}" for p in parent.tolist()])
    return b.build()


def write_corpus(path: Path, onto, n_docs: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    n = len(onto)
    concepts = rng.choice(np.arange(1, n), size=int(0.3 * n), replace=False)
    types = ("definition", "glossary", "note")
    with open(path, "w", encoding="utf-8") as fh:
        for k in range(n_docs):
            c = int(concepts[k % len(concepts)])
            cats = [onto.ids[c]]
            if rng.random() < 0.2:
                cats.append(onto.ids[int(concepts[int(rng.integers(len(concepts)))])])
            fh.write(
                json.dumps(
                    {
                        "id": f"doc-{k}",
                        "source_id": f"src-{k // 2}",
                        "type": types[k % 3],
                        "categories": cats,
                        "text": onto.labels[c],
                    }
                )
                + "\n"
            )


def bench_build(args) -> None:
    from kg_rageval.ontology import load_ontology
    from kg_rageval.ontology.cache import save_compiled
    from kg_rageval.testset import TestsetConfig, build_testset, read_testset_corpus
    from kg_rageval.testset.store import write_build

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        t = time.perf_counter()
        onto = build_ontology(args.nodes)
        save_compiled(onto, d / "onto.kgro")
        print(
            f"synthetic ontology: {len(onto)} nodes, {onto.n_edges} edges ({time.perf_counter() - t:.1f} s to make)"
        )
        write_corpus(d / "docs.jsonl", onto, args.docs)
        t0 = time.perf_counter()
        onto = load_ontology(d / "onto.kgro")
        t1 = time.perf_counter()
        cfg = TestsetConfig().scaled(args.queries)
        corpus = read_testset_corpus(d / "docs.jsonl", onto)
        t2 = time.perf_counter()
        res = build_testset(onto, corpus, cfg)
        t3 = time.perf_counter()
        write_build(
            res,
            d / "out",
            ontology=onto,
            corpus_path=d / "docs.jsonl",
            n_documents=len(corpus),
            policy=cfg.policy(),
        )
        t4 = time.perf_counter()
        print(
            f"load .kgro {t1 - t0:.2f} s | read corpus ({len(corpus)} docs) {t2 - t1:.2f} s | build "
            f"{len(res.records)} cases {t3 - t2:.2f} s | write (records, held-out .kgro, manifest) "
            f"{t4 - t3:.2f} s | total without the ontology load {t4 - t1:.2f} s"
        )
        print("shortfall:", res.shortfall or "none")


def bench_check(args) -> None:
    from kg_rageval.records import write_records
    from kg_rageval.testset import TestsetConfig, TestsetCorpus, build_testset
    from kg_rageval.testset.check import check_leakage, testset_manifest
    from kg_rageval.testset.config import SETS
    from kg_rageval.testset.split import split_testset

    onto = build_ontology(args.nodes)
    rng = np.random.default_rng(0)
    n = len(onto)
    docs = [
        {"id": f"doc-{k}", "categories": [onto.ids[int(c)]], "type": "definition"}
        for k, c in enumerate(rng.choice(np.arange(1, n), size=min(n - 1, 150_000), replace=False))
    ]
    corpus = TestsetCorpus.from_docs(docs, onto)
    res = build_testset(onto, corpus, TestsetConfig().scaled(args.queries))
    recs = res.records
    sets = split_testset(recs, TestsetConfig().split.proportions, seed=0)
    planted = 0
    shared_keys: set[str] = set()
    pick = np.random.default_rng(1)
    dev = sets["development"]
    long_ones = [r for r in dev if len(r["query"]) >= 60]
    for k in range(300):  # exact (case/punctuation), near (" now" appended to a long query), shared source
        kind = k % 3
        r = (long_ones if kind == 1 else dev)[int(pick.integers(len(long_ones) if kind == 1 else len(dev)))]
        q = r["query"]
        new = {
            "id": f"plant-{k}",
            "query": q.upper().replace("?", " ?!") if kind == 0 else q[:-1] + " now?",
            "testset": {"sources": list(r["testset"]["sources"][:1]) if kind == 2 else []},
        }
        if kind == 2:
            new["query"] = f"Planted question number {k} about nothing at all?"
            shared_keys.update(new["testset"]["sources"])
        sets["release"].append(new)
        planted += 1
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for s in SETS:
            paths[s] = Path(tmp) / f"{s}.jsonl"
            write_records(paths[s], sets[s], sort_keys=True)
        t = time.perf_counter()
        rep = check_leakage(sets)
        t1 = time.perf_counter()
        testset_manifest(
            {s: (paths[s], sets[s]) for s in SETS},
            ontology=onto,
            policy=TestsetConfig().policy(),
            leakage=rep,
        )
        t2 = time.perf_counter()
    total = sum(len(v) for v in sets.values())
    print(
        f"check {total} queries: leakage {t1 - t:.2f} s, manifest {t2 - t1:.2f} s; planted {planted}: "
        f"shared {rep['shared_sources']['count']} (of {len(shared_keys)} distinct planted), exact {rep['exact_duplicates']['count']}, "
        f"near {rep['near_duplicates']['count']} (template siblings {rep['near_duplicates']['template_siblings']},"
        f" within-set {rep['near_duplicates']['within_set_pairs']})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--nodes", type=int, default=350_000)
    b.add_argument("--docs", type=int, default=100_000)
    b.add_argument("--queries", type=int, default=10_000)
    c = sub.add_parser("check")
    c.add_argument("--nodes", type=int, default=350_000)
    c.add_argument("--queries", type=int, default=100_000)
    args = ap.parse_args()
    bench_build(args) if args.cmd == "build" else bench_check(args)


if __name__ == "__main__":
    main()
