"""Hostile inputs, part 1: no wrong PASS (issue #18).

Each case runs the real ``kg-rageval`` entry point (or ``run_audit``) and asserts the exit
code, the message and that no report (or no wrong report) is left behind. The stub family
(``kg_rageval.audit.stub``) scores ``labels``: correct = first pred == first gold.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kg_rageval.audit.config import load_config
from kg_rageval.audit.families import FamilySpec, register_family, unregister_family
from kg_rageval.audit.intervals import clopper_pearson, is_count_proportion, wilson
from kg_rageval.audit.runner import run_audit
from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.results.metric import Metric

LEAVES = ["sedan", "hatchback", "submarine", "amphibious_car"]


@pytest.fixture()
def wd(workdir):
    return workdir


def _records(ids, correct=lambda i: True):
    out = []
    for k, rid in enumerate(ids):
        g = LEAVES[k % 4]
        out.append({"id": rid, "labels": {"gold": [g], "pred": [g if correct(k) else "vehicle"]}})
    return out


def _write(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _config(wd: Path, **extra) -> Path:
    cfg = {
        "name": "hostile",
        "ontology": "vehicles.csv",
        "records": "records.jsonl",
        "families": {"stub": {}},
        **extra,
    }
    p = wd / "audit.json"
    p.write_text(json.dumps(cfg))
    return p


# ---------------------------------------------------------------------- baseline pairing
def test_baseline_sharing_one_record_of_100_is_missing_evidence(stub, wd, cli):
    _write(wd / "records.jsonl", _records([f"q{i}" for i in range(100)]))
    _write(wd / "baseline.jsonl", _records(["q0"] + [f"b{i}" for i in range(99)], correct=lambda k: False))
    cfg = _config(
        wd,
        gates=["stub_accuracy >= 0.5"],
        baseline={"records": "baseline.jsonl", "budgets": {"stub_accuracy": 0.02}},
    )
    out = wd / "out"
    code, stdout, _ = cli(["audit", "-c", str(cfg), "--out", str(out), "-q"])
    assert code == 1  # on main this PASSED: the delta on the one shared record is +1
    report = json.loads((out / "report.json").read_text())
    gate = next(g for g in report["gates"] if g["metric"] == "delta:stub_accuracy")
    assert gate["status"] == "missing"
    assert "lack 99 record(s) of the baseline" in gate["reason"]
    pairing = report["baseline"]["pairing"]["stub"]
    assert pairing["paired_records"] == 1 and pairing["records_either"] == 199
    assert pairing["candidate_only"]["n"] == 99 and pairing["baseline_only"]["n"] == 99
    assert report["baseline"]["dropped_records"]["n"] == 99
    assert report["baseline"]["dropped_records"]["ids"][:2] == ["b0", "b1"]


def test_candidate_lacking_baseline_queries_is_missing_evidence(stub, wd):
    ids = [f"q{i:03d}" for i in range(100)]
    _write(wd / "records.jsonl", _records(ids[:97]))  # dropped three (hard) queries
    _write(wd / "baseline.jsonl", _records(ids))
    cfg = load_config(
        _config(
            wd,
            gates=["stub_accuracy >= 0.5"],
            baseline={"records": "baseline.jsonl", "budgets": {"stub_accuracy": 0.02}},
        )
    )
    res = run_audit(cfg, progress=False)
    st = {r.gate.metric: r for r in res.gate_results}
    assert st["delta:stub_accuracy"].status == "missing"
    assert "lack 3 record(s) of the baseline ('q097', 'q098', 'q099';" in st["delta:stub_accuracy"].reason
    assert res.exit_code == 1
    # tolerated when the config says so: 97/100 paired >= 95 %
    cfg2 = load_config(
        _config(
            wd,
            gates=["stub_accuracy >= 0.5"],
            baseline={"records": "baseline.jsonl", "budgets": {"stub_accuracy": 0.02}, "max_dropped": 3},
        )
    )
    res2 = run_audit(cfg2, progress=False)
    assert {r.gate.metric: r.status for r in res2.gate_results}["delta:stub_accuracy"] == "pass"
    assert res2.baseline["pairing"]["stub"]["paired_fraction"] == pytest.approx(0.97)


def test_low_paired_fraction_is_missing_evidence(stub, wd):
    ids = [f"q{i:03d}" for i in range(40)]
    recs = _records(ids)
    for r in recs[:10]:  # the candidate has no prediction for 10 records: unscored
        r["labels"]["pred"] = None
    _write(wd / "records.jsonl", recs)
    _write(wd / "baseline.jsonl", _records(ids))
    cfg = load_config(
        _config(
            wd,
            gates=["stub_accuracy >= 0.5"],
            missing_runs={"budget": 1.0},
            baseline={"records": "baseline.jsonl", "budgets": {"stub_accuracy": 0.02}},
        )
    )
    res = run_audit(cfg, progress=False)
    r = {r.gate.metric: r for r in res.gate_results}["delta:stub_accuracy"]
    assert r.status == "missing"
    assert "only 30 of 40 records are scored by both systems (75.0%" in r.reason


def test_paired_bootstrap_pairs_by_record_id(stub, wd):
    ids = [f"q{i:03d}" for i in range(40)]
    _write(wd / "records.jsonl", _records(ids, correct=lambda k: k % 3 != 0))
    base = _records(ids, correct=lambda k: k % 2 == 0)
    _write(wd / "b1.jsonl", base)
    _write(wd / "b2.jsonl", list(reversed(base)))  # same records, other order
    got = []
    for name in ("b1.jsonl", "b2.jsonl"):
        cfg = load_config(
            _config(
                wd,
                gates=["stub_accuracy >= 0"],
                bootstrap={"n_resamples": 200},
                baseline={"records": name, "budgets": {"stub_accuracy": 1.0}, "use": "ci_low"},
            )
        )
        got.append(run_audit(cfg, progress=False).metrics["delta:stub_accuracy"])
    # candidate 26/40 correct, baseline 20/40: delta = 0.15; identical pairing, identical CI
    assert got[0].value == pytest.approx(26 / 40 - 20 / 40)
    assert got[0].ci is not None and got[0].ci == got[1].ci and got[0].value == got[1].value


# ---------------------------------------------------------------------- confidence bounds
def test_ci_low_from_one_record_is_missing_evidence(stub, wd, cli):
    _write(wd / "records.jsonl", _records(["only"]))
    cfg = _config(wd, gates=["ci_low(stub_accuracy) >= 0.9"])
    code, stdout, _ = cli(["audit", "-c", str(cfg), "-q"])
    assert code == 1  # on main: the bootstrap of one correct record is [1, 1] and this PASSED
    assert "MISSING" in stdout
    assert "needs at least 30 resampling units (records) and the scope has 1 (bootstrap.min_units)" in stdout


def test_all_ones_bound_is_exact_not_percentile(stub, wd):
    _write(wd / "records.jsonl", _records(["a", "b", "c"]))
    cfg = load_config(
        _config(wd, gates=["ci_low(stub_accuracy) >= 0.9"], bootstrap={"min_units": 3, "n_resamples": 100})
    )
    res = run_audit(cfg, progress=False)
    r = next(r for r in res.gate_results if r.gate.use == "ci_low")
    assert r.status == "fail"
    assert r.observed == pytest.approx(0.025 ** (1 / 3), abs=1e-9)  # 0.2924
    assert "[auto (percentile ∪ clopper_pearson)]" in r.reason or "[clopper_pearson]" in r.reason
    cfg_w = load_config(
        _config(wd, gates=["ci_low(stub_accuracy) >= 0.9"], bootstrap={"min_units": 3, "method": "wilson"})
    )
    rw = next(r for r in run_audit(cfg_w, progress=False).gate_results if r.gate.use == "ci_low")
    assert rw.observed == pytest.approx(0.43849, abs=1e-4) and rw.status == "fail"


@pytest.mark.parametrize("k,n", [(0, 1), (3, 3), (7, 10), (1, 30), (29, 30), (50, 100), (0, 250)])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_exact_and_wilson_bounds_match_scipy(k, n, level):
    from scipy.stats import binomtest

    ref = binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    assert clopper_pearson(k, n, level) == pytest.approx((ref.low, ref.high), abs=1e-12)
    ref_w = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    assert wilson(k, n, level) == pytest.approx((ref_w.low, ref_w.high), abs=1e-12)


def test_exact_bounds_equal_scipy_stats_beta_bit_for_bit():
    """clopper_pearson reads the Beta quantiles from scipy.special (no scipy.stats import): the
    same floats as scipy.stats.beta.ppf, on the audit's sizes too."""
    from scipy.stats import beta

    for k, n in [(0, 30), (1, 30), (17, 30), (8770, 9711), (99_000, 100_000), (3, 1_000_000)]:
        for level in (0.9, 0.95):
            a = 1 - level
            want = (
                0.0 if k == 0 else float(beta.ppf(a / 2, k, n - k + 1)),
                1.0 if k == n else float(beta.ppf(1 - a / 2, k + 1, n - k)),
            )
            assert clopper_pearson(k, n, level) == want


