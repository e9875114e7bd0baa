"""Judge contracts, calibration against human labels (κ vs scikit-learn), PPI."""

from __future__ import annotations

import numpy as np
import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.families.judges import (
    AnswerCorrectness,
    CitationSupport,
    PairwisePreference,
    RefusalCorrectness,
    classical_mean,
    parse_verdict,
    ppi_mean,
    score_judges,
    wilson,
)

# ------------------------------------------------------------------ contracts
VALID = [
    (PairwisePreference, {"verdict": "B", "confidence": 0.8, "rationale": "B cites"}),
    (PairwisePreference, {"verdict": "tie"}),
    (CitationSupport, {"verdict": "supported", "claim": "c", "evidence": "Paris is the capital"}),
    (CitationSupport, {"verdict": "not_supported", "claim": "c"}),
    (RefusalCorrectness, {"verdict": "correct", "answerable": False, "refused": True}),
    (RefusalCorrectness, {"verdict": "incorrect", "answerable": True, "refused": True}),
    (AnswerCorrectness, {"verdict": "correct", "score": 1.0}),
    (AnswerCorrectness, {"verdict": "partially_correct", "score": 0.5, "missing_facts": ["date"]}),
    (AnswerCorrectness, {"verdict": "unscorable", "rationale": "no reference given"}),
]
INVALID = [
    (PairwisePreference, {"verdict": "C"}, "verdict"),
    (PairwisePreference, {"verdict": "A", "confidence": 1.5}, "confidence"),
    (PairwisePreference, {"verdict": "A", "extra": 1}, "extra"),
    (PairwisePreference, {"verdict": "unscorable"}, "needs a rationale"),
    (CitationSupport, {"verdict": "supported", "claim": "c"}, "must quote its evidence"),
    (CitationSupport, {"verdict": "supported", "claim": " ", "evidence": "x"}, "claim is empty"),
    (RefusalCorrectness, {"verdict": "correct", "answerable": True, "refused": True}, "contradicts"),
    (RefusalCorrectness, {"verdict": "correct"}, "needs both"),
    (AnswerCorrectness, {"verdict": "correct", "wrong_facts": ["x"]}, "lists missing or wrong"),
    (AnswerCorrectness, {"verdict": "incorrect"}, "must name a missing or wrong fact"),
    (
        AnswerCorrectness,
        {"verdict": "partially_correct", "score": 1.0, "missing_facts": ["x"]},
        "contradicts",
    ),
    (AnswerCorrectness, {"verdict": "correct", "score": 0.9}, "contradicts"),
]


@pytest.mark.parametrize("schema,obj", VALID)
def test_valid_verdicts(schema, obj):
    out = parse_verdict(schema, obj)
    assert out.error is None and out.status == ("unscorable" if obj["verdict"] == "unscorable" else "scored")


@pytest.mark.parametrize("schema,obj,why", INVALID)
def test_invalid_verdicts_name_the_broken_rule(schema, obj, why):
    out = parse_verdict(schema, obj)
    assert out.status == "invalid" and why in out.error and out.label is None


def test_raw_text_and_semantic_context():
    raw = 'Sure:\n```json\n{"verdict": "supported", "claim": "c", "citation": "d1", "evidence": "PARIS is  the capital"}\n```'
    ok = parse_verdict(
        "citation_support", raw, context={"passage": "Paris is the capital of France.", "citation": "d1"}
    )
    assert ok.label == "supported"
    bad = parse_verdict("citation_support", raw, context={"passage": "Lyon is a city."})
    assert "not a quote from the cited passage" in bad.error
    other = parse_verdict("citation_support", raw, context={"citation": "d2"})
    assert "is not the passage judged" in other.error
    assert parse_verdict("pairwise", "no json here").error == "judge output holds no JSON object"
    assert "not valid JSON" in parse_verdict("pairwise", "{verdict: A}").error
    assert "must be an object" in parse_verdict("pairwise", [1]).error


# ------------------------------------------------------------------ calibration
def _calibration_records(judge_labels, human_labels, rubric="answer_correctness", node=None):
    recs = []
    for i, (j, h) in enumerate(zip(judge_labels, human_labels)):
        out = {"verdict": j}
        if j in ("incorrect", "partially_correct"):
            out["missing_facts"] = ["x"]
        rec = {"id": f"r{i}", "judges": [{"rubric": rubric, "judge": "j1", "output": out, "human": h}]}
        if node:
            rec["gold_node"] = node[i]
        recs.append(rec)
    return recs


