"""Entity linking: evaluation of mention → ontology node (or NIL) links, importers for
existing gold standards and system outputs, and baseline linkers (dictionary, embedding
re-ranker, ReFinED adapter). See ``docs/linking.md``.

Heavy optional libraries (spaCy, sentence-transformers) are imported only by the modules that
need them (``dictionary.SpacyDictionaryLinker``, ``embedding``).
"""

from .evaluate import LinkingFamily, confidence_sweep, score_linking

__all__ = ["LinkingFamily", "confidence_sweep", "score_linking"]
