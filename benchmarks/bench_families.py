"""Every family of the ingestion / query-time / import round against its reference tool on the
same inputs (issue #33; docs/performance.md, "Families against their reference tools"). Not a test
(tests/test_bench_families.py runs it at a tiny N and checks only that the numbers agree).

    python benchmarks/bench_families.py [--n 10000] [--repeat 3] [--only a,b] [--skip a,b] [--seed 1]
                                        [--json] [--in-process]

Each family runs in a fresh interpreter (``--in-process``: all in this one).

Per family the driver generates ``--n`` rows (sentences, records, run lines, file rows), runs our
public function and the reference on the same data, **asserts that the numbers are equal**
(``abs 1e-9``) after the first round, and keeps the best CPU time of each side over
``--repeat`` interleaved rounds (ours, reference, ours, ...; the checked round is the first):
``time.process_time``, user + system of this process, all its threads. The ratio is ours /
reference: above 1, ours is slower.

What each side gets (the ``BENCHES`` table below, one line per family):

* our side starts from what a user of the family has: records (dicts, as ``read_records``
  gives them) for a family call, the file for an importer or a reader, and returns the
  family's :class:`~kg_rageval.results.Evaluation` (every metric, roll-up and meta it writes);
* the reference side starts from the same data in the tool's own form (tag lists for seqeval,
  label lists for scikit-learn, ``{q: {d: s}}`` for ranx, a file for a reader's floor) and
  computes only what is compared.

References: seqeval ``classification_report`` (NER, default mode), the official TACRED scorer's
micro formula (``scorer.py`` of Zhang et al. 2017, transcribed as the script runs it: one pass
over the key and prediction lists after ``json.load``), scikit-learn ``classification_report``
(routing intents and modes, cleaning language id), datasketch ``MinHash`` + ``MinHashLSH``
(near duplicates), ranx ``fuse`` (RRF over three runs), ``scipy.stats.kendalltau`` (reading
order, one call a document as a user would write it), nuggetizer's
``calculate_nugget_scores`` formula transcribed (no nuggetizer package here), the Jaccard of
concept sets transcribed (consistency: no tool exists), and for the importers the floor of
parsing the same file with ``json.loads`` per line (JSONL), ``json.load`` (one JSON document),
or ``csv`` + ``json`` (BEIR): a reader's reference is the cost of reading what it reads.
CER/WER (jiwer), TEDS (PubTabNet) and ``index recall`` (exact search) have their own
benchmarks (cer_bench.py, teds_bench.py, index_bench.py).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]


# ---------------------------------------------------------------------------- comparison


def same(ours: Any, ref: Any, where: str = "") -> None:
    """Equal numbers (abs 1e-9), equal keys, ``None`` where the reference says nan."""
    if isinstance(ref, dict):
        if set(ours) != set(ref):
            raise AssertionError(f"{where}: keys differ: {sorted(set(ours) ^ set(ref))[:5]}")
        for k in ref:
            same(ours[k], ref[k], f"{where}.{k}")
    elif isinstance(ref, (list, tuple)):
        if len(ours) != len(ref):
            raise AssertionError(f"{where}: {len(ours)} values for {len(ref)}")
        for i, (a, b) in enumerate(zip(ours, ref)):
            same(a, b, f"{where}[{i}]")
    elif isinstance(ref, float) and math.isnan(ref):
        if ours is not None and not (isinstance(ours, float) and math.isnan(ours)):
            raise AssertionError(f"{where}: {ours!r} where the reference has nan")
    elif isinstance(ref, (int, float)) and not isinstance(ref, bool):
        if ours is None or abs(float(ours) - float(ref)) > 1e-9:
            raise AssertionError(f"{where}: ours {ours!r}, reference {ref!r}")
    elif ours != ref:
        raise AssertionError(f"{where}: ours {ours!r}, reference {ref!r}")


def _values(ev: Any, prefix: str = "") -> dict[str, Any]:
    return {k: m.value for k, m in ev.metrics().items() if k.startswith(prefix)}


# ---------------------------------------------------------------------------- extraction: NER

TYPES = ("PER", "ORG", "LOC", "MISC")


def _bio(rng: random.Random, n_tok: int) -> list[str]:
    tags, i = [], 0
    while i < n_tok:
        if rng.random() < 0.25:
            t, k = rng.choice(TYPES), rng.randint(1, 3)
            tags += [f"B-{t}"] + [f"I-{t}"] * (k - 1)
            i += k
        else:
            tags.append("O")
            i += 1
    return tags[:n_tok]


def _noisy(rng: random.Random, tags: list[str]) -> list[str]:
    out = []
    for t in tags:
        u = rng.random()
        if u < 0.05:
            out.append("O")
        elif u < 0.10 and t != "O":
            out.append(t[:2] + rng.choice(TYPES))
        elif u < 0.13:
            out.append(("I-" if rng.random() < 0.5 else "B-") + rng.choice(TYPES))
        else:
            out.append(t)
    return out


def make_ner(n: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    recs, y, p = [], [], []
    for i in range(n):
        g = _bio(rng, rng.randint(8, 20))
        q = _noisy(rng, g)
        recs.append({"id": f"s{i}", "extraction": {"gold_tags": g, "pred_tags": q}})
        y.append(g)
        p.append(q)
    return {"records": recs, "y": y, "p": p}


def _prf_table(ev: Any, key: str, pre: str) -> dict[str, tuple[float, float, float]]:
    out = {}
    for t, g in ev.breakdown(key).items():
        if t is not None:
            m = g["metrics"]
            out[t] = tuple(m[f"{pre}_{x}"].value for x in ("precision", "recall", "f1"))
    return out


def ours_ner(d: dict[str, Any]) -> dict[str, Any]:
    from kg_rageval.families.extraction import score_extraction

    ev = score_extraction(None, d["records"])
    v = _values(ev, "ner_")
    m = ev.meta["macro"]["ner"]
    return {
        "per_type": _prf_table(ev, "slice:entity_type", "ner"),
        "micro": (v["ner_precision"], v["ner_recall"], v["ner_f1"]),
        "macro_f1": m["f1"],
        "weighted_f1": m["weighted_f1"],
    }


def ref_ner(d: dict[str, Any]) -> dict[str, Any]:
    from seqeval.metrics import classification_report

    rep = classification_report(d["y"], d["p"], output_dict=True)
    return {
        "per_type": {t: (r["precision"], r["recall"], r["f1-score"]) for t, r in rep.items() if t in TYPES},
        "micro": tuple(rep["micro avg"][k] for k in ("precision", "recall", "f1-score")),
        "macro_f1": rep["macro avg"]["f1-score"],
        "weighted_f1": rep["weighted avg"]["f1-score"],
    }


# ---------------------------------------------------------------------------- extraction: TACRED

RELATIONS = ("org:founded_by", "per:city_of_birth", "org:members", "per:title", "no_relation")


def make_tacred(n: int, seed: int, folder: Path) -> dict[str, Any]:
    rng = random.Random(seed)
    gold, pred = [], {}
    for i in range(n):
        rel = rng.choice(RELATIONS)
        toks = ["w"] * rng.randint(6, 12)
        a = rng.randrange(len(toks) - 2)
        gold.append(
            {
                "id": f"t{i}",
                "relation": rel,
                "token": toks,
                "subj_start": a,
                "subj_end": a,
                "obj_start": a + 1,
                "obj_end": a + 2,
                "subj_type": "ORG",
                "obj_type": "PER",
            }
        )
        pred[f"t{i}"] = rel if rng.random() < 0.6 else rng.choice(RELATIONS)
    g, p = folder / "tacred_gold.json", folder / "tacred_pred.json"
    g.write_text(json.dumps(gold))
    p.write_text(json.dumps(pred))
    return {"gold": g, "pred": p}


def ours_tacred(d: dict[str, Any]) -> dict[str, Any]:
    from kg_rageval.families.extraction import score_extraction
    from kg_rageval.records.relation_sets import read_tacred

    recs = read_tacred(d["gold"], d["pred"], max_bytes=2**40)
    v = _values(score_extraction(None, recs), "re_")
    return {"micro": (v["re_precision"], v["re_recall"], v["re_f1"])}


def ref_tacred(d: dict[str, Any]) -> dict[str, Any]:
    """The official scorer's ``score(key, prediction)`` (micro P/R/F1), as scorer.py runs it."""
    key = [s["relation"] for s in json.loads(Path(d["gold"]).read_text())]
    preds = json.loads(Path(d["pred"]).read_text())
    prediction = [preds[f"t{i}"] for i in range(len(key))]
    correct_by_relation: Counter[str] = Counter()
    guessed_by_relation: Counter[str] = Counter()
    gold_by_relation: Counter[str] = Counter()
    for row in range(len(key)):
        gold, guess = key[row], prediction[row]
        if gold == "no_relation" and guess == "no_relation":
            pass
        elif gold == "no_relation" and guess != "no_relation":
            guessed_by_relation[guess] += 1
        elif gold != "no_relation" and guess == "no_relation":
            gold_by_relation[gold] += 1
        elif gold != "no_relation" and guess != "no_relation":
            guessed_by_relation[guess] += 1
            gold_by_relation[gold] += 1
            if gold == guess:
                correct_by_relation[guess] += 1
    prec_micro = 1.0
    if sum(guessed_by_relation.values()) > 0:
        prec_micro = float(sum(correct_by_relation.values())) / float(sum(guessed_by_relation.values()))
    recall_micro = 0.0
    if sum(gold_by_relation.values()) > 0:
        recall_micro = float(sum(correct_by_relation.values())) / float(sum(gold_by_relation.values()))
    f1_micro = 0.0
    if prec_micro + recall_micro > 0.0:
        f1_micro = 2.0 * prec_micro * recall_micro / (prec_micro + recall_micro)
    return {"micro": (prec_micro, recall_micro, f1_micro)}


