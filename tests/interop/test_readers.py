"""RAGAS and DeepEval readers (kg_rageval/interop/): every mapped field, the rest kept under
source.extra, missing fields counted per field, bad input named by file, row and field."""

from __future__ import annotations

import csv
import json
import time

import pytest

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.cli.main import main
from kg_rageval.interop.formats import read
from kg_rageval.records import read_records

RAGAS_ROWS = [
    {
        "user_input": "Which technique covers dumping LSASS memory?",
        "retrieved_contexts": ["LSASS memory holds credentials.", "T1003.001 is LSASS Memory."],
        "response": "T1003.001, LSASS Memory.",
        "reference": "OS Credential Dumping: LSASS Memory (T1003.001)",
        "reference_contexts": ["T1003.001 is LSASS Memory."],
    },
    {"user_input": "What is phishing?", "response": "A social engineering technique."},
]


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_ragas_jsonl_maps_every_field_and_counts_the_missing(tmp_path):
    got = read("ragas", _write_jsonl(tmp_path / "r.jsonl", RAGAS_ROWS))
    first, second = got.records
    assert first["query"] == RAGAS_ROWS[0]["user_input"]
    assert first["retrieval"] == {"contexts": RAGAS_ROWS[0]["retrieved_contexts"]}
    assert first["answer"] == {"text": "T1003.001, LSASS Memory."}
    assert first["reference"] == {"answer": RAGAS_ROWS[0]["reference"]}
    assert first["source"]["extra"] == {"reference_contexts": ["T1003.001 is LSASS Memory."]}
    assert first["source"]["row"] == 1 and first["id"] == "row-1"
    assert "retrieval" not in second and "reference" not in second  # never invented
    assert got.missing == {
        "id": 2,
        "query": 0,
        "retrieval.contexts": 1,
        "answer.text": 0,
        "reference.answer": 1,
    }


def test_ragas_multi_turn_keeps_the_conversation(tmp_path):
    conv = [
        {"content": "Hi, I need T1003.", "type": "human"},
        {"content": "Which sub-technique?", "type": "ai"},
        {"content": "The LSASS one.", "type": "human"},
        {"content": "T1003.001.", "type": "ai"},
    ]
    got = read("ragas", _write_jsonl(tmp_path / "m.jsonl", [{"user_input": conv, "reference": "T1003.001"}]))
    (rec,) = got.records
    assert rec["query"] == "The LSASS one."
    assert rec["answer"] == {"text": "T1003.001."}
    assert rec["source"]["extra"]["user_input"] == conv


def test_ragas_csv_parquet_and_datasets_folder_read_the_same_records(tmp_path):
    pytest.importorskip("pyarrow", reason="Parquet needs the parquet extra")
    datasets = pytest.importorskip("datasets", reason="the datasets folder needs the hf extra")
    import pyarrow as pa
    import pyarrow.parquet as pq

    want = read("ragas", _write_jsonl(tmp_path / "r.jsonl", RAGAS_ROWS)).records
    cols = ["user_input", "retrieved_contexts", "response", "reference", "reference_contexts"]
    with open(tmp_path / "r.csv", "w", newline="", encoding="utf-8") as fh:  # pandas' to_csv writes reprs
        w = csv.writer(fh)
        w.writerow(cols)
        for r in RAGAS_ROWS:
            w.writerow([repr(r[c]) if isinstance(r.get(c), list) else r.get(c, "") for c in cols])
    pq.write_table(pa.Table.from_pylist(RAGAS_ROWS), tmp_path / "r.parquet")
    datasets.Dataset.from_list(RAGAS_ROWS).save_to_disk(str(tmp_path / "hf"))
    for name in ("r.csv", "r.parquet", "hf"):
        got = read("ragas", tmp_path / name).records
        for g, w_ in zip(got, want, strict=True):
            g.pop("source"), w_.get("source")
            assert g == {k: v for k, v in w_.items() if k != "source"}, name


def test_ragas_bad_type_names_file_row_and_field(tmp_path):
    p = _write_jsonl(
        tmp_path / "bad.jsonl", [RAGAS_ROWS[0], {"user_input": "q", "retrieved_contexts": ["a", 3]}]
    )
    with pytest.raises(
        InputError, match=r"bad\.jsonl, row 2, field retrieved_contexts\[1\]: expected a string, found int"
    ):
        read("ragas", p)


