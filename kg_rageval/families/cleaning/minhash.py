"""The reference near-duplicate detector: MinHash signatures and LSH banding with
``datasketch`` (the ``testset`` extra), run on the documents' cleaned ``text`` when the user
has no detector output of their own (``minhash_threshold``, ``--minhash-threshold``).

Shingles: the word 3-grams of the lower-cased text (words: ``re`` ``\\w+`` runs, joined by one
space; a text of fewer than three words is one shingle, an empty one none — it pairs with no
document). ``MinHash(num_perm=128, seed=1)`` over the UTF-8 shingles; ``MinHashLSH(threshold,
num_perm=128)``; a pair is flagged when LSH returns one document for the other (LSH's
candidates, not a re-check of the estimated Jaccard: what the seed's detector flags)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from kg_rageval.base.errors import ConfigError

NUM_PERM = 128
SEED = 1
SHINGLE = 3
_WORD = re.compile(r"\w+")


def shingles(text: str, k: int = SHINGLE) -> set[str]:
    words = _WORD.findall(text.lower())
    if not words:
        return set()
    if len(words) < k:
        return {" ".join(words)}
    return {" ".join(words[i : i + k]) for i in range(len(words) - k + 1)}


def minhash_pairs(texts: Mapping[str, str], threshold: float) -> set[tuple[str, str]]:
    """Unordered pairs ``(a, b)`` with ``a < b`` of the document ids LSH flags (module
    docstring). Needs ``datasketch``."""
    try:
        from datasketch import MinHash, MinHashLSH
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError(
            "minhash_threshold needs datasketch, not installed here: pip install 'kg-rageval[testset]'"
        ) from exc
    if not 0.0 < threshold < 1.0:
        raise ConfigError(f"minhash_threshold must be strictly between 0 and 1, got {threshold!r}")
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    sigs = {}
    for doc, text in texts.items():
        sh = shingles(text)
        if not sh:
            continue
        m = MinHash(num_perm=NUM_PERM, seed=SEED)
        for s in sorted(sh):
            m.update(s.encode("utf-8"))
        sigs[doc] = m
        lsh.insert(doc, m)
    pairs: set[tuple[str, str]] = set()
    for doc, m in sigs.items():
        for other in lsh.query(m):
            if other != doc:
                pairs.add((doc, other) if doc < other else (other, doc))
    return pairs


__all__ = ["NUM_PERM", "SEED", "SHINGLE", "minhash_pairs", "shingles"]
