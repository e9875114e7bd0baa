"""Chunking evaluation (issue #30, *Chunking*; ``docs/ingestion.md``): traceability, metadata
preservation (parent section, parent document, ontology ancestry), structure cut rate, the
optional chunk coherence (:mod:`.score`, :mod:`.coherence`) and the chunk-size / overlap
Recall@k sweep (:mod:`.sweep`), per document class (slice) and ontology branch."""

from kg_rageval.families.chunking.score import ChunkingFamily, is_cut, score_chunking, traceable

__all__ = ["ChunkingFamily", "is_cut", "score_chunking", "traceable"]
