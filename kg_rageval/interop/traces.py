"""Phoenix / OpenInference span exports and OTLP JSON trace files into kg-rageval records
(``docs/interop.md``, *Traces*).

One record per trace, built by the system family's trace reader
(:func:`kg_rageval.families.system.otlp.record_from_trace`): ``query`` the root span's
``input.value``, ``answer.text`` its ``output.value``, ``retrieval.run`` / ``retrieval.contexts``
the ``RETRIEVER`` (``RERANKER``) span's documents, ``system.latency_ms`` / ``system.tokens`` /
``system.cost_usd`` from the spans' times and ``LLM`` attributes, ``trace`` the span counts.
The record id is the root span's ``id_attribute`` when given (and present), else the trace id.

:func:`read_phoenix` reads

* Phoenix's span dataframe (``px.Client().get_spans_dataframe()`` written with
  ``to_parquet`` or ``to_json(orient="records", lines=True)``): one span a row, columns
  ``context.trace_id``, ``context.span_id``, ``parent_id``, ``name``, ``span_kind``,
  ``start_time``, ``end_time``, ``status_code``, ``events`` and ``attributes.<name>``
  (``attributes.input.value``, ``attributes.retrieval.documents`` as a list of
  ``{"document.id", "document.content", "document.score"}``, ...). Times are ISO 8601 with a
  zone, datetimes (Parquet), or epoch numbers as pandas writes them (``to_json``: milliseconds;
  the unit is told by magnitude: seconds, ms, µs or ns of a date between 2001 and 2286);
* OpenInference span JSON (``{"name", "context": {"trace_id", "span_id"}, "parent_id",
  "start_time", "end_time", "attributes": {...}}``): one a line, a list, or ``{"data": [...]}``.

:func:`read_otlp` reads OTLP JSON (``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}``,
one request a file or a line; OTLP/JSON hex ids or protobuf JSON base64 ids).

Nothing is invented: ``missing`` counts the traces without ``query``, ``answer.text``,
``retrieval.run``, ``retrieval.contexts``, ``system.tokens`` and, with ``id_attribute``, the
traces whose root span lacks it (they keep the trace id). ``source`` is ``{"format", "file",
"row" (Phoenix: the root span's row), "trace_id", "extra"}``, ``extra`` the root span's other
attributes (so ``--join-key attribute:NAME`` joins on one of them). ``counts`` gives
``n_spans``, ``n_traces`` and ``n_error_spans``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.interop._common import Imported, bad, iter_rows, kind

FIELDS = ("query", "answer.text", "retrieval.run", "retrieval.contexts", "system.tokens")
_MAPPED = frozenset({"input.value", "output.value"})
_SPAN_COLUMNS = ("name", "parent_id", "start_time", "end_time", "status_code", "events")


def _epoch_nanos(value: float) -> int:
    """An epoch number in s, ms, µs or ns, told by magnitude (dates 2001..2286)."""
    for scale in (1_000_000_000, 1_000_000, 1_000, 1):
        ns = value * scale
        if 978_307_200 * 10**9 <= ns < 10_000_000_000 * 10**9:
            return int(ns)
    raise ValueError(f"epoch time {value!r} is no date between 2001 and 2286 in s, ms, µs or ns")


def _time(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _epoch_nanos(value)
    if hasattr(value, "isoformat"):  # datetime / pandas Timestamp from Parquet
        return value.isoformat()
    return value


def _span_row(obj: dict[str, Any]) -> dict[str, Any]:
    """A Phoenix dataframe row (flat ``context.*`` / ``attributes.*`` columns) as an
    OpenInference span object."""
    attrs: dict[str, Any] = {}
    nested = obj.get("attributes")
    if isinstance(nested, dict):
        attrs.update(nested)
    for k, v in obj.items():
        if k.startswith("attributes.") and v is not None:
            attrs[k[len("attributes.") :]] = v
    if obj.get("span_kind") is not None and "openinference.span.kind" not in attrs:
        attrs["openinference.span.kind"] = obj["span_kind"]
    span = {k: obj.get(k) for k in _SPAN_COLUMNS if obj.get(k) is not None}
    span["context"] = {"trace_id": obj.get("context.trace_id"), "span_id": obj.get("context.span_id")}
    span["attributes"] = attrs
    return span


def read_phoenix(path: str | Path, id_attribute: str | None = None) -> Imported:
    """Read a Phoenix / OpenInference span export; see the module docstring."""
    from kg_rageval.families.system.otlp import span_from_phoenix

    spans: list[Any] = []
    rows: dict[tuple[str, str], int] = {}
    for row, obj in iter_rows(path):
        span_obj = _span_row(obj) if "context.trace_id" in obj else obj
        if not isinstance(span_obj.get("context"), dict):
            raise bad(
                path,
                row,
                "context.trace_id",
                f"expected a span with a trace id, found {kind(span_obj.get('context'))}",
            )
        try:
            span_obj["start_time"] = _time(span_obj.get("start_time"))
            span_obj["end_time"] = _time(span_obj.get("end_time"))
            events = span_obj.get("events")
            if isinstance(events, list):
                span_obj["events"] = [
                    {**e, "timestamp": _time(e.get("timestamp"))} for e in events if isinstance(e, dict)
                ]
            s = span_from_phoenix(span_obj)
        except ValueError as exc:
            raise InputError(str(exc), source=str(path), location=f"row {row}") from None
        spans.append(s)
        rows.setdefault((s.trace_id, s.span_id), row)
    return _records("phoenix", path, spans, id_attribute, rows)


def read_otlp(path: str | Path, id_attribute: str | None = None) -> Imported:
    """Read an OTLP JSON trace file; see the module docstring."""
    from kg_rageval.families.system.otlp import read_spans

    return _records("otlp", path, read_spans(path), id_attribute, {})


def _root(spans: list[Any]) -> Any:
    ids = {s.span_id for s in spans}
    roots = sorted(
        (s for s in spans if s.parent_id is None or s.parent_id not in ids), key=lambda s: s.start_ns
    )
    return roots[0] if roots else None


def _records(
    fmt: str, path: str | Path, spans: list[Any], id_attribute: str | None, rows: dict[tuple[str, str], int]
) -> Imported:
    from kg_rageval.families.system.otlp import record_from_trace

    traces: dict[str, list[Any]] = {}
    for s in spans:
        traces.setdefault(s.trace_id, []).append(s)
    missing = dict.fromkeys(FIELDS, 0)
    if id_attribute:
        missing["id"] = 0
    records: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for tid, group in traces.items():
        try:
            rec = record_from_trace(group, id_attribute=id_attribute)
        except InputError as exc:
            raise InputError(str(exc), source=str(path)) from None
        root = _root(group)
        if rec["id"] in seen:
            raise InputError(
                f"traces {seen[rec['id']]} and {tid} both give the record id {rec['id']!r}", source=str(path)
            )
        seen[rec["id"]] = tid
        if id_attribute and root.attributes.get(id_attribute) is None:
            missing["id"] += 1
        if "query" not in rec:
            missing["query"] += 1
        if "text" not in rec.get("answer", {}):
            missing["answer.text"] += 1
        for name in ("run", "contexts"):
            if name not in rec.get("retrieval", {}):
                missing[f"retrieval.{name}"] += 1
        if "tokens" not in rec.get("system", {}):
            missing["system.tokens"] += 1
        source: dict[str, Any] = {"format": fmt, "file": str(path)}
        if (tid, root.span_id) in rows:
            source["row"] = rows[(tid, root.span_id)]
        source["trace_id"] = tid
        extra = {k: v for k, v in root.attributes.items() if k not in _MAPPED and v is not None}
        if extra:
            source["extra"] = extra
        rec["source"] = source
        records.append(rec)
    out = Imported(fmt, records, missing)
    out.counts = {
        "n_spans": len(spans),
        "n_traces": len(traces),
        "n_error_spans": sum(bool(s.error) for s in spans),
    }
    return out
