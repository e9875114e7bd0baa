"""Phoenix / OpenInference span exports and OTLP JSON read by ``kg-rageval import phoenix|otlp``:
one record per trace (query, answer, retrieved documents, latency and tokens), missing fields
counted, joined onto golden records by a trace attribute."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.cli.main import main
from kg_rageval.interop.formats import read
from kg_rageval.records import read_records

ROOT = Path(__file__).resolve().parents[2]
PHOENIX = ROOT / "fixtures" / "interop" / "phoenix_spans.jsonl"
OTLP = ROOT / "fixtures" / "interop" / "otlp_trace.json"
GOLDEN = ROOT / "fixtures" / "interop" / "golden.jsonl"
LSASS = {
    "id": "lsass",
    "query": "Which technique covers dumping LSASS memory?",
    "system": {
        "latency_ms": {"total": 1500.0, "retrieve": 250.0, "generate": 1050.0, "ttft": 600.0},
        "tokens": {"prompt": 412, "completion": 9},
    },
    "retrieval": {
        "run": [["T1003.001", 0.92], ["T1003", 0.71]],
        "contexts": [
            {"id": "T1003.001", "text": "LSASS Memory: adversaries access lsass.exe."},
            {"id": "T1003", "text": "OS Credential Dumping."},
        ],
    },
    "answer": {"text": "T1003.001, LSASS Memory."},
    "trace": {"trace_id": "5b8aa5a2d2c872e8321cf37308d69df2", "spans": 3, "error_spans": 0},
}


def _strip(rec):
    return {k: v for k, v in rec.items() if k != "source"}


def test_phoenix_dataframe_rows_become_one_record_per_trace():
    got = read("phoenix", PHOENIX, id_attribute="kg.query_id")
    assert [r["id"] for r in got.records] == ["lsass", "dcsync", "kerberoasting"]
    assert _strip(got.records[0]) == LSASS
    assert got.records[0]["source"] == {
        "format": "phoenix",
        "file": str(PHOENIX),
        "row": 1,
        "trace_id": "5b8aa5a2d2c872e8321cf37308d69df2",
        "extra": {"openinference.span.kind": "CHAIN", "kg.query_id": "lsass", "session.id": "s-1"},
    }
    dcsync = got.records[1]
    assert "answer" not in dcsync and dcsync["trace"]["error_spans"] == 2
    assert dcsync["system"] == {"latency_ms": {"total": 800.0, "generate": 690.0}}
    assert got.missing == {
        "query": 0,
        "answer.text": 1,
        "retrieval.run": 2,
        "retrieval.contexts": 2,
        "system.tokens": 2,
        "id": 0,
    }
    assert got.counts == {"n_spans": 6, "n_traces": 3, "n_error_spans": 2}
    # without id_attribute the trace id is the record id
    assert read("phoenix", PHOENIX).records[0]["id"] == "5b8aa5a2d2c872e8321cf37308d69df2"


def test_phoenix_parquet_with_datetimes_reads_as_the_jsonl(tmp_path):
    pytest.importorskip("pyarrow", reason="Parquet needs the parquet extra")
    from datetime import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [json.loads(line) for line in PHOENIX.read_text().splitlines()]
    for r in rows:  # as get_spans_dataframe().to_parquet() stores them: timestamps, not text
        r["start_time"] = datetime.fromisoformat(r["start_time"])
        r["end_time"] = datetime.fromisoformat(r["end_time"])
        for e in r["events"]:
            e["timestamp"] = datetime.fromisoformat(e["timestamp"])
            e.pop("attributes")  # an empty struct Parquet cannot hold
    pd = pytest.importorskip("pandas", reason="Phoenix's span dataframe is a pandas frame")
    pd.DataFrame(rows).to_parquet(tmp_path / "spans.parquet")  # NaN where a span lacks a column
    assert pq.read_schema(tmp_path / "spans.parquet").field("start_time").type == pa.timestamp("us", tz="UTC")
    got = read("phoenix", tmp_path / "spans.parquet", id_attribute="kg.query_id")
    want = read("phoenix", PHOENIX, id_attribute="kg.query_id")
    assert [_strip(r) for r in got.records] == [_strip(r) for r in want.records]
    assert got.missing == want.missing


def test_phoenix_epoch_millisecond_times_as_pandas_writes_them(tmp_path):
    rows = [json.loads(line) for line in PHOENIX.read_text().splitlines()][:3]
    base = 1_714_557_600_000  # 2024-05-01T10:00:00Z in ms
    for r, (s, e) in zip(rows, [(0, 1500), (100, 350), (400, 1450)], strict=True):
        r["start_time"], r["end_time"] = base + s, base + e
        for ev in r["events"]:
            ev["timestamp"] = base + 600
    p = tmp_path / "ms.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _strip(read("phoenix", p, id_attribute="kg.query_id").records[0]) == LSASS
    rows[0]["start_time"] = 12
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match="ms.jsonl, row 1.*epoch time 12"):
        read("phoenix", p)


def test_phoenix_bad_row_names_file_and_row(tmp_path):
    p = tmp_path / "bad.jsonl"
    rows = [json.loads(line) for line in PHOENIX.read_text().splitlines()][:2]
    rows[1]["end_time"] = "2024-05-01T09:00:00+00:00"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match="bad.jsonl, row 2.*ends before it starts"):
        read("phoenix", p)
    p.write_text(json.dumps({"name": "x"}) + "\n")
    with pytest.raises(InputError, match="row 1, field context.trace_id"):
        read("phoenix", p)


def test_otlp_json_file_gives_the_same_record():
    got = read("otlp", OTLP, id_attribute="kg.query_id")
    assert _strip(got.records[0]) == LSASS
    assert got.records[0]["source"]["format"] == "otlp" and "row" not in got.records[0]["source"]
    assert got.counts == {"n_spans": 3, "n_traces": 1, "n_error_spans": 0}
    assert set(got.missing.values()) == {0}


def _sdk_spans():
    """Spans made by the OpenTelemetry SDK with OpenInference's attribute names."""
    pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is not installed")
    sc = pytest.importorskip("openinference.semconv.trace", reason="openinference-semantic-conventions")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    SA, kinds = sc.SpanAttributes, sc.OpenInferenceSpanKindValues
    DA = sc.DocumentAttributes
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    t0 = 1_714_557_600_000_000_000
    ms = 1_000_000
    for qid, query, answer in [
        ("lsass", LSASS["query"], LSASS["answer"]["text"]),
        ("ghost", "Unknown?", None),
    ]:
        root = tracer.start_span("query", start_time=t0)
        root.set_attribute(SA.OPENINFERENCE_SPAN_KIND, kinds.CHAIN.value)
        root.set_attribute(SA.INPUT_VALUE, query)
        root.set_attribute("kg.query_id", qid)
        if answer:
            root.set_attribute(SA.OUTPUT_VALUE, answer)
        from opentelemetry import trace

        ctx = trace.set_span_in_context(root)
        r = tracer.start_span("retrieve", context=ctx, start_time=t0 + 100 * ms)
        r.set_attribute(SA.OPENINFERENCE_SPAN_KIND, kinds.RETRIEVER.value)
        for i, (doc, score) in enumerate([("T1003.001", 0.92), ("T1003", 0.71)]):
            prefix = f"{SA.RETRIEVAL_DOCUMENTS}.{i}."
            r.set_attribute(prefix + DA.DOCUMENT_ID, doc)
            r.set_attribute(prefix + DA.DOCUMENT_SCORE, score)
            r.set_attribute(prefix + DA.DOCUMENT_CONTENT, f"text of {doc}")
        r.end(end_time=t0 + 350 * ms)
        llm = tracer.start_span("llm", context=ctx, start_time=t0 + 400 * ms)
        llm.set_attribute(SA.OPENINFERENCE_SPAN_KIND, kinds.LLM.value)
        llm.set_attribute(SA.LLM_TOKEN_COUNT_PROMPT, 412)
        llm.set_attribute(SA.LLM_TOKEN_COUNT_COMPLETION, 9)
        llm.end(end_time=t0 + 1450 * ms)
        root.end(end_time=t0 + 1500 * ms)
        t0 += 10_000 * ms
    return exporter.get_finished_spans()


