"""The compiled, immutable ontology index that every metric resolves through.

Conventions (also in ``docs/ontology.md``):

* **Integer ids.** Nodes are numbered in topological order: every parent has a smaller index
  than each of its children, so the root is index 0 and an ancestor row, sorted ascending,
  ends with the node itself.
* **One root.** An ontology whose hierarchy has several roots gets one *virtual root*
  (id :data:`VIRTUAL_ROOT_ID`, label "(virtual root)") that is the parent of every real root.
  ``Ontology.virtual_root`` says whether it was added. With one real root, that root is index 0.
* **Depth.** Edges from the root: the root has depth 0. ``depth_min`` is the shortest path,
  ``depth_max`` the longest path (they differ only in polyhierarchies). Wu-Palmer adds 1 (NLTK's
  convention, root depth 1); that lives in :mod:`kg_rageval.families.hierarchy`.
* **Ancestors.** ``ancestor_indices(i)`` includes ``i`` itself (the "ancestor-augmented" set of
  hierarchical P/R/F1); :meth:`Ontology.ancestors` excludes it unless asked.
* **Status.** ``active``, ``deprecated`` or ``revoked``; a revoked or deprecated node may name a
  replacement (``replaced_by``). Deprecated nodes stay in the hierarchy; metrics decide what to
  do with them (by default they raise, see each family's ``on_status`` option).
* **Aliases.** Alternative ids (OBO ``alt_id``, oboInOwl ``hasAlternativeId``, merged
  concepts) are stored apart from the nodes (``alias_ids`` sorted, ``alias_targets`` the target
  index of each). :meth:`Ontology.index` does *not* accept them (metrics must not rewrite ids
  quietly); it raises :class:`UnknownIdError` with a hint naming the concept. Map one
  explicitly with :meth:`Ontology.canonical`; :meth:`Ontology.resolve` accepts them too.
* **Relation of two nodes** (:meth:`Ontology.relation`), seen from the gold node ``g`` to the
  predicted node ``p``: ``exact``; ``parent`` (p is a direct parent of g: over-generalisation by
  one level); ``ancestor`` (p is a proper ancestor but not a parent); ``child``; ``descendant``;
  ``sibling`` (they share a direct parent); ``cousin`` (they share a grandparent, i.e. a parent
  of a parent); ``unrelated``. The first matching rule wins in that order. The virtual root never
  makes two nodes siblings or cousins: top-level concepts of a multi-root ontology are unrelated;
  nor does the root make an obsolete term placed under it (``placed_under_root``) a sibling.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import repeat
from types import MappingProxyType

import numpy as np

from kg_rageval.base.errors import ConfigError, UnknownIdError
from kg_rageval.ontology.csr import sorted_unique
from kg_rageval.ontology.graph import EMPTY_GRAPH, KnowledgeGraph

VIRTUAL_ROOT_ID = "kgr:virtual-root"
"""Id of the virtual root added above several real roots."""

ACTIVE, DEPRECATED, REVOKED = 0, 1, 2
STATUS_NAMES = ("active", "deprecated", "revoked")

RELATIONS = (
    "exact",
    "parent",
    "ancestor",
    "child",
    "descendant",
    "sibling",
    "cousin",
    "unrelated",
)
"""Hierarchy relations between a gold and a predicted node, in the order the rules apply."""


@dataclass(frozen=True)
class Property:
    """An object property (a relation predicate) with its declared domain and range: node
    ids (classes, checked by subsumption) or kinds (node types / instance kinds, see
    :mod:`kg_rageval.ontology.graph`); several are a union. ``max_cardinality``: at most that
    many objects per subject (OWL ``FunctionalProperty`` → 1), ``None`` when not declared."""

    id: str
    label: str | None = None
    domain: tuple[str, ...] = ()
    range: tuple[str, ...] = ()
    max_cardinality: int | None = None

    def as_dict(self) -> dict:
        d: dict[str, object] = {
            "id": self.id,
            "label": self.label,
            "domain": list(self.domain),
            "range": list(self.range),
        }
        if self.max_cardinality is not None:
            d["max_cardinality"] = self.max_cardinality
        return d


@dataclass(frozen=True, eq=False)
class Ontology:
    """Compiled ontology index. Build it with :class:`~kg_rageval.ontology.OntologyBuilder` or
    a loader (:func:`~kg_rageval.ontology.load_ontology`); never mutate its arrays.

    Parameters are the compiled arrays; see the module docstring for the conventions.
    """

    ids: tuple[str, ...]
    parent_ptr: np.ndarray
    parent_idx: np.ndarray
    anc_ptr: np.ndarray
    anc_idx: np.ndarray
    depth_min: np.ndarray
    depth_max: np.ndarray
    labels: tuple[str | None, ...]
    synonyms: tuple[tuple[str, ...], ...]
    definitions: tuple[str | None, ...]
    node_types: tuple[str | None, ...]
    status: np.ndarray
    replaced_by: np.ndarray
    virtual_root: bool = False
    prefixes: dict[str, str] = field(default_factory=dict)
    properties: tuple[Property, ...] = ()
    source: str = "<memory>"
    diagnostics: dict[str, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    stored_hash: str | None = None
    alias_ids: tuple[str, ...] = ()
    alias_targets: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    version: str | None = None
    """The release the source declares (OBO ``data-version``, ``owl:versionInfo`` /
    ``owl:versionIRI``, the ATT&CK collection's ``x_mitre_version``); ``None`` when it declares
    none. Not part of :attr:`content_hash` (two files with the same content are the same
    ontology whatever they call themselves)."""
    placed_under_root: tuple[str, ...] = ()
    """Deprecated/revoked terms without parent or child that compiling placed under the root
    (they are not roots of the hierarchy; see :meth:`OntologyBuilder.build`)."""
    graph: KnowledgeGraph = EMPTY_GRAPH
    """Typed instances and relation triples (:mod:`kg_rageval.ontology.graph`); empty for a
    pure taxonomy."""

    # ------------------------------------------------------------------ basics
    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __repr__(self) -> str:
        return (
            f"<Ontology {self.source!r}: {len(self)} nodes, {self.n_edges} edges, "
            f"max depth {self.max_depth}{', virtual root' if self.virtual_root else ''}>"
        )

    @cached_property
    def _index(self) -> dict[str, int]:
        return dict(zip(self.ids, range(len(self.ids))))

    @property
    def n_nodes(self) -> int:
        """The source's nodes: ``len(self)`` without the virtual root when one was added (the
        count every report, manifest and summary shows; ``len`` is the size of the index)."""
        return len(self.ids) - (1 if self.virtual_root else 0)

    @property
    def root(self) -> int:
        """Index of the root (always 0)."""
        return 0

    @property
    def root_id(self) -> str:
        return self.ids[0]

    @property
    def n_edges(self) -> int:
        """Number of parent links (edges to the virtual root included when it exists)."""
        return int(self.parent_ptr[-1])

    @property
    def max_depth(self) -> int:
        return int(self.depth_max.max()) if len(self) else 0

    @cached_property
    def child_ptr_idx(self) -> tuple[np.ndarray, np.ndarray]:
        """Children as CSR ``(ptr, idx)``, derived from the parent CSR."""
        n = len(self.ids)
        counts = np.diff(self.parent_ptr)
        child_of_edge = np.repeat(np.arange(n, dtype=np.int32), counts)
        order = np.argsort(self.parent_idx, kind="stable")
        idx = child_of_edge[order].astype(np.int32)
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.parent_idx, minlength=n), out=ptr[1:])
        return ptr, idx

    # ------------------------------------------------------------------ id mapping
    def index(self, node_id: str) -> int:
        """Integer index of ``node_id``; raises :class:`UnknownIdError`.

        An alias (alternative id) is *not* accepted: the error's hint names its concept (map it
        with :meth:`canonical`)."""
        try:
            return self._index[node_id]
        except KeyError:
            raise UnknownIdError(node_id, hint=self._suggest(node_id)) from None

    @property
    def id_index(self) -> Mapping[str, int]:
        """Read-only mapping id → index (exact ids; for tight per-id loops; do not modify)."""
        return self._index

    def lookup(self, node_ids: Sequence[str]) -> np.ndarray:
        """Vectorised lookup: the index of every id (int64, ``-1`` where absent), trying each
        id as given, then as its expanded CURIE, then as the compacted IRI. Aliases are not
        followed (:class:`~kg_rageval.ontology.resolver.IdResolver` decides that)."""
        get = self._index.get
        if type(node_ids) is list and set(map(type, node_ids)) <= {str}:  # the common case, at C speed
            idx = np.fromiter(map(get, node_ids, repeat(-1)), dtype=np.int64, count=len(node_ids))
        else:
            idx = np.fromiter(
                (get(i, -1) if isinstance(i, str) else -1 for i in node_ids),
                dtype=np.int64,
                count=len(node_ids),
            )
        miss = np.flatnonzero(idx < 0)
        if miss.size and self.prefixes:
            for j in miss.tolist():
                v = node_ids[j]
                if not isinstance(v, str):
                    continue
                i = get(self.expand_curie(v))
                if i is None:
                    i = get(self.compact_iri(v))
                if i is not None:
                    idx[j] = i
        return idx

    # ------------------------------------------------------------------ aliases
    @cached_property
    def _alias_index(self) -> dict[str, int]:
        return dict(zip(self.alias_ids, self.alias_targets.tolist()))

    @property
    def aliases(self) -> Mapping[str, int]:
        """Read-only mapping alias (alternative id) → index of its concept."""
        return MappingProxyType(self._alias_index)

    @property
    def n_aliases(self) -> int:
        return len(self.alias_ids)

    def alias_of(self, node_id: str) -> str | None:
        """The concept id that ``node_id`` is an alternative id of, or ``None`` when it is not
        an alias (a real id, or an id the ontology does not know)."""
        t = self._alias_index.get(node_id)
        return None if t is None else self.ids[t]

    def canonical(self, node_id: str) -> str:
        """``node_id`` itself when it is a node id, the concept it names when it is an alias;
        raises :class:`UnknownIdError` otherwise."""
        if node_id in self._index:
            return node_id
        t = self._alias_index.get(node_id)
        if t is not None:
            return self.ids[t]
        raise UnknownIdError(node_id, hint=self._suggest(node_id))

    def _alias_hint(self, node_id: str) -> str | None:
        t = self._alias_index.get(node_id)
        if t is None:
            return None
        lab = self.labels[t]
        return (
            f"{node_id!r} is an alternative id of {self.ids[t]}"
            + (f" ({lab})" if lab else "")
            + "; map it with Ontology.canonical() (or a metric family's on_unknown option)"
        )

    def indices(self, node_ids: Iterable[str], *, where: str | None = None) -> np.ndarray:
        """Indices of many ids (int32 array); all unknown ids are reported in one error."""
        get = self._index.get
        out = [get(i, -1) for i in node_ids]
        arr = np.asarray(out, dtype=np.int32)
        if arr.size and arr.min() < 0:
            node_ids = list(node_ids) if not isinstance(node_ids, Sequence) else node_ids
            bad = sorted({str(node_ids[int(k)]) for k in np.flatnonzero(arr < 0)})
            hint = None
            aliased = [b for b in bad if b in self._alias_index]
            if aliased:
                shown = ", ".join(f"{a!r} → {self.alias_of(a)}" for a in aliased[:5])
                more = f" (and {len(aliased) - 5} more)" if len(aliased) > 5 else ""
                hint = (
                    f"{len(aliased)} of them {'is an alternative id' if len(aliased) == 1 else 'are alternative ids'}"
                    f" ({shown}{more}); map them with Ontology.canonical()"
                )
            raise UnknownIdError(bad, where=where, hint=hint)
        return arr

    def id_of(self, index: int) -> str:
        return self.ids[index]

    def suggest(self, node_id: str) -> str | None:
        """A "did you mean" hint for an id the ontology lacks (its concept when it is an
        alternative id, ids with that label, else the closest ids by spelling), or ``None``."""
        hint = self._suggest(node_id)
        if hint:
            return hint
        import difflib

        close = difflib.get_close_matches(node_id, self.ids, n=3, cutoff=0.75)
        return f"did you mean {', '.join(repr(c) for c in close)}?" if close else None

    def _suggest(self, node_id: str) -> str | None:
        alias = self._alias_hint(node_id)
        if alias:
            return alias
        found = self.find_by_label(node_id)
        if found:
            return f"did you mean {', '.join(found[:3])} (by label)?"
        return None

    def expand_curie(self, curie: str) -> str:
        """Expand ``prefix:local`` with the kept prefix map (unchanged when no prefix matches)."""
        prefix, sep, local = curie.partition(":")
        if sep and prefix in self.prefixes:
            return self.prefixes[prefix] + local
        return curie

    # ------------------------------------------------------------------ labels
    def label(self, node_id: str) -> str | None:
        return self.labels[self.index(node_id)]

    @cached_property
    def _label_index(self) -> dict[str, tuple[int, ...]]:
        index: dict[str, list[int]] = {}
        for i, (lab, syns) in enumerate(zip(self.labels, self.synonyms)):
            for name in ((lab,) if lab else ()) + syns:
                index.setdefault(name.casefold(), []).append(i)
        return {k: tuple(dict.fromkeys(v)) for k, v in index.items()}

    def find_by_label(self, text: str) -> list[str]:
        """Ids whose label or synonym equals ``text`` (case-insensitive), in index order."""
        return [self.ids[i] for i in self._label_index.get(text.casefold(), ())]

    def compact_iri(self, iri: str) -> str:
        """Compact a full IRI with the kept prefix map (the longest matching namespace wins;
        unchanged when none matches): ``http://purl.obolibrary.org/obo/DOID_162`` → ``DOID:162``
        when the map has ``DOID: http://purl.obolibrary.org/obo/DOID_``."""
        best = ""
        best_prefix = None
        for prefix, ns in self.prefixes.items():
            if ns and iri.startswith(ns) and len(ns) > len(best):
                best, best_prefix = ns, prefix
        if best_prefix is None:
            return iri
        return f"{best_prefix}:{iri[len(best) :]}"

    def resolve(self, id_or_label: str) -> str:
        """An id given as itself, as a CURIE of a full-IRI id, as a full IRI of a CURIE id, as
        an alias (alternative id, in any of those spellings; the concept's id is returned), or
        as an unambiguous label (case-insensitive, labels and synonyms)."""
        if id_or_label in self._index:
            return id_or_label
        candidates = (id_or_label, self.expand_curie(id_or_label), self.compact_iri(id_or_label))
        for candidate in candidates[1:]:
            if candidate in self._index:
                return candidate
        for candidate in candidates:
            t = self._alias_index.get(candidate)
            if t is not None:
                return self.ids[t]
        found = self.find_by_label(id_or_label)
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise UnknownIdError(id_or_label, hint=f"the label is ambiguous: {', '.join(found[:5])}")
        raise UnknownIdError(id_or_label)

    # ------------------------------------------------------------------ status
    def status_of(self, node_id: str) -> str:
        return STATUS_NAMES[int(self.status[self.index(node_id)])]

    def replacement(self, node_id: str) -> str | None:
        r = int(self.replaced_by[self.index(node_id)])
        return self.ids[r] if r >= 0 else None

    def is_active(self, node_id: str) -> bool:
        return int(self.status[self.index(node_id)]) == ACTIVE

    # ------------------------------------------------------------------ structure
    def parent_indices(self, i: int) -> np.ndarray:
        return self.parent_idx[self.parent_ptr[i] : self.parent_ptr[i + 1]]

    def child_indices(self, i: int) -> np.ndarray:
        ptr, idx = self.child_ptr_idx
        return idx[ptr[i] : ptr[i + 1]]

    def ancestor_indices(self, i: int) -> np.ndarray:
        """Sorted ancestor-or-self indices of node ``i`` (the row ends with ``i``)."""
        return self.anc_idx[self.anc_ptr[i] : self.anc_ptr[i + 1]]

    def ancestor_rows(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised ancestor-or-self sets of many nodes: ``(lens, ancestors)`` where
        ``ancestors`` concatenates each node's sorted ancestor-or-self row (the node last) and
        ``lens[i]`` is the length of node ``indices[i]``'s row."""
        from kg_rageval.ontology.csr import csr_gather

        rows = np.asarray(indices, dtype=np.int64)
        return self.anc_ptr[rows + 1] - self.anc_ptr[rows], csr_gather(self.anc_ptr, self.anc_idx, rows)

    def parents(self, node_id: str) -> list[str]:
        return [self.ids[p] for p in self.parent_indices(self.index(node_id))]

    def children(self, node_id: str) -> list[str]:
        return [self.ids[c] for c in self.child_indices(self.index(node_id))]

    def ancestors(self, node_id: str, *, include_self: bool = False) -> list[str]:
        """Ancestors in topological order (root first)."""
        row = self.ancestor_indices(self.index(node_id))
        if not include_self:
            row = row[:-1]
        return [self.ids[a] for a in row]

    def descendant_indices(self, i: int, *, include_self: bool = True) -> np.ndarray:
        """Sorted indices of the subtree under node ``i``."""
        ptr, idx = self.child_ptr_idx
        seen = np.zeros(len(self.ids), dtype=bool)
        seen[i] = True
        frontier = np.array([i], dtype=np.int64)
        while frontier.size:
            starts, ends = ptr[frontier], ptr[frontier + 1]
            lens = ends - starts
            if not lens.sum():
                break
            gather = np.repeat(starts - np.concatenate(([0], np.cumsum(lens)[:-1])), lens)
            kids = idx[gather + np.arange(lens.sum())]
            kids = sorted_unique(kids[~seen[kids]])
            seen[kids] = True
            frontier = kids.astype(np.int64)
        if not include_self:
            seen[i] = False
        return np.flatnonzero(seen).astype(np.int32)

    def descendants(self, node_id: str, *, include_self: bool = False) -> list[str]:
        rows = self.descendant_indices(self.index(node_id), include_self=include_self)
        return [self.ids[d] for d in rows]

    def subtree(self, node_id: str) -> list[str]:
        """The node and all its descendants."""
        return self.descendants(node_id, include_self=True)

    def is_ancestor_index(self, a: int, d: int) -> bool:
        row = self.ancestor_indices(d)
        pos = int(np.searchsorted(row, a))
        return a != d and pos < row.size and int(row[pos]) == a

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """True when ``ancestor`` is a proper ancestor of ``descendant``."""
        return self.is_ancestor_index(self.index(ancestor), self.index(descendant))

    @cached_property
    def _anc_keys(self) -> np.ndarray:
        n = max(len(self.ids), 1)
        owner = np.repeat(np.arange(len(self.ids), dtype=np.int64), np.diff(self.anc_ptr))
        return owner * n + self.anc_idx

    def is_ancestor_or_self_many(self, anc: np.ndarray, desc: np.ndarray) -> np.ndarray:
        """Vectorised: ``anc[k]`` is an ancestor-or-self of ``desc[k]`` (node indices), by
        binary search in the flattened, sorted closure."""
        a = np.asarray(anc, dtype=np.int64)
        d = np.asarray(desc, dtype=np.int64)
        if not a.size:
            return np.zeros(0, dtype=bool)
        keys = self._anc_keys
        key = d * max(len(self.ids), 1) + a
        pos = np.minimum(np.searchsorted(keys, key), keys.size - 1)
        return keys[pos] == key

    # ------------------------------------------------------------------ entities (graph)
    def entity_index(self, entity_id: str) -> int:
        """Entity index of a node id (its node index) or an instance id (``len(self) + k``);
        raises :class:`UnknownIdError` (aliases are not accepted, as for :meth:`index`)."""
        i = self._index.get(entity_id)
        if i is not None:
            return i
        k = self.graph._instance_index.get(entity_id)
        if k is not None:
            return k
        raise UnknownIdError(entity_id, hint=self._suggest(entity_id))

    def entity_indices(self, entity_ids: Iterable[str]) -> np.ndarray:
        """Entity indices (int64), -1 for ids that are neither a node nor an instance."""
        ids = entity_ids if isinstance(entity_ids, list) else list(entity_ids)
        get = self._entity_index.get
        try:
            return np.fromiter(map(get, ids, repeat(-1)), dtype=np.int64, count=len(ids))
        except TypeError:  # an unhashable id
            return np.asarray([get(e, -1) if isinstance(e, str) else -1 for e in ids], dtype=np.int64)

    @cached_property
    def _entity_index(self) -> dict[str, int]:
        if not self.graph:
            return self._index
        return {**self.graph._instance_index, **self._index}

    @property
    def entity_id_index(self) -> Mapping[str, int]:
        """Read-only mapping entity id → entity index: node ids (their node index) and instance
        ids (``len(self) + k``); exact ids, aliases not followed (for tight per-id loops; do not
        modify)."""
        return self._entity_index

    def entity_id(self, e: int) -> str:
        n = len(self.ids)
        return self.ids[e] if e < n else self.graph.instance_ids[e - n]

    def entity_label(self, e: int) -> str | None:
        n = len(self.ids)
        return self.labels[e] if e < n else self.graph.instance_labels[e - n]

    def is_entity(self, entity_id: str) -> bool:
        return entity_id in self._entity_index

    @cached_property
    def _entity_kinds(self) -> tuple[tuple[str, ...], np.ndarray]:
        kinds = list(self.node_types) + list(self.graph.instance_kinds)
        names = tuple(sorted({k for k in kinds if k}))
        code = {k: c for c, k in enumerate(names)}
        return names, np.asarray([code.get(k, -1) if k else -1 for k in kinds], dtype=np.int32)

    @property
    def entity_kind_names(self) -> tuple[str, ...]:
        """Sorted kinds of the entities (node types and instance kinds)."""
        return self._entity_kinds[0]

    @property
    def entity_kind_codes(self) -> np.ndarray:
        """Kind code (index into :attr:`entity_kind_names`, -1 none) of every entity."""
        return self._entity_kinds[1]

    def entity_kind(self, e: int) -> str | None:
        c = int(self.entity_kind_codes[e])
        return self.entity_kind_names[c] if c >= 0 else None

    @cached_property
    def entity_status(self) -> np.ndarray:
        """Status code of every entity (nodes, then instances)."""
        return np.concatenate([self.status.astype(np.int8), self.graph.instance_status.astype(np.int8)])

    def property(self, predicate: str) -> Property | None:
        """The declared :class:`Property` ``predicate``, or ``None``."""
        return self._properties.get(predicate)

    @cached_property
    def _properties(self) -> dict[str, Property]:
        return {q.id: q for q in self.properties}

    def triples(
        self, subject: str | None = None, predicate: str | None = None, object: str | None = None
    ) -> list[tuple[str, str, str]]:
        """Relation triples as id tuples, filtered by any of subject/predicate/object ids
        (unknown ids match nothing)."""
        g = self.graph
        if predicate is not None and g.predicate_index(predicate) < 0:
            return []
        try:
            si = None if subject is None else self.entity_index(subject)
            oi = None if object is None else self.entity_index(object)
        except UnknownIdError:
            return []
        pi = None if predicate is None else g.predicate_index(predicate)
        pos = g.positions(subject=si, predicate=pi, object=oi)
        return [
            (self.entity_id(a), g.predicates[b], self.entity_id(c))
            for a, b, c in zip(g.s[pos].tolist(), g.p[pos].tolist(), g.o[pos].tolist())
        ]

    def has_triple(self, subject: str, predicate: str, object: str) -> bool:
        s, o = self.entity_indices([subject, object]).tolist()
        return bool(
            self.graph.contains(
                np.array([s]), np.array([self.graph.predicate_index(predicate)]), np.array([o])
            )[0]
        )

    def depth(self, node_id: str, *, kind: str = "min") -> int:
        """Edges from the root (root depth 0); ``kind`` is ``"min"`` or ``"max"``."""
        i = self.index(node_id)
        if kind == "min":
            return int(self.depth_min[i])
        if kind == "max":
            return int(self.depth_max[i])
        raise ConfigError(f"kind must be 'min' or 'max', not {kind!r}")

    def common_ancestor_indices(self, a: int, b: int) -> np.ndarray:
        return np.intersect1d(self.ancestor_indices(a), self.ancestor_indices(b), assume_unique=True)

    def lca_index(self, a: int, b: int) -> int:
        """Deepest common ancestor-or-self: greatest ``depth_max``, ties to the smallest id
        string (a deterministic choice independent of loading order)."""
        common = self.common_ancestor_indices(a, b)
        depths = self.depth_max[common]
        best = common[depths == depths.max()]
        if best.size == 1:
            return int(best[0])
        return min((int(c) for c in best), key=lambda c: self.ids[c])

    def lca(self, a: str, b: str) -> str:
        """Deepest common ancestor (see :meth:`lca_index`); a node is its own ancestor here."""
        return self.ids[self.lca_index(self.index(a), self.index(b))]

    def _grandparents(self, i: int) -> set[int]:
        out: set[int] = set()
        for p in self.parent_indices(i):
            out.update(int(g) for g in self.parent_indices(int(p)))
        return out

    def relation_index(self, gold: int, pred: int) -> str:
        """Relation of ``pred`` to ``gold`` (see the module docstring)."""
        if gold == pred:
            return "exact"
        gp = self.parent_indices(gold)
        if pred in gp:
            return "parent"
        if self.is_ancestor_index(pred, gold):
            return "ancestor"
        pp = self.parent_indices(pred)
        if gold in pp:
            return "child"
        if self.is_ancestor_index(gold, pred):
            return "descendant"
        real = {int(x) for x in gp} & {int(x) for x in pp}
        if self.virtual_root or self._placed_index & {gold, pred}:
            real.discard(0)  # the (virtual) root that holds a placed obsolete term is no evidence
        if real:
            return "sibling"
        shared = self._grandparents(gold) & self._grandparents(pred)
        if self.virtual_root:
            shared.discard(0)
        if shared:
            return "cousin"
        return "unrelated"

    def relation(self, gold: str, pred: str) -> str:
        return self.relation_index(self.index(gold), self.index(pred))

    # ------------------------------------------------------------------ views
    @cached_property
    def multi_parent_count(self) -> int:
        return int((np.diff(self.parent_ptr) > 1).sum())

    @cached_property
    def _placed_index(self) -> set[int]:
        return {self._index[i] for i in self.placed_under_root}

    @cached_property
    def real_roots(self) -> list[str]:
        """The roots of the source hierarchy (children of the virtual root, or the root);
        obsolete terms placed under the root (:attr:`placed_under_root`) are not roots."""
        if self.virtual_root:
            placed = set(self.placed_under_root)
            return [c for c in self.children(self.ids[0]) if c not in placed]
        return [self.ids[0]]

    def to_networkx(self):
        """A ``networkx.DiGraph`` with edges child → parent (for reference checks)."""
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from(self.ids)
        counts = np.diff(self.parent_ptr)
        child = np.repeat(np.arange(len(self.ids)), counts)
        g.add_edges_from((self.ids[c], self.ids[p]) for c, p in zip(child, self.parent_idx))
        return g

    def edges(self) -> Iterator[tuple[str, str]]:
        """(child, parent) id pairs."""
        counts = np.diff(self.parent_ptr)
        child = np.repeat(np.arange(len(self.ids)), counts)
        for c, p in zip(child.tolist(), self.parent_idx.tolist()):
            yield self.ids[c], self.ids[p]

    @cached_property
    def content_hash(self) -> str:
        """sha256 of the ontology's content, independent of loading order: the sorted nodes
        (id, label, status, replacement), the sorted (child, parent) edges and, only when there
        are any (so hashes of ontologies without aliases, instances or triples are unchanged),
        the sorted (alias, target) pairs, the sorted instances (id, label, kind, status,
        classes) and the sorted (subject, predicate, object) triples."""
        if self.stored_hash:
            return self.stored_hash
        ids, labels = self.ids, self.labels
        n = len(ids)
        status = self.status.tolist()
        rep = self.replaced_by.tolist()
        order = sorted(range(n), key=ids.__getitem__)
        parts = [
            f"N\x1f{ids[i]}\x1f{labels[i] or ''}\x1f{status[i]}\x1f{ids[rep[i]] if rep[i] >= 0 else ''}\n"
            for i in order
        ]
        # edges sorted by (child id, parent id) as strings: the rank of each id in string
        # order sorts the same way, as integers
        rank = np.empty(n, dtype=np.int64)
        rank[np.asarray(order, dtype=np.int64)] = np.arange(n)
        child = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.parent_ptr))
        parent = self.parent_idx.astype(np.int64)
        srt = np.argsort(rank[child] * max(n, 1) + rank[parent], kind="stable")
        parts.extend(
            f"E\x1f{ids[c]}\x1f{ids[p]}\n" for c, p in zip(child[srt].tolist(), parent[srt].tolist())
        )
        if self.alias_ids:
            targets = self.alias_targets.tolist()
            parts.extend(f"A\x1f{a}\x1f{ids[t]}\n" for a, t in sorted(zip(self.alias_ids, targets)))
        g = self.graph
        if g:
            gi = g.instance_ids
            st = g.instance_status.tolist()
            parts.extend(
                sorted(
                    f"I\x1f{gi[k]}\x1f{g.instance_labels[k] or ''}\x1f{g.instance_kinds[k] or ''}\x1f{st[k]}"
                    f"\x1f{','.join(sorted(ids[c] for c in g.instance_types(k).tolist()))}\n"
                    for k in range(len(gi))
                )
            )
            eid = self.entity_id
            parts.extend(
                sorted(
                    f"T\x1f{eid(a)}\x1f{g.predicates[b]}\x1f{eid(c)}\n"
                    for a, b, c in zip(g.s.tolist(), g.p.tolist(), g.o.tolist())
                )
            )
        h = hashlib.sha256("".join(parts).encode())
        return "sha256:" + h.hexdigest()

    def summary(self) -> dict:
        """Counts used by ``kg-rageval ontology inspect``."""
        status_counts = np.bincount(self.status, minlength=3)
        return {
            "source": self.source,
            "nodes": self.n_nodes,
            # without the links compiling added: to the virtual root, obsolete terms to the root
            "edges": self.n_edges
            - (
                int(self.parent_ptr[-1] - np.count_nonzero(self.parent_idx))
                if self.virtual_root
                else len(self.placed_under_root)
            ),
            "roots": self.real_roots[:20],
            "n_roots": len(self.real_roots),
            "virtual_root": self.virtual_root,
            "max_depth": self.max_depth - (1 if self.virtual_root else 0),
            "mean_depth": round(float(self.depth_min.mean()), 3) if len(self) else 0.0,
            "multi_parent_nodes": self.multi_parent_count,
            "leaves": int((np.diff(self.child_ptr_idx[0]) == 0).sum()),
            "active": int(status_counts[ACTIVE]) - (1 if self.virtual_root else 0),
            "deprecated": int(status_counts[DEPRECATED]),
            "revoked": int(status_counts[REVOKED]),
            "with_replacement": int((self.replaced_by >= 0).sum()),
            "aliases": self.n_aliases,
            "placed_under_root": len(self.placed_under_root),
            "labelled": sum(1 for lab in self.labels if lab) - (1 if self.virtual_root else 0),
            "with_synonyms": sum(1 for s in self.synonyms if s),
            "with_definition": sum(1 for d in self.definitions if d),
            "node_types": _count(t for t in self.node_types if t),
            "properties": [p.as_dict() for p in self.properties],
            "instances": self.graph.n_instances,
            "instances_by_kind": self.graph.counts_by_kind(),
            "relations": self.graph.n_triples,
            "relations_by_predicate": self.graph.counts_by_predicate(),
            "prefixes": dict(self.prefixes),
            "ancestor_closure_entries": int(self.anc_idx.size),
            "diagnostics": dict(self.diagnostics),
            "version": self.version,
            "content_hash": self.content_hash,
        }


def _count(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))
