"""The rewrite family: query expansion, HyDE and multi-query gains over the raw query
(:mod:`.score`, ``docs/rewrite.md``)."""

from kg_rageval.families.rewrite.score import VARIANTS, RewriteFamily, frontier, score_rewrite

__all__ = ["VARIANTS", "RewriteFamily", "frontier", "score_rewrite"]