def test_proportion_detection():
    assert is_count_proportion(Metric("a", 0.75, 3, 4))
    assert not is_count_proportion(Metric("ndcg", 0.61, 2.44, 4))  # a mean of graded gains
    assert not is_count_proportion(Metric("f1", 0.5))
    assert not is_count_proportion(Metric("a", None, 0, 0, "empty"))


def test_percentile_method_override_per_metric(stub, wd):
    _write(wd / "records.jsonl", _records([f"q{i}" for i in range(40)]))
    cfg = load_config(
        _config(
            wd,
            gates=["ci_low(stub_accuracy) >= 0.5"],
            bootstrap={"methods": {"stub_accuracy": "percentile"}, "n_resamples": 100},
        )
    )
    r = next(r for r in run_audit(cfg, progress=False).gate_results if r.gate.use == "ci_low")
    assert r.status == "pass" and r.observed == 1.0 and r.reason.endswith("[percentile]")


# ---------------------------------------------------------------------- numbers
@pytest.mark.parametrize(
    "literal,why,field",
    [
        ("NaN", "non-finite number NaN is not allowed", "retrieval.gold.d1"),
        ("Infinity", "non-finite number Infinity is not allowed", "retrieval.gold.d1"),
        ("-Infinity", "non-finite number -Infinity is not allowed", "retrieval.gold.d1"),
        ("1" * 5000, "integer with 5000 digits is beyond the accepted 300", "retrieval.gold.d1"),
    ],
)
def test_non_finite_and_huge_numbers_are_input_errors(wd, cli, literal, why, field):
    rec = wd / "r.jsonl"
    rec.write_text(
        '{"id": "ok", "retrieval": {"gold": {"d1": 1}, "run": ["d1"]}}\n'
        f'{{"id": "bad", "retrieval": {{"gold": {{"d1": {literal}}}, "run": ["d1"]}}}}\n'
    )
    code, out, err = cli(["score", "retrieval", "-O", str(wd / "vehicles.csv"), "-d", str(rec)])
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith("error: ") and f"r.jsonl, line 2, field {field}: {why}" in err


