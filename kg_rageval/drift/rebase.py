"""Re-base records labelled against one ontology release onto another
(``kg-rageval records rebase --from OLD --to NEW --data RECORDS.jsonl --out NEW.jsonl``).

**Id mapping** (:func:`build_mapping`, one entry per id OLD or NEW knows). Starting from an id
``x``, step by step until an active node of NEW is reached:

1. ``x`` is a node of NEW: active → done; deprecated or revoked with a replacement → go to the
   replacement (``replaced``); without one, but listed as an ``alt_id`` of another concept
   (an alias the compiled ontology shadowed by the node, :func:`shadowed_aliases`) → go to
   that concept (``merged``); otherwise → *retired* (the id stays, the record is flagged).
2. ``x`` is an alternative id of NEW (``alt_id``) → go to its concept (``merged``).
3. ``x`` is not in NEW, but OLD names a replacement (withdrawn in OLD) → go to it
   (``replaced``); an alternative id of OLD → go to its OLD concept (``merged``).
4. Otherwise ``x`` was *removed* with no replacement (the id stays, the record is flagged).

Chains are followed transitively; a chain that comes back to an id already visited is a
*cycle*, and an id for which the sources name several different replacements (ATT&CK objects
revoked by several objects: the loader's ``several_revoked_by`` warning) is a *fork*: both
are reported and flag the record, the id is left as it was. An id neither release knows is
*unknown* (flagged where the field must hold an ontology id) — unless it is a CURIE / full-IRI
spelling of an id of either release (the shared lookup of
:class:`~kg_rageval.ontology.resolver.IdResolver`): then it is written as that id
(``respelled``, or the outcome of that id). The outcome of an id is
``same`` (nothing to do), ``replaced`` (a chain of replacements), ``merged`` (the chain took an
alternative id), ``retired``, ``removed``, ``cycle``, ``fork`` or ``unknown``.

**Fields re-based** (``docs/drift.md``): gold — ``labels.gold``, ``mentions.gold[].id`` and
``.nearest``, ``gold_node``, ``retrieval.gold_node``, ``retrieval.gold_filters[].value``,
``reference.concepts``, ``reference.unseen_concepts``, string values inside
``reference.output``, ``relations.node``, ids inside ``relations.gold`` and
``relations.gold_answers``; predicted — ``labels.pred``, ``mentions.pred[].id``,
``retrieval.filters[].value``, ``answer.concepts``, string values inside ``answer.output``, ids
inside ``relations.answer``, ``relations.answers`` and ``relations.claims``.
In the filter values, outputs and relation triples / answer sets only strings that one of the releases knows as an id are ids
(free text is left alone). A list of labels or concepts in which two ids become one keeps it
once (``collapsed``). Every other field, known or not, is written back unchanged.

**Flags**: a record with a change gets ``"rebase": {"status": "rebased"|"flagged", "changes":
[{"field", "from", "to", "kind"}], "flags": [{"field", "id", "kind", "side"[, "to"]}]}`` (``to``
when a chain ended on a retired id other than the one read: the field now holds that id) (a record
that already had a ``rebase`` field keeps it under ``rebase.previous``); unchanged records are
written as they were read. A record is never dropped: an id that could not be mapped stays,
and the record is flagged. The report (:class:`RebaseReport`) lists every gold id that moved in
the hierarchy, was replaced, merged, retired or removed, with the records it touches.
"""

from __future__ import annotations

import json
import os
import re
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import compress, repeat
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.base.safe_io import _DIGIT_RUN, _DIGIT_TABLE, _orjson
from kg_rageval.drift.diff import OntologyDiff, diff_ontologies
from kg_rageval.ontology.model import ACTIVE, Ontology
from kg_rageval.records._io import collector_paused

OUTCOMES = ("same", "respelled", "replaced", "merged", "retired", "removed", "cycle", "fork", "unknown")
FLAGGING = frozenset({"retired", "removed", "cycle", "fork", "unknown"})

_SEVERAL = re.compile(r"^'(?P<id>[^']+)' is (?:revoked|replaced) by (?P<targets>.+?)(?:; using |: ambiguous)")
_SHADOWED = re.compile(r"^'(?P<alias>[^']+)' \(alias of '(?P<target>[^']+)'.*?\) is also a node id")


@dataclass(frozen=True)
class Resolution:
    """Where one id goes: ``to`` (the id to write), ``outcome`` (see :data:`OUTCOMES`) and the
    chain walked, ``path`` (``[x, ..., to]``)."""

    to: str
    outcome: str
    path: tuple[str, ...]

    @property
    def flagged(self) -> bool:
        return self.outcome in FLAGGING


def forks_of(o: Ontology) -> dict[str, tuple[str, ...]]:
    """Ids for which the source named several replacements (the loaders record them as
    warnings: ``'T1' is revoked by T2, T3; using T2``)."""
    out: dict[str, tuple[str, ...]] = {}
    for w in o.warnings:
        m = _SEVERAL.match(w)
        if m:
            out[m.group("id")] = tuple(t.strip().strip("'") for t in m.group("targets").split(","))
    return out


