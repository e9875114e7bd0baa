"""Linking benchmarks and the end-to-end quality figures of docs/linking.md.

    python benchmarks/bench_linking.py score  [--mentions 1000000]
    python benchmarks/bench_linking.py dictionary [--queries 20000] [--labels concept|realistic|both]
    python benchmarks/bench_linking.py quality [--embedding]

``score``: :func:`score_linking` over synthetic records (``--mentions`` gold mentions and as
many predicted ones) on the 350,000-node synthetic DAG
(benchmarks/synthetic.py): 5 gold mentions per record, every gold mention predicted (82 %
on the same span: 70 % right id, 20 % another node, 10 % NIL; 18 % on a shifted span),
10 % gold NIL. Times the scoring only (records and ontology are built first).

``dictionary``: :class:`DictionaryLinker` build time and throughput (queries/s of CPU time,
best of 3) on short queries against (a) the synthetic ontology's labels ``concept <n>`` and
(b) 350,000 realistic multi-word labels (1–5 words from a 6,000-word vocabulary, plus one
synonym per node), each query ~8 words holding one or two labels. In the same run, on the
same queries: the fair anchor :class:`AhoCorasickAnchor` (pyahocorasick doing the same job:
same normalisation, whole tokens, same overlap rule, same ids; its mentions are asserted
equal to ours), our ``automaton`` and ``python`` backends (links asserted equal), a bare
pyahocorasick scan of the same queries with the same labels (raw matches: the #33 anchor of
the end-to-end throughput, each row's ratio to it printed too) and as context flashtext (not
the same links); ``--spacy`` adds the spaCy backend. Ours (``predict_many``, ``find_many``,
one ``find`` and one ``predict`` per query), the anchor and the bare scan are timed in
``--repeat`` interleaved rounds (best of each), the others best of 3.

``quality``: the ATT&CK and Disease Ontology linking sets of docs/linking.md.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

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
    from kg_rageval.families.linking import score_linking

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
        print(
            f"score_linking overlap={overlap}: {n_g:,} gold + {n_p:,} predicted mentions in {dt:.2f} s "
            f"wall, {dc:.2f} s CPU ({(n_g + n_p) / dt:,.0f} mentions/s wall); rows={len(ev):,}; "
            f"strong_all_match_f1={m['strong_all_match_f1'].value:.4f} "
            f"wrong_links={m['wrong_links'].value:,.0f} backend={ev.meta.get('hierarchy_backend', 'kernels')}"
        )
    t = time.perf_counter()
    ev.metrics()
    ev.breakdown("outcome")
    print(f"metrics + breakdown(outcome): {time.perf_counter() - t:.2f} s")


def _realistic_labels(n: int, seed: int = 0) -> tuple[list[str], list[str], list[str]]:
    """``(labels, synonyms, vocabulary)``: ``n`` distinct labels of 1–5 words from a
    6,000-word vocabulary, each with one synonym (its words reversed, hyphen-joined)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = list({"".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(6500)})[
        :6000
    ]
    labels: list[str] = []
    synonyms: list[str] = []
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


