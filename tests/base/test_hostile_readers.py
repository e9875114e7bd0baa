"""Hostile inputs, part 4: every reader goes through the bounded readers (issue #28).

TREC/BEIR/JSON qrels and runs, OTLP traces and triples tables: exit code 2 with a one-line
message naming the file, line/record/field (and, for limits, the limit) — never a traceback,
never exit 3 — and no error message that echoes a secret-looking line of a wrong file.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from kg_rageval.base.redact import excerpt

ROOT = Path(__file__).resolve().parents[2]
QRELS = ROOT / "fixtures" / "retrieval" / "qrels.txt"  # 5 queries
RUN = ROOT / "fixtures" / "retrieval" / "run.txt"


def _one_line(err: str) -> None:
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def _retrieval(cli, qrels, run, *extra):
    return cli([*extra, "score", "retrieval", "--qrels", str(qrels), "--run", str(run)])


# ---------------------------------------------------------------------- gzip bombs
def test_gzip_bomb_of_rows_is_refused_by_the_memory_it_would_take(tmp_path, cli):
    """Identical short lines (the 1 MB gzip that reached 2.3 GB): 8,000,000 bytes decompressed
    pass the decompressed-size bound (8 MiB) but their 800,000 rows, charged 48 bytes each
    as they are read, do not pass the memory bound: refused after the first block (the NumPy
    reader's 4 MiB block holds 419,430 of these 10-byte lines: 419,430 x 48 = 20,132,640 bytes
    of rows plus the block's text), before the duplicate check that used to run on all of them."""
    p = tmp_path / "bomb.qrels.gz"
    p.write_bytes(gzip.compress(b"q1 0 d1 1\n" * 800_000, 9))
    code, out, err = _retrieval(cli, p, RUN, "--limit", "max_gz_memory_bytes=8MiB")
    assert code == 2 and out == ""
    _one_line(err)
    assert (
        "bomb.qrels.gz: the 419430 rows read so far from the gzip data need about 23488208 bytes"
        " of memory (48 bytes a row), more than 8388608: beyond the limit max_gz_memory_bytes = 8388608"
    ) in err


def test_gzip_bomb_of_blank_lines_stops_at_the_decompressed_limit(tmp_path, cli):
    p = tmp_path / "blank.qrels.gz"
    p.write_bytes(gzip.compress(b"\n" * (3 << 20), 9))
    code, out, err = _retrieval(cli, p, RUN, "--limit", "max_gz_memory_bytes=1MiB")
    assert code == 2
    _one_line(err)
    assert "blank.qrels.gz: the gzip data decompresses to more than 1048576 bytes" in err
    assert "max_gz_memory_bytes = 1048576" in err


def test_gzip_run_bomb_refused_too(tmp_path, cli):
    p = tmp_path / "bomb.run.gz"
    p.write_bytes(gzip.compress(b"q1 Q0 d1 1 1.0 t\n" * 200_000, 9))
    code, _, err = _retrieval(cli, QRELS, p, "--limit", "max_gz_memory_bytes=1MiB")
    assert code == 2
    _one_line(err)
    assert "bomb.run.gz: the" in err and "max_gz_memory_bytes = 1048576" in err


def test_a_gzip_qrels_under_the_limit_still_reads(tmp_path, cli):
    p = tmp_path / "q.txt.gz"
    p.write_bytes(gzip.compress(QRELS.read_bytes()))
    assert _retrieval(cli, p, RUN, "-m", "nDCG@10")[1] == _retrieval(cli, QRELS, RUN, "-m", "nDCG@10")[1]


def test_comment_blanking_kernel_equals_numpy(monkeypatch):
    from kg_rageval.families.retrieval import _kernels, trec

    if not _kernels.HAVE_NUMBA:
        pytest.skip("numba absent")
    data = b"q1 0 d#1 1\n  # x\nq 0 d 1 # 2\n#\n\n \t#a\nx#\n#"
    monkeypatch.setattr(trec, "NUMBA_MIN_BYTES", 1 << 62)
    a = trec._blank_comments(data)
    monkeypatch.setattr(trec, "NUMBA_MIN_BYTES", 0)
    assert trec._blank_comments(data) == a == b"q1 0 d#1 1\n     \nq 0 d 1 # 2\n \n\n    \nx#\n "


# ---------------------------------------------------------------------- JSON qrels
@pytest.mark.parametrize(
    "text, message",
    [
        ('{"q1": {"d1": NaN}}', "nan.json, field q1.d1: non-finite number NaN is not allowed"),
        (
            '{"q1": ' + "[" * 5000 + "]" * 5000 + "}",
            "JSON nested too deeply: beyond the limit max_json_depth",
        ),
        ('{"q1": {"d1": 1e308}}', "query 'q1', document 'd1': relevance 1e+308 is beyond ±2147483647"),
    ],
)
def test_bad_json_qrels(tmp_path, cli, text, message):
    p = tmp_path / "nan.json"
    p.write_text(text)
    code, out, err = _retrieval(cli, p, RUN)
    assert code == 2 and out == ""
    _one_line(err)
    assert message in err


def test_huge_trec_grade_names_the_line(tmp_path, cli):
    p = tmp_path / "q.txt"
    p.write_text("q1 0 d1 1\n# c\nq1 0 d2 1e308\n")
    code, _, err = _retrieval(cli, p, RUN)
    assert code == 2
    _one_line(err)
    assert "q.txt, line 3: relevance 1e+308 is beyond ±2147483647" in err


def test_grade_2000_scores_err_without_overflow(tmp_path, cli):
    """ERR's stop probability (2^g - 1) / 2^gmax is computed as 2^(g-gmax) - 2^-gmax: grade
    2000 on the only judged document, ranked first: rho = 1 - 2^-2000 = 1.0, ERR@10 = 1."""
    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    q.write_text("q1 0 d1 2000\nq1 0 d2 1\n")
    r.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    code, out, err = cli(["score", "retrieval", "--qrels", str(q), "--run", str(r), "-m", "ERR@10,nDCG@10"])
    assert code == 0, err
    rows = {ln.split()[0]: ln.split()[1] for ln in out.splitlines() if ln.startswith(("ERR", "nDCG"))}
    assert rows["ERR@10"] == "1.0000"
    assert rows["nDCG@10"] == "1.0000"  # ideal order


def test_small_grades_give_the_same_err_as_before(tmp_path):
    """The rewritten formula is exact for small grades: ERR by hand for grades (2, 0, 1),
    gmax 2: rho = 3/4, 0, 1/4; ERR@10 = 3/4 + (1/4)(1/4)/3 = 0.7708333..."""
    from kg_rageval.families.retrieval.files import score_run
    from kg_rageval.families.retrieval.runs import Qrels, Run

    qrels = Qrels.from_dict({"q": {"a": 2, "b": 0, "c": 1}})
    run = Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0}})
    v = score_run(qrels, run, ["ERR@10"]).per_query.values["ERR@10"][0]
    assert v == pytest.approx(0.75 + 0.25 * 0.25 / 3, abs=1e-15)


