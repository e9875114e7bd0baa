"""What the audit reports count and show: the virtual root is no node, a record left unscored
by two evaluations of one family counts once, and the category diagnosis of false exclusions
is in every report (it was only in ``score retrieval --format json``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.reports import write_reports
from kg_rageval.audit.runner import run_audit
from kg_rageval.cli.main import main

FIX = Path(__file__).resolve().parents[2] / "fixtures"


def _multi_root(tmp_path: Path) -> Path:
    """attack-mini without its single root ``attack``: two real roots (TA0005, TA0006) under a
    virtual root; 10 real nodes."""
    lines = (FIX / "retrieval" / "attack-mini.tsv").read_text().splitlines()
    kept = [ln if not ln.split("\t")[1] == "attack" else ln.replace("\tattack\t", "\t\t") for ln in lines]
    kept = [ln for ln in kept if not ln.startswith("attack\t")]
    path = tmp_path / "attack-two-roots.tsv"
    path.write_text("\n".join(kept) + "\n")
    return path


def _retrieval_audit(tmp_path: Path):
    onto = _multi_root(tmp_path)
    for f in ("category_records.jsonl", "category_corpus.jsonl"):
        shutil.copy(FIX / "retrieval" / f, tmp_path / f)
    cfg = config_from_mapping(
        {
            "ontology": onto.name,
            "records": "category_records.jsonl",
            "corpus": "category_corpus.jsonl",
            "families": {"retrieval": {}},
            "missing_runs": {"budget": 1.0},
            "gates": ["retrieval.recall@10 >= 0.99"],  # fails: the per-branch chart is drawn
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    paths = write_reports(res, tmp_path / "out")
    return res, {k: Path(v) for k, v in paths.items()}


def test_virtual_root_is_not_counted_or_charted_and_diagnosis_is_in_every_report(tmp_path, capsys):
    res, paths = _retrieval_audit(tmp_path)
    assert res.ontology.virtual_root and len(res.ontology) == 11  # the index holds the virtual root
    doc = json.loads(paths["json"].read_text())
    html = paths["html"].read_text()
    md = paths["markdown"].read_text()
    # the header counted 11 nodes (the virtual root among them) and the chart named it
    assert doc["ontology"]["nodes"] == 10 and doc["ontology"]["virtual_root"] is True
    assert "(10 nodes)" in html and "(10 nodes, `" in md
    assert "per branch" in html and "(virtual root)" not in html and "kgr:virtual-root" not in html
    assert "Defense Evasion" in html  # a real root is charted at the top level instead
    # the category diagnosis: the same table as `score retrieval` on the same files (reference)
    code = main(
        [
            "score",
            "retrieval",
            "--ontology",
            str(tmp_path / "attack-two-roots.tsv"),
            "--data",
            str(tmp_path / "category_records.jsonl"),
            "--corpus",
            str(tmp_path / "category_corpus.jsonl"),
            "--format",
            "json",
        ]
    )
    ref = json.loads(capsys.readouterr().out)["category_diagnosis"]
    assert code == 0 and doc["category_diagnosis"] == ref
    # by hand (fixtures/retrieval/category_records.jsonl): c1 and c2 filter on the sibling of
    # their gold category under T1562; c4 filters on T1110 for a T1003.002 document (under TA0006)
    assert ref["n_false_exclusions"] == 3
    assert [(r["cause"], r["under"], r["n"]) for r in ref["by_cause_under"]] == [
        ("sibling", "T1562", 2),
        ("unrelated", "TA0006", 1),
    ]
    assert "## Where false exclusions come from" in md
    assert "| sibling | T1562 | Impair Defenses | 2 | 66.7% |" in md
    assert "| unrelated | TA0006 | Credential Access | 1 | 33.3% |" in md
    assert "<h2>Where false exclusions come from</h2>" in html
    assert '<td>sibling</td><td>T1562</td><td>Impair Defenses</td><td class="num">2</td>' in html


def test_a_record_unscored_by_two_evaluations_of_a_family_counts_once(tmp_path):
    """Three generation records without an answer text: faithfulness and unseen-concepts both
    leave each unscored as ``no answer``; the family's count said ``no answer ×6``."""
    shutil.copy(FIX / "audit" / "vehicles.csv", tmp_path / "vehicles.csv")
    recs = [
        {
            "id": f"r{i}",
            "answer": {"refused": False},
            "reference": {"answer": "x", "concepts": ["car"]},
            "context": [{"id": "d", "text": "a car"}],
        }
        for i in range(3)
    ]
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    cfg = config_from_mapping(
        {
            "ontology": "vehicles.csv",
            "records": "r.jsonl",
            "families": {"generation": {}},
            "missing_runs": {"budget": 1.0},
            "gates": ["generation.faithfulness >= 0.1"],
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    per_eval = [
        sum(1 for u in ev.unscored if u["reason"] == "no answer")
        for ev in res.families["generation"].evaluations
    ]
    assert sorted(per_eval) == [0, 0, 0, 3, 3]  # two evaluations say it of the same three records
    c = res.counts["families"]["generation"]
    assert c["family_records"] == 3 and c["missing_runs"] == 3
    assert c["unscored_reasons"]["no answer"] == 3  # was 6
    assert c["unscored_codes"]["missing_prediction"] == 3  # was 6
    gate = next(r for r in res.gate_results if str(r.gate) == "generation.missing_run_rate <= 1")
    assert "no answer ×3," in gate.reason and "×6" not in gate.reason
    md = Path(write_reports(res, tmp_path / "out")["markdown"]).read_text()
    assert "no answer: 3" in md and "no answer: 6" not in md