def test_deepeval_json_dataset(tmp_path):
    goldens = [
        {
            "input": "What is phishing?",
            "actual_output": "Sending deceptive messages.",
            "expected_output": "Phishing (T1566)",
            "retrieval_context": ["T1566 Phishing"],
            "context": ["T1566 is Phishing."],
            "additional_metadata": {"tier": 1},
            "name": "g1",
        },
        {"input": "What is T1003?", "expected_output": "OS Credential Dumping"},
    ]
    p = tmp_path / "deepeval.json"
    p.write_text(json.dumps(goldens), encoding="utf-8")
    got = read("deepeval", p)
    first, second = got.records
    assert first["id"] == "g1" and second["id"] == "row-2"
    assert first["answer"] == {"text": "Sending deceptive messages."}
    assert first["retrieval"] == {"contexts": ["T1566 Phishing"]}
    assert first["source"]["extra"] == {"context": ["T1566 is Phishing."], "additional_metadata": {"tier": 1}}
    assert got.missing == {
        "id": 1,
        "query": 0,
        "retrieval.contexts": 1,
        "answer.text": 1,
        "reference.answer": 0,
    }


def test_deepeval_duplicate_name(tmp_path):
    p = tmp_path / "d.json"
    p.write_text(json.dumps([{"input": "a", "name": "x"}, {"input": "b", "name": "x"}]), encoding="utf-8")
    with pytest.raises(InputError, match=r"row 2, field name: duplicate id 'x' \(first on row 1\)"):
        read("deepeval", p)


def test_unknown_format_suggests():
    with pytest.raises(ConfigError, match="did you mean 'ragas'"):
        read("raga", "x.jsonl")


def test_cli_import_writes_records_and_refuses_its_input(tmp_path, capsys):
    src = _write_jsonl(tmp_path / "r.jsonl", RAGAS_ROWS)
    out = tmp_path / "records.jsonl"
    assert main(["import", "ragas", str(src), "-o", str(out)]) == 0
    assert "missing retrieval.contexts: 1" in capsys.readouterr().out
    back = read_records(out)
    assert [r["id"] for r in back] == ["row-1", "row-2"]
    assert back[0]["source"]["extra"]["reference_contexts"] == ["T1003.001 is LSASS Memory."]
    assert main(["import", "ragas", str(src), "-o", str(src)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --output") and "destroy the input" in err and err.count("\n") == 1


def test_round_trip_10k_rows_keeps_every_field(tmp_path):
    pytest.importorskip("pyarrow", reason="Parquet needs the parquet extra")
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {
            "user_input": f"query {i}",
            "retrieved_contexts": [f"ctx {i} a", f"ctx {i} b"],
            "response": f"answer {i}",
            "reference": f"answer {i}" if i % 2 else f"other {i}",
            "reference_contexts": [f"ctx {i} a"],
        }
        for i in range(10_000)
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "big.parquet")
    t0 = time.perf_counter()
    got = read("ragas", tmp_path / "big.parquet")
    elapsed = time.perf_counter() - t0
    assert len(got.records) == 10_000 and elapsed < 60
    for r, rec in zip(rows, got.records, strict=True):
        assert rec["query"] == r["user_input"] and rec["answer"]["text"] == r["response"]
        assert rec["retrieval"]["contexts"] == r["retrieved_contexts"]
        assert rec["reference"]["answer"] == r["reference"]
        assert rec["source"]["extra"] == {"reference_contexts": r["reference_contexts"]}
    assert got.missing == {
        "id": 10_000,
        "query": 0,
        "retrieval.contexts": 0,
        "answer.text": 0,
        "reference.answer": 0,
    }


def test_deepeval_jsonl_and_csv_lists_joined_by_a_bar(tmp_path):
    """DeepEval's save_as(file_type="jsonl"/"csv") writes retrieval_context and context as one
    '|'-joined text (tests/interop/test_real_packages.py checks it on deepeval's own files)."""
    p = tmp_path / "g.jsonl"
    p.write_text(
        json.dumps({"input": "q", "retrieval_context": "c1|c2", "context": "x", "name": None})
        + "\n"
        + json.dumps({"input": "q2", "retrieval_context": ""})
        + "\n",
        encoding="utf-8",
    )
    first, second = read("deepeval", p).records
    assert first["retrieval"] == {"contexts": ["c1", "c2"]} and first["source"]["extra"] == {"context": ["x"]}
    assert "retrieval" not in second
    c = tmp_path / "g.csv"
    c.write_text("input,actual_output,retrieval_context\nq,a,c1|c2\n", encoding="utf-8")
    (rec,) = read("deepeval", c).records
    assert rec["retrieval"] == {"contexts": ["c1", "c2"]} and rec["answer"] == {"text": "a"}
