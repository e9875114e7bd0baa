"""The HTML report's ingestion section: the parsing family's worst documents (highest CER,
lowest TEDS) worst first, with anchors the summary links to; rendered in headless chromium
without console errors. Per-document CER checked against jiwer.cer on each page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.report_ingestion import worst_documents
from kg_rageval.audit.reports import write_reports
from kg_rageval.audit.runner import run_audit

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "fixtures" / "parsing" / "pages.jsonl"
ONTO = ROOT / "ontologies" / "doid-cancer-slim.obo"
REF = "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>"


def _records(tmp_path: Path) -> Path:
    recs = [json.loads(line) for line in PAGES.read_text().splitlines()]
    recs.append(  # two tables: one exact, one with a row lost (TEDS 1 - 3/6): mean 0.75
        {
            "id": "tab-1",
            "slices": {"doc_class": "invoice"},
            "parsing": {
                "tables": [
                    {"reference": REF, "extracted": REF},
                    {"reference": REF, "extracted": "<table><tr><td>a</td><td>b</td></tr></table>"},
                ]
            },
        }
    )
    recs.append(  # an unrecognised table scores 0
        {"id": "tab-2", "parsing": {"tables": [{"reference": REF, "extracted": None}]}}
    )
    p = tmp_path / "pages.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return p


def _audit(tmp_path: Path, limit: int = 10):
    pytest.importorskip("apted", reason="TEDS needs the ingestion extra")
    pytest.importorskip("lxml", reason="TEDS needs the ingestion extra")
    cfg = config_from_mapping(
        {
            "ontology": str(ONTO),
            "records": str(_records(tmp_path)),
            "families": {"parsing": {}},
            "gates": ["parsing.cer <= 0.05", "parsing.teds >= 0.9"],
            "min_rows": 1,
            "report": {"failing_records": limit},
        },
        base_dir=tmp_path,
    )
    return run_audit(cfg, progress=False)


def test_worst_documents_order_and_values(tmp_path):
    jiwer = pytest.importorskip("jiwer", reason="jiwer is the reference for per-page CER")
    res = _audit(tmp_path)
    worst = worst_documents(res, 10)
    recs = {r["id"]: r for r in map(json.loads, PAGES.read_text().splitlines())}
    want = sorted(
        (
            (jiwer.cer(r["parsing"]["reference"], r["parsing"]["extracted"]), rid)
            for rid, r in recs.items()
            if (r["parsing"].get("reference") or "").strip() and r["parsing"].get("extracted") is not None
        ),
        key=lambda t: (-t[0], t[1]),
    )
    assert [d["id"] for d in worst["cer"]] == [rid for _, rid in want]
    for d, (c, _) in zip(worst["cer"], want):
        assert d["cer"] == pytest.approx(c, abs=1e-12)
    assert [(d["id"], d["teds"], d["tables"], d["missing"]) for d in worst["teds"]] == [
        ("tab-2", 0.0, 1, 1),
        ("tab-1", pytest.approx(0.75), 2, 0),
    ]
    assert [d["id"] for d in worst_documents(_audit(tmp_path, limit=2), 2)["cer"]] == [
        rid for _, rid in want[:2]
    ]


def test_section_links_to_the_worst_documents(tmp_path):
    res = _audit(tmp_path)
    html = Path(write_reports(res, tmp_path / "out")["html"]).read_text()
    assert "<h2 id='ingestion'>Ingestion: worst documents</h2>" in html
    worst = worst_documents(res, 10)
    top = worst["cer"][0]["id"]
    m = re.search(r"<a href='#(ingestion-doc-\d+-cer)'><code>([^<]+)</code></a>", html)
    assert m is not None and m.group(2) == top
    assert f"<span id='{m.group(1)}'></span><code>{top}</code>" in html  # the link's target exists
    assert "href='#ingestion-worst-teds'" in html and "id='ingestion-worst-teds'" in html


def test_no_section_without_parsing(tmp_path):
    from kg_rageval.audit.report_html import _f, _table, escape
    from kg_rageval.audit.report_ingestion import ingestion_html

    res = _audit(tmp_path)
    res.families.pop("parsing")
    assert ingestion_html(res, table=_table, fmt=_f, escape=escape) == ""


@pytest.mark.browser
def test_section_renders_in_chromium(tmp_path):
    from test_audit_html import CHROMIUM, _chromium, _console_errors

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    page = Path(write_reports(_audit(tmp_path), tmp_path / "out")["html"])
    dom = _chromium(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0 and not _console_errors(dom.stderr), _console_errors(dom.stderr)
    assert "Ingestion: worst documents" in dom.stdout and "Lowest TEDS" in dom.stdout
