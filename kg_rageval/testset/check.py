"""Leakage between test sets and the hashed test-set manifest.

**Leakage** (:func:`check_leakage`) between every pair of sets:

* *shared sources* — a source id (``testset.sources``, else the gold documents' source ids,
  see :func:`~kg_rageval.testset.split.record_sources`) or a session used by records of two sets;
* *exact duplicates* — the same normalised query (NFKC, lower case, runs of non-alphanumerics
  as one space) in two sets;
* *near duplicates* — MinHash signatures (``datasketch``, ``num_perm`` permutations) of the
  character ``shingle``-grams of the normalised query, candidate pairs from ``MinHashLSH``
  buckets at ``threshold``, each pair kept when its estimated Jaccard similarity is
  ``>= threshold``. Pairs inside one set are counted apart (not leakage); exact duplicates are
  not counted again, nor are *template siblings* — two built cases from one template about
  different concepts (``testset.template`` equal, ``testset.concepts`` different). In an LSH bucket with more than :data:`BIG_BUCKET` members, template
  siblings are not paired at all (bounded cost), and members without a template pair with
  every member; only more than :data:`BIG_BUCKET` members without a template fall back to a
  star and a chain of pairs (a pair there may be reported through a third query instead).

**Manifest** (:func:`testset_manifest`): sha256 of each set file, of the gold labels of every
set (:func:`~kg_rageval.records.gold.labels_hash`: canonical JSON of each record's gold
sections, sorted by id), of the corpus file, the
ontology's order-independent content hash, the policy (the configuration as canonical JSON)
and the paraphrase generator (prompt, model, seed — from the build; else the generators, models,
prompt hashes and seed ranges the records name). ``hash`` is sha256 over the canonical JSON
of everything else, so an audit that cites it (``testset_manifest`` in the audit config) pins
the exact test set.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.base.hashing import bytes_hash, canonical_json, document_hash
from kg_rageval.records.gold import GOLD_SECTIONS, gold_view, labels_hash  # noqa: F401 (re-exported)
from kg_rageval.testset.config import CheckConfig
from kg_rageval.testset.split import record_session, record_sources

MANIFEST_VERSION = 1
BIG_BUCKET = 300
"""An LSH bucket with more members contributes a star and a chain of pairs, not all pairs."""
_NONWORD = re.compile(r"[\W_]+", re.UNICODE)


def normalise(text: str) -> str:
    """The form queries are compared in (module docstring)."""
    return _NONWORD.sub(" ", unicodedata.normalize("NFKC", text).lower()).strip()


def shingles(text: str, k: int) -> set[bytes]:
    t = normalise(text)
    if len(t) <= k:
        return {t.encode()}
    return {t[i : i + k].encode() for i in range(len(t) - k + 1)}


def _datasketch():
    try:
        import datasketch  # type: ignore[import-untyped]
    except ImportError:
        raise InputError(
            "near-duplicate detection needs datasketch: pip install 'kg-rageval[testset]' "
            "(or pip install datasketch)"
        ) from None
    return datasketch


def _all_pairs(ms: list[int], pairs: set[tuple[int, int]]) -> None:
    if len(ms) > BIG_BUCKET:  # bounded cost: a star and a chain instead of all pairs
        pairs.update((ms[0], m) for m in ms[1:])
        pairs.update(zip(ms[1:-1], ms[2:]))
        return
    for a in range(len(ms)):
        for b in range(a + 1, len(ms)):
            pairs.add((ms[a], ms[b]))


def _bucket_pairs(
    ms: list[int], templates: Sequence[tuple[str, str] | None], pairs: set[tuple[int, int]]
) -> None:
    """Candidate pairs of a large bucket without its template siblings: members of one template
    pair only when they name the same concepts; other members pair with everyone."""
    by_t: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    free: list[int] = []
    for m in ms:
        t = templates[m]
        if t is None:
            free.append(m)
        else:
            by_t[t[0]][t[1]].append(m)
    _all_pairs(free, pairs)
    templated = [m for m in ms if templates[m] is not None]
    for f in free:
        pairs.update((min(f, m), max(f, m)) for m in templated)
    groups = list(by_t.values())
    for g in groups:
        for same in g.values():
            _all_pairs(same, pairs)
    flat = [[m for same in g.values() for m in same] for g in groups]
    for x in range(len(flat)):
        for y in range(x + 1, len(flat)):
            pairs.update((min(a, b), max(a, b)) for a in flat[x] for b in flat[y])


def _template_key(rec: Mapping[str, Any]) -> tuple[str, str] | None:
    ts = rec.get("testset")
    if not isinstance(ts, Mapping) or not ts.get("template"):
        return None
    return str(ts["template"]), json.dumps(ts.get("concepts"), sort_keys=True)


def near_duplicates(
    texts: Sequence[str],
    set_of: np.ndarray,
    cfg: CheckConfig,
    *,
    templates: Sequence[tuple[str, str] | None] | None = None,
) -> dict[str, Any]:
    """Cross-set and within-set near-duplicate pairs (module docstring); ``templates``: the
    ``(template, concepts)`` key of each built case (``None`` for others)."""
    ds = _datasketch()
    sigs = ds.MinHash.bulk([shingles(t, cfg.shingle) for t in texts], num_perm=cfg.num_perm, seed=1)
    hv = np.vstack([m.hashvalues for m in sigs]) if sigs else np.zeros((0, cfg.num_perm), dtype=np.uint64)
    lsh = ds.MinHashLSH(threshold=cfg.threshold, num_perm=cfg.num_perm)
    with lsh.insertion_session(buffer_size=50_000) as session:
        for i, m in enumerate(sigs):
            session.insert(i, m, check_duplication=False)
    pairs: set[tuple[int, int]] = set()
    for table in lsh.hashtables:
        for key in table.keys():
            members = table.get(key)
            if len(members) < 2:
                continue
            ms = sorted(int(x) for x in members)
            if len(ms) <= BIG_BUCKET or templates is None:
                _all_pairs(ms, pairs)
            else:
                _bucket_pairs(ms, templates, pairs)
    cross: list[tuple[float, int, int]] = []
    within = 0
    if pairs:
        arr = np.asarray(sorted(pairs), dtype=np.int64)
        sim = (hv[arr[:, 0]] == hv[arr[:, 1]]).mean(axis=1)
        keep = sim >= cfg.threshold
        arr, sim = arr[keep], sim[keep]
        is_cross = set_of[arr[:, 0]] != set_of[arr[:, 1]]
        within = int((~is_cross).sum())
        cross = [
            (float(s), int(a), int(b)) for (a, b), s in zip(arr[is_cross].tolist(), sim[is_cross].tolist())
        ]
    return {"cross": cross, "n_within": within}


def template_siblings(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two built cases from one template about different concepts: similar text, different
    questions (not a near-duplicate)."""
    ta, tb = a.get("testset"), b.get("testset")
    if not isinstance(ta, Mapping) or not isinstance(tb, Mapping) or not ta.get("template"):
        return False
    return ta.get("template") == tb.get("template") and ta.get("concepts") != tb.get("concepts")


