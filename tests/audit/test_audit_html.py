"""The HTML audit report in a real headless browser (Debian's chromium): it renders, shows its
plots, logs no console errors, and a screenshot is saved."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kg_rageval.audit.config import load_config
from kg_rageval.audit.families import FamilySpec, register_family, unregister_family
from kg_rageval.audit.reports import write_reports
from kg_rageval.audit.runner import run_audit

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "audit"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)"),
]

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]
_CONSOLE = re.compile(r"CONSOLE|Uncaught|Failed to load resource|net::ERR_")


def _chromium(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    profile = tmp / "profile"
    profile.mkdir(exist_ok=True)
    cmd = [
        CHROMIUM,
        *FLAGS,
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *extra,
        page.resolve().as_uri(),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if _CONSOLE.search(line)]


def test_console_error_detection_works(tmp_path):
    """The check below can fail: a page that logs an error is caught."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><script>console.error('boom')</script></body></html>")
    proc = _chromium(page, tmp_path, "--dump-dom")
    assert _console_errors(proc.stderr), proc.stderr[-2000:]


@pytest.fixture()
def report(tmp_path):
    register_family(FamilySpec("stub", "kg_rageval.audit.stub:score_stub", ("labels",)))
    try:
        res = run_audit(load_config(FIX / "pass.yaml"), progress=False)
    finally:
        unregister_family("stub")
    return Path(write_reports(res, tmp_path / "out")["html"])


@pytest.mark.slow
def test_html_renders_without_console_errors(report, tmp_path):
    dom = _chromium(report, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert not _console_errors(dom.stderr), _console_errors(dom.stderr)
    html = dom.stdout
    assert "Audit: vehicles-pass" in html and "PASSED" in html
    assert html.count("<svg") >= 3  # hierarchy, relations, exclusions (+ branch exclusions)
    assert "stub.stub_accuracy per branch" in html and "Confusion relations" in html
    shot = tmp_path / "audit-report.png"
    proc = _chromium(report, tmp_path, "--window-size=1280,2000", f"--screenshot={shot}")
    assert proc.returncode == 0 and not _console_errors(proc.stderr)
    assert shot.exists() and shot.stat().st_size > 10_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_demo_html_report_in_browser(tmp_path):
    from kg_rageval.demo import build_demo

    built = build_demo(tmp_path / "demo", seed=0, bootstrap=50)
    res = run_audit(load_config(built["config"]), progress=False)
    page = Path(write_reports(res, tmp_path / "demo" / "report")["html"])
    dom = _chromium(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0 and not _console_errors(dom.stderr), _console_errors(dom.stderr)
    assert "Disease Ontology cancer slim" in dom.stdout and "Coverage: intent" in dom.stdout
    shot = tmp_path / "demo-report.png"
    proc = _chromium(page, tmp_path, "--window-size=1280,2400", f"--screenshot={shot}")
    assert proc.returncode == 0 and shot.stat().st_size > 50_000


_PROBE = """<script>(function(){
var t=document.querySelector('table.sortable');var th=t.tHead.rows[0].cells[1];
th.click();var asc=Array.prototype.map.call(t.tBodies[0].rows,function(r){return r.cells[1].getAttribute('data-v');});
var f=document.getElementById('metric-filter');f.value='accuracy';f.dispatchEvent(new Event('input'));
var shown=Array.prototype.filter.call(document.querySelectorAll('.metric-family tbody tr'),function(r){return !r.hidden;}).length;
var out=document.createElement('pre');out.id='probe';out.textContent=JSON.stringify({asc:asc,sort:th.getAttribute('aria-sort'),shown:shown});
document.body.appendChild(out);})();</script>"""


@pytest.mark.slow
def test_html_metrics_table_sorts_and_filters_in_the_browser(report, tmp_path):
    """The inline script in a real browser: a click on the value header sorts ascending
    (missing values last), the filter box hides the rows that do not match."""
    import json as _json

    page = tmp_path / "probe.html"
    page.write_text(report.read_text().replace("</body>", _PROBE + "</body>"))
    dom = _chromium(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0 and not _console_errors(dom.stderr), _console_errors(dom.stderr)
    probe = _json.loads(
        re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S).group(1).replace("&quot;", '"')
    )
    nums = [float(v) for v in probe["asc"] if v]
    assert probe["sort"] == "ascending" and nums == sorted(nums)
    assert all(v for v in probe["asc"][: len(nums)])  # numbers first, missing values last
    assert probe["shown"] >= 1
