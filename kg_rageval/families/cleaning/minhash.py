"""The reference near-duplicate detector: MinHash signatures and LSH banding, in numpy, run on
the documents' cleaned ``text`` when the user has no detector output of their own (the family
option ``minhash_threshold``, ``--minhash-threshold``). It reproduces ``datasketch``'s
``MinHash(num_perm=128, seed=1, scheme="legacy")`` and ``MinHashLSH(threshold, num_perm=128)``
bit for bit (tests/families/cleaning/test_cleaning.py compares the candidate pairs), without
needing datasketch.

* **Shingles**: the word 3-grams of the lower-cased text (words: ``re`` ``\\w+`` runs, joined
  by one space); a text of fewer than three words is one shingle, an empty one none (it pairs
  with no document).
* **Signature**: ``h = sha1(shingle as UTF-8)[:4]`` read little-endian (datasketch's
  ``sha1_hash32``); for permutation ``i``: ``((a_i * h + b_i) mod 2^64) mod (2^61 - 1)``
  masked to 32 bits (uint64 arithmetic, as datasketch computes it), minimum over shingles;
  ``(a_i, b_i)`` drawn from ``numpy.random.RandomState(seed)`` as datasketch does
  (``randint(1, p)``, ``randint(0, p)`` per permutation).
* **Bands**: ``(b, r)`` minimises ``FP(b, r) + FN(b, r)`` with ``FP = ∫_0^t 1-(1-s^r)^b ds``,
  ``FN = ∫_t^1 (1-s^r)^b ds`` over ``b·r <= num_perm`` (datasketch's ``_optimal_param``, weights
  0.5 / 0.5); the integrals are exact here (Gauss–Legendre with 80 nodes on a polynomial of
  degree <= 128). Band ``j`` is the slice ``[j·r, (j+1)·r)`` of the signature.
* **Pairs**: two documents are a candidate pair when some band of their signatures is equal
  (LSH's candidates, not a re-check of the estimated Jaccard: what datasketch's ``query``
  returns).
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections import defaultdict
from collections.abc import Mapping
from functools import lru_cache

import numpy as np

from kg_rageval.base.errors import ConfigError

NUM_PERM = 128
SEED = 1
SHINGLE = 3
_WORD = re.compile(r"\w+")
_MERSENNE = np.uint64((1 << 61) - 1)
_MAX_HASH = np.uint64((1 << 32) - 1)


def shingles(text: str, k: int = SHINGLE) -> set[str]:
    words = _WORD.findall(text.lower())
    if not words:
        return set()
    if len(words) < k:
        return {" ".join(words)}
    return {" ".join(words[i : i + k]) for i in range(len(words) - k + 1)}


@lru_cache(maxsize=8)
def permutations(num_perm: int = NUM_PERM, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)``: datasketch's legacy permutation parameters for ``seed``."""
    gen = np.random.RandomState(seed)
    ab = np.array(
        [
            (gen.randint(1, _MERSENNE, dtype=np.uint64), gen.randint(0, _MERSENNE, dtype=np.uint64))
            for _ in range(num_perm)
        ],
        dtype=np.uint64,
    ).T
    return ab[0], ab[1]


def signature(sh: set[str], num_perm: int = NUM_PERM, seed: int = SEED) -> np.ndarray:
    """The MinHash signature (uint64, ``num_perm`` values) of a non-empty shingle set."""
    a, b = permutations(num_perm, seed)
    hv = np.array(
        [struct.unpack("<I", hashlib.sha1(s.encode("utf-8")).digest()[:4])[0] for s in sorted(sh)],
        dtype=np.uint64,
    )
    with np.errstate(over="ignore"):
        phv = np.bitwise_and((hv[:, None] * a[None, :] + b[None, :]) % _MERSENNE, _MAX_HASH)
    return phv.min(axis=0)


_GL_X, _GL_W = np.polynomial.legendre.leggauss(80)


def _integral(f, lo: float, hi: float) -> float:
    x = 0.5 * (hi - lo) * _GL_X + 0.5 * (hi + lo)
    return float(0.5 * (hi - lo) * np.dot(_GL_W, f(x)))


@lru_cache(maxsize=64)
def lsh_params(threshold: float, num_perm: int = NUM_PERM) -> tuple[int, int]:
    """``(bands, rows)`` of the module docstring."""
    best, opt = float("inf"), (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = _integral(lambda s, b=b, r=r: 1 - (1 - s**r) ** b, 0.0, threshold)
            fn = _integral(lambda s, b=b, r=r: (1 - s**r) ** b, threshold, 1.0)
            err = 0.5 * fp + 0.5 * fn
            if err < best:
                best, opt = err, (b, r)
    return opt


def minhash_pairs(texts: Mapping[str, str], threshold: float) -> set[tuple[str, str]]:
    """Unordered pairs ``(a, b)`` with ``a < b`` of the document ids LSH flags (module
    docstring)."""
    if not 0.0 < threshold < 1.0:
        raise ConfigError(f"minhash_threshold must be strictly between 0 and 1, got {threshold!r}")
    bands, rows = lsh_params(threshold)
    tables: list[dict[bytes, list[str]]] = [defaultdict(list) for _ in range(bands)]
    for doc in sorted(texts):
        sh = shingles(texts[doc])
        if not sh:
            continue
        sig = signature(sh)
        for j in range(bands):
            tables[j][sig[j * rows : (j + 1) * rows].tobytes()].append(doc)
    pairs: set[tuple[str, str]] = set()
    for table in tables:
        for docs in table.values():
            for i, x in enumerate(docs):
                for y in docs[i + 1 :]:
                    if x != y:
                        pairs.add((x, y) if x < y else (y, x))
    return pairs


__all__ = [
    "NUM_PERM",
    "SEED",
    "SHINGLE",
    "lsh_params",
    "minhash_pairs",
    "permutations",
    "shingles",
    "signature",
]
