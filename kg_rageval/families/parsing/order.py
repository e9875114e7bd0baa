"""Reading-order / heading-order agreement and title / heading text matching (numpy and the
standard library; no scipy, no rapidfuzz — both are the tests' references).

**Orders.** A labelled order is a list of block ids (strings); an element may also be a list of
ids, a *group* of blocks whose order among themselves is not labelled (two columns read in
either order, a side note): they share one rank. The extracted order is the list of block ids
in the order the parser emitted them (a block emitted twice keeps its first position for the
rank; an id the labelled order lacks is an extra block).

* :func:`kendall_tau_b` — Kendall's τ-b of the reference ranks against the extracted ranks
  over the blocks in both (the common blocks), ties (groups) corrected::

      τ_b = (C − D) / sqrt(n0 − n1) / sqrt(n0 − n2)

  with ``n0 = n(n−1)/2``, ``n1`` / ``n2`` the pairs tied in the reference / extraction (Σ
  t(t−1)/2 over groups), ``C − D = Σ_{i<j} sign(Δref) · sign(Δext)``. Equal to
  ``scipy.stats.kendalltau(ref_ranks, ext_ranks)`` (its default ``variant="b"``; clipped to
  [−1, 1] as scipy does). Undefined
  (``None``) with fewer than two common blocks or when either side ranks them all equal —
  scipy's NaN; such a document is left out of the mean, never scored 0 or 1.
* :func:`order_edit` — Levenshtein distance (unit costs) of the two block-id sequences and the
  normaliser ``max(len(ref), len(ext))``: missing, extra and moved blocks all cost. A group is
  written out in the order its blocks were extracted (the most favourable order, which is what
  "not labelled" means), blocks of it never extracted last in the order given.
* coverage: labelled blocks found in the extraction.

**Titles and headings.** :func:`normalise_heading`: Unicode NFKC, then ``str.casefold``, then
every run of whitespace to one space and the ends stripped (``" ".join(s.split())``).
Exact match compares the normalised texts; :func:`levenshtein_similarity` is
``1 − d(a, b) / max(len a, len b)`` on the normalised texts (characters; 1.0 when both are
empty), equal to ``rapidfuzz.distance.Levenshtein.normalized_similarity`` on the same strings.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

MAX_BLOCKS = 10_000  # per order: τ is O(n²) pairs, the edit distance O(n·m) cells
_CHUNK = 2_048


class OrderScores(NamedTuple):
    """One document's order agreement: ``tau`` (``None``: undefined), ``edits`` and ``norm``
    (Levenshtein distance and ``max`` length), ``found`` of ``labelled`` blocks."""

    tau: float | None
    edits: int
    norm: int
    found: int
    labelled: int


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's τ-b of two equally long rank lists (``None`` where scipy gives NaN)."""
    n = len(x)
    if len(y) != n:
        raise ValueError("kendall_tau_b: the two rank lists differ in length")
    if n < 2:
        return None
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    s = 0
    for lo in range(0, n - 1, _CHUNK):
        hi = min(n - 1, lo + _CHUNK)
        # rows lo..hi-1 against every later column: the upper triangle, a block of rows at a time
        da = np.sign(a[None, lo:] - a[lo:hi, None])
        db = np.sign(b[None, lo:] - b[lo:hi, None])
        prod = da * db
        s += int(np.triu(prod, k=1).sum())
    tot = n * (n - 1) // 2
    xtie = _tied_pairs(a)
    ytie = _tied_pairs(b)
    if tot == xtie or tot == ytie:
        return None
    # scipy's order of operations (stats._stats_py.kendalltau): con_minus_dis / sqrt / sqrt,
    # then clipped to [-1, 1] (a reversed order is -1, not -1.0000000000000002)
    return min(1.0, max(-1.0, s / math.sqrt(tot - xtie) / math.sqrt(tot - ytie)))


