"""Entity linking: evaluation of mention → ontology node (or NIL) links, importers for
existing gold standards and system outputs, and baseline linkers (dictionary, embedding
re-ranker, ReFinED adapter). See ``docs/linking.md``.

Heavy optional libraries (spaCy, sentence-transformers) are imported only by the modules that
need them (``dictionary.SpacyDictionaryLinker``, ``embedding``).
"""

from kg_rageval.families.linking.dictionary import DictionaryLinker, Link
from kg_rageval.families.linking.evaluate import LinkingFamily, confidence_sweep, score_linking
from kg_rageval.families.linking.refined import RefinedAdapter
from kg_rageval.families.linking.testset import build_linking_set, run_linker

__all__ = [
    "DictionaryLinker",
    "Link",
    "LinkingFamily",
    "RefinedAdapter",
    "build_linking_set",
    "confidence_sweep",
    "run_linker",
    "score_linking",
]
