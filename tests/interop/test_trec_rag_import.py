"""TREC 2024 RAG Track files (ragnarok answer files; AutoNuggetizer nugget / assignment files)
read by ``kg-rageval import trec-rag``: every field mapped or kept, missing ones counted, bad
input named by file, row and field, and the imported records scored by the families."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.cli.main import main
from kg_rageval.interop.formats import read
from kg_rageval.records import read_records

ROOT = Path(__file__).resolve().parents[2]
ANSWERS = ROOT / "fixtures" / "interop" / "trec_rag_answers.jsonl"
ASSIGN = ROOT / "fixtures" / "nuggets" / "assign.jsonl"
NUGGETS = ROOT / "fixtures" / "nuggets" / "nuggets.jsonl"
D = [
    "msmarco_v2.1_doc_04_420132660#2_1107218284",
    "msmarco_v2.1_doc_13_1647561563#0_3595934811",
    "msmarco_v2.1_doc_29_677149773#1_1515538434",
]


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_answer_file_maps_sentences_citations_and_references():
    got = read("trec-rag", ANSWERS)
    first, second, third = got.records
    assert first["id"] == "runA:2024-1" and first["query"] == "what is a sedan"
    assert first["retrieval"] == {"run": D}
    assert first["answer"] == {
        "text": "A sedan is a car. It usually has four doors.",
        "claims": [
            {"text": "A sedan is a car.", "citations": [D[0], D[2]]},
            {"text": "It usually has four doors.", "citations": [D[1]]},
        ],
        "citations": [D[0], D[2], D[1]],
    }
    assert first["slices"] == {"run": "runA"}
    assert first["source"] == {
        "format": "trec-rag",
        "file": str(ANSWERS),
        "row": 1,
        "extra": {"response_length": 9},
    }
    assert second["answer"]["claims"][1] == {
        "text": "They evaporate it in the hive into honey.",
        "citations": [],
    }
    assert "query" not in third and third["answer"] == {"text": "", "claims": [], "citations": []}
    assert got.missing == {
        "id": 0,
        "run_id": 0,
        "query": 1,
        "answer.text": 0,
        "answer.claims.citations": 0,
        "retrieval.run": 0,
    }
    assert got.counts == {"kind": "answers", "n_sentences": 4}


def test_imported_answers_score_claim_level_citation_completeness():
    from kg_rageval.families.provenance import score_citations

    m = score_citations(read("trec-rag", ANSWERS).records).metrics()
    # 4 sentences, 3 with a citation (the empty answer of 2024-3 has no claims)
    assert (m["citation_completeness"].numerator, m["citation_completeness"].denominator) == (3, 4)
    assert m["no_claims"].value == 1
    assert m["uncited_answer_rate"].value == 0.0


def test_absent_fields_are_counted_not_invented(tmp_path):
    p = _write(
        tmp_path / "a.jsonl",
        [
            {"topic_id": 7, "topic": "q", "answer": [{"text": "No citations key."}]},
            {"run_id": "r", "topic_id": "8", "references": ["d1"]},
        ],
    )
    got = read("trec-rag", p)
    a, b = got.records
    assert a["id"] == "7" and a["answer"]["claims"] == [{"text": "No citations key."}]
    assert "retrieval" not in a and "slices" not in a
    assert b["id"] == "r:8" and "answer" not in b and b["retrieval"] == {"run": ["d1"]}
    assert got.missing == {
        "id": 0,
        "run_id": 1,
        "query": 1,
        "answer.text": 1,
        "answer.claims.citations": 1,
        "retrieval.run": 1,
    }


@pytest.mark.parametrize(
    ("row", "where"),
    [
        (
            {"topic_id": "1", "references": ["d"], "answer": [{"text": "x", "citations": [1]}]},
            "answer[0].citations[0]",
        ),
        (
            {"topic_id": "1", "references": ["d"], "answer": [{"text": "x", "citations": ["0"]}]},
            "answer[0].citations[0]",
        ),
        ({"topic_id": "1", "answer": [{"text": "x", "citations": [0]}]}, "answer[0].citations[0]"),
        ({"topic_id": "1", "references": ["d"], "answer": "text"}, "field answer:"),
        ({"topic_id": "1", "references": "d", "answer": []}, "field references:"),
        ({"references": ["d"], "answer": []}, "field topic_id:"),
        ({"topic_id": "1", "answer": [{"citations": []}]}, "answer[0].text"),
    ],
)
def test_bad_rows_name_file_row_and_field(tmp_path, row, where):
    p = _write(tmp_path / "bad.jsonl", [{"topic_id": "0", "answer": []}, row])
    with pytest.raises(InputError) as e:
        read("trec-rag", p)
    msg = str(e.value)
    assert "bad.jsonl" in msg and "row 2" in msg and where in msg


def test_a_file_mixing_answers_and_nuggets_is_an_error(tmp_path):
    p = _write(
        tmp_path / "mixed.jsonl",
        [{"topic_id": "1", "answer": []}, {"qid": "1", "nuggets": [{"text": "n", "importance": "vital"}]}],
    )
    with pytest.raises(InputError, match="row 2.*a nuggets row in a file of answers rows"):
        read("trec-rag", p)
    with pytest.raises(InputError, match="row 1.*neither"):
        read("trec-rag", _write(tmp_path / "x.jsonl", [{"qid": "1"}]))


def test_assignment_file_goes_through_the_nuggets_reader_and_scores_as_it():
    from kg_rageval.families.nuggets import score_nuggets
    from kg_rageval.families.nuggets.inputs import read_trec_nuggets

    got = read("trec-rag", ASSIGN, nuggets=NUGGETS)
    ref = read_trec_nuggets(ASSIGN, nuggets=NUGGETS)
    assert got.counts == {"kind": "assignments"}
    for rec, r in zip(got.records, ref, strict=True):
        assert rec["source"] == {"format": "trec-rag", "file": str(ASSIGN), "row": r["_line"]}
        assert {k: v for k, v in rec.items() if k != "source"} == {
            k: v for k, v in r.items() if k not in ("_source", "_line")
        }
    m = score_nuggets(None, got.records)["nuggets"].metrics()
    # runA: support, partial, not (vital, vital, okay) -> All 1.5/3, strict 1/3; runB all support
    assert m["all"].value == pytest.approx((0.5 + 1) / 2)
    assert m["all_strict"].value == pytest.approx((1 / 3 + 1) / 2)
    assert m["vital"].value == pytest.approx((0.75 + 1) / 2)
    with pytest.raises(InputError, match="importance"):
        read("trec-rag", ASSIGN)  # runB's nuggets have no importance without the nugget file


def test_nugget_file_counts_the_unassigned():
    got = read("trec-rag", NUGGETS)
    assert got.counts == {"kind": "nuggets"}
    assert got.missing == {"query": 0, "answer.text": 1, "nuggets.assignment": 3}
    assert [it["importance"] for it in got.records[0]["nuggets"]["items"]] == ["vital", "vital", "okay"]


def test_cli_import_trec_rag_and_join_onto_golden(tmp_path, capsys):
    out = tmp_path / "recs.jsonl"
    assert main(["import", "trec-rag", str(ANSWERS), "-o", str(out), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_records"] == 3 and summary["missing"]["query"] == 1
    assert [r["id"] for r in read_records(out)] == ["runA:2024-1", "runA:2024-2", "runA:2024-3"]
    golden = _write(
        tmp_path / "golden.jsonl",
        [{"id": "g1", "query": "What is a sedan?"}, {"id": "g2", "query": "what is a coupe"}],
    )
    joined = tmp_path / "joined.jsonl"
    args = ["import", "trec-rag", str(ANSWERS), "-o", str(joined), "--golden", str(golden)]
    assert main([*args, "--join-key", "text", "--format", "json"]) == 0
    j = json.loads(capsys.readouterr().out)["join"]
    assert j["matched"] == 1 and j["unmatched_golden"] == ["g2"]
    assert j["unmatched_imported"] == ["runA:2024-2", "runA:2024-3"]
    recs = read_records(joined)
    assert recs[0]["answer"]["claims"][0]["citations"] == [D[0], D[2]] and "answer" not in recs[1]
    nug = tmp_path / "nug.jsonl"
    assert main(["import", "trec-rag", str(ASSIGN), "--nuggets", str(NUGGETS), "-o", str(nug)]) == 0
    assert "kind: assignments" in capsys.readouterr().out


@pytest.mark.slow  # about 5 s on one idle core (reading, scoring and writing 10,000 answers)
def test_round_trip_10k_answers_scored_and_exported(tmp_path):
    """source -> records -> provenance scored -> Parquet: every field kept, at 10,000 rows."""
    pytest.importorskip("pyarrow", reason="the parquet extra")
    import pyarrow.parquet as pq

    from kg_rageval.families.provenance import score_citations
    from kg_rageval.interop.export import write_parquet

    n = 10_000
    rows = [
        {
            "run_id": "big",
            "topic_id": f"t{i}",
            "topic": f"question {i}",
            "references": [f"d{i}a", f"d{i}b", f"d{i}c"],
            "response_length": 6,
            "answer": [
                {"text": f"First {i}.", "citations": [0, 2]},
                {"text": f"Second {i}.", "citations": [] if i % 4 == 0 else [1]},
            ],
        }
        for i in range(n)
    ]
    src = _write(tmp_path / "big.jsonl", rows)
    t0 = time.perf_counter()
    got = read("trec-rag", src)
    ev = score_citations(got.records)
    paths = write_parquet(ev, tmp_path / "pq")
    elapsed = time.perf_counter() - t0
    assert elapsed < 120
    for r, rec in zip(rows, got.records, strict=True):
        assert rec["id"] == f"big:{r['topic_id']}" and rec["query"] == r["topic"]
        assert rec["retrieval"]["run"] == r["references"]
        assert [c["text"] for c in rec["answer"]["claims"]] == [s["text"] for s in r["answer"]]
        assert [c["citations"] for c in rec["answer"]["claims"]] == [
            [r["references"][k] for k in s["citations"]] for s in r["answer"]
        ]
        assert rec["source"]["extra"] == {"response_length": 6} and rec["slices"] == {"run": "big"}
    assert set(got.missing.values()) == {0}
    m = ev.metrics()["citation_completeness"]
    assert (m.numerator, m.denominator) == (2 * n - n // 4, 2 * n)
    table = pq.read_table(next(p for p in paths if p.name.endswith("citations.parquet")))
    assert table.num_rows == n
    assert table.column("record_id").to_pylist() == [r["id"] for r in got.records]
    assert table.column("cited_claims").to_pylist() == [1.0 if i % 4 == 0 else 2.0 for i in range(n)]
