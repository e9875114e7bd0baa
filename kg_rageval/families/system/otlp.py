"""Import OpenTelemetry / OpenInference traces (OTLP JSON) into evaluation records.

Input: OTLP JSON as an OpenTelemetry collector's file exporter writes it — one
``ExportTraceServiceRequest`` object (``{"resourceSpans": [...]}``) per file or per line; both
the OTLP/JSON spelling (camelCase, hex trace and span ids) and protobuf's own JSON mapping
(``resource_spans``, base64 ids, as ``google.protobuf.json_format`` writes) are read — or spans
in Phoenix's / OpenInference's JSON shape (``{"name", "context": {"trace_id", "span_id"},
"parent_id", "start_time", "end_time", "attributes", "events"}``; a list, ``{"data": [...]}``
as Phoenix's REST API returns it, or one span per line).

One record per trace; the trace's **root span** is the query. From the OpenInference semantic
conventions (``openinference.span.kind`` = ``CHAIN`` / ``RETRIEVER`` / ``RERANKER`` / ``LLM`` /
``EMBEDDING`` / ...):

==============================  =============================================================
record field                    from
==============================  =============================================================
``id``                          the root span's ``id_attribute`` if given, else the trace id
``query``                       the root span's ``input.value``
``answer.text``                 the root span's ``output.value``
``system.latency_ms.total``     the root span's duration
``...retrieve / rerank /        the wall time covered by the trace's ``RETRIEVER`` / ``RERANKER``
generate / embed``              / ``LLM`` / ``EMBEDDING`` spans (overlapping spans counted once)
``...ttft``                     first span event whose name contains "first token", minus the
                                root span's start
``system.tokens.prompt /        sums of ``llm.token_count.prompt`` / ``.completion`` over the
completion``                    ``LLM`` spans
``system.cost_usd``             sum of ``llm.cost.total`` over the ``LLM`` spans
``system.cache.llm_prompt``     ``llm.token_count.prompt_details.cache_read > 0`` (when given)
``system.cache.<kind>``         a span's boolean ``cache.hit`` attribute, by lower-case span kind
``retrieval.run``               the last ``RETRIEVER`` span's ``retrieval.documents.N.document.id``
                                (with ``.score``), in order
``retrieval.contexts``          the documents passed on: the last ``RERANKER`` span's
                                ``reranker.output_documents.N``, else the retrieved ones
                                (``document.id`` and ``document.content``)
``trace``                       ``{"trace_id", "spans", "error_spans"}``
==============================  =============================================================

Bounded input: at most ``max_spans`` spans (default 1,000,000) are read; ids and times that
are not what OTLP says they are raise :class:`~kg_rageval.base.errors.InputError` naming the file,
line and span.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.base.safe_io import loads_json, read_document

KINDS_TO_STAGE = {"RETRIEVER": "retrieve", "RERANKER": "rerank", "LLM": "generate", "EMBEDDING": "embed"}
_DOC = re.compile(r"^(retrieval\.documents|reranker\.output_documents)\.(\d+)\.document\.(id|score|content)$")


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, int]] = field(default_factory=list)
    error: bool = False

    @property
    def kind(self) -> str | None:
        k = self.attributes.get("openinference.span.kind")
        return str(k).upper() if k is not None else None


def _get(obj: dict, camel: str) -> Any:
    """A field by its camelCase (OTLP/JSON) or snake_case (protobuf field name) spelling."""
    if camel in obj:
        return obj[camel]
    snake = re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()
    return obj.get(snake)


def any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as a Python value."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "string_value"):
        if key in v:
            return v[key]
    for key in ("boolValue", "bool_value"):
        if key in v:
            return bool(v[key])
    for key in ("intValue", "int_value"):
        if key in v:
            try:
                return int(v[key])
            except (TypeError, ValueError):
                raise ValueError(f"{key} {str(v[key])[:40]!r} is not an integer") from None
    for key in ("doubleValue", "double_value"):
        if key in v:
            try:
                x = float(v[key])
            except (TypeError, ValueError):
                raise ValueError(f"{key} {str(v[key])[:40]!r} is not a number") from None
            if not math.isfinite(x):  # protobuf JSON writes NaN/Infinity as strings
                raise ValueError(f"{key} {str(v[key])[:40]!r} is not a finite number")
            return x
    arr = _get(v, "arrayValue")
    if isinstance(arr, dict):
        return [any_value(x) for x in arr.get("values", [])]
    kv = _get(v, "kvlistValue")
    if isinstance(kv, dict):
        return {x.get("key"): any_value(x.get("value")) for x in kv.get("values", [])}
    b = _get(v, "bytesValue")
    if b is not None:
        return b
    return None


def _attributes(items: Any, where: str = "") -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    out: dict[str, Any] = {}
    for a in items:
        if isinstance(a, dict) and "key" in a:
            try:
                out[a["key"]] = any_value(a.get("value"))
            except ValueError as exc:
                raise ValueError(f"{where} attribute {str(a['key'])[:80]!r}: {exc}") from None
    return out


def _hex_id(raw: Any, size: int, where: str) -> str | None:
    """A trace/span id as lower-case hex: OTLP/JSON gives hex, protobuf's JSON base64."""
    if raw in (None, ""):
        return None
    if not isinstance(raw, str):
        raise ValueError(f"{where}: expected an id string, found {raw!r}")
    if re.fullmatch(rf"[0-9a-fA-F]{{{2 * size}}}", raw):
        return raw.lower()
    try:
        b = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        b = b""
    if len(b) != size:
        raise ValueError(f"{where}: {raw!r} is neither {2 * size} hex digits nor base64 of {size} bytes")
    return b.hex()