def shadowed_aliases(o: Ontology) -> dict[str, str]:
    """Alternative ids that are also node ids of their own (HPO declares hundreds: an obsolete
    term listed as an ``alt_id`` of the term it was merged into). The compiled ontology keeps
    the node and drops the alias, naming each in a warning (``alias_conflicts``); re-basing
    reads them back: an obsolete node without ``replaced_by`` that is such an alias is merged
    into the alias's concept."""
    out: dict[str, str] = {}
    for w in o.warnings:
        m = _SHADOWED.match(w)
        if m:
            out[m.group("alias")] = m.group("target")
    return out


@dataclass(eq=False)
class IdMapping:
    """Id → :class:`Resolution` from OLD to NEW. Ids whose outcome is ``same`` (an active
    node of NEW) are not stored; :meth:`resolve` answers them."""

    old: Ontology
    new: Ontology
    nontrivial: dict[str, Resolution]
    diff: OntologyDiff

    def resolve(self, node_id: str) -> Resolution:
        r = self.nontrivial.get(node_id)
        if r is not None:
            return r
        if node_id in self._active_new:
            return Resolution(node_id, "same", (node_id,))
        return Resolution(node_id, "unknown", (node_id,))

    def respelled(self, node_id: str) -> Resolution:
        """An id neither release knows as written: tried as a CURIE / IRI spelling of an id of
        OLD, then of NEW (the shared lookup, :meth:`IdResolver.lookup`, aliases aside); mapped
        as that id, else ``unknown``."""
        from kg_rageval.ontology.resolver import IdResolver

        for o in (self.old, self.new):
            i = int(IdResolver(o, aliases=False).lookup([node_id])[0][0])
            if i >= 0 and o.ids[i] != node_id:
                r = self.resolve(o.ids[i])
                if r.outcome != "unknown":
                    return Resolution(
                        r.to, "respelled" if r.outcome == "same" else r.outcome, (node_id, *r.path)
                    )
        return Resolution(node_id, "unknown", (node_id,))

    def knows(self, node_id: str) -> bool:
        """Whether either release knows ``node_id`` (a node or an alternative id)."""
        return node_id in self.nontrivial or node_id in self._active_new

    def __post_init__(self) -> None:
        st = self.new.status
        ids = self.new.ids
        self._active_new = frozenset(ids[i] for i in np.flatnonzero(st == ACTIVE).tolist()) - (
            {ids[0]} if self.new.virtual_root else set()
        )
        self._moved = frozenset(self.new.ids[i] for i in self.diff.kinds["moved"].tolist())

    def moved(self, node_id: str) -> bool:
        """Whether ``node_id`` (a NEW id) has other direct parents than in OLD."""
        return node_id in self._moved

    def notes(self) -> list[str]:
        """Limits of what the mapping could see (the loaders keep at most 1,000 warnings: alias
        conflicts or several replacements beyond them are not named, so such ids come out
        retired, flagged, instead of merged or fork)."""
        out = []
        for o, name in ((self.old, "OLD"), (self.new, "NEW")):
            named = sum(1 for w in o.warnings if _SHADOWED.match(w))
            shadowed = int(o.diagnostics.get("alias_conflicts", 0))
            if shadowed > named:
                out.append(
                    f"{name} has {shadowed} alias conflicts but names only {named} in its warnings: "
                    f"the other obsolete ids shadowing an alias are reported retired, not merged"
                )
            forks = sum(1 for w in o.warnings if _SEVERAL.match(w))
            several = int(
                o.diagnostics.get("multiple_replacements", o.diagnostics.get("several_revoked_by", 0))
            )
            if several > forks:
                out.append(
                    f"{name} has {several} ids with several replacements but names only {forks}: "
                    f"the others are not reported as forks"
                )
        return out

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(OUTCOMES, 0)
        for r in self.nontrivial.values():
            out[r.outcome] += 1
        out["same"] = len(self._active_new)
        return out


