"""The ``cleaning`` section of a record (``docs/records.md``, *cleaning*): one document before
and after a cleaning pipeline, with the labels its parts are scored against, read and checked
in one place::

    "cleaning": {"doc_id": "doc-7",
                 "text": "the cleaned text",
                 "boilerplate": {"gold": [[0, 42]], "removed": [[0, 40], [300, 320]]},
                 "language": {"gold": "en", "pred": "en"},
                 "duplicates": {"gold": ["doc-9"], "pred": ["doc-9", "doc-3"]},
                 "pii": {"gold": [{"start": 50, "end": 67, "type": "EMAIL"}],
                         "pred": [{"start": 50, "end": 60, "type": "EMAIL"}]}}

Every part is optional. ``doc_id``: the document's id (default: the record's ``id``); the
near-duplicate pairs name other documents by it. ``text``: the cleaned text (Unicode health,
the MinHash reference detector). ``boilerplate``: character spans ``[start, end)`` of the
*raw* (pre-cleaning) text, ``gold`` the labelled boilerplate, ``removed`` what the cleaner
removed (``null`` or absent: no output, the part is unscored). ``language``: ISO 639 / BCP 47
codes, compared case-insensitively (``pred: null``: no prediction). ``duplicates``: the ids
of the documents this one is a near duplicate of; ``gold`` present (``[]`` included) marks the
document as labelled. ``pii``: typed character spans of the text the scrubber read.

A wrong type, an unknown field or a bad span raises an ``InputError`` naming the file,
record, line and field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kg_rageval.records._io import Record, record_error, record_object

_FIELDS = frozenset({"doc_id", "text", "boilerplate", "language", "duplicates", "pii"})
_PAIR_FIELDS = frozenset({"gold", "pred"})
_BP_FIELDS = frozenset({"gold", "removed"})
_SPAN_FIELDS = frozenset({"start", "end", "type"})


@dataclass(frozen=True)
class PiiSpan:
    start: int
    end: int
    type: str


@dataclass(frozen=True)
class CleaningSection:
    doc_id: str
    text: str | None
    boilerplate_gold: tuple[tuple[int, int], ...] | None
    boilerplate_removed: tuple[tuple[int, int], ...] | None
    language_gold: str | None
    language_pred: str | None
    duplicates_gold: tuple[str, ...] | None
    duplicates_pred: tuple[str, ...] | None
    pii_gold: tuple[PiiSpan, ...] | None
    pii_pred: tuple[PiiSpan, ...] | None


def _list(record: Record, field: str, v: Any) -> list | None:
    if v is None:
        return None
    if not isinstance(v, list):
        raise record_error(record, field, f"expected a list or null, found {type(v).__name__}")
    return v


def _offset(record: Record, field: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise record_error(record, field, f"expected an integer offset, found {type(v).__name__}")
    if v < 0:
        raise record_error(record, field, f"offset {v} is negative")
    return v


def _span(record: Record, field: str, s: Any, e: Any) -> tuple[int, int]:
    a, b = _offset(record, f"{field}.start", s), _offset(record, f"{field}.end", e)
    if not a < b:
        raise record_error(record, f"{field}.end", f"end {b} must be greater than start {a}")
    return a, b


def _spans(record: Record, field: str, v: Any) -> tuple[tuple[int, int], ...] | None:
    items = _list(record, field, v)
    if items is None:
        return None
    out = []
    for i, sp in enumerate(items):
        f = f"{field}[{i}]"
        if not isinstance(sp, list) or len(sp) != 2:
            raise record_error(record, f, "expected a [start, end] pair of character offsets")
        out.append(_span(record, f, sp[0], sp[1]))
    return tuple(out)


def _code(record: Record, field: str, v: Any) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str) or not v.strip():
        raise record_error(record, field, "expected a non-empty language code or null")
    return v.strip().lower()


def _ids(record: Record, field: str, v: Any) -> tuple[str, ...] | None:
    items = _list(record, field, v)
    if items is None:
        return None
    for i, x in enumerate(items):
        if not isinstance(x, str) or not x:
            raise record_error(record, f"{field}[{i}]", "expected a non-empty document id")
    return tuple(items)


def _pii(record: Record, field: str, v: Any) -> tuple[PiiSpan, ...] | None:
    items = _list(record, field, v)
    if items is None:
        return None
    out = []
    for i, sp in enumerate(items):
        f = f"{field}[{i}]"
        d = record_object(record, f, sp, _SPAN_FIELDS)
        for k in ("start", "end", "type"):
            if k not in d:
                raise record_error(record, f"{f}.{k}", "required")
        t = d["type"]
        if not isinstance(t, str) or not t.strip():
            raise record_error(record, f"{f}.type", "expected a non-empty entity type")
        s, e = _span(record, f, d["start"], d["end"])
        out.append(PiiSpan(s, e, t.strip()))
    return tuple(out)


def cleaning_section(record: Record) -> CleaningSection | None:
    """The record's ``cleaning`` section checked (``None`` when absent); see the module
    docstring for the shape and the errors."""
    s = record.get("cleaning")
    if s is None:
        return None
    d = record_object(record, "cleaning", s, _FIELDS)
    doc_id = d.get("doc_id", record.get("id"))
    if not isinstance(doc_id, str) or not doc_id:
        raise record_error(record, "cleaning.doc_id", "expected a non-empty string (the document's id)")
    text = d.get("text")
    if text is not None and not isinstance(text, str):
        raise record_error(record, "cleaning.text", f"expected a string or null, found {type(text).__name__}")
    bp = record_object(record, "cleaning.boilerplate", d.get("boilerplate") or {}, _BP_FIELDS)
    lang = record_object(record, "cleaning.language", d.get("language") or {}, _PAIR_FIELDS)
    dup = record_object(record, "cleaning.duplicates", d.get("duplicates") or {}, _PAIR_FIELDS)
    pii = record_object(record, "cleaning.pii", d.get("pii") or {}, _PAIR_FIELDS)
    return CleaningSection(
        doc_id=doc_id,
        text=text,
        boilerplate_gold=_spans(record, "cleaning.boilerplate.gold", bp.get("gold")),
        boilerplate_removed=_spans(record, "cleaning.boilerplate.removed", bp.get("removed")),
        language_gold=_code(record, "cleaning.language.gold", lang.get("gold")),
        language_pred=_code(record, "cleaning.language.pred", lang.get("pred")),
        duplicates_gold=_ids(record, "cleaning.duplicates.gold", dup.get("gold")),
        duplicates_pred=_ids(record, "cleaning.duplicates.pred", dup.get("pred")),
        pii_gold=_pii(record, "cleaning.pii.gold", pii.get("gold")),
        pii_pred=_pii(record, "cleaning.pii.pred", pii.get("pred")),
    )


__all__ = ["CleaningSection", "PiiSpan", "cleaning_section"]
