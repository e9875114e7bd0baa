"""Issue #19 part B through the audit: verdicts users can trust, every family reachable from
the audit config. Expected figures are worked by hand in each test."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.runner import run_audit
from kg_rageval.base.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "fixtures" / "generation"


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _by_gate(res) -> dict:
    return {str(r.gate): r for r in res.gate_results}


# ---------------------------------------------------------------- faithfulness judge by name
JUDGED = [
    # "sedan" and "car" are in the cited context: supported → 1
    {
        "id": "j1",
        "answer": {"text": "A sedan is a car.", "citations": ["d1"]},
        "retrieval": {"contexts": [{"id": "d1", "text": "A sedan is a car."}]},
    },
    # "boat" is not in the cited context: unsupported → 0
    {
        "id": "j2",
        "answer": {"text": "It is a boat.", "citations": ["d2"]},
        "retrieval": {"contexts": [{"id": "d2", "text": "A car."}]},
    },
]


def _judge_cfg(tmp_path: Path, judge) -> dict:
    _write(tmp_path / "r.jsonl", JUDGED)
    return {
        "ontology": str(GEN / "vehicles.csv"),
        "records": "r.jsonl",
        "families": {"generation": {"judge": judge}},
        "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
        "gates": ["faithfulness >= 0.6"],
    }


def test_audit_runs_the_ontology_judge_named_in_the_config(tmp_path):
    res = run_audit(config_from_mapping(_judge_cfg(tmp_path, "ontology"), base_dir=tmp_path), progress=False)
    assert res.families["generation"].status == "ran"
    g = _by_gate(res)["faithfulness >= 0.6"]
    assert g.status == "fail" and g.observed == pytest.approx(0.5)


def test_audit_runs_a_judge_plugin(tmp_path, monkeypatch):
    (tmp_path / "my_judges.py").write_text(
        "class Lenient:\n"
        "    def __init__(self, ontology):\n        self.n = len(ontology)\n"
        "    def __call__(self, answer, contexts):\n"
        "        return {'claims': [answer], 'supported': [answer], 'unsupported': []}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    res = run_audit(
        config_from_mapping(_judge_cfg(tmp_path, "my_judges:Lenient"), base_dir=tmp_path), progress=False
    )
    g = _by_gate(res)["faithfulness >= 0.6"]
    assert g.status == "pass" and g.observed == 1.0
    sys.modules.pop("my_judges", None)


@pytest.mark.parametrize("name", ["gpt-judge", "no_such_module_xyz:Judge", "kg_rageval.audit.stub:nothing"])
def test_unknown_judge_is_exit_2_naming_the_key(tmp_path, name):
    from kg_rageval.cli.main import main

    cfg = _judge_cfg(tmp_path, name)
    with pytest.raises(ConfigError, match=r"families\.generation\.judge: "):
        run_audit(config_from_mapping(cfg, base_dir=tmp_path), progress=False)
    (tmp_path / "a.json").write_text(json.dumps(cfg))
    assert main(["audit", "--config", str(tmp_path / "a.json"), "--quiet"]) == 2


# ---------------------------------------------------------------- conformance: expected outputs
CONF = ROOT / "fixtures" / "conformance"


def _conf_records() -> list[dict]:
    from kg_rageval.records import read_records

    base = {r["id"]: r for r in read_records(CONF / "records.jsonl")}
    keep = [{k: v for k, v in base[i].items() if not k.startswith("_")} for i in ("r1", "r3")]
    keep[0]["labels"] = {"gold": ["T1003"]}  # the branch comes from labels.gold first
    refusals = [
        {
            "id": f"no{i}",
            "answer": {"text": "I cannot answer.", "refused": True},
            "reference": {"answerable": False},
        }
        for i in range(2)
    ]
    return keep + refusals


def _conf_audit(tmp_path: Path, records: list[dict], **extra):
    from conformance_helpers import build_attack_like

    from kg_rageval.audit.inputs import load_inputs

    _write(tmp_path / "r.jsonl", records)
    (tmp_path / "o.csv").write_text("child,parent,label\nx,,X\n")  # replaced by the ATT&CK-like ontology
    cfg = config_from_mapping(
        {
            "ontology": "o.csv",
            "records": "r.jsonl",
            "spec": str(CONF / "attack_spec.yaml"),
            "families": {"conformance": {}},
            "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
            "gates": ["conformance.schema_validity >= 0.5"],
            **extra,
        },
        base_dir=tmp_path,
    )
    inputs = load_inputs(cfg)
    inputs["ontology"] = build_attack_like()
    return run_audit(cfg, progress=False, inputs=inputs)


def test_correct_refusals_are_not_missing_structured_outputs(tmp_path):
    """Two correct refusals used to match the missing-run reason "no answer" as a substring of
    "no answer.output" and turn schema validity into MISSING; now they are out of scope."""
    res = _conf_audit(tmp_path, _conf_records())
    g = _by_gate(res)
    # r1 valid, r3 invalid (revoked technique, label as tactic): 1/2
    assert g["conformance.schema_validity >= 0.5"].status == "pass"
    assert g["conformance.schema_validity >= 0.5"].observed == 0.5
    assert g["conformance.missing_run_rate <= 0"].status == "pass"
    c = res.counts["families"]["conformance"]
    assert c["missing_runs"] == 0 and c["unscored_reasons"] == {"correct refusal": 2}
    # rows carry the branch: labels.gold for r1, the reference output's technique for r3
    ev = res.families["conformance"].evaluations[0]
    assert dict(zip(ev.record_ids.tolist(), ev.keys["gold_node"].tolist())) == {
        "r1": "T1003",
        "r3": "T1059.001",
    }


def test_expected_but_absent_output_is_a_missing_run(tmp_path):
    recs = _conf_records() + [
        {"id": "silent", "answer": {"text": "T1003"}},
        {"id": "over", "answer": {"refused": True}, "reference": {"answerable": True}},
    ]
    res = _conf_audit(tmp_path, recs)
    c = res.counts["families"]["conformance"]
    assert c["missing_runs"] == 2 and c["unscored_reasons"] == {"correct refusal": 2, "missing output": 2}
    g = _by_gate(res)
    assert g["conformance.missing_run_rate <= 0"].status == "fail"
    assert g["conformance.missing_run_rate <= 0"].observed == pytest.approx(2 / 6)
    assert g["conformance.schema_validity >= 0.5"].status == "missing"


def test_missing_run_reasons_match_exactly_never_as_substrings(tmp_path):
    """Codes decide (conformance's "missing output" is missing_prediction whatever the reasons
    list says); only an entry without a code (the stub family's "missing run") falls back to
    missing_runs.reasons, matched exactly: "missing" is not "missing run"."""
    res = _conf_audit(
        tmp_path,
        _conf_records() + [{"id": "silent", "answer": {"text": "x"}}],
        missing_runs={"reasons": ["no answer", "output"], "budget": 0.5},
    )
    assert res.counts["families"]["conformance"]["missing_runs"] == 1
    for reasons, missing in ((["missing"], 0), (["no run", "Missing Run "], 1)):
        res = _stub_audit(
            tmp_path,
            TREE,
            {},
            ["stub_accuracy >= 0"],
            missing_runs={"reasons": reasons, "budget": 1.0},
            records=[
                {"id": "a", "labels": {"gold": ["x1"], "pred": ["x1"]}},
                {"id": "b", "labels": {"gold": ["x1"]}},
            ],
        )
        assert res.counts["families"]["stub"]["missing_runs"] == missing, reasons


# ---------------------------------------------------------------- filter replay in the audit
def test_audit_shows_an_inconsistent_filter_log(tmp_path):
    (tmp_path / "o.csv").write_text("child,parent,label\nroot,,Root\na,root,A\nb,root,B\n")
    _write(tmp_path / "c.jsonl", [{"id": "x", "categories": ["a"]}, {"id": "y", "categories": ["b"]}])
    within_a = [{"field": "category", "op": "within", "value": "a"}]
    _write(
        tmp_path / "r.jsonl",
        [
            {
                "id": "q1",
                "retrieval": {"gold": ["y"], "run": ["y"], "filters": within_a},
            },  # retrieved, log excludes it
            {"id": "q2", "retrieval": {"gold": ["y"], "run": ["x"], "filters": within_a}},  # a real exclusion
        ],
    )
    cfg = config_from_mapping(
        {
            "ontology": "o.csv",
            "records": "r.jsonl",
            "corpus": "c.jsonl",
            "families": {"retrieval": {"k": [10]}},
            "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
            "gates": ["filter_false_exclusion_rate <= 0.4"],
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    assert res.exclusions["inconsistent_filter_log"] == 1
    assert res.exclusions["inconsistent_examples"] == [["q1", "y"]]
    assert res.exclusions["excluded_by_filter"] == {"category": 1}
    g = _by_gate(res)["filter_false_exclusion_rate <= 0.4"]
    assert g.status == "fail" and g.observed == 0.5  # q2 only: 1/2
    assert res.metrics["retrieval.filter_log_inconsistency_rate"].value == 0.5
    from kg_rageval.audit.report_html import html_report

    assert "inconsistent filter log" in html_report(res)


# ---------------------------------------------------------------- provenance in the audit
def _prov_cfg(tmp_path: Path, **fam) -> dict:
    other = json.loads((GEN / "manifest.json").read_text())
    other.update(run_id="run-b", seed=7)
    (tmp_path / "run-b.json").write_text(json.dumps(other))
    return {
        "ontology": str(GEN / "vehicles.csv"),
        "records": str(GEN / "prov_records.jsonl"),
        "corpus": str(GEN / "corpus.jsonl"),
        "families": {
            "provenance": {
                "repeats": [str(GEN / "prov_repeat.jsonl")],
                "manifests": [str(GEN / "manifest.json"), "run-b.json"],
                **fam,
            }
        },
        "missing_runs": {"budgets": {"provenance": 0.25}},  # p4 is absent from the repeat: a missing run
        "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
        "gates": [
            "provenance.identical_rate >= 0.5",
            "provenance.manifest_completeness >= 1",
            "provenance.manifest_consistency >= 1",
            "provenance.prov_traceable_rate >= 1",
        ],
    }


def test_audit_runs_reproducibility_manifests_and_the_prov_trail(tmp_path):
    from kg_rageval.audit.reports import write_reports

    res = run_audit(config_from_mapping(_prov_cfg(tmp_path), base_dir=tmp_path), progress=False)
    assert res.families["provenance"].status == "ran"
    g = _by_gate(res)
    # repeat 1 (tests/families/provenance/test_provenance.py): p1 identical, p2 text differs, p3 citation dropped; p4 absent
    assert g["provenance.identical_rate >= 0.5"].status == "fail"
    assert g["provenance.identical_rate >= 0.5"].observed == pytest.approx(1 / 3)
    assert res.metrics["provenance.identical_answer_rate"].numerator == 2
    # both manifests complete and matching the snapshot; run-b pins another seed
    assert g["provenance.manifest_completeness >= 1"].status == "pass"
    assert res.metrics["provenance.manifest_hash_match_rate"].value == 1.0
    assert g["provenance.manifest_consistency >= 1"].status == "fail"
    assert g["provenance.manifest_consistency >= 1"].observed == 0.0
    # the trail of run-a: p1 and the refusal p4 are traceable; p2 cites doc-3 (a chunk-hash source
    # id), p3 doc-4 (no source id) and doc-9 (not in the corpus): 2/4
    trail = g["provenance.prov_traceable_rate >= 1"]
    assert trail.status == "fail" and trail.observed == 0.5
    ev = res.families["provenance"].result["prov_trail"]
    assert dict(zip(ev.record_ids.tolist(), ev.details["untraceable_at"].tolist())) == {
        "p1": None,
        "p2": "urn:kg-rageval:doc:doc-3",
        "p3": "urn:kg-rageval:doc:doc-4 urn:kg-rageval:doc:doc-9",
        "p4": None,
    }
    # a run whose manifest lacks its seed makes every answer untraceable
    from kg_rageval.families.provenance import read_corpus
    from kg_rageval.families.provenance.audit_trail import score_trail
    from kg_rageval.records import read_records

    man = json.loads((GEN / "manifest.json").read_text())
    del man["seed"]
    bad = score_trail(
        read_records(GEN / "prov_records.jsonl"), manifest=man, corpus=read_corpus(GEN / "corpus.jsonl")
    )
    assert bad.metrics()["prov_traceable_rate"].value == 0.0
    # p4 is missing from the repeat: a missing run (1/4, within the budget of 0.25)
    assert res.counts["families"]["provenance"]["missing_runs"] == 1
    out = write_reports(res, tmp_path / "report")
    ttl = Path(out["prov"]).read_text()
    assert Path(out["prov"]).name == "prov.ttl" and "urn:kg-rageval:run:run-a" in ttl
    from rdflib import Graph

    assert (
        len(Graph().parse(data=ttl, format="turtle"))
        == res.families["provenance"].evaluations[-1].meta["triples"]
    )


def test_audit_provenance_repeats_relative_to_the_config(tmp_path):
    import shutil

    shutil.copy(GEN / "prov_repeat.jsonl", tmp_path / "rep.jsonl")
    cfg = _prov_cfg(tmp_path, repeats=["rep.jsonl"], trail=False)
    cfg["gates"] = ["provenance.identical_rate >= 0.3"]
    res = run_audit(config_from_mapping(cfg, base_dir=tmp_path), progress=False)
    assert _by_gate(res)["provenance.identical_rate >= 0.3"].status == "pass"
    assert "prov_trail" not in {ev.family.name for ev in res.families["provenance"].evaluations}
    cfg["families"]["provenance"]["repeats"] = ["nope.jsonl"]
    from kg_rageval.base.errors import InputError

    with pytest.raises(InputError, match="nope.jsonl"):
        run_audit(config_from_mapping(cfg, base_dir=tmp_path), progress=False)


# ---------------------------------------------------------------- hard filter vs soft boost in the audit
def test_audit_runs_hard_vs_soft_with_a_per_query_preference(tmp_path, fixtures_dir):
    """The records of tests/families/retrieval/test_retrieval_filters.py::PER_QUERY: hard 1/3 vs soft 2/3 recall@1."""
    from retrieval_helpers import PER_QUERY

    _write(tmp_path / "r.jsonl", PER_QUERY)
    _write(
        tmp_path / "c.jsonl",
        [
            {"id": "a1", "categories": ["T1003.001"]},
            {"id": "a2", "categories": ["T1003.002"]},
            {"id": "b1", "categories": ["T1562.001"]},
            {"id": "b2", "categories": ["T1562.002"]},
        ],
    )
    cfg = {
        "ontology": {"path": str(fixtures_dir / "retrieval" / "attack-mini.tsv")},
        "records": "r.jsonl",
        "corpus": "c.jsonl",
        "missing_runs": {"budget": 0.5},
        "families": {
            "preference": {
                "preference": {"field": "category", "op": "within", "value": {"from": "labels.pred"}},
                "k": 1,
            }
        },
        "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
        "gates": [
            "ci_low(preference.precision_gain) >= 0",
            "preference.exclusion_rate <= 0.05",
            "preference.recall_delta >= -0.02",
        ],
    }
    res = run_audit(config_from_mapping(cfg, base_dir=tmp_path), progress=False)
    g = _by_gate(res)
    assert g["preference.exclusion_rate <= 0.05"].observed == pytest.approx(2 / 3)
    assert g["preference.recall_delta >= -0.02"].observed == pytest.approx(-1 / 3)
    # 3 compared queries are fewer than bootstrap.min_units (30): the bound is missing evidence
    assert g["ci_low(preference.precision_gain) >= 0"].status == "missing"
    assert (
        g["preference.exclusion_rate <= 0.05"].status
        == g["preference.recall_delta >= -0.02"].status
        == "fail"
    )
    # opt-in: "all families" does not run it
    _write(tmp_path / "r2.jsonl", [{k: v for k, v in r.items() if k != "labels"} for r in PER_QUERY])
    cfg2 = {**cfg, "records": "r2.jsonl", "families": {}, "gates": ["retrieval.recall@1 >= 0"]}
    assert (
        "preference" not in run_audit(config_from_mapping(cfg2, base_dir=tmp_path), progress=False).families
    )


def test_cli_score_preference(tmp_path, fixtures_dir, capsys):
    from retrieval_helpers import PER_QUERY

    from kg_rageval.cli.main import main

    _write(tmp_path / "r.jsonl", PER_QUERY)
    _write(
        tmp_path / "c.jsonl",
        [
            {"id": "a1", "categories": ["T1003.001"]},
            {"id": "a2", "categories": ["T1003.002"]},
            {"id": "b1", "categories": ["T1562.001"]},
            {"id": "b2", "categories": ["T1562.002"]},
        ],
    )
    args = [
        "score",
        "preference",
        "-O",
        str(fixtures_dir / "retrieval" / "attack-mini.tsv"),
        "-d",
        str(tmp_path / "r.jsonl"),
        "--corpus",
        str(tmp_path / "c.jsonl"),
        "--field",
        "category",
        "--op",
        "within",
        "--value-from",
        "labels.pred",
        "--k",
        "1",
        "--delta-min",
        "0",
        "--epsilon",
        "0.5",
        "--recall-loss-max",
        "0.1",
        "--format",
        "json",
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["family"] == "preference" and out["metrics"]["preference.hard_recall"][
        "value"
    ] == pytest.approx(1 / 3)
    r = out["recommendation"]
    assert r["recommendation"] == "soft" and r["n_queries"] == 3 and r["n_without_preference"] == 1
    assert r["hard_recall"] == pytest.approx(1 / 3) and r["exclusion_rate"] == pytest.approx(2 / 3)
    # without the thresholds: the family's metrics only
    assert main(args[:-8] + ["--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "recommendation" not in out and out["metrics"]["preference.exclusion_rate"]["numerator"] == 2
    assert main(args[:-2]) == 0
    text = capsys.readouterr().out
    assert "recommendation: soft" in text and "category within {labels.pred}" in text
    # an entitlement field is never a preference: exit 2
    bad = [a if a != "category" else "tenant" for a in args]
    assert main(bad) == 2


# ---------------------------------------------------------------- reports: branches driving the failures
def _stub_audit(
    tmp_path: Path,
    edges: list[tuple[str, str | None]],
    outcomes: dict[str, tuple[int, int]],
    gates: list[str],
    records: list[dict] | None = None,
    **extra,
):
    """A stub-family audit over an in-memory ontology: ``outcomes[node] = (correct, wrong)`` rows."""
    from kg_rageval.audit.families import FamilySpec, register_family, unregister_family
    from kg_rageval.audit.inputs import load_inputs
    from kg_rageval.ontology import OntologyBuilder

    b = OntologyBuilder("t")
    for node, parent in edges:
        b.add_node(node, label=node.upper())
        if parent:
            b.add_edge(node, parent)
    onto = b.build()
    recs, k = [], 0
    for node, (ok, bad) in outcomes.items():
        for i in range(ok + bad):
            k += 1
            wrong = next(n for n, _ in edges if n != node)
            recs.append(
                {
                    "id": f"r{k:03d}",
                    "query": f"query {k}",
                    "labels": {"gold": [node], "pred": [node if i < ok else wrong]},
                }
            )
    _write(tmp_path / "r.jsonl", recs if records is None else records)
    (tmp_path / "o.csv").write_text("child,parent,label\nx,,X\n")
    register_family(FamilySpec("stub", "kg_rageval.audit.stub:score_stub", ("labels",)))
    try:
        cfg = config_from_mapping(
            {
                "ontology": "o.csv",
                "records": "r.jsonl",
                "families": {"stub": {}},
                "gates": gates,
                "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
                **extra,
            },
            base_dir=tmp_path,
        )
        inputs = load_inputs(cfg)
        inputs["ontology"] = onto
        return run_audit(cfg, progress=False, inputs=inputs)
    finally:
        unregister_family("stub")


TREE = [
    ("R1", None),
    ("big", "R1"),
    ("big1", "big"),
    ("big2", "big"),
    ("X", "R1"),
    ("x1", "X"),
    ("x2", "X"),
    ("R2", None),
]


def test_drivers_rank_contribution_beyond_size_not_size(tmp_path):
    """A large, uniformly mediocre branch (big: 12/20 at 0.6, like its children) fails the gate
    but is better than the whole (14/24 = 0.583): it does not drive the failure. x1 (0/2) does;
    its parent X (2/4) carries it; R1 contains every row (0.583) and is never a driver, although
    under rows × shortfall it came first (24 × 0.117 = 2.8)."""
    res = _stub_audit(
        tmp_path, TREE, {"big1": (6, 4), "big2": (6, 4), "x1": (0, 2), "x2": (2, 0)}, ["stub_accuracy >= 0.7"]
    )
    assert res.ontology.virtual_root
    v = 14 / 24
    got = [(d["node"], round(d["impact"], 9)) for d in res.drivers]
    assert got == [("x1", round(2 * v, 9)), ("X", round(4 * (v - 0.5), 9))]
    x1 = res.drivers[0]
    assert x1["deficit"] == pytest.approx(2 * 0.7) and x1["deficit_share"] == pytest.approx(
        1.4 / (24 * (0.7 - v))
    )


# ---------------------------------------------------------------- reports lead to the failing cases
AUDIT = ROOT / "fixtures" / "audit"


@pytest.fixture(scope="module")
def real_reports(tmp_path_factory):
    from kg_rageval.audit.config import load_config
    from kg_rageval.audit.reports import write_reports

    res = run_audit(load_config(AUDIT / "real.yaml"), progress=False)
    out = write_reports(res, tmp_path_factory.mktemp("real") / "report")
    return res, out


def test_failing_gates_list_their_records_worst_first(real_reports):
    """fixtures/audit/real.yaml: MRR per record a 1, b 1/2, c 0, d 1 against >= 0.7; the
    hierarchy's b: gold {car, hatchback}, predicted {car}: hR 1/2 with weight 2."""
    res, out = real_reports
    doc = json.loads(Path(out["json"]).read_text())
    by = {f["gate"]: f for f in doc["failing_records"]}
    mrr = by["retrieval.mrr >= 0.7"]
    assert mrr["n_driving"] == 2 and [r["id"] for r in mrr["records"]] == ["c", "b"]
    c, b = mrr["records"]
    assert (c["value"], c["deficit"]) == (0.0, pytest.approx(0.7)) and c["gold"] == ["d3"]
    assert (b["value"], b["deficit"]) == (0.5, pytest.approx(0.2)) and b["prediction"] == ["d1", "d2"]
    hr = by["hierarchy.hierarchical_recall >= 0.8"]["records"]
    assert [(r["id"], r["value"], r["weight"]) for r in hr] == [("b", 0.5, 2.0)]
    assert (
        hr[0]["deficit"] == pytest.approx(0.6)
        and hr[0]["gold"] == ["hatchback"]
        and hr[0]["prediction"] == ["car"]
    )
    assert "relation: parent" in hr[0]["reason"]
    # a scoped gate lists only its slice's records
    assert [r["id"] for r in by["retrieval.recall@10[slice:intent=compare] > 0.25"]["records"]] == ["c"]
    # passing gates list nothing
    assert "retrieval.recall@10 >= 0.6" not in by
    md = Path(out["markdown"]).read_text()
    assert "## Records driving the failing gates" in md
    assert "### `retrieval.mrr >= 0.7` — fail: 2 of 2 records, worst first" in md
    assert '| c | — | `["d3"]` | `["d1", "d2"]` | 0.0000 |' in md
    assert '| b | — | `["hatchback"]` | `["car"]` | 0.5000 | relation: parent' in md
    html = Path(out["html"]).read_text()
    assert "Records driving the failing gates" in html and "<code>retrieval.mrr &gt;= 0.7</code>" in html


def test_html_shows_the_hierarchy_view_for_every_failed_gate(real_reports):
    res, out = real_reports
    html = Path(out["html"]).read_text()
    assert "(2 failed gates)" in html
    assert "retrieval.mrr per branch (gate <code>retrieval.mrr &gt;= 0.7</code>" in html
    assert (
        "hierarchy.hierarchical_recall per branch (gate <code>hierarchy.hierarchical_recall &gt;= 0.8</code>"
        in html
    )


def test_failing_records_count_is_configurable(tmp_path):
    from kg_rageval.audit.config import load_config

    cfg = load_config(AUDIT / "real.yaml")
    cfg.report.failing_records = 1
    res = run_audit(cfg, progress=False)
    by = {f["gate"]: f for f in res.failing}
    assert [r["id"] for r in by["retrieval.mrr >= 0.7"]["records"]] == ["c"] and by["retrieval.mrr >= 0.7"][
        "n_driving"
    ] == 2
    cfg.report.failing_records = 0
    assert run_audit(cfg, progress=False).failing == []


def test_missing_runs_budget_gate_lists_the_missing_runs(tmp_path):
    res = _conf_audit(
        tmp_path,
        _conf_records() + [{"id": "silent", "query": "which technique?", "answer": {"text": "T1003"}}],
    )
    by = {f["gate"]: f for f in res.failing}
    recs = by["conformance.missing_run_rate <= 0"]["records"]
    assert [(r["id"], r["reason"], r["query"]) for r in recs] == [
        ("silent", "missing output", "which technique?")
    ]
    # the conformance gate is missing evidence: its family's unscored records, missing runs first
    miss = by["conformance.schema_validity >= 0.5"]
    assert miss["status"] == "missing" and [r["id"] for r in miss["records"]] == ["silent", "no0", "no1"]


def test_html_metrics_grouped_by_family_sortable_filterable(real_reports):
    import re

    res, out = real_reports
    html = Path(out["html"]).read_text()
    fams = re.findall(r"<section class='metric-family' data-family='([^']+)'>", html)
    # in family order; linking ran on no evidence: only its gate's metric, missing with the reason
    assert fams == ["hierarchy", "retrieval", "linking"]
    lk = html.split("data-family='linking'>", 1)[1].split("</section>", 1)[0]
    assert "(1 metrics)" in lk and "did not run" in lk
    assert "<table class='sortable'>" in html and "id='metric-filter'" in html
    sec = html.split("data-family='retrieval'>", 1)[1].split("</section>", 1)[0]
    assert "<code>retrieval.mrr</code>" in sec and '<td class="num" data-v="0.625">0.6250</td>' in sec
    assert "hierarchy." not in sec and "delta:" not in html.split("<h2>Metrics</h2>", 1)[1]


FAKE_DOM = r"""
function El(tag){this.tag=tag;this.attrs={};this.children=[];this.listeners={};this.hidden=false;this._text='';}
El.prototype.getAttribute=function(k){return k in this.attrs?this.attrs[k]:null;};
El.prototype.setAttribute=function(k,v){this.attrs[k]=String(v);};
El.prototype.removeAttribute=function(k){delete this.attrs[k];};
El.prototype.addEventListener=function(t,f){this.listeners[t]=f;};
El.prototype.appendChild=function(c){var i=this.children.indexOf(c);if(i>=0){this.children.splice(i,1);}this.children.push(c);c.parent=this;};
Object.defineProperty(El.prototype,'textContent',{get:function(){return this._text+this.children.map(function(c){return c.textContent;}).join(' ');}});
Object.defineProperty(El.prototype,'rows',{get:function(){return this.children;}});
Object.defineProperty(El.prototype,'cells',{get:function(){return this.children;}});
var spec=JSON.parse(process.argv[2]);var tables=[],sections=[];
spec.forEach(function(g){var sec=new El('section');sec.setAttribute('data-family',g.family);
 var t=new El('table');var head=new El('thead');var hr=new El('tr');['metric','value'].forEach(function(h){var th=new El('th');th._text=h;hr.appendChild(th);});
 head.appendChild(hr);var body=new El('tbody');g.rows.forEach(function(r){var tr=new El('tr');var a=new El('td');a._text=r[0];var b=new El('td');b._text=r[1];b.setAttribute('data-v',r[2]);tr.appendChild(a);tr.appendChild(b);body.appendChild(tr);});
 t.tHead=head;t.tBodies=[body];sec.body=body;sec.querySelectorAll=function(){return body.children;};tables.push(t);sections.push(sec);});
var filter=new El('input');filter.value='';
global.document={querySelectorAll:function(sel){return sel==='table.sortable'?tables:sections;},getElementById:function(){return filter;}};
eval(require('fs').readFileSync(process.argv[3],'utf8'));
var out={};
tables[0].tHead.rows[0].cells[1].listeners.click();
out.asc=tables[0].tBodies[0].rows.map(function(r){return r.cells[0]._text;});
tables[0].tHead.rows[0].cells[1].listeners.click();
out.desc=tables[0].tBodies[0].rows.map(function(r){return r.cells[0]._text;});
out.sort=tables[0].tHead.rows[0].cells[1].getAttribute('aria-sort');
filter.value='RECALL';filter.listeners.input();
out.visible=sections.map(function(s){return s.hidden?null:s.body.children.filter(function(r){return !r.hidden;}).map(function(r){return r.cells[0]._text;});});
console.log(JSON.stringify(out));
"""


@pytest.mark.skipif(__import__("shutil").which("node") is None, reason="node is not installed")
def test_metrics_table_script_sorts_and_filters(tmp_path):
    """The inline script, run by node on a minimal DOM of the same structure: a click on the
    value header sorts numerically (missing values last), a second click reverses, the filter
    hides non-matching rows and empty families."""
    import subprocess

    from kg_rageval.audit.report_html import SCRIPT

    js = tmp_path / "script.js"
    js.write_text(SCRIPT)
    dom = tmp_path / "dom.js"
    dom.write_text(FAKE_DOM)
    spec = [
        {
            "family": "retrieval",
            "rows": [
                ["retrieval.mrr", "0.625", "0.625"],
                ["retrieval.recall@10", "0.1", "0.1"],
                ["retrieval.map", "—", ""],
                ["retrieval.recall@1", "0.75", "0.75"],
            ],
        },
        {"family": "hierarchy", "rows": [["hierarchy.hierarchical_f1", "0.8", "0.8"]]},
    ]
    proc = subprocess.run(
        ["node", str(dom), json.dumps(spec), str(js)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["asc"] == ["retrieval.recall@10", "retrieval.mrr", "retrieval.recall@1", "retrieval.map"]
    assert got["desc"] == ["retrieval.recall@1", "retrieval.mrr", "retrieval.recall@10", "retrieval.map"]
    assert got["sort"] == "descending"
    assert got["visible"] == [["retrieval.recall@1", "retrieval.recall@10"], None]  # in the sorted order


def test_markdown_shows_drivers_formula_and_inconsistent_filter_logs(tmp_path):
    from kg_rageval.audit.report_markdown import markdown

    res = _stub_audit(
        tmp_path, TREE, {"big1": (6, 4), "big2": (6, 4), "x1": (0, 2), "x2": (2, 0)}, ["stub_accuracy >= 0.7"]
    )
    md = markdown(res)
    # x1 lacks 2 × 0.7 = 1.4 of the 24 × (0.7 − 14/24) = 2.8 missing units; depth 3 under the virtual root
    assert "| `stub_accuracy >= 0.7` | x1 | X1 | 3 | 2 | 0.0000 | 0.5000 | 1.1667 |" in md
    (tmp_path / "o.csv").write_text("child,parent,label\nroot,,Root\na,root,A\nb,root,B\n")
    _write(tmp_path / "c.jsonl", [{"id": "x", "categories": ["a"]}, {"id": "y", "categories": ["b"]}])
    _write(
        tmp_path / "r.jsonl",
        [
            {
                "id": "q1",
                "retrieval": {
                    "gold": ["y"],
                    "run": ["y"],
                    "filters": [{"field": "category", "op": "within", "value": "a"}],
                },
            }
        ],
    )
    cfg = config_from_mapping(
        {
            "ontology": "o.csv",
            "records": "r.jsonl",
            "corpus": "c.jsonl",
            "families": {"retrieval": {}},
            "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
            "gates": ["recall@10 >= 0"],
        },
        base_dir=tmp_path,
    )
    md = markdown(run_audit(cfg, progress=False))
    assert "inconsistent filter logs (retrieved although the logged filters exclude them): 1." in md


def test_conformance_unscored_entries_carry_reason_codes(tmp_path):
    from conformance_helpers import build_attack_like

    from kg_rageval.families.conformance import score_conformance
    from kg_rageval.families.conformance.spec import load_spec

    recs = _conf_records() + [
        {"id": "silent", "answer": {"text": "T1003"}},
        {"id": "unk", "answer": {"refused": True}},
    ]
    ev = score_conformance(build_attack_like(), recs, load_spec(CONF / "attack_spec.yaml"))
    assert {u["record_id"]: (u["reason"], u["code"]) for u in ev.unscored} == {
        "no0": ("correct refusal", "not_applicable"),
        "no1": ("correct refusal", "not_applicable"),
        "silent": ("missing output", "missing_prediction"),
        "unk": ("refused", "not_applicable"),
    }


def test_per_record_values_vectorised_equals_record_by_record():
    """A ratio of sums (hR) is computed for all records at once, F1 (not a ratio) one by one:
    both equal finalizing each record alone."""
    import numpy as np

    from kg_rageval.audit.config import load_config
    from kg_rageval.audit.failing import per_record_values

    res = run_audit(load_config(AUDIT / "real.yaml"), progress=False)
    for fam in ("hierarchy", "retrieval"):
        ev = res.families[fam].evaluations[0]
        ids, stats = ev.per_record_stats()
        names = list(stats)
        mat = np.stack([stats[k] for k in names], axis=1)
        for metric in (
            ("hierarchical_recall", "hierarchical_f1") if fam == "hierarchy" else ("mrr", "recall@10")
        ):
            values, weights = per_record_values(ev.family.finalize, metric, names, mat)
            for j in range(len(ids)):
                m = ev.family.finalize(dict(zip(names, mat[j].tolist())))[metric]
                if m.value is None:
                    assert np.isnan(values[j])
                else:
                    assert values[j] == pytest.approx(m.value)
                    assert weights[j] == pytest.approx(m.denominator or 1.0)


def test_gate_on_a_linking_name_the_alignment_does_not_produce_is_exit_2(tmp_path):
    from kg_rageval.audit.runner import run_audit as run

    _write(
        tmp_path / "r.jsonl",
        [
            {
                "id": "a",
                "text": "a sedan",
                "mentions": {
                    "gold": [{"start": 2, "end": 7, "id": "sedan"}],
                    "pred": [{"start": 0, "end": 7, "id": "sedan"}],
                },
            }
        ],
    )
    base = {"ontology": str(GEN / "vehicles.csv"), "records": "r.jsonl"}
    for opts, gate in (
        ({"overlap": True}, "linking.strong_all_match_f1 >= 0.5"),
        ({}, "linking.overlap_all_match_f1 >= 0.5"),
    ):
        cfg = {**base, "families": {"linking": opts}, "gates": [gate]}
        with pytest.raises(ConfigError, match=r"is produced only with families\.linking\.overlap = "):
            run(config_from_mapping(cfg, base_dir=tmp_path), progress=False)
    cfg = {
        **base,
        "families": {"linking": {"overlap": True}},
        "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
        "gates": ["linking.overlap_all_match_f1 >= 0.5"],
    }
    res = run(config_from_mapping(cfg, base_dir=tmp_path), progress=False)
    assert _by_gate(res)["linking.overlap_all_match_f1 >= 0.5"].observed == 1.0  # [0,7) overlaps [2,7)


def test_shacl_rows_carry_the_branch_and_slices():
    from conformance_helpers import build_attack_like

    from kg_rageval.families.conformance.shacl import score_shacl
    from kg_rageval.families.conformance.spec import load_spec

    ev = score_shacl(
        build_attack_like(),
        _conf_records(),
        ROOT / "shapes" / "output-attack.ttl",
        load_spec(CONF / "attack_spec.yaml"),
    )
    assert dict(zip(ev.record_ids.tolist(), ev.keys["gold_node"].tolist())) == {
        "r1": "T1003",
        "r3": "T1059.001",
    }
    assert ev.keys["slice:intent"].tolist() == ["technique_lookup", "technique_lookup"]
    assert ev.unscored_counts == {"correct refusal": 2}


def test_failing_records_are_escaped_in_html_and_markdown(tmp_path):
    from kg_rageval.audit.report_html import html_report
    from kg_rageval.audit.report_markdown import markdown

    res = _stub_audit(tmp_path, TREE, {"x1": (0, 1), "x2": (1, 0)}, ["stub_accuracy >= 0.9"])
    res.failing[0]["records"][0]["query"] = "<img src=x onerror=alert(1)> | pipe"
    html = html_report(res)
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt; | pipe" in html
    assert "&lt;img src=x onerror=alert(1)&gt; \\| pipe" not in html
    assert "\\| pipe |" in markdown(res)  # a pipe cannot break the Markdown table


def test_html_hierarchy_view_for_a_failed_node_gate_shows_its_subtree(tmp_path):
    import re

    from kg_rageval.audit.report_html import html_report

    res = _stub_audit(
        tmp_path,
        TREE,
        {"big1": (6, 4), "big2": (6, 4), "x1": (0, 2), "x2": (2, 0)},
        ["stub_accuracy >= 0.7"],
        node_gates={"X": ["stub_accuracy >= 0.9"]},
    )
    html = html_report(res)
    assert "(2 failed gates)" in html
    sub = html.split("stub.stub_accuracy per branch under X (gate", 1)[1].split("</svg>", 1)[0]
    shown = re.findall(r"<title>([^<]+)</title>", sub)[1:]  # the svg title, then one per node
    assert shown == ["X", "x1", "x2"]


def test_markdown_per_branch_table_for_every_failed_gate(tmp_path):
    from kg_rageval.audit.report_markdown import markdown

    res = _stub_audit(
        tmp_path,
        TREE,
        {"big1": (6, 4), "big2": (6, 4), "x1": (0, 2), "x2": (2, 0)},
        ["stub_accuracy >= 0.7"],
        node_gates={"X": ["stub_accuracy >= 0.9"]},
    )
    md = markdown(res)
    assert "## Per-branch `stub.stub_accuracy` (gate `stub_accuracy >= 0.7`)" in md
    sub = md.split("## Per-branch `stub.stub_accuracy` under X (gate ", 1)[1].split("\n\n", 2)[1]
    assert [line.split(" | ")[0][2:] for line in sub.splitlines()[2:]] == ["X", "x1", "x2"]


def test_prov_ttl_is_part_of_the_atomic_report_set(tmp_path):
    from kg_rageval.audit.reports import sha256_file, write_reports

    res = run_audit(config_from_mapping(_prov_cfg(tmp_path), base_dir=tmp_path), progress=False)
    out = tmp_path / "out"
    written = write_reports(res, out)
    man = json.loads((out / "manifest.json").read_text())
    assert man["reports"]["prov.ttl"] == sha256_file(Path(written["prov"]))
    cfg = _prov_cfg(tmp_path, trail=False)
    write_reports(run_audit(config_from_mapping(cfg, base_dir=tmp_path), progress=False), out)
    # the new set has no trail: the old one moved aside with the old set, not left beside it
    assert not (out / "prov.ttl").exists() and (out / "previous" / "prov.ttl").exists()
    assert "prov.ttl" not in json.loads((out / "manifest.json").read_text())["reports"]
