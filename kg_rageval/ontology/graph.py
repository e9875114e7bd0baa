"""The knowledge-graph part of a compiled ontology: typed instances and relation triples.

Conventions (also in ``docs/ontology.md``, "Instances and relations"):

* **Entities.** A triple's subject and object are *entities*: either a hierarchy node
  (entity index ``0 … n_nodes-1``, the node's own index) or an *instance* (entity index
  ``n_nodes + k`` for the ``k``-th instance). Instances are not hierarchy nodes: they have no
  parents, no depth and no ancestor row, so every hierarchy metric, the node count and the
  content hash of an ontology without instances are unchanged. ``Ontology.index`` accepts node
  ids only; :meth:`Ontology.entity_index` accepts both.
* **Types.** An instance has a *kind* (its source's type tag: the STIX object type
  ``intrusion-set``, ``malware``, …; a table's type column) and zero or more *classes*
  (``rdf:type`` to a hierarchy node). A hierarchy node's kind is its ``node_type`` and its only
  class is itself.
* **Satisfying a type** (domain/range checks): a declared domain or range id that is a node id
  is a class — an entity satisfies it when the class is an ancestor-or-self of the entity (a
  node) or of one of its classes (an instance), checked vectorised through the ancestor
  closure (subsumption). Any other declared id is a kind — satisfied by an entity of that
  kind. Several declared ids are a union (OWL ``unionOf``, ATT&CK's "group or software").
* **Triples** are stored once, unique, as three int32 arrays sorted by (subject, predicate,
  object); predicates are the sorted tuple :attr:`KnowledgeGraph.predicates`. Lookups by
  subject use binary search; by object and by predicate a cached stable permutation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np


def _i32(values: Iterable[int] = ()) -> np.ndarray:
    return np.asarray(list(values), dtype=np.int32)


@dataclass(frozen=True, eq=False)
class KnowledgeGraph:
    """Instances and relation triples of an :class:`~kg_rageval.ontology.Ontology` (see the
    module docstring). Arrays are never mutated; ``n_nodes`` is the entity offset of the first
    instance."""

    n_nodes: int = 0
    instance_ids: tuple[str, ...] = ()
    instance_labels: tuple[str | None, ...] = ()
    instance_kinds: tuple[str | None, ...] = ()
    instance_status: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    instance_replaced_by: np.ndarray = field(default_factory=_i32)
    """Entity index of each instance's replacement (STIX ``revoked-by``), -1 when none."""
    type_ptr: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    type_idx: np.ndarray = field(default_factory=_i32)
    predicates: tuple[str, ...] = ()
    s: np.ndarray = field(default_factory=_i32)
    p: np.ndarray = field(default_factory=_i32)
    o: np.ndarray = field(default_factory=_i32)

    # ------------------------------------------------------------------ sizes
    @property
    def n_instances(self) -> int:
        return len(self.instance_ids)

    @property
    def n_triples(self) -> int:
        return int(self.s.size)

    @property
    def n_entities(self) -> int:
        return self.n_nodes + self.n_instances

    def __bool__(self) -> bool:
        return bool(self.instance_ids) or bool(self.s.size)

    # ------------------------------------------------------------------ ids
    @cached_property
    def _instance_index(self) -> dict[str, int]:
        n = self.n_nodes
        return {iid: n + k for k, iid in enumerate(self.instance_ids)}

    @cached_property
    def _predicate_index(self) -> dict[str, int]:
        return {q: k for k, q in enumerate(self.predicates)}

    def has_predicate(self, predicate: str) -> bool:
        """Whether a triple of the graph uses ``predicate``."""
        return predicate in self._predicate_index

    def predicate_index(self, predicate: str) -> int:
        """Index of ``predicate`` in :attr:`predicates`, -1 when the graph has no such triple."""
        return self._predicate_index.get(predicate, -1)

    def instance_types(self, k: int) -> np.ndarray:
        """Class (hierarchy node) indices of the ``k``-th instance."""
        return self.type_idx[self.type_ptr[k] : self.type_ptr[k + 1]]

    # ------------------------------------------------------------------ lookups
    @cached_property
    def _by_object(self) -> np.ndarray:
        return np.argsort(self.o, kind="stable")

    @cached_property
    def _by_predicate(self) -> np.ndarray:
        return np.argsort(self.p, kind="stable")

    @cached_property
    def keys(self) -> np.ndarray:
        """Sorted int64 keys ``(s · P + p) · E + o`` of the triples (E entities, P
        predicates), for vectorised membership (:meth:`contains`)."""
        big_e, big_p = max(self.n_entities, 1), max(len(self.predicates), 1)
        return (self.s.astype(np.int64) * big_p + self.p) * big_e + self.o

    def positions(
        self, *, subject: int | None = None, predicate: int | None = None, object: int | None = None
    ) -> np.ndarray:
        """Triple positions matching the given entity / predicate indices (any may be None)."""
        if subject is not None:
            lo, hi = np.searchsorted(self.s, [subject, subject + 1])
            pos = np.arange(lo, hi)
        elif object is not None:
            lo, hi = np.searchsorted(self.o[self._by_object], [object, object + 1])
            pos = np.sort(self._by_object[lo:hi])
        elif predicate is not None:
            lo, hi = np.searchsorted(self.p[self._by_predicate], [predicate, predicate + 1])
            pos = np.sort(self._by_predicate[lo:hi])
        else:
            pos = np.arange(self.n_triples)
        if predicate is not None:
            pos = pos[self.p[pos] == predicate]
        if object is not None:
            pos = pos[self.o[pos] == object]
        return pos

    def contains(self, s: np.ndarray, p: np.ndarray, o: np.ndarray) -> np.ndarray:
        """Vectorised membership of triples given as index arrays (p = -1 or an entity -1:
        never in the graph)."""
        s, p, o = (np.asarray(x, dtype=np.int64) for x in (s, p, o))
        ok = (s >= 0) & (p >= 0) & (o >= 0)
        out = np.zeros(s.size, dtype=bool)
        if not self.s.size or not ok.any():
            return out
        big_e, big_p = max(self.n_entities, 1), max(len(self.predicates), 1)
        key = (s[ok] * big_p + p[ok]) * big_e + o[ok]
        keys = self.keys
        pos = np.minimum(np.searchsorted(keys, key), keys.size - 1)
        out[ok] = keys[pos] == key
        return out

    # ------------------------------------------------------------------ counts
    def counts_by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for kind in self.instance_kinds:
            key = kind or "(untyped)"
            out[key] = out.get(key, 0) + 1
        return dict(sorted(out.items()))

    def counts_by_predicate(self) -> dict[str, int]:
        counts = (
            np.bincount(self.p, minlength=len(self.predicates))
            if self.s.size
            else np.zeros(len(self.predicates), dtype=np.int64)
        )
        return {q: int(c) for q, c in zip(self.predicates, counts.tolist())}