def test_otlp_written_by_the_opentelemetry_exporter_encoding(tmp_path):
    spans = _sdk_spans()
    pytest.importorskip(
        "opentelemetry.exporter.otlp.proto.common", reason="opentelemetry-exporter-otlp-proto-common"
    )
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    p = tmp_path / "traces.json"
    p.write_text(MessageToJson(encode_spans(spans)))  # protobuf JSON: base64 ids, resource_spans
    got = read("otlp", p, id_attribute="kg.query_id")
    lsass, ghost = got.records
    assert lsass["id"] == "lsass" and lsass["query"] == LSASS["query"]
    assert lsass["answer"] == LSASS["answer"]
    assert lsass["retrieval"]["run"] == [["T1003.001", 0.92], ["T1003", 0.71]]
    assert lsass["retrieval"]["contexts"][0] == {"id": "T1003.001", "text": "text of T1003.001"}
    assert lsass["system"]["latency_ms"] == {"total": 1500.0, "retrieve": 250.0, "generate": 1050.0}
    assert lsass["system"]["tokens"] == {"prompt": 412, "completion": 9}
    assert lsass["trace"]["trace_id"] == format(spans[0].context.trace_id, "032x")
    assert "answer" not in ghost
    assert got.missing == {
        "query": 0,
        "answer.text": 1,
        "retrieval.run": 0,
        "retrieval.contexts": 0,
        "system.tokens": 0,
        "id": 0,
    }