def build_mapping(old: Ontology, new: Ontology, *, diff: OntologyDiff | None = None) -> IdMapping:
    """The id mapping from ``old`` to ``new`` (module docstring). Only ids that are not active
    nodes of both releases walk a chain; the others are matched with NumPy by the diff."""
    d = diff or diff_ontologies(old, new)
    new_idx, old_idx = new.id_index, old.id_index
    new_alias, old_alias = new.aliases, old.aliases
    new_status, new_rep = new.status, new.replaced_by
    old_rep = old.replaced_by
    forks = {**forks_of(old), **forks_of(new)}
    shadowed = shadowed_aliases(new)
    vroot = {v for o in (old, new) if o.virtual_root for v in (o.ids[0],)}

    def step(c: str) -> tuple[str | None, str | None, str]:
        """(next id, step kind, terminal outcome when next is None)."""
        if c in forks and len(set(forks[c])) > 1:
            return None, None, "fork"
        i = new_idx.get(c)
        if i is not None:
            if int(new_status[i]) == ACTIVE:
                return None, None, "done"
            r = int(new_rep[i])
            if r >= 0:
                return new.ids[r], "replaced", ""
            t_id = shadowed.get(c)
            if t_id is not None and t_id in new_idx:
                return t_id, "merged", ""
            return None, None, "retired"
        t = new_alias.get(c)
        if t is not None:
            return new.ids[t], "merged", ""
        j = old_idx.get(c)
        if j is not None:
            r = int(old_rep[j])
            return (old.ids[r], "replaced", "") if r >= 0 else (None, None, "removed")
        t = old_alias.get(c)
        if t is not None:
            return old.ids[t], "merged", ""
        return None, None, "removed"

    nontrivial: dict[str, Resolution] = {}
    # candidates: every id OLD or NEW knows that is not an active node of NEW
    active_new = new.status == ACTIVE
    cand: list[str] = [new.ids[i] for i in np.flatnonzero(~active_new).tolist()]
    cand += [old.ids[j] for j in np.flatnonzero(d.old_to_new < 0).tolist()]
    cand += list(new.alias_ids) + list(old.alias_ids)
    for x in dict.fromkeys(cand):
        if x in vroot:
            continue
        path = [x]
        seen = {x}
        merged = False
        outcome = ""
        c = x
        while True:
            nxt, kind, terminal = step(c)
            if nxt is None:
                outcome = terminal
                break
            merged |= kind == "merged"
            if nxt in seen:
                outcome = "cycle"
                path.append(nxt)
                break
            seen.add(nxt)
            path.append(nxt)
            c = nxt
        if outcome == "done":
            if len(path) == 1:
                continue  # an active node of NEW (reached only via the aliases list)
            res = Resolution(path[-1], "merged" if merged else "replaced", tuple(path))
        elif outcome in ("cycle", "fork"):
            res = Resolution(x, outcome, tuple(path))
        else:  # retired / removed: the last id of the chain that NEW still has, else x
            last = next((p for p in reversed(path) if p in new_idx), x)
            res = Resolution(last, outcome, tuple(path))
        nontrivial[x] = res
    return IdMapping(old=old, new=new, nontrivial=nontrivial, diff=d)


# ---------------------------------------------------------------------- records
@dataclass
class _Touch:
    field: str
    old: str
    res: Resolution
    side: str


def _path(fld: Any) -> str:
    return fld if fld.__class__ is str else fld[0].format(*fld[1:])


class _Rebaser:
    """Re-bases records in place; collects the changes and flags of the current record in
    ``touches`` (reset by the caller). The fast path — an id that is an active node of NEW
    and did not move — allocates nothing."""

    def __init__(self, mapping: IdMapping):
        self.m = mapping
        self.touches: list[_Touch] = []
        self._nt = mapping.nontrivial
        self._active = mapping._active_new
        self._moved = mapping._moved

    def one(self, value: Any, fld: Any, side: str, *, typed: bool = True) -> Any:
        """``fld``: the field path, or ``(format, *args)`` formatted only when the id changes."""
        if value.__class__ is not str or not value:
            return value
        r = self._nt.get(value)
        if r is None:
            if value in self._active:
                if side == "gold" and value in self._moved:
                    self.touches.append(_Touch(_path(fld), value, Resolution(value, "same", (value,)), side))
                return value
            if not typed:
                return value
            r = self.m.respelled(value)
        self.touches.append(_Touch(_path(fld), value, r, side))
        return r.to

    def many(self, value: Any, fld: str, side: str) -> Any:
        if value.__class__ is str:
            return self.one(value, fld, side)
        if not isinstance(value, list):
            return value
        one = self.one
        if len(value) == 1:
            return [one(value[0], ("{}[0]", fld), side)]
        out: list[Any] = []
        seen: set[str] = set()
        for k, v in enumerate(value):
            nv = one(v, ("{}[{}]", fld, k), side)
            if isinstance(nv, str):
                if nv in seen:
                    self.touches.append(_Touch(f"{fld}[{k}]", v, Resolution(nv, "collapsed", (v, nv)), side))
                    continue
                seen.add(nv)
            out.append(nv)
        return out

    def deep(self, value: Any, fld: str, side: str) -> Any:
        """String leaves of a JSON value that a release knows as ids (free text left alone)."""
        if isinstance(value, str):
            return self.one(value, fld, side, typed=False) if self.m.knows(value) else value
        if isinstance(value, list):
            return [self.deep(v, f"{fld}[{k}]", side) for k, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: self.deep(v, f"{fld}.{k}", side) for k, v in value.items()}
        return value

    def record(self, r: dict[str, Any]) -> None:
        labels = r.get("labels")
        if isinstance(labels, dict):
            for side in ("gold", "pred"):
                if side in labels:
                    labels[side] = self.many(labels[side], f"labels.{side}", side)
        mentions = r.get("mentions")
        if isinstance(mentions, dict):
            for side in ("gold", "pred"):
                ms = mentions.get(side)
                if isinstance(ms, list):
                    for k, mention in enumerate(ms):
                        if isinstance(mention, dict):
                            for key in ("id", "nearest") if side == "gold" else ("id",):
                                if key in mention:
                                    mention[key] = self.one(
                                        mention[key], ("mentions.{}[{}].{}", side, k, key), side
                                    )
        if "gold_node" in r:
            r["gold_node"] = self.one(r["gold_node"], "gold_node", "gold")
        ret = r.get("retrieval")
        if isinstance(ret, dict):
            if "gold_node" in ret:
                ret["gold_node"] = self.one(ret["gold_node"], "retrieval.gold_node", "gold")
            for key, side in (("filters", "pred"), ("gold_filters", "gold")):
                fs = ret.get(key)
                if isinstance(fs, list):
                    for k, f in enumerate(fs):
                        if isinstance(f, dict) and "value" in f:
                            f["value"] = self.deep(f["value"], f"retrieval.{key}[{k}].value", side)
        rel = r.get("relations")
        if isinstance(rel, dict):  # triples and answer sets: their ends may be KG entities, not ids
            for key, side in (
                ("gold", "gold"),
                ("gold_answers", "gold"),
                ("answer", "pred"),
                ("answers", "pred"),
                ("claims", "pred"),
            ):
                if key in rel:
                    rel[key] = self.deep(rel[key], f"relations.{key}", side)
            if "node" in rel:
                rel["node"] = self.one(rel["node"], "relations.node", "gold")
        for sec, side in (("answer", "pred"), ("reference", "gold")):
            s = r.get(sec)
            if not isinstance(s, dict):
                continue
            keys = ("concepts",) if side == "pred" else ("concepts", "unseen_concepts")
            for key in keys:
                if key in s:
                    s[key] = self.many(s[key], f"{sec}.{key}", side)
            if isinstance(s.get("output"), (dict, list)):
                s["output"] = self.deep(s["output"], f"{sec}.output", side)