def _cpu(fn, *args, repeat: int = 3) -> tuple[float, Any]:
    """(CPU seconds, result) of ``fn(*args)``, best of ``repeat`` runs (the machine is
    shared: wall time is noisier; the first run also warms caches for every matcher alike)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        out = fn(*args)
        best = min(best, time.process_time() - t)
    return best, out


class AhoCorasickAnchor:
    """The fair anchor: pyahocorasick doing the linker's job on the same queries.

    Same normalisation (the linker's :func:`~kg_rageval.families.linking.dictionary.tokenize`: runs of
    letters/digits, case- and diacritic-folded, with their offsets); whole-token matches only
    (every surface form is a key of its folded tokens joined and enclosed by ``"\\x1f"``, a
    character no token holds, and the query is scanned as its tokens joined the same way);
    the same overlap rule (longest first, ties to the earlier start, as ``filter_spans``);
    the same id and score per form (the linker's resolution table: resolving a form is a
    dictionary look-up, not matching). Output: the record-format mentions of
    ``DictionaryLinker.predict``, so the two are compared for equality. One ``iter`` per
    query, as pyahocorasick is used."""

    def __init__(self, linker):
        import ahocorasick

        self.automaton = a = ahocorasick.Automaton()
        sep = "\x1f"
        for form in linker._forms:
            node, score, _ = linker._resolved(form)
            a.add_word(sep + sep.join(form) + sep, (len(form), node, round(score, 6)))
        a.make_automaton()

    def predict(self, text: str) -> list[dict]:
        from kg_rageval.families.linking.dictionary import tokenize

        toks, starts, ends = tokenize(text)
        if not toks:
            return []
        sep = "\x1f"
        joined = sep + sep.join(toks) + sep
        hits = []
        for end, (n, node, score) in self.automaton.iter(joined):
            b = joined.count(sep, 0, end)  # the key ends at the separator after token b - 1
            hits.append((b - n, b, node, score))
        hits.sort(key=lambda h: (h[0] - h[1], h[0]))  # longest first, then earliest
        taken: set[int] = set()
        kept = []
        for h in hits:
            if h[0] in taken or h[1] - 1 in taken:
                continue
            taken.update(range(h[0], h[1]))
            kept.append(h)
        kept.sort()
        return [
            {"start": starts[a], "end": ends[b - 1], "id": node, "score": score} for a, b, node, score in kept
        ]

    def predict_many(self, texts: list[str]) -> list[list[dict]]:
        return [self.predict(t) for t in texts]


def _bare_scan(forms: list[str]) -> Any:
    """A bare pyahocorasick scan (``queries -> number of raw matches``), or None without
    pyahocorasick: lower-cased, space-padded labels and synonyms over the lower-cased query;
    no tokenising, offsets or overlap resolution (raw matches, not the same links): the cost
    of the automaton walk alone. The #33 anchor of the linker's end-to-end throughput: timed
    in the interleaved rounds with ours."""
    try:
        import ahocorasick
    except ImportError:
        return None
    a = ahocorasick.Automaton()
    for f in forms:
        a.add_word(" " + f.lower().replace("-", " ") + " ", 1)
    a.make_automaton()

    def scan(qs):
        return sum(1 for q in qs for _ in a.iter(" " + q.lower().replace("?", " ") + " "))

    return scan


def _flashtext(forms: list[str], queries: list[str]) -> tuple[float, int] | None:
    """flashtext's ``extract_keywords`` over the lower-cased queries (its own word
    boundaries and longest-match rule: not the same links; context only)."""
    try:
        from flashtext import KeywordProcessor
    except ImportError:
        return None
    kp = KeywordProcessor()
    for f in forms:
        kp.add_keyword(f.lower().replace("-", " "))
    return _cpu(lambda qs: sum(len(kp.extract_keywords(q.lower())) for q in qs), queries)


def _interleaved(fns: dict[str, Any], queries: list[str], repeat: int) -> dict[str, float]:
    """Best CPU seconds per matcher over ``repeat`` rounds, each timing every matcher once in
    turn, so that the load of the shared machine falls on all of them alike (a matcher timed
    in a quiet minute against one timed in a busy one would skew the ratio). Each run starts
    from a full garbage collection with no other matcher's results alive (not timed), and its
    own results are kept until it returns, as a caller keeps them: a collection during a run
    walks that run's live objects only."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for label, fn in fns.items():
            gc.collect()
            t = time.process_time()
            out = fn(queries)
            best[label] = min(best[label], time.process_time() - t)
            del out
    return best


ANCHOR = "anchor: pyahocorasick, same job (same links, asserted)"
BARE = "bare pyahocorasick scan (raw matches, no tokens/offsets/resolution; interleaved)"