def test_kappa_and_rates_match_sklearn_and_hand_counts():
    cohen_kappa_score = pytest.importorskip(
        "sklearn.metrics", reason="the scikit-learn reference needs the dev install"
    ).cohen_kappa_score

    rng = np.random.default_rng(3)
    labels = ["correct", "partially_correct", "incorrect"]
    human = rng.choice(labels, 120, p=[0.5, 0.2, 0.3])
    judge = np.where(rng.random(120) < 0.7, human, rng.choice(labels, 120))
    ev = score_judges(None, _calibration_records(judge.tolist(), human.tolist()))["judge_calibration"]
    m = ev.metrics()
    assert m["answer_correctness.cohen_kappa"].value == m["cohen_kappa"].value
    assert m["refusal.cohen_kappa"].missing == "no items labelled by both raters"
    assert m["cohen_kappa"].value == pytest.approx(cohen_kappa_score(judge, human))
    assert m["accuracy"].value == pytest.approx(float(np.mean(judge == human)))
    ja, ha = judge == "correct", human == "correct"
    assert m["approval_kappa"].value == pytest.approx(cohen_kappa_score(ja, ha))
    fa = int(np.sum(ja & ~ha))
    assert (m["false_approval_rate"].numerator, m["false_approval_rate"].denominator) == (
        fa,
        int(np.sum(~ha)),
    )
    assert m["false_rejection_rate"].value == pytest.approx(np.sum(~ja & ha) / np.sum(ha))
    lo, hi = wilson(fa, int(np.sum(~ha)))
    assert m["false_approval_rate"].ci == (lo, hi)
    assert m["false_approval_rate_wilson_high"].value == hi


def test_wilson_against_statsmodels():
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    proportion_confint = proportion.proportion_confint

    for k, n in [(0, 10), (3, 10), (10, 10), (17, 250)]:
        assert wilson(k, n) == pytest.approx(proportion_confint(k, n, alpha=0.05, method="wilson"))
    assert wilson(0, 0) is None


def test_invalid_unscorable_and_failed_are_counted_never_scored():
    recs = [
        {
            "id": "a",
            "judges": [
                {
                    "rubric": "refusal",
                    "output": {"verdict": "correct", "answerable": True, "refused": False},
                    "human": "correct",
                }
            ],
        },
        {"id": "b", "judges": [{"rubric": "refusal", "output": "garbage", "human": "correct"}]},
        {
            "id": "c",
            "judges": [
                {
                    "rubric": "refusal",
                    "output": {"verdict": "unscorable", "rationale": "?"},
                    "human": "incorrect",
                }
            ],
        },
        {"id": "d", "judges": [{"rubric": "refusal", "error": "timed out after 60 s", "human": "incorrect"}]},
    ]
    ev = score_judges(None, recs)["judge_calibration"]
    m = ev.metrics()
    assert [m[k].value for k in ("invalid_output_rate", "unscorable_rate", "failed_call_rate")] == [0.25] * 3
    assert m["accuracy"].denominator == 1 and m["false_approval_rate"].value is None
    assert m["false_approval_rate"].missing == "no item a human rejected"
    assert [r["status"] for r in ev.rows()] == ["scored", "invalid", "unscorable", "failed"]


def test_bool_human_labels_count_for_approval_only():
    recs = [
        {
            "id": str(i),
            "judges": [
                {
                    "rubric": "citation_support",
                    "citation": "d",
                    "output": {"verdict": v, "claim": "c", "evidence": "e"}
                    if v != "not_supported"
                    else {"verdict": v, "claim": "c"},
                    "human": h,
                }
            ],
        }
        for i, (v, h) in enumerate(
            [
                ("supported", True),
                ("supported", False),
                ("not_supported", False),
                ("partially_supported", True),
            ]
        )
    ]
    m = score_judges(None, recs)["judge_calibration"].metrics()
    assert m["accuracy"].value is None  # no label from the rubric's set
    assert (m["false_approval_rate"].numerator, m["false_approval_rate"].denominator) == (1, 2)
    assert (m["false_rejection_rate"].numerator, m["false_rejection_rate"].denominator) == (1, 2)
    assert m["approval_accuracy"].value == 0.5


def test_rollup_per_branch(vehicles):
    recs = _calibration_records(
        ["correct", "correct", "incorrect", "correct"],
        ["correct", "incorrect", "incorrect", "incorrect"],
        node=["sedan", "sedan", "submarine", "submarine"],
    )
    ev = score_judges(None, recs)["judge_calibration"]
    roll = ev.rollup(vehicles)
    assert roll["car"]["metrics"]["false_approval_rate"].value == 1.0
    assert roll["boat"]["metrics"]["false_approval_rate"].value == 0.5
    assert roll["vehicle"]["metrics"]["false_approval_rate"].value == pytest.approx(2 / 3)


