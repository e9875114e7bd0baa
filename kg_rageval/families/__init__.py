"""The metric families, one package each: hierarchy, linking, retrieval, conformance,
generation, provenance, judges, system (with context) and relations.

A family computes per-record rows of additive statistics (:mod:`kg_rageval.results`) from the
records (:mod:`kg_rageval.records`) and the compiled ontology (:mod:`kg_rageval.ontology`);
the readers of its extra inputs live in its own ``inputs.py``. Families are declared and called
one floor up, in :mod:`kg_rageval.scoring`. One family may use another's kernels (generation
uses hierarchy's), never in a circle (``tests/test_layers.py``).
"""
