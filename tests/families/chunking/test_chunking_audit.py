"""The chunking family as a release gate: per document class (slice) and ontology branch,
missing evidence for a class with no sample and for coherence not computed, and the
missing-run budget (scan-2's chunker produced nothing).

Figures on fixtures/chunking/docs.jsonl (worked by hand in test_chunking.py): traceability
manual 3/5; structure_cut_rate scan 1/1; metadata_preservation 3/5; ancestry_rate under
DOID:162 (man-1, man-2) 4/5."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.runner import run_audit

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "fixtures" / "chunking" / "docs.jsonl"
ONTO = ROOT / "ontologies" / "doid-cancer-slim.obo"

GATES = [
    "chunking.traceability[slice:doc_class=manual] >= 0.5",
    "chunking.structure_cut_rate[slice:doc_class=scan] <= 0.2",
    "chunking.metadata_preservation >= 0.9",
    "chunking.ancestry_rate[node:DOID:162] >= 0.75",
    "chunking.traceability[slice:doc_class=handwriting] >= 0.5",
    "chunking.coherence >= 0.5",
]


def _run(tmp_path, **extra):
    cfg = config_from_mapping(
        {"ontology": str(ONTO), "records": str(DOCS), "families": {"chunking": {}}, "gates": GATES, **extra},
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    return res, {str(r.gate): r for r in res.gate_results}


def test_chunking_gates_per_class_and_branch(tmp_path):
    # a 5-record toy file: min_rows 1; one of the 4 chunked documents has no chunks (a missing run)
    res, by = _run(tmp_path, min_rows=1, missing_runs={"budgets": {"chunking": 0.25}})
    g = by["chunking.traceability[slice:doc_class=manual] >= 0.5"]
    assert (g.status, g.observed) == ("pass", pytest.approx(3 / 5))
    g = by["chunking.structure_cut_rate[slice:doc_class=scan] <= 0.2"]
    assert (g.status, g.observed) == ("fail", pytest.approx(1.0))
    g = by["chunking.metadata_preservation >= 0.9"]
    assert (g.status, g.observed) == ("fail", pytest.approx(3 / 5))
    g = by["chunking.ancestry_rate[node:DOID:162] >= 0.75"]
    assert (g.status, g.observed) == ("pass", pytest.approx(4 / 5))
    assert by["chunking.traceability[slice:doc_class=handwriting] >= 0.5"].status == "missing"
    assert by["chunking.coherence >= 0.5"].status == "missing"
    assert res.exit_code == 1


def test_a_chunker_that_produced_nothing_is_a_missing_run(tmp_path):
    """With the default budget (no missing runs) every chunking gate is missing evidence and
    the family's missing-run budget gate fails: 1 of the 4 chunked documents (25 %)."""
    res, by = _run(tmp_path, min_rows=1)
    budget = by.pop("chunking.missing_run_rate <= 0")
    assert (budget.status, budget.observed) == ("fail", pytest.approx(1 / 4))
    assert {g.status for g in by.values()} == {"missing"}
    assert all("missing runs above budget" in g.reason for g in by.values())
    assert res.exit_code == 1