def _nanos(raw: Any, where: str) -> int:
    try:
        v = int(raw)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: expected nanoseconds since the epoch, found {raw!r}") from None
    if v < 0:
        raise ValueError(f"{where}: negative time {v}")
    return v


def spans_from_request(obj: Any, *, where: str = "") -> Iterator[Span]:
    """The spans of one ``ExportTraceServiceRequest`` (a parsed JSON object)."""
    if not isinstance(obj, dict):
        raise ValueError(f"{where}expected an object with resourceSpans, found {type(obj).__name__}")
    for rs in _get(obj, "resourceSpans") or []:
        for ss in _get(rs, "scopeSpans") or []:
            for i, sp in enumerate(_get(ss, "spans") or []):
                w = f"{where}span {i} ({sp.get('name')!r})"
                start = _nanos(_get(sp, "startTimeUnixNano"), f"{w} startTimeUnixNano")
                end = _nanos(_get(sp, "endTimeUnixNano"), f"{w} endTimeUnixNano")
                if end < start:
                    raise ValueError(f"{w}: ends before it starts")
                events = [
                    (str(e.get("name", "")), _nanos(_get(e, "timeUnixNano"), f"{w} event time"))
                    for e in sp.get("events") or []
                    if isinstance(e, dict)
                ]
                status = sp.get("status") or {}
                code = status.get("code") if isinstance(status, dict) else None
                trace = _hex_id(_get(sp, "traceId"), 16, f"{w} traceId")
                span = _hex_id(_get(sp, "spanId"), 8, f"{w} spanId")
                if trace is None or span is None:
                    raise ValueError(f"{w}: has no traceId or spanId")
                yield Span(
                    trace,
                    span,
                    _hex_id(_get(sp, "parentSpanId"), 8, f"{w} parentSpanId"),
                    str(sp.get("name", "")),
                    start,
                    end,
                    _attributes(sp.get("attributes"), w),
                    events,
                    code in (2, "STATUS_CODE_ERROR", "ERROR"),
                )


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    """Nested attribute objects/lists as OpenInference's dot paths (``retrieval.documents.0.
    document.id``); flat keys pass through."""
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i, v in enumerate(value):
            _flatten(v, f"{prefix}.{i}", out)
    else:
        out[prefix] = value


def _iso_nanos(raw: Any, where: str) -> int:
    from datetime import datetime, timezone

    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return _nanos(int(raw), where)
    try:
        dt = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{where}: expected an ISO 8601 time, found {raw!r}") from None
    if dt.tzinfo is None:
        raise ValueError(f"{where}: time {raw!r} has no time zone")
    delta = dt - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def span_from_phoenix(obj: dict[str, Any], *, where: str = "") -> Span:
    """One span in Phoenix's / OpenInference's JSON shape: ``{"name", "context": {"trace_id",
    "span_id"}, "parent_id", "start_time", "end_time" (ISO 8601 with a zone), "status_code",
    "attributes" (flat dot keys or nested), "events": [{"name", "timestamp"}]}``. Ids are kept
    as given (Phoenix also uses UUID-like ids)."""
    ctx = obj.get("context") or {}
    w = f"{where}span {obj.get('name')!r}"
    trace, span = ctx.get("trace_id"), ctx.get("span_id")
    if not isinstance(trace, str) or not trace or not isinstance(span, str) or not span:
        raise ValueError(f"{w}: context needs string trace_id and span_id")
    start = _iso_nanos(obj.get("start_time"), f"{w} start_time")
    end = _iso_nanos(obj.get("end_time"), f"{w} end_time")
    if end < start:
        raise ValueError(f"{w}: ends before it starts")
    attrs: dict[str, Any] = {}
    _flatten(obj.get("attributes") or {}, "", attrs)
    events = [
        (str(e.get("name", "")), _iso_nanos(e.get("timestamp"), f"{w} event timestamp"))
        for e in obj.get("events") or []
        if isinstance(e, dict)
    ]
    parent = obj.get("parent_id")
    return Span(
        trace,
        span,
        parent if isinstance(parent, str) and parent else None,
        str(obj.get("name", "")),
        start,
        end,
        attrs,
        events,
        str(obj.get("status_code", "")).upper() == "ERROR",
    )