# ---------------------------------------------------------------------- empty run
def test_empty_run_is_a_missing_run_for_every_query(tmp_path, cli):
    """An empty run file is read as a run with no rows: every one of the 5 qrels queries is a
    missing run (counted), every mean is 0 — never a traceback, never a pass."""
    r = tmp_path / "empty.run"
    r.write_text("")
    code, out, err = cli(["score", "retrieval", "--qrels", str(QRELS), "--run", str(r), "-m", "nDCG@10"])
    assert code == 0 and "Traceback" not in err
    counts = {ln.split()[0]: ln.split()[-1] for ln in out.splitlines() if ln.startswith("n_")}
    assert counts["n_queries"] == "5" and counts["n_missing_run"] == "5"
    assert any(ln.split() == ["nDCG@10", "0.0000"] for ln in out.splitlines())


# ---------------------------------------------------------------------- OTLP traces
def _span(sid, parent=None, attrs=()):
    d = {
        "traceId": "a" * 32,
        "spanId": sid,
        "name": "s",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": list(attrs),
    }
    if parent:
        d["parentSpanId"] = parent
    return d


def _otlp(spans):
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


@pytest.mark.parametrize(
    "text, message",
    [
        (
            _otlp([_span("1" * 16, "2" * 16), _span("2" * 16, "1" * 16)]),
            "t.json: trace "
            + "a" * 32
            + ": no root span (the parentSpanId links of its 2 spans form a cycle)",
        ),
        (
            _otlp([_span("1" * 16, None, [{"key": "llm.cost.total", "value": {"doubleValue": "NaN"}}])]),
            "t.json: span 0 ('s') attribute 'llm.cost.total': doubleValue 'NaN' is not a finite number",
        ),
        (
            _otlp([_span("1" * 16, None, [{"key": "k", "value": {"doubleValue": float("nan")}}])]),
            "t.json, field resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.doubleValue: "
            "non-finite number NaN",
        ),
        (
            _otlp([_span("1" * 16, None, [{"key": "k", "value": {"intValue": "12x"}}])]),
            "attribute 'k': intValue '12x' is not an integer",
        ),
    ],
)
def test_bad_traces_one_line_exit_2(tmp_path, cli, text, message):
    p = tmp_path / "t.json"
    p.write_text(text)
    code, out, err = cli(["score", "system", "--traces", str(p)])
    assert code == 2 and out == ""
    _one_line(err)
    assert message in err


# ---------------------------------------------------------------------- secrets in errors
def test_triples_reader_never_echoes_a_secret_line(tmp_path, cli):
    shutil.copy(ROOT / "fixtures" / "audit" / "vehicles.csv", tmp_path / "v.csv")
    env = tmp_path / "secret.env"
    env.write_text("OPENAI_API_KEY=sk-live-1234567890abcdef\n")
    code, out, err = cli(
        ["ontology", "inspect", str(tmp_path / "v.csv"), "--ontology-option", f"triples={env}"]
    )
    assert code == 2
    _one_line(err)
    assert "secret.env, line 1: expected subject, predicate, object" in err
    assert "sk-live" not in err and "OPENAI_API_KEY=***" in err


def test_trec_column_error_redacts_the_line(tmp_path, cli):
    p = tmp_path / "q.txt"
    p.write_text("password = hunter2\n")
    code, _, err = _retrieval(cli, p, RUN)
    assert code == 2
    _one_line(err)
    assert "q.txt, line 1: expected 4 columns" in err and "hunter2" not in err


def test_excerpt_redacts_and_shortens():
    assert excerpt("API_TOKEN=abc123") == "'API_TOKEN=***'"
    assert excerpt(["db: bolt://neo4j:s3cret@h:7687"]) == "'db: ***'"
    assert excerpt("q1 0 d1") == "'q1 0 d1'"
    long = excerpt("x" * 500)
    assert len(long) == 62 and long.endswith("...'")