def test_overflowing_grade_and_score_are_input_errors(wd, cli):
    rec = wd / "r.jsonl"
    rec.write_text(
        '{"id": "ok", "retrieval": {"gold": {"d1": 1}, "run": ["d1"]}}\n'
        '{"id": "bad", "retrieval": {"gold": {"d1": 1e999}, "run": ["d1"]}}\n'
    )
    code, out, err = cli(["score", "retrieval", "-O", str(wd / "vehicles.csv"), "-d", str(rec)])
    assert code == 2 and err.count("\n") == 1
    assert (
        "record 'bad' (line 2), field retrieval.gold['d1']: grade must be a finite number, found inf" in err
    )
    rec.write_text('{"id": "bad", "retrieval": {"gold": {"d1": 1}, "run": {"d1": ' + "9" * 400 + "}}}\n")
    code, out, err = cli(["score", "retrieval", "-O", str(wd / "vehicles.csv"), "-d", str(rec)])
    assert (
        code == 2
        and "field retrieval.run['d1']: score 99999999999999999999... is too large for a number" in err
    )


def test_non_finite_run_score(wd):
    from kg_rageval.records import read_records

    rec = wd / "r.jsonl"
    rec.write_text('{"id": "a", "retrieval": {"gold": {"d1": 1}, "run": {"d1": NaN, "d2": 0.5}}}\n')
    with pytest.raises(
        InputError, match=r"r\.jsonl, line 1, field retrieval\.run\.d1: non-finite number NaN"
    ):
        read_records(rec)