def test_bad_judges_section_is_an_input_error():
    with pytest.raises(InputError, match=r"judges\[0\]\.rubric"):
        score_judges(None, [{"id": "a", "judges": [{"rubric": "vibes", "output": {}}]}])
    with pytest.raises(InputError, match=r"judges\[0\]\.human"):
        score_judges(
            None, [{"id": "a", "judges": [{"rubric": "pairwise", "output": {"verdict": "A"}, "human": "C"}]}]
        )
    with pytest.raises(InputError, match=r"judges\[0\]\.lengths: expected"):
        score_judges(None, [{"id": "a", "judges": [{"rubric": "pairwise", "output": {}, "lengths": [1, 2]}]}])
    with pytest.raises(InputError, match=r"judges\[0\]\.citation: expected a string"):
        score_judges(
            None, [{"id": "a", "judges": [{"rubric": "citation_support", "output": {}, "citation": ["d"]}]}]
        )
    with pytest.raises(InputError, match="needs 'output'"):
        score_judges(None, [{"id": "a", "judges": [{"rubric": "pairwise"}]}])


# ------------------------------------------------------------------ pairwise: position, length, two judges
def _pair(rid, judge, order, shown, human="A", lengths=None):
    e = {"rubric": "pairwise", "judge": judge, "order": order, "output": {"verdict": shown}, "human": human}
    if lengths:
        e["lengths"] = lengths
    return e


def test_position_bias_after_swap():
    recs = [
        # consistent: prefers A in AB, and in BA (A shown second) says "B"
        {"id": "p1", "judges": [_pair("p1", "j", "AB", "A"), _pair("p1", "j", "BA", "B")]},
        # position-biased: always picks the first shown
        {"id": "p2", "judges": [_pair("p2", "j", "AB", "A"), _pair("p2", "j", "BA", "A")]},
        {"id": "p3", "judges": [_pair("p3", "j", "AB", "A"), _pair("p3", "j", "BA", "A")]},
        {"id": "p4", "judges": [_pair("p4", "j", "AB", "tie")]},  # one order only: not a swapped pair
    ]
    out = score_judges(None, recs)
    m = out["position_bias"].metrics()
    assert m["position_consistency"].value == pytest.approx(1 / 3)
    assert (m["first_position_win_rate"].numerator, m["first_position_win_rate"].denominator) == (5, 6)
    cal = out["judge_calibration"].metrics()  # BA verdicts mapped back: p1 both A; p2/p3 AB→A, BA→B
    assert cal["accuracy"].denominator == 7
    assert cal["accuracy"].numerator == 4


def test_length_view_and_two_judge_agreement():
    L = {"A": 300, "B": 100}
    recs = [
        {
            "id": f"q{i}",
            "judges": [
                _pair("", "j1", "AB", v1, human=h, lengths=L),
                _pair("", "j2", "AB", v2, human=h, lengths=L),
            ],
        }
        for i, (v1, v2, h) in enumerate([("A", "A", "B"), ("A", "B", "B"), ("B", "B", "B"), ("A", "A", "A")])
    ]
    from kg_rageval.base.errors import ConfigError

    with pytest.raises(ConfigError, match=r"verdicts of 2 judges \(j1, j2\); choose the one to calibrate"):
        score_judges(None, recs)
    out = score_judges(None, recs, judge="j1")
    assert list(out) == ["judge_calibration", "position_bias", "agreement"]
    assert out["agreement"].meta["second_judge"] == "j2"
    m1 = out["judge_calibration"].metrics()
    assert m1["judge_longer_win_rate"].value == 0.75 and m1["human_longer_win_rate"].value == 0.25
    assert m1["length_balanced_win_rate"].missing == "no pair where B is longer"
    cohen_kappa_score = pytest.importorskip(  # the hand counts above run on a core install too
        "sklearn.metrics", reason="the scikit-learn reference needs the dev install"
    ).cohen_kappa_score

    ag = out["agreement"].metrics()
    assert ag["judge_agreement"].value == 0.75
    assert ag["judge_agreement_kappa"].value == pytest.approx(
        cohen_kappa_score(["A", "A", "B", "A"], ["A", "B", "B", "A"])
    )
    assert list(out["judge_calibration"].breakdown("length_bin")) == ["A longer"]
    with pytest.raises(ConfigError, match="second_judge='j9' gave no verdict"):
        score_judges(None, recs, judge="j1", second_judge="j9")


