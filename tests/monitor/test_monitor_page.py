"""``kg-rageval monitor report``: the payload's rates, bands and alerts against scipy /
statsmodels on a store with known shifts, the exit codes, read-only use of the store, and the
HTML page in headless Chromium (renders, one plot per branch, alert markers, escaped labels,
no network request)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("duckdb", reason="the window store needs the monitor extra (duckdb)")

from kg_rageval.cli.main import main
from kg_rageval.monitor.page import monitor_report, render_html, select_windows
from kg_rageval.monitor.store import WindowStore
from kg_rageval.monitor.traffic import TrafficRow

EVIL = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"
BRANCHES = ("A", "B", EVIL)
DAYS = [f"2026-11-0{d}T00:00:00Z" for d in range(1, 5)]
N = 60  # rows per branch and day


def _rows(seed: int = 0, refused: bool = False) -> list[TrafficRow]:
    """Four days x three branches x 60 rows. Regenerated: 6 of 60 in every cell except branch B
    on day 4 (30 of 60); thumbs down 12, up 48 everywhere; branch A's embeddings shift by 3 on
    day 4 (MMD); the branch mix stays equal (chi-square 0)."""
    rng = np.random.default_rng(seed)
    out = []
    for d, win in enumerate(DAYS):
        day = datetime(2026, 11, 1 + d, tzinfo=timezone.utc)
        for b in BRANCHES:
            k_regen = 30 if (d == 3 and b == "B") else 6
            shift = 3.0 if (d == 3 and b == "A") else 0.0
            for i in range(N):
                rec = {"answer": {"refused": i < 3}} if refused else {}
                out.append(
                    TrafficRow(
                        record_id=f"{d}-{b}-{i}",
                        timestamp=day + timedelta(minutes=i),
                        window=win,
                        branch=b,
                        concepts=(f"{b}:c",),
                        embedding=tuple((rng.normal(size=3) + shift).tolist()),
                        embedding_model="enc@1",
                        feedback={"regenerated": i < k_regen, "thumbs": "down" if i % 5 == 0 else "up"},
                        record=rec,
                    )
                )
    return out


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("page") / "store.duckdb"
    with WindowStore(path) as st:
        # seed 1: with seed 0 the no-shift MMD of branch B on day 3 fires by chance (p 0 of 200
        # permutations) -- the per-page false-alarm rate the page states (up to 3 x alpha)
        st.ingest_rows([_rows(seed=1)])
    return path


@pytest.fixture(scope="module")
def payload(store_path):
    with WindowStore(store_path, read_only=True) as st:
        return monitor_report(st, n_permutations=200)


def test_window_selection():
    ws = ["a", "b", "c", "d", "e"]
    assert select_windows(ws, None, None, None) == ("a", ws)
    assert select_windows(ws, None, "d", 2) == ("c", ["c", "d"])
    assert select_windows(ws, "a", None, 2) == ("a", ["a", "d", "e"])
    from kg_rageval.base.errors import ConfigError, InputError

    with pytest.raises(InputError, match="no window 'z'"):
        select_windows(ws, "z", None, None)
    with pytest.raises(ConfigError, match="after --current"):
        select_windows(ws, "d", "b", None)


def test_alerts_are_exactly_the_injected_shifts(payload):
    got = sorted((a["kind"], a["check"], a["window"], a["branch"]) for a in payload["alerts"])
    assert got == [
        ("drift", "mmd", DAYS[3], "A"),
        ("rate", "regeneration_rate", DAYS[3], "(all)"),
        ("rate", "regeneration_rate", DAYS[3], "B"),
    ]
    assert payload["status"] == "alert"
    assert payload["reference"] == DAYS[0] and payload["windows"] == DAYS
    assert payload["branches"] == ["(all)", *sorted(BRANCHES)]
    assert payload["rows"] == dict.fromkeys(DAYS, 3 * N)
    assert "Holm" in payload["correction_note"] and "up to 0.15" in payload["correction_note"]
    # the refusal flag is in no row: not observed, not a reassuring 0
    assert payload["rates"]["refusal_rate"]["status"] == "not observed"
    assert payload["rates"]["refusal_rate"]["cells"] == []


def test_bands_and_intervals_match_scipy_and_statsmodels(payload):
    from scipy.stats import betabinom, binom
    from statsmodels.stats.proportion import proportion_confint

    reg = payload["rates"]["regeneration_rate"]
    monitored = 3 * 4  # 3 windows after the reference x (3 branches + (all))
    alpha = 0.05 / monitored
    assert reg["per_window_alpha"] == pytest.approx(alpha)
    cell = next(c for c in reg["cells"] if c["group"] == "B" and c["window"] == DAYS[3])
    assert (cell["k"], cell["n"], cell["status"]) == (30, 60, "above band")
    # the band carries the reference's own error: beta-binomial predictive, Jeffreys prior
    pred = betabinom(60, 6 + 0.5, 54 + 0.5)
    lo, hi = pred.ppf(alpha / 2), pred.isf(alpha / 2)
    assert cell["band"] == pytest.approx([lo / 60, hi / 60])
    assert hi < 30  # the hand check: 30 of 60 lies above the band around 6 of 60
    # ... and is wider than the plug-in binomial band around 6/60 taken as known
    assert hi > binom.isf(alpha / 2, 60, 0.1)
    assert cell["ci"] == pytest.approx(list(proportion_confint(30, 60, method="wilson")), rel=1e-9)
    allc = next(c for c in reg["cells"] if c["group"] == "(all)" and c["window"] == DAYS[3])
    assert (allc["k"], allc["n"]) == (42, 180)
    pred = betabinom(180, 18.5, 162.5)
    assert allc["band"] == pytest.approx([pred.ppf(alpha / 2) / 180, pred.isf(alpha / 2) / 180])
    td = payload["rates"]["thumbs_down_rate"]
    assert {(c["k"], c["n"]) for c in td["cells"] if c["group"] != "(all)"} == {(12, 60)}
    assert {c["status"] for c in td["cells"]} == {"reference", "ok"}


def test_drift_matches_the_drift_report(store_path, payload):
    from scipy.stats import chi2_contingency

    from kg_rageval.monitor.drift import drift_report

    with WindowStore(store_path, read_only=True) as st:
        direct = drift_report(st, DAYS[0], DAYS[3], n_permutations=200)
    assert payload["drift"][-1] == direct
    mix = next(t for t in direct["tests"] if t["test"] == "branch_mix")
    table = np.array([mix["details"]["reference"], mix["details"]["current"]])
    assert mix["statistic"] == pytest.approx(chi2_contingency(table, correction=False)[0]) == 0.0


def test_rate_reference_pools_windows(store_path):
    with WindowStore(store_path, read_only=True) as st:
        p = monitor_report(st, rate_reference=3, n_permutations=20)
    reg = p["rates"]["regeneration_rate"]
    assert p["rate_reference"] == DAYS[:3]
    assert reg["per_window_alpha"] == pytest.approx(0.05 / 4)
    assert {c["status"] for c in reg["cells"] if c["window"] != DAYS[3]} == {"reference"}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_cli_exit_codes_and_outputs(store_path, tmp_path, capsys):
    before = _digest(store_path)
    html, js = tmp_path / "m.html", tmp_path / "m.json"
    args = ["monitor", "report", "--store", str(store_path), "--permutations", "200"]
    assert main([*args, "--html", str(html), "--json", str(js), "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert json.loads(js.read_text()) == out and out["status"] == "alert"
    assert html.read_text().startswith("<!DOCTYPE html>")
    # before the shifts: quiet (exit 0)
    assert main([*args, "--current", DAYS[2], "--json", str(js)]) == 0
    assert json.loads(js.read_text())["alerts"] == []
    # input errors: exit 2, nothing written over the store
    assert main([*args, "--reference", "2026-12-01T00:00:00Z"]) == 2
    assert "no window '2026-12-01T00:00:00Z'" in capsys.readouterr().err
    assert main([*args, "--html", str(store_path)]) == 2
    assert "same file as the input --store" in capsys.readouterr().err
    assert main(["monitor", "report", "--store", str(tmp_path / "none.duckdb")]) == 2
    assert "no such store" in capsys.readouterr().err
    assert _digest(store_path) == before


def test_html_escapes_every_data_string(payload):
    page = render_html(payload)
    assert EVIL not in page and "<img" not in page
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in page
    assert "<script" not in page  # the page runs no script at all
    # parsed: no element or attribute that could run or fetch anything
    from html.parser import HTMLParser

    seen: list[tuple[str, list]] = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            seen.append((tag, attrs))

    Tags().feed(page)
    tags = {t for t, _ in seen}
    attrs = {a for _, at in seen for a, _ in at}
    assert {"figure", "svg", "circle", "path", "table"} <= tags
    assert not tags & {"script", "img", "link", "iframe", "object", "embed", "image", "use"}
    assert not attrs & {"src", "href", "xlink:href", "onerror", "onload", "srcset"}
    data_branch = [dict(at)["data-branch"] for t, at in seen if t == "figure"]
    assert data_branch == ["(all)", *sorted(BRANCHES)]  # the label survives intact, as data
    assert "url(" not in page and "@import" not in page


# -- headless Chromium -------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
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


def _chromium(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    profile = tmp / "profile"
    profile.mkdir(exist_ok=True)
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra]
    return subprocess.run([*cmd, page.resolve().as_uri()], capture_output=True, text=True, timeout=120)


_BROWSER_OWN = re.compile(r"^https?://([a-z0-9-]+\.)*(google\.com|googleapis\.com|gstatic\.com)/")


def _page_requests(netlog: Path) -> set[str]:
    urls = set(re.findall(r'"url":"([^"]+)"', netlog.read_text()))
    return {u for u in urls if not _BROWSER_OWN.match(u)}


def needs_chromium(fn):
    for mark in (
        pytest.mark.slow,
        pytest.mark.browser,
        pytest.mark.skipif(
            CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)"
        ),
    ):
        fn = mark(fn)
    return fn


@needs_chromium
def test_network_request_detection_works(tmp_path):
    """The check below can fail: a page that loads an image from elsewhere is caught."""
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/canary.png"></body></html>')
    netlog = tmp_path / "net.json"
    _chromium(page, tmp_path, "--dump-dom", f"--log-net-log={netlog}")
    assert "http://127.0.0.1:9/canary.png" in _page_requests(netlog)


@needs_chromium
def test_page_in_headless_chromium(payload, tmp_path):
    page = tmp_path / "monitor.html"
    page.write_text(render_html(payload), encoding="utf-8")
    netlog = tmp_path / "net.json"
    dom = _chromium(page, tmp_path, "--dump-dom", f"--log-net-log={netlog}")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert not re.findall(r"CONSOLE|Uncaught|net::ERR_|Refused to", dom.stderr), dom.stderr[-2000:]
    html = dom.stdout
    # the injected label did not run: the title is the page's, no <img> element exists
    title = re.search(r"<title>(.*?)</title>", html, re.S).group(1)
    assert title.startswith("Monitoring: ") and "pwned" not in title
    assert "<img" not in html and "<script" not in html
    figures = re.findall(r'<figure class="branch" data-branch="([^"]*)" data-alerts="(\d+)"', html)
    assert len(figures) == 4 and html.count('<svg xmlns="http://www.w3.org/2000/svg" class="plot"') == 4
    assert dict(figures) == {
        "(all)": "1",
        "A": "1",
        "B": "1",
        "&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;": "0",
    }
    assert html.count('class="alert-marker"') == 3
    # no request beyond the page itself (Chromium's own update / account pings aside)
    assert _page_requests(netlog) <= {page.resolve().as_uri()}, _page_requests(netlog)
    shot = tmp_path / "monitor.png"
    proc = _chromium(page, tmp_path, "--window-size=1000,2400", f"--screenshot={shot}")
    assert proc.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000


def test_refusal_rate_reported_when_flagged(tmp_path):
    path = tmp_path / "refused.duckdb"
    with WindowStore(path) as st:
        st.ingest_rows([_rows(seed=1, refused=True)])
    with WindowStore(path, read_only=True) as st:
        p = monitor_report(st, n_permutations=20, last=2)
    assert p["windows"] == DAYS[2:]
    cells = p["rates"]["refusal_rate"]["cells"]
    assert {(c["group"], c["k"], c["n"], c["status"]) for c in cells} == {
        (g, k, n, s)
        for g, k, n in [("(all)", 9, 180), ("A", 3, 60), ("B", 3, 60), (EVIL, 3, 60)]
        for s in ("reference", "ok")
    }


def test_across_windows_is_one_family(store_path, payload):
    from statsmodels.stats.multitest import multipletests

    with WindowStore(store_path, read_only=True) as st:
        p = monitor_report(st, n_permutations=200, across_windows=True)
    raw = [t["p_value"] for rep in payload["drift"] for t in rep["tests"] if t["p_value"] is not None]
    adj = [t["p_adjusted"] for rep in p["drift"] for t in rep["tests"] if t["p_value"] is not None]
    assert [t["p_value"] for rep in p["drift"] for t in rep["tests"] if t["p_value"] is not None] == raw
    assert len(raw) == 3 * 4  # 3 windows x (branch mix + 3 branches' MMD)
    assert adj == pytest.approx(list(multipletests(raw, method="holm")[1]))
    assert "one family" in p["correction_note"] and p["across_windows"] is True
    assert [a["branch"] for a in p["alerts"] if a["kind"] == "drift"] == ["A"]