@dataclass
class RebaseReport:
    """What :func:`rebase_records` did. ``gold`` lists every gold id that did not simply stay
    (``outcome`` replaced / merged / retired / removed / cycle / fork / unknown, or ``moved``:
    same id, other parents), with the records it occurs in."""

    old: dict[str, Any]
    new: dict[str, Any]
    input: dict[str, Any]
    output: dict[str, Any] = field(default_factory=dict)
    n_records: int = 0
    records_rebased: int = 0
    records_flagged: int = 0
    ids: dict[str, dict[str, int]] = field(default_factory=dict)  # side -> outcome -> occurrences
    gold: dict[str, dict[str, Any]] = field(default_factory=dict)
    pred: dict[str, dict[str, Any]] = field(default_factory=dict)
    flagged_records: list[str] = field(default_factory=list)
    mapping: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        gold_by: dict[str, int] = {}
        for g in self.gold.values():
            gold_by[g["outcome"]] = gold_by.get(g["outcome"], 0) + 1
        return {
            "kind": "kg-rageval rebase report",
            "version": 1,
            "from": self.old,
            "to": self.new,
            "input": self.input,
            "output": self.output,
            "records": self.n_records,
            "records_rebased": self.records_rebased,
            "records_flagged": self.records_flagged,
            "records_unchanged": self.n_records - self.records_rebased - self.records_flagged,
            "id_occurrences": self.ids,
            "gold_ids_by_outcome": dict(sorted(gold_by.items())),
            "gold_ids": dict(sorted(self.gold.items())),
            "pred_ids": dict(sorted(self.pred.items())),
            "flagged_records": self.flagged_records,
            "mapping": self.mapping,
            "notes": self.notes,
            "seconds": round(self.seconds, 3),
        }


def _note(book: dict[str, dict[str, Any]], t: _Touch, rid: str, onto: Ontology, moved: bool) -> None:
    e = book.get(t.old)
    if e is None:
        outcome = "moved" if t.res.outcome == "same" and moved else t.res.outcome
        e = book[t.old] = {
            "outcome": outcome,
            "to": t.res.to,
            "path": list(t.res.path),
            "label": onto.labels[onto.id_index[t.old]] if t.old in onto.id_index else None,
            "occurrences": 0,
            "records": [],
        }
    e["occurrences"] += 1
    if len(e["records"]) < 1000 and (not e["records"] or e["records"][-1] != rid):
        e["records"].append(rid)


