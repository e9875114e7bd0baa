"""Drift tests (kg_rageval.monitor.drift) against scipy, statsmodels and alibi-detect."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chi2_contingency

from kg_rageval.base.errors import ConfigError
from kg_rageval.monitor.drift import (
    OTHER,
    adjust,
    binned_divergence,
    branch_mix_test,
    classifier_test,
    mmd_test,
    new_concept_counts,
    new_concept_test,
)

DATA = Path(__file__).parent / "data" / "alibi_mmd.npz"

# From benchmarks/monitor/alibi_reference.py (alibi-detect 0.13.0, torch 2.13.0+cpu, MMDDrift
# backend="pytorch", n_permutations=100): (p_val, mmd2, sigma) per case.
ALIBI = {
    "noshift": (0.800000011920929, -0.011404885332593873, 1.6261258125305176),
    "shift": (0.3700000047683716, 0.0019325550829105698, 1.7529691457748413),
    "sigma": (0.0, 0.06342496760754412, 1.5),
}


@pytest.mark.parametrize("name", sorted(ALIBI))
def test_mmd_equals_alibi_detect_on_its_permutations(name):
    d = np.load(DATA)
    p_val, mmd2, sigma = ALIBI[name]
    t = mmd_test(
        d[f"{name}_x_ref"],
        d[f"{name}_x"],
        sigma=1.5 if name == "sigma" else None,
        permutations=d[f"{name}_perms"],
    )
    assert t.statistic == pytest.approx(mmd2, rel=1e-12, abs=1e-15)
    assert t.p_value == pytest.approx(p_val, abs=1e-7)
    assert t.details["sigma"] == pytest.approx(sigma, rel=1e-7)


def test_mmd_against_alibi_detect_directly():
    alibi = pytest.importorskip(
        "alibi_detect.cd", reason="alibi-detect lives in a side venv (benchmarks/monitor)"
    )
    torch = pytest.importorskip("torch", reason="alibi-detect's pytorch backend")
    rng = np.random.default_rng(7)
    x_ref, x = rng.normal(size=(25, 3)), rng.normal(size=(20, 3)) + 0.3
    det = alibi.MMDDrift(x_ref, backend="pytorch", n_permutations=50, device="cpu")
    torch.manual_seed(5)
    p_val, mmd2, _ = det._detector.score(x)
    torch.manual_seed(5)
    perms = np.stack([torch.randperm(45).numpy() for _ in range(50)])
    t = mmd_test(x_ref, x, permutations=perms)
    assert (t.statistic, t.p_value) == (pytest.approx(mmd2, rel=1e-12), pytest.approx(p_val, abs=1e-7))


def test_mmd_seeded_detects_a_mean_shift_and_needs_evidence():
    rng = np.random.default_rng(0)
    x_ref = rng.normal(size=(60, 5))
    a = mmd_test(x_ref, rng.normal(size=(60, 5)) + 1.0, seed=1)
    b = mmd_test(x_ref, rng.normal(size=(60, 5)) + 1.0, seed=1)
    assert a.p_value == 0.0 and a.statistic > 0.1
    assert mmd_test(x_ref, x_ref[:5]).p_value is None  # 5 rows: insufficient evidence
    c = mmd_test(x_ref, x_ref[:30] + 0, seed=4)
    assert c.p_value > 0.05 and b.statistic != a.statistic


def test_branch_mix_equals_scipy_and_merges_sparse_cells():
    ref = {"A": 50, "B": 30, "C": 20, "D": 2, "E": 1}
    cur = {"A": 30, "B": 40, "C": 25, "D": 3}
    t = branch_mix_test(ref, cur)
    # D+E (3 and 3 rows) still expect < 5 in the reference, so C (the next smallest) joins them
    assert t.details["categories"] == [OTHER, "A", "B"]
    assert t.details["merged_into_other"] == ["C", "D", "E"]
    table = np.array([[23, 50, 30], [28, 30, 40]])
    stat, p, dof, _ = chi2_contingency(table, correction=False)
    assert (t.statistic, t.p_value, t.details["dof"]) == (pytest.approx(stat), pytest.approx(p), dof)
    # (other) with expected < 5 after merging takes the next-smallest branch too
    t2 = branch_mix_test({"A": 40, "B": 12, "D": 1}, {"A": 40, "B": 9, "D": 2})
    assert t2.details["categories"] == [OTHER, "A"] and t2.details["merged_into_other"] == ["B", "D"]
    assert branch_mix_test({"A": 3}, {"A": 4}).p_value is None


def test_new_concept_equals_statsmodels_proportions_ztest():
    from statsmodels.stats.proportion import proportions_ztest

    counts = new_concept_counts({("B1", "c1"): 40, ("B1", "c9"): 10, ("(NIL)", "(NIL)"): 5}, {"c1"})
    assert counts == {"B1": (10, 50), "(NIL)": (5, 5)}
    t = new_concept_test(10, 100, 25, 110)
    z, p = proportions_ztest([25, 10], [110, 100])
    assert (t.statistic, t.p_value) == (pytest.approx(z), pytest.approx(p))
    assert new_concept_test(0, 10, 0, 10).p_value is None


def test_holm_and_bh_equal_statsmodels():
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03, 0.2, 0.001, 0.04]
    assert adjust(p, "holm") == pytest.approx(multipletests(p, method="holm")[1].tolist())
    assert adjust(p, "bh") == pytest.approx(multipletests(p, method="fdr_bh")[1].tolist())
    with pytest.raises(ConfigError, match="'holm' or 'bh'"):
        adjust(p, "bonferonni")


def test_classifier_two_sample_auc_and_ci():
    rng = np.random.default_rng(3)
    ref = rng.normal(size=(80, 4))
    shifted = classifier_test(ref, rng.normal(size=(80, 4)) + 1.0, seed=0)
    same = classifier_test(ref, rng.normal(size=(80, 4)), seed=0)
    assert shifted.statistic > 0.85 and shifted.details["ci_low"] > 0.5 and shifted.p_value < 1e-6
    assert same.details["ci_low"] < 0.5 < same.details["ci_high"]


def test_binned_divergence_over_declared_bins_only():
    r = binned_divergence([1, 2, 3, 12], [12, 13, 2, 25], [0, 10, 20, 30], name="query_length")
    p, q = np.array([0.75, 0.25, 1e-4]), np.array([0.25, 0.5, 0.25])
    assert r["psi"] == pytest.approx(float(np.sum((q - p) * np.log(q / p))))
    assert r["kl"] == pytest.approx(float(np.sum(q * np.log(q / p))))
    with pytest.raises(ConfigError, match="never over raw embedding coordinates"):
        binned_divergence(np.zeros((3, 2)), np.zeros((3, 2)), [0, 1])
    with pytest.raises(ConfigError, match="declared bin edges"):
        binned_divergence([1.0], [2.0], None)
