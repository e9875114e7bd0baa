"""``compare`` gains Tukey HSD (equal to statsmodels' ``pairwise_tukeyhsd`` and ranx's ``tukey``)
and ``--rerank`` (first stage vs reranked run: identical candidate sets, ΔnDCG@10 / ΔRR / ΔP@1
with paired bootstrap CIs and tests)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kg_rageval.cli.main import main
from kg_rageval.families.retrieval.compare import bootstrap_ci, permutation_p
from kg_rageval.families.retrieval.significance import compare_systems, render, tukey_hsd


def _systems(seed=1, nq=60):
    rng = np.random.default_rng(seed)
    a = rng.random(nq)
    return {
        "A": {"m": a},
        "B": {"m": np.clip(a + rng.normal(0.08, 0.1, nq), 0, 1)},
        "C": {"m": np.clip(a + rng.normal(0.0, 0.1, nq), 0, 1)},
    }


def test_tukey_equals_statsmodels_pairwise_tukeyhsd():
    sm = pytest.importorskip("statsmodels.stats.multicomp", reason="statsmodels is the reference")
    sy = _systems()
    rows = tukey_hsd({k: v["m"] for k, v in sy.items()})
    ref = sm.pairwise_tukeyhsd(np.concatenate([v["m"] for v in sy.values()]), np.repeat(list(sy), 60))
    assert [(r["group1"], r["group2"]) for r in rows] == [("A", "B"), ("A", "C"), ("B", "C")]
    for r, md, p, ci, rej in zip(rows, ref.meandiffs, ref.pvalues, ref.confint, ref.reject):
        assert r["meandiff"] == pytest.approx(md, abs=1e-12)
        assert r["p_adj"] == pytest.approx(p, abs=1e-9)
        assert r["ci"] == pytest.approx(list(ci), abs=1e-9)
        assert r["reject"] == bool(rej)
    # B is ~0.08 better on the same queries: the paired t-test sees it, Tukey (queries not
    # paired, the spread between queries in its error term) does not — documented
    from scipy import stats

    assert stats.ttest_rel(sy["B"]["m"], sy["A"]["m"]).pvalue < 1e-6
    assert not rows[0]["reject"] and rows[0]["p_adj"] > 0.05


def test_compare_systems_tukey_beside_the_paired_tests_and_ranx():
    sy = _systems()
    comp = compare_systems(sy, tests=("permutation", "t", "tukey"), n_resamples=200, n_permutations=500)
    tk = {(r["group1"], r["group2"]): r for r in comp.tukey["m"]}
    rowb = next(r for r in comp.rows if r.candidate == "B")
    assert rowb.p["tukey"] == rowb.p_adj["tukey"] == tk[("A", "B")]["p_adj"]  # not corrected again
    assert rowb.p_adj["t"] != rowb.p["t"]  # the paired tests still are (Holm over 2 candidates)
    assert (
        "Tukey HSD, m" in render(comp) and json.loads(render(comp, "json"))["tukey"]["m"][0]["group2"] == "B"
    )
    ranx_tests = pytest.importorskip("ranx.statistical_tests.tukey_hsd_test", reason="ranx's Tukey")
    ref = ranx_tests.tukey_hsd_test(list(sy), [v["m"] for v in sy.values()], 0.05)
    refp = {(r["control"], r["treatment"]): r["p-value"] for r in ref}
    for (g1, g2), r in tk.items():
        assert r["p_adj"] == pytest.approx(refp[(g1, g2)], abs=1e-12)


def test_tukey_identical_systems_and_too_few_queries():
    rows = tukey_hsd({"a": np.ones(5), "b": np.ones(5)})
    assert rows[0]["p_adj"] == 1.0 and rows[0]["meandiff"] == 0.0 and not rows[0]["reject"]
    from kg_rageval.base.errors import MissingEvidence

    with pytest.raises(MissingEvidence):
        tukey_hsd({"a": np.ones(1), "b": np.zeros(1)})


def _write(path, run):
    path.write_text(
        "".join(f"{q} Q0 {d} {r} {s} x\n" for q, ds in run.items() for r, (d, s) in enumerate(ds.items(), 1))
    )


def test_cli_compare_rerank_by_hand(tmp_path, capsys):
    # q1: a relevant at 2 -> 1; q2: b relevant at 1 -> 2; q3: c at 2 -> 1 (the rerank_delta example)
    qrels = {"q1": {"a": 1}, "q2": {"b": 2}, "q3": {"c": 1}}
    cand = {"q1": {"x": 3.0, "a": 2.0}, "q2": {"b": 3.0, "y": 2.0}, "q3": {"z": 2.0, "c": 1.0}}
    rer = {"q1": {"a": 3.0, "x": 2.0}, "q2": {"y": 3.0, "b": 2.0}, "q3": {"c": 2.0, "z": 1.0}}
    pq, pa, pb = tmp_path / "qrels", tmp_path / "first.trec", tmp_path / "rerank.trec"
    pq.write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()))
    _write(pa, cand)
    _write(pb, rer)
    args = ["compare", "--rerank", "--qrels", str(pq), "--run", str(pa), "--run", str(pb)]
    assert main([*args, "--format", "json", "--resamples", "200", "--permutations", "200"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["measure"]: r for r in out["comparisons"]}
    assert set(rows) == {"nDCG@10", "RR", "P@1"} and out["meta"]["rerank"]["n_mismatched"] == 0
    # RR deltas +0.5, -0.5, +0.5: mean 1/6, CI the seeded bootstrap of those three, exact sign-flip p
    d = np.array([0.5, -0.5, 0.5])
    rr = rows["RR"]
    assert rr["delta"] == pytest.approx(1 / 6) and (rr["wins"], rr["ties"], rr["losses"]) == (2, 0, 1)
    assert rr["ci"] == pytest.approx(list(bootstrap_ci(d, n_resamples=200, seed=0)))
    # every one of the 8 sign patterns has |sum| >= 0.5, i.e. |mean| >= 1/6: exact p = 1
    assert rr["p"]["permutation"] == permutation_p(d) == 1.0
    assert rows["P@1"]["delta"] == pytest.approx(1 / 3)
    # a reranked run that brings in a new document is not a reranking
    _write(pb, dict(rer, q3={"c": 2.0, "w": 1.0}))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "query 'q3' has different candidate sets" in err and err.count("\n") == 1
    assert main([*args, "--allow-mismatch", "--format", "json", "--resamples", "200"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["meta"]["rerank"]["n_mismatched"] == 1 and out["n"]["RR"] == 2
