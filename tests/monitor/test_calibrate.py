"""Alarm calibration on simulated streams with known shifts (kg_rageval.monitor.calibrate)."""

from __future__ import annotations

import pytest

from kg_rageval.monitor.calibrate import calibrate, wilson


def test_no_shift_alarms_at_most_alpha_and_a_mean_shift_is_detected():
    r = calibrate(trials=200, n=20, dim=3, branches=2, shift=1.0, n_permutations=50, seed=11)
    # 200 trials: alpha 0.05 plus 3 standard errors (sqrt(.05 * .95 / 200) = 0.0154)
    assert r["false_alarm_rate"] <= 0.05 + 0.046
    assert r["power"] >= 0.9 and r["detected_by"]["mmd:B0"] == r["detections"]
    # the unshifted branch alarms beside it at about its corrected level (not 0: its own errors)
    assert r["detected_by"].get("mmd:B1", 0) <= 0.1 * r["trials"]


def test_branch_mix_shift_is_detected_without_an_embedding_shift():
    r = calibrate(trials=60, n=40, dim=2, branches=2, shift=0.0, mix_shift=0.5, n_permutations=20, seed=2)
    assert r["power"] >= 0.9 and r["detected_by"].get("branch_mix:(all)", 0) >= 54


def test_wilson_interval_equals_statsmodels():
    # statsmodels.stats.proportion.proportion_confint(10, 200, method="wilson")
    assert wilson(10, 200) == (pytest.approx(0.027382645600763922), pytest.approx(0.089578148138776))
