"""The ``parsing`` section of a record (``docs/records.md``, *parsing*): one labelled page or
document of the ingestion evaluation, read and checked in one place::

    "parsing": {"reference": "hand-cleaned reference text",
                "extracted": "what the parser / OCR produced",
                "tables": [{"reference": "<table>...</table>", "extracted": "<table>...</table>"}]}

``reference`` / ``extracted``: strings (``extracted`` may be ``""``: everything was lost;
``null`` or absent: the parser produced nothing, a missing run). ``tables``: optional, a list
of objects holding two HTML strings (``extracted`` ``null``: the table was not recognised).
Layout labels, each optional::

    "reading_order": {"reference": ["b1", ["b2", "b3"], "b4"], "extracted": ["b1", "b3", "b2", "b4"]},
    "heading_order": {"reference": ["h1", "h2"], "extracted": ["h2", "h1"]},
    "title": {"reference": "Annual report 2024", "extracted": "ANNUAL  REPORT 2024"},
    "headings": [{"reference": "1. Scope", "extracted": "1 Scope"}]

An order's ``reference`` is a non-empty list of block ids (strings), an element may be a list
of ids that share one rank (their order not labelled); no id twice; at most 10,000 blocks.
``extracted``: the ids as the parser emitted them (``null``: no order produced). A title or
heading needs its ``reference`` text (non-empty); ``extracted`` ``null``: not found.

The document class is a slice (``"slices": {"doc_class": "invoice"}``), the ontology branch
the record's ``gold_node``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kg_rageval.records._io import Record, record_error

_FIELDS = frozenset(
    {"reference", "extracted", "tables", "reading_order", "heading_order", "title", "headings"}
)
_MAX_BLOCKS = 10_000


@dataclass(frozen=True)
class TablePair:
    reference: str
    extracted: str | None


@dataclass(frozen=True)
class OrderPair:
    reference: tuple[str | tuple[str, ...], ...]
    extracted: tuple[str, ...] | None


@dataclass(frozen=True)
class HeadingPair:
    reference: str
    extracted: str | None


@dataclass(frozen=True)
class ParsingSection:
    reference: str | None
    extracted: str | None
    tables: tuple[TablePair, ...]
    reading_order: OrderPair | None = None
    heading_order: OrderPair | None = None
    title: HeadingPair | None = None
    headings: tuple[HeadingPair, ...] = ()

    @property
    def has_layout(self) -> bool:
        return bool(self.reading_order or self.heading_order or self.title or self.headings)


def _text(record: Record, field: str, v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise record_error(record, field, f"expected a string or null, found {type(v).__name__}")


def _pair_keys(record: Record, field: str, v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise record_error(record, field, f"expected an object, found {type(v).__name__}")
    bad = set(v) - {"reference", "extracted"}
    if bad:
        raise record_error(
            record, f"{field}.{sorted(bad)[0]}", "unknown field; expected reference or extracted"
        )
    return v


def _ids(record: Record, field: str, v: Any, *, groups: bool) -> tuple[Any, ...]:
    if not isinstance(v, list):
        raise record_error(record, field, f"expected a list of block ids, found {type(v).__name__}")
    out: list[Any] = []
    n = 0
    for i, item in enumerate(v):
        if groups and isinstance(item, list):
            if not item or not all(isinstance(b, str) and b for b in item):
                raise record_error(record, f"{field}[{i}]", "a group must be a non-empty list of block ids")
            out.append(tuple(item))
            n += len(item)
        elif isinstance(item, str) and item:
            out.append(item)
            n += 1
        else:
            what = "a block id or a list of ids" if groups else "a block id"
            raise record_error(record, f"{field}[{i}]", f"expected {what} (non-empty string)")
        if n > _MAX_BLOCKS:
            raise record_error(record, field, f"more than {_MAX_BLOCKS} blocks are not scored (order bound)")
    return tuple(out)


def _order(record: Record, field: str, v: Any) -> OrderPair | None:
    if v is None:
        return None
    v = _pair_keys(record, field, v)
    ref = _ids(record, f"{field}.reference", v.get("reference"), groups=True)
    if not ref:
        raise record_error(record, f"{field}.reference", "a labelled order needs at least one block")
    seen: set[str] = set()
    for item in ref:
        for b in (item,) if isinstance(item, str) else item:
            if b in seen:
                raise record_error(record, f"{field}.reference", f"block id {b!r} appears twice")
            seen.add(b)
    ext = v.get("extracted")
    return OrderPair(ref, None if ext is None else _ids(record, f"{field}.extracted", ext, groups=False))


def _heading(record: Record, field: str, v: Any) -> HeadingPair:
    v = _pair_keys(record, field, v)
    ref = _text(record, f"{field}.reference", v.get("reference"))
    if not ref or not ref.strip():
        raise record_error(record, f"{field}.reference", "a title or heading needs its reference text")
    return HeadingPair(ref, _text(record, f"{field}.extracted", v.get("extracted")))


def parsing_section(record: Record) -> ParsingSection | None:
    """The record's ``parsing`` section checked (``None`` when absent); a wrong type or an
    unknown field raises an ``InputError`` naming the record, line and field."""
    s = record.get("parsing")
    if s is None:
        return None
    if not isinstance(s, dict):
        raise record_error(record, "parsing", f"expected an object, found {type(s).__name__}")
    unknown = set(s) - _FIELDS
    if unknown:
        raise record_error(
            record,
            f"parsing.{sorted(unknown)[0]}",
            "unknown field; expected reference, extracted, tables, reading_order, heading_order, title or headings",
        )
    tables = s.get("tables") or []
    if not isinstance(tables, list):
        raise record_error(record, "parsing.tables", f"expected a list, found {type(tables).__name__}")
    pairs = []
    for i, t in enumerate(tables):
        f = f"parsing.tables[{i}]"
        if not isinstance(t, dict):
            raise record_error(record, f, f"expected an object, found {type(t).__name__}")
        bad = set(t) - {"reference", "extracted"}
        if bad:
            raise record_error(
                record, f"{f}.{sorted(bad)[0]}", "unknown field; expected reference or extracted"
            )
        ref = _text(record, f"{f}.reference", t.get("reference"))
        if not ref:
            raise record_error(record, f"{f}.reference", "a table needs its reference HTML")
        pairs.append(TablePair(ref, _text(record, f"{f}.extracted", t.get("extracted"))))
    heads = s.get("headings") or []
    if not isinstance(heads, list):
        raise record_error(record, "parsing.headings", f"expected a list, found {type(heads).__name__}")
    title = s.get("title")
    return ParsingSection(
        _text(record, "parsing.reference", s.get("reference")),
        _text(record, "parsing.extracted", s.get("extracted")),
        tuple(pairs),
        reading_order=_order(record, "parsing.reading_order", s.get("reading_order")),
        heading_order=_order(record, "parsing.heading_order", s.get("heading_order")),
        title=None if title is None else _heading(record, "parsing.title", title),
        headings=tuple(_heading(record, f"parsing.headings[{i}]", h) for i, h in enumerate(heads)),
    )


__all__ = ["HeadingPair", "OrderPair", "ParsingSection", "TablePair", "parsing_section"]
