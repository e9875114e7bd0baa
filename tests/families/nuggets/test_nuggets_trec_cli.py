"""The TREC RAG Track nugget files (AutoNuggetizer's assign / create output, a human assignment
file) read as records, and ``kg-rageval score nuggets`` on records and on those files."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kg_rageval.base.errors import InputError
from kg_rageval.cli.main import cli, main
from kg_rageval.families.nuggets.inputs import read_trec_nuggets


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _files(tmp_path):
    nuggets = _write(
        tmp_path / "nuggets.jsonl",
        [
            {
                "qid": "2024-1",
                "query": "what is a sedan",
                "nuggets": [
                    {"text": "a car", "importance": "vital"},
                    {"text": "four doors", "importance": "vital"},
                    {"text": "a trunk", "importance": "okay"},
                ],
            }
        ],
    )
    judge = _write(
        tmp_path / "assign.jsonl",
        [
            {
                "qid": "2024-1",
                "run_id": "runA",
                "query": "what is a sedan",
                "answer_text": "A sedan is a car with four doors.",
                "nuggets": [  # importance from the nugget file
                    {"text": "a car", "assignment": "support"},
                    {"text": "four doors", "assignment": "partial_support"},
                    {"text": "a trunk", "assignment": "not_support"},
                ],
            },
            {
                "qid": "2024-1",
                "run_id": "runB",
                "nuggets": [
                    {"text": "a car", "importance": "vital", "assignment": "support"},
                    {"text": "four doors", "importance": "vital", "assignment": "support"},
                    {"text": "a trunk", "importance": "okay", "assignment": "support"},
                ],
            },
        ],
    )
    human = _write(
        tmp_path / "human.jsonl",
        [
            {
                "qid": "2024-1",
                "run_id": "runA",
                "nuggets": [
                    {"text": "a car", "assignment": "support"},
                    {"text": "four doors", "assignment": "not_support"},
                ],
            }
        ],
    )
    return nuggets, judge, human


def test_trec_files_read_as_records(tmp_path):
    nuggets, judge, human = _files(tmp_path)
    recs = read_trec_nuggets(judge, nuggets=nuggets, human=human)
    assert [r["id"] for r in recs] == ["runA:2024-1", "runB:2024-1"]
    a = recs[0]
    assert a["slices"] == {"run": "runA"} and a["query"] == "what is a sedan"
    assert [(i["importance"], i["assignment"], i.get("human_assignment")) for i in a["nuggets"]["items"]] == [
        ("vital", "support", "support"),
        ("vital", "partial_support", "not_support"),
        ("okay", "not_support", None),
    ]


def test_trec_files_bad_lines_name_file_line_field(tmp_path):
    nuggets, judge, _ = _files(tmp_path)
    with pytest.raises(InputError, match=r"assign.jsonl, line 1, field nuggets.0.importance: no importance"):
        read_trec_nuggets(judge)
    bad = _write(
        tmp_path / "b.jsonl",
        [{"qid": "q", "nuggets": [{"text": "x", "importance": "vital"}]}, {"nuggets": []}],
    )
    with pytest.raises(InputError, match=r"b.jsonl, line 2, field qid"):
        read_trec_nuggets(bad)
    h = _write(
        tmp_path / "h.jsonl",
        [{"qid": "2024-1", "run_id": "runA", "nuggets": [{"text": "wheels", "assignment": "support"}]}],
    )
    with pytest.raises(InputError, match=r"h.jsonl, line 1, field nuggets.0.text: nugget 'wheels'"):
        read_trec_nuggets(judge, nuggets=nuggets, human=h)


def test_score_nuggets_trec_json(tmp_path):
    nuggets, judge, human = _files(tmp_path)
    args = ["score", "nuggets", "--data", judge, "--trec", "--nugget-file", nuggets, "--human", human]
    res = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert res.exit_code == 0, res.output
    p = json.loads(res.output)
    m = {k: v["value"] for k, v in p["metrics"].items()}
    # runA: s = 1, .5, 0 -> A = 1.5/3, V = 1.5/2, V_strict = 1/2, W = (1 + .5) / 2.5; runB: all 1
    assert m["nuggets.all"] == pytest.approx((0.5 + 1) / 2)
    assert m["nuggets.vital"] == pytest.approx((0.75 + 1) / 2)
    assert m["nuggets.vital_strict"] == pytest.approx((0.5 + 1) / 2)
    assert m["nuggets.weighted"] == pytest.approx((1.5 / 2.5 + 1) / 2)
    assert m["nuggets.assignment_accuracy"] == 0.5  # 2 human labels, 1 agrees
    bd = p["breakdowns"]["slice:run"]
    assert bd["runA"]["metrics"]["nuggets.vital_strict"]["value"] == 0.5
    assert p["counts"]["records"] == 2


def test_score_nuggets_records_and_bad_record_exit_2(tmp_path, capsys):
    data = _write(
        tmp_path / "r.jsonl",
        [
            {
                "id": "a",
                "nuggets": {"items": [{"text": "x", "importance": "vital", "assignment": "partial_support"}]},
            }
        ],
    )
    res = CliRunner().invoke(cli, ["score", "nuggets", "--data", data, "--format", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["metrics"]["nuggets.vital"]["value"] == 0.5
    bad = _write(
        tmp_path / "bad.jsonl",
        [{"id": "a", "nuggets": {"items": [{"text": "x", "importance": "vital", "assignment": 1}]}}],
    )
    assert main(["score", "nuggets", "--data", bad]) == 2
    err = capsys.readouterr().err
    assert "record 'a' (line 1), field nuggets.items.0.assignment" in err and "Traceback" not in err
    assert main(["score", "nuggets", "--data", data, "--human", data]) == 2
    assert "pass --trec" in capsys.readouterr().err
