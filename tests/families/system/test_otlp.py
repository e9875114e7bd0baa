"""OTLP JSON import: spans written by the OpenTelemetry SDK with OpenInference attributes."""

from __future__ import annotations

import json

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.families.system import score_system
from kg_rageval.families.system.otlp import import_otlp

pytest.importorskip("opentelemetry.sdk")
semconv = pytest.importorskip("openinference.semconv.trace")
SA, DA, KIND = semconv.SpanAttributes, semconv.DocumentAttributes, semconv.OpenInferenceSpanKindValues
MS = 1_000_000


def _export(tmp_path, *, jsonl=False):
    """Two traces written by the SDK (explicit timestamps), exported as protobuf JSON."""
    from google.protobuf import json_format
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    t0 = 1_700_000_000_000 * MS
    for q, (n_docs, gen_ms) in enumerate([(2, 800), (3, 1400)]):
        base = t0 + q * 10_000 * MS
        root = tracer.start_span(
            "query",
            start_time=base,
            attributes={
                SA.OPENINFERENCE_SPAN_KIND: KIND.CHAIN.value,
                SA.INPUT_VALUE: f"question {q}",
                SA.OUTPUT_VALUE: f"answer {q}",
                "metadata.query_id": f"q{q}",
            },
        )
        ctx = trace.set_span_in_context(root)
        docs = {}
        for i in range(n_docs):
            p = f"{SA.RETRIEVAL_DOCUMENTS}.{i}."
            docs.update(
                {
                    p + DA.DOCUMENT_ID: f"doc-{i}",
                    p + DA.DOCUMENT_SCORE: 1.0 - i / 10,
                    p + DA.DOCUMENT_CONTENT: f"text {i}",
                }
            )
        r = tracer.start_span(
            "retrieve",
            context=ctx,
            start_time=base + 5 * MS,
            attributes={SA.OPENINFERENCE_SPAN_KIND: KIND.RETRIEVER.value, **docs},
        )
        r.end(end_time=base + 125 * MS)
        llm = tracer.start_span(
            "llm",
            context=ctx,
            start_time=base + 130 * MS,
            attributes={
                SA.OPENINFERENCE_SPAN_KIND: KIND.LLM.value,
                SA.LLM_TOKEN_COUNT_PROMPT: 1000 + q,
                SA.LLM_TOKEN_COUNT_COMPLETION: 50,
                SA.LLM_COST_TOTAL: 0.002,
                SA.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_READ: 512 if q else 0,
            },
        )
        llm.add_event("First Token Stream Event", timestamp=base + 330 * MS)
        llm.end(end_time=base + (130 + gen_ms) * MS)
        root.end(end_time=base + (140 + gen_ms) * MS)
    req = encode_spans(exporter.get_finished_spans())
    path = tmp_path / ("t.jsonl" if jsonl else "t.json")
    text = json_format.MessageToJson(req)
    path.write_text(json.dumps(json.loads(text)) + "\n" if jsonl else text)
    return path


def test_sdk_export_to_records_and_system_metrics(tmp_path):
    recs = import_otlp(_export(tmp_path), id_attribute="metadata.query_id")
    assert [r["id"] for r in recs] == ["q0", "q1"]
    r0 = recs[0]
    assert r0["query"] == "question 0" and r0["answer"] == {"text": "answer 0"}
    assert r0["system"]["latency_ms"] == {"total": 940.0, "retrieve": 120.0, "generate": 800.0, "ttft": 330.0}
    assert r0["system"]["tokens"] == {"prompt": 1000, "completion": 50}
    assert r0["system"]["cost_usd"] == pytest.approx(0.002)
    assert r0["system"]["cache"] == {"llm_prompt": False} and recs[1]["system"]["cache"] == {
        "llm_prompt": True
    }
    assert r0["retrieval"]["run"] == [["doc-0", 1.0], ["doc-1", 0.9]]
    assert recs[1]["retrieval"]["contexts"][2] == {"id": "doc-2", "text": "text 2"}
    assert r0["trace"]["spans"] == 3 and len(r0["trace"]["trace_id"]) == 32
    m = score_system(None, recs).metrics()
    assert m["latency.total_ms.p50"].value == pytest.approx((940 + 1540) / 2)
    assert m["cache.llm_prompt.hit_rate"].value == 0.5
    assert m["cost.usd_total"].value == pytest.approx(0.004)