# ---------------------------------------------------------------------- configs
@pytest.mark.parametrize(
    "name,text,message",
    [
        (
            "c.yaml",
            "ontology: vehicles.csv\nrecords: r.jsonl\ngates: ['stub_accuracy >= 0.9']\n"
            "gates: ['stub_accuracy >= 0']\n",
            "duplicate key 'gates' (line 4; first on line 3)",
        ),
        (
            "c.json",
            '{"ontology": "vehicles.csv", "records": "r.jsonl", "gates": ["x >= 1"], "gates": []}',
            "field gates: duplicate key 'gates'",
        ),
        (
            "c.toml",
            'ontology = "vehicles.csv"\nrecords = "r.jsonl"\ngates = ["x >= 1"]\ngates = []\n',
            "Cannot overwrite a value",
        ),
    ],
)
def test_duplicate_config_keys_are_errors(wd, cli, name, text, message):
    p = wd / name
    p.write_text(text)
    with pytest.raises(
        ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    ):
        load_config(p)
    code, out, err = cli(["audit", "-c", str(p), "--out", str(wd / "out")])
    assert code == 2 and err.count("\n") == 1 and not (wd / "out").exists()


def test_yaml_bomb_is_refused_before_any_report(wd, cli):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
    )
    bomb = "ontology: vehicles.csv\nrecords: r.jsonl\n" + bomb.replace("a: &a", "name: &a", 1)
    assert len(bomb.encode()) < 700
    p = wd / "bomb.yaml"
    p.write_text(bomb)
    code, out, err = cli(["audit", "-c", str(p), "--out", str(wd / "out")])
    assert code == 2 and err.count("\n") == 1
    assert "beyond the limit max_config_nodes = 200000" in err and "--limit max_config_nodes=N" in err
    assert not (wd / "out").exists()


@pytest.mark.parametrize(
    "text,error,message",
    [
        (
            "name: !!python/object/apply:os.system ['echo pwned']\n",
            ConfigError,
            "cannot parse the config: could not determine a constructor",
        ),  # safe loader only
        (
            "judge: &j {model: x, again: *j}\n",
            InputError,
            "expands \\(YAML aliases included\\) to more than 200000 values",
        ),  # a recursive alias
    ],
)
def test_yaml_is_loaded_safely(wd, text, error, message):
    p = wd / "evil.yaml"
    p.write_text("ontology: v.csv\nrecords: r.jsonl\n" + text)
    with pytest.raises(error, match=message):
        load_config(p)