def _compare(name: str, onto, queries: list[str], spacy: bool, repeat: int = 5) -> dict[str, float]:
    """Every matcher on the same queries in one run; asserts the anchor's and every
    backend's links equal ours. Returns queries/s CPU per matcher. Our three entry points and
    the anchor are timed in interleaved rounds (best of ``repeat``), the rest best of 3."""
    from kg_rageval.families.linking.dictionary import DictionaryLinker, SpacyDictionaryLinker

    nq = len(queries)
    t = time.process_time()
    ours = DictionaryLinker(onto)
    print(
        f"[{name}] DictionaryLinker build: {time.process_time() - t:.2f} s CPU, {len(ours):,} forms, "
        f"longest form {ours.max_len} tokens"
    )
    fns: dict[str, Any] = {
        "ours: predict_many (batched, mention dicts)": ours.predict_many,
        "ours: find_many (batched, Link objects)": ours.find_many,
        "ours: find, one call per query": lambda qs: [ours.find(q) for q in qs],
        "ours: predict, one call per query (mention dicts)": lambda qs: [ours.predict(q) for q in qs],
    }
    anchor: AhoCorasickAnchor | None = None
    try:
        made = AhoCorasickAnchor(ours)
    except ImportError:
        print(f"[{name}] pyahocorasick anchor skipped: not installed")
    else:
        anchor = made
        fns[ANCHOR] = made.predict_many
    forms = [t for i in range(len(onto)) for t in (onto.labels[i], *onto.synonyms[i]) if t]
    bare = _bare_scan(forms)
    if bare is not None:
        fns[BARE] = bare
    qps = {label: nq / dt for label, dt in _interleaved(fns, queries, repeat).items()}
    bare_q = qps.pop(BARE, None)
    pred, links = ours.predict_many(queries), ours.find_many(queries)  # the results, compared
    assert [ours.find(q) for q in queries] == links
    assert [[lk.to_mention() for lk in ls] for ls in links] == pred == [ours.predict(q) for q in queries]
    if anchor is not None:
        assert anchor.predict_many(queries) == pred, "the anchor's links differ from the linker's"
        auto = DictionaryLinker(onto, backend="automaton")
        dt, got = _cpu(auto.find_many, queries)
        assert got == links
        qps["ours, automaton backend (pyahocorasick; same links)"] = nq / dt
    n_found = sum(map(len, pred))
    ref = DictionaryLinker(onto, backend="python")
    dt, got = _cpu(ref.find_many, queries)
    assert got == links
    qps["ours, python backend (reference scan; same links)"] = nq / dt
    if bare_q is not None:
        qps[BARE] = bare_q
    else:
        print(f"[{name}] {BARE}: skipped, not installed")
    res = _flashtext(forms, queries)
    if res is None:
        print(f"[{name}] flashtext: skipped, not installed")
    else:
        qps["context: flashtext extract_keywords (its own rules)"] = nq / res[0]
    if spacy:
        try:
            sp = SpacyDictionaryLinker(onto)
        except ImportError as exc:
            print(f"spaCy backend skipped: {exc}")
        else:
            sub = queries[: max(1, nq // 4)]
            dt, got = _cpu(sp.find_many, sub)
            assert got == links[: len(sub)]
            qps["ours, spaCy PhraseMatcher backend (same links)"] = len(sub) / dt
    anchor_q = qps.get(ANCHOR)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"[{name}] {nq:,} queries, {n_found:,} mentions; load average {load:.1f}; "
        "queries/s CPU (ratio to the anchor):"
    )
    for label, v in qps.items():
        ratio = f"{v / anchor_q:.2f}x" if anchor_q else "-"
        to_bare = f"{v / bare_q:.2f}x bare" if bare_q else ""
        print(f"  {label:<80} {v:>10,.0f}  {ratio:>6}  {to_bare}")
    return qps


def bench_dictionary(n_queries: int, spacy: bool = False, repeat: int = 5, labels: str = "both") -> None:
    """``labels``: ``"concept"`` (the synthetic ``concept <n>`` labels), ``"realistic"`` or
    ``"both"``."""
    if labels in ("concept", "both"):
        onto = build_ontology(350_000)
        rng = random.Random(0)
        qs = [
            f"what is concept {rng.randrange(350_000)} and how does it relate to concept {rng.randrange(350_000)}?"
            for _ in range(n_queries)
        ]
        _compare("concept <n>", onto, qs, spacy, repeat)
        del onto
    if labels in ("realistic", "both"):
        onto2, words, vocab = _build_realistic(350_000)
        _compare("realistic", onto2, _queries(words, vocab, n_queries), spacy, repeat)


def bench_quality(embedding: bool) -> None:
    from kg_rageval.families.linking import score_linking
    from kg_rageval.families.linking.dictionary import DictionaryLinker
    from kg_rageval.families.linking.testset import build_linking_set, run_linker
    from kg_rageval.ontology import load_ontology

    shared = ROOT.parent / "shared" / "data"
    sets = {
        "ATT&CK 18.1": shared / "attack/enterprise-attack-techniques-18.1.json.gz",
        "DO cancer slim": shared / "doid/DO_cancer_slim.obo",
    }
    cols = [
        "mention_f1",
        "strong_all_match_f1",
        "strong_link_match_f1",
        "strong_nil_match_f1",
        "disambiguation_accuracy",
        "nil_precision",
        "nil_recall",
        "over_links",
        "over_link_near_rate",
        "abstentions",
        "wrong_links",
        "hierarchical_f1",
        "wu_palmer",
    ]
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
            from kg_rageval.families.linking.embedding import EmbeddingLinker, load_model

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
                cells.append(
                    "—"
                    if x is None
                    else (f"{x:.0f}" if c in ("over_links", "abstentions", "wrong_links") else f"{x:.3f}")
                )
            print(
                f"| {name} ({len(recs)} q, {len(held)} NIL) | {linker} | {mode} | " + " | ".join(cells) + " |"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("score")
    s.add_argument("--mentions", type=int, default=500_000, help="gold mentions (as many predicted)")
    s.add_argument("--overlap", action="store_true", help="also time overlap alignment")
    d = sub.add_parser("dictionary")
    d.add_argument("--queries", type=int, default=20_000)
    d.add_argument(
        "--spacy", action="store_true", help="also time the spaCy PhraseMatcher backend (slow build)"
    )
    d.add_argument(
        "--repeat", type=int, default=5, help="interleaved rounds for ours and the anchor (best of)"
    )
    d.add_argument(
        "--labels", choices=("concept", "realistic", "both"), default="both", help="which label set"
    )
    q = sub.add_parser("quality")
    q.add_argument("--embedding", action="store_true")
    a = ap.parse_args()
    if a.what == "score":
        bench_score(a.mentions, (False, True) if a.overlap else (False,))
    elif a.what == "dictionary":
        bench_dictionary(a.queries, a.spacy, a.repeat, a.labels)
    else:
        bench_quality(a.embedding)


if __name__ == "__main__":
    main()
