"""Guardrail alerts from the window store (``alerts.evaluate_store``, ``monitor alerts --store``,
the guardrails of ``monitor report``): equal to the same checks on the traffic rows
(``alerts.evaluate``), p95 equal to numpy's type-7 quantile with scipy's order-statistic
interval, cost interval equal to scipy's t interval, and the fields-carried denominators."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

pytest.importorskip("duckdb", reason="the window store needs the monitor extra (duckdb)")

from kg_rageval.base.errors import InputError
from kg_rageval.cli.main import main
from kg_rageval.monitor import alerts as al
from kg_rageval.monitor.page import monitor_report
from kg_rageval.monitor.store import WindowStore, ingest
from kg_rageval.monitor.traffic import Windowing, iter_traffic
from kg_rageval.ontology import load_ontology

DAY0 = datetime(2026, 11, 2, tzinfo=timezone.utc)
GOOD = {"claims": ["a"], "supported": ["a"], "unsupported": []}
BAD = {"claims": ["a"], "supported": [], "unsupported": ["a"]}
CONFIG = {
    "min_rows": 30,
    "faithfulness": {"min": 0.8, "rolling_windows": 2},
    "latency_p95_ms": {"max": 1500},
    "cost_per_query_usd": {"max": 0.007},
    "regeneration": {"reference": ["2026-11-02T00:00:00Z"], "false_alarm_budget": 0.05},
}


@pytest.fixture(scope="module")
def onto_path(fixtures_dir):
    return fixtures_dir / "hierarchy" / "vehicles.obo"


def _traffic(path, onto):
    """Four days, two branches, 120 rows per branch and day. Day 4 (index 3), branch of leaf
    a: latency x3, faithfulness 0.5 (judged; reviewed rows true), regeneration 40 %, cost
    doubled. Every third row carries no regeneration field (not a no). Day 2 has 20 rows of
    branch b only (insufficient evidence there)."""
    rng = np.random.default_rng(7)
    a, b = sorted(n for n in onto.ids if onto.depth(n) == 1)[:2]  # two branches
    lines = []
    for d in range(4):
        for leaf in (a, b):
            n = 20 if (d == 1 and leaf == a) else 120
            shifted = d == 3 and leaf == a
            for i in range(n):
                rec = {
                    "id": f"{d}-{leaf}-{i}",
                    "timestamp": (DAY0 + timedelta(days=d, seconds=30 * i)).isoformat(),
                    "labels": {"predicted": [leaf]},
                    "intent": "lookup" if i % 2 else "howto",
                    "system": {
                        "latency_ms": {
                            "total": float(np.round(rng.lognormal(6.5, 0.4) * (3 if shifted else 1), 1))
                        },
                        "cost_usd": float(np.round(rng.uniform(0.002, 0.006) * (2 if shifted else 1), 6)),
                    },
                }
                if i % 3:
                    rec["feedback"] = {"regenerated": bool(rng.random() < (0.4 if shifted else 0.1))}
                if i % 10 == 0:
                    rec["review"] = {"faithful": True}
                else:
                    ok = rng.random() < (0.5 if shifted else 0.95)
                    rec["answer"] = {"judgment": GOOD if ok else BAD}
                lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n")
    return a, b


@pytest.fixture(scope="module")
def world(tmp_path_factory, onto_path):
    tmp = tmp_path_factory.mktemp("guard")
    onto = load_ontology(onto_path)
    data = tmp / "traffic.jsonl"
    _traffic(data, onto)
    store = tmp / "store.duckdb"
    with WindowStore(store) as st:
        ingest(st, data, onto, window="1d")
    rows = [r for chunk in iter_traffic(data, onto, window="1d") for r in chunk]
    a, b = sorted(n for n in onto.ids if onto.depth(n) == 1)[:2]
    return {"data": data, "store": store, "rows": rows, "onto": onto, "leaf_a": a, "branch_a": a}


def _norm(results):
    return sorted(
        (
            r["check"], r["window"], r["branch"], r["status"], r["evidence"]["n"],
            r["evidence"]["estimate"], tuple(r["evidence"]["ci"] or ()), r["triage"],
        )
        for r in results
    )  # fmt: skip


def test_store_guardrails_equal_the_row_checks(world):
    cfg = al.config_from_mapping(CONFIG)
    deploys = [al.Deploy(datetime(2026, 11, 4, 22, tzinfo=timezone.utc), "r7")]
    by_rows = al.evaluate(world["rows"], cfg, windowing=Windowing.parse("1d"), deploys=deploys)
    with WindowStore(world["store"], read_only=True) as st:
        by_store = al.evaluate_store(st, cfg, deploys=deploys)
    got, want = _norm(by_store["results"]), _norm(by_rows["results"])
    # 4 checks x 3 groups ((all) and two branches) x 4 days, less the reference day's 3
    # regeneration cells
    assert len(got) == len(want) == 4 * 3 * 4 - 3
    for g, w in zip(got, want, strict=True):
        assert g[:5] == w[:5] and g[7] == w[7]
        assert (g[5] is None and w[5] is None) or g[5] == pytest.approx(w[5], rel=1e-12)
        assert g[6] == pytest.approx(w[6], rel=1e-9)
    assert by_store["counts"] == by_rows["counts"] and by_store["status"] == by_rows["status"] == "alert"
    fired = {(r["check"], r["window"], r["branch"]) for r in by_store["results"] if r["status"] == "alert"}
    day4 = "2026-11-05T00:00:00Z"
    boat = world["branch_a"]
    assert fired == {
        ("cost_per_query_usd", day4, boat),
        ("faithfulness", day4, boat),
        ("latency_p95_ms", day4, "(all)"),
        ("latency_p95_ms", day4, boat),
        ("regeneration_rate", day4, "(all)"),
        ("regeneration_rate", day4, boat),
    }
    # day 2 has 20 rows of that branch: insufficient evidence, never silence and never an alert
    day2 = {
        r["check"]: r
        for r in by_store["results"]
        if r["window"] == "2026-11-03T00:00:00Z" and r["branch"] == boat
    }
    assert {c: r["status"] for c, r in day2.items()} == {
        "latency_p95_ms": al.INSUFFICIENT,
        "cost_per_query_usd": al.INSUFFICIENT,
        "regeneration_rate": al.INSUFFICIENT,
        "faithfulness": "ok",  # rolling over 2 windows: 120 + 20 rows
    }
    assert day2["faithfulness"]["evidence"]["n"] == 140
    assert day2["faithfulness"]["rolling_windows"] == ["2026-11-02T00:00:00Z", "2026-11-03T00:00:00Z"]
    assert day2["latency_p95_ms"]["evidence"]["n"] == 20 and day2["latency_p95_ms"]["min_rows"] == 59
    a4 = next(r for r in by_store["results"] if r["window"] == day4 and r["status"] == "alert")
    assert a4["triage"].startswith("likely regression: release r7")


def _raw(world, day, branch_leaf):
    """The day's rows of one branch, straight from the file (the independent reference)."""
    out = []
    for line in world["data"].read_text().splitlines():
        r = json.loads(line)
        if r["id"].startswith(f"{day}-{branch_leaf}-"):
            out.append(r)
    return out


