"""Okapi BM25 in numpy/scipy, with document masks for filters and entitlements.

score(q, d) = Σ_{t ∈ q} idf(t) · tf(t,d)·(k1+1) / (tf(t,d) + k1·(1 − b + b·|d|/avgdl)),
idf(t) = ln(1 + (N − df(t) + 0.5)/(df(t) + 0.5))  (the Lucene variant: always positive).

A query term repeated in the query counts once per occurrence. Ties in the ranking break by
document order (a stable sort), so runs are deterministic. Documents outside the mask are
never returned (the filter is applied *before* ranking, as in a vector store's pre-filter).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from scipy import sparse

from kg_rageval.base.errors import ConfigError

_TOKEN = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were "
    "which with what who how does do is are between distinguishes from kind type".split()
)


def tokenize(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


class BM25:
    """BM25 index over ``texts`` (``k1=1.2``, ``b=0.75`` by default)."""

    def __init__(self, texts: Sequence[str], *, k1: float = 1.2, b: float = 0.75):
        if k1 < 0 or not 0 <= b <= 1:
            raise ConfigError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.vocab: dict[str, int] = {}
        rows, cols, vals = [], [], []
        lengths = np.zeros(len(texts))
        for d, text in enumerate(texts):
            toks = tokenize(text)
            lengths[d] = len(toks)
            counts: dict[int, int] = {}
            for t in toks:
                j = self.vocab.setdefault(t, len(self.vocab))
                counts[j] = counts.get(j, 0) + 1
            for j, c in counts.items():
                rows.append(d)
                cols.append(j)
                vals.append(c)
        n, v = len(texts), len(self.vocab)
        tf = sparse.csr_matrix((np.asarray(vals, float), (rows, cols)), shape=(n, v))
        df = np.bincount(np.asarray(cols, dtype=np.int64), minlength=v).astype(float)
        self.idf = np.log1p((n - df + 0.5) / (df + 0.5))
        avgdl = float(lengths.mean()) if n else 0.0
        norm = k1 * (1 - b + b * (lengths / avgdl if avgdl else np.zeros_like(lengths)))
        tf = tf.tocoo()
        w = tf.data * (k1 + 1) / (tf.data + norm[tf.row]) * self.idf[tf.col]
        self.weights = sparse.csc_matrix((w, (tf.row, tf.col)), shape=(n, v))
        self.n_docs = n

    def scores(self, query: str) -> np.ndarray:
        terms = [self.vocab[t] for t in tokenize(query) if t in self.vocab]
        if not terms:
            return np.zeros(self.n_docs)
        q = np.bincount(np.asarray(terms), minlength=len(self.vocab)).astype(float)
        return np.asarray(self.weights @ q).ravel()

    def search(self, query: str, k: int = 10, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Top ``k`` ``(doc index, score)`` with score > 0 among documents where ``mask`` holds."""
        s = self.scores(query)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        order = np.argsort(-s, kind="stable")[:k]
        return [(int(i), float(s[i])) for i in order if np.isfinite(s[i]) and s[i] > 0]
