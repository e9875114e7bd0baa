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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.drift.diff import OntologyDiff, diff_ontologies
from kg_rageval.ontology.model import ACTIVE, Ontology

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
    from kg_rageval.drift.rebase_io import _rebase_path

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
            occ: dict[str, dict[str, int]] = {"gold": {}, "pred": {}}
            _rebase_path(data, m, fh, rep, digest, _Rebaser(m), _Applier(rep, occ, m))
            rep.ids = occ
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
