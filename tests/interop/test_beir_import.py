"""BEIR folders in (kg_rageval/interop/beir.py): the imported records score the nDCG@10 and
Recall@10 that ``score retrieval --qrels --run`` and pytrec_eval give on the same files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.cli.main import main
from kg_rageval.interop.formats import read
from kg_rageval.records import read_records
from kg_rageval.scoring import get_scorer

BEIR = Path(__file__).resolve().parents[2] / "fixtures" / "interop" / "beir"
RUN = BEIR / "run.trec"


def _pytrec(qrels_tsv: Path, run: Path) -> dict[str, dict[str, float]]:
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec_eval is the reference")
    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_tsv.read_text().splitlines()[1:]:
        q, d, g = line.split("\t")
        qrels.setdefault(q, {})[d] = int(g)
    runs: dict[str, dict[str, float]] = {}
    for line in run.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        runs.setdefault(q, {})[d] = float(s)
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.10"})
    return ev.evaluate({q: r for q, r in runs.items() if q in qrels})


def test_records_map_the_folder_and_count_what_lacks():
    got = read("beir", BEIR, run=RUN)
    assert [r["id"] for r in got.records] == ["q1", "q2", "q3", "q4", "q5"]  # the test split only
    q1 = got.records[0]
    assert q1["query"] == "Which technique covers dumping LSASS memory?"
    assert q1["retrieval"]["gold"] == {"d2": 2, "d1": 1, "d3": 0}
    assert q1["retrieval"]["run"] == {"d1": 12.5, "d2": 11.0, "d3": 11.0, "d11": 7.25}
    assert q1["source"]["extra"] == {"metadata": {"tactic": "TA0006"}}
    assert got.missing == {"id": 0, "query": 0, "retrieval.gold": 0, "retrieval.run": 0}
    assert got.counts["n_run_only"] == 1 and got.counts["run_only"] == ["q7"]
    assert got.counts["n_gold_not_in_corpus"] == 0
    train = read("beir", BEIR, split="train")
    assert [r["id"] for r in train.records] == ["q6"] and "retrieval.run" not in train.missing


def test_scoring_the_records_equals_the_qrels_run_mode_and_pytrec_eval(tmp_path, capsys):
    records = read("beir", BEIR, run=RUN).records
    m = get_scorer("retrieval").score(None, records).metrics()
    ref = _pytrec(BEIR / "qrels" / "test.tsv", RUN)
    want_ndcg = sum(v["ndcg_cut_10"] for v in ref.values()) / len(ref)
    want_recall = sum(v["recall_10"] for v in ref.values()) / len(ref)
    assert len(ref) == 5
    assert m["retrieval.ndcg@10"].value == pytest.approx(want_ndcg, abs=1e-12)
    assert m["retrieval.recall@10"].value == pytest.approx(want_recall, abs=1e-12)
    # worked by hand: q3 (ties d10 = d9 = d8 at 5.5 rank d9, d8, d10) finds all 3 relevant,
    # q5 none; Recall@10 = (2/2 + 3/3 + 3/3 + 1/2 + 0/2) / 5 = 0.7
    assert want_recall == pytest.approx(0.7)
    out = tmp_path / "beir.jsonl"
    assert main(["import", "beir", str(BEIR), "--run", str(RUN), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(
        [
            "score", "retrieval", "--qrels", str(BEIR / "qrels" / "test.tsv"), "--run", str(RUN),
            "-m", "nDCG@10", "-m", "R@10", "--format", "json",
        ]
    ) == 0  # fmt: skip
    cli = json.loads(capsys.readouterr().out)
    values = _values(cli)
    assert values["nDCG@10"] == pytest.approx(want_ndcg, abs=1e-12)
    assert values["R@10"] == pytest.approx(want_recall, abs=1e-12)
    back = read_records(out)
    again = get_scorer("retrieval").score(None, back).metrics()
    assert again["retrieval.ndcg@10"].value == m["retrieval.ndcg@10"].value


def _values(payload) -> dict[str, float]:
    """The measure values in a ``score retrieval --qrels --format json`` payload."""
    found: dict[str, float] = {}

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k in ("nDCG@10", "R@10") and isinstance(v, (int, float)):
                    found.setdefault(k, float(v))
                elif k in ("nDCG@10", "R@10") and isinstance(v, dict) and "value" in v:
                    found.setdefault(k, float(v["value"]))
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(payload)
    return found


def test_a_judged_query_missing_from_the_run_is_a_missing_run(tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("".join(x + "\n" for x in RUN.read_text().splitlines() if not x.startswith("q5 ")))
    got = read("beir", BEIR, run=run)
    assert got.missing["retrieval.run"] == 1 and "run" not in got.records[4]["retrieval"]
    m = get_scorer("retrieval").score(None, got.records).metrics()
    ref = _pytrec(BEIR / "qrels" / "test.tsv", run)  # pytrec_eval: the 4 queries in the run
    assert len(ref) == 4
    mean = sum(v["ndcg_cut_10"] for v in ref.values()) / 4
    assert m["retrieval.ndcg@10"].value == pytest.approx(mean * 4 / 5, abs=1e-12)  # q5 scores 0


def test_bad_rows_name_file_row_and_field(tmp_path):
    folder = tmp_path / "b"
    shutil.copytree(BEIR, folder)
    with open(folder / "queries.jsonl", "a") as fh:
        fh.write(json.dumps({"_id": 7, "text": 3}) + "\n" + json.dumps({"text": "no id"}) + "\n")
    with pytest.raises(InputError, match=r"queries\.jsonl, row 8, field _id: expected a non-empty string id"):
        read("beir", folder)
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": ["x"]}) + "\n")
    with pytest.raises(InputError, match=r"queries\.jsonl, row 1, field text: expected a string, found list"):
        read("beir", folder)
    (folder / "qrels" / "test.tsv").unlink()
    with pytest.raises(InputError, match=r"has no qrels/test\.tsv"):
        read("beir", folder)


def test_a_query_not_in_queries_jsonl_has_no_query(tmp_path):
    folder = tmp_path / "b"
    shutil.copytree(BEIR, folder)
    lines = (folder / "queries.jsonl").read_text().splitlines()
    (folder / "queries.jsonl").write_text("\n".join(lines[1:]) + "\n")
    got = read("beir", folder)
    assert got.missing["query"] == 1 and "query" not in got.records[0]
    assert got.records[0]["source"]["extra"] == {"not_in_queries": True}
