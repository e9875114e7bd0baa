"""Performance drift (kg_rageval.monitor.performance): intervals, bands, change shape."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from kg_rageval.monitor import performance as perf
from kg_rageval.monitor.traffic import TrafficRow

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def rows_for(window: str, k: int, n: int, branch: str = "B1") -> list[TrafficRow]:
    return [
        TrafficRow(f"{window}-{branch}-{i}", T0, window, branch, ("X",), feedback={"regenerated": i < k})
        for i in range(n)
    ]


def test_wilson_matches_statsmodels():
    sm = pytest.importorskip("statsmodels.stats.proportion", reason="statsmodels is a dev reference")
    cell = perf.RateCell("w", "B1", "regeneration_rate", 7, 40)
    lo, hi = sm.proportion_confint(7, 40, alpha=0.05, method="wilson")
    assert cell.ci == pytest.approx((lo, hi), abs=1e-12)
    # worked by hand: p=0.175, z=1.959964: centre 0.2028..., half 0.1197...
    assert cell.ci[0] == pytest.approx(0.08747, abs=1e-4)


def test_band_is_exact_binomial_region_with_bonferroni():
    from scipy.stats import binom

    lo, hi = perf.binomial_band(200, 0.1, 0.01)
    assert binom.cdf(lo - 1, 200, 0.1) <= 0.005 < binom.cdf(lo, 200, 0.1)
    assert binom.sf(hi, 200, 0.1) <= 0.005 < binom.sf(hi - 1, 200, 0.1)
    rows = rows_for("w0", 20, 200) + rows_for("w1", 21, 200) + rows_for("w2", 40, 200) + rows_for("w3", 3, 10)
    cells = perf.rate_cells(rows, "regeneration_rate")
    stated = perf.apply_bands(cells, ["w0"], budget=0.05)
    assert stated["per_window_alpha"] == pytest.approx(0.05 / 3)
    assert "Bonferroni over 3" in stated["correction"]
    st = {w: c.status for (w, _), c in cells.items()}
    assert st == {"w0": "reference", "w1": "ok", "w2": "above band", "w3": perf.INSUFFICIENT}


def test_false_alarm_rate_on_no_shift_windows_within_budget():
    rng = np.random.default_rng(7)
    runs, fired = 300, 0
    for _ in range(runs):
        rows = rows_for("w00", int(rng.binomial(2000, 0.1)), 2000)
        for w in range(1, 11):
            rows += rows_for(f"w{w:02d}", int(rng.binomial(300, 0.1)), 300)
        cells = perf.rate_cells(rows, "regeneration_rate")
        perf.apply_bands(cells, ["w00"], budget=0.05)
        fired += any(c.status.endswith("band") for c in cells.values())
    # the pooled reference is estimated, so the budget is approximate; far from 1 - 0.95**10 = 0.40
    assert fired / runs < 0.12


def _series(ps, n=2000):
    rows = rows_for("r", int(0.1 * 4000), 4000)
    for t, p in enumerate(ps):
        rows += rows_for(f"t{t:02d}", round(p * n), n)
    return rows


@pytest.mark.parametrize(
    ("ps", "shape"),
    [
        ([0.1] * 6 + [0.16] * 6, "sudden"),
        ([0.1 + 0.006 * t for t in range(12)], "gradual"),
    ],
)
def test_change_shape_tells_sudden_from_gradual(ps, shape):
    rep = perf.performance_report(_series(ps), ["r"], rates=["regeneration_rate"], by="all")
    ch = rep["regeneration_rate"]["change"]["(all)"]
    assert ch["signal"] is not None
    assert ch["shape"] == shape
    assert "does not prove its cause" in ch["note"]
    if shape == "sudden":
        assert ch["change_window"] == "t06"


def test_no_change_and_insufficient_reference():
    rep = perf.performance_report(_series([0.1] * 8), ["r"], rates=["regeneration_rate"], by="all")
    assert rep["regeneration_rate"]["change"]["(all)"]["shape"] == "no change detected"
    rep = perf.performance_report(
        rows_for("r", 1, 5) + rows_for("t", 1, 50), ["r"], rates=["regeneration_rate"]
    )
    assert rep["regeneration_rate"]["change"]["B1"]["status"] == perf.INSUFFICIENT


def test_faithfulness_from_judgment_and_review():
    def row(rec):
        return TrafficRow("x", T0, "w", "B", (), record=rec)

    judged = {"answer": {"judgment": {"claims": ["a", "b"], "supported": ["a", "b"], "unsupported": []}}}
    half = {"answer": {"judgment": {"claims": ["a", "b"], "supported": ["a"], "unsupported": ["b"]}}}
    assert perf.faithful(row(judged)) is True
    assert perf.faithful(row(half)) is False
    assert perf.faithful(row({**half, "review": {"faithful": True}})) is True
    assert perf.faithful(row({"answer": {}})) is None


def test_predictive_band_carries_the_reference_error():
    """Beta-binomial predictive band (Jeffreys) against scipy, wider than the plug-in binomial
    band of the same counts, and tending to it as the reference grows."""
    from scipy.stats import betabinom

    d = betabinom(100, 10.5, 90.5)
    assert perf.predictive_band(100, 10, 100, 0.01) == (int(d.ppf(0.005)), int(d.isf(0.005)))
    small = perf.predictive_band(100, 10, 100, 0.01)
    plug = perf.binomial_band(100, 0.1, 0.01)
    assert small[0] <= plug[0] and small[1] > plug[1]
    assert perf.predictive_band(100, 100_000, 1_000_000, 0.01) == plug
