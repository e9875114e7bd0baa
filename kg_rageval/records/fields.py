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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import repeat
from operator import is_, is_not
from typing import Any

import numpy as np

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


# ------------------------------------------------------------------ columns of a chunk
_EMPTY: dict[str, Any] = {}
"""Stands for an absent section in :class:`RecordColumns` (read with ``.get`` only)."""

_NONE = type(None)
_GET: Any = dict.get  # ``map(_GET, dicts, repeat(key))``: each dict's ``.get(key)``, at C speed


class RecordColumns:
    """The fields of a list of record dicts (one streamed chunk) read as columns, each once and
    at C speed (``map(dict.get, ...)`` over the records, then over their sections), for the
    families that read the same fields of every record (the generation and provenance members).

    Every reader gives ``None`` where the column is not in its common, well-formed shape (a
    section that is not an object, a flag that is not ``true``/``false``, ...): the caller then
    reads record by record with the checked readers above, which raise the first problem in
    record order with the message they always gave. So a column read changes no value and no
    error, only the cost. Build it with :func:`record_columns` (shared within
    :func:`shared_row_keys`)."""

    __slots__ = ("_memo", "n", "records")

    def __init__(self, records: list[Record]):
        self.records = records
        self.n = len(records)
        self._memo: dict[Any, Any] = {}

    def cached(self, key: Any, make: Any) -> Any:
        """``make()``, computed once per ``key`` for these records (a reader of several
        columns that more than one family uses: its key names its module)."""
        memo = self._memo
        if key not in memo:
            memo[key] = make()
        return memo[key]

    def ids(self) -> list[Any] | None:
        """``record["id"]`` of each record; ``None`` when some record has none."""
        return self.cached("id", self._ids)

    def _ids(self) -> list[Any] | None:
        ids = list(map(dict.get, self.records, repeat("id"), repeat(_EMPTY)))
        return None if any(map(is_, ids, repeat(_EMPTY))) else ids

    def section(self, name: str) -> list[dict[str, Any]] | None:
        """``record[name]`` of each record, an absent or ``null`` section as an empty dict
        (shared: never changed); ``None`` unless each is an object or absent."""
        return self.cached(("section", name), lambda: self._section(name))

    def _section(self, name: str) -> list[dict[str, Any]] | None:
        raw = list(map(dict.get, self.records, repeat(name), repeat(_EMPTY)))
        types = set(map(type, raw))
        if not types <= {dict, _NONE}:
            return None
        if _NONE in types:
            raw = [_EMPTY if s is None else s for s in raw]
        return raw

    def present(self, name: str) -> list[bool] | None:
        """Whether each record has the section ``name`` (not absent, not ``null``)."""
        secs = self.section(name)
        if secs is None:
            return None
        return self.cached(("present", name), lambda: [s is not _EMPTY for s in secs])

    def field(self, sec: str, name: str) -> list[Any] | None:
        """``record[sec][name]`` of each record, ``None`` where absent (``None`` when the section
        column is not well formed)."""
        secs = self.section(sec)
        if secs is None:
            return None
        return self.cached(("field", sec, name), lambda: list(map(dict.get, secs, repeat(name))))

    def flags(self, sec: str, name: str) -> list[bool | None] | None:
        """:func:`flag` of each record: ``True``, ``False`` or ``None`` (absent); ``None`` when
        some value is not a boolean."""
        col = self.field(sec, name)
        if col is None or not set(map(type, col)) <= {bool, _NONE}:
            return None
        return col

    def texts(self, sec: str, name: str) -> list[str | None] | None:
        """A text field of each record (``None`` where absent); ``None`` when some value is
        neither a string nor absent."""
        col = self.field(sec, name)
        if col is None or not set(map(type, col)) <= {str, _NONE}:
            return None
        return col

    def keys(self) -> dict[str, np.ndarray]:
        """:func:`row_keys` of every record as object columns, in the order of
        :func:`all_slice_keys`: ``gold_node`` (:func:`~kg_rageval.records.nodes.gold_node`) and
        one ``slice:<name>`` per slice name (``None`` where a record has none)."""
        return self.cached("keys", self._keys)

    def _keys(self) -> dict[str, np.ndarray]:
        from kg_rageval.records.slices import slice_texts

        records = self.records
        tops = list(map(dict.get, records, repeat("gold_node")))
        labels = list(map(dict.get, records, repeat("labels")))
        label_types = set(map(type, labels))
        if label_types <= {_NONE} and set(map(type, tops)) <= {str, _NONE} and "" not in tops:
            nodes = tops  # no labels: each record's own gold_node or None, at C speed
        else:
            if label_types <= {dict}:
                golds = list(map(_GET, labels, repeat("gold")))
            else:
                golds = [lab.get("gold") if isinstance(lab, Mapping) else None for lab in labels]
            nodes = [t if isinstance(t, str) and t else _one_gold(g) for t, g in zip(tops, golds)]
        out = {"gold_node": _objects(nodes)}
        slices = list(map(dict.get, records, repeat("slices")))
        names = sorted(set().union(*(s for s in slices if isinstance(s, dict))) if slices else set())
        plain = set(map(type, slices)) <= {dict}
        for k in names:
            vals = (
                list(map(_GET, slices, repeat(k)))
                if plain
                else [s.get(k) if isinstance(s, dict) else None for s in slices]
            )
            out[f"slice:{k}"] = _objects(slice_texts(vals))
        return out

    def key_columns(self, at: np.ndarray | list[int] | None = None) -> dict[str, np.ndarray]:
        """:meth:`keys` of the rows at positions ``at`` (all rows when ``None``)."""
        keys = self.keys()
        if at is None:
            return dict(keys)
        idx = np.asarray(at, dtype=np.intp)
        return {k: v[idx] for k, v in keys.items()}


def section_columns(
    records: list[Record], name: str
) -> tuple[RecordColumns, list[Any], list[dict[str, Any]], np.ndarray] | None:
    """``(columns, ids, sections, present)`` of a chunk for a family's column path: the
    :func:`record_columns`, every record's id, its section ``name`` (an absent or ``null`` one as
    the shared empty dict) and a boolean array of the records that have it; ``None`` when the
    ids or the section column are not in their well-formed shape (the family then reads record
    by record, raising the first problem as it always did)."""
    cols = record_columns(records)
    if cols is None:
        return None
    rid, secs = cols.ids(), cols.section(name)
    if rid is None or secs is None:
        return None
    has = np.fromiter(map(is_not, secs, repeat(_EMPTY)), dtype=bool, count=len(secs))
    return cols, rid, secs, has


def _one_gold(gold: Any) -> str | None:
    """:func:`~kg_rageval.records.nodes.gold_node`'s single-label rule on a ``labels.gold`` value."""
    if isinstance(gold, list):
        gold = gold[0] if len(gold) == 1 else None
    return gold if isinstance(gold, str) and gold else None


def _objects(values: list[Any]) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def record_columns(records: list[Record]) -> RecordColumns | None:
    """The :class:`RecordColumns` of ``records`` (``None`` unless every record is a plain
    dict); within :func:`shared_row_keys` the same object for the same records (each family
    passes its own list of the same record objects)."""
    if type(records) is not list or not set(map(type, records)) <= {dict}:
        return None
    memo = _KEYS_MEMO.get()
    if memo is None:
        return RecordColumns(records)
    seen = memo.get(-2)
    if seen is not None and seen.n == len(records) and all(map(is_, seen.records, records)):
        return seen
    cols = memo[-2] = RecordColumns(list(records))  # key -2: no id() is negative
    return cols
