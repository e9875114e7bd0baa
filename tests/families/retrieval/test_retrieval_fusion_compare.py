"""Reciprocal Rank Fusion (the seed's d3/d2/d1 example) and paired run comparison."""

from __future__ import annotations

import numpy as np
import pytest

from kg_rageval.base.errors import InputError, MissingEvidence
from kg_rageval.families.retrieval import bootstrap_ci, paired_compare, permutation_p, rrf, rrf_runs

DENSE = ["d3", "d7", "d1", "d4", "d2", "d9", "d10"]
SPARSE = ["d2", "d3", "d8", "d1", "d11", "d4", "d6"]


def test_rrf_seed_example():
    fused = rrf([DENSE, SPARSE], k=60)
    assert [d for d, _ in fused[:3]] == ["d3", "d2", "d1"]
    assert round(fused[0][1], 5) == 0.03252  # 1/61 + 1/62
    assert round(fused[1][1], 5) == 0.03178  # 1/65 + 1/61
    assert round(fused[2][1], 5) == 0.03150  # 1/63 + 1/64
    # the four documents in both lists come first; d7 (dense rank 2 only) is fifth
    assert [d for d, _ in fused[:5]] == ["d3", "d2", "d1", "d4", "d7"]


def test_rrf_tie_order_is_deterministic():
    # d_a and d_b tie (rank 1 in one lane each): best rank equal, then lane order -> a first
    assert [d for d, _ in rrf([["b_doc"], ["a_doc"]])] == ["b_doc", "a_doc"]
    # equal score, equal best rank and lane: doc id ascending
    fused = rrf([["x", "y"], ["y", "x"]])
    assert fused[0][1] == fused[1][1] and [d for d, _ in fused] == ["x", "y"]
    with pytest.raises(InputError, match="lane 1: document 'a' is listed more than once"):
        rrf([["a"], ["a", "a"]])
    with pytest.raises(InputError, match="k must be positive"):
        rrf([["a"]], k=0)
    assert rrf_runs({"dense": {"q": DENSE}, "bm25": {"q": SPARSE, "q2": ["z"]}})["q"][:3] == [
        "d3",
        "d2",
        "d1",
    ]


def test_paired_compare_by_hand():
    a = [0.0, 0.5, 1.0, 0.0]
    b = [1.0, 0.5, 1.0, 1.0]
    res = paired_compare(a, b, metric="mrr", n_resamples=2000, seed=1)
    assert res.mean_delta == 0.5 and (res.wins, res.losses, res.ties) == (2, 0, 2)
    # exact sign-flip test with n=4: deltas (1, 0, 0, 1): |mean| >= 0.5 only for the 4 patterns
    # where both nonzero deltas keep the same sign -> 8 of 16
    assert res.p_value == pytest.approx(8 / 16)
    assert 0.0 <= res.ci[0] <= 0.5 <= res.ci[1] <= 1.0
    again = paired_compare(a, b, metric="mrr", n_resamples=2000, seed=1)
    assert again.ci == res.ci  # seeded


def test_permutation_and_bootstrap_against_references():
    rng = np.random.default_rng(0)
    d = rng.normal(0.05, 0.2, 400)
    scipy_stats = pytest.importorskip("scipy.stats")
    ref = scipy_stats.ttest_1samp(d, 0.0).pvalue
    p = permutation_p(d, n_permutations=20000, seed=3)
    assert abs(p - ref) < 0.01  # the randomisation test approximates the t-test at n=400
    lo, hi = bootstrap_ci(d, n_resamples=4000, seed=3)
    se = d.std(ddof=1) / np.sqrt(len(d))
    assert lo == pytest.approx(d.mean() - 1.96 * se, abs=0.005)
    assert hi == pytest.approx(d.mean() + 1.96 * se, abs=0.005)


def test_paired_compare_input_checks():
    with pytest.raises(InputError, match=r"one system only: \['q2'\]"):
        paired_compare({"q1": 1.0, "q2": 0.0}, {"q1": 1.0})
    with pytest.raises(InputError, match="3 values for A but 2 for B"):
        paired_compare([1, 2, 3], [1, 2])
    with pytest.raises(MissingEvidence):
        paired_compare([], [])
    r = paired_compare({"q1": 0.0, "q2": 1.0}, {"q2": 1.0, "q1": 1.0})
    assert r.mean_delta == 0.5 and r.n == 2


def test_compare_runs_pairs_every_judged_query():
    from kg_rageval.families.retrieval.compare import compare_runs

    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"x": 0}}
    run_a = {"q1": {"z": 2.0, "a": 1.0}, "q2": {"b": 1.0}}  # q3 missing: scores 0
    run_b = {"q1": {"a": 2.0, "z": 1.0}, "q2": {"b": 1.0}, "q3": {"c": 1.0}}
    res = compare_runs(qrels, run_a, run_b, metric="mrr")
    assert res.n == 3  # q4 has no relevant gold: not paired
    assert (res.mean_a, res.mean_b) == (pytest.approx(0.5), pytest.approx(1.0))
    assert (res.wins, res.losses, res.ties) == (2, 0, 1)
    # exact sign-flip test: deltas (0.5, 0, 1); |±0.5 ±1|/3 >= 0.5 for 2 of the 4 sign pairs
    assert res.p_value == pytest.approx(4 / 8)
    with pytest.raises(InputError, match="unknown metric"):
        compare_runs(qrels, run_a, run_b, metric="bpref")
