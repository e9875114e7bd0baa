"""N-system comparison (tests equal scipy's and ranx's), corrections, fusion by convex
combination, reranking delta, and the ``score retrieval --qrels`` / ``compare`` CLIs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.cli.main import main
from kg_rageval.families.retrieval import (
    Qrels,
    Run,
    alpha_sweep,
    bootstrap_ci,
    compare_systems,
    compute,
    convex,
    html_section,
    normalise,
    permutation_p,
    render,
    rerank_delta,
)
from kg_rageval.families.retrieval.significance import bonferroni, effect_size, holm


def _systems(seed=1, nq=60):
    rng = np.random.default_rng(seed)
    a = rng.random(nq)
    return {
        "A": {"m": a},
        "B": {"m": np.clip(a + rng.normal(0.05, 0.1, nq), 0, 1)},
        "C": {"m": np.clip(a + rng.normal(0.0, 0.1, nq), 0, 1)},
    }


def test_tests_equal_scipy_on_the_same_arrays():
    from scipy import stats

    s = _systems()
    c = compare_systems(s, n_permutations=2000, n_resamples=500)
    for r in c.rows:
        a, b = s["A"]["m"], s[r.candidate]["m"]
        d = np.round(b - a, 12)  # the deltas are compared at 12 decimals (DELTA_DECIMALS)
        assert r.p["t"] == stats.ttest_1samp(d, 0.0).pvalue
        assert r.p["t"] == pytest.approx(stats.ttest_rel(b, a).pvalue, rel=1e-9)
        assert r.p["wilcoxon"] == stats.wilcoxon(d).pvalue
        assert r.p["permutation"] == permutation_p(d, n_permutations=2000, seed=0)
        assert r.ci == bootstrap_ci(d, n_resamples=500, seed=0)
        assert r.effect == pytest.approx(np.mean(b - a) / np.std(b - a, ddof=1))
        assert (r.wins, r.ties, r.losses) == (int((b > a).sum()), int((b == a).sum()), int((b < a).sum()))
    # Holm over the 2 candidates: the smaller p doubled, the larger kept (monotone)
    ps = sorted(r.p["t"] for r in c.rows)
    adj = sorted(r.p_adj["t"] for r in c.rows)
    assert adj[0] == pytest.approx(min(1, 2 * ps[0])) and adj[1] == pytest.approx(max(adj[0], ps[1]))


def test_holm_and_bonferroni_by_hand():
    p = [0.01, 0.04, 0.03, 0.20]
    assert holm(p) == pytest.approx([0.04, 0.09, 0.09, 0.20])
    assert bonferroni(p) == pytest.approx([0.04, 0.16, 0.12, 0.80])
    assert effect_size(np.array([1.0, 1.0])) is None


def test_identical_systems_are_no_evidence():
    s = {"A": {"m": np.array([0.1, 0.5, 0.9])}, "B": {"m": np.array([0.1, 0.5, 0.9])}}
    r = compare_systems(s).rows[0]
    assert r.p == {"permutation": 1.0, "t": 1.0, "wilcoxon": 1.0} and r.delta == 0 and r.ties == 3


@pytest.mark.slow
def test_ranx_compare_student_p_values_agree():
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(7)
    qrels = {
        f"q{i}": {f"d{j}": int(rng.integers(1, 3)) for j in rng.choice(50, 5, replace=False)}
        for i in range(40)
    }
    runs = {}
    for name in ("r1", "r2"):
        runs[name] = {
            q: {f"d{j}": float(s) for j, s in zip(rng.permutation(50)[:30], rng.random(30))} for q in qrels
        }
    report = ranx.compare(
        ranx.Qrels(qrels),
        [ranx.Run(runs["r1"], name="r1"), ranx.Run(runs["r2"], name="r2")],
        metrics=["ndcg@10", "map"],
        stat_test="student",
    )
    q = Qrels.from_dict(qrels)
    pq = {n: compute(q, Run.from_dict(r, vocab=q.vocab), ["nDCG@10", "AP"]).values for n, r in runs.items()}
    c = compare_systems(
        {n: {"ndcg@10": v["nDCG@10"], "map": v["AP"]} for n, v in pq.items()}, tests=("t",), correction="none"
    )
    for r in c.rows:
        assert r.p["t"] == pytest.approx(report.comparisons[("r1", "r2")][r.measure]["p_value"], rel=1e-9)


def test_renderers_and_html_section():
    c = compare_systems(
        _systems(nq=20),
        n_permutations=500,
        n_resamples=200,
        branches={"T1": ("Branch <one>", np.arange(20) < 10), "T2": ("", np.arange(20) >= 10)},
    )
    js = json.loads(render(c, "json"))
    assert js["baseline"] == "A" and len(js["comparisons"]) == 2 and len(js["branches"]) == 4
    md = render(c, "markdown")
    assert md.startswith("| measure | A | B | C |")
    tex = render(c, "latex")
    assert r"\begin{tabular}" in tex and "p\\_t" in tex
    h = html_section(c)
    assert h.startswith('<section class="comparison">') and "Branch &lt;one&gt;" in h
    assert {b["verdict"] for b in js["branches"]} <= {"improves", "breaks", "no significant change"}
    assert "per ontology branch" in render(c, "text")


# ------------------------------------------------------------------ fusion and reranking


def test_normalise_and_convex_by_hand():
    assert normalise({"a": 2.0, "b": 4.0, "c": 3.0}) == {"a": 0.0, "b": 1.0, "c": 0.5}
    z = normalise({"a": 1.0, "b": 3.0}, "zscore")
    assert z == {"a": -1.0, "b": 1.0}
    f = convex({"a": 2.0, "b": 4.0}, {"b": 10.0, "c": 20.0}, 0.25)
    # a: .25*0 + .75*0 (missing in B -> B's minimum 0); b: .25*1 + .75*0; c: .25*0 (missing) + .75*1
    assert f == {"a": 0.0, "b": 0.25, "c": 0.75}
    with pytest.raises(InputError):
        convex({"a": 1.0}, {"a": 1.0}, 1.5)


def test_alpha_sweep_endpoints_are_the_lanes():
    rng = np.random.default_rng(2)
    qrels = {f"q{i}": {f"d{j}": 1 for j in rng.choice(20, 3, replace=False)} for i in range(30)}
    a = {q: {f"d{j}": float(rng.random()) for j in range(20)} for q in qrels}
    b = {q: {f"d{j}": float(rng.random()) for j in range(20)} for q in qrels}
    res = alpha_sweep(qrels, a, b, measure="nDCG@10")
    vals = {r["alpha"]: r["value"] for r in res["alphas"]}
    assert vals[1.0] == pytest.approx(res["lane_a"]) and vals[0.0] == pytest.approx(res["lane_b"])
    assert res["best"]["value"] == max(vals.values())
    assert res["beats_both_lanes"] == (res["best"]["value"] > max(res["lane_a"], res["lane_b"]))


def test_rerank_delta_identical_candidate_sets():
    qrels = {"q1": {"a": 1}, "q2": {"b": 2}, "q3": {"c": 1}}
    cand = {"q1": {"x": 3.0, "a": 2.0}, "q2": {"b": 3.0, "y": 2.0}, "q3": {"z": 2.0, "c": 1.0}}
    rer = {"q1": {"a": 3.0, "x": 2.0}, "q2": {"y": 3.0, "b": 2.0}, "q3": {"c": 2.0, "z": 1.0}}
    d = rerank_delta(qrels, cand, rer, n_resamples=200)
    rr = d["deltas"]["RR"]
    # RR: q1 .5 -> 1, q2 1 -> .5, q3 .5 -> 1: mean delta (0.5 - 0.5 + 0.5) / 3
    assert rr["mean_delta"] == pytest.approx(1 / 6) and (rr["wins"], rr["losses"]) == (2, 1)
    assert d["deltas"]["P@1"]["mean_delta"] == pytest.approx(1 / 3)
    bad = dict(rer, q3={"c": 2.0, "w": 1.0})
    with pytest.raises(InputError, match="'q3' has different candidate sets"):
        rerank_delta(qrels, cand, bad)
    assert rerank_delta(qrels, cand, bad, allow_mismatch=True, n_resamples=200)["n_mismatched"] == 1


# ------------------------------------------------------------------ CLI


def _cli(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.slow
def test_cli_trec_eval_output_equals_trec_eval(fixtures_dir, capsys):
    d = fixtures_dir / "trec_eval"
    code, out, _ = _cli(
        capsys,
        "score",
        "retrieval",
        "--qrels",
        str(d / "qrels.test"),
        "--run",
        str(d / "results.trunc"),
        "--trec-eval",
        "-q",
        "-M",
        "100",
    )
    assert code == 0
    expected = {tuple(ln.split("\t")[:2]): ln for ln in open(d / "out.test.aqcM").read().splitlines()}
    lines = out.splitlines()
    assert len(lines) > 200
    for ln in lines:
        assert expected[tuple(ln.split("\t")[:2])] == ln


def test_cli_trec_eval_text_refuses_measures_trec_eval_lacks(fixtures_dir, capsys):
    """``--trec-eval`` text printed only ``map`` for ``-m map,ERR@10,P(rel=2)@10`` (exit 0): the
    two measures trec_eval lacks are now refused, named, exit 2; JSON still reports them."""
    d = fixtures_dir / "trec_eval"
    files = ["--qrels", str(d / "qrels.test"), "--run", str(d / "results.trunc"), "--trec-eval"]
    code, out, err = _cli(capsys, "score", "retrieval", *files, "-m", "map,ERR@10,P(rel=2)@10,P_5")
    assert code == 2 and out == ""
    assert "cannot show ERR@10, P(rel=2)@10: trec_eval has no such measure" in err
    code, out, _ = _cli(capsys, "score", "retrieval", *files, "-m", "map,P_5")
    assert code == 0  # trec_eval -c on results.trunc: out.test.aqc
    assert out.splitlines()[1:] == [
        "map                   \tall\t0.1016",
        "P_5                   \tall\t0.2000",
    ]
    code, out, _ = _cli(capsys, "score", "retrieval", *files, "-m", "map,ERR@10", "--format", "json")
    assert code == 0 and set(json.loads(out)["runs"][0]["values"]) == {"AP", "ERR@10"}


def test_cli_default_mode_json_and_measures(fixtures_dir, capsys):
    d = fixtures_dir / "trec_eval"
    code, out, _ = _cli(
        capsys,
        "score",
        "retrieval",
        "--qrels",
        str(d / "qrels.comment.test"),
        "--run",
        str(d / "results.comment.test.gz"),
        "-m",
        "AP,P(rel=2)@10",
        "--format",
        "json",
    )
    assert code == 0
    p = json.loads(out)
    r = p["runs"][0]
    assert p["mode"] == "default" and round(r["values"]["AP"], 4) == 0.2779 and r["n"]["AP"] == 30
    assert r["n_no_gold"] == 1 and "P(rel=2)@10" in r["values"]
    code, _, err = _cli(
        capsys,
        "score",
        "retrieval",
        "--qrels",
        str(d / "qrels.test"),
        "--run",
        str(d / "results.test"),
        "-m",
        "nDCG@0",
    )
    assert code == 2 and "cut-off" in err


def test_cli_rollup_per_node_with_query_nodes(fixtures_dir, tmp_path, capsys):
    d = fixtures_dir / "trec_eval"
    nodes = tmp_path / "nodes.tsv"
    nodes.write_text("301\tTA0006\n302\tT1562\n303\tT1562\n")
    code, out, _ = _cli(
        capsys,
        "score",
        "retrieval",
        "--qrels",
        str(d / "qrels.test"),
        "--run",
        str(d / "results.test"),
        "-m",
        "AP",
        "--ontology",
        str(fixtures_dir / "retrieval" / "attack-mini.tsv"),
        "--query-nodes",
        str(nodes),
        "--format",
        "json",
    )
    assert code == 0
    roll = json.loads(out)["runs"][0]["rollup"]
    assert roll["T1562"]["n"] == 2
    assert roll["T1562"]["metrics"]["AP"]["value"] == pytest.approx((0.4175 + 0.0858) / 2, abs=1e-4)


def test_cli_compare_formats_and_branches(fixtures_dir, tmp_path, capsys):
    d = fixtures_dir / "trec_eval"
    nodes = tmp_path / "nodes.tsv"
    nodes.write_text("301\tTA0006\n302\tT1562\n303\tT1562\n")
    args = [
        "compare",
        "--qrels",
        str(d / "qrels.test"),
        "--run",
        str(d / "results.test"),
        "--run",
        str(d / "results.trunc"),
        "-m",
        "AP",
        "--trec-eval",
        "--permutations",
        "200",
        "--resamples",
        "200",
    ]
    code, out, _ = _cli(
        capsys,
        *args,
        "--format",
        "json",
        "--ontology",
        str(fixtures_dir / "retrieval" / "attack-mini.tsv"),
        "--query-nodes",
        str(nodes),
    )
    assert code == 0
    p = json.loads(out)
    row = p["comparisons"][0]
    assert row["n"] == 3 and row["candidate"] == "results.trunc"
    assert row["mean_base"] == pytest.approx(0.1785, abs=1e-4) and row["mean_cand"] == pytest.approx(
        0.1016, abs=1e-4
    )
    assert p["branches"] and all(b["n"] >= 1 for b in p["branches"])
    for fmt, marker in (("markdown", "| measure |"), ("latex", r"\begin{tabular}"), ("text", "W/T/L")):
        code, out, _ = _cli(capsys, *args, "--format", fmt)
        assert code == 0 and marker in out
    code, _, err = _cli(capsys, "compare", "--qrels", str(d / "qrels.test"), "--run", str(d / "results.test"))
    assert code == 2 and "at least two systems" in err


def test_cli_compare_records(fixtures_dir, tmp_path, capsys):
    d = fixtures_dir / "retrieval"
    src = (d / "seed_metrics.jsonl").read_text().splitlines()
    recs = [json.loads(x) for x in src if x.strip()]
    worse = []
    for r in recs:
        r2 = json.loads(json.dumps(r))
        if isinstance(r2.get("retrieval", {}).get("run"), list):
            r2["retrieval"]["run"] = list(reversed(r2["retrieval"]["run"]))
        worse.append(r2)
    b = tmp_path / "b.jsonl"
    b.write_text("\n".join(json.dumps(r) for r in worse) + "\n")
    code, out, err = _cli(
        capsys,
        "compare",
        "--data",
        str(d / "seed_metrics.jsonl"),
        "--data",
        str(b),
        "--ontology",
        str(d / "attack-mini.tsv"),
        "-m",
        "mrr",
        "--format",
        "json",
        "--permutations",
        "200",
        "--resamples",
        "200",
    )
    assert code == 0, err
    p = json.loads(out)
    assert p["comparisons"][0]["measure"] == "mrr" and p["meta"]["n_paired"] == len(recs)


def test_cli_files_rollup_with_corpus_equals_records_rollup(fixtures_dir, tmp_path, capsys):
    """The same queries as TREC files with a corpus roll up per node exactly as the records
    path does (gold node = deepest common ancestor of the relevant documents' categories)."""
    d = fixtures_dir / "retrieval"
    recs = [json.loads(x) for x in (d / "category_records.jsonl").read_text().splitlines() if x.strip()]
    qrels, run = tmp_path / "q.txt", tmp_path / "r.txt"
    with open(qrels, "w") as fq, open(run, "w") as fr:
        for r in recs:
            sec = r["retrieval"]
            gold = sec["gold"] if isinstance(sec["gold"], dict) else dict.fromkeys(sec["gold"], 1)
            for doc, g in gold.items():
                fq.write(f"{r['id']} 0 {doc} {g}\n")
            for i, e in enumerate(sec.get("run") or []):
                doc, sc = (e, 100 - i) if isinstance(e, str) else (e[0], e[1])
                fr.write(f"{r['id']} Q0 {doc} {i + 1} {sc} sys\n")
    onto, corpus = str(d / "attack-mini.tsv"), str(d / "category_corpus.jsonl")
    code, out, err = _cli(
        capsys,
        "score",
        "retrieval",
        "--qrels",
        str(qrels),
        "--run",
        str(run),
        "-m",
        "RR",
        "--ontology",
        onto,
        "--corpus",
        corpus,
        "--format",
        "json",
    )
    assert code == 0, err
    files_roll = json.loads(out)["runs"][0]["rollup"]
    # records path, without filters/principals (entitlement could remove gold there)
    plain = tmp_path / "plain.jsonl"
    plain.write_text(
        "\n".join(
            json.dumps(
                {
                    "id": r["id"],
                    "retrieval": {"gold": r["retrieval"]["gold"], "run": r["retrieval"].get("run")},
                }
            )
            for r in recs
        )
        + "\n"
    )
    code, out, err = _cli(
        capsys,
        "score",
        "retrieval",
        "--data",
        str(plain),
        "--ontology",
        onto,
        "--corpus",
        corpus,
        "--format",
        "json",
    )
    assert code == 0, err
    rec_roll = json.loads(out)["rollup"]
    assert files_roll and set(files_roll) == set(rec_roll)
    for node, g in rec_roll.items():
        assert files_roll[node]["n"] == g["n"]
        assert files_roll[node]["metrics"]["RR"]["value"] == pytest.approx(
            g["metrics"]["retrieval.mrr"]["value"]
        )


@pytest.mark.parametrize("n, n_resamples, seed", [(1, 7, 1), (5, 500, 0), (60, 2000, 3), (3001, 1500, 2)])
def test_bootstrap_ci_is_the_shared_resampling_bit_for_bit(n, n_resamples, seed):
    # reference: the percentile bootstrap written out with one (n_resamples, n) draw from
    # default_rng(seed) (the stream of results.resample's one-resample-at-a-time draws; with
    # 3001 records bootstrap_ci blocks the resamples, 1332 a block)
    d = np.random.default_rng(n).normal(size=n)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    a = (1 - 0.9) / 2  # 0.04999999999999999, as bootstrap_ci computes it
    lo, hi = np.quantile(d[idx].mean(axis=1), [a, 1 - a])
    assert bootstrap_ci(d, n_resamples=n_resamples, level=0.9, seed=seed) == (float(lo), float(hi))
    if n == 1:
        assert bootstrap_ci(d, n_resamples=n_resamples, seed=seed) == (d[0], d[0])


def test_rounding_noise_is_a_tie_not_a_win_or_a_loss():
    """Per-query values equal up to ~1e-14 (shared prefix sums) are ties: W/T/L, Wilcoxon and t
    are those of the exact deltas (checked against scipy on them), not of the noise."""
    from scipy import stats

    rng = np.random.default_rng(3)
    a = rng.random(60)
    true = np.zeros(60)
    true[:10] = rng.choice([-0.3, -0.1, 0.2, 0.4], 10)  # 10 real differences, 50 ties
    b_exact = a + true
    b = b_exact + np.where(true == 0, rng.choice([-1, 1], 60) * 3e-14, 0.0)  # noise on the ties
    assert ((b - a) != 0).sum() == 60  # the naive count sees no tie at all
    comp = compare_systems({"A": {"m": a}, "B": {"m": b}}, n_resamples=200, n_permutations=2000)
    (row,) = comp.rows
    assert (row.wins, row.ties, row.losses) == (int((true > 0).sum()), 50, int((true < 0).sum()))
    assert row.p["wilcoxon"] == pytest.approx(
        stats.wilcoxon(true).pvalue, rel=1e-12
    )  # 0.2365; the noise gave 0.2396
    assert row.p["t"] == pytest.approx(stats.ttest_rel(b_exact, a).pvalue, rel=1e-9)


def test_a_perfect_ranking_reads_exactly_one_over_many_queries():
    """nDCG per query is a difference of prefix sums shared by all queries, divided by the
    ideal DCG: the rounding once gave 1.0000000000000284 for a perfect ranking."""
    rng = np.random.default_rng(11)
    qrels, run = {}, {}
    for i in range(3000):
        grades = rng.integers(1, 4, int(rng.integers(1, 12)))
        qrels[f"q{i}"] = {f"d{i}-{j}": int(g) for j, g in enumerate(grades)}
        order = np.argsort(-grades, kind="stable")
        run[f"q{i}"] = {f"d{i}-{j}": float(len(grades) - r) for r, j in enumerate(order)}
    q = Qrels.from_dict(qrels)
    v = compute(q, Run.from_dict(run, vocab=q.vocab), ["nDCG@10", "nDCG"]).values
    assert v["nDCG@10"].max() <= 1.0 and v["nDCG"].max() <= 1.0  # was 1.00000000000027
    assert np.abs(v["nDCG"] - 1.0).max() < 1e-12  # the rounding left below 1 is a tie in compare
