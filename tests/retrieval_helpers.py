"""Helpers shared by tests (moved out of ``test_retrieval_filters.py`` so that tests in other folders can import them;
``tests/`` is on ``sys.path``)."""

from __future__ import annotations

PER_QUERY = [
    # linked T1003: a1, a2 pass; hard top-1 a1 (hit), soft top-1 b1 (1.0 > 0.667 + 0.1)
    {"id": "q1", "labels": {"pred": ["T1003"]}, "retrieval": {"gold": ["a1"], "run": ["b1", "a1", "a2"]}},
    # wrongly linked T1003: gold b2 fails it; hard top-1 a1 (miss), soft b2 (1.0 > 0.5 + 0.1)
    {"id": "q2", "labels": {"pred": ["T1003"]}, "retrieval": {"gold": ["b2"], "run": ["b2", "a1"]}},
    # nothing linked: no preference for this query (counted, not compared)
    {"id": "q3", "retrieval": {"gold": ["a2"], "run": ["a2"]}},
    # linked to an id the ontology lacks: a filter that passes nothing (counted)
    {"id": "q4", "labels": {"pred": ["T9999"]}, "retrieval": {"gold": ["a1"], "run": ["a1", "b1"]}},
]
