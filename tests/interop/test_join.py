"""Imported rows joined onto golden records (kg_rageval/interop/join.py)."""

from __future__ import annotations

import json

import pytest

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.cli.main import main
from kg_rageval.interop.formats import read
from kg_rageval.interop.join import join, normalise
from kg_rageval.records import read_records

GOLDEN = [
    {"id": "q1", "query": "Which car?", "labels": {"gold": ["sedan"]}, "reference": {"answer": "a sedan"}},
    {"id": "q2", "query": "Which  TRUCK ", "reference": {"answer": "a pickup"}},
    {"id": "q3", "query": "Which bike?", "reference": {"answer": "a bicycle"}},
]
ROWS = [
    {"user_input": "which car", "response": "a sedan", "retrieved_contexts": ["c"], "reference": "sedan!"},
    {"user_input": "Which truck?", "response": "a van"},
    {"user_input": "which plane?", "response": "a jet"},
]


def _files(tmp_path):
    g, r = tmp_path / "golden.jsonl", tmp_path / "ragas.jsonl"
    g.write_text("".join(json.dumps(x) + "\n" for x in GOLDEN))
    r.write_text("".join(json.dumps(x) + "\n" for x in ROWS))
    return g, r


def test_normalise():
    assert normalise("  Which  TRUCK? ") == "which truck" == normalise("which truck")


def test_text_join_keeps_every_golden_record_and_lists_the_unmatched(tmp_path):
    g, r = _files(tmp_path)
    out = join(read("ragas", r).records, read_records(g), "text")
    assert [x["id"] for x in out.records] == ["q1", "q2", "q3"]
    q1, q2, q3 = out.records
    assert q1["answer"] == {"text": "a sedan"} and q1["retrieval"] == {"contexts": ["c"]}
    assert q1["labels"] == {"gold": ["sedan"]}
    assert q1["reference"] == {"answer": "a sedan"}  # gold is the golden set's
    assert q1["source"]["reference"] == {"answer": "sedan!"} and q1["source"]["query"] == "which car"
    assert q2["answer"] == {"text": "a van"}
    assert "answer" not in q3  # a missing run, not dropped
    assert out.matched == 2 and out.unmatched_golden == ["q3"] and out.unmatched_imported == ["row-3"]


def test_query_id_and_attribute_keys(tmp_path):
    imported = [
        {"id": "q2", "answer": {"text": "x"}, "source": {"extra": {"golden_id": "q1"}}},
    ]
    golden = [{"id": "q1"}, {"id": "q2"}]
    by_id = join(imported, golden, "query_id")
    assert by_id.unmatched_golden == ["q1"] and by_id.records[1]["answer"] == {"text": "x"}
    by_attr = join(imported, golden, "attribute:golden_id")
    assert by_attr.unmatched_golden == ["q2"] and by_attr.records[0]["answer"] == {"text": "x"}


def test_a_key_on_two_rows_is_an_error():
    rows = [
        {"id": "a", "query": "Q", "source": {"file": "f.jsonl", "row": 1}},
        {"id": "b", "query": "q?", "source": {"file": "f.jsonl", "row": 2}},
    ]
    with pytest.raises(InputError, match=r"f\.jsonl, row 2: join key text 'q' is on two imported rows"):
        join(rows, [{"id": "g"}], "text")
    with pytest.raises(ConfigError, match="unknown join key"):
        join([], [], "query")


def test_cli_join_prints_both_sides(tmp_path, capsys):
    g, r = _files(tmp_path)
    out = tmp_path / "joined.jsonl"
    assert main(["import", "ragas", str(r), "-o", str(out), "--golden", str(g), "--join-key", "text"]) == 0
    text = capsys.readouterr().out
    assert "2 matched" in text and "missing runs): 1 (q3)" in text and "(not scored): 1 (row-3)" in text
    assert [x["id"] for x in read_records(out)] == ["q1", "q2", "q3"]
    assert main(["import", "ragas", str(r), "-o", str(g), "--golden", str(g)]) == 2
