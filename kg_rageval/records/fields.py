"""Reading the record fields the generation and provenance families use.

Fields (all optional; a family that needs an absent one puts the record in ``unscored`` with a
reason):

* ``answer.text`` (str), ``answer.refused`` (bool), ``answer.citations`` (list of document ids),
  ``answer.confidence`` (number in [0, 1]), ``answer.judgment`` (faithfulness judgment),
  ``answer.concepts`` (ontology ids the answer names; overrides linking its text),
  ``answer.claims`` (list of ``{"text", "citations"}``: claim-level citations for provenance);
* ``retrieval.contexts``: the context given to the generator, a list of ``{"id", "text"}``
  objects or plain strings; ``retrieval.gold``: gold evidence documents (list or graded map);
* ``reference.answer`` (str or list of acceptable strings), ``reference.answerable`` (bool),
  ``reference.concepts`` (ontology ids of the reference answer; overrides linking its text),
  ``reference.unseen_concepts`` (ids a human marked as named in the answer but absent from
  the context), ``reference.correct`` (bool, the correctness label for calibration).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from operator import is_
from typing import Any

from kg_rageval.records import Record, record_error, slice_text
from kg_rageval.records.nodes import gold_node

CITATION_MARKER = re.compile(r"\s*\[\s*[\w.:/#@-]+(?:\s*,\s*[\w.:/#@-]+)*\s*\]")
"""An inline citation marker: a bracket holding one or more comma-separated tokens without
spaces (``[1]``, ``[doc-12]``, ``[doc-1, doc-2]``, ``[logs]``), with the whitespace before it."""


def strip_citation_markers(text: str) -> str:
    """``text`` without inline citation markers (:data:`CITATION_MARKER`):
    ``"90 days [logs]."`` → ``"90 days."``."""
    return CITATION_MARKER.sub("", text)


def section(record: Record, name: str) -> dict[str, Any] | None:
    s = record.get(name)
    if s is None or type(s) is dict:  # the common cases first: no isinstance call
        return s
    if not isinstance(s, dict):
        raise record_error(record, name, f"expected an object, found {type(s).__name__}")
    return s


def answer_text(record: Record) -> str | None:
    a = record.get("answer")
    if a is None:
        return None
    if type(a) is not dict:
        a = section(record, "answer")  # raises unless a dict subclass
    t = a.get("text")  # type: ignore[union-attr]
    if t is None or type(t) is str:
        return t
    if not isinstance(t, str):
        raise record_error(record, "answer.text", f"expected a string, found {type(t).__name__}")
    return t


def _field(record: Record, sec: str, name: str) -> Any:
    """``record[sec][name]``, or ``None`` when the section or the field is absent (a section
    that is not an object raises, naming it)."""
    s = record.get(sec)
    if s is None:
        return None
    if type(s) is not dict:
        s = section(record, sec)  # raises unless a dict subclass
    return s.get(name)  # type: ignore[union-attr]


def flag(record: Record, sec: str, name: str) -> bool | None:
    v = _field(record, sec, name)
    if v is None or v is True or v is False:  # bool has no subclasses
        return v
    raise record_error(record, f"{sec}.{name}", f"expected true or false, found {v!r}")


def id_list(record: Record, sec: str, name: str) -> list[str] | None:
    v = _field(record, sec, name)
    if v is None:
        return None
    if type(v) is not list or not all(type(x) is str for x in v):
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise record_error(record, f"{sec}.{name}", f"expected a list of strings, found {v!r}")
    return list(v)


def citations(record: Record) -> list[str] | None:
    return id_list(record, "answer", "citations")


def contexts(record: Record) -> list[tuple[str | None, str]] | None:
    """``retrieval.contexts`` as ``(doc id or None, text)`` pairs; ``None`` when absent."""
    s = section(record, "retrieval")
    if s is None or s.get("contexts") is None:
        return None
    raw = s["contexts"]
    if not isinstance(raw, list):
        raise record_error(record, "retrieval.contexts", f"expected a list, found {type(raw).__name__}")
    out: list[tuple[str | None, str]] = []
    for k, c in enumerate(raw):
        if isinstance(c, str):
            out.append((None, c))
        elif isinstance(c, dict) and isinstance(c.get("text"), str):
            doc = c.get("id")
            out.append((str(doc) if doc is not None else None, c["text"]))
        else:
            raise record_error(
                record,
                f"retrieval.contexts[{k}]",
                f"expected a string or an object with a string 'text', found {c!r}",
            )
    return out


def cited_context_texts(record: Record) -> list[str] | None:
    """The context a claim may rest on: the passages whose id the answer cites, or all passages
    when the answer cites nothing that carries an id. ``None`` when there is no context."""
    ctx = contexts(record)
    if ctx is None:
        return None
    cites = citations(record)
    if cites:
        wanted = set(cites)
        cited = [t for d, t in ctx if d is not None and d in wanted]
        if cited or any(d is not None for d, _ in ctx):
            return cited
    return [t for _, t in ctx]


def gold_documents(record: Record) -> set[str] | None:
    """``retrieval.gold`` as a set of relevant ids (graded map: grade > 0)."""
    s = section(record, "retrieval")
    if s is None or s.get("gold") is None:
        return None
    g = s["gold"]
    if isinstance(g, list) and all(isinstance(x, str) for x in g):
        return set(g)
    if isinstance(g, dict):
        bad = [k for k, v in g.items() if isinstance(v, bool) or not isinstance(v, (int, float))]
        if bad:
            raise record_error(
                record, "retrieval.gold", f"grades must be numbers, found {g[bad[0]]!r} for {bad[0]!r}"
            )
        return {k for k, v in g.items() if v > 0}
    raise record_error(record, "retrieval.gold", f"expected a list of ids or an id → grade map, found {g!r}")


_KEYS_MEMO: ContextVar[dict[int, Any] | None] = ContextVar("generation_row_keys", default=None)


@contextmanager
def shared_row_keys(records: list[Record]) -> Iterator[None]:
    """Within the block, :func:`row_keys` of each record of ``records`` (held alive by the
    caller) is computed once and shared by the families that read it (the generation families
    of one call each key their rows by it); the families copy it, never change it."""
    token = _KEYS_MEMO.set({})
    try:
        yield
    finally:
        _KEYS_MEMO.reset(token)


def row_keys(record: Record) -> dict[str, Any]:
    """Breakdown keys: ``gold_node`` (:func:`kg_rageval.records.nodes.gold_node`: the record's
    own ``gold_node``, else its single ``labels.gold`` id, else None; ids as given) and one
    ``slice:<name>`` per record slice."""
    memo = _KEYS_MEMO.get()
    if memo is not None:
        got = memo.get(id(record))
        if got is None:
            got = memo[id(record)] = _row_keys(record)
        return got
    return _row_keys(record)


def _row_keys(record: Record) -> dict[str, Any]:
    keys: dict[str, Any] = {"gold_node": gold_node(record)}
    slices = record.get("slices")
    if isinstance(slices, dict):
        for k, v in slices.items():
            keys[f"slice:{k}"] = slice_text(v)
    return keys


def stated_row_keys(record: Record) -> dict[str, Any]:
    """:func:`row_keys` (a copy): the one ``gold_node`` rule already lets a record's own
    top-level ``gold_node`` win over its single ``labels.gold`` id, in every family."""
    return dict(row_keys(record))


def all_slice_keys(records: list[Record]) -> list[str]:
    """``gold_node`` and one ``slice:<name>`` per slice name of ``records``; within
    :func:`shared_row_keys`, computed once for the records of the call (each family passes its
    own list of the same record objects)."""
    from kg_rageval.records import slice_keys

    memo = _KEYS_MEMO.get()
    if memo is not None:
        seen = memo.get(-1)
        if seen is not None and len(seen[0]) == len(records) and all(map(is_, seen[0], records)):
            return list(seen[1])
    out = ["gold_node"] + [f"slice:{k}" for k in slice_keys(records)]
    if memo is not None:
        memo[-1] = (list(records), tuple(out))  # key -1: no id() is negative
    return out