def test_arize_phoenix_itself_is_optional():
    pytest.importorskip(
        "phoenix", reason="arize-phoenix is not installed: the Phoenix tests use a hand-made export"
    )


@pytest.mark.parametrize(
    ("fmt", "path", "key", "opts"),
    [
        ("phoenix", PHOENIX, "attribute:kg.query_id", []),
        ("phoenix", PHOENIX, "query_id", ["--id-attribute", "kg.query_id"]),
        ("phoenix", PHOENIX, "text", []),
        ("otlp", OTLP, "attribute:kg.query_id", []),
    ],
)
def test_traces_join_onto_golden_counting_both_sides(tmp_path, capsys, fmt, path, key, opts):
    out = tmp_path / "joined.jsonl"
    args = ["import", fmt, str(path), "-o", str(out), "--golden", str(GOLDEN), "--join-key", key]
    assert main([*args, *opts, "--format", "json"]) == 0
    j = json.loads(capsys.readouterr().out)["join"]
    recs = {r["id"]: r for r in read_records(out)}
    assert list(recs) == ["lsass", "spearphishing", "dcsync"]
    assert recs["lsass"]["answer"]["text"] == LSASS["answer"]["text"]
    assert recs["lsass"]["retrieval"]["run"] == LSASS["retrieval"]["run"]
    assert recs["lsass"]["labels"] == {"gold": ["T1003.001"]}
    assert "answer" not in recs["spearphishing"]  # no trace: a missing run
    if fmt == "phoenix":
        assert j["matched"] == 2 and j["unmatched_golden"] == ["spearphishing"]
        assert len(j["unmatched_imported"]) == 1  # the kerberoasting trace
        assert "answer" not in recs["dcsync"]  # its trace errored before answering
    else:
        assert j["matched"] == 1 and j["unmatched_golden"] == ["spearphishing", "dcsync"]
        assert j["unmatched_imported"] == []
