"""Cleaning evaluation (issue #30, *Cleaning*; ``docs/cleaning.md``): boilerplate removal,
Unicode health, language ID, near duplicates (with a MinHash/LSH reference detector) and PII
scrubbing, from the ``cleaning`` section of records (:mod:`.score`)."""

from kg_rageval.families.cleaning.minhash import lsh_params, minhash_pairs, shingles, signature
from kg_rageval.families.cleaning.score import METRICS, CleaningFamily, score_cleaning
from kg_rageval.families.cleaning.unicode import unicode_health

__all__ = [
    "METRICS",
    "CleaningFamily",
    "lsh_params",
    "minhash_pairs",
    "score_cleaning",
    "shingles",
    "signature",
    "unicode_health",
]
