"""One metric-name language (issue #27): every measure any command computes has one canonical
name, its ir_measures/trec_eval spellings resolve to it through the one alias table
(kg_rageval.contract.measures), ``kg-rageval metrics`` lists it with its aliases, and a gate on
it reads the number the registered family computed (checked against pytrec_eval / pySHACL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kg_rageval.base.errors import ConfigError
from kg_rageval.cli.main import cli
from kg_rageval.contract.measures import measure_metric, template_aliases
from kg_rageval.scoring import REGISTRY, get_scorer, resolve_metric

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "alias, canonical",
    [
        ("recip_rank", "retrieval.mrr"),
        ("RR", "retrieval.mrr"),
        ("MRR", "retrieval.mrr"),
        ("ndcg_cut_10", "retrieval.ndcg@10"),
        ("nDCG@10", "retrieval.ndcg@10"),
        ("P_10", "retrieval.precision@10"),
        ("success_5", "retrieval.hit@5"),
        ("map", "retrieval.map"),
        ("AP", "retrieval.map"),
        ("R-Prec", "retrieval.r_precision"),
        ("retrieval.recip_rank", "retrieval.mrr"),
        ("P(rel=2)@10", "trec.P(rel=2)@10"),
        ("Bpref", "trec.Bpref"),
        ("bpref", "trec.Bpref"),
        ("ERR@10", "trec.ERR@10"),
        ("Judged@10", "trec.Judged@10"),
        ("map_cut_10", "trec.AP@10"),
        ("set_recall", "trec.SetR"),
        ("rbp", "trec.RBP(p=0.9)"),
        ("trec.recip_rank", "trec.RR"),
        ("trec.ndcg_cut_10", "trec.nDCG@10"),
        ("trec.n_missing_run", "trec.n_missing_run"),
        ("ci_low(P(rel=2)@10)", "ci_low(trec.P(rel=2)@10)"),
        ("ndcg_cut_10[slice:intent=lookup]", "retrieval.ndcg@10[slice:intent=lookup]"),
        ("shacl_conformance", "shacl.shacl_conformance"),
        ("violations_per_output", "shacl.violations_per_output"),
    ],
)
def test_every_spelling_resolves_to_one_canonical_name(alias, canonical):
    assert str(resolve_metric(alias)) == canonical
    assert str(resolve_metric(canonical)) == canonical  # the canonical name is a fixed point


def test_with_only_the_trec_files_in_scope_every_spelling_is_trecs():
    assert str(resolve_metric("recip_rank", scope=["trec"])) == "trec.RR"
    assert str(resolve_metric("ndcg_cut_10", scope=["trec"])) == "trec.nDCG@10"
    assert str(resolve_metric("recip_rank", scope=["retrieval", "trec"])) == "retrieval.mrr"


def test_unknown_or_misplaced_measures_say_where_they_belong():
    with pytest.raises(
        ConfigError, match=r"is the measure trec.Bpref, which family 'retrieval' does not compute"
    ):
        resolve_metric("retrieval.bpref")
    with pytest.raises(ConfigError, match=r"family 'trec': unknown measure 'Bogus'"):
        resolve_metric("trec.Bogus@10")
    assert measure_metric("hierarchical_f1") is None and measure_metric("accuracy") is None


def test_the_alias_table_is_the_measure_parser():
    assert measure_metric("ndcg_cut_10") == ("retrieval", "ndcg@10")
    assert measure_metric("NDCG@10") == ("retrieval", "ndcg@10")
    assert measure_metric("nDCG") == ("trec", "nDCG")  # no cut-off: retrieval has no such metric
    assert measure_metric("P(rel=1)@10") == ("trec", "P(rel=1)@10")  # an explicit threshold is trec's
    assert template_aliases("retrieval", "mrr") == ["RR", "recip_rank"]
    assert template_aliases("retrieval", "ndcg@{k}") == ["nDCG@{k}", "ndcg_cut_{k}"]
    assert template_aliases("trec", "Bpref") == ["bpref"]
    assert template_aliases("trec", "R") == []  # trec_eval's set_recall is SetR
    assert template_aliases("trec", "RBP") == []  # trec_eval's rbp is p=0.9, not ir_measures' default 0.8
    assert template_aliases("hierarchy", "hierarchical_f1") == []


def test_metrics_command_lists_the_file_families_with_aliases():
    res = CliRunner().invoke(
        cli, ["metrics", "--family", "trec", "--family", "shacl", "--family", "retrieval", "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    fams = json.loads(res.output)["families"]
    trec = {m["name"]: m for m in fams["trec"]["metrics"]}
    assert {"trec.P(rel={rel})@{k}", "trec.Bpref", "trec.ERR@{k}", "trec.Judged@{k}", "trec.RR"} <= set(trec)
    assert trec["trec.RR"]["aliases"] == ["recip_rank", "mrr"]
    assert trec["trec.AP@{k}"]["aliases"] == ["map_cut_{k}"]
    ret = {m["name"]: m for m in fams["retrieval"]["metrics"]}
    assert ret["retrieval.mrr"]["aliases"] == ["RR", "recip_rank"]
    assert ret["retrieval.ndcg@{k}"]["aliases"] == ["nDCG@{k}", "ndcg_cut_{k}"]
    assert "aliases" not in ret["retrieval.n_scored"]
    assert [m["name"] for m in fams["shacl"]["metrics"]] == [
        "shacl.shacl_conformance",
        "shacl.violations_per_output",
        "shacl.unrenderable_rate",
    ]
    res = CliRunner().invoke(cli, ["metrics", "recip_rank", "ndcg_cut_10", "P(rel=2)@10", "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["resolved"]
    assert [r["canonical"] for r in rows] == ["retrieval.mrr", "retrieval.ndcg@10", "trec.P(rel=2)@10"]
    assert rows[2]["direction"] == "higher"
    text = CliRunner().invoke(cli, ["metrics", "--family", "retrieval"]).output
    assert "(aliases: RR, recip_rank)" in text


def test_the_file_families_are_opt_in():
    assert REGISTRY["trec"].opt_in and REGISTRY["shacl"].opt_in


# ---------------------------------------------------------------------- gates on the TREC files
QRELS = """q1 0 d1 2
q1 0 d2 0
q1 0 d3 1
q2 0 d4 1
q2 0 d5 2
q2 0 d6 0
"""
RUN = """q1 Q0 d2 1 3.0 t
q1 Q0 d1 2 2.0 t
q1 Q0 d3 3 1.0 t
q1 Q0 d7 4 0.5 t
q2 Q0 d6 1 3.0 t
q2 Q0 d7 2 2.0 t
q2 Q0 d5 3 1.0 t
q2 Q0 d4 4 0.5 t
"""


@pytest.fixture()
def trec_files(tmp_path):
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    return tmp_path / "qrels", tmp_path / "run"


def _pytrec(measures, relevance_level=1):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels: dict = {}
    for ln in QRELS.splitlines():
        q, _, d, g = ln.split()
        qrels.setdefault(q, {})[d] = int(g)
    run: dict = {}
    for ln in RUN.splitlines():
        q, _, d, _, s, _ = ln.split()
        run.setdefault(q, {})[d] = float(s)
    per_q = pytrec_eval.RelevanceEvaluator(qrels, set(measures), relevance_level=relevance_level).evaluate(
        run
    )
    return {m: sum(v[m] for v in per_q.values()) / len(per_q) for m in measures}


def test_gates_on_trec_measures_read_the_value_pytrec_eval_gives(trec_files):
    from kg_rageval.pytest_plugin import check_gates

    qrels, run = trec_files
    es = get_scorer("trec").score(
        None,
        [],
        qrels=str(qrels),
        run=str(run),
        mode="trec_eval",
        measures=["recip_rank", "ndcg_cut_10", "bpref", "P(rel=2)@10", "P_10"],
    )
    ref = _pytrec(["recip_rank", "ndcg_cut_10", "bpref", "P_10"])
    ref2 = _pytrec(["P_10"], relevance_level=2)
    assert ref["recip_rank"] == pytest.approx(5 / 12)  # q1: first relevant at rank 2, q2 at rank 3
    assert ref2["P_10"] == pytest.approx(0.1)  # one document of grade 2 in each top 10
    results, _ = check_gates(
        es,
        ["recip_rank >= 0.4", "ndcg_cut_10 >= 0.99", "bpref <= 1", "P(rel=2)@10 == 0.1", "trec.P_10 > 0.2"],
        min_rows=1,  # two queries
    )
    got = {str(r.gate): (r.status, r.observed) for r in results}
    assert got["recip_rank >= 0.4"] == ("pass", pytest.approx(ref["recip_rank"], abs=1e-12))
    assert got["ndcg_cut_10 >= 0.99"] == ("fail", pytest.approx(ref["ndcg_cut_10"], abs=1e-12))
    assert got["bpref <= 1"] == ("pass", pytest.approx(ref["bpref"], abs=1e-12))
    assert got["P(rel=2)@10 == 0.1"] == ("pass", pytest.approx(ref2["P_10"], abs=1e-12))
    assert got["trec.P_10 > 0.2"] == ("fail", pytest.approx(ref["P_10"], abs=1e-12))  # 2/10 per query


def test_a_gate_on_a_measure_not_computed_is_missing_evidence(trec_files):
    from kg_rageval.pytest_plugin import check_gates

    qrels, run = trec_files
    es = get_scorer("trec").score(None, [], qrels=str(qrels), run=str(run), measures=["RR"])
    (r,) = check_gates(es, ["ERR@10 >= 0"])[0]
    assert r.status == "missing" and r.observed is None


# ---------------------------------------------------------------------- gates on SHACL conformance
def test_the_shacl_family_is_score_shacl_and_gateable():
    pytest.importorskip("pyshacl")
    from conformance_helpers import build_attack_like

    from kg_rageval.families.conformance import load_spec
    from kg_rageval.families.conformance.shacl import score_shacl
    from kg_rageval.pytest_plugin import check_gates
    from kg_rageval.records import read_records

    fix = ROOT / "fixtures" / "conformance"
    onto = build_attack_like()
    recs = read_records(fix / "records.jsonl")
    es = get_scorer("shacl").score(
        onto, recs, shapes=str(ROOT / "shapes" / "output-attack.ttl"), spec=str(fix / "attack_spec.yaml")
    )
    direct = score_shacl(
        onto, recs, ROOT / "shapes" / "output-attack.ttl", load_spec(fix / "attack_spec.yaml")
    )
    assert (
        es.metrics()["shacl.shacl_conformance"].value == direct.metrics()["shacl_conformance"].value == 2 / 5
    )
    results, _ = check_gates(es, ["shacl_conformance >= 0.5", "shacl.unrenderable_rate <= 0.2"], min_rows=1)
    assert [(r.status, r.observed) for r in results] == [("fail", 0.4), ("pass", 0.2)]
