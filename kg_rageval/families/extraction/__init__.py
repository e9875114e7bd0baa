"""Extraction evaluation (issue #30, *Metadata and KG construction*): entities from BIO / IOB2 /
IOBES tags exactly as seqeval finds them (:mod:`.tags`). The scored family (NER and relation
P/R/F1 per type, hierarchy credit, domain/range) is not built yet."""

from kg_rageval.families.extraction.tags import MODES, SCHEMES, entities, entities_default, entities_strict

__all__ = ["MODES", "SCHEMES", "entities", "entities_default", "entities_strict"]
