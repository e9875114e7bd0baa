"""Guardrail alerts (kg_rageval.monitor.alerts) and `monitor alerts` (cli/monitor_review.py)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner

from kg_rageval.base.errors import ConfigError
from kg_rageval.cli.monitor_review import review_group
from kg_rageval.monitor import alerts as al
from kg_rageval.monitor.traffic import TrafficRow, Windowing

T0 = datetime(2026, 11, 2, 12, tzinfo=timezone.utc)
DAY = Windowing.parse("1d")


def row(i, window="2026-11-02T00:00:00Z", branch="B1", **record):
    return TrafficRow(f"q{i}", T0, window, branch, ("X",), record=record)


def test_unknown_key_is_config_error_with_did_you_mean():
    with pytest.raises(ConfigError, match=r"faithfulness\.minn: unknown key \(did you mean 'min'\?\)"):
        al.config_from_mapping({"faithfulness": {"minn": 0.8}})
    with pytest.raises(ConfigError, match=r"latency_p95: unknown key \(did you mean 'latency_p95_ms'\?\)"):
        al.config_from_mapping({"latency_p95": {"max": 1}})


def test_latency_p95_needs_59_rows_then_alerts_on_its_lower_bound():
    cfg = al.config_from_mapping({"latency_p95_ms": {"max": 500}})
    few = [row(i, system={"latency_ms": {"total": 1000}}) for i in range(58)]
    res = al.evaluate(few, cfg, windowing=DAY)
    assert res["status"] == "quiet"
    assert {r["status"] for r in res["results"]} == {al.INSUFFICIENT}
    assert res["results"][0]["min_rows"] == 59
    many = [row(i, system={"latency_ms": {"total": 400 + 10 * i}}) for i in range(100)]
    res = al.evaluate(many, cfg, windowing=DAY)
    a = next(r for r in res["results"] if r["branch"] == "(all)")
    # type-7 p95 of 400..1390: 400 + 10 * 94.05
    assert a["evidence"]["estimate"] == pytest.approx(1340.5)
    assert a["evidence"]["n"] == 100 and a["evidence"]["ci"][0] > 500
    assert a["status"] == "alert" and res["status"] == "alert"


def test_faithfulness_alert_watch_and_triage():
    cfg = al.config_from_mapping({"faithfulness": {"min": 0.9}, "min_rows": 20})
    good = {"claims": ["a"], "supported": ["a"], "unsupported": []}
    bad = {"claims": ["a"], "supported": [], "unsupported": ["a"]}
    rows = [row(i, answer={"judgment": good if i < 30 else bad}) for i in range(60)]  # 0.5
    deploys = [al.Deploy(datetime(2026, 11, 1, 20, tzinfo=timezone.utc), "r2")]
    res = al.evaluate(rows, cfg, windowing=DAY, deploys=deploys)
    a = next(r for r in res["results"] if r["branch"] == "(all)")
    assert a["status"] == "alert" and a["evidence"]["n"] == 60 and a["evidence"]["estimate"] == 0.5
    assert a["triage"].startswith("likely regression: release r2")
    res = al.evaluate(rows, cfg, windowing=DAY)
    assert res["results"][0]["triage"].startswith("likely drift")
    rows = [row(i, answer={"judgment": good if i < 17 else bad}) for i in range(20)]  # 0.85, CI spans 0.9
    res = al.evaluate(rows, cfg, windowing=DAY)
    assert res["results"][0]["status"] == "watch" and res["status"] == "quiet"


def test_regeneration_band_and_cost():
    cfg = al.config_from_mapping(
        {"regeneration": {"reference": ["2026-11-01T00:00:00Z"]}, "cost_per_query_usd": {"max": 0.01}}
    )
    ref = [row(i, "2026-11-01T00:00:00Z") for i in range(200)]
    ref = [
        TrafficRow(r.record_id, T0, r.window, "B1", ("X",), feedback={"regenerated": i < 20})
        for i, r in enumerate(ref)
    ]
    cur = [
        TrafficRow(
            f"c{i}",
            T0,
            "2026-11-02T00:00:00Z",
            "B1",
            ("X",),
            feedback={"regenerated": i < 60},
            record={"system": {"cost_usd": 0.005}},
        )
        for i in range(200)
    ]
    res = al.evaluate(ref + cur, cfg, windowing=DAY)
    regen = [r for r in res["results"] if r["check"] == "regeneration_rate"]
    assert {r["status"] for r in regen} == {"alert"} and regen[0]["band_status"] == "above band"
    cost = [r for r in res["results"] if r["check"] == "cost_per_query_usd"]
    assert [r["status"] for r in cost if r["window"] == "2026-11-02T00:00:00Z"] == ["ok", "ok"]


@pytest.fixture
def traffic(tmp_path, fixtures_dir):
    from kg_rageval.ontology import load_ontology

    onto_path = fixtures_dir / "hierarchy" / "vehicles.obo"
    onto = load_ontology(onto_path)
    leaf = next(n for n in onto.ids if onto.depth(n) >= 2)
    p = tmp_path / "traffic.jsonl"
    p.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"q{i}",
                    "timestamp": "2026-11-02T10:00:00Z",
                    "labels": {"predicted": [leaf]},
                    "system": {"latency_ms": {"total": 100 + i}},
                }
            )
            + "\n"
            for i in range(80)
        )
    )
    return p, onto_path


def test_cli_exit_codes(traffic, tmp_path):
    data, onto = traffic
    run = CliRunner().invoke
    ok = tmp_path / "ok.yaml"
    ok.write_text("latency_p95_ms: {max: 500}\n")
    r = run(review_group, ["alerts", "-d", str(data), "-O", str(onto), "-c", str(ok), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["status"] == "quiet"
    tight = tmp_path / "tight.yaml"
    tight.write_text("latency_p95_ms: {max: 50}\n")
    r = run(review_group, ["alerts", "-d", str(data), "-O", str(onto), "-c", str(tight)])
    assert r.exit_code == 1 and "alert" in r.output and "likely drift" in r.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("latency_p95_ms: {maxx: 50}\n")
    r = run(review_group, ["alerts", "-d", str(data), "-O", str(onto), "-c", str(bad)])
    assert r.exit_code == 2 and "did you mean 'max'" in r.output
