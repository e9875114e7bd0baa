"""Parsing and OCR evaluation (seed Part 3, *Ingestion-evaluatie*; ``docs/ingestion.md``):
CER and WER from alignment counts (:mod:`.align`), extraction-length ratio, TEDS / TEDS-S of
HTML tables (:mod:`.teds`), per document class (slice) and ontology node."""

from kg_rageval.families.parsing.align import Counts, char_counts, edit_counts, word_counts
from kg_rageval.families.parsing.score import ParsingFamily, score_parsing

__all__ = ["Counts", "ParsingFamily", "char_counts", "edit_counts", "score_parsing", "word_counts"]
