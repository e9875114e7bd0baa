"""Imported rows joined onto a golden set by a declared key (``docs/interop.md``, *Joining*).

Every golden record is kept: matched, it takes the imported row's production fields
(``answer``, ``retrieval.contexts``, ``retrieval.run``, ``query`` when it has none, and the
``source`` section); unmatched, it stays as it is, without an answer, so the families count it
as a missing run (``docs/audit.md``). An imported row no golden record matches is counted and
listed, not scored. Gold sections are the golden record's: an imported ``reference`` that the
golden record also has is kept under ``source.reference``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from kg_rageval.base.errors import ConfigError, InputError

Record = dict[str, Any]
KEYS = ("query_id", "text")
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed, trailing ``?.!`` dropped."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip().rstrip("?.! ")


@dataclass
class Joined:
    records: list[Record]
    matched: int = 0
    unmatched_golden: list[str] = field(default_factory=list)
    """Golden ids with no imported row: missing runs."""
    unmatched_imported: list[str] = field(default_factory=list)
    """Imported ids (``row-<n>`` where the source had none) no golden record matched."""

    def summary(self) -> dict[str, Any]:
        return {
            "matched": self.matched,
            "n_unmatched_golden": len(self.unmatched_golden),
            "n_unmatched_imported": len(self.unmatched_imported),
            "unmatched_golden": list(self.unmatched_golden),
            "unmatched_imported": list(self.unmatched_imported),
        }


def _key_of(rec: Record, key: str, side: str) -> str | None:
    if key == "query_id":
        return str(rec["id"])
    if key == "text":
        q = rec.get("query")
        return normalise(q) if isinstance(q, str) else None
    name = key.removeprefix("attribute:")
    value = (rec.get("source") or {}).get("extra", {}).get(name) if side == "imported" else rec.get("id")
    return None if value is None else str(value)


def check_key(key: str) -> str:
    if key in KEYS or (key.startswith("attribute:") and len(key) > len("attribute:")):
        return key
    raise ConfigError(f"unknown join key {key!r}: query_id, text or attribute:NAME")


def join(imported: list[Record], golden: list[Record], key: str) -> Joined:
    """Join ``imported`` onto ``golden`` by ``key``: ``query_id`` (imported id = golden id),
    ``text`` (normalised query text) or ``attribute:NAME`` (the imported source field NAME,
    such as a trace attribute, = golden id). A key two rows of one side share is an error."""
    check_key(key)
    by_key: dict[str, Record] = {}
    for rec in imported:
        k = _key_of(rec, key, "imported")
        if k is None:
            continue
        if k in by_key:
            src = rec.get("source", {})
            raise InputError(
                f"join key {key} {k!r} is on two imported rows (first: {by_key[k]['id']!r})",
                source=src.get("file"),
                location=f"row {src.get('row')}",
            )
        by_key[k] = rec
    out = Joined(records=[])
    used: set[int] = set()
    seen_golden: dict[str, str] = {}
    for g in golden:
        rec = dict(g)
        k = _key_of(g, "query_id" if key.startswith("attribute:") else key, "golden")
        if k is not None and key == "text":
            if k in seen_golden:
                raise InputError(
                    f"join key text {k!r} is on two golden records ({seen_golden[k]!r} and {g['id']!r})",
                    source=g.get("_source"),
                )
            seen_golden[k] = str(g["id"])
        hit = by_key.get(k) if k is not None else None
        if hit is None:
            out.unmatched_golden.append(str(g["id"]))
        else:
            used.add(id(hit))
            out.matched += 1
            _merge(rec, hit)
        out.records.append(rec)
    out.unmatched_imported = [str(r["id"]) for r in imported if id(r) not in used]
    return out


def _merge(rec: Record, hit: Record) -> None:
    source = dict(hit.get("source", {}))
    source["id"] = hit["id"]
    if "query" not in rec and "query" in hit:
        rec["query"] = hit["query"]
    elif "query" in hit and hit["query"] != rec.get("query"):
        source["query"] = hit["query"]
    if "answer" in hit:
        rec["answer"] = {**rec.get("answer", {}), **hit["answer"]}
    if "retrieval" in hit:
        rec["retrieval"] = {**rec.get("retrieval", {}), **hit["retrieval"]}
    if "reference" in hit:
        if "reference" in rec:
            source["reference"] = hit["reference"]
        else:
            rec["reference"] = hit["reference"]
    rec["source"] = source