def _tied_pairs(v: np.ndarray) -> int:
    _, counts = np.unique(v, return_counts=True)
    return int((counts * (counts - 1) // 2).sum())


def levenshtein_distance(a: Sequence[object], b: Sequence[object]) -> int:
    """Edit distance of two sequences (unit costs), numpy rows; prefix and suffix stripped."""
    n, m = len(a), len(b)
    lo = 0
    while lo < n and lo < m and a[lo] == b[lo]:
        lo += 1
    while n > lo and m > lo and a[n - 1] == b[m - 1]:
        n -= 1
        m -= 1
    if n == lo or m == lo:
        return (n - lo) + (m - lo)
    vocab: dict[object, int] = {}
    r = np.fromiter((vocab.setdefault(t, len(vocab)) for t in a[lo:n]), dtype=np.int64)
    h = np.fromiter((vocab.setdefault(t, len(vocab)) for t in b[lo:m]), dtype=np.int64)
    if len(h) > len(r):
        r, h = h, r
    cols = np.arange(len(h) + 1, dtype=np.int64)
    prev = cols.copy()
    tmp = np.empty(len(h) + 1, dtype=np.int64)
    for i in range(1, len(r) + 1):
        tmp[0] = i
        np.minimum(prev[:-1] + (h != r[i - 1]), prev[1:] + 1, out=tmp[1:])
        prev = np.minimum.accumulate(tmp - cols) + cols
    return int(prev[-1])


def order_scores(reference: Sequence[str | Sequence[str]], extracted: Sequence[str] | None) -> OrderScores:
    """τ-b, edit distance and coverage of one extracted order against its labelled order (see
    the module docstring). ``extracted`` ``None`` (no order produced) is scored as the empty
    order: every labelled block missing, τ undefined. The reference is assumed checked
    (non-empty, no id twice: :mod:`kg_rageval.records.parsing`)."""
    ext = list(extracted or ())
    first: dict[str, int] = {}
    for pos, bid in enumerate(ext):
        first.setdefault(bid, pos)
    ref_rank: dict[str, int] = {}
    flat: list[str] = []
    for rank, item in enumerate(reference):
        group = [item] if isinstance(item, str) else list(item)
        for bid in group:
            ref_rank[bid] = rank
        # a group's blocks in their extracted order; the ones never extracted last, as given
        found = sorted((b for b in group if b in first), key=first.__getitem__)
        flat.extend(found + [b for b in group if b not in first])
    common = [b for b in flat if b in first]
    tau = kendall_tau_b([ref_rank[b] for b in common], [first[b] for b in common])
    edits = levenshtein_distance(flat, ext)
    return OrderScores(tau, edits, max(len(flat), len(ext)), len(common), len(flat))


def normalise_heading(text: str) -> str:
    """NFKC, casefold, whitespace runs to one space, ends stripped."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def levenshtein_similarity(a: str, b: str) -> float:
    """``1 − d(a, b) / max(len a, len b)`` over characters (1.0 for two empty strings), as
    ``rapidfuzz.distance.Levenshtein.normalized_similarity``."""
    m = max(len(a), len(b))
    if m == 0:
        return 1.0
    return 1.0 - levenshtein_distance(a, b) / m


class HeadingScores(NamedTuple):
    exact: bool
    similarity: float


def heading_scores(reference: str, extracted: str | None) -> HeadingScores:
    """Exact match and Levenshtein similarity of the normalised texts; ``extracted`` ``None``
    (not found): ``(False, 0.0)``."""
    if extracted is None:
        return HeadingScores(False, 0.0)
    a, b = normalise_heading(reference), normalise_heading(extracted)
    return HeadingScores(a == b, levenshtein_similarity(a, b))


__all__ = [
    "MAX_BLOCKS",
    "HeadingScores",
    "OrderScores",
    "heading_scores",
    "kendall_tau_b",
    "levenshtein_distance",
    "levenshtein_similarity",
    "normalise_heading",
    "order_scores",
]