class _Applier:
    """Books the touches of one record in the report and, when an id changed or was flagged,
    writes the record's ``rebase`` field; returns whether the record was modified (a record
    whose only touches are gold ids that moved keeps its content)."""

    def __init__(self, rep: RebaseReport, occ: dict[str, dict[str, int]], mapping: IdMapping):
        self.rep, self.occ, self.m = rep, occ, mapping
        self.old_hash, self.new_hash = mapping.old.content_hash, mapping.new.content_hash

    def __call__(self, r: dict[str, Any], rid: str, touches: list[_Touch]) -> bool:
        rep, occ, mapping = self.rep, self.occ, self.m
        changes, flags = [], []
        for t in touches:
            moved = mapping.moved(t.old)
            side = occ[t.side]
            name = "moved" if t.res.outcome == "same" else t.res.outcome
            side[name] = side.get(name, 0) + 1
            _note(rep.gold if t.side == "gold" else rep.pred, t, rid, mapping.old, moved)
            if t.res.flagged:
                flag = {"field": t.field, "id": t.old, "kind": t.res.outcome, "side": t.side}
                if t.res.to != t.old:  # a chain that ended on a retired id: the field holds it
                    flag["to"] = t.res.to
                flags.append(flag)
            elif t.res.outcome != "same":
                changes.append({"field": t.field, "from": t.old, "to": t.res.to, "kind": t.res.outcome})
        if not (changes or flags):
            return False
        info: dict[str, Any] = {
            "status": "flagged" if flags else "rebased",
            "from": self.old_hash,
            "to": self.new_hash,
        }
        if changes:
            info["changes"] = changes
        if flags:
            info["flags"] = flags
        if "rebase" in r:
            info["previous"] = r["rebase"]
        r["rebase"] = info
        if flags:
            rep.records_flagged += 1
            rep.flagged_records.append(rid)
        else:
            rep.records_rebased += 1
        return True


class _Quick:
    """Whether the walk (:meth:`_Rebaser.record`) would leave a record untouched, answered
    without it for the common shapes: ``labels`` and ``mentions`` exactly (an id is untouched
    when it is not a non-empty string or is an active node of NEW that no chain starts from
    and, on the gold side, that did not move; a list of ids also needs its strings distinct),
    ``answer`` / ``reference`` concept lists without an ``output`` object, ``retrieval``
    without filters or a gold node. ``False`` (walk it) for anything else: the answer is never
    ``True`` for a record the walk would touch (``tests/drift/test_drift.py`` compares both on
    every shape)."""

    def __init__(self, mapping: IdMapping):
        active = mapping._active_new - mapping.nontrivial.keys()
        self.safe = {"gold": active - mapping._moved, "pred": active}
        self.clean = _clean_function(self.safe["gold"], self.safe["pred"])


def _clean_function(sg: frozenset[str], sp: frozenset[str]) -> Callable[[dict[str, Any]], bool]:
    heavy = frozenset({"gold_node", "relations", "retrieval", "answer", "reference"})
    STR, LIST, DICT = str, list, dict

    def ids(v: Any, safe: frozenset[str]) -> bool:  # what many() leaves as it is
        c = v.__class__
        if c is LIST:
            if len(v) == 1:
                x = v[0]
                return x.__class__ is STR and x in safe
            for x in v:
                if x.__class__ is not STR or x not in safe:
                    return False
            return len(set(v)) == len(v)
        if c is STR:
            return not v or v in safe
        return True

    def sections(r: dict[str, Any]) -> bool:
        if "gold_node" in r or "relations" in r:
            return False
        ret = r.get("retrieval")
        if ret.__class__ is DICT and ("gold_node" in ret or "filters" in ret or "gold_filters" in ret):
            return False
        for sec, safe in (("answer", sp), ("reference", sg)):
            s = r.get(sec)
            if s.__class__ is not DICT:
                continue  # the walk reads only an object
            if s.get("output").__class__ in (DICT, LIST):
                return False
            if "concepts" in s and not ids(s["concepts"], safe):
                return False
            if safe is sg and "unseen_concepts" in s and not ids(s["unseen_concepts"], safe):
                return False
        return True

    def clean(r: dict[str, Any]) -> bool:
        labels = r.get("labels")
        if labels.__class__ is DICT:
            v = labels.get("gold")
            if v is not None and not ids(v, sg):
                return False
            v = labels.get("pred")
            if v is not None and not ids(v, sp):
                return False
        mentions = r.get("mentions")
        if mentions.__class__ is DICT:
            ms = mentions.get("gold")
            if ms.__class__ is LIST:
                for x in ms:
                    if x.__class__ is DICT:
                        v = x.get("id")
                        if v.__class__ is STR and v and v not in sg:
                            return False
                        v = x.get("nearest")
                        if v.__class__ is STR and v and v not in sg:
                            return False
            ms = mentions.get("pred")
            if ms.__class__ is LIST:
                for x in ms:
                    if x.__class__ is DICT:
                        v = x.get("id")
                        if v.__class__ is STR and v and v not in sp:
                            return False
        return heavy.isdisjoint(r) or sections(r)

    return clean