# ------------------------------------------------------------------ PPI
def test_ppi_closed_form_and_ppi_py():
    rng = np.random.default_rng(0)
    y = rng.binomial(1, 0.6, 80).astype(float)
    yh = np.where(rng.random(80) < 0.85, y, 1 - y)
    yu = rng.binomial(1, 0.65, 2000).astype(float)
    r = ppi_mean(y, yh, yu, level=0.9)
    est = yu.mean() + (y - yh).mean()
    se = np.sqrt(yu.var() / 2000 + (y - yh).var() / 80)
    from scipy.stats import norm

    assert r.estimate == pytest.approx(est) and r.se == pytest.approx(se)
    assert (r.low, r.high) == (
        pytest.approx(est - norm.ppf(0.95) * se),
        pytest.approx(est + norm.ppf(0.95) * se),
    )
    ppi_py = pytest.importorskip("ppi_py")
    lo, hi = ppi_py.ppi_mean_ci(y, yh, yu, alpha=0.1, lam=1)
    assert (r.low, r.high) == (pytest.approx(float(lo[0])), pytest.approx(float(hi[0])))
    auto = ppi_mean(y, yh, yu, level=0.9, lam="auto")
    lo2, hi2 = ppi_py.ppi_mean_ci(y, yh, yu, alpha=0.1)
    assert (auto.low, auto.high) == (
        pytest.approx(float(lo2[0]), rel=1e-6),
        pytest.approx(float(hi2[0]), rel=1e-6),
    )
    c = classical_mean(y, level=0.9)
    assert c.estimate == pytest.approx(y.mean()) and c.se == pytest.approx(y.std() / np.sqrt(80))


def test_ppi_coverage_by_simulation():
    """200 simulations with known truth: the 95 % interval covers θ about 95 % of the time
    (binomial sd at 200 draws is 1.5 points: accept 90-99 %), while the judge alone is biased."""
    rng = np.random.default_rng(42)
    theta, covered, naive_cov = 0.7, 0, 0
    for _ in range(200):

        def draw(n):
            y = rng.binomial(1, theta, n).astype(float)
            # a biased judge: approves 30 % of the rejected items, misses 5 % of the approved
            yh = np.where(y == 1, rng.random(n) > 0.05, rng.random(n) < 0.3).astype(float)
            return y, yh

        y, yh = draw(100)
        _, yu = draw(3000)
        r = ppi_mean(y, yh, yu)
        covered += r.low <= theta <= r.high
        m, s = yu.mean(), yu.std() / np.sqrt(3000)
        naive_cov += m - 1.96 * s <= theta <= m + 1.96 * s
    assert 0.90 <= covered / 200 <= 0.99
    assert naive_cov / 200 < 0.05  # the judge-only interval misses the truth


def test_ppi_in_the_calibration_family_matches_arrays():
    rng = np.random.default_rng(5)
    recs, y, yh, yu = [], [], [], []
    for i in range(300):
        h = rng.random() < 0.6
        j = h if rng.random() < 0.8 else not h
        labelled = i < 60
        e = {
            "rubric": "refusal",
            "output": {"verdict": "correct" if j else "incorrect", "answerable": True, "refused": not j},
        }
        if labelled:
            e["human"] = "correct" if h else "incorrect"
            y.append(float(h)), yh.append(float(j))
        else:
            yu.append(float(j))
        recs.append({"id": str(i), "judges": [e]})
    m = score_judges(None, recs)["judge_calibration"].metrics()
    r = ppi_mean(y, yh, yu)
    assert m["ppi_approval_rate"].value == pytest.approx(r.estimate)
    assert (m["ppi_ci_low"].value, m["ppi_ci_high"].value) == (pytest.approx(r.low), pytest.approx(r.high))
    few = score_judges(None, recs[:1] + recs[100:])["judge_calibration"].metrics()
    assert few["ppi_approval_rate"].missing == "PPI needs at least 2 human-labelled items, has 1"