def test_jsonl_and_hex_ids(tmp_path):
    recs = import_otlp(_export(tmp_path, jsonl=True))
    assert len(recs) == 2 and all(len(r["id"]) == 32 for r in recs)
    hand = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "name": "rag",
                                "startTimeUnixNano": "1000000",
                                "endTimeUnixNano": "51000000",
                                "attributes": [
                                    {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
                                    {"key": "output.value", "value": {"stringValue": "ok"}},
                                ],
                            },
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b175",
                                "parentSpanId": "eee19b7ec3c1b174",
                                "name": "rerank",
                                "startTimeUnixNano": "2000000",
                                "endTimeUnixNano": "12000000",
                                "attributes": [
                                    {"key": "openinference.span.kind", "value": {"stringValue": "RERANKER"}},
                                    {
                                        "key": "reranker.output_documents.0.document.id",
                                        "value": {"stringValue": "d9"},
                                    },
                                    {
                                        "key": "reranker.output_documents.0.document.content",
                                        "value": {"stringValue": "t"},
                                    },
                                    {"key": "cache.hit", "value": {"boolValue": True}},
                                ],
                            },
                        ]
                    }
                ]
            }
        ]
    }
    p = tmp_path / "hand.json"
    p.write_text(json.dumps(hand))
    (rec,) = import_otlp(p)
    assert rec["id"] == "5b8efff798038103d269b633813fc60c"
    assert rec["system"]["latency_ms"] == {"total": 50.0, "rerank": 10.0}
    assert rec["system"]["cache"] == {"reranker": True}
    assert rec["retrieval"] == {"contexts": [{"id": "d9", "text": "t"}]}


def test_bad_otlp_names_the_span(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(
        json.dumps(
            {
                "resourceSpans": [
                    {
                        "scopeSpans": [
                            {
                                "spans": [
                                    {
                                        "traceId": "xyz",
                                        "spanId": "eee19b7ec3c1b174",
                                        "name": "s",
                                        "startTimeUnixNano": "1",
                                        "endTimeUnixNano": "2",
                                    }
                                ]
                            }
                        ]
                    }
                ]
            }
        )
    )
    with pytest.raises(InputError, match=r"bad\.json.*span 0 \('s'\) traceId: 'xyz' is neither"):
        import_otlp(p)
    p.write_text('{"resourceSpans": []}\n{oops\n')
    with pytest.raises(InputError, match="line 2"):
        import_otlp(p)
    p.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="nested too deeply"):
        import_otlp(p)
    p.write_bytes(b'{"resourceSpans": [\xff]}')
    with pytest.raises(InputError, match="not UTF-8"):
        import_otlp(p)


