"""Levenshtein alignment counts for CER and WER (standard library only).

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


def edit_counts(ref: Sequence[str], hyp: Sequence[str]) -> Counts:
    """Hits, substitutions, deletions and insertions of a minimal alignment of ``hyp`` to ``ref``
    (token sequences). The common prefix and suffix are hits (as rapidfuzz strips them); the
    rest is Hyyrö's bit-parallel Levenshtein (2003; Myers 1999), one column a hypothesis token:
    the bits of a column are the reference positions whose vertical difference
    ``D[i][j] − D[i−1][j]`` is +1 (``VP``) or −1 (``VN``). The columns are kept and the
    alignment is read back from the end through them, with rapidfuzz's tie rule (see
    :func:`_backtrack`). Python integers are the bit vectors, so a column costs a dozen integer
    operations on ``len(ref) / 30`` digits instead of ``len(ref)`` cell updates."""
    n, m = len(ref), len(hyp)
    lo = 0
    while lo < n and lo < m and ref[lo] == hyp[lo]:
        lo += 1
    hi = 0
    while hi < n - lo and hi < m - lo and ref[n - 1 - hi] == hyp[m - 1 - hi]:
        hi += 1
    common = lo + hi
    r, h = ref[lo : n - hi], hyp[lo : m - hi]
    a, b = len(r), len(h)
    if a == 0 or b == 0:
        return Counts(common, 0, a, b)
    peq: dict[str, int] = {}
    for i, t in enumerate(r):
        peq[t] = peq.get(t, 0) | (1 << i)
    mask = (1 << a) - 1
    vp, vn = mask, 0
    vps, vns = [vp], [vn]  # column 0: D[i][0] = i, every vertical difference +1
    get, add_vp, add_vn = peq.get, vps.append, vns.append
    for t in h:
        x = get(t, 0) | vn
        d0 = (((x & vp) + vp) ^ vp) | x
        hp = vn | (mask & ~(d0 | vp))
        # row 0: D[0][j] = j, the horizontal difference +1 shifted in
        hp = ((hp << 1) | 1) & mask
        vp = (((vp & d0) << 1) & mask) | (mask & ~(d0 | hp))
        vn = hp & d0
        add_vp(vp)
        add_vn(vn)
    return _backtrack(vps, vns, r, h, common)


def _backtrack(vps: list[int], vns: list[int], r: Sequence[str], h: Sequence[str], hits: int) -> Counts:
    i, j = len(r), len(h)
    s = dl = ins = 0
    # rapidfuzz's recover_alignment (Hyyroe 2004): a deletion when the cell above is one less
    # (VP bit of column j); else step left, and an insertion when that cell is one more than
    # the one above it (VN bit of column j - 1); else the diagonal (a hit or a substitution).
    while i and j:
        bit = 1 << (i - 1)
        if vps[j] & bit:
            dl += 1
            i -= 1
            continue
        j -= 1
        if j and vns[j] & bit:
            ins += 1
            continue
        i -= 1
        if r[i] == h[j]:
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