# ---------------------------------------------------------------------- the file path
_BLOCK = 1 << 16  # bytes read at a time: a block's records stay in the CPU caches from parse to write
_CHECK = 1024  # records per output batch (the unit of the verbatim check)


def _verbatim(raws: list[bytes], docs: list[Any]) -> bool:
    """Whether every ``raws[i]`` (a line as read, no newline) is exactly the bytes the
    re-encoding writes for ``docs[i]`` — ``json.dumps(doc, ensure_ascii=False)`` in UTF-8 —
    so that the line can be copied instead of encoded. Checked by the standard library's
    encoder itself, once for the whole batch: its encoding of the list of records is ``[`` +
    the records' encodings joined by ``", "`` + ``]``, and it equals ``[`` + the lines joined
    by ``", "`` + ``]`` only if each line is its record's encoding (each line is one complete
    JSON value, so the element boundaries of the two texts fall at the same places)."""
    if _LIST_ENCODER is None:
        return False
    try:
        text = "".join(_LIST_ENCODER(docs, 0)).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: encoded (and refused) record by record
        return False
    return (
        len(text) == 2 + sum(map(len, raws)) + 2 * (len(raws) - 1) and text == b"[" + b", ".join(raws) + b"]"
    )


_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
_LIST_ENCODER = (
    _C_ENCODER(None, None, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)
    if _C_ENCODER is not None
    else None
)
"""The encoder ``json.JSONEncoder(ensure_ascii=False, check_circular=False).encode`` builds
for each call (``iterencode``'s one-shot C encoder), built once."""


def _settle(raws: list[bytes], docs: list[Any], idx: list[int], encode: Callable[[Any], str]) -> None:
    """Replace ``raws[i]`` (``i`` in ``idx``: records written unchanged) by its record's
    encoding where the line is not that encoding already (:func:`_verbatim`, halving a batch
    that does not pass down to 32 lines, then encoding each)."""
    if not idx:
        return
    if len(idx) <= 32 or not _verbatim([raws[i] for i in idx], [docs[i] for i in idx]):
        if len(idx) <= 32:
            for i in idx:
                e = encode(docs[i]).encode("utf-8")
                raws[i] = e
            return
        mid = len(idx) // 2
        _settle(raws, docs, idx[:mid], encode)
        _settle(raws, docs, idx[mid:], encode)


def _lines(path: Path, src: str, line_limit: int) -> Iterator[tuple[list[bytes], bool, bool]]:
    """The lines of a records file in batches: ``(lines without their newline, whether the
    last one had a newline, whether the batch has a 20-digit run)`` — a plain file in blocks
    of :data:`_BLOCK` bytes, a ``.gz`` one line by line through the bounded reader (its size
    limit and read errors met where :func:`kg_rageval.records.iter_jsonl` meets them). A line
    longer than ``line_limit`` raises as the reader does, after the lines before it."""
    from kg_rageval.base import limits
    from kg_rageval.base.safe_io import open_binary, read_line

    if path.suffix == ".gz":
        with open_binary(path) as fh:
            lineno = 0
            while True:
                try:
                    raw = read_line(fh, src, lineno + 1, line_limit)
                except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile, a truncated .gz
                    raise InputError(f"cannot read the gzip file: {exc}", source=src) from None
                if not raw:
                    return
                lineno += 1
                nl = raw.endswith(b"\n")
                line = raw[:-1] if nl else raw
                yield [line], nl, _DIGIT_RUN in line.translate(_DIGIT_TABLE)
    with open_binary(path) as fh:
        carry = b""
        lineno = 0
        while True:
            block = fh.read(_BLOCK)
            if not block:
                break
            buf = carry + block if carry else block
            lines = buf.split(b"\n")
            carry = lines.pop()
            digits = _DIGIT_RUN in buf.translate(_DIGIT_TABLE)
            if len(buf) > line_limit:
                for k, line in enumerate(lines):
                    if len(line) > line_limit:
                        if k:
                            yield lines[:k], True, digits
                        _too_long(limits, line_limit, src, lineno + k + 1)
            if len(carry) > line_limit:
                if lines:
                    yield lines, True, digits
                _too_long(limits, line_limit, src, lineno + len(lines) + 1)
            lineno += len(lines)
            if lines:
                yield lines, True, digits
        if carry:
            yield [carry], False, _DIGIT_RUN in carry.translate(_DIGIT_TABLE)


def _too_long(limits: Any, limit: int, src: str, lineno: int) -> None:
    raise limits.exceeded(
        "max_line_bytes", f"a line longer than {limit} bytes", source=src, location=f"line {lineno}"
    )


