"""Implicit signals as candidates (kg_rageval.monitor.signals) and `monitor signals`: hand-worked
values, checked against scipy (chi2_contingency, pointbiserialr, fisher_exact) and statsmodels."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import numpy as np
import pytest
from click.testing import CliRunner

from kg_rageval.base.errors import InputError
from kg_rageval.monitor import signals as sg
from kg_rageval.monitor.traffic import TrafficRow

T0 = datetime(2026, 11, 2, tzinfo=timezone.utc)


def row(i, faithful, branch="B", **feedback):
    rec = {"id": f"q{i}", "review": {"faithful": faithful}} if faithful is not None else {"id": f"q{i}"}
    return TrafficRow(f"q{i}", T0, "w", branch, ("X",), feedback=feedback, record=rec)


def one(rep, signal, group="(all)"):
    return next(r for r in rep["results"] if r["signal"] == signal and r["group"] == group)


def test_binary_by_hand_and_against_scipy_statsmodels():
    from scipy.stats import chi2_contingency, fisher_exact
    from statsmodels.stats.proportion import confint_proportions_2indep

    # copied: 8 of 10 faithful; not copied: 3 of 10 faithful; one unreviewed row left out
    rows = [row(i, i < 8, copied=True) for i in range(10)]
    rows += [row(10 + i, i < 3, copied=False) for i in range(10)]
    rows += [row(99, None, copied=True)]
    rep = sg.signal_report(rows, signals=["copied"], min_rows=1)
    r = one(rep, "copied")
    assert rep["n_reviewed"] == 20 and r["n"] == 20 and r["direction"] is None
    assert r["estimate"] == pytest.approx(0.5)
    # expected counts 5.5 / 4.5: chi2 = 2 * 2.5^2 / 5.5 + 2 * 2.5^2 / 4.5 = 5.0505...
    assert r["chi2"] == pytest.approx(2 * 6.25 / 5.5 + 2 * 6.25 / 4.5)
    ref = chi2_contingency([[8, 2], [3, 7]], correction=False)
    assert r["chi2"] == pytest.approx(ref[0]) and r["chi2_p"] == pytest.approx(ref[1])
    assert r["fisher_p"] == pytest.approx(fisher_exact([[8, 2], [3, 7]]).pvalue)
    nc = confint_proportions_2indep(8, 10, 3, 10, method="newcomb", compare="diff")
    assert r["ci"] == pytest.approx(list(nc))
    assert "association only" in rep["note"]


def test_continuous_by_hand_and_against_scipy():
    from scipy.stats import pointbiserialr

    rows = [row(i, y, dwell_ms=x) for i, (x, y) in enumerate([(1, False), (2, False), (3, True), (4, True)])]
    r = one(sg.signal_report(rows, signals=["dwell_ms"], min_rows=1, n_boot=200), "dwell_ms")
    # (M1 - M0) / sd_pop * sqrt(p q) = 2 / sqrt(1.25) * 0.5; t = r sqrt(2 / (1 - r^2)) = 2 sqrt(2)
    assert r["estimate"] == pytest.approx(1 / np.sqrt(1.25))
    assert (r["mean_label_1"], r["mean_label_0"]) == (3.5, 1.5)
    from scipy.stats import t

    assert r["p_value"] == pytest.approx(2 * t.sf(2 * np.sqrt(2), 2))
    rng = np.random.default_rng(3)
    y = rng.uniform(size=400) < 0.6
    x = rng.normal(size=400) + 0.4 * y
    rows = [row(i, bool(y[i]), dwell_ms=float(abs(x[i]) * 1000)) for i in range(400)]
    r = one(sg.signal_report(rows, signals=["dwell_ms"], seed=5), "dwell_ms")
    ref = pointbiserialr(y.astype(int), np.abs(x) * 1000)
    assert r["estimate"] == pytest.approx(ref.statistic) and r["p_value"] == pytest.approx(ref.pvalue)
    lo, hi = r["ci"]
    assert lo < r["estimate"] < hi
    again = one(sg.signal_report(rows, signals=["dwell_ms"], seed=5), "dwell_ms")
    assert again["ci"] == r["ci"]  # seeded


def test_insufficient_evidence_and_followup_patterns():
    rows = [row(i, i % 2 == 0, regenerated=True) for i in range(40)]
    r = one(sg.signal_report(rows, signals=["regenerated"]), "regenerated")
    assert r["status"] == sg.INSUFFICIENT and "constant" in r["reason"]
    rows = [row(i, True, regenerated=i % 2 == 0) for i in range(40)]
    assert one(sg.signal_report(rows, signals=["regenerated"]), "regenerated")["reason"] == (
        "the reviewed label is constant"
    )
    few = [row(i, i % 2 == 0, regenerated=i % 3 == 0) for i in range(10)]
    assert one(sg.signal_report(few, signals=["regenerated"]), "regenerated")["status"] == sg.INSUFFICIENT
    read = sg.signal_reader("followup_doubt")
    texts = {"Are you sure?": True, "really?": True, "is that correct": True, "thanks": False, None: False}
    for t, want in texts.items():
        assert read(row(0, True, followup=t)) is want
    assert read(row(0, True)) is None  # no follow-up field: not in the analysis
    assert sg.signal_reader("cited_click")(row(0, True, cited_clicks=2)) is True
    with pytest.raises(InputError, match="feedback.cited_clicks"):
        sg.signal_reader("cited_click")(row(0, True, cited_clicks=-1))
    with pytest.raises(InputError, match="review.faithful"):
        sg.label_reader()(
            TrafficRow("x", T0, "w", "B", (), record={"id": "x", "review": {"faithful": "yes"}})
        )


def test_cli_signals_per_branch(tmp_path, fixtures_dir):
    from kg_rageval.cli.monitor_review import review_group

    p = tmp_path / "traffic.jsonl"
    recs = []
    for i in range(80):
        concept = "VH:sedan" if i % 2 else "VH:submarine"
        recs.append({
            "id": f"q{i}", "timestamp": "2026-11-02T10:00:00Z", "labels": {"predicted": [concept]},
            "review": {"faithful": i % 4 < 2}, "feedback": {"shared": i % 4 == 0, "dwell_ms": 100 + i},
        })  # fmt: skip
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    onto = fixtures_dir / "hierarchy" / "vehicles.obo"
    argv = ["signals", "-d", str(p), "-O", str(onto), "--signal", "shared", "--signal", "dwell_ms"]
    res = CliRunner().invoke(review_group, [*argv, "--by", "branch", "--min-rows", "10", "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert {(r["signal"], r["group"]) for r in out["results"]} == {
        (s, b) for s in ("shared", "dwell_ms") for b in ("VH:car", "VH:boat")
    }
    # boat rows (even i): shared when i % 4 == 0, all of them faithful; unshared all unfaithful
    boat = next(r for r in out["results"] if r["signal"] == "shared" and r["group"] == "VH:boat")
    assert boat["n"] == 40 and boat["estimate"] == 1.0
    car = next(r for r in out["results"] if r["signal"] == "shared" and r["group"] == "VH:car")
    assert car["status"] == sg.INSUFFICIENT  # never shared on odd rows
    text = CliRunner().invoke(review_group, argv)
    assert text.exit_code == 0 and "candidate signal, association only" in text.output
    bad = CliRunner().invoke(review_group, [*argv, "--signal", "clicks"])
    assert bad.exit_code == 2 and "expected one of" in bad.output
