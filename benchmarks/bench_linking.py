"""Linking benchmarks and the end-to-end quality figures of docs/linking.md.

    python benchmarks/bench_linking.py score  [--mentions 1000000]
    python benchmarks/bench_linking.py dictionary [--queries 20000]
    python benchmarks/bench_linking.py quality [--embedding]

``score``: :func:`score_linking` over synthetic records (``--mentions`` gold mentions and as
many predicted ones) on the 350,000-node synthetic DAG
(benchmarks/synthetic.py): 5 gold mentions per record, every gold mention predicted (82 %
on the same span: 70 % right id, 20 % another node, 10 % NIL; 18 % on a shifted span),
10 % gold NIL. Times the scoring only (records and ontology are built first).

``dictionary``: :class:`DictionaryLinker` build time and ``find`` throughput on short queries
against (a) the synthetic ontology's labels ``concept <n>`` and (b) 350,000 realistic
multi-word labels (1–5 words from a 6,000-word vocabulary, plus one synonym per node), each
query ~8 words holding one or two labels; pure-Python core and spaCy backend.

``quality``: the ATT&CK and Disease Ontology linking sets of docs/linking.md.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import build_ontology  # noqa: E402


def _synthetic_records(onto, n_mentions: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    n_nodes = len(onto)
    per = 5
    n_rec = n_mentions // per
    ids = onto.ids
    gid = rng.integers(1, n_nodes, size=n_rec * per)
    nil = rng.random(gid.size) < 0.10
    same_span = rng.random(gid.size) < 0.82
    r = rng.random(gid.size)
    other = rng.integers(1, n_nodes, size=gid.size)
    records = []
    k = 0
    for i in range(n_rec):
        gold, pred = [], []
        for j in range(per):
            s = j * 20
            g = None if nil[k] else ids[gid[k]]
            gold.append({"start": s, "end": s + 10, "id": g})
            p = g if r[k] < 0.7 else (ids[other[k]] if r[k] < 0.9 else None)
            e = s + 10 if same_span[k] else s + 12
            pred.append({"start": s, "end": e, "id": p, "score": float(r[k])})
            k += 1
        records.append({"id": f"r{i}", "mentions": {"gold": gold, "pred": pred}})
    return records


def bench_score(n_mentions: int, modes: tuple[bool, ...] = (False,)) -> None:
    from kg_rageval.linking import score_linking

    t = time.perf_counter()
    onto = build_ontology(350_000)
    print(f"synthetic ontology: {len(onto)} nodes, built in {time.perf_counter() - t:.1f} s")
    recs = _synthetic_records(onto, n_mentions)
    n_g = sum(len(r["mentions"]["gold"]) for r in recs)
    n_p = sum(len(r["mentions"]["pred"]) for r in recs)
    for overlap in modes:
        t, c = time.perf_counter(), time.process_time()
        ev = score_linking(onto, recs, overlap=overlap)
        dt, dc = time.perf_counter() - t, time.process_time() - c
        m = ev.metrics()
        print(f"score_linking overlap={overlap}: {n_g:,} gold + {n_p:,} predicted mentions in {dt:.2f} s "
              f"wall, {dc:.2f} s CPU ({(n_g + n_p) / dt:,.0f} mentions/s wall); rows={len(ev):,}; "
              f"strong_all_match_f1={m['strong_all_match_f1'].value:.4f} "
              f"wrong_links={m['wrong_links'].value:,.0f} backend={ev.meta.get('hierarchy_backend', 'kernels')}")
    t = time.perf_counter()
    ev.metrics()
    ev.breakdown("outcome")
    print(f"metrics + breakdown(outcome): {time.perf_counter() - t:.2f} s")


def _realistic_labels(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = list({"".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(6500)})[:6000]
    labels, synonyms = [], []
    seen = set()
    while len(labels) < n:
        w = rng.choices(vocab, k=rng.choice([1, 2, 2, 3, 3, 3, 4, 5]))
        lab = " ".join(w)
        if lab in seen:
            continue
        seen.add(lab)
        labels.append(lab.capitalize())
        synonyms.append("-".join(reversed(w)))
    return labels, synonyms, vocab


def _build_realistic(n: int):
    from kg_rageval.ontology import OntologyBuilder

    labels, syns, vocab = _realistic_labels(n)
    b = OntologyBuilder(f"realistic-labels-{n}")
    b.add_node("R:0", label="root concept")
    for i in range(1, n):
        b.add_node(f"R:{i}", label=labels[i], synonyms=[syns[i]])
        b.add_edge(f"R:{i}", f"R:{(i - 1) // 8}")
    return b.build(), labels, vocab


def _queries(labels, vocab, n, seed=1):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = [rng.choice(vocab) for _ in range(rng.randint(2, 4))]
        for _ in range(rng.randint(1, 2)):
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(labels[1:]))
        out.append(" ".join(parts) + "?")
    return out


def _throughput(linker, queries) -> tuple[float, int]:
    """Queries per second of CPU time (the machine is shared; wall time is noisier)."""
    t = time.process_time()
    found = 0
    for q in queries:
        found += len(linker.find(q))
    return len(queries) / (time.process_time() - t), found


def bench_dictionary(n_queries: int) -> None:
    from kg_rageval.linking.dictionary import DictionaryLinker, SpacyDictionaryLinker

    onto = build_ontology(350_000)
    t = time.perf_counter()
    d = DictionaryLinker(onto)
    print(f"[concept <n>] DictionaryLinker build: {time.perf_counter() - t:.2f} s, {len(d):,} forms")
    rng = random.Random(0)
    qs = [f"what is concept {rng.randrange(350_000)} and how does it relate to concept {rng.randrange(350_000)}?"
          for _ in range(n_queries)]
    qps, found = _throughput(d, qs)
    print(f"[concept <n>] find, {d.backend} backend: {qps:,.0f} queries/s ({found:,} mentions in {len(qs):,} queries)")

    onto2, labels, vocab = _build_realistic(350_000)
    t = time.perf_counter()
    d2 = DictionaryLinker(onto2)
    print(f"[realistic] DictionaryLinker build: {time.perf_counter() - t:.2f} s, {len(d2):,} forms, "
          f"longest form {d2.max_len} tokens")
    qs2 = _queries(labels, vocab, n_queries)
    qps, found = _throughput(d2, qs2)
    print(f"[realistic] find, {d2.backend} backend: {qps:,.0f} queries/s ({found:,} mentions in {len(qs2):,} queries)")
    ref = DictionaryLinker(onto2, backend="python")
    qps_py, found_py = _throughput(ref, qs2)
    print(f"[realistic] find, python backend: {qps_py:,.0f} queries/s (same links: "
          f"{[ref.find(q) for q in qs2[:2000]] == [d2.find(q) for q in qs2[:2000]]})")
    _anchors(onto2, qs2, qps)
    try:
        t = time.perf_counter()
        sp = SpacyDictionaryLinker(onto2)
        print(f"[realistic] spaCy PhraseMatcher build: {time.perf_counter() - t:.2f} s")
        qps_s, found_s = _throughput(sp, qs2[: max(1, n_queries // 4)])
        print(f"[realistic] spaCy backend find: {qps_s:,.0f} queries/s "
              f"(agrees on the sample: {[sp.find(q) for q in qs2[:200]] == [d2.find(q) for q in qs2[:200]]})")
    except ImportError as exc:
        print(f"spaCy backend skipped: {exc}")


def _anchors(onto, queries, qps_ours: float) -> None:
    """Reference matchers on the same queries, timed in the same run: a bare pyahocorasick
    automaton over lower-cased, space-padded labels and synonyms scanning the lower-cased
    query (no tokenising, no offsets, no resolution), and flashtext if installed."""
    forms = [t for i in range(len(onto)) for t in (onto.labels[i], *onto.synonyms[i]) if t]
    try:
        import ahocorasick
    except ImportError:
        print("pyahocorasick anchor skipped: not installed")
    else:
        a = ahocorasick.Automaton()
        for f in forms:
            a.add_word(" " + f.lower().replace("-", " ") + " ", 1)
        a.make_automaton()
        t = time.process_time()
        found = 0
        for q in queries:
            found += sum(1 for _ in a.iter(" " + q.lower().replace("?", " ") + " "))
        qps = len(queries) / (time.process_time() - t)
        print(f"[realistic] anchor pyahocorasick (bare scan): {qps:,.0f} queries/s ({found:,} raw matches); "
              f"ours / anchor = {qps_ours / qps:.2f}")
    try:
        from flashtext import KeywordProcessor
    except ImportError:
        print("flashtext anchor skipped: not installed")
    else:
        kp = KeywordProcessor()
        for f in forms:
            kp.add_keyword(f.lower().replace("-", " "))
        t = time.process_time()
        found = sum(len(kp.extract_keywords(q.lower())) for q in queries)
        qps = len(queries) / (time.process_time() - t)
        print(f"[realistic] anchor flashtext: {qps:,.0f} queries/s ({found:,} matches); ours / anchor = {qps_ours / qps:.2f}")


def bench_quality(embedding: bool) -> None:
    from kg_rageval.linking import score_linking
    from kg_rageval.linking.dictionary import DictionaryLinker
    from kg_rageval.linking.testset import build_linking_set, run_linker
    from kg_rageval.ontology import load_ontology

    shared = ROOT.parent / "shared" / "data"
    sets = {"ATT&CK 18.1": shared / "attack/enterprise-attack-techniques-18.1.json.gz",
            "DO cancer slim": shared / "doid/DO_cancer_slim.obo"}
    cols = ["mention_f1", "strong_all_match_f1", "strong_link_match_f1", "strong_nil_match_f1",
            "disambiguation_accuracy", "nil_precision", "nil_recall", "over_links",
            "over_link_near_rate", "abstentions", "wrong_links", "hierarchical_f1", "wu_palmer"]
    print("| set | linker | mode | " + " | ".join(cols) + " |")
    print("|" + "---|" * (len(cols) + 3))
    model = None
    for name, path in sets.items():
        onto = load_ontology(path)
        recs, held = build_linking_set(onto, seed=0)
        runs = []
        for amb in ("abstain", "lca"):
            d = DictionaryLinker(onto, exclude=held, ambiguous=amb)
            for mode in ("detect", "gold_spans"):
                runs.append((f"dictionary ({amb})", mode, run_linker(d, recs, mode=mode)))
        if embedding:
            from kg_rageval.linking.embedding import EmbeddingLinker, load_model

            model = model or load_model()
            e = EmbeddingLinker(onto, exclude=held, model=model)
            for th in (0.6, 0.7, 0.8):
                e.nil_threshold = th
                runs.append((f"embedding (NIL < {th})", "gold_spans", run_linker(e, recs, mode="gold_spans")))
        for linker, mode, pred in runs:
            v = score_linking(onto, pred).metrics()
            cells = []
            for c in cols:
                x = v[c].value
                cells.append("—" if x is None else (f"{x:.0f}" if c in ("over_links", "abstentions", "wrong_links")
                                                   else f"{x:.3f}"))
            print(f"| {name} ({len(recs)} q, {len(held)} NIL) | {linker} | {mode} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("score")
    s.add_argument("--mentions", type=int, default=500_000, help="gold mentions (as many predicted)")
    s.add_argument("--overlap", action="store_true", help="also time overlap alignment")
    d = sub.add_parser("dictionary")
    d.add_argument("--queries", type=int, default=20_000)
    q = sub.add_parser("quality")
    q.add_argument("--embedding", action="store_true")
    a = ap.parse_args()
    if a.what == "score":
        bench_score(a.mentions, (False, True) if a.overlap else (False,))
    elif a.what == "dictionary":
        bench_dictionary(a.queries)
    else:
        bench_quality(a.embedding)


if __name__ == "__main__":
    main()
