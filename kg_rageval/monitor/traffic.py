"""Production traffic: records with timestamps, read into :class:`TrafficRow` and windows.

A production record is an ordinary kg-rageval record (``docs/records.md``) plus:

* ``timestamp`` (required): ISO 8601 with a zone (``2026-11-02T10:15:00Z``,
  ``...+01:00``) or a number of seconds since the Unix epoch (UTC). A timestamp without a
  zone is an input error: its window would depend on the machine's clock settings.
* ``release`` (optional string): the system release that answered; ``--window release``
  groups by it.
* the linked concepts, read from ``labels.predicted`` (a string or a list of ids) or else
  ``mentions.predicted[*].id``; an empty list is NIL (no concept). Production has no gold, so
  the *branch* of a query is the branch of its first linked concept (``branch_of``, the
  audit's rule: the concept's ancestor at ``branch_depth``, root = depth 0), ``(NIL)`` for a
  query that links to nothing, ``(not in ontology)`` for an id the ontology lacks (a fault of
  the system under test: counted, never an abort).
* ``embedding`` (optional list of floats) with ``embedding_model`` (the encoder's name and
  version: embeddings of different models are never compared).
* ``feedback`` (optional section): ``thumbs`` (``"up"`` / ``"down"`` / null), ``regenerated``
  (bool), ``cited_clicks`` (int), ``dwell_ms`` (number), ``copied`` / ``shared`` /
  ``exported`` (bool), ``followup`` (the next user turn's text, or null); read as candidate
  signals by :mod:`kg_rageval.monitor.signals`.
* ``review`` (optional section, added by a reviewer): ``faithful`` (bool).
* ``confidence`` (optional number in [0, 1]): the system's own confidence, for review queues.
* ``intent`` and ``slices`` as in every record; ``system`` (latency, cost) as in the
  ``system`` family.

:func:`iter_traffic` yields rows chunk by chunk (bounded memory); a malformed field is an
:class:`~kg_rageval.base.errors.InputError` naming file, line and field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from kg_rageval.records import Record, iter_record_chunks, record_error, record_slices

NIL_BRANCH = "(NIL)"
UNKNOWN_BRANCH = "(not in ontology)"
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

_WINDOW = re.compile(r"^\s*(\d+)\s*(s|m|h|d|w)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True)
class TrafficRow:
    """One production query, as the monitor sees it (see the module docstring for the fields)."""

    record_id: str
    timestamp: datetime
    window: str
    branch: str
    concepts: tuple[str, ...]
    unknown_concepts: tuple[str, ...] = ()
    release: str | None = None
    intent: str | None = None
    slices: Mapping[str, str] = field(default_factory=dict)
    embedding: tuple[float, ...] | None = None
    embedding_model: str | None = None
    feedback: Mapping[str, Any] = field(default_factory=dict)
    confidence: float | None = None
    record: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_nil(self) -> bool:
        return not self.concepts and not self.unknown_concepts


@dataclass(frozen=True)
class Windowing:
    """How timestamps map to window keys: fixed widths aligned to the Unix epoch (``1d``: UTC
    days; the key is the window's start, ISO 8601) or ``release`` (the record's ``release``)."""

    width: timedelta | None  # None: by release

    @classmethod
    def parse(cls, spec: str) -> Windowing:
        """``"1d"``, ``"6h"``, ``"1w"``, ``"30m"``, ``"45s"`` or ``"release"``."""
        if spec.strip().lower() == "release":
            return cls(None)
        m = _WINDOW.match(spec)
        if not m or int(m.group(1)) == 0:
            from kg_rageval.base.errors import ConfigError

            raise ConfigError(
                f"--window {spec!r}: expected N followed by s, m, h, d or w (e.g. 1d), or 'release'"
            )
        return cls(timedelta(seconds=int(m.group(1)) * _UNITS[m.group(2)]))

    def key(self, ts: datetime, release: str | None) -> str | None:
        """The window key of one row; ``None`` for ``release`` windows without a release."""
        if self.width is None:
            return release
        return self.key_seconds(int((ts - EPOCH).total_seconds()), release)

    def key_seconds(self, seconds: int, release: str | None) -> str | None:
        """:meth:`key` of a timestamp given as whole seconds since the Unix epoch."""
        if self.width is None:
            return release
        width = int(self.width.total_seconds())
        return _window_key(seconds // width * width)


@lru_cache(maxsize=4096)
def _window_key(start: int) -> str:
    return (EPOCH + timedelta(seconds=start)).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(value: Any, record: Record, name: str = "timestamp") -> datetime:
    """An aware UTC datetime from an ISO 8601 string with a zone or epoch seconds."""
    if isinstance(value, bool) or value is None:
        raise record_error(record, name, "expected an ISO 8601 timestamp with a zone or epoch seconds")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise record_error(record, name, f"not a finite number: {value!r}")
        return EPOCH + timedelta(seconds=float(value))
    if not isinstance(value, str):
        raise record_error(record, name, f"expected a string or a number, found {type(value).__name__}")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        ts = datetime.fromisoformat(text)
    except ValueError:
        raise record_error(record, name, f"not an ISO 8601 timestamp: {value!r}") from None
    if ts.tzinfo is None:
        raise record_error(
            record, name, f"timestamp {value!r} has no zone (add Z or an offset such as +01:00)"
        )
    return ts.astimezone(timezone.utc)


def linked_ids(record: Record) -> list[str]:
    """The record's linked concept ids (``labels.predicted``, else ``mentions.predicted[*].id``)."""
    labels = record.get("labels")
    if isinstance(labels, Mapping) and "predicted" in labels:
        pred = labels["predicted"]
        if isinstance(pred, str):
            return [pred] if pred else []
        if isinstance(pred, list) and all(isinstance(p, str) for p in pred):
            return list(pred)
        raise record_error(record, "labels.predicted", "expected an id or a list of ids")
    mentions = record.get("mentions")
    if isinstance(mentions, Mapping) and isinstance(mentions.get("predicted"), list):
        out = []
        for i, m in enumerate(mentions["predicted"]):
            mid = m.get("id") if isinstance(m, Mapping) else None
            if mid is None:
                continue  # a predicted NIL mention
            if not isinstance(mid, str):
                raise record_error(record, f"mentions.predicted[{i}].id", "expected an id string or null")
            out.append(mid)
        return out
    return []