def _spans_of(doc: Any, where: str) -> Iterator[Span]:
    """The spans of one parsed JSON document: an OTLP request, a Phoenix span, a list of
    Phoenix spans, or ``{"data": [...]}`` (Phoenix's REST response)."""
    if isinstance(doc, dict) and isinstance(doc.get("data"), list):
        doc = doc["data"]
    if isinstance(doc, list):
        for i, sp in enumerate(doc):
            if not isinstance(sp, dict):
                raise ValueError(f"{where}item {i}: expected a span object, found {type(sp).__name__}")
            yield span_from_phoenix(sp, where=f"{where}item {i}, ")
    elif (
        isinstance(doc, dict)
        and "context" in doc
        and "resourceSpans" not in doc
        and "resource_spans" not in doc
    ):
        yield span_from_phoenix(doc, where=where)
    else:
        yield from spans_from_request(doc, where=where)


def read_spans(path: str | Path, *, max_spans: int = 1_000_000) -> list[Span]:
    """Spans from a trace file: OTLP JSON (one request object, or one per line), or Phoenix /
    OpenInference span JSON (a list of spans, ``{"data": [...]}``, or one span per line)."""
    p = Path(path)
    raw = read_document(p, found="the trace file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=str(p)) from None
    # the bounded reader (kg_rageval.base.safe_io): NaN/Infinity and over-long integers name
    # their field, nesting past max_json_depth is that limit, never a RecursionError
    try:
        docs: list[tuple[str, Any]] = [("", loads_json(text, source=str(p)))]
    except InputError as exc:
        if "not valid JSON" not in str(exc):
            raise
        # one JSON document per line
        docs = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                docs.append((f"line {n}", loads_json(line, source=str(p), location=f"line {n}")))
    out: list[Span] = []
    for loc, doc in docs:
        try:
            for s in _spans_of(doc, ""):
                out.append(s)
                if len(out) > max_spans:
                    raise InputError(
                        f"more than {max_spans} spans; raise max_spans to read them", source=str(p)
                    )
        except ValueError as exc:
            raise InputError(str(exc), source=str(p), location=loc or None) from None
        except RecursionError:
            raise InputError(
                "span attributes nested too deeply", source=str(p), location=loc or None
            ) from None
    return out


def _covered_ms(spans: Iterable[Span]) -> float | None:
    """Wall time covered by the spans' intervals (their union), in ms; None without spans."""
    iv = sorted((s.start_ns, s.end_ns) for s in spans)
    if not iv:
        return None
    total, cur_s, cur_e = 0, iv[0][0], iv[0][1]
    for s, e in iv[1:]:
        if s > cur_e:
            total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return (total + cur_e - cur_s) / 1e6


def _documents(span: Span, prefix: str) -> list[dict[str, Any]]:
    docs: dict[int, dict[str, Any]] = {}
    for k, v in span.attributes.items():
        m = _DOC.match(k)
        if m and m.group(1) == prefix:
            docs.setdefault(int(m.group(2)), {})[m.group(3)] = v
    return [docs[i] for i in sorted(docs)]


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def record_from_trace(spans: list[Span], *, id_attribute: str | None = None) -> dict[str, Any]:
    """One evaluation record from the spans of one trace (see the module docstring)."""
    ids = {s.span_id for s in spans}
    roots = sorted(
        (s for s in spans if s.parent_id is None or s.parent_id not in ids), key=lambda s: s.start_ns
    )
    if not roots:  # every span has its parent in the trace: the parent links form a cycle
        raise InputError(
            f"trace {spans[0].trace_id}: no root span (the parentSpanId links of its {len(spans)} "
            "spans form a cycle)"
        )
    root = roots[0]
    rec: dict[str, Any] = {"id": root.trace_id}
    if id_attribute and root.attributes.get(id_attribute) is not None:
        rec["id"] = str(root.attributes[id_attribute])
    if isinstance(root.attributes.get("input.value"), str):
        rec["query"] = root.attributes["input.value"]
    latency: dict[str, float] = {"total": (max(s.end_ns for s in roots) - root.start_ns) / 1e6}
    by_kind: dict[str, list[Span]] = {}
    for s in spans:
        if s.kind:
            by_kind.setdefault(s.kind, []).append(s)
    for kind, stage in KINDS_TO_STAGE.items():
        ms = _covered_ms(by_kind.get(kind, []))
        if ms is not None:
            latency[stage] = ms
    first = [t for s in spans for name, t in s.events if "first token" in name.lower()]
    if first:
        latency["ttft"] = max(0.0, (min(first) - root.start_ns) / 1e6)
    system: dict[str, Any] = {"latency_ms": latency}
    llm = by_kind.get("LLM", [])
    tokens: dict[str, int] = {}
    for name, attr in (("prompt", "llm.token_count.prompt"), ("completion", "llm.token_count.completion")):
        vals = [_num(s.attributes.get(attr)) for s in llm]
        if any(v is not None for v in vals):
            tokens[name] = int(sum(v for v in vals if v is not None))
    if tokens:
        system["tokens"] = tokens
    costs = [_num(s.attributes.get("llm.cost.total")) for s in llm]
    if any(c is not None for c in costs):
        system["cost_usd"] = float(sum(c for c in costs if c is not None))
    cache: dict[str, bool] = {}
    reads = [_num(s.attributes.get("llm.token_count.prompt_details.cache_read")) for s in llm]
    if any(r is not None for r in reads):
        cache["llm_prompt"] = any((r or 0) > 0 for r in reads)
    for s in spans:
        hit = s.attributes.get("cache.hit")
        if isinstance(hit, bool) and s.kind:
            layer = s.kind.lower()
            cache[layer] = cache.get(layer, False) or hit
    if cache:
        system["cache"] = cache
    rec["system"] = system
    retrieval: dict[str, Any] = {}
    retr = sorted(by_kind.get("RETRIEVER", []), key=lambda s: s.end_ns)
    docs = _documents(retr[-1], "retrieval.documents") if retr else []
    if retr:
        with_id = [d for d in docs if d.get("id") is not None]
        scored = all(_num(d.get("score")) is not None for d in with_id)
        retrieval["run"] = [[str(d["id"]), _num(d["score"])] if scored else str(d["id"]) for d in with_id]
    rer = sorted(by_kind.get("RERANKER", []), key=lambda s: s.end_ns)
    passed = _documents(rer[-1], "reranker.output_documents") if rer else docs
    ctx = [
        {"id": str(d["id"]), "text": d["content"]} if d.get("id") is not None else d["content"]
        for d in passed
        if isinstance(d.get("content"), str)
    ]
    if passed and ctx:
        retrieval["contexts"] = ctx
    if retrieval:
        rec["retrieval"] = retrieval
    if isinstance(root.attributes.get("output.value"), str):
        rec["answer"] = {"text": root.attributes["output.value"]}
    rec["trace"] = {
        "trace_id": root.trace_id,
        "spans": len(spans),
        "error_spans": sum(s.error for s in spans),
    }
    return rec


def records_from_spans(spans: Iterable[Span], *, id_attribute: str | None = None) -> list[dict[str, Any]]:
    """One record per trace, in the order the traces first appear; duplicate record ids (from
    ``id_attribute``) raise :class:`InputError`."""
    traces: dict[str, list[Span]] = {}
    for s in spans:
        traces.setdefault(s.trace_id, []).append(s)
    out, seen = [], set()
    for tid, group in traces.items():
        rec = record_from_trace(group, id_attribute=id_attribute)
        if rec["id"] in seen:
            raise InputError(f"two traces give the record id {rec['id']!r} (trace {tid})")
        seen.add(rec["id"])
        out.append(rec)
    return out


def import_otlp(
    path: str | Path, *, id_attribute: str | None = None, max_spans: int = 1_000_000
) -> list[dict[str, Any]]:
    """Records from an OTLP JSON trace file (see the module docstring)."""
    spans = read_spans(path, max_spans=max_spans)
    try:
        return records_from_spans(spans, id_attribute=id_attribute)
    except InputError as exc:
        if exc.source:
            raise
        raise InputError(str(exc), source=str(path)) from None