def check_leakage(
    sets: Mapping[str, Sequence[Mapping[str, Any]]],
    cfg: CheckConfig | None = None,
    *,
    source_of: Mapping[str, str] | None = None,
    near: bool = True,
) -> dict[str, Any]:
    """Leakage report over named sets (module docstring); ``leaks`` is the total count."""
    cfg = cfg or CheckConfig()
    names = list(sets)
    recs: list[Mapping[str, Any]] = []
    set_of_l: list[int] = []
    for k, name in enumerate(names):
        recs.extend(sets[name])
        set_of_l.extend([k] * len(sets[name]))
    set_of = np.asarray(set_of_l, dtype=np.int64)
    # shared sources and sessions
    owner: dict[str, set[int]] = defaultdict(set)
    for r, rec in enumerate(recs):
        for s in record_sources(rec, source_of):
            owner["source:" + s].add(int(set_of[r]))
        ses = record_session(rec)
        if ses is not None:
            owner["session:" + ses].add(int(set_of[r]))
    shared = sorted(k for k, v in owner.items() if len(v) > 1)
    # exact duplicates
    texts = [str(rec.get("query") or rec.get("text") or "") for rec in recs]
    norm: dict[str, list[int]] = defaultdict(list)
    for r, t in enumerate(texts):
        if t:
            norm[normalise(t)].append(r)
    exact: list[dict[str, Any]] = []
    for _key, rows in norm.items():
        in_sets = {int(set_of[r]) for r in rows}
        if len(in_sets) > 1:
            exact.append(
                {"query": texts[rows[0]], "records": [[names[set_of[r]], str(recs[r]["id"])] for r in rows]}
            )
    exact.sort(key=lambda e: e["query"])
    report: dict[str, Any] = {
        "sets": {n: len(sets[n]) for n in names},
        "shared_sources": {
            "count": len(shared),
            "examples": [{"key": k, "sets": sorted(names[i] for i in owner[k])} for k in shared[:50]],
        },
        "exact_duplicates": {"count": len(exact), "examples": exact[:50]},
    }
    leaks = len(shared) + len(exact)
    if near:
        nd = near_duplicates(texts, set_of, cfg, templates=[_template_key(r) for r in recs])
        cross, siblings = [], 0
        for c in nd["cross"]:
            if normalise(texts[c[1]]) == normalise(texts[c[2]]):
                continue  # counted as an exact duplicate
            if template_siblings(recs[c[1]], recs[c[2]]):
                siblings += 1
                continue
            cross.append(c)
        cross.sort(key=lambda c: (-c[0], c[1], c[2]))
        report["near_duplicates"] = {
            "count": len(cross),
            "threshold": cfg.threshold,
            "num_perm": cfg.num_perm,
            "shingle": cfg.shingle,
            "within_set_pairs": nd["n_within"],
            "template_siblings": siblings,
            "examples": [
                {
                    "similarity": round(s, 4),
                    "a": [names[set_of[a]], str(recs[a]["id"]), texts[a]],
                    "b": [names[set_of[b]], str(recs[b]["id"]), texts[b]],
                }
                for s, a, b in cross[: cfg.max_pairs]
            ],
        }
        leaks += len(cross)
    report["leaks"] = leaks
    return report