def _number(
    record: Record, name: str, value: Any, lo: float | None = None, hi: float | None = None
) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise record_error(record, name, f"expected a finite number, found {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise record_error(record, name, f"{value!r} is outside [{lo}, {hi}]")
    return float(value)


def to_row(
    record: Record,
    windowing: Windowing,
    resolve: Callable[[str], str | None],
    branch_of: Callable[[str], str],
) -> TrafficRow:
    """One record as a :class:`TrafficRow`; ``resolve`` gives a canonical node id or ``None``
    (``IdResolver.node_id``), ``branch_of`` the branch of a canonical node id."""
    ts = parse_timestamp(record.get("timestamp"), record)
    release = record.get("release")
    if release is not None and not isinstance(release, str):
        raise record_error(record, "release", "expected a string")
    known: list[str] = []
    unknown: list[str] = []
    for cid in linked_ids(record):
        node = resolve(cid)
        (known if node is not None else unknown).append(node if node is not None else cid)
    if known:
        branch = branch_of(known[0])
    elif unknown:
        branch = UNKNOWN_BRANCH
    else:
        branch = NIL_BRANCH
    emb = record.get("embedding")
    model = record.get("embedding_model")
    if emb is not None:
        if (
            not isinstance(emb, list)
            or not emb
            or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in emb
            )
        ):
            raise record_error(record, "embedding", "expected a non-empty list of finite numbers")
        if not isinstance(model, str) or not model:
            raise record_error(
                record, "embedding_model", "an embedding needs the name and version of its model"
            )
    feedback = record.get("feedback") or {}
    if not isinstance(feedback, Mapping):
        raise record_error(record, "feedback", "expected an object")
    thumbs = feedback.get("thumbs")
    if thumbs not in (None, "up", "down"):
        raise record_error(record, "feedback.thumbs", f"expected 'up', 'down' or null, found {thumbs!r}")
    intent = record.get("intent")
    key = windowing.key(ts, release)
    if key is None:
        raise record_error(record, "release", "--window release needs a release on every record")
    return TrafficRow(
        record_id=str(record.get("id")),
        timestamp=ts,
        window=key,
        branch=branch,
        concepts=tuple(known),
        unknown_concepts=tuple(unknown),
        release=release,
        intent=intent if isinstance(intent, str) else None,
        slices={k.removeprefix("slice:"): v for k, v in record_slices(record).items()},
        embedding=tuple(float(x) for x in emb) if emb is not None else None,
        embedding_model=model if emb is not None else None,
        feedback=dict(feedback),
        confidence=_number(record, "confidence", record.get("confidence"), 0.0, 1.0),
        record=record,
    )


