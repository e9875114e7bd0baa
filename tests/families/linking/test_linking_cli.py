"""``kg-rageval score linking`` and ``kg-rageval link``."""

from __future__ import annotations

import json

import pytest

from kg_rageval.cli.main import main


@pytest.fixture()
def paths(fixtures_dir):
    d = fixtures_dir / "linking"
    return str(d / "vehicles.tsv"), str(d / "records.jsonl")


def _json(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    return code, out


def test_score_linking_json(paths, capsys):
    onto, data = paths
    code, out = _json(capsys, ["score", "linking", "-O", onto, "-d", data, "--format", "json"])
    assert code == 0, out.err
    p = json.loads(out.out)
    m = {k.split(".", 1)[1]: v["value"] for k, v in p["metrics"].items()}
    # strict: q1 2 pairs (1 correct, 1 parent error), q2 over-link, q3 [0,10) vs [0,9) unaligned
    assert m["mention_precision"] == pytest.approx(4 / 5) and m["mention_recall"] == pytest.approx(4 / 5)
    assert m["wrong_link_parent"] == 1.0 and m["over_links"] == 1 and m["abstentions"] == 1
    assert m["over_link_near_rate"] == 1.0  # submarine is a child of boat
    assert p["unscored"] == {"no mentions section": 1}
    assert set(p["breakdowns"]) == {"slice:intent"}
    assert p["confidence_sweep"][0]["n_pred"] == 5
    assert "rows" not in p


def test_score_linking_overlap_and_text(paths, capsys):
    onto, data = paths
    code, out = _json(
        capsys,
        [
            "score",
            "linking",
            "-O",
            onto,
            "-d",
            data,
            "--overlap",
            "--format",
            "json",
            "--breakdown",
            "branch",
            "--rows",
        ],
    )
    assert code == 0
    p = json.loads(out.out)
    assert p["metrics"]["linking.mention_precision"]["value"] == 1.0
    assert p["metrics"]["linking.overlap_all_match_recall"]["value"] == pytest.approx(2 / 5)
    assert "linking.strong_all_match_recall" not in p["metrics"]
    assert set(p["breakdowns"]["branch"]) == {"car", "boat", "None"}
    assert len(p["rows"]) == 5
    code, out = _json(capsys, ["score", "linking", "-O", onto, "-d", data])
    assert code == 0 and "strong_link_match_f1" in out.out and "confidence sweep" in out.out


def test_score_linking_bad_input_exit_2(paths, capsys, tmp_path):
    onto, _ = paths
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "a", "mentions": {"gold": [], "pred": [{"start": 0, "end": 2, "id": "car"},'
        ' {"start": 0, "end": 2, "id": "boat"}]}}\n'
    )
    code, out = _json(capsys, ["score", "linking", "-O", onto, "-d", str(bad)])
    assert code == 2 and "record 'a' (line 1), field mentions.pred[1]" in out.err
    bad.write_text('{"id": "a", "mentions": {"gold": [{"start": 0, "end": 2, "id": "plane"}], "pred": []}}\n')
    code, out = _json(capsys, ["score", "linking", "-O", onto, "-d", str(bad)])
    assert code == 2 and "'plane'" in out.err and "bad.jsonl" in out.err
    code, out = _json(
        capsys,
        ["score", "linking", "-O", onto, "-d", str(bad), "--on-unknown-gold", "count", "--format", "json"],
    )
    assert code == 0 and json.loads(out.out)["metrics"]["linking.unknown_ids"]["value"] == 1
    code, out = _json(
        capsys,
        ["score", "linking", "-O", onto, "-d", str(bad), "--breakdown", "nope", "--on-unknown-gold", "count"],
    )
    assert code == 2 and "no breakdown key" in out.err


def test_link_text_and_records_then_score(paths, capsys, tmp_path):
    onto, data = paths
    txt = tmp_path / "q.txt"
    txt.write_text("Is a SEDAN a car?\n\nnothing\n")
    code, out = _json(capsys, ["link", "-O", onto, "--text", str(txt)])
    assert code == 0
    lines = [json.loads(x) for x in out.out.splitlines()]
    assert lines[0] == {
        "id": "line-1",
        "query": "Is a SEDAN a car?",
        "mentions": {
            "pred": [
                {"start": 5, "end": 10, "id": "sedan", "score": 1.0},
                {"start": 13, "end": 16, "id": "car", "score": 1.0},
            ]
        },
    }
    assert lines[1]["id"] == "line-3" and lines[1]["mentions"]["pred"] == []
    out_path = tmp_path / "pred.jsonl"
    code, out = _json(
        capsys,
        ["link", "-O", onto, "--text", data, "--mode", "gold_spans", "-o", str(out_path), "--format", "json"],
    )
    assert code == 0 and json.loads(out.out)["records"] == 4
    code, out = _json(capsys, ["score", "linking", "-O", onto, "-d", str(out_path), "--format", "json"])
    m = {k.split(".", 1)[1]: v["value"] for k, v in json.loads(out.out)["metrics"].items()}
    # gold spans linked by the dictionary: sedan, car, "hovercraft" -> NIL, "Hatchbacks" -> NIL
    # (no plural in the dictionary), "boats" -> NIL
    assert m["mention_f1"] == 1.0 and m["strong_all_match_recall"] == pytest.approx(3 / 5)
    assert m["correct_abstentions"] == 1 and m["abstentions"] == 2
    code, out = _json(capsys, ["link", "-O", onto, "--text", str(txt), "--mode", "gold_spans"])
    assert code == 2


@pytest.mark.slow
def test_link_embedding_cli(paths, capsys, tmp_path):
    pytest.importorskip("sentence_transformers")
    onto, _ = paths
    txt = tmp_path / "e.txt"
    txt.write_text("submarines\nquarterly revenue figures\nIs a sedan a car?\n")
    code, out = _json(capsys, ["link", "-O", onto, "--text", str(txt), "--linker", "embedding"])
    assert code == 0
    preds = [json.loads(x)["mentions"]["pred"] for x in out.out.splitlines()]
    # no dictionary match: the whole line is the mention, re-ranked (plural -> submarine)
    assert preds[0][0]["id"] == "submarine" and preds[0][0]["score"] > 0.8
    assert preds[1] == [{"start": 0, "end": 25, "id": None, "score": preds[1][0]["score"]}]
    assert preds[1][0]["score"] < 0.7  # below the NIL threshold
    assert [(p["start"], p["id"]) for p in preds[2]] == [(5, "sedan"), (13, "car")]


def test_score_linking_counts_every_record_read(paths, capsys, tmp_path):
    onto, data = paths
    # 4 records: 3 with a mentions section, 1 without; the text header must say so
    code, out = _json(capsys, ["score", "linking", "-O", onto, "-d", data, "--no-sweep"])
    assert code == 0 and out.out.startswith("4 records read, 3 scored, 6 rows")
    code, out = _json(capsys, ["score", "linking", "-O", onto, "-d", data, "--format", "json"])
    p = json.loads(out.out)
    assert p["counts"]["records"] == 4 and p["counts"]["scored_records"] == 3
    assert p["evaluations"]["linking"]["meta"]["records_scored"] == 3


def test_link_bad_and_empty_inputs_exit_2(paths, capsys, tmp_path):
    onto, _ = paths
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    code, out = _json(capsys, ["link", "-O", onto, "--text", str(empty)])
    assert code == 2 and "empty.txt: nothing to link" in out.err and out.out == ""
    empty_records = tmp_path / "empty.jsonl"
    empty_records.write_text("")
    code, out = _json(capsys, ["link", "-O", onto, "--text", str(empty_records)])
    assert code == 2 and "the file has no records" in out.err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "query": "a sedan", "mentions": [1]}\n')
    code, out = _json(capsys, ["link", "-O", onto, "--text", str(bad)])
    assert code == 2 and "record 'a' (line 1), field mentions: must be an object" in out.err
    txt = tmp_path / "q.txt"
    txt.write_text("a sedan\n")
    code, out = _json(
        capsys, ["link", "-O", onto, "--text", str(txt), "-o", str(tmp_path / "no" / "x.jsonl")]
    )
    assert code == 2 and out.err.startswith("error: ") and "x.jsonl" in out.err and "Traceback" not in out.err


def test_link_format_json_is_one_document(paths, capsys, tmp_path):
    onto, _ = paths
    txt = tmp_path / "q.txt"
    txt.write_text("Is a SEDAN a car?\nboats\n")
    code, out = _json(capsys, ["link", "-O", onto, "--text", str(txt), "--format", "json"])
    assert code == 0
    p = json.loads(out.out)  # a single JSON document, not JSONL
    assert p["records"] == 2 and p["mentions"] == 2 and p["nil"] == 0
    assert [r["id"] for r in p["output_records"]] == ["line-1", "line-2"]
    assert [m["id"] for m in p["output_records"][0]["mentions"]["pred"]] == ["sedan", "car"]
