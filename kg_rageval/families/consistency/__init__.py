"""The consistency family: agreement of n sampled answers (``docs/consistency.md``)."""

from kg_rageval.families.consistency.score import ConsistencyFamily, score_consistency

__all__ = ["ConsistencyFamily", "score_consistency"]
