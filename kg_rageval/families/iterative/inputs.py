"""Iterative traces from OpenTelemetry / OpenInference spans (the OTLP reader of
:mod:`kg_rageval.families.system.otlp`).

Per trace, each ``RETRIEVER`` span is one step, in start order: ``query`` its ``input.value``,
``results`` its ``retrieval.documents.N.document.id``, ``calls`` 1, ``time_ms`` its duration,
``tokens`` the ``llm.token_count.prompt`` + ``.completion`` of the ``LLM`` spans that start
after the previous step started and before this one starts (the model call that chose this
step's query). The records are those of :func:`~kg_rageval.families.system.otlp.import_otlp`
(id, query, system, retrieval.run) with an ``iterative`` section added."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kg_rageval.families.system.otlp import Span, _documents, _num, read_spans, records_from_spans


def steps_from_spans(spans: list[Span]) -> list[dict[str, Any]]:
    """The steps of one trace's spans (module docstring)."""
    ret = sorted((s for s in spans if s.kind == "RETRIEVER"), key=lambda s: s.start_ns)
    llm = [s for s in spans if s.kind == "LLM"]
    out, prev = [], None
    for s in ret:
        tokens = 0.0
        for x in llm:
            if (prev is None or x.start_ns > prev) and x.start_ns < s.start_ns:
                for a in ("llm.token_count.prompt", "llm.token_count.completion"):
                    tokens += _num(x.attributes.get(a)) or 0.0
        docs = [d.get("id") for d in _documents(s, "retrieval.documents")]
        q = s.attributes.get("input.value")
        out.append(
            {
                "query": q if isinstance(q, str) else "",
                "results": [str(d) for d in docs if d is not None],
                "calls": 1,
                "time_ms": (s.end_ns - s.start_ns) / 1e6,
                "tokens": tokens,
            }
        )
        prev = s.start_ns
    return out


def import_iterative_otlp(path: str | Path, *, id_attribute: str | None = None) -> list[dict[str, Any]]:
    """Records with an ``iterative`` section, one per trace of an OTLP JSON file."""
    spans = read_spans(path)
    recs = records_from_spans(spans, id_attribute=id_attribute)
    traces: dict[str, list[Span]] = {}
    for s in spans:
        traces.setdefault(s.trace_id, []).append(s)
    for rec, group in zip(recs, traces.values()):
        rec["iterative"] = {"steps": steps_from_spans(group)}
    return recs