def test_audit_reads_traces_and_gates_latency(tmp_path):
    import shutil
    from pathlib import Path

    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.runner import run_audit

    src = _export(tmp_path)
    shutil.copy(src, tmp_path / "traces.otlp.json")
    shutil.copy(
        Path(__file__).resolve().parents[3] / "fixtures" / "audit" / "vehicles.csv", tmp_path / "v.csv"
    )
    cfg = config_from_mapping(
        {
            "ontology": "v.csv",
            "records": "traces.otlp.json",
            "families": ["system"],
            # toy data (the minimum itself: tests/audit/test_hostile_min_rows.py)
            "min_rows": {"default": 1, "metrics": {"p95(latency.total_ms)": 1}},
            "gates": ["p95(latency.total_ms) <= 1500", "cache.llm_prompt.hit_rate >= 0.5"],
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    by = {str(r.gate): r for r in res.gate_results}
    assert by["latency.total_ms.p95 <= 1500"].status == "fail"
    assert by["latency.total_ms.p95 <= 1500"].observed == pytest.approx(940 + 0.95 * 600)
    assert by["cache.llm_prompt.hit_rate >= 0.5"].status == "pass"


def test_phoenix_span_json(tmp_path):
    """Spans in the shape the OpenInference spec documents (and Phoenix's REST API returns),
    with nested attributes and UUID-like ids."""
    spans = [
        {
            "name": "query",
            "context": {"trace_id": "ed7b336d-e71a", "span_id": "f89e-root"},
            "parent_id": None,
            "start_time": "2023-09-07T12:54:47.293922-06:00",
            "end_time": "2023-09-07T12:54:49.322066-06:00",
            "status_code": "OK",
            "attributes": {
                "openinference.span.kind": "CHAIN",
                "input.value": "Hello?",
                "output.value": "I am here.",
            },
            "events": [],
        },
        {
            "name": "retrieve",
            "context": {"trace_id": "ed7b336d-e71a", "span_id": "r1"},
            "parent_id": "f89e-root",
            "start_time": "2023-09-07T18:54:47.300000Z",
            "end_time": "2023-09-07T18:54:47.500000Z",
            "attributes": {
                "openinference": {"span": {"kind": "RETRIEVER"}},
                "retrieval": {
                    "documents": [
                        {"document": {"id": "d1", "score": 0.9, "content": "x"}},
                        {"document": {"id": "d2", "score": 0.5, "content": "y"}},
                    ]
                },
            },
        },
        {
            "name": "llm",
            "context": {"trace_id": "ed7b336d-e71a", "span_id": "l1"},
            "parent_id": "f89e-root",
            "start_time": "2023-09-07T18:54:47.600000+00:00",
            "end_time": "2023-09-07T18:54:49.300000+00:00",
            "status_code": "ERROR",
            "attributes": {"openinference.span.kind": "LLM", "llm.token_count.prompt": 12},
            "events": [{"name": "First Token Stream Event", "timestamp": "2023-09-07T18:54:48.000000+00:00"}],
        },
    ]
    p = tmp_path / "phoenix.json"
    p.write_text(json.dumps({"data": spans}))
    (rec,) = import_otlp(p)
    assert rec["id"] == "ed7b336d-e71a" and rec["answer"] == {"text": "I am here."}
    lat = rec["system"]["latency_ms"]
    assert lat["total"] == pytest.approx(2028.144)
    assert (lat["retrieve"], lat["generate"]) == (pytest.approx(200.0), pytest.approx(1700.0))
    assert lat["ttft"] == pytest.approx(706.078)
    assert rec["retrieval"]["run"] == [["d1", 0.9], ["d2", 0.5]]
    assert rec["trace"]["error_spans"] == 1 and rec["system"]["tokens"] == {"prompt": 12}
    jl = tmp_path / "phoenix.jsonl"
    jl.write_text("".join(json.dumps(s) + "\n" for s in spans))
    assert import_otlp(jl) == [rec]
    spans[0]["start_time"] = "2023-09-07T12:54:47"
    p.write_text(json.dumps(spans))
    with pytest.raises(InputError, match="has no time zone"):
        import_otlp(p)


def test_trace_file_larger_than_the_limit_is_refused(tmp_path):
    from kg_rageval.base.errors import LimitExceeded
    from kg_rageval.base.limits import limits

    p = tmp_path / "traces.json"
    p.write_text('{"resourceSpans": []}' + " " * 79)  # 100 bytes
    assert import_otlp(p) == []
    with (
        limits({"max_doc_bytes": 99}),
        pytest.raises(LimitExceeded, match=r"traces\.json.*the trace file is 100 bytes.*max_doc_bytes = 99"),
    ):
        import_otlp(p)