EMPTY_GRAPH = KnowledgeGraph()


def satisfies(onto: Any, entities: np.ndarray, declared: Iterable[str]) -> np.ndarray:
    """For each entity index, whether it satisfies one of the ``declared`` domain/range ids
    (a node id: subsumption through the ancestor closure; any other id: a kind). Entities -1
    satisfy nothing. Vectorised; see the module docstring."""
    ents = np.asarray(entities, dtype=np.int64)
    out = np.zeros(ents.size, dtype=bool)
    declared = tuple(declared)
    if not ents.size or not declared:
        return out
    n = len(onto)
    g = onto.graph
    classes = [onto._index[d] for d in declared if d in onto._index]
    kinds = [d for d in declared if d not in onto._index]
    if kinds:
        codes = onto.entity_kind_codes
        names = onto.entity_kind_names
        wanted = [names.index(k) for k in kinds if k in names]
        valid = ents >= 0
        if wanted:
            out[valid] |= np.isin(codes[ents[valid]], wanted)
    if classes:
        is_node = (ents >= 0) & (ents < n)
        nodes = ents[is_node]
        inst = np.flatnonzero(ents >= n)
        k = ents[inst] - n
        starts, ends = g.type_ptr[k], g.type_ptr[k + 1]
        lens = ends - starts
        owner = np.repeat(np.arange(k.size), lens)
        flat = (
            g.type_idx[
                np.repeat(starts - np.concatenate(([0], np.cumsum(lens)[:-1])), lens)
                + np.arange(int(lens.sum()))
            ]
            if lens.sum()
            else np.zeros(0, dtype=np.int64)
        )
        for c in classes:
            if nodes.size:
                out[is_node] |= onto.is_ancestor_or_self_many(np.full(nodes.size, c), nodes)
            if flat.size:
                hit = onto.is_ancestor_or_self_many(np.full(flat.size, c), flat)
                got = np.bincount(owner[hit], minlength=k.size) > 0
                out[inst] |= got
    return out
