"""Ontology-driven test-set construction (``kg-rageval testset build|plan|split|check``).

* :func:`build_testset` — labelled cases of every kind in :mod:`.kinds` from an ontology and a
  corpus (:func:`read_testset_corpus`), deterministic for a seed, with an optional paraphraser;
* :func:`plan_testset` — coverage matrix and sample sizes (:mod:`.plan`);
* :func:`split_testset` — four sets grouped by source document and session (:mod:`.split`);
* :func:`check_leakage`, :func:`testset_manifest` — leakage between sets and the hashed
  manifest audits cite (:mod:`.check`).

See ``docs/testset.md``.
"""

from kg_rageval.testset.build import BuildResult, build_testset
from kg_rageval.testset.config import SETS, TestsetConfig, load_testset_config
from kg_rageval.testset.corpus import TestsetCorpus, read_testset_corpus
from kg_rageval.testset.holdout import nearest_kept, without_leaves
from kg_rageval.testset.kinds import DEFAULT_INTENTS, KINDS, TEMPLATES

__all__ = [
    "BuildResult",
    "DEFAULT_INTENTS",
    "KINDS",
    "SETS",
    "TEMPLATES",
    "TestsetConfig",
    "TestsetCorpus",
    "build_testset",
    "load_testset_config",
    "nearest_kept",
    "read_testset_corpus",
    "without_leaves",
]