def test_p95_cost_and_regeneration_evidence_against_numpy_and_scipy(world):
    from scipy import stats

    cfg = al.config_from_mapping(CONFIG)
    with WindowStore(world["store"], read_only=True) as st:
        res = al.evaluate_store(st, cfg, windows=["2026-11-05T00:00:00Z"])
    assert {r["window"] for r in res["results"]} == {"2026-11-05T00:00:00Z"}
    got = {r["check"]: r for r in res["results"] if r["branch"] == world["branch_a"]}
    raw = _raw(world, 3, world["leaf_a"])
    lat = np.sort([r["system"]["latency_ms"]["total"] for r in raw])
    p95 = got["latency_p95_ms"]["evidence"]
    assert p95["n"] == 120 and p95["estimate"] == np.quantile(lat, 0.95)  # exact, type 7
    # distribution-free interval: order statistics at binomial quantiles (by hand from scipy)
    lo_i = int(stats.binom.ppf(0.025, 120, 0.95)) - 1
    hi_i = int(stats.binom.ppf(0.975, 120, 0.95))
    assert p95["ci"] == [lat[lo_i], lat[hi_i]]
    cost = np.array([r["system"]["cost_usd"] for r in raw])
    c = got["cost_per_query_usd"]["evidence"]
    assert c["estimate"] == pytest.approx(cost.mean(), rel=1e-12)
    lo, hi = stats.t.interval(0.95, len(cost) - 1, loc=cost.mean(), scale=stats.sem(cost))
    assert c["ci"] == pytest.approx([lo, hi], rel=1e-9)
    regen = [r["feedback"]["regenerated"] for r in raw if "feedback" in r]
    g = got["regeneration_rate"]["evidence"]
    assert g["n"] == len(regen) == 80  # rows without the field are in no denominator
    assert g["estimate"] == sum(regen) / 80


