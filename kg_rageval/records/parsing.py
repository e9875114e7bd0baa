"""The ``parsing`` section of a record (``docs/records.md``, *parsing*): one labelled page or
document of the ingestion evaluation, read and checked in one place::

    "parsing": {"reference": "hand-cleaned reference text",
                "extracted": "what the parser / OCR produced",
                "tables": [{"reference": "<table>...</table>", "extracted": "<table>...</table>"}]}

``reference`` / ``extracted``: strings (``extracted`` may be ``""``: everything was lost;
``null`` or absent: the parser produced nothing, a missing run). ``tables``: optional, a list
of objects holding two HTML strings (``extracted`` ``null``: the table was not recognised).
The document class is a slice (``"slices": {"doc_class": "invoice"}``), the ontology branch
the record's ``gold_node``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kg_rageval.records._io import Record, record_error

_FIELDS = frozenset({"reference", "extracted", "tables"})


@dataclass(frozen=True)
class TablePair:
    reference: str
    extracted: str | None


@dataclass(frozen=True)
class ParsingSection:
    reference: str | None
    extracted: str | None
    tables: tuple[TablePair, ...]


def _text(record: Record, field: str, v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise record_error(record, field, f"expected a string or null, found {type(v).__name__}")


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
            record, f"parsing.{sorted(unknown)[0]}", "unknown field; expected reference, extracted or tables"
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
    return ParsingSection(
        _text(record, "parsing.reference", s.get("reference")),
        _text(record, "parsing.extracted", s.get("extracted")),
        tuple(pairs),
    )


__all__ = ["ParsingSection", "TablePair", "parsing_section"]