def _slow_line(raw: bytes, lineno: int, src: str, depth_limit: int) -> Any:
    """A line the fast parse did not take, as :func:`kg_rageval.records.iter_jsonl` reads it
    (``raw`` with its newline): decoded (a BOM on line 1), blank → :data:`_BLANK`, else
    :func:`~kg_rageval.base.safe_io.loads_json` with its errors."""
    from kg_rageval.base.safe_io import loads_json

    try:
        line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")  # a leading BOM is fine
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text: {exc.reason} (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
            source=src,
            location=f"line {lineno}",
        ) from None
    if not line.strip():
        return _BLANK
    return loads_json(line.rstrip("\r\n"), source=src, location=f"line {lineno}", depth_limit=depth_limit)


_BLANK: Any = object()


def _rebase_path(data: str | Path, mapping: IdMapping, out: Any, rep: RebaseReport, digest: Any) -> None:
    """Re-base the records file ``data`` into the binary stream ``out`` (``digest``: a hash
    updated with every byte written, or None). The same records, checks, errors and output
    bytes as :func:`rebase_records` over :func:`kg_rageval.records.iter_objects` with each
    record encoded by ``json.dumps(ensure_ascii=False)``, faster:

    * lines are read in blocks (:func:`_lines`); a block is parsed by orjson line by line in
      one C-level ``map`` and its records checked as whole columns (objects, string ids,
      distinct, not seen before) when :func:`kg_rageval.base.safe_io.fast_line` would take
      every line of it (no 20-digit run, nesting within ``max_json_depth``, not line 1) and
      every check passes; any other block is read line by line exactly as
      :func:`kg_rageval.records.iter_jsonl` and ``iter_objects`` read it (their errors, in
      line order);
    * a record the walk would not touch (:class:`_Quick`) is not walked;
    * the line of a record written unchanged is copied when it is already its record's
      encoding (:func:`_verbatim`, checked per block), else encoded."""
    from kg_rageval.base import limits
    from kg_rageval.base.safe_io import _depth_over

    p = Path(data)
    src, src_o = str(p), str(data)
    if not p.exists():
        raise InputError("no such file", source=src)
    line_limit, depth_limit = limits.get("max_line_bytes"), limits.get("max_json_depth")
    occ: dict[str, dict[str, int]] = {"gold": {}, "pred": {}}
    rb = _Rebaser(mapping)
    apply = _Applier(rep, occ, mapping)
    clean = _Quick(mapping).clean
    encode = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode
    loads = _orjson.loads if _orjson is not None else None
    decode_error = _orjson.JSONDecodeError if _orjson is not None else ValueError
    seen: dict[str, int] = {}
    lineno = 0
    n_records = 0
    id_key = repeat("id")
    get = dict.get

    def fast_block(lines: list[bytes], first: int) -> tuple[list[Any], list[str]] | None:
        """(records, ids) of a block every line of which the fast reader takes and every
        record of which passes the checks, else None (nothing recorded)."""
        if loads is None or first == 1:
            return None
        if max(map(len, lines)) > depth_limit:
            deep = [
                k
                for k, (a, b) in enumerate(
                    zip(map(bytes.count, lines, repeat(b"[")), map(bytes.count, lines, repeat(b"{")))
                )
                if a + b > depth_limit
            ]
        else:
            deep = []
        try:
            docs = list(map(loads, lines))
        except decode_error:
            return None
        if any(_depth_over(docs[k], depth_limit) for k in deep):
            return None
        try:
            ids: list[Any] = list(map(get, docs, id_key))
        except TypeError:  # a line that is not an object
            return None
        if set(map(type, ids)) != _STR_ONLY:
            return None
        u = set(ids)
        if len(u) != len(ids) or "" in u or not seen.keys().isdisjoint(u):
            return None
        seen.update(zip(ids, range(first, first + len(ids))))
        return docs, ids

    def slow_block(lines: list[bytes], first: int, last_nl: bool) -> tuple[list[bytes], list[Any], list[str]]:
        """The block line by line as iter_jsonl and iter_objects read it."""
        raws, docs, ids = [], [], []
        n = len(lines)
        for k, raw in enumerate(lines):
            no = first + k
            doc = _BLANK
            if no > 1 and loads is not None and _DIGIT_RUN not in raw.translate(_DIGIT_TABLE):
                try:
                    doc = loads(raw)
                except decode_error:
                    doc = _BLANK
                else:
                    if (
                        len(raw) > depth_limit
                        and raw.count(b"[") + raw.count(b"{") > depth_limit
                        and _depth_over(doc, depth_limit)
                    ):
                        doc = _BLANK
            if doc is _BLANK:
                doc = _slow_line(raw + b"\n" if k < n - 1 or last_nl else raw, no, src, depth_limit)
                if doc is _BLANK:
                    continue
            # the checks of kg_rageval.records.iter_objects, with its messages
            loc = f"line {no}"
            if not isinstance(doc, dict):
                raise InputError(
                    f"expected a JSON object, found {type(doc).__name__}", source=src_o, location=loc
                )
            rid = doc.get("id")
            if not isinstance(rid, (str, int)) or isinstance(rid, bool) or rid == "":
                raise InputError(
                    "field 'id' is missing or not a non-empty string", source=src_o, location=loc
                )
            rid = str(rid)
            if rid in seen:
                raise InputError(
                    f"duplicate record id {rid!r} (first on line {seen[rid]})", source=src_o, location=loc
                )
            seen[rid] = no
            raws.append(raw)
            docs.append(doc)
            ids.append(rid)
        return raws, docs, ids

    with collector_paused():
        for lines, last_nl, digits in _lines(p, src, line_limit):
            first = lineno + 1
            lineno += len(lines)
            got = None if digits else fast_block(lines, first)
            if got is not None:
                raws = lines
                docs, ids = got
            else:
                raws, docs, ids = slow_block(lines, first, last_nl)
                if not raws:
                    continue
            n_records += len(raws)
            changed = set()
            for i in compress(range(len(docs)), map(_not, map(clean, docs))):
                rb.touches = []
                rb.record(docs[i])
                if rb.touches and apply(docs[i], ids[i], rb.touches):
                    changed.add(i)
            if changed:
                raws = list(raws)
                for i in changed:
                    raws[i] = encode(docs[i]).encode("utf-8")
                same = [i for i in range(len(raws)) if i not in changed]
            else:
                same = list(range(len(raws)))
            for j in range(0, len(same), _CHECK):
                _settle(raws, docs, same[j : j + _CHECK], encode)
            chunk = b"\n".join(raws) + b"\n"
            out.write(chunk)
            if digest is not None:
                digest.update(chunk)
    rep.n_records = n_records
    rep.ids = occ


