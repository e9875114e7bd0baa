"""Hostile inputs: a family's section absent from most records (issue #28).

A family that is in the audit (its config's ``families`` names it, or a gate reads one of its
metrics) and whose section every record must carry (system, judge, context, relations) counts
a record without that section as a *missing run* (code ``missing_section``): with the default
budget 0 its budget gate FAILs and its gates are MISSING — never a PASS on the few records that
happen to carry the section. Each case: 10 records, 2 with the section.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg_rageval.audit.config import load_config
from kg_rageval.audit.runner import run_audit

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "quality"
N, WITH = 10, 2


def _audit(
    tmp_path: Path,
    records: list[dict],
    families: dict,
    gates: list[str],
    budget: float = 0.0,
    ontology: Path = FIX / "vehicles.csv",
    **extra,
):
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    cfg = {
        "name": "hostile-sections",
        "ontology": str(ontology),
        "records": "records.jsonl",
        "families": families,
        "gates": gates,
        "missing_runs": {"budget": budget},
        # 10 records: the gates are held to their missing runs here, not to the 30-row default
        "min_rows": 1,
        **extra,
    }
    (tmp_path / "audit.yaml").write_text(json.dumps(cfg))
    res = run_audit(load_config(tmp_path / "audit.yaml"), progress=False)
    return res, {str(r.gate): r for r in res.gate_results}


def _system(ms: float) -> dict:
    return {"latency_ms": {"total": ms}}


def _judge() -> list[dict]:
    return [
        {"rubric": "answer_correctness", "judge": "j", "output": {"verdict": "correct"}, "human": "correct"}
    ]


def _context() -> dict:
    return {"contexts": [{"id": "d1", "text": "passage d1"}, {"id": "d2", "text": "passage d2"}]}


def _assert_missing_runs(res, by, fam: str, gate: str, n_missing: int = N - WITH) -> None:
    budget = by[f"{fam}.missing_run_rate <= 0"]
    assert budget.status == "fail"
    assert budget.observed == pytest.approx(n_missing / N)
    assert f"{n_missing}/{N} {fam} records are missing runs" in budget.reason
    assert by[gate].status == "missing"
    assert "missing runs above budget" in by[gate].reason
    c = res.counts["families"][fam]
    assert c["family_records"] == N and c["missing_runs"] == n_missing and c["with_section"] == WITH
    assert c["unscored_codes"].get("missing_section") == n_missing
    assert c["unscored_codes"].get("no_section", 0) == 0  # the family's own entries not counted twice
    assert res.exit_code == 1


# ---------------------------------------------------------------------- system
# p95 on two rows would be missing evidence under the quantile rule (59 rows): declared here, so
# that what these tests see is the missing-run rule alone
P95_ON_TWO = {"default": 1, "metrics": {"p95(latency.total_ms)": 1}}


def test_system_p95_on_the_fastest_two_of_ten_is_missing_not_pass(tmp_path):
    # q0, q1: 100 and 200 ms (p95 = 100 + 0.95·100 = 195 ms, a PASS before); q2..q9: no timings
    recs = [{"id": f"q{i}", **({"system": _system(100.0 * (i + 1))} if i < WITH else {})} for i in range(N)]
    res, by = _audit(tmp_path, recs, {"system": {}}, ["p95(latency.total_ms) <= 1500"], min_rows=P95_ON_TWO)
    _assert_missing_runs(res, by, "system", "latency.total_ms.p95 <= 1500")
    assert by["latency.total_ms.p95 <= 1500"].observed == pytest.approx(195.0)  # shown, not decided


def test_system_gated_on_but_families_all_counts_missing_runs(tmp_path):
    # ``families`` empty ("all families"): system is in the audit because a gate reads it
    recs = [{"id": f"q{i}", **({"system": _system(100.0)} if i < WITH else {})} for i in range(N)]
    res, by = _audit(tmp_path, recs, {}, ["p50(latency.total_ms) <= 1500"])
    _assert_missing_runs(res, by, "system", "latency.total_ms.p50 <= 1500")


def test_system_within_a_budget_is_decided_on_the_records_there(tmp_path):
    # 8/10 missing under a budget of 0.8: the budget passes and the gate is decided (195 ms)
    recs = [{"id": f"q{i}", **({"system": _system(100.0 * (i + 1))} if i < WITH else {})} for i in range(N)]
    res, by = _audit(
        tmp_path, recs, {"system": {}}, ["p95(latency.total_ms) <= 1500"], budget=0.8, min_rows=P95_ON_TWO
    )
    assert by["system.missing_run_rate <= 0.8"].status == "pass"
    assert by["latency.total_ms.p95 <= 1500"].status == "pass"
    assert by["latency.total_ms.p95 <= 1500"].observed == pytest.approx(195.0)


def test_no_record_has_the_section_is_missing_evidence(tmp_path):
    recs = [{"id": f"q{i}", "judges": _judge()} for i in range(N)]
    res, by = _audit(tmp_path, recs, {"system": {}, "judge": {}}, ["p95(latency.total_ms) <= 1500"])
    g = by["latency.total_ms.p95 <= 1500"]
    assert g.status == "missing" and "no record has a 'system' section" in g.reason
    assert res.families["system"].status == "no_evidence"
    assert res.exit_code == 1


def test_family_not_in_the_audit_keeps_absent_sections_not_applicable(tmp_path):
    # judge runs ("all families") but neither ``families`` names it nor a gate reads it
    recs = [
        {"id": f"q{i}", "system": _system(100.0), **({"judges": _judge()} if i < WITH else {})}
        for i in range(N)
    ]
    res, by = _audit(tmp_path, recs, {}, ["p50(latency.total_ms) <= 1500"])
    assert by["latency.total_ms.p50 <= 1500"].status == "pass"
    assert res.counts["families"]["judge"]["missing_runs"] == 0
    assert "judge.missing_run_rate <= 0" not in by or by["judge.missing_run_rate <= 0"].status == "pass"
    assert res.exit_code == 0


# ---------------------------------------------------------------------- judge
def test_judge_accuracy_on_two_of_ten_is_missing_not_pass(tmp_path):
    recs = [{"id": f"q{i}", **({"judges": _judge()} if i < WITH else {})} for i in range(N)]
    res, by = _audit(tmp_path, recs, {"judge": {}}, ["judge.accuracy >= 0.7"])
    assert by["judge.accuracy >= 0.7"].observed == pytest.approx(1.0)  # 2/2 agree: a PASS before
    _assert_missing_runs(res, by, "judge", "judge.accuracy >= 0.7")


# ---------------------------------------------------------------------- context
@pytest.mark.parametrize("chunk_size", [0, 3])  # held, and streamed in chunks of 3
def test_context_coverage_on_two_of_ten_is_missing_not_pass(tmp_path, chunk_size):
    # q0, q1: both supplied chunks cited (coverage 4/4 = 1.0, a PASS before); q2..q9: answers only
    recs = [
        {
            "id": f"q{i}",
            "answer": {"text": f"answer {i}", "citations": ["d1", "d2"]},
            **({"retrieval": _context()} if i < WITH else {}),
        }
        for i in range(N)
    ]
    res, by = _audit(
        tmp_path, recs, {"context": {}}, ["context.citation_coverage >= 0.4"], chunk_size=chunk_size
    )
    assert by["context.citation_coverage >= 0.4"].observed == pytest.approx(1.0)
    _assert_missing_runs(res, by, "context", "context.citation_coverage >= 0.4")


# ---------------------------------------------------------------------- relations
def test_relations_f1_on_two_of_ten_is_missing_not_pass(tmp_path):
    # q0, q1: the gold triple answered exactly (F1 1.0, a PASS before); q2..q9: no relations
    from kg_rageval.ontology import load_ontology
    from kg_rageval.ontology.cache import save_compiled

    d = FIX.parent / "ontology"
    onto = load_ontology(d / "kg_catalogue.csv", triples=str(d / "kg_triples.csv"))
    save_compiled(onto, tmp_path / "cat.kgro")
    t = ["acme-x1", "compatible-with", "acme-dock"]
    rel = {"gold": [t], "answer": [t]}
    recs = [{"id": f"q{i}", **({"relations": rel} if i < WITH else {})} for i in range(N)]
    res, by = _audit(
        tmp_path, recs, {"relations": {}}, ["relations.triple_f1 >= 0.9"], ontology=tmp_path / "cat.kgro"
    )
    assert by["relations.triple_f1 >= 0.9"].observed == pytest.approx(1.0)
    _assert_missing_runs(res, by, "relations", "relations.triple_f1 >= 0.9")
    fail = {f["gate"]: f for f in res.failing}  # the failing-records list names them
    listed = fail["relations.missing_run_rate <= 0"]
    assert listed["n_driving"] == N - WITH
    assert [r["id"] for r in listed["records"]] == [f"q{i}" for i in range(WITH, N)]
    assert all(r["missing_run"] for r in listed["records"])


# ---------------------------------------------------------------------- refusals
def _refusal_records() -> list[dict]:
    """a1 (2 claims, 1 supported: 0.5), a2 (1 claim, supported: 1.0): answerable, judged;
    u1 (refusal with text), u2 (refusal without text): unanswerable, correctly refused, no judgment."""

    def judgment(claims: list[str], supported: list[str]) -> dict:
        bad = [c for c in claims if c not in supported]
        return {"claims": claims, "supported": supported, "unsupported": bad}

    ref = {"answer": "sedan", "answerable": True}
    return [
        {
            "id": "a1",
            "reference": ref,
            "answer": {"text": "a sedan is a car", "judgment": judgment(["c1", "c2"], ["c1"])},
        },
        {"id": "a2", "reference": ref, "answer": {"text": "sedan", "judgment": judgment(["c1"], ["c1"])}},
        {
            "id": "u1",
            "reference": {"answerable": False},
            "answer": {"text": "The evidence does not say.", "refused": True},
        },
        {"id": "u2", "reference": {"answerable": False}, "answer": {"refused": True}},
    ]


def test_correct_refusals_are_no_claims_not_missing_runs():
    from kg_rageval.families.generation.faithfulness import score_faithfulness

    ev = score_faithfulness(_refusal_records())
    m = {k: v.value for k, v in ev.metrics().items()}
    assert m["faithfulness"] == pytest.approx((0.5 + 1.0) / 2)  # the refusals are in neither mean
    assert m["faithfulness_micro"] == pytest.approx(2 / 3)
    assert m["no_claims"] == 2 and m["answers_scored"] == 2
    assert m["no_claims_rate"] == pytest.approx(2 / 4)  # 2 refusals of 4 valid judgments
    assert m["invalid_judgment_rate"] == pytest.approx(0 / 2)  # 2 attempted: the refusals were not
    assert ev.unscored == []
    assert sorted(ev.details["judgment_source"].tolist()) == ["record", "record", "refusal", "refusal"]


def test_an_unjudged_answer_beside_refusals_is_still_a_missing_run():
    from kg_rageval.families.generation.faithfulness import score_faithfulness

    recs = [
        *_refusal_records(),
        {"id": "u3", "reference": {"answerable": False}, "answer": {"text": "it is a truck"}},  # not refused
    ]
    ev = score_faithfulness(recs)
    assert [(u["record_id"], u["code"]) for u in ev.unscored] == [("u3", "missing_prediction")]


def test_audit_correct_refusals_pass_faithfulness_and_refusal_gates_at_budget_0(tmp_path):
    res, by = _audit(
        tmp_path,
        _refusal_records(),
        {"generation": {}},
        ["generation.faithfulness >= 0.7", "generation.refusal_recall >= 0.5"],
    )
    assert by["generation.missing_run_rate <= 0"].status == "pass"
    assert by["generation.missing_run_rate <= 0"].observed == 0.0
    assert res.counts["families"]["generation"]["missing_runs"] == 0
    assert by["generation.faithfulness >= 0.7"].status == "pass"
    assert by["generation.faithfulness >= 0.7"].observed == pytest.approx(0.75)
    assert by["generation.refusal_recall >= 0.5"].status == "pass"
    assert by["generation.refusal_recall >= 0.5"].observed == pytest.approx(2 / 2)