def iter_traffic(
    path: str | Path,
    ontology: Any,
    *,
    window: str | Windowing = "1d",
    branch_depth: int = 1,
    branches: list[str] | None = None,
    chunk_size: int = 65536,
) -> Iterator[list[TrafficRow]]:
    """The production records of ``path`` (JSONL, optionally gzipped) as rows, chunk by chunk.
    ``branches`` (node ids) names the branches instead of ``branch_depth`` (the first whose
    subtree holds the concept; ``(other)`` for none), as the audit's coverage does."""
    make = row_maker(ontology, window=window, branch_depth=branch_depth, branches=branches)
    for chunk in iter_record_chunks(path, chunk_size):
        yield [make(r) for r in chunk]


def row_maker(
    ontology: Any,
    *,
    window: str | Windowing = "1d",
    branch_depth: int = 1,
    branches: list[str] | None = None,
) -> Callable[[Record], TrafficRow]:
    """``record -> TrafficRow`` for records from anywhere (a file, traces)."""
    from kg_rageval.audit.config import CoverageConfig
    from kg_rageval.audit.pernode import make_branch_of
    from kg_rageval.ontology import IdResolver

    windowing = window if isinstance(window, Windowing) else Windowing.parse(window)
    resolver = IdResolver(ontology)
    branch_of = make_branch_of(ontology, CoverageConfig(branch_depth=branch_depth, branches=branches))
    # ids repeat across millions of rows: resolve each once
    resolve = lru_cache(maxsize=1 << 16)(resolver.node_id)
    branch = lru_cache(maxsize=1 << 16)(branch_of)
    return lambda r: to_row(r, windowing, resolve, branch)


TRACE_ATTRIBUTES = {
    "concepts": "kg_rageval.concepts",
    "intent": "kg_rageval.intent",
    "release": "kg_rageval.release",
    "confidence": "kg_rageval.confidence",
}
"""Span attributes a traced system sets for the monitor (on any span of the trace)."""


def records_from_traces(path: str | Path, *, id_attribute: str | None = None) -> list[dict[str, Any]]:
    """Production records from an OTLP / OpenInference trace file: the ``system`` family's
    import (``families/system/otlp.py``) plus ``timestamp`` (the root span's start, UTC),
    linked concepts (``kg_rageval.concepts``: an id or a list), ``intent``, ``release``
    (``kg_rageval.release``, else ``service.version``), ``confidence``, and the query
    embedding of an EMBEDDING span (``embedding.embeddings.0.embedding.vector``, model
    ``embedding.model_name``)."""
    from kg_rageval.families.system.otlp import read_spans, record_from_trace

    spans = read_spans(path)
    traces: dict[str, list[Any]] = {}
    for s in spans:
        traces.setdefault(s.trace_id, []).append(s)
    out = []
    for group in traces.values():
        rec = record_from_trace(group, id_attribute=id_attribute)
        ids = {s.span_id for s in group}
        root = min(
            (s for s in group if s.parent_id is None or s.parent_id not in ids), key=lambda s: s.start_ns
        )
        rec["timestamp"] = root.start_ns / 1e9
        attrs: dict[str, Any] = {}
        for s in sorted(group, key=lambda s: s.start_ns):
            for k, v in s.attributes.items():
                attrs.setdefault(k, v)
        concepts = attrs.get(TRACE_ATTRIBUTES["concepts"])
        if concepts is not None:
            rec["labels"] = {"predicted": concepts}
        for name in ("intent", "release", "confidence"):
            if attrs.get(TRACE_ATTRIBUTES[name]) is not None:
                rec[name] = attrs[TRACE_ATTRIBUTES[name]]
        if "release" not in rec and isinstance(attrs.get("service.version"), str):
            rec["release"] = attrs["service.version"]
        vector = attrs.get("embedding.embeddings.0.embedding.vector")
        if (
            vector is None
            and isinstance(attrs.get("embedding.embeddings"), list)
            and attrs["embedding.embeddings"]
        ):
            first = attrs["embedding.embeddings"][0]
            if isinstance(first, Mapping):
                vector = first.get("embedding.vector") or (first.get("embedding") or {}).get("vector")
        if vector is not None:
            rec["embedding"] = vector
            rec["embedding_model"] = attrs.get("embedding.model_name")
        out.append(rec)
    return out
