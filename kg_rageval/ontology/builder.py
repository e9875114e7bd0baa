"""Collect nodes and edges from any source and compile them into an :class:`Ontology`.

Compilation (all vectorised over integer ids):

1. Nodes and edges are checked: an empty ontology, dangling parent references and
   conflicting duplicate labels raise :class:`OntologyError` (``dangling="drop"`` and
   ``conflicts="keep-first"`` turn the latter two into counted warnings); self-loops are
   dropped and counted (``A subClassOf A`` holds trivially and says nothing about the
   hierarchy).
2. Kahn's algorithm runs level by level; a node's level is its longest path from a root
   (``depth_max``). Nodes left over form a cycle, reported with its path.
3. Several roots get one virtual root; nodes are renumbered in level order.
4. ``depth_min`` and the ancestor closure are filled level by level: a node's ancestor row is
   the sorted union of its parents' rows plus itself.

Storage is columnar (one Python list per attribute, sparse dicts for the rarely present ones),
so that collecting 350,000 concepts costs a dict lookup and a few appends per call; loaders
that already hold whole columns use :meth:`OntologyBuilder.add_nodes` and
:meth:`OntologyBuilder.add_edges`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import repeat

import numpy as np

from kg_rageval.base.errors import ConfigError, HierarchyCycleError, OntologyError
from kg_rageval.ontology.csr import csr_gather
from kg_rageval.ontology.csr import sorted_unique as _sorted_unique
from kg_rageval.ontology.graph import EMPTY_GRAPH, KnowledgeGraph
from kg_rageval.ontology.model import ACTIVE, STATUS_NAMES, VIRTUAL_ROOT_ID, Ontology, Property

_STATUS_CODES = {name: code for code, name in enumerate(STATUS_NAMES)}


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""Control characters refused in node ids (NUL would split an id in the compiled cache)."""
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Bidirectional formatting characters: flagged in ids (``bidi_ids``), since they make an id
display as another ("Trojan Source")."""


class OntologyBuilder:
    """Mutable collector that compiles into an immutable :class:`Ontology`.

    ``source`` names the input (a file path) in every error and in the compiled ontology.
    Loaders call :meth:`add_node`, :meth:`add_edge`, :meth:`add_property` and :meth:`warn`
    (or the bulk :meth:`add_nodes` / :meth:`add_edges`).
    """

    def __init__(self, source: str = "<memory>", *, prefixes: dict[str, str] | None = None):
        self.source = source
        self.prefixes: dict[str, str] = dict(prefixes or {})
        # nodes, in declaration order: position -> attributes
        self._pos: dict[str, int] = {}
        self._labels: list[str | None] = []
        self._where: list[str | None] = []
        self._status = bytearray()
        self._synonyms: dict[int, list[str]] = {}
        self._definitions: dict[int, str] = {}
        self._replaced: dict[int, str] = {}
        self._replaced_more: dict[int, list[str]] = {}  # nodes naming several replacements
        self._types: dict[int, str] = {}
        # edges, in declaration order
        self._echild: list[str] = []
        self._eparent: list[str] = []
        self._ewhere: list[str | None] = []
        # edges given as declaration positions (add_edges_bulk): chunks of (child, parent)
        self._eint: list[tuple[np.ndarray, np.ndarray]] = []
        self._properties: list[Property] = []
        # aliases (alternative ids), in declaration order
        self._alias: list[str] = []
        self._alias_target: list[str] = []
        self._alias_where: list[str | None] = []
        # instances and relation triples (kg_rageval.ontology.graph), in declaration order
        self._ipos: dict[str, int] = {}
        self._ilabels: list[str | None] = []
        self._ikinds: list[str | None] = []
        self._istatus = bytearray()
        self._itypes: dict[int, list[str]] = {}
        self._ireplaced: dict[int, str] = {}
        self._iwhere: list[str | None] = []
        self._ts: list[str] = []
        self._tp: list[str] = []
        self._to: list[str] = []
        self._twhere: list[str | None] = []
        self._conflicts: list[str] = []
        self.diagnostics: dict[str, int] = {}
        self.warnings: list[str] = []
        self.version: str | None = None  # the release the source declares (Ontology.version)

    # ------------------------------------------------------------------ collecting
    def _new_node(self, node_id: str, where: str | None) -> int:
        if not node_id or not isinstance(node_id, str):
            raise OntologyError(f"invalid node id {node_id!r}", source=self.source, location=where)
        bad = _CONTROL.search(node_id)
        if bad:
            raise OntologyError(
                f"invalid node id {node_id!r}: control character U+{ord(bad.group()):04X} "
                "(ids may not hold NUL or other control characters)",
                source=self.source,
                location=where,
            )
        if _BIDI.search(node_id):
            self.warn(
                "bidi_ids",
                f"node id {node_id!r} holds a bidirectional-override character: "
                "it may display as another id" + (f" ({where})" if where else ""),
            )
        pos = self._pos[node_id] = len(self._labels)
        self._labels.append(None)
        self._where.append(where)
        self._status.append(ACTIVE)
        return pos

    def add_node(
        self,
        node_id: str,
        *,
        label: str | None = None,
        synonyms: Iterable[str] = (),
        definition: str | None = None,
        status: str = "active",
        replaced_by: str | Iterable[str] | None = None,
        node_type: str | None = None,
        where: str | None = None,
    ) -> None:
        """Declare a node, or add information to one already declared.

        A second declaration with a *different* non-empty label is a conflict (reported by
        :meth:`build`); synonyms are merged; the first definition and node type win; the
        status only moves towards ``revoked`` (active < deprecated < revoked).
        ``replaced_by`` is one id or several: a node that names two or more *different*
        replacements (over all its declarations) is ambiguous; :meth:`build` flags it and
        leaves it without a replacement (an error with ``strict=True``), never picking one.
        """
        code = _STATUS_CODES.get(status) if status != "active" else ACTIVE
        if code is None:
            raise OntologyError(
                f"status must be one of {', '.join(STATUS_NAMES)}, not {status!r}",
                source=self.source,
                location=where,
            )
        pos = self._pos.get(node_id)
        if pos is None:
            pos = self._new_node(node_id, where)
        if label:
            current = self._labels[pos]
            if not current:
                self._labels[pos] = label
            elif current != label:
                self._conflicts.append(
                    f"{node_id!r} has label {current!r} ({self._where[pos] or 'first'}) and "
                    f"{label!r} ({where or 'later'})"
                )
        if synonyms:
            own = self._labels[pos]
            known = self._synonyms.get(pos)
            for s in synonyms:
                if s and s != own:
                    if known is None:
                        known = self._synonyms[pos] = []
                    if s not in known:
                        known.append(s)
        if definition and pos not in self._definitions:
            self._definitions[pos] = definition
        if code > self._status[pos]:
            self._status[pos] = code
        if replaced_by:
            for ref in (replaced_by,) if isinstance(replaced_by, str) else replaced_by:
                if not ref:
                    continue
                known_ref = self._replaced.get(pos)
                if known_ref is None:
                    self._replaced[pos] = ref
                elif ref != known_ref:
                    more = self._replaced_more.setdefault(pos, [])
                    if ref not in more:
                        more.append(ref)
        if node_type and pos not in self._types:
            self._types[pos] = node_type

    def add_nodes(
        self,
        node_ids: Sequence[str],
        labels: Sequence[str | None] | None = None,
        *,
        where: Sequence[str | None] | None = None,
    ) -> None:
        """Declare many nodes at once (same rules as :meth:`add_node` with ``label=`` and
        ``where=``); ``labels`` and ``where`` are parallel to ``node_ids`` when given."""
        n = len(node_ids)
        if labels is not None and len(labels) != n:
            raise ValueError(f"labels has {len(labels)} entries, node_ids {n}")
        if where is not None and len(where) != n:
            raise ValueError(f"where has {len(where)} entries, node_ids {n}")
        pos_of = self._pos
        labs = self._labels
        for k, node_id in enumerate(node_ids):
            pos = pos_of.get(node_id)
            if pos is None:
                pos = self._new_node(node_id, where[k] if where is not None else None)
            if labels is not None:
                label = labels[k]
                if label:
                    current = labs[pos]
                    if not current:
                        labs[pos] = label
                    elif current != label:
                        w = where[k] if where is not None else None
                        self._conflicts.append(
                            f"{node_id!r} has label {current!r} ({self._where[pos] or 'first'}) "
                            f"and {label!r} ({w or 'later'})"
                        )

    def add_nodes_bulk(
        self,
        node_ids: Sequence[str],
        labels: Sequence[str | None] | None = None,
        *,
        where: Sequence[str | None] | None = None,
    ) -> np.ndarray:
        """Declare many *new* nodes at once and return their declaration positions (int64).

        The ids must be distinct and not yet declared (``ValueError`` otherwise: this is the
        bulk path of loaders that have already factorised their columns; use
        :meth:`add_nodes` to merge into known nodes). The checks of :meth:`add_node` still
        apply: one scan over all ids finds control characters, bidirectional overrides and
        empty ids, and then the per-id path raises or warns exactly as :meth:`add_node` would.
        """
        n = len(node_ids)
        if labels is not None and len(labels) != n:
            raise ValueError(f"labels has {len(labels)} entries, node_ids {n}")
        if where is not None and len(where) != n:
            raise ValueError(f"where has {len(where)} entries, node_ids {n}")
        base = len(self._labels)
        if not isinstance(node_ids, (list, tuple)):
            node_ids = node_ids.tolist() if isinstance(node_ids, np.ndarray) else list(node_ids)
        try:
            joined = "".join(node_ids)  # one scan instead of one regex call per id
            clean = "" not in node_ids and not _CONTROL.search(joined) and not _BIDI.search(joined)
        except TypeError:  # a non-str id: the per-id path names it
            clean = False
        if not clean:
            for k, node_id in enumerate(node_ids):
                if node_id in self._pos:
                    raise ValueError(f"node {node_id!r} is already declared (add_nodes_bulk takes new ids)")
                self._new_node(node_id, where[k] if where is not None else None)
        else:
            fresh = dict(zip(node_ids, range(base, base + n)))
            if len(fresh) != n:
                raise ValueError("add_nodes_bulk takes distinct ids; use add_nodes to merge repeats")
            if not self._pos.keys().isdisjoint(fresh):
                known = next(i for i in fresh if i in self._pos)
                raise ValueError(f"node {known!r} is already declared (add_nodes_bulk takes new ids)")
            self._pos.update(fresh)
            self._labels.extend(repeat(None, n))
            self._where.extend(repeat(None, n) if where is None else where)
            self._status.extend(bytes([ACTIVE]) * n)
        if labels is not None:
            self._labels[base : base + n] = [lab or None for lab in labels]
        return np.arange(base, base + n, dtype=np.int64)

    def add_edges_bulk(self, children: np.ndarray, parents: np.ndarray) -> None:
        """Declare many ``child subClassOf parent`` edges by declaration position (as returned
        by :meth:`add_nodes_bulk`): parallel integer arrays. Such edges cannot dangle; self-loops
        and duplicates are dropped and counted by :meth:`build` as for :meth:`add_edge`."""
        c = np.asarray(children, dtype=np.int64)
        q = np.asarray(parents, dtype=np.int64)
        if c.shape != q.shape or c.ndim != 1:
            raise ValueError(f"children {c.shape} and parents {q.shape} must be equal-length 1-d arrays")
        n = len(self._labels)
        if c.size and (min(int(c.min()), int(q.min())) < 0 or max(int(c.max()), int(q.max())) >= n):
            raise ValueError(f"edge positions must lie in [0, {n}) (declared nodes)")
        self._eint.append((c, q))

    def has_node(self, node_id: str) -> bool:
        return node_id in self._pos

    def add_edge(self, child: str, parent: str, *, where: str | None = None) -> None:
        """Declare ``child`` as a direct subconcept of ``parent``."""
        self._echild.append(child)
        self._eparent.append(parent)
        self._ewhere.append(where)

    def add_edges(
        self,
        children: Iterable[str],
        parents: Iterable[str],
        *,
        where: Iterable[str | None] | None = None,
    ) -> None:
        """Declare many ``child subClassOf parent`` edges at once (parallel sequences)."""
        children, parents = list(children), list(parents)
        if len(children) != len(parents):
            raise ValueError(f"{len(children)} children but {len(parents)} parents")
        ws = [None] * len(children) if where is None else list(where)
        if len(ws) != len(children):
            raise ValueError(f"where has {len(ws)} entries, children {len(children)}")
        self._echild.extend(children)
        self._eparent.extend(parents)
        self._ewhere.extend(ws)

    def add_alias(self, alias: str, target: str, *, where: str | None = None) -> None:
        """Declare ``alias`` as an alternative id of the concept ``target`` (OBO ``alt_id``,
        oboInOwl ``hasAlternativeId``, a merged concept).

        Checked by :meth:`build`: an alias that is also a node id is a conflict (an error, or a
        counted warning ``alias_conflicts`` with ``conflicts="keep-first"``, the alias dropped);
        an alias whose target is not a node is dropped and counted (``unknown_alias_targets``);
        an alias naming two different targets is always an error; an alias equal to its own
        target is dropped and counted (``self_aliases_dropped``); repeats are merged.
        """
        if not alias or not isinstance(alias, str) or _CONTROL.search(alias):
            raise OntologyError(
                f"invalid alias {alias!r}"
                + (": control characters are not allowed in ids" if isinstance(alias, str) and alias else ""),
                source=self.source,
                location=where,
            )
        self._alias.append(alias)
        self._alias_target.append(target)
        self._alias_where.append(where)

    def add_aliases(
        self,
        aliases: Iterable[str],
        targets: Iterable[str],
        *,
        where: Iterable[str | None] | None = None,
    ) -> None:
        """Declare many aliases at once (parallel sequences; rules of :meth:`add_alias`)."""
        aliases, targets = list(aliases), list(targets)
        if len(aliases) != len(targets):
            raise ValueError(f"{len(aliases)} aliases but {len(targets)} targets")
        ws = [None] * len(aliases) if where is None else list(where)
        if len(ws) != len(aliases):
            raise ValueError(f"where has {len(ws)} entries, aliases {len(aliases)}")
        for a, w in zip(aliases, ws):
            if not a or not isinstance(a, str) or _CONTROL.search(a):
                raise OntologyError(f"invalid alias {a!r}", source=self.source, location=w)
        self._alias.extend(aliases)
        self._alias_target.extend(targets)
        self._alias_where.extend(ws)

    @property
    def n_aliases(self) -> int:
        """Aliases declared so far (before the checks of :meth:`build`)."""
        return len(self._alias)

    def _check_aliases(self, strict: bool) -> dict[str, int]:
        """alias -> declaration position of its target, after the rules of :meth:`add_alias`.

        Upstream data errors — an alias equal to a node id (HPO declares 387 ``alt_id``s that
        are also obsolete terms of their own), an alias naming two concepts (the DO
        rare-disease slim) — are counted warnings that name every affected id (the node
        wins; an ambiguous alias is dropped, so it resolves to neither concept); with
        ``strict=True`` they are errors."""
        targets: dict[str, str] = {}
        first_where: dict[str, str | None] = {}
        clashes: list[str] = []
        two: dict[str, list[str]] = {}
        for a, t, w in zip(self._alias, self._alias_target, self._alias_where):
            if a == t:
                self.warn("self_aliases_dropped", f"{a!r} is declared an alias of itself")
                continue
            if a in self._pos or a == VIRTUAL_ROOT_ID:
                if a in self._pos:
                    what = "a node id"
                    node_pos = self._pos[a]
                    code = self._status[node_pos]
                    if code != ACTIVE:
                        what += f" ({STATUS_NAMES[code]}"
                        rep = self._replaced.get(node_pos)
                        reps = [rep, *self._replaced_more.get(node_pos, [])] if rep else []
                        what += f", replaced by {' or '.join(repr(r) for r in reps)})" if reps else ")"
                else:
                    what = "the reserved virtual-root id"
                clashes.append(f"{a!r} (alias of {t!r}{', ' + w if w else ''}) is also {what}")
                continue
            known = targets.get(a)
            if known is None:
                targets[a] = t
                first_where[a] = w
            elif known != t:
                names = two.setdefault(a, [f"{known!r} ({first_where[a] or 'first'})"])
                names.append(f"{t!r} ({w or 'later'})")
        ambiguous = [f"{a!r} names " + " and ".join(names) for a, names in two.items()]
        for what, found, kind, advice in (
            (
                "alias(es) equal to a node id",
                clashes,
                "alias_conflicts",
                "the node wins and the alias is dropped",
            ),
            (
                "alias(es) name two different concepts",
                ambiguous,
                "ambiguous_aliases",
                "the alias is dropped (it resolves to neither)",
            ),
        ):
            if not found:
                continue
            if strict:
                shown = "; ".join(found[:5]) + (f" (and {len(found) - 5} more)" if len(found) > 5 else "")
                raise OntologyError(
                    f"{len(found)} {what}: {shown} (refused in strict mode, strict=True or CLI "
                    f"--strict-ontology; otherwise counted warnings: {advice})",
                    source=self.source,
                )
            self.warn(kind, count=len(found))
            for c in found:
                self.warn(kind, f"{c}: {advice}", count=0)
        for a in two:
            del targets[a]
        out: dict[str, int] = {}
        for a, t in targets.items():
            pos = self._pos.get(t)
            if pos is None:
                self.warn(
                    "unknown_alias_targets",
                    f"{a!r} is an alias of {t!r}, which is not in the ontology",
                )
            else:
                out[a] = pos
        return out

    # ------------------------------------------------------------------ instances, triples
    def add_instance(
        self,
        instance_id: str,
        *,
        label: str | None = None,
        kind: str | None = None,
        types: Iterable[str] = (),
        status: str = "active",
        replaced_by: str | None = None,
        where: str | None = None,
    ) -> None:
        """Declare an instance (an entity that is not a class: an ATT&CK group, an OWL named
        individual, a catalogue product) or add to one already declared: ``kind`` is its
        source's type tag (first one wins), ``types`` its classes (hierarchy node ids, merged),
        ``status`` only moves towards revoked, ``replaced_by`` an entity id (first wins).
        :meth:`build` checks that the classes are nodes (unknown ones are dropped and counted,
        ``instance_types_unknown``) and that the id is not also a node id (the node wins,
        counted ``instances_also_nodes``)."""
        if not instance_id or not isinstance(instance_id, str) or "\x00" in instance_id:
            raise OntologyError(f"invalid instance id {instance_id!r}", source=self.source, location=where)
        code = _STATUS_CODES.get(status)
        if code is None:
            raise OntologyError(
                f"status must be one of {', '.join(STATUS_NAMES)}, not {status!r}",
                source=self.source,
                location=where,
            )
        k = self._ipos.get(instance_id)
        if k is None:
            k = self._ipos[instance_id] = len(self._ilabels)
            self._ilabels.append(None)
            self._ikinds.append(None)
            self._istatus.append(ACTIVE)
            self._iwhere.append(where)
        if label and not self._ilabels[k]:
            self._ilabels[k] = label
        if kind and not self._ikinds[k]:
            self._ikinds[k] = kind
        for t in types:
            known = self._itypes.setdefault(k, [])
            if t and t not in known:
                known.append(t)
        if code > self._istatus[k]:
            self._istatus[k] = code
        if replaced_by and k not in self._ireplaced:
            self._ireplaced[k] = replaced_by

    def has_instance(self, instance_id: str) -> bool:
        return instance_id in self._ipos

    def add_triple(self, subject: str, predicate: str, object: str, *, where: str | None = None) -> None:
        """Declare the relation triple (subject, predicate, object) between entities (node or
        instance ids). Repeats are merged (``duplicate_triples``); an end that is neither a
        node nor an instance follows ``dangling`` of :meth:`build`."""
        if not predicate or not isinstance(predicate, str) or "\x00" in predicate:
            raise OntologyError(f"invalid predicate {predicate!r}", source=self.source, location=where)
        self._ts.append(subject)
        self._tp.append(predicate)
        self._to.append(object)
        self._twhere.append(where)

    @property
    def n_instances(self) -> int:
        return len(self._ilabels)

    @property
    def n_triples(self) -> int:
        """Triples declared so far (before the checks of :meth:`build`)."""
        return len(self._ts)

    def _build_graph(self, n: int, new_of_old: np.ndarray, dangling: str) -> KnowledgeGraph:
        """Compile instances and triples against the renumbered nodes (``n`` nodes)."""
        if not self._ipos and not self._ts:
            return EMPTY_GRAPH
        keep = [iid for iid in self._ipos if iid not in self._pos and iid != VIRTUAL_ROOT_ID]
        if len(keep) < len(self._ipos):
            clash = [iid for iid in self._ipos if iid in self._pos]
            self.warn("instances_also_nodes", count=len(self._ipos) - len(keep))
            for iid in clash[:20]:
                self.warn(
                    "instances_also_nodes",
                    f"{iid!r} is declared a node and an instance; the node wins",
                    count=0,
                )
        inst_index = {iid: n + j for j, iid in enumerate(keep)}
        olds = [self._ipos[i] for i in keep]
        type_ptr = np.zeros(len(keep) + 1, dtype=np.int64)
        type_idx: list[int] = []
        for j, k in enumerate(olds):
            for t in self._itypes.get(k, ()):
                pos = self._pos.get(t)
                if pos is None:
                    self.warn(
                        "instance_types_unknown", f"instance {keep[j]!r} has type {t!r}, which is not a class"
                    )
                    continue
                type_idx.append(int(new_of_old[pos]))
            type_ptr[j + 1] = len(type_idx)

        def entity(x: str) -> int:
            pos = self._pos.get(x)
            if pos is not None:
                return int(new_of_old[pos])
            return inst_index.get(x, -1)

        replaced = np.full(len(keep), -1, dtype=np.int32)
        for j, k in enumerate(olds):
            ref = self._ireplaced.get(k)
            if ref is not None:
                e = entity(ref)
                if e < 0:
                    self.warn(
                        "unknown_replacements",
                        f"{keep[j]!r} is replaced by {ref!r}, which is not in the ontology",
                    )
                replaced[j] = e
        m = len(self._ts)
        s_all = np.fromiter(map(entity, self._ts), dtype=np.int64, count=m)
        o_all = np.fromiter(map(entity, self._to), dtype=np.int64, count=m)
        bad = (s_all < 0) | (o_all < 0)
        n_bad = int(bad.sum())
        if n_bad:
            if dangling != "drop":
                listed = []
                for t in np.flatnonzero(bad)[:5].tolist():
                    unknown = self._ts[t] if s_all[t] < 0 else self._to[t]
                    w = self._twhere[t]
                    listed.append(
                        f"{unknown!r} in ({self._ts[t]}, {self._tp[t]}, {self._to[t]})"
                        + (f" ({w})" if w else "")
                    )
                raise OntologyError(
                    f"{n_bad} triple(s) name an entity that is neither a node nor an instance: "
                    + ", ".join(listed)
                    + (f" (and {n_bad - 5} more)" if n_bad > 5 else ""),
                    source=self.source,
                )
            self.warn("dangling_triples_dropped", count=n_bad)
        preds = tuple(sorted(set(self._tp)))
        pcode = {q: c for c, q in enumerate(preds)}
        p_all = np.fromiter((pcode[q] for q in self._tp), dtype=np.int64, count=m)
        ok = ~bad
        big_e, big_p = max(n + len(keep), 1), max(len(preds), 1)
        key = _sorted_unique((s_all[ok] * big_p + p_all[ok]) * big_e + o_all[ok])
        if int(ok.sum()) - key.size:
            self.warn("duplicate_triples", count=int(ok.sum()) - key.size)
        used = np.unique((key // big_e) % big_p) if key.size else np.zeros(0, dtype=np.int64)
        if used.size < len(preds):  # predicates of dropped triples only: renumber
            remap = np.full(len(preds), -1, dtype=np.int64)
            remap[used] = np.arange(used.size)
            preds = tuple(preds[int(u)] for u in used)
            s_k, p_k, o_k = key // (big_p * big_e), remap[(key // big_e) % big_p], key % big_e
        else:
            s_k, p_k, o_k = key // (big_p * big_e), (key // big_e) % big_p, key % big_e
        status = (
            np.frombuffer(bytes(self._istatus), dtype=np.int8)[np.asarray(olds, dtype=np.int64)]
            if olds
            else np.zeros(0, dtype=np.int8)
        )
        return KnowledgeGraph(
            n_nodes=n,
            instance_ids=tuple(keep),
            instance_labels=tuple(self._ilabels[k] for k in olds),
            instance_kinds=tuple(self._ikinds[k] for k in olds),
            instance_status=status.copy(),
            instance_replaced_by=replaced,
            type_ptr=type_ptr,
            type_idx=np.asarray(type_idx, dtype=np.int32),
            predicates=preds,
            s=s_k.astype(np.int32),
            p=p_k.astype(np.int32),
            o=o_k.astype(np.int32),
        )

    def add_property(self, prop: Property) -> None:
        self._properties.append(prop)

    def warn(self, kind: str, message: str | None = None, *, count: int = 1) -> None:
        """Count a diagnostic of ``kind`` (e.g. ``skipped_restrictions``), keep its message."""
        self.diagnostics[kind] = self.diagnostics.get(kind, 0) + count
        if message and len(self.warnings) < 1000:
            self.warnings.append(message)

    @property
    def n_nodes(self) -> int:
        """Nodes declared so far."""
        return len(self._labels)

    @property
    def n_edges(self) -> int:
        """Edges declared so far (before dangling/self-loop/duplicate checks)."""
        return len(self._echild) + sum(c.size for c, _ in self._eint)

    # ------------------------------------------------------------------ compiling
    def build(self, *, dangling: str = "error", conflicts: str = "error", strict: bool = False) -> Ontology:
        """Compile. ``dangling``: ``"error"`` (default) or ``"drop"`` (counted warning) for
        edges whose parent or child was never declared; ``conflicts``: ``"error"`` (default)
        or ``"keep-first"`` for duplicate ids with different labels.

        Upstream data errors that do not make the hierarchy ambiguous — aliases equal to a node
        id or naming two concepts (see :meth:`add_alias`), a node naming several replacements
        (see :meth:`add_node`) — are counted warnings naming the affected ids; ``strict=True``
        makes each of them an error.

        Obsolete terms are not roots: a deprecated or revoked node with neither parent nor
        child (HPO keeps 450 such stanzas) is placed under the root of the rest of the
        hierarchy — the one real root, or the virtual root when there are several — counted
        as ``obsolete_terms_placed_under_root`` and listed in
        :attr:`Ontology.placed_under_root`. So it never creates a virtual root, never turns
        the real root into a shared ancestor of unrelated concepts, and shifts no depth."""
        # building twice (e.g. strict, then not) must not count the same diagnostics twice
        diagnostics, warnings = dict(self.diagnostics), list(self.warnings)
        try:
            return self._build(dangling, conflicts, strict)
        finally:
            self.diagnostics, self.warnings = diagnostics, warnings

    def _build(self, dangling: str, conflicts: str, strict: bool) -> Ontology:
        if dangling not in ("error", "drop"):
            raise ConfigError("dangling must be 'error' or 'drop'")
        if conflicts not in ("error", "keep-first"):
            raise ConfigError("conflicts must be 'error' or 'keep-first'")
        if not self._pos:
            raise OntologyError("the ontology is empty: no concepts were found", source=self.source)
        if self._conflicts:
            if conflicts == "error":
                shown = "; ".join(self._conflicts[:5])
                more = f" (and {len(self._conflicts) - 5} more)" if len(self._conflicts) > 5 else ""
                raise OntologyError(
                    f"{len(self._conflicts)} duplicate id(s) with conflicting labels: {shown}{more}",
                    source=self.source,
                )
            self.warn("conflicting_labels", count=len(self._conflicts))
        alias_pos = self._check_aliases(strict) if self._alias else {}

        names = list(self._pos)  # declaration order
        get = self._pos.get
        n_e = len(self._echild)
        child_all = np.fromiter(map(get, self._echild, repeat(-1)), dtype=np.int64, count=n_e)
        parent_all = np.fromiter(map(get, self._eparent, repeat(-1)), dtype=np.int64, count=n_e)
        if self._eint:  # positional edges (add_edges_bulk) follow the named ones
            child_all = np.concatenate([child_all, *(c for c, _ in self._eint)])
            parent_all = np.concatenate([parent_all, *(q for _, q in self._eint)])
        bad = (child_all < 0) | (parent_all < 0)
        loops = (child_all == parent_all) & ~bad
        for e in np.flatnonzero(loops).tolist():
            self.warn("self_loops_dropped", f"{names[int(child_all[e])]!r} is declared its own parent")
        n_missing = int(bad.sum())
        if n_missing:
            if dangling == "error":
                listed = []
                for e in np.flatnonzero(bad)[:5].tolist():
                    unknown = self._echild[e] if child_all[e] < 0 else self._eparent[e]
                    w = self._ewhere[e]
                    listed.append(f"{unknown!r}" + (f" ({w})" if w else ""))
                more = f" (and {n_missing - 5} more)" if n_missing > 5 else ""
                raise OntologyError(
                    f"{n_missing} edge(s) reference undeclared concepts: {', '.join(listed)}{more}",
                    source=self.source,
                )
            self.warn("dangling_edges_dropped", count=n_missing)
        keep = ~(bad | loops)
        child_arr = child_all[keep]
        parent_arr = parent_all[keep]

        n = len(names)
        if child_arr.size:
            key = _sorted_unique(child_arr * n + parent_arr)
            dup = child_arr.size - key.size
            if dup:
                self.warn("duplicate_edges", count=int(dup))
            child_arr, parent_arr = key // n, key % n

        placed = self._lone_obsolete(n, child_arr, parent_arr)
        roots = np.flatnonzero(np.bincount(child_arr, minlength=n) == 0)
        if placed.size and roots.size - placed.size == 1:  # one real root: hang them under it
            real = np.setdiff1d(roots, placed)
            child_arr = np.concatenate([child_arr, placed])
            parent_arr = np.concatenate([parent_arr, np.full(placed.size, int(real[0]))])
            roots = real
        if placed.size:
            shown = ", ".join(repr(names[i]) for i in placed[:10].tolist())
            more = f" (and {placed.size - 10} more)" if placed.size > 10 else ""
            where = repr(names[int(roots[0])]) if roots.size == 1 else "the virtual root"
            self.warn(
                "obsolete_terms_placed_under_root",
                f"{placed.size} deprecated/revoked term(s) without parent or child are not roots; "
                f"placed under {where}: {shown}{more}",
                count=int(placed.size),
            )
        level = _levels(n, child_arr, parent_arr, names, self.source)
        virtual = roots.size > 1
        if virtual:
            names.append(VIRTUAL_ROOT_ID)
            child_arr = np.concatenate([child_arr, roots])
            parent_arr = np.concatenate([parent_arr, np.full(roots.size, n)])
            level = np.concatenate([level + 1, [0]])
            n += 1

        # renumber: level order, declaration order within a level (stable)
        order = np.argsort(level, kind="stable")
        new_of_old = np.empty(n, dtype=np.int64)
        new_of_old[order] = np.arange(n)
        child_new = new_of_old[child_arr]
        parent_new = new_of_old[parent_arr]
        level_new = level[order]
        sort = np.lexsort((parent_new, child_new))
        child_new, parent_new = child_new[sort], parent_new[sort]
        parent_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(child_new, minlength=n), out=parent_ptr[1:])
        parent_idx = parent_new.astype(np.int32)

        depth_min, anc_ptr, anc_idx = _closure(n, parent_ptr, parent_idx, level_new, self.source)

        # node attributes, permuted into the new numbering (sparse ones touch only their rows)
        order_list = order.tolist()
        ids = tuple([names[o] for o in order_list])
        labels_old = self._labels + ["(virtual root)"] if virtual else self._labels
        labels = tuple([labels_old[o] for o in order_list])
        status_old = np.frombuffer(bytes(self._status), dtype=np.int8)
        if virtual:
            status_old = np.concatenate([status_old, np.zeros(1, dtype=np.int8)])
        status = status_old[order]

        def scatter(sparse: dict, empty, convert=lambda v: v) -> tuple:
            out = [empty] * n
            for pos, value in sparse.items():
                out[int(new_of_old[pos])] = convert(value)
            return tuple(out)

        ambiguous = self._ambiguous_replacements(names, strict)
        replaced = np.full(n, -1, dtype=np.int32)
        for pos, ref in sorted(self._replaced.items(), key=lambda kv: int(new_of_old[kv[0]])):
            if pos in ambiguous:
                continue
            r = self._pos.get(ref)
            if r is not None:
                replaced[new_of_old[pos]] = new_of_old[r]
            elif virtual and ref == VIRTUAL_ROOT_ID:
                replaced[new_of_old[pos]] = 0
            else:
                self.warn(
                    "unknown_replacements",
                    f"{names[pos]!r} is replaced by {ref!r}, which is not in the ontology",
                )
        graph = self._build_graph(n, new_of_old, dangling)
        kinds = set(self._types.values()) | {k for k in self._ikinds if k}
        for prop in self._properties:
            for ref in prop.domain + prop.range:
                if ref not in self._pos and ref not in kinds and not (virtual and ref == VIRTUAL_ROOT_ID):
                    self.warn(
                        "property_refs_unknown",
                        f"property {prop.id!r} names {ref!r} in its domain/range, not a concept or kind",
                    )

        alias_ids = tuple(sorted(alias_pos))
        alias_targets = np.asarray([int(new_of_old[alias_pos[a]]) for a in alias_ids], dtype=np.int32)

        return Ontology(
            ids=ids,
            parent_ptr=parent_ptr,
            parent_idx=parent_idx,
            anc_ptr=anc_ptr,
            anc_idx=anc_idx,
            depth_min=depth_min,
            depth_max=level_new.astype(np.int32),
            labels=labels,
            synonyms=scatter(self._synonyms, (), tuple),
            definitions=scatter(self._definitions, None),
            node_types=scatter(self._types, None),
            status=status,
            replaced_by=replaced,
            virtual_root=virtual,
            prefixes=dict(self.prefixes),
            properties=tuple(self._properties),
            source=self.source,
            diagnostics=dict(self.diagnostics),
            warnings=tuple(self.warnings),
            alias_ids=alias_ids,
            alias_targets=alias_targets,
            version=self.version,
            placed_under_root=tuple(names[i] for i in placed.tolist()),
            graph=graph,
        )

    def _lone_obsolete(self, n: int, child: np.ndarray, parent: np.ndarray) -> np.ndarray:
        """Declaration positions of deprecated/revoked nodes with neither parent nor child,
        when some other node is a root (otherwise nothing is moved)."""
        status = np.frombuffer(bytes(self._status), dtype=np.int8)
        parentless = np.bincount(child, minlength=n) == 0
        lone = parentless & (np.bincount(parent, minlength=n) == 0) & (status != ACTIVE)
        if not lone.any() or not (parentless & ~lone).any():
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(lone)

    def _ambiguous_replacements(self, names: list[str], strict: bool) -> set[int]:
        """Nodes that name several different replacements: flagged, none of them recorded."""
        if not self._replaced_more:
            return set()
        found = [
            f"{names[pos]!r} is replaced by " + ", ".join(repr(r) for r in [self._replaced[pos], *more])
            for pos, more in self._replaced_more.items()
        ]
        if strict:
            shown = "; ".join(found[:5]) + (f" (and {len(found) - 5} more)" if len(found) > 5 else "")
            raise OntologyError(
                f"{len(found)} term(s) name several replacements: {shown} (refused in strict mode, "
                "strict=True or CLI --strict-ontology; otherwise counted warnings: no replacement "
                "is recorded)",
                source=self.source,
            )
        self.warn("multiple_replacements", count=len(found))
        for f in found:
            self.warn("multiple_replacements", f"{f}: ambiguous, no replacement recorded", count=0)
        return set(self._replaced_more)


def _levels(n: int, child: np.ndarray, parent: np.ndarray, names: list[str], source: str) -> np.ndarray:
    """Longest-path level of every node (roots 0) by level-wise Kahn; raise on a cycle."""
    indeg = np.bincount(child, minlength=n).astype(np.int64)
    order = np.argsort(parent, kind="stable")
    kids_sorted = child[order]
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent, minlength=n), out=ptr[1:])
    level = np.full(n, -1, dtype=np.int64)
    frontier = np.flatnonzero(indeg == 0)
    depth = 0
    while frontier.size:
        level[frontier] = depth
        kids = csr_gather(ptr, kids_sorted, frontier)
        if not kids.size:
            break
        np.subtract.at(indeg, kids, 1)
        cand = _sorted_unique(kids)  # sorted like np.unique, without its numpy.ma import
        frontier = cand[indeg[cand] == 0]
        depth += 1
    if (level < 0).any():
        raise HierarchyCycleError(_find_cycle(level < 0, child, parent, names), source=source)
    return level


def _find_cycle(stuck: np.ndarray, child, parent, names: list[str]) -> list[str]:
    """One cycle among the nodes Kahn could not order, as ids (first repeated last)."""
    parents: dict[int, list[int]] = {}
    for c, p in zip(child.tolist(), parent.tolist()):
        if stuck[c] and stuck[p]:
            parents.setdefault(c, []).append(p)
    start = int(np.flatnonzero(stuck)[0])
    path: list[int] = []
    pos: dict[int, int] = {}
    node = start
    while node not in pos:  # every stuck node has a stuck parent, so this walk must loop
        pos[node] = len(path)
        path.append(node)
        node = min(parents[node])
    cycle = path[pos[node] :] + [node]
    cycle.reverse()  # print as parent -> ... -> child -> parent
    return [names[i] for i in cycle]


def _closure(
    n: int, parent_ptr: np.ndarray, parent_idx: np.ndarray, level: np.ndarray, source: str | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``depth_min`` and the ancestor-or-self closure as CSR, filled level by level.

    Nodes are numbered in level order, so every level is a contiguous index range and all
    parents of a level lie in earlier levels, whose rows are already in the buffer. The
    closure's size is checked against the ``max_closure_entries`` limit before each level is
    gathered (:class:`~kg_rageval.base.errors.LimitExceeded`, never a ``MemoryError``).
    """
    from kg_rageval.base import limits

    max_entries = limits.get("max_closure_entries")
    # every node has at least its longest path's nodes as ancestors: a lower bound, known
    # before anything is allocated (a 100,000-deep chain needs 5·10^9 pairs)
    lower = int(np.asarray(level, dtype=np.int64).sum()) + n
    if lower > max_entries:
        raise limits.exceeded(
            "max_closure_entries",
            f"the ancestor closure needs at least {lower} (node, ancestor) pairs "
            f"({_human(4 * lower)}; hierarchy depth {int(np.max(level)) if n else 0})",
            source=source,
        )
    depth_min = np.zeros(n, dtype=np.int32)
    bounds = np.flatnonzero(np.diff(level)) + 1
    starts = np.concatenate(([0], bounds)).tolist()
    ends = np.concatenate((bounds, [n])).tolist()
    anc_ptr = np.zeros(n + 1, dtype=np.int64)
    buf = np.empty(max(16, 4 * n), dtype=np.int32)  # grows by doubling
    for s, e in zip(starts, ends):
        nodes = np.arange(s, e)
        if s == 0:  # roots: the row is the node itself
            row_ptr = np.arange(e - s + 1)
            out = nodes.astype(np.int32)
        else:
            pcount = parent_ptr[nodes + 1] - parent_ptr[nodes]
            pars = parent_idx[parent_ptr[s] : parent_ptr[e]].astype(np.int64)
            seg_starts = np.concatenate(([0], np.cumsum(pcount)[:-1]))
            depth_min[s:e] = np.minimum.reduceat(depth_min[pars], seg_starts) + 1
            lens = anc_ptr[pars + 1] - anc_ptr[pars]
            if int(anc_ptr[s]) + int(lens.sum()) + (e - s) > max_entries:
                raise limits.exceeded(
                    "max_closure_entries",
                    f"the ancestor closure grows past {max_entries} (node, ancestor) "
                    f"pairs at depth {int(level[s])} (a chain or lattice this deep would need "
                    f"{_human(8 * (int(anc_ptr[s]) + int(lens.sum())))} or more)",
                    source=source,
                )
            gathered = csr_gather(anc_ptr, buf, pars).astype(np.int64)
            owner = np.repeat(np.repeat(nodes - s, pcount), lens)
            if (pcount == 1).all():
                keys_owner, keys_val = owner, gathered
            else:
                key = _sorted_unique(owner * n + gathered)
                keys_owner, keys_val = key // n, key % n
            counts = np.bincount(keys_owner, minlength=e - s) + 1  # + self
            row_ptr = np.concatenate(([0], np.cumsum(counts)))
            out = np.empty(int(row_ptr[-1]), dtype=np.int32)
            self_pos = row_ptr[1:] - 1
            mask = np.ones(out.size, dtype=bool)
            mask[self_pos] = False
            out[mask] = keys_val  # parents come first, so self is the row's largest index
            out[self_pos] = nodes
        base = int(anc_ptr[s])
        need = base + out.size
        if need > buf.size:
            grown = np.empty(max(need, 2 * buf.size), dtype=np.int32)
            grown[:base] = buf[:base]
            buf = grown
        buf[base:need] = out
        anc_ptr[s + 1 : e + 1] = base + row_ptr[1:]
    return depth_min, anc_ptr, buf[: int(anc_ptr[-1])].copy()


def _human(nbytes: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{nbytes} bytes"
