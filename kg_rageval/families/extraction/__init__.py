"""Extraction evaluation (issue #30, *Metadata and KG construction*): entities from BIO / IOB2 /
IOBES tags exactly as seqeval finds them (:mod:`.tags`); the scored family (:mod:`.score`): NER
and relation P/R/F1 per type (seqeval / TACRED conventions), hierarchy-aware type credit through
the ontology, domain/range violations of predicted relations."""

from kg_rageval.families.extraction.score import NEGATIVE_LABELS, ExtractionFamily, score_extraction
from kg_rageval.families.extraction.tags import MODES, SCHEMES, entities, entities_default, entities_strict

__all__ = [
    "MODES",
    "NEGATIVE_LABELS",
    "SCHEMES",
    "ExtractionFamily",
    "entities",
    "entities_default",
    "entities_strict",
    "score_extraction",
]
