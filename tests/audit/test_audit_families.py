"""The audit over the real metric families, on data whose answers are worked by hand
(fixtures/audit/real.yaml explains the numbers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_rageval.audit.config import load_config
from kg_rageval.audit.runner import run_audit
from kg_rageval.cli.main import main

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "audit"


def test_real_families_gate_decisions():
    res = run_audit(load_config(FIX / "real.yaml"), progress=False)
    by = {str(r.gate): r for r in res.gate_results}
    assert by["retrieval.recall@10 >= 0.6"].status == "pass"
    assert by["retrieval.recall@10 >= 0.6"].observed == pytest.approx(0.625)
    assert by["retrieval.mrr >= 0.7"].status == "fail"
    assert by["retrieval.mrr >= 0.7"].observed == pytest.approx(0.625)
    assert by["hierarchy.hierarchical_f1 >= 0.85"].observed == pytest.approx(6 / 7)
    assert by["hierarchy.hierarchical_f1 >= 0.85"].status == "pass"
    assert by["hierarchy.hierarchical_recall >= 0.8"].observed == pytest.approx(0.75)
    assert by["hierarchy.hierarchical_recall >= 0.8"].status == "fail"
    # no record has a mentions section: the linking family has no evidence, its gate is missing
    assert res.families["linking"].status == "no_evidence"
    assert by["linking.linking_macro_f1 >= 0.5"].status == "missing"
    # slices: lookup MRR = (1 + 0.5)/2, compare recall@10 = (0 + 0.5)/2
    assert by["retrieval.mrr[slice:intent=lookup] >= 0.75"].observed == pytest.approx(0.75)
    assert by["retrieval.mrr[slice:intent=lookup] >= 0.75"].status == "pass"
    assert by["retrieval.recall@10[slice:intent=compare] > 0.25"].status == "fail"
    assert by["retrieval.recall@10[slice:intent=compare] > 0.25"].observed == pytest.approx(0.25)
    # records without a labels section are not missing runs of the hierarchy family
    assert by["hierarchy.missing_run_rate <= 0"].status == "pass"
    assert res.exit_code == 1
    # the confusion relations of the hierarchy family: one exact, one parent
    assert res.relations.get("hierarchy", {}).get("exact") == 1
    assert res.relations["hierarchy"].get("parent") == 1


def test_real_families_cli_exit_code():
    assert main(["audit", "--config", str(FIX / "real.yaml"), "--quiet"]) == 1


def test_missing_run_scored_by_the_family_counts_against_the_budget(tmp_path):
    """A record whose run is null is scored by the retrieval family as an empty run (its
    missing_run_rate numerator); the audit counts it as a missing run: 1/4 > budget 0.2, so
    the retrieval gates are missing evidence, whatever their values."""
    import json
    import shutil

    for f in ("vehicles.csv", "real_corpus.jsonl"):
        shutil.copy(FIX / f, tmp_path / f)
    recs = [json.loads(x) for x in (FIX / "real_records.jsonl").read_text().splitlines()]
    recs[2]["retrieval"]["run"] = None
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    from kg_rageval.audit.config import config_from_mapping

    cfg = config_from_mapping(
        {
            "ontology": "vehicles.csv",
            "records": "r.jsonl",
            "corpus": "real_corpus.jsonl",
            "families": {"retrieval": {}},
            "missing_runs": {"budget": 0.2},
            "gates": ["retrieval.recall@10 >= 0.1"],
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    by = {str(r.gate): r for r in res.gate_results}
    assert res.counts["families"]["retrieval"]["missing_runs"] == 1
    assert by["retrieval.missing_run_rate <= 0.2"].status == "fail"
    assert by["retrieval.missing_run_rate <= 0.2"].observed == pytest.approx(0.25)
    assert by["retrieval.recall@10 >= 0.1"].status == "missing"
    assert "missing runs above budget" in by["retrieval.recall@10 >= 0.1"].reason


def test_unknown_family_or_option_is_a_config_error(tmp_path):
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.base.errors import ConfigError

    base = {
        "ontology": str(FIX / "vehicles.csv"),
        "records": str(FIX / "real_records.jsonl"),
        "gates": ["retrieval.mrr >= 0"],
    }
    with pytest.raises(ConfigError, match="families.retrieval: .*bogus"):
        run_audit(config_from_mapping({**base, "families": {"retrieval": {"bogus": 1}}}), progress=False)
    with pytest.raises(
        ConfigError, match=r"unknown family 'retreival' \(did you mean 'retrieval'\?\); known: .*retrieval"
    ):
        run_audit(config_from_mapping({**base, "families": {"retreival": {}}}), progress=False)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        f"ontology: {FIX / 'vehicles.csv'}\nrecords: {FIX / 'real_records.jsonl'}\n"
        "families: {retrieval: {bogus: 1}}\ngates: ['retrieval.mrr >= 0']\n"
    )
    assert main(["audit", "--config", str(cfg), "--quiet"]) == 2