_STR_ONLY = {str}


def _not(x: Any) -> bool:
    return not x


def rebase_records(
    records: Iterable[tuple[int, str, dict[str, Any]]],
    mapping: IdMapping,
    write: Callable[[dict[str, Any]], None],
    *,
    source: str = "<records>",
) -> RebaseReport:
    """Re-base ``records`` (``(line, id, record)`` as :func:`kg_rageval.records.iter_objects`
    yields them) through ``mapping`` and pass each record, re-based, to ``write`` in order."""
    t0 = time.perf_counter()
    rel = OntologyDiff.release
    rep = RebaseReport(old=rel(mapping.old), new=rel(mapping.new), input={"path": source})
    occ: dict[str, dict[str, int]] = {"gold": {}, "pred": {}}
    rb = _Rebaser(mapping)
    apply = _Applier(rep, occ, mapping)
    for _, rid, r in records:
        rb.touches = []
        rb.record(r)
        rep.n_records += 1
        if rb.touches:
            apply(r, rid, rb.touches)
        write(r)
    rep.ids = occ
    rep.mapping = dict(mapping.counts())
    rep.notes = mapping.notes()
    rep.seconds = time.perf_counter() - t0
    return rep


def rebase_file(
    old: Ontology,
    new: Ontology,
    data: str | Path,
    out: str | Path,
    *,
    report: str | Path | None = None,
    mapping: IdMapping | None = None,
) -> RebaseReport:
    """Re-base the records file ``data`` into ``out`` (JSONL, ``.gz`` by name) and write the
    report as JSON to ``report`` (default ``OUT.rebase.json``). The report records the sha256
    of both files, so an audit can check that a baseline's records are this output."""
    import gzip

    from kg_rageval.base.hashing import file_hash

    t0 = time.perf_counter()
    m = mapping or build_mapping(old, new)
    t1 = time.perf_counter()
    from kg_rageval.base.outputs import atomic_path, refuse_overwrite

    outp = Path(out)
    rpath = Path(report) if report else outp.with_name(outp.name + ".rebase.json")
    # the input is read while the output is written: the same path, a symlink or a hard link
    # to it is refused before anything is written
    refuse_overwrite({"--out": outp, "--report": rpath}, {"--data": data})
    import hashlib

    rel = OntologyDiff.release
    rep = RebaseReport(old=rel(m.old), new=rel(m.new), input={"path": str(data)})
    gz = outp.suffix == ".gz"
    digest = None if gz else hashlib.sha256()
    tmp_out = atomic_path(outp)
    try:
        with gzip.open(tmp_out, "wb") if gz else open(tmp_out, "wb") as fh:
            _rebase_path(data, m, fh, rep, digest)
        os.replace(tmp_out, outp)
    except BaseException:
        tmp_out.unlink(missing_ok=True)
        raise
    rep.mapping = dict(m.counts())
    rep.notes = m.notes()
    rep.input = {"path": str(data), "hash": file_hash(data)}
    rep.output = {
        "path": str(outp),
        "hash": file_hash(outp) if digest is None else "sha256:" + digest.hexdigest(),
    }
    rep.seconds = time.perf_counter() - t0
    rep.mapping["seconds"] = round(t1 - t0, 3)
    tmp_rep = atomic_path(rpath)
    tmp_rep.write_text(json.dumps(rep.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp_rep, rpath)
    rep.output["report"] = str(rpath)
    return rep
