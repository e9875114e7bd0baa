"""The parsing family as a release gate: per document class (slice) and per ontology branch,
missing evidence for a class with no labelled sample, min_rows counting records (not chars).

Figures on fixtures/parsing/pages.jsonl, from jiwer.cer on the same pairs per class:
invoice 1/144, scan 51/84, letter 9/52, all 61/280; branch DOID:0001816 (inv-3, scan-1,
letter-1) 13/131."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.runner import run_audit

ROOT = Path(__file__).resolve().parents[3]
PAGES = ROOT / "fixtures" / "parsing" / "pages.jsonl"
ONTO = ROOT / "ontologies" / "doid-cancer-slim.obo"

GATES = [
    "parsing.cer[slice:doc_class=invoice] <= 0.05",
    "parsing.cer[slice:doc_class=scan] <= 0.05",
    "parsing.wer[slice:doc_class=letter] <= 0.5",
    "parsing.cer <= 0.05",
    "parsing.cer[node:DOID:0001816] <= 0.2",
    "parsing.cer[slice:doc_class=handwriting] <= 0.05",
    "parsing.teds >= 0.9",
]


def _run(tmp_path, **extra):
    cfg = config_from_mapping(
        {
            "ontology": str(ONTO),
            "records": str(PAGES),
            "families": {"parsing": {}},
            "gates": GATES,
            **extra,
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    return res, {str(r.gate): r for r in res.gate_results}


def test_parsing_gates_per_class_and_branch(tmp_path):
    res, by = _run(tmp_path, min_rows=1)  # an 8-record toy file; a real audit keeps 30
    g = by["parsing.cer[slice:doc_class=invoice] <= 0.05"]
    assert (g.status, g.observed) == ("pass", pytest.approx(1 / 144))
    g = by["parsing.cer[slice:doc_class=scan] <= 0.05"]
    assert (g.status, g.observed) == ("fail", pytest.approx(51 / 84))
    g = by["parsing.wer[slice:doc_class=letter] <= 0.5"]
    assert (g.status, g.observed) == ("pass", pytest.approx(4 / 11))
    g = by["parsing.cer <= 0.05"]
    assert (g.status, g.observed) == ("fail", pytest.approx(61 / 280))
    g = by["parsing.cer[node:DOID:0001816] <= 0.2"]
    assert (g.status, g.observed) == ("pass", pytest.approx(13 / 131))
    # no labelled sample of the class, no table: missing evidence, never a pass
    assert by["parsing.cer[slice:doc_class=handwriting] <= 0.05"].status == "missing"
    assert by["parsing.teds >= 0.9"].status == "missing"
    assert res.exit_code == 1


def test_min_rows_counts_records_not_characters(tmp_path):
    """The invoice CER rests on 144 characters but 3 records: under min_rows 30 it is missing
    evidence, not a pass."""
    _, by = _run(tmp_path)
    g = by["parsing.cer[slice:doc_class=invoice] <= 0.05"]
    assert g.status == "missing"
    assert "30" in g.reason