@pytest.mark.slow
def test_audit_gates_on_judge_calibration_and_ppi(tmp_path, vehicles):
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.runner import run_audit

    judge = ["correct"] * 8 + ["incorrect"] * 2 + ["correct"] * 10
    human = ["correct"] * 7 + ["incorrect"] * 3 + [None] * 10
    recs = _calibration_records(judge, human, node=["sedan"] * 10 + ["submarine"] * 10)
    recs.append({"id": "broken", "judges": [{"rubric": "answer_correctness", "judge": "j1", "output": "??"}]})
    cfg = config_from_mapping(
        {
            "ontology": "x.csv",
            "records": "r.jsonl",
            "families": ["judge"],
            "missing_runs": {"budget": 0.1},
            "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
            "gates": [
                "judge.false_approval_rate <= 0.05",
                "judge.accuracy >= 0.8",
                "judge.ppi_ci_low >= 0.5",
                "judge.invalid_output_rate <= 0.1",
                "false_approval_rate[node:car] <= 0.5",
                "judge.answer_correctness.accuracy >= 0.8",
                "judge.position_consistency >= 0.9",
            ],
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False, inputs={"ontology": vehicles, "records": recs, "paths": {}})
    by = {str(r.gate): r for r in res.gate_results}
    assert by["judge.false_approval_rate <= 0.05"].status == "fail"
    assert by["judge.false_approval_rate <= 0.05"].observed == pytest.approx(1 / 3)
    assert by["judge.accuracy >= 0.8"].observed == pytest.approx(0.9)
    from kg_rageval.families.judges import ppi_mean

    r = ppi_mean([1] * 7 + [0] * 3, [1] * 8 + [0] * 2, [1] * 10)
    assert by["judge.ppi_ci_low >= 0.5"].observed == pytest.approx(r.low)
    assert by["judge.invalid_output_rate <= 0.1"].observed == pytest.approx(1 / 21)
    assert by["false_approval_rate[node:car] <= 0.5"].status == "pass"
    assert by["judge.answer_correctness.accuracy >= 0.8"].observed == pytest.approx(0.9)
    assert by["judge.position_consistency >= 0.9"].status == "missing"
    assert "no pair judged in both orders" in by["judge.position_consistency >= 0.9"].reason
    assert res.counts["families"]["judge"]["missing_runs"] == 1  # the invalid output counts as a missing run
    assert res.manifest["families"]["judge"]["status"] == "ran"


def test_no_entries_give_missing_evidence_not_an_error():
    out = score_judges(None, [{"id": "a", "judges": []}])
    m = out["judge_calibration"].metrics()
    assert m["false_approval_rate"].value is None and m["accuracy"].missing == "no judge outputs"


def test_pooled_label_metrics_need_one_rubric():
    recs = _calibration_records(["correct", "incorrect"], ["correct", "correct"])
    recs.append(
        {
            "id": "x",
            "judges": [{"rubric": "pairwise", "judge": "j1", "output": {"verdict": "A"}, "human": "B"}],
        }
    )
    m = score_judges(None, recs)["judge_calibration"].metrics()
    assert m["accuracy"].missing.startswith("pools the rubrics pairwise, answer_correctness")
    assert m["answer_correctness.accuracy"].value == 0.5 and m["pairwise.accuracy"].value == 0.0
    assert (m["false_approval_rate"].numerator, m["false_approval_rate"].denominator) == (1, 1)


def test_declared_metrics_are_produced():
    from kg_rageval.families.judges.contracts import RUBRICS
    from kg_rageval.scoring import REGISTRY
    from kg_rageval.scoring.quality import RUBRIC_NAMES

    assert set(RUBRIC_NAMES) == set(RUBRICS)
    out = score_judges(None, _calibration_records(["correct"], ["correct"]))
    produced = {f"judge.{k}" for ev in out.values() for k in ev.metrics()}
    sc = REGISTRY["judge"]
    assert produced == {f"judge.{m.name}" for m in sc.metrics}
    assert {m.member for m in sc.metrics} == set(out)


def test_length_balanced_win_rate():
    recs = []
    for i, (v, la, lb) in enumerate(
        [
            ("A", 300, 100),
            ("A", 300, 100),
            ("B", 300, 100),
            ("tie", 300, 100),
            ("A", 100, 300),
            ("B", 100, 300),
        ]
    ):
        recs.append(
            {
                "id": f"p{i}",
                "judges": [{"rubric": "pairwise", "output": {"verdict": v}, "lengths": {"A": la, "B": lb}}],
            }
        )
    m = score_judges(None, recs)["judge_calibration"].metrics()
    # A longer: (1 + 1 + 0 + 0.5) / 4; B longer: (1 + 0) / 2
    assert m["length_balanced_win_rate"].value == pytest.approx((2.5 / 4 + 0.5) / 2)
    assert m["judge_approval_rate"].value == pytest.approx(3 / 6)  # A's plain win rate