def test_report_shows_guardrails_and_cli(world, tmp_path, capsys):
    cfg = al.config_from_mapping(CONFIG)
    with WindowStore(world["store"], read_only=True) as st:
        p = monitor_report(st, n_permutations=20, guardrails=cfg)
    g = [a for a in p["alerts"] if a["kind"] == "guardrail"]
    assert len(g) == 6 and all(a["status"] == "alert" and a["triage"] for a in g)
    assert p["status"] == "alert" and p["guardrails"]["counts"]["alert"] == 6
    from kg_rageval.monitor.page import render_html

    page = render_html(p)
    assert page.count('class="guardrail-row') == sum(r["status"] != "ok" for r in p["guardrails"]["results"])
    assert "insufficient evidence" in page and "likely drift" in page
    conf = tmp_path / "alerts.json"
    conf.write_text(json.dumps(CONFIG))
    args = ["monitor", "alerts", "--store", str(world["store"]), "-c", str(conf), "--format", "json"]
    assert main(args) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["source"]["store"] == str(world["store"]) and out["counts"]["alert"] == 6
    quiet = tmp_path / "quiet.json"
    quiet.write_text(json.dumps({"latency_p95_ms": {"max": 100000}}))
    assert main(["monitor", "alerts", "--store", str(world["store"]), "-c", str(quiet)]) == 0
    capsys.readouterr()
    stage = tmp_path / "stage.json"
    stage.write_text(json.dumps({"latency_p95_ms": {"max": 1, "stage": "retrieval"}}))
    assert main(["monitor", "alerts", "--store", str(world["store"]), "-c", str(stage)]) == 2
    assert "keeps latency_ms.total only" in capsys.readouterr().err
    # neither or both of --data / --store: exit 2
    assert main(["monitor", "alerts", "-c", str(quiet)]) == 2
    assert "--data or --store" in capsys.readouterr().err
    r = main(
        [
            "monitor",
            "report",
            "--store",
            str(world["store"]),
            "--alerts-config",
            str(conf),
            "--permutations",
            "20",
        ]
    )
    assert r == 1


def test_old_store_is_a_clear_error(tmp_path):
    import duckdb

    path = tmp_path / "old.duckdb"
    WindowStore(path).close()
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(
        InputError, match=r"older kg-rageval \(store schema 1.*ingest the traffic again into a new store"
    ):
        WindowStore(path)
    assert main(["monitor", "windows", "--store", str(path)]) == 2


