"""The ``extraction`` section of a record (``docs/records.md``, *extraction*): one sentence or
document with gold and predicted NER tags and/or gold and predicted relations::

    "extraction": {"tokens": ["EU", "rejects", "German", "call"],
                   "gold_tags": ["B-ORG", "O", "B-MISC", "O"],
                   "pred_tags": ["B-ORG", "O", "B-LOC", "O"],
                   "relations": {"gold": [{"subject": "e1", "relation": "org:founded_by",
                                           "object": "e2", "subject_type": "ORG",
                                           "object_type": "PER"}],
                                 "pred": [...]}}

``gold_tags`` / ``pred_tags``: lists of tag strings (``O`` or ``<prefix>-<type>``), of equal
length (and the length of ``tokens`` when given); ``pred_tags`` absent or ``null``: the tagger
produced nothing (a missing run). ``relations.gold`` / ``relations.pred``: lists of
``{"subject", "relation", "object"}`` objects (non-empty strings) with optional
``subject_type`` / ``object_type`` (ontology class ids for the domain/range check);
``relations.pred`` absent or ``null``: a missing run. A wrong type, an unknown field or
unequal lengths raise an ``InputError`` naming the file, record, line and field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kg_rageval.records._io import Record, record_error, record_object

_FIELDS = frozenset({"tokens", "gold_tags", "pred_tags", "relations"})
_REL_FIELDS = frozenset({"gold", "pred"})
_TRIPLE_FIELDS = frozenset({"subject", "relation", "object", "subject_type", "object_type"})


@dataclass(frozen=True)
class Triple:
    subject: str
    relation: str
    object: str
    subject_type: str | None = None
    object_type: str | None = None


@dataclass(frozen=True)
class ExtractionSection:
    tokens: tuple[str, ...] | None
    gold_tags: tuple[str, ...] | None
    pred_tags: tuple[str, ...] | None
    has_relations: bool
    gold_relations: tuple[Triple, ...]
    pred_relations: tuple[Triple, ...] | None


def _strings(record: Record, field: str, v: Any, *, tags: bool) -> tuple[str, ...] | None:
    if v is None:
        return None
    if not isinstance(v, list):
        raise record_error(record, field, f"expected a list of strings, found {type(v).__name__}")
    for i, t in enumerate(v):
        if not isinstance(t, str) or (tags and not t):
            raise record_error(
                record, f"{field}[{i}]", "expected a non-empty string" if tags else "expected a string"
            )
        if tags and t != "O" and (len(t) < 2 or t[1] != "-"):
            raise record_error(
                record, f"{field}[{i}]", f"{t!r} is not a tag: expected 'O' or '<prefix>-<type>' (B-PER)"
            )
    return tuple(v)


def _triples(record: Record, field: str, v: Any) -> tuple[Triple, ...]:
    if not isinstance(v, list):
        raise record_error(record, field, f"expected a list of relation objects, found {type(v).__name__}")
    out = []
    for i, t in enumerate(v):
        f = f"{field}[{i}]"
        d = record_object(record, f, t, _TRIPLE_FIELDS)
        vals: dict[str, str | None] = {}
        for k in ("subject", "relation", "object"):
            x = d.get(k)
            if not isinstance(x, str) or not x:
                raise record_error(record, f"{f}.{k}", "required: a non-empty string")
            vals[k] = x
        for k in ("subject_type", "object_type"):
            x = d.get(k)
            if x is not None and (not isinstance(x, str) or not x):
                raise record_error(record, f"{f}.{k}", "expected a non-empty string or null")
            vals[k] = x
        out.append(Triple(**vals))  # type: ignore[arg-type]  # the three required ones are str
    return tuple(out)


def extraction_section(record: Record) -> ExtractionSection | None:
    """The record's ``extraction`` section checked (``None`` when absent); see the module
    docstring for the shape and the errors."""
    s = record.get("extraction")
    if s is None:
        return None
    d = record_object(record, "extraction", s, _FIELDS)
    tokens = _strings(record, "extraction.tokens", d.get("tokens"), tags=False)
    gold = _strings(record, "extraction.gold_tags", d.get("gold_tags"), tags=True)
    pred = _strings(record, "extraction.pred_tags", d.get("pred_tags"), tags=True)
    if gold is None and pred is not None:
        raise record_error(record, "extraction.gold_tags", "required with pred_tags")
    n = len(gold) if gold is not None else None
    if n is not None and pred is not None and len(pred) != n:
        raise record_error(record, "extraction.pred_tags", f"{len(pred)} tags for {n} gold tags")
    if n is not None and tokens is not None and len(tokens) != n:
        raise record_error(record, "extraction.tokens", f"{len(tokens)} tokens for {n} gold tags")
    rel = d.get("relations")
    gold_r: tuple[Triple, ...] = ()
    pred_r: tuple[Triple, ...] | None = None
    if rel is not None:
        r = record_object(record, "extraction.relations", rel, _REL_FIELDS)
        if r.get("gold") is None:
            raise record_error(
                record, "extraction.relations.gold", "required: the gold relations ([] for none)"
            )
        gold_r = _triples(record, "extraction.relations.gold", r["gold"])
        if r.get("pred") is not None:
            pred_r = _triples(record, "extraction.relations.pred", r["pred"])
    if gold is None and rel is None:
        raise record_error(record, "extraction", "needs gold_tags or relations")
    return ExtractionSection(tokens, gold, pred, rel is not None, gold_r, pred_r)


__all__ = ["ExtractionSection", "Triple", "extraction_section"]