def test_deep_json_config_is_a_limit_error(wd):
    p = wd / "deep.json"
    p.write_text('{"judge": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(InputError, match="beyond the limit max_json_depth = 200"):
        load_config(p)


def test_limits_option_and_env(wd, capsys, monkeypatch):
    from kg_rageval.base import limits

    assert limits.get("max_json_depth") == 200
    monkeypatch.setenv("KG_RAGEVAL_MAX_JSON_DEPTH", "3")
    assert limits.get("max_json_depth") == 3
    with limits.limits({"max_json_depth": "1KiB"}):
        assert limits.get("max_json_depth") == 1024
    assert limits.get("max_json_depth") == 3
    with pytest.raises(ConfigError, match="unknown limit 'max_foo'"):
        limits.get("max_foo")
    assert not math.isnan(limits.parse_value("x", "2GiB"))


# ---------------------------------------------------------------------- missing predictions
def _labels(n_missing: int, n: int = 100):
    out = []
    for k in range(n):
        g = LEAVES[k % 4]
        lab = {"gold": [g]} if k < n_missing else {"gold": [g], "pred": [g]}
        out.append({"id": f"q{k:03d}", "labels": lab})
    return out


def test_99_of_100_missing_predictions_fail(wd, cli):
    _write(wd / "records.jsonl", _labels(99))
    cfg = _config(
        wd,
        families={"hierarchy": {}},
        gates=["hierarchy.hierarchical_precision >= 0.9", "hierarchy.exact_accuracy >= 0"],
    )
    out = wd / "out"
    code, stdout, _ = cli(["audit", "-c", str(cfg), "--out", str(out), "-q"])
    assert code == 1  # on main this PASSED: 'labels.pred is absent' matched no missing-run pattern
    report = json.loads((out / "report.json").read_text())
    gates = {g["gate"]: g for g in report["gates"]}
    assert gates["hierarchy.missing_run_rate <= 0"]["status"] == "fail"
    assert gates["hierarchy.missing_run_rate <= 0"]["observed"] == pytest.approx(0.99)
    assert "99/100 hierarchy records are missing runs" in gates["hierarchy.missing_run_rate <= 0"]["reason"]
    assert "scored as an empty prediction ×99" in gates["hierarchy.missing_run_rate <= 0"]["reason"]
    for g in ("hierarchy.hierarchical_precision >= 0.9", "hierarchy.exact_accuracy >= 0"):
        assert gates[g]["status"] == "missing"
    # the missing predictions count against recall: 1 of 100 gold labels found
    assert report["metrics"]["hierarchy.hierarchical_recall"]["value"] == pytest.approx(
        report["metrics"]["hierarchy.hierarchical_recall"]["numerator"]
        / report["metrics"]["hierarchy.hierarchical_recall"]["denominator"]
    )
    assert report["metrics"]["hierarchy.exact_accuracy"]["value"] == pytest.approx(1 / 100)
    assert report["families"]["hierarchy"]["missing_runs"] == 99


def test_per_family_budget(wd):
    _write(wd / "records.jsonl", _labels(3, n=10))
    cfg = load_config(
        _config(
            wd,
            families={"hierarchy": {}},
            gates=["hierarchy.exact_accuracy >= 0.5"],
            missing_runs={"budgets": {"hierarchy": 0.3}},
            min_rows=10,  # the budget on 10 records is what this test is about
        )
    )
    res = run_audit(cfg, progress=False)
    st = {str(r.gate): (r.status, r.observed) for r in res.gate_results}
    assert st["hierarchy.missing_run_rate <= 0.3"] == ("pass", pytest.approx(0.3))
    assert st["hierarchy.exact_accuracy >= 0.5"] == ("pass", pytest.approx(0.7))  # 3 missing count as wrong
    with pytest.raises(ConfigError, match="missing_runs.budgets: 'hierarchie' is not a family of this audit"):
        run_audit(
            load_config(
                _config(
                    wd,
                    families={"hierarchy": {}},
                    gates=["hierarchy.exact_accuracy >= 0.5"],
                    missing_runs={"budgets": {"hierarchie": 0.3}},
                )
            ),
            progress=False,
        )


def test_missing_linking_predictions_count(wd):
    recs = []
    for k in range(20):
        m = {"gold": [{"start": 0, "end": 3, "id": LEAVES[k % 4]}]}
        if k >= 5:
            m["pred"] = [{"start": 0, "end": 3, "id": LEAVES[k % 4]}]
        recs.append({"id": f"q{k}", "text": "abcdef", "mentions": m})
    _write(wd / "records.jsonl", recs)
    cfg = load_config(
        _config(wd, families={"linking": {}}, gates=["linking.strong_link_match_precision >= 0.9"])
    )
    res = run_audit(cfg, progress=False)
    st = {str(r.gate): (r.status, r.observed) for r in res.gate_results}
    assert st["linking.missing_run_rate <= 0"] == ("fail", pytest.approx(5 / 20))
    assert st["linking.strong_link_match_precision >= 0.9"][0] == "missing"
    assert res.metrics["linking.strong_link_match_recall"].value == pytest.approx(15 / 20)


def test_missing_answers_count_in_every_generation_member(wd):
    recs = []
    for k in range(10):
        r = {"id": f"q{k}", "reference": {"answer": "sedan", "answerable": True}}
        if k < 8:
            r["answer"] = {
                "text": "sedan",
                "judgment": {"claims": ["sedan"], "supported": ["sedan"], "unsupported": []},
            }
        recs.append(r)
    recs[8]["answer"] = {"refused": False}  # an answer section without text: an empty answer
    _write(wd / "records.jsonl", recs)
    cfg = load_config(
        _config(
            wd,
            families={"generation": {}},
            gates=["generation.exact_match >= 0.5"],
            missing_runs={"budget": 0.25},
            min_rows=10,
        )
    )
    res = run_audit(cfg, progress=False)
    c = res.counts["families"]["generation"]
    # q8 (empty answer) and q9 (no answer at all) are missing in correctness, faithfulness and
    # refusal; counted once each, although refusal scored both
    assert c["missing_runs"] == 2 and c["family_records"] == 10
    st = {str(r.gate): (r.status, r.observed) for r in res.gate_results}
    assert st["generation.missing_run_rate <= 0.25"] == ("pass", pytest.approx(0.2))
    assert st["generation.exact_match >= 0.5"] == (
        "pass",
        pytest.approx(0.8),
    )  # 8 of 10, the 2 count as wrong


def test_missing_is_decided_by_codes_not_text(wd, tmp_path, monkeypatch):
    import types

    from kg_rageval.audit.stub import StubFamily
    from kg_rageval.results.builders import build_evaluation

    def score_coded(ontology, records):
        rows, unscored = [], []
        for r in records:
            if r["id"].startswith("na"):
                unscored.append(
                    {"record_id": r["id"], "reason": "missing by design", "code": "not_applicable"}
                )
            elif r["id"].startswith("lost"):
                unscored.append(
                    {"record_id": r["id"], "reason": "system said nothing", "code": "missing_prediction"}
                )
            else:
                rows.append({"record_id": r["id"], "correct": 1.0, "n": 1.0})
        return build_evaluation(StubFamily(), rows, unscored=unscored)

    mod = types.ModuleType("coded_family")
    mod.score_coded = score_coded
    monkeypatch.setitem(__import__("sys").modules, "coded_family", mod)
    register_family(FamilySpec("coded", "coded_family:score_coded", ("labels",)))
    try:
        _write(
            wd / "records.jsonl",
            [{"id": i, "labels": {"gold": ["car"]}} for i in ("ok1", "ok2", "na1", "na2", "lost1")],
        )
        cfg = load_config(_config(wd, families={"coded": {}}, gates=["stub_accuracy >= 0.5"]))
        res = run_audit(cfg, progress=False)
        c = res.counts["families"]["coded"]
        assert c["missing_runs"] == 1  # 'missing by design' (not_applicable) is not; 'said nothing' is
        assert c["unscored_codes"] == {"missing_prediction": 1, "not_applicable": 2}
        assert res.exit_code == 1
    finally:
        unregister_family("coded")


@pytest.mark.parametrize(
    "name,text,message",
    [
        (
            "qrels.txt",
            "q1 0 d1 1\nq1 0 d2 inf\n",
            "qrels.txt, line 2: relevance is not a finite number: 'inf'",
        ),
        (
            "run.txt",
            "q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 nan r\n",
            "run.txt, line 2: score is not a finite number: 'nan'",
        ),
    ],
)
def test_non_finite_trec_columns_are_input_errors(tmp_path, name, text, message):
    from kg_rageval.families.retrieval.trec import read_qrels, read_run

    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        (read_qrels if name.startswith("qrels") else read_run)(p)


def test_records_without_answers_or_references_are_not_generation_missing_runs(wd):
    recs = [{"id": f"r{k}", "retrieval": {"gold": {"d1": 1}, "run": ["d1"]}} for k in range(5)]
    recs += [
        {
            "id": f"a{k}",
            "answer": {"text": "sedan", "refused": False},
            "reference": {"answer": "sedan", "answerable": True},
        }
        for k in range(5)
    ]
    recs.append({"id": "lost", "reference": {"answer": "sedan", "answerable": True}})  # no answer: missing
    _write(wd / "records.jsonl", recs)
    cfg = load_config(
        _config(
            wd,
            families={"generation": {}, "retrieval": {}},
            gates=["generation.exact_match >= 0.5", "retrieval.recall@10 >= 0.5"],
        )
    )
    res = run_audit(cfg, progress=False)
    c = res.counts["families"]["generation"]
    assert (
        c["missing_runs"] == 1 and c["family_records"] == 6
    )  # the retrieval-only records are not about answers
    assert c["unscored_codes"]["no_section"] >= 5
    st = {str(r.gate): (r.status, r.observed) for r in res.gate_results}
    assert st["generation.missing_run_rate <= 0"] == ("fail", pytest.approx(1 / 6))
    assert st["retrieval.missing_run_rate <= 0"][0] == "pass"


def test_unjudged_answers_count_once_judgments_are_in_use(wd):
    judged = {"claims": ["sedan"], "supported": ["sedan"], "unsupported": []}
    recs = [
        {
            "id": f"a{k}",
            "answer": {"text": "sedan", **({"judgment": judged} if k < 2 else {})},
            "reference": {"answer": "sedan", "answerable": True},
        }
        for k in range(10)
    ]
    _write(wd / "records.jsonl", recs)
    cfg = load_config(_config(wd, families={"generation": {}}, gates=["generation.faithfulness >= 0.9"]))
    res = run_audit(cfg, progress=False)
    # faithfulness 2/2 on the judged answers would PASS; 8 answers were never judged
    assert res.counts["families"]["generation"]["missing_runs"] == 8
    st = {str(r.gate): r.status for r in res.gate_results}
    assert st["generation.faithfulness >= 0.9"] == "missing" and res.exit_code == 1
    # with no judgment at all faithfulness is not measured (missing), not a missing run
    for r in recs:
        r["answer"].pop("judgment", None)
    _write(wd / "records.jsonl", recs)
    res = run_audit(cfg, progress=False)
    assert res.counts["families"]["generation"]["missing_runs"] == 0
    assert {str(r.gate): r.status for r in res.gate_results}["generation.faithfulness >= 0.9"] == "missing"