# ------------------------------------------------------------------ manifest
def file_sha256(path: str | Path) -> str:
    """``sha256:<hex>`` of a file (the one file hash the audit and run manifests use)."""
    from kg_rageval.base.hashing import file_hash

    return file_hash(path)


def paraphrase_of(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """The paraphrase generators the records name (``testset.paraphrase``): generator, model,
    prompt sha256, how many records and their seed range; ``None`` when no record was rewritten."""
    found: dict[tuple[Any, Any, Any], list[int]] = {}
    for r in records:
        ts = r.get("testset")
        para = ts.get("paraphrase") if isinstance(ts, Mapping) else None
        if isinstance(para, Mapping):
            key = (para.get("generator"), para.get("model"), para.get("prompt_sha256"))
            found.setdefault(key, []).append(int(para.get("seed") or 0))
    if not found:
        return None
    return [
        {"generator": g, "model": m, "prompt_sha256": h, "records": len(s), "seeds": [min(s), max(s)]}
        for (g, m, h), s in sorted(found.items(), key=lambda kv: str(kv[0]))
    ]


def testset_manifest(
    sets: Mapping[str, tuple[str | Path, Sequence[Mapping[str, Any]]]],
    *,
    ontology: Any = None,
    corpus: str | Path | None = None,
    n_documents: int | None = None,
    policy: Mapping[str, Any] | None = None,
    paraphrase: Mapping[str, Any] | None = None,
    heldout: Mapping[str, Any] | None = None,
    leakage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest (module docstring); ``sets`` maps a set name to ``(file, records)``."""
    from kg_rageval import __version__

    all_recs = [r for _, recs in sets.values() for r in recs]
    body: dict[str, Any] = {
        "manifest_version": MANIFEST_VERSION,
        "tool": {"name": "kg-rageval", "version": __version__},
        "ontology": (
            {
                "source": Path(str(ontology.source)).name,
                "content_hash": ontology.content_hash,
                "nodes": len(ontology),
            }
            if ontology is not None
            else None
        ),
        "heldout_ontology": dict(heldout) if heldout else None,
        "corpus": (
            {"file": Path(corpus).name, "sha256": file_sha256(corpus), "documents": n_documents}
            if corpus is not None
            else None
        ),
        "sets": {
            name: {
                "file": Path(path).name,
                "sha256": file_sha256(path),
                "records": len(recs),
                "labels_sha256": labels_hash(recs),
            }
            for name, (path, recs) in sets.items()
        },
        "labels_sha256": labels_hash(all_recs),
        "policy": (
            {"sha256": bytes_hash(canonical_json(policy)), "config": dict(policy)}
            if policy is not None
            else None
        ),
        "paraphrase": dict(paraphrase) if paraphrase else paraphrase_of(all_recs),
        "leakage": (
            {
                "leaks": leakage["leaks"],
                "shared_sources": leakage["shared_sources"]["count"],
                "exact_duplicates": leakage["exact_duplicates"]["count"],
                "near_duplicates": (leakage.get("near_duplicates") or {}).get("count"),
            }
            if leakage is not None
            else None
        ),
    }
    body["hash"] = document_hash(body)
    return body


def verify_manifest_hash(manifest: Mapping[str, Any]) -> bool:
    """True when the manifest's ``hash`` matches its content
    (:func:`~kg_rageval.base.hashing.document_hash`, the hash an audit citing it recomputes)."""
    try:
        return manifest.get("hash") == document_hash(manifest)
    except (TypeError, ValueError):  # a value JSON cannot hold: not the manifest that was hashed
        return False
