"""The ``chunking`` section of a record (``docs/records.md``, *chunking*): one document with the
chunks a chunker made of it, read and checked in one place::

    "chunking": {"doc_id": "doc-7", "category": "DOID:162",
                 "structure": [{"kind": "table", "start": 120, "end": 480, "boundaries": [300]}],
                 "chunks": [{"id": "doc-7#0", "text": "...", "start": 0, "end": 300,
                             "source": {"doc_id": "doc-7", "page": 1, "section": "2.1"},
                             "parent_section": "2.1 Staging", "parent_doc": "doc-7",
                             "ancestry": ["DOID:4", "DOID:14566", "DOID:162"]}]}

Offsets are character positions in the document text, spans half-open ``[start, end)`` with
``0 <= start < end``. ``doc_id``: required string. ``category``: the document's ontology id
(optional; ``null``: the ancestry of the chunks is not checked). ``structure``: optional list
of structural units (``kind`` one of ``table``, ``list``, ``numbered_section``) with optional
``boundaries`` — the unit's own internal split points (row or item starts), each strictly
inside the unit. ``chunks``: a list of objects, ``id`` and ``start`` / ``end`` required,
the metadata fields optional (absent or ``null``: not kept). A wrong type, an unknown field
or a bad span raises an ``InputError`` naming the file, record, line and field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kg_rageval.records._io import Record, record_error, record_object

KINDS = ("table", "list", "numbered_section")
_FIELDS = frozenset({"doc_id", "category", "structure", "chunks"})
_UNIT_FIELDS = frozenset({"kind", "start", "end", "boundaries"})
_CHUNK_FIELDS = frozenset(
    {"id", "text", "start", "end", "source", "parent_section", "parent_doc", "ancestry"}
)
_SOURCE_FIELDS = frozenset({"doc_id", "page", "section"})


@dataclass(frozen=True)
class Unit:
    kind: str
    start: int
    end: int
    boundaries: tuple[int, ...] = ()


@dataclass(frozen=True)
class Source:
    doc_id: str | None
    page: int | str | None
    section: str | None


@dataclass(frozen=True)
class Chunk:
    id: str
    text: str | None
    start: int
    end: int
    source: Source | None
    parent_section: str | None
    parent_doc: str | None
    ancestry: tuple[str, ...] | None


@dataclass(frozen=True)
class ChunkingSection:
    doc_id: str
    category: str | None
    structure: tuple[Unit, ...]
    chunks: tuple[Chunk, ...]


def _list(record: Record, field: str, v: Any) -> list:
    if v is None:
        return []
    if not isinstance(v, list):
        raise record_error(record, field, f"expected a list, found {type(v).__name__}")
    return v


def _str(record: Record, field: str, v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise record_error(record, field, f"expected a string or null, found {type(v).__name__}")


def _offset(record: Record, field: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise record_error(record, field, f"expected an integer offset, found {type(v).__name__}")
    if v < 0:
        raise record_error(record, field, f"offset {v} is negative")
    return v


def _span(record: Record, field: str, d: dict) -> tuple[int, int]:
    if "start" not in d or "end" not in d:
        raise record_error(record, f"{field}.{'start' if 'start' not in d else 'end'}", "required")
    s, e = _offset(record, f"{field}.start", d["start"]), _offset(record, f"{field}.end", d["end"])
    if not s < e:
        raise record_error(record, f"{field}.end", f"end {e} must be greater than start {s}")
    return s, e


def _unit(record: Record, field: str, v: Any) -> Unit:
    d = record_object(record, field, v, _UNIT_FIELDS)
    kind = d.get("kind")
    if kind not in KINDS:
        raise record_error(record, f"{field}.kind", f"{kind!r} is not one of {', '.join(KINDS)}")
    s, e = _span(record, field, d)
    cuts = []
    for j, b in enumerate(_list(record, f"{field}.boundaries", d.get("boundaries"))):
        b = _offset(record, f"{field}.boundaries[{j}]", b)
        if not s < b < e:
            raise record_error(
                record, f"{field}.boundaries[{j}]", f"boundary {b} is not strictly inside the unit [{s}, {e})"
            )
        cuts.append(b)
    return Unit(kind, s, e, tuple(sorted(set(cuts))))


def _source(record: Record, field: str, v: Any) -> Source | None:
    if v is None:
        return None
    d = record_object(record, field, v, _SOURCE_FIELDS)
    page = d.get("page")
    if page is not None and (isinstance(page, bool) or not isinstance(page, (int, str))):
        raise record_error(
            record, f"{field}.page", f"expected an integer, a string or null, found {type(page).__name__}"
        )
    return Source(
        _str(record, f"{field}.doc_id", d.get("doc_id")),
        page,
        _str(record, f"{field}.section", d.get("section")),
    )


def _chunk(record: Record, field: str, v: Any) -> Chunk:
    d = record_object(record, field, v, _CHUNK_FIELDS)
    cid = d.get("id")
    if not isinstance(cid, str) or not cid:
        raise record_error(record, f"{field}.id", "a chunk needs a non-empty string id")
    s, e = _span(record, field, d)
    anc = d.get("ancestry")
    ancestry: tuple[str, ...] | None = None
    if anc is not None:
        items = _list(record, f"{field}.ancestry", anc)
        for j, a in enumerate(items):
            if not isinstance(a, str) or not a:
                raise record_error(record, f"{field}.ancestry[{j}]", "expected a non-empty id string")
        ancestry = tuple(items)
    return Chunk(
        cid,
        _str(record, f"{field}.text", d.get("text")),
        s,
        e,
        _source(record, f"{field}.source", d.get("source")),
        _str(record, f"{field}.parent_section", d.get("parent_section")),
        _str(record, f"{field}.parent_doc", d.get("parent_doc")),
        ancestry,
    )


def chunking_section(record: Record) -> ChunkingSection | None:
    """The record's ``chunking`` section checked (``None`` when absent); see the module
    docstring for the shape and the errors."""
    s = record.get("chunking")
    if s is None:
        return None
    d = record_object(record, "chunking", s, _FIELDS)
    doc_id = d.get("doc_id")
    if not isinstance(doc_id, str) or not doc_id:
        raise record_error(record, "chunking.doc_id", "required: the document's id (a non-empty string)")
    category = _str(record, "chunking.category", d.get("category"))
    units = tuple(
        _unit(record, f"chunking.structure[{i}]", u)
        for i, u in enumerate(_list(record, "chunking.structure", d.get("structure")))
    )
    chunks = tuple(
        _chunk(record, f"chunking.chunks[{i}]", c)
        for i, c in enumerate(_list(record, "chunking.chunks", d.get("chunks")))
    )
    return ChunkingSection(doc_id, category or None, units, chunks)


__all__ = ["KINDS", "Chunk", "ChunkingSection", "Source", "Unit", "chunking_section"]
