"""Levenshtein alignment counts for CER and WER (standard library and numpy only).

The text normalisation is jiwer 4's default and nothing more:

* **characters** (``jiwer.cer`` / ``process_characters``, ``cer_default``): the text with its
  leading and trailing whitespace removed (``str.strip()``); every other character, spaces
  and case included, is a token;
* **words** (``jiwer.wer`` / ``process_words``, ``wer_default``): every run of two or more
  whitespace characters becomes one space (``re.sub(r"\\s\\s+", " ", s)``), the text is
  stripped and split on ``" "`` (empty pieces dropped). A single tab or newline between two
  words is *not* a separator, as in jiwer.

No case folding, no punctuation removal, no Unicode normalisation.

:func:`edit_counts` returns ``(hits, substitutions, deletions, insertions)`` of one minimal
alignment; among minimal alignments it picks the one jiwer (through rapidfuzz's ``editops``)
reports, so the counts, not only the distance, equal jiwer's (``tests/families/parsing``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

_MULTI_SPACE = re.compile(r"\s\s+")


class Counts(NamedTuple):
    """Alignment counts of one pair: ``hits + substitutions + deletions`` = reference tokens,
    ``hits + substitutions + insertions`` = hypothesis tokens."""

    hits: int
    substitutions: int
    deletions: int
    insertions: int

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def reference_length(self) -> int:
        return self.hits + self.substitutions + self.deletions


def char_tokens(text: str) -> list[str]:
    """jiwer 4 ``cer_default``: the stripped text's characters."""
    return list(text.strip())


def word_tokens(text: str) -> list[str]:
    """jiwer 4 ``wer_default``: runs of 2+ whitespace to one space, strip, split on ``" "``."""
    return [w for w in _MULTI_SPACE.sub(" ", text).strip().split(" ") if w]


def _codes(ref: Sequence[str], hyp: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    vocab: dict[str, int] = {}
    r = np.fromiter((vocab.setdefault(t, len(vocab)) for t in ref), dtype=np.int64, count=len(ref))
    h = np.fromiter((vocab.setdefault(t, len(vocab)) for t in hyp), dtype=np.int64, count=len(hyp))
    return r, h


def edit_counts(ref: Sequence[str], hyp: Sequence[str]) -> Counts:
    """Hits, substitutions, deletions and insertions of a minimal alignment of ``hyp`` to ``ref``
    (token sequences). The common prefix and suffix are hits (as rapidfuzz strips them); the
    rest is a full Levenshtein matrix, filled a row at a time in numpy, and backtracked from
    the end."""
    n, m = len(ref), len(hyp)
    lo = 0
    while lo < n and lo < m and ref[lo] == hyp[lo]:
        lo += 1
    hi = 0
    while hi < n - lo and hi < m - lo and ref[n - 1 - hi] == hyp[m - 1 - hi]:
        hi += 1
    common = lo + hi
    r, h = _codes(ref[lo : n - hi], hyp[lo : m - hi])
    a, b = len(r), len(h)
    if a == 0 or b == 0:
        return Counts(common, 0, a, b)
    d = np.empty((a + 1, b + 1), dtype=np.int32)
    cols = np.arange(b + 1, dtype=np.int32)
    d[0] = cols
    for i in range(1, a + 1):
        prev = d[i - 1]
        tmp = np.empty(b + 1, dtype=np.int32)
        tmp[0] = i
        # substitution / match from the diagonal, deletion of ref[i-1] from above
        np.minimum(prev[:-1] + (h != r[i - 1]), prev[1:] + 1, out=tmp[1:])
        # insertions along the row: d[i][j] = min_k<=j tmp[k] + (j - k)
        d[i] = np.minimum.accumulate(tmp - cols) + cols
    return _backtrack(d, r, h, common)


def _backtrack(d: np.ndarray, r: np.ndarray, h: np.ndarray, hits: int) -> Counts:
    i, j = len(r), len(h)
    s = dl = ins = 0
    dd = d.tolist()
    rr, hh = r.tolist(), h.tolist()
    # rapidfuzz's recover_alignment (Hyyroe 2004): a deletion when the cell above is one less;
    # else step left, and an insertion when that cell is one less than the one above it;
    # else the diagonal (a hit or a substitution).
    while i and j:
        if dd[i][j] == dd[i - 1][j] + 1:
            dl += 1
            i -= 1
            continue
        j -= 1
        if j and dd[i][j] == dd[i - 1][j] - 1:
            ins += 1
            continue
        i -= 1
        if rr[i] == hh[j]:
            hits += 1
        else:
            s += 1
    return Counts(hits, s, dl + i, ins + j)


def char_counts(reference: str, hypothesis: str) -> Counts:
    """Character-level counts (jiwer 4 ``process_characters`` normalisation)."""
    return edit_counts(char_tokens(reference), char_tokens(hypothesis))


def word_counts(reference: str, hypothesis: str) -> Counts:
    """Word-level counts (jiwer 4 ``process_words`` normalisation)."""
    return edit_counts(word_tokens(reference), word_tokens(hypothesis))


__all__ = ["Counts", "char_counts", "char_tokens", "edit_counts", "word_counts", "word_tokens"]