# ---------------------------------------------------------------------------- routing

INTENTS = ("lookup", "compare", "list", "define", "howto", "chitchat")
MODES = ("no_retrieval", "one_shot", "iterative")


def make_routing(n: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    recs, ig, ip, mg, mp = [], [], [], [], []
    for i in range(n):
        g = rng.choice(INTENTS)
        p = g if rng.random() < 0.7 else rng.choice(INTENTS)
        a = rng.choice(MODES)
        b = a if rng.random() < 0.6 else rng.choice(MODES)
        recs.append(
            {"id": f"r{i}", "routing": {"intent": {"gold": g, "pred": p}, "mode": {"gold": a, "pred": b}}}
        )
        ig.append(g)
        ip.append(p)
        mg.append(a)
        mp.append(b)
    return {"records": recs, "intent": (ig, ip), "mode": (mg, mp)}


def ours_routing(d: dict[str, Any]) -> dict[str, Any]:
    from kg_rageval.families.routing import score_routing

    m = _values(score_routing(None, d["records"]))
    out = {}
    for part, labels in (("intent", INTENTS), ("mode", MODES)):
        for lab in labels:
            for x in ("precision", "recall", "f1", "support"):
                out[f"{part}.{lab}.{x}"] = m[f"{part}.{lab}.{x}"]
        for avg in ("macro", "weighted"):
            for x in ("precision", "recall", "f1"):
                out[f"{part}.{avg}.{x}"] = m[f"{part}.{avg}.{x}"]
    return out


def ref_routing(d: dict[str, Any]) -> dict[str, Any]:
    from sklearn.metrics import classification_report

    out = {}
    for part, labels in (("intent", INTENTS), ("mode", MODES)):
        g, p = d[part]
        rep = classification_report(g, p, zero_division=float("nan"), output_dict=True)
        for lab in labels:
            for x, y in (
                ("precision", "precision"),
                ("recall", "recall"),
                ("f1", "f1-score"),
                ("support", "support"),
            ):
                out[f"{part}.{lab}.{x}"] = rep[lab][y]
        for avg in ("macro", "weighted"):
            for x, y in (("precision", "precision"), ("recall", "recall"), ("f1", "f1-score")):
                out[f"{part}.{avg}.{x}"] = rep[f"{avg} avg"][y]
    return out


# ---------------------------------------------------------------------------- cleaning: language id

LANGS = ("en", "de", "fr", "nl", "es", "it")


def make_language(n: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    recs, g, p = [], [], []
    for i in range(n):
        a = rng.choice(LANGS)
        b = a if rng.random() < 0.8 else rng.choice(LANGS)
        recs.append({"id": f"c{i}", "cleaning": {"doc_id": f"doc-{i}", "language": {"gold": a, "pred": b}}})
        g.append(a)
        p.append(b)
    return {"records": recs, "y": g, "p": p}


def ours_language(d: dict[str, Any]) -> dict[str, Any]:
    from kg_rageval.families.cleaning import score_cleaning

    table = score_cleaning(None, d["records"]).meta["per_language"]
    return {lang: tuple(table[lang][x] for x in ("precision", "recall", "f1")) for lang in LANGS}


def ref_language(d: dict[str, Any]) -> dict[str, Any]:
    from sklearn.metrics import classification_report

    rep = classification_report(
        d["y"], d["p"], labels=list(LANGS), output_dict=True, zero_division=float("nan")
    )
    return {lang: tuple(rep[lang][x] for x in ("precision", "recall", "f1-score")) for lang in LANGS}


# ---------------------------------------------------------------------------- cleaning: near duplicates


def make_minhash(n: int, seed: int) -> dict[str, Any]:
    """``n`` texts of 30 words from 200: a base text, then on every third a copy with one word
    changed (a near duplicate), and one with ten words replaced (not one at 0.8)."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(200)]
    texts: dict[str, str] = {}
    base: list[str] = []
    for i in range(n):
        if i % 3 == 0:
            base = [rng.choice(words) for _ in range(30)]
            texts[f"d{i}"] = " ".join(base)
        elif i % 3 == 1:
            one = list(base)
            one[rng.randrange(30)] = "zz"
            texts[f"d{i}"] = " ".join(one)
        else:
            ten = list(base)
            ten[:10] = ["yy"] * 10
            texts[f"d{i}"] = " ".join(ten)
    return {"texts": texts, "threshold": 0.8}


def ours_minhash(d: dict[str, Any]) -> dict[str, Any]:
    from kg_rageval.families.cleaning import minhash_pairs

    return {"pairs": sorted(minhash_pairs(d["texts"], d["threshold"]))}


def ref_minhash(d: dict[str, Any]) -> dict[str, Any]:
    import datasketch as ds

    from kg_rageval.families.cleaning import shingles

    kw = {"scheme": "legacy"} if "scheme" in ds.MinHash.__init__.__code__.co_varnames else {}
    lsh = ds.MinHashLSH(threshold=d["threshold"], num_perm=128)
    sigs = {}
    for doc, text in d["texts"].items():
        sh = shingles(text)
        if not sh:
            continue
        m = ds.MinHash(num_perm=128, seed=1, **kw)
        m.update_batch([s.encode("utf-8") for s in sorted(sh)])
        sigs[doc] = m
        lsh.insert(doc, m)
    pairs = {tuple(sorted((a, o))) for a, m in sigs.items() for o in lsh.query(m) if o != a}
    return {"pairs": sorted(pairs)}


# ---------------------------------------------------------------------------- fusion


def make_fuse(n: int, seed: int) -> dict[str, Any]:
    """Three runs of ``n`` lines each: ``n // 100`` queries × 100 docs from a pool of 150."""
    import numpy as np

    rng = np.random.default_rng(seed)
    nq = max(1, n // 100)

    def one(shift: float, scale: float) -> dict[str, dict[str, float]]:
        return {
            f"q{i}": {f"d{j}": float(rng.normal(shift, scale)) for j in rng.choice(150, 100, replace=False)}
            for i in range(nq)
        }

    return {"runs": [one(0.0, 1.0), one(3.0, 0.2), one(10.0, 5.0)]}


def ours_fuse(d: dict[str, Any]) -> dict[str, Any]:
    from kg_rageval.families.retrieval.fusion import fuse

    return fuse(d["runs"], "rrf", k=60)


def ref_fuse(d: dict[str, Any]) -> dict[str, Any]:
    import ranx

    return dict(ranx.fuse([ranx.Run(r) for r in d["runs"]], method="rrf", params={"k": 60}).to_dict())


# ---------------------------------------------------------------------------- parsing: reading order


def make_order(n: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    recs, pairs = [], []
    for i in range(n):
        ref = [f"b{j}" for j in range(rng.randint(4, 12))]
        ext = list(ref)
        for _ in range(rng.randint(0, 3)):
            a, b = rng.randrange(len(ext)), rng.randrange(len(ext))
            ext[a], ext[b] = ext[b], ext[a]
        recs.append({"id": f"p{i}", "parsing": {"reading_order": {"reference": ref, "extracted": ext}}})
        pairs.append((ref, ext))
    return {"records": recs, "pairs": pairs}


def ours_order(d: dict[str, Any]) -> dict[str, Any]:
    from kg_rageval.families.parsing import score_parsing

    return {"reading_order_tau": _values(score_parsing(None, d["records"]))["reading_order_tau"]}


def ref_order(d: dict[str, Any]) -> dict[str, Any]:
    """Mean τ-b over documents with ``scipy.stats.kendalltau`` of (reference rank, extracted
    position) of each document's blocks (a permutation here: every block found once)."""
    from scipy.stats import kendalltau

    taus = []
    for ref, ext in d["pairs"]:
        rank = {b: r for r, b in enumerate(ref)}
        t = kendalltau([rank[b] for b in ext], list(range(len(ext)))).statistic
        if not math.isnan(t):
            taus.append(t)
    return {"reading_order_tau": math.fsum(taus) / len(taus)}


# ---------------------------------------------------------------------------- nuggets

ASSIGN = ("support", "partial_support", "not_support")


def make_nuggets(n: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    recs = []
    for i in range(n):
        k = rng.randint(3, 10)
        items = [
            {
                "text": f"fact {j}",
                "importance": "vital" if rng.random() < 0.4 else "okay",
                "assignment": rng.choice(ASSIGN),
            }
            for j in range(k)
        ]
        recs.append({"id": f"a{i}", "nuggets": {"topic_id": f"t{i}", "items": items}})
    return {"records": recs}


NUGGET_SCORES = ("all", "all_strict", "vital", "vital_strict", "weighted", "weighted_strict")


def ours_nuggets(d: dict[str, Any]) -> dict[str, Any]:
    from kg_rageval.families.nuggets import score_nuggets

    m = _values(score_nuggets(None, d["records"]))
    return {s: m[f"nuggets.{s}"] for s in NUGGET_SCORES}


def ref_nuggets(d: dict[str, Any]) -> dict[str, Any]:
    """nuggetizer's ``calculate_nugget_scores`` per answer (castorini/nuggetizer,
    ``core/metrics.py``, transcribed), averaged over answers; V over answers with a vital
    nugget (nuggetizer writes 0 there: the family's documented difference)."""
    sums = dict.fromkeys(NUGGET_SCORES, 0.0)
    n = n_vital = 0
    for rec in d["records"]:
        items = rec["nuggets"]["items"]
        imp = [it["importance"] for it in items]
        asg = [it["assignment"] for it in items]
        vital = [a for i, a in zip(imp, asg) if i == "vital"]
        score = {"support": 1.0, "partial_support": 0.5, "not_support": 0.0}
        w = [1.0 if i == "vital" else 0.5 for i in imp]
        n += 1
        sums["all"] += sum(score[a] for a in asg) / len(asg)
        sums["all_strict"] += sum(1.0 for a in asg if a == "support") / len(asg)
        sums["weighted"] += sum(wi * score[a] for wi, a in zip(w, asg)) / sum(w)
        sums["weighted_strict"] += sum(wi for wi, a in zip(w, asg) if a == "support") / sum(w)
        if vital:
            n_vital += 1
            sums["vital"] += sum(score[a] for a in vital) / len(vital)
            sums["vital_strict"] += sum(1.0 for a in vital if a == "support") / len(vital)
    return {s: sums[s] / (n_vital if s.startswith("vital") else n) for s in NUGGET_SCORES}


# ---------------------------------------------------------------------------- consistency


def _onto():
    from kg_rageval.ontology import load_ontology

    return load_ontology(ROOT / "fixtures" / "hierarchy" / "vehicles.obo")


def make_consistency(n: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    onto = _onto()
    nodes = sorted(c for c in onto.ids if onto.depth(c) > 0)
    recs = []
    for i in range(n):
        samples = [
            {"text": rng.choice("ab"), "concepts": sorted(set(rng.sample(nodes, rng.randint(1, 2))))}
            for _ in range(rng.randint(2, 5))
        ]
        recs.append({"id": f"k{i}", "consistency": {"temperature": 0.7, "samples": samples}})
    return {"records": recs, "onto": onto}


def ours_consistency(d: dict[str, Any]) -> dict[str, Any]:
    from kg_rageval.families.consistency import score_consistency

    m = _values(score_consistency(d["onto"], d["records"]))
    return {k: m[f"{k}.mean"] for k in ("concept_agreement", "text_agreement")}


def ref_consistency(d: dict[str, Any]) -> dict[str, Any]:
    """Mean over records of the mean pairwise Jaccard of concept sets and of exact text match
    (transcribed: no tool computes self-consistency over concept sets)."""
    ca = ta = 0.0
    for rec in d["records"]:
        s = rec["consistency"]["samples"]
        pairs = list(combinations(s, 2))
        ca += sum(
            len(set(a["concepts"]) & set(b["concepts"])) / len(set(a["concepts"]) | set(b["concepts"]))
            for a, b in pairs
        ) / len(pairs)
        ta += sum(a["text"].casefold() == b["text"].casefold() for a, b in pairs) / len(pairs)
    n = len(d["records"])
    return {"concept_agreement": ca / n, "text_agreement": ta / n}


# ---------------------------------------------------------------------------- importers (floors)


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    return path


def make_ragas(n: int, seed: int, folder: Path) -> dict[str, Any]:
    rows = [
        {
            "user_input": f"Which technique covers dumping LSASS memory? #{i}",
            "retrieved_contexts": [
                "Adversaries may access LSASS process memory.",
                f"T1003.{i} LSASS Memory.",
            ],
            "response": f"LSASS Memory (T1003.{i}).",
            "reference": "LSASS Memory",
            "reference_contexts": [f"T1003.{i} LSASS Memory."],
        }
        for i in range(n)
    ]
    return {"path": _write_jsonl(folder / "ragas.jsonl", rows), "format": "ragas"}


def make_deepeval(n: int, seed: int, folder: Path) -> dict[str, Any]:
    rows = [
        {
            "input": f"Which technique covers dumping LSASS memory? #{i}",
            "actual_output": "LSASS Memory (T1003.001).",
            "expected_output": "LSASS Memory",
            "retrieval_context": [f"T1003.{i} LSASS Memory is a sub-technique."],
            "context": ["T1003.001 LSASS Memory."],
            "name": f"case-{i}",
        }
        for i in range(n)
    ]
    p = folder / "deepeval.json"
    p.write_text(json.dumps(rows))
    return {"path": p, "format": "deepeval", "document": True}


def make_trec_rag(n: int, seed: int, folder: Path) -> dict[str, Any]:
    rows = [
        {
            "run_id": "runA",
            "topic_id": f"2024-{i}",
            "topic": f"what is a sedan {i}",
            "references": [f"msmarco_v2.1_doc_04_{i}#2_1", f"msmarco_v2.1_doc_13_{i}#0_3"],
            "response_length": 9,
            "answer": [
                {"text": "A sedan is a car.", "citations": [0, 1]},
                {"text": "It has four doors.", "citations": [1]},
            ],
        }
        for i in range(n)
    ]
    return {"path": _write_jsonl(folder / "trec_rag.jsonl", rows), "format": "trec-rag"}


def _phoenix_trace(i: int) -> list[dict[str, Any]]:
    tid = f"{i:032x}"
    root, ret = f"{2 * i:016x}", f"{2 * i + 1:016x}"
    base = {"status_code": "OK", "status_message": "", "events": []}
    return [
        {
            "context.trace_id": tid,
            "context.span_id": root,
            "parent_id": None,
            "name": "query",
            "span_kind": "CHAIN",
            "start_time": "2024-05-01T10:00:00.000000+00:00",
            "end_time": "2024-05-01T10:00:01.500000+00:00",
            **base,
            "attributes.input.value": f"Which technique covers dumping LSASS memory? #{i}",
            "attributes.output.value": "T1003.001, LSASS Memory.",
            "attributes.openinference.span.kind": "CHAIN",
            "attributes.kg.query_id": f"q{i}",
        },
        {
            "context.trace_id": tid,
            "context.span_id": ret,
            "parent_id": root,
            "name": "retrieve",
            "span_kind": "RETRIEVER",
            "start_time": "2024-05-01T10:00:00.100000+00:00",
            "end_time": "2024-05-01T10:00:00.350000+00:00",
            **base,
            "attributes.openinference.span.kind": "RETRIEVER",
            "attributes.retrieval.documents": [
                {"document.id": f"T1003.{i}", "document.score": 0.9, "document.content": "LSASS Memory"}
            ],
        },
    ]


def make_phoenix(n: int, seed: int, folder: Path) -> dict[str, Any]:
    rows = [s for i in range(max(1, n // 2)) for s in _phoenix_trace(i)]
    return {"path": _write_jsonl(folder / "phoenix.jsonl", rows), "format": "phoenix"}


def make_otlp(n: int, seed: int, folder: Path) -> dict[str, Any]:
    def attr(k: str, v: str) -> dict[str, Any]:
        return {"key": k, "value": {"stringValue": v}}

    spans = []
    for i in range(max(1, n // 2)):
        tid, root = f"{i:032x}", f"{2 * i:016x}"
        spans.append(
            {
                "traceId": tid,
                "spanId": root,
                "name": "query",
                "kind": 1,
                "startTimeUnixNano": "1714557600000000000",
                "endTimeUnixNano": "1714557601500000000",
                "attributes": [
                    attr("openinference.span.kind", "CHAIN"),
                    attr("input.value", f"Which technique covers dumping LSASS memory? #{i}"),
                    attr("output.value", "T1003.001, LSASS Memory."),
                    attr("kg.query_id", f"q{i}"),
                ],
                "status": {},
            }
        )
        spans.append(
            {
                "traceId": tid,
                "spanId": f"{2 * i + 1:016x}",
                "parentSpanId": root,
                "name": "retrieve",
                "kind": 1,
                "startTimeUnixNano": "1714557600100000000",
                "endTimeUnixNano": "1714557600350000000",
                "attributes": [attr("openinference.span.kind", "RETRIEVER")],
                "status": {},
            }
        )
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", "bench")]},
                "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}],
            }
        ]
    }
    p = folder / "otlp.json"
    p.write_text(json.dumps(doc))
    return {"path": p, "format": "otlp", "document": True}


def make_beir(n: int, seed: int, folder: Path) -> dict[str, Any]:
    """``n`` qrels lines: ``n // 2`` queries with two judged documents each, the corpus those."""
    b = folder / "beir"
    (b / "qrels").mkdir(parents=True, exist_ok=True)
    nq = max(1, n // 2)
    _write_jsonl(
        b / "corpus.jsonl", [{"_id": f"d{i}", "title": f"t{i}", "text": f"text {i}"} for i in range(n)]
    )
    _write_jsonl(b / "queries.jsonl", [{"_id": f"q{i}", "text": f"query {i}"} for i in range(nq)])
    with (b / "qrels" / "test.tsv").open("w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for i in range(nq):
            fh.write(f"q{i}\td{2 * i}\t2\nq{i}\td{2 * i + 1}\t1\n")
    return {"path": b, "format": "beir", "beir": True}


def ours_import(d: dict[str, Any]) -> dict[str, Any]:
    from kg_rageval.interop.formats import read

    imp = read(d["format"], d["path"])
    return {"n_records": len(imp.records)}


def ref_import(d: dict[str, Any]) -> dict[str, Any]:
    """The floor: parse the same file(s) with the standard library, count the records."""
    p = Path(d["path"])
    if d.get("beir"):
        for name in ("corpus.jsonl", "queries.jsonl"):
            with (p / name).open(encoding="utf-8") as fh:
                for line in fh:
                    json.loads(line)
        with (p / "qrels" / "test.tsv").open(newline="") as fh:
            qids = {row["query-id"] for row in csv.DictReader(fh, delimiter="\t")}
        return {"n_records": len(qids)}
    if d.get("document"):
        doc = json.loads(p.read_text(encoding="utf-8"))
        if isinstance(doc, dict):  # OTLP: one record a trace
            traces = {
                s["traceId"] for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
            }
            return {"n_records": len(traces)}
        return {"n_records": len(doc)}
    with p.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    if d["format"] == "phoenix":
        return {"n_records": len({r["context.trace_id"] for r in rows})}
    return {"n_records": len(rows)}


# ---------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Bench:
    name: str
    reference: str
    make: Callable[..., dict[str, Any]]
    ours: Callable[[dict[str, Any]], Any]
    ref: Callable[[dict[str, Any]], Any]
    files: bool = False  # make takes a folder
    requires: str | None = None  # the reference's module (an optional package)


BENCHES = (
    Bench(
        "extraction NER",
        "seqeval 1.2.2 classification_report",
        make_ner,
        ours_ner,
        ref_ner,
        requires="seqeval",
    ),
    Bench(
        "extraction TACRED",
        "TACRED scorer.py (micro), transcribed",
        make_tacred,
        ours_tacred,
        ref_tacred,
        True,
    ),
    Bench(
        "routing",
        "scikit-learn classification_report",
        make_routing,
        ours_routing,
        ref_routing,
        requires="sklearn",
    ),
    Bench(
        "cleaning language",
        "scikit-learn classification_report",
        make_language,
        ours_language,
        ref_language,
        requires="sklearn",
    ),
    Bench(
        "cleaning near-dup",
        "datasketch MinHash + MinHashLSH",
        make_minhash,
        ours_minhash,
        ref_minhash,
        requires="datasketch",
    ),
    Bench("fuse rrf", "ranx fuse (rrf)", make_fuse, ours_fuse, ref_fuse, requires="ranx"),
    Bench(
        "parsing reading order", "scipy.stats.kendalltau", make_order, ours_order, ref_order, requires="scipy"
    ),
    Bench("nuggets", "nuggetizer formula, transcribed", make_nuggets, ours_nuggets, ref_nuggets),
    Bench(
        "consistency",
        "pairwise Jaccard, transcribed (no tool)",
        make_consistency,
        ours_consistency,
        ref_consistency,
    ),
    Bench("import ragas", "json.loads floor", make_ragas, ours_import, ref_import, True),
    Bench("import deepeval", "json.load floor", make_deepeval, ours_import, ref_import, True),
    Bench("import trec-rag", "json.loads floor", make_trec_rag, ours_import, ref_import, True),
    Bench("import phoenix", "json.loads floor", make_phoenix, ours_import, ref_import, True),
    Bench("import otlp", "json.load floor", make_otlp, ours_import, ref_import, True),
    Bench("import beir", "json.loads + csv floor", make_beir, ours_import, ref_import, True),
)


def _cpu(fn: Callable[[dict[str, Any]], Any], d: dict[str, Any]) -> float:
    t = time.process_time()
    fn(d)
    return time.process_time() - t


def run_bench(b: Bench, n: int, repeat: int, seed: int, folder: Path) -> dict[str, Any]:
    """Warm up, generate, time the first round and check its numbers equal, then time
    ``repeat - 1`` more interleaved rounds; the best of each side."""
    # warm-up on 20 rows, untimed: imports and a reference's JIT compilation (ranx: numba) stay
    # out of every timed round
    w = folder / "warm"
    w.mkdir(exist_ok=True)
    small = b.make(20, seed, w) if b.files else b.make(20, seed)
    b.ours(small)
    b.ref(small)
    d = b.make(n, seed, folder) if b.files else b.make(n, seed)
    t0 = time.process_time()
    got = b.ours(d)
    t1 = time.process_time()
    want = b.ref(d)
    ours, ref = t1 - t0, time.process_time() - t1
    same(got, want, b.name)
    del got, want
    for _ in range(repeat - 1):
        ours = min(ours, _cpu(b.ours, d))
        ref = min(ref, _cpu(b.ref, d))
    return {
        "family": b.name,
        "reference": b.reference,
        "n": n,
        "ours_s": ours,
        "ref_s": ref,
        "ratio": ours / ref if ref else math.inf,
    }


def _isolated(name: str, a: argparse.Namespace) -> dict[str, Any]:
    """One family's :func:`run_bench` in a fresh interpreter (its JSON line back). Run in one
    process, a family's timed calls would pay for the objects every earlier family and its
    reference left imported (the cyclic collector walks them all: after ranx and numba are
    imported, a reader's CPU time grew 3-4x)."""
    import subprocess

    cmd = [sys.executable, __file__, "--in-process", "--json", "--only", name]
    cmd += ["--n", str(a.n), "--repeat", str(a.repeat), "--seed", str(a.seed)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{name}: exit {done.returncode}\n{done.stderr[-4000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _pick(names: str | None) -> set[str]:
    return {x.strip() for x in names.split(",")} if names else set()


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", help="comma-separated family names (as in the table)")
    ap.add_argument("--skip", help="comma-separated family names to leave out")
    ap.add_argument("--json", action="store_true", help="one JSON object a line instead of the table")
    ap.add_argument(
        "--in-process",
        action="store_true",
        help="run every family in this process (default: each in a fresh interpreter)",
    )
    a = ap.parse_args(argv)
    only, skip = _pick(a.only), _pick(a.skip)
    out = []
    if not a.json:
        print(
            f"{'family':<24} {'reference':<40} {'n':>9} {'ours s':>9} {'ref s':>9} {'ratio':>7}", flush=True
        )
    for b in BENCHES:
        if (only and b.name not in only) or b.name in skip:
            continue
        if a.in_process:
            with tempfile.TemporaryDirectory() as tmp:
                r = run_bench(b, a.n, a.repeat, a.seed, Path(tmp))
        else:  # a fresh interpreter a family: no other family's imports or garbage in its heap
            r = _isolated(b.name, a)
        out.append(r)
        if a.json:
            print(json.dumps(r), flush=True)
        else:
            print(
                f"{r['family']:<24} {r['reference']:<40} {r['n']:>9} {r['ours_s']:>9.3f} {r['ref_s']:>9.3f} {r['ratio']:>7.2f}",
                flush=True,
            )
    return out


if __name__ == "__main__":
    main()