def test_carried_fields_are_the_denominators(tmp_path, onto_path):
    onto = load_ontology(onto_path)
    leaf = sorted(n for n in onto.ids if onto.depth(n) == 1)[0]
    recs = [
        {"id": "1", "timestamp": 1793577600, "labels": {"predicted": [leaf]}, "feedback": {"regenerated": True}},
        {"id": "2", "timestamp": 1793577601, "labels": {"predicted": [leaf]}, "feedback": {"regenerated": False}},
        {"id": "3", "timestamp": 1793577602, "labels": {"predicted": [leaf]}, "answer": {"refused": False}},
        {"id": "4", "timestamp": 1793577603, "labels": {"predicted": [leaf]}, "feedback": {"thumbs": "up"}},
        {"id": "5", "timestamp": 1793577604, "labels": {"predicted": [leaf]}, "review": {"faithful": False},
         "answer": {"judgment": GOOD}},
        {"id": "6", "timestamp": 1793577605, "labels": {"predicted": [leaf]}, "answer": {"judgment": GOOD}},
    ]  # fmt: skip
    data = tmp_path / "t.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with WindowStore(tmp_path / "s.duckdb") as st:
        ingest(st, data, onto)
        t = st.sums(st.windows(), by=())[0]
    assert (t["n"], t["regen_n"], t["regenerated"], t["refusal_n"], t["refused"]) == (6, 2, 1, 1, 0)
    # the review takes precedence over the judge: 5 is reviewed (not faithful), 6 judged (faithful)
    assert (t["reviewed_n"], t["reviewed_k"], t["judged_n"], t["judged_k"]) == (1, 0, 1, 1)
    assert (t["thumbs_up"], t["thumbs_down"]) == (1, 0)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_guardrails_on_the_page_in_headless_chromium(world, tmp_path):
    from kg_rageval.monitor.page import render_html

    cfg = al.config_from_mapping(CONFIG)
    with WindowStore(world["store"], read_only=True) as st:
        p = monitor_report(st, n_permutations=20, guardrails=cfg)
    page = tmp_path / "guard.html"
    page.write_text(render_html(p), encoding="utf-8")
    profile = tmp_path / "profile"
    profile.mkdir()
    netlog = tmp_path / "net.json"
    cmd = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
        "--dump-dom", f"--log-net-log={netlog}", page.resolve().as_uri(),
    ]  # fmt: skip
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    rows = re.findall(r'<tr class="guardrail-row status-([a-z-]+)">(.*?)</tr>', html, re.S)
    statuses = [s for s, _ in rows]
    assert statuses.count("alert") == 6 and "insufficient-evidence" in statuses
    # each alert row carries its evidence (n, estimate, CI) and the triage hint
    alert_cells = [re.findall(r"<td>(.*?)</td>", body) for s, body in rows if s == "alert"]
    assert all(
        len(c) == 9 and c[4].isdigit() and c[6].startswith("[") and "likely" in c[8] for c in alert_cells
    )
    # the guardrail alerts are marked on the branch figures: 6 guardrail + the drift / rate markers
    guard_marks = re.findall(r'class="alert-marker"[^>]*>\s*<title>GUARDRAIL', html)
    assert len(guard_marks) == 6
    figures = dict(re.findall(r'<figure class="branch" data-branch="([^"]*)" data-alerts="(\d+)"', html))
    assert int(figures[world["branch_a"]]) >= 4 and int(figures["(all)"]) >= 2
    urls = set(re.findall(r'"url":"([^"]+)"', netlog.read_text()))
    own = re.compile(r"^https?://([a-z0-9-]+\.)*(google\.com|googleapis\.com|gstatic\.com)/")
    assert {u for u in urls if not own.match(u)} <= {page.resolve().as_uri()}


@pytest.mark.parametrize("reference_error", [None, True, False])
def test_regeneration_band_with_the_reference_error(world, reference_error):
    """The default (and ``reference_error: true``) is the page's beta-binomial predictive band,
    which carries the reference window's own error; ``false`` takes the reference rate as known
    (the exact binomial band around it)."""
    from scipy.stats import betabinom, binom

    regen_cfg = dict(CONFIG["regeneration"])
    if reference_error is not None:
        regen_cfg["reference_error"] = reference_error
    cfg = al.config_from_mapping({**CONFIG, "regeneration": regen_cfg})
    with WindowStore(world["store"], read_only=True) as st:
        res = al.evaluate_store(st, cfg)
        ref = next(r for r in st.sums(["2026-11-02T00:00:00Z"]) if r["branch"] == world["branch_a"])
    regen = [r for r in res["results"] if r["check"] == "regeneration_rate"]
    alpha = 0.05 / len(regen)  # Bonferroni over the monitored cells
    cell = next(
        r for r in regen if r["window"] == "2026-11-05T00:00:00Z" and r["branch"] == world["branch_a"]
    )
    n, k0, n0 = cell["evidence"]["n"], ref["regenerated"], ref["regen_n"]
    if reference_error is False:
        lo, hi = binom.ppf(alpha / 2, n, k0 / n0), binom.isf(alpha / 2, n, k0 / n0)
    else:
        pred = betabinom(n, k0 + 0.5, n0 - k0 + 0.5)
        lo, hi = pred.ppf(alpha / 2), pred.isf(alpha / 2)
    assert cell["band"] == pytest.approx([lo / n, hi / n])
    assert cell["status"] == "alert" and n0 == 80
