"""What changed between two ontology releases (``kg-rageval ontology diff OLD NEW``).

Both releases are compiled :class:`~kg_rageval.ontology.Ontology` indexes, so the two sources
may be of different formats (an OBO file against its OWL release, a ``.kgro`` cache against a
STIX bundle). Nodes are matched by id; the virtual root (``kgr:virtual-root``) is never a
change and an edge to it is no parent (a release that gains a second root does not "move" the
first) — nor is the edge to the root of an obsolete term that compiling placed there
(:attr:`Ontology.placed_under_root`: the source states no parent). Every kind is computed with NumPy over the two indexes (sorted id arrays, edge keys):

==================== ===============================================================
kind                 a node ...
==================== ===============================================================
``added``            in NEW, not a node of OLD
``removed``          a node of OLD, neither a node nor an alternative id of NEW
``merged``           a node of OLD that NEW lists as an alternative id (``alt_id``) of
                     another concept (``into``)
``deprecated``       in both; deprecated (OBO ``is_obsolete``) in NEW, not in OLD
``revoked``          in both; revoked (STIX ``revoked``) in NEW, not in OLD — ATT&CK's
                     merges are revocations with a ``revoked-by`` replacement
``reactivated``      in both; active in NEW, deprecated or revoked in OLD
``replacement_changed`` in both, withdrawn in both, but the replacement differs
``moved``            in both; its set of direct parents differs
``relabelled``       in both; its label differs
``synonyms_changed`` in both; its set of synonyms differs (``added`` / ``removed`` listed)
``alias_added``      an alternative id of NEW that was neither an alias nor a node of OLD
``alias_removed``    an alternative id of OLD that is neither an alias nor a node of NEW
==================== ===============================================================

A node can be of several kinds (revoked and moved, relabelled and moved). Every withdrawn
entry names its replacement (``replaced_by``, ``None`` when there is none).

**Per branch**: each changed node counts once under every ancestor-or-self at
``branch_depth`` (depth from the root, root = 0; with a virtual root, depth 1 are the real
roots) — in OLD for ``removed``, ``merged`` and ``alias_removed``, in NEW otherwise (``moved``:
under the branches of both releases). A node shallower than ``branch_depth`` is its own branch;
an obsolete term placed under the root counts in its branch of the other release (where it
still had its place), else under ``(obsolete, unplaced)``.

**Stable nodes** (:meth:`OntologyDiff.stable_new`): a node of NEW is stable when it is in
OLD with the same status, replacement, label and synonyms, and no node of its
ancestor-or-self set was added, moved or changed status or replacement. Then its ancestor set,
depths and hierarchy relations are the same in both releases, and so is every hierarchy
metric of a record whose ids are all stable. Audits compare across releases on those nodes
(``docs/drift.md``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from kg_rageval.ontology.csr import sorted_unique as _sorted_unique
from kg_rageval.ontology.model import STATUS_NAMES, VIRTUAL_ROOT_ID, Ontology

CHANGE_KINDS = (
    "added",
    "removed",
    "merged",
    "deprecated",
    "revoked",
    "reactivated",
    "replacement_changed",
    "moved",
    "relabelled",
    "synonyms_changed",
    "alias_added",
    "alias_removed",
)
"""Change kinds, in report order (see the module docstring)."""

_IN_OLD = frozenset({"removed", "merged"})  # kinds whose indices are OLD node indices


def _str_array(values: Iterable[str]) -> np.ndarray:
    arr = np.asarray(list(values) if not isinstance(values, (list, tuple)) else values, dtype=str)
    return arr if arr.size else np.zeros(0, dtype="<U1")


def match_ids(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each string of ``a``, its position in ``b`` or -1 (sort + searchsorted; ``b`` must
    hold unique values)."""
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    if b.size == 0:
        return np.full(a.size, -1, dtype=np.int64)
    order = np.argsort(b, kind="stable")
    sb = b[order]
    pos = np.searchsorted(sb, a)
    pos_c = np.minimum(pos, sb.size - 1)
    hit = sb[pos_c] == a
    return np.where(hit, order[pos_c], -1).astype(np.int64)


def _sorted_xor(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Values in exactly one of ``a`` and ``b`` (sort-based: NumPy 2's hash-based unique, which
    ``setxor1d`` uses, is several times slower on large int arrays)."""
    aux = np.sort(np.concatenate([_sorted_unique(a), _sorted_unique(b)]))
    if aux.size == 0:
        return aux
    flag = np.concatenate(([True], aux[1:] != aux[:-1], [True]))
    return aux[flag[1:] & flag[:-1]]


def placed_mask(o: Ontology) -> np.ndarray:
    """Nodes that compiling placed under the root (obsolete terms with neither parent nor
    child, :attr:`Ontology.placed_under_root`): their edge to the root is no parent."""
    mask = np.zeros(len(o), dtype=bool)
    placed = getattr(o, "placed_under_root", ())
    if placed:
        idx = o.id_index
        mask[[idx[x] for x in placed if x in idx]] = True
    return mask


def _edges(o: Ontology) -> tuple[np.ndarray, np.ndarray]:
    """(child, parent) index arrays without the edges to the virtual root and the edges of
    obsolete terms placed under the root."""
    child = np.repeat(np.arange(len(o), dtype=np.int64), np.diff(o.parent_ptr))
    parent = o.parent_idx.astype(np.int64)
    drop = parent == 0 if o.virtual_root else np.zeros(parent.size, dtype=bool)
    placed = placed_mask(o)
    if placed.any():
        drop |= placed[child] & (parent == 0)
    if drop.any():
        child, parent = child[~drop], parent[~drop]
    return child, parent


def _parents(o: Ontology, node_id: str) -> list[str]:
    """Direct parents as the source states them (no virtual root, no placement under the root)."""
    if node_id in getattr(o, "placed_under_root", ()):
        return []
    return [p for p in o.parents(node_id) if p != VIRTUAL_ROOT_ID]


def branch_counts(o: Ontology, nodes: np.ndarray, depth: int) -> dict[str, int]:
    """``{branch id: nodes}``: each node counted once under every ancestor-or-self at ``depth``
    (``depth_min``; the node itself when it is shallower; ``(root)`` for the root)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    if nodes.size == 0:
        return {}
    from kg_rageval.ontology.builder import csr_gather as _gather

    lens = o.anc_ptr[nodes + 1] - o.anc_ptr[nodes]
    owner = np.repeat(np.arange(nodes.size), lens)
    anc = _gather(o.anc_ptr, o.anc_idx, nodes).astype(np.int64)
    at = o.depth_min[anc] == depth
    branches = anc[at]
    covered = np.zeros(nodes.size, dtype=bool)
    covered[owner[at]] = True
    shallow = nodes[~covered]
    counts = np.bincount(np.concatenate([branches, shallow]), minlength=len(o))
    out: dict[str, int] = {}
    for b in np.flatnonzero(counts).tolist():
        name = "(root)" if b == 0 and not (depth == 0) else o.ids[b]
        out[name] = out.get(name, 0) + int(counts[b])
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass(eq=False)
class OntologyDiff:
    """The changes from ``old`` to ``new`` (build it with :func:`diff_ontologies`).

    ``kinds[kind]`` holds node indices — of OLD for ``removed`` and ``merged``, of NEW for the
    node kinds otherwise; ``alias_added`` / ``alias_removed`` hold positions in NEW's / OLD's
    ``alias_ids``. ``old_to_new[i]`` is the NEW index of OLD node ``i`` (-1: not a node of NEW).
    """

    old: Ontology
    new: Ontology
    old_to_new: np.ndarray
    new_to_old: np.ndarray
    kinds: dict[str, np.ndarray]
    branch_depth: int = 1
    seconds: float = 0.0
    _moved_old_parents: dict[int, list[str]] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ counts
    def counts(self) -> dict[str, int]:
        return {k: int(self.kinds[k].size) for k in CHANGE_KINDS}

    @property
    def n_common(self) -> int:
        """Nodes (virtual root excluded) present in both releases."""
        n = int((self.new_to_old >= 0).sum())
        return n - (1 if self.old.virtual_root and self.new.virtual_root else 0)

    @property
    def changed(self) -> bool:
        return any(v.size for v in self.kinds.values())

    def by_branch(self) -> dict[str, dict[str, int]]:
        """Per kind, nodes per branch (see the module docstring)."""
        out: dict[str, dict[str, int]] = {}
        d = self.branch_depth
        for k in CHANGE_KINDS:
            idx = self.kinds[k]
            if k in ("alias_added", "alias_removed"):
                onto = self.new if k == "alias_added" else self.old
                idx = onto.alias_targets[idx].astype(np.int64) if idx.size else idx
                out[k] = branch_counts(onto, idx, d)
            elif k in _IN_OLD:
                out[k] = self._side_branches(idx, new_side=False)
            elif k == "moved":
                merged = self._side_branches(idx, new_side=True)
                for b, c in self._side_branches(self.new_to_old[idx], new_side=False).items():
                    merged[b] = max(merged.get(b, 0), c)
                out[k] = dict(sorted(merged.items(), key=lambda kv: (-kv[1], kv[0])))
            else:
                out[k] = self._side_branches(idx, new_side=True)
        return out

    def _side_branches(self, idx: np.ndarray, *, new_side: bool) -> dict[str, int]:
        """Branch counts of nodes of one release; an obsolete term that release placed under
        the root counts in its branch of the other release, else under ``(obsolete, unplaced)``."""
        d = self.branch_depth
        this, other = (self.new, self.old) if new_side else (self.old, self.new)
        to_other = self.new_to_old if new_side else self.old_to_new
        placed = placed_mask(this)[idx] if idx.size else np.zeros(0, dtype=bool)
        out = dict(branch_counts(this, idx[~placed], d))
        if placed.any():
            there = to_other[idx[placed]]
            ok = there >= 0
            ok[ok] = ~placed_mask(other)[there[ok]]
            for b, c in branch_counts(other, there[ok], d).items():
                out[b] = out.get(b, 0) + c
            if (~ok).sum():
                out["(obsolete, unplaced)"] = int((~ok).sum())
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    def branches_changed(self) -> dict[str, int]:
        """Changed nodes per branch, all kinds together (a node once per branch and kind)."""
        total: dict[str, int] = {}
        for per in self.by_branch().values():
            for b, c in per.items():
                total[b] = total.get(b, 0) + c
        return dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0])))

    # ------------------------------------------------------------------ stable nodes
    @cached_property
    def _bad_new(self) -> np.ndarray:
        """NEW nodes that change the hierarchy below them: added, moved, status changed."""
        bad = self.new_to_old < 0
        for k in ("moved", "deprecated", "revoked", "reactivated", "replacement_changed"):
            bad[self.kinds[k]] = True
        if self.new.virtual_root:
            bad[0] = False
        return bad

    @cached_property
    def stable_new(self) -> np.ndarray:
        """Boolean mask over NEW's nodes: stable between the releases (module docstring)."""
        o = self.new
        bad = self._bad_new
        row_bad = np.logical_or.reduceat(bad[o.anc_idx], o.anc_ptr[:-1]) if len(o) else bad
        stable = ~row_bad
        stable[self.kinds["relabelled"]] = False
        stable[self.kinds["synonyms_changed"]] = False
        if o.virtual_root:
            stable[0] = False
        return stable

    @cached_property
    def subtree_stable_new(self) -> np.ndarray:
        """Boolean mask over NEW's nodes: stable, and nothing in the subtree changed in either
        release (no node below was added, removed, merged, moved or changed status) — what a
        ``within`` category filter on the node needs to select the same nodes in both."""
        from kg_rageval.ontology.builder import csr_gather as _gather

        new, old = self.new, self.old
        marked = np.zeros(len(new), dtype=bool)
        bad = np.flatnonzero(self._bad_new)
        if bad.size:
            marked[_gather(new.anc_ptr, new.anc_idx, bad)] = True
        old_bad = [self.kinds["removed"], self.kinds["merged"]]
        for k in ("moved", "deprecated", "revoked", "reactivated", "replacement_changed"):
            old_bad.append(self.new_to_old[self.kinds[k]])
        ob = np.unique(np.concatenate(old_bad)) if old_bad else np.zeros(0, dtype=np.int64)
        ob = ob[ob >= 0]
        if ob.size:
            anc_old = _gather(old.anc_ptr, old.anc_idx, ob).astype(np.int64)
            mapped = self.old_to_new[anc_old]
            marked[mapped[mapped >= 0]] = True
        out = self.stable_new & ~marked
        return out

    def stable_ids(self, *, subtree: bool = False) -> frozenset[str]:
        """Ids of the stable nodes (:attr:`stable_new`; with ``subtree``,
        :attr:`subtree_stable_new`)."""
        ids = self.new.ids
        mask = self.subtree_stable_new if subtree else self.stable_new
        return frozenset(ids[i] for i in np.flatnonzero(mask).tolist())

    # ------------------------------------------------------------------ entries
    def _lab(self, o: Ontology, i: int) -> str | None:
        return o.labels[i]

    def entries(self, kind: str, limit: int | None = None) -> list[dict[str, Any]]:
        """One dict per change of ``kind`` (sorted by id), at most ``limit``."""
        if kind not in self.kinds:
            raise ValueError(f"unknown change kind {kind!r}; one of {', '.join(CHANGE_KINDS)}")
        idx = self.kinds[kind]
        old, new = self.old, self.new
        if kind == "alias_added":
            rows = sorted((new.alias_ids[a], new.ids[int(new.alias_targets[a])]) for a in idx.tolist())
            return [{"id": a, "of": t} for a, t in rows[:limit]]
        if kind == "alias_removed":
            rows = sorted((old.alias_ids[a], old.ids[int(old.alias_targets[a])]) for a in idx.tolist())
            return [{"id": a, "was_of": t} for a, t in rows[:limit]]
        onto = old if kind in _IN_OLD else new
        order = sorted(idx.tolist(), key=onto.ids.__getitem__)[:limit]
        out: list[dict[str, Any]] = []
        for i in order:
            nid = onto.ids[i]
            e: dict[str, Any] = {"id": nid, "label": onto.labels[i]}
            if kind == "added":
                e["status"] = STATUS_NAMES[int(new.status[i])]
                e["parents"] = _parents(new, nid)
            elif kind == "removed":
                e["parents"] = _parents(old, nid)
                e["status"] = STATUS_NAMES[int(old.status[i])]
                r = int(old.replaced_by[i])
                e["replaced_by"] = old.ids[r] if r >= 0 else None
            elif kind == "merged":
                e["into"] = new.alias_of(nid)
                e["into_label"] = new.label(e["into"]) if e["into"] else None
            elif kind in ("deprecated", "revoked", "reactivated", "replacement_changed"):
                j = int(self.new_to_old[i])
                e["old_status"] = STATUS_NAMES[int(old.status[j])]
                e["status"] = STATUS_NAMES[int(new.status[i])]
                r = int(new.replaced_by[i])
                e["replaced_by"] = new.ids[r] if r >= 0 else None
                if kind == "replacement_changed":
                    ro = int(old.replaced_by[j])
                    e["old_replaced_by"] = old.ids[ro] if ro >= 0 else None
            elif kind == "moved":
                j = int(self.new_to_old[i])
                e["old_parents"] = _parents(old, old.ids[j])
                e["new_parents"] = _parents(new, nid)
            elif kind == "relabelled":
                j = int(self.new_to_old[i])
                e["old_label"] = old.labels[j]
            elif kind == "synonyms_changed":
                j = int(self.new_to_old[i])
                so, sn = set(old.synonyms[j]), set(new.synonyms[i])
                e["added"] = sorted(sn - so)
                e["removed"] = sorted(so - sn)
            out.append(e)
        return out

    @staticmethod
    def release(o: Ontology) -> dict[str, Any]:
        """What identifies a release: source, declared version, content hash, node count."""
        return {
            "source": o.source,
            "version": o.version,
            "content_hash": o.content_hash,
            "nodes": o.n_nodes,
        }

    def to_dict(self, *, limit: int | None = None) -> dict[str, Any]:
        """JSON-ready: both releases, counts, per-branch counts, the entries of every kind
        (``limit`` per kind; ``None`` for all), the stable-node count and the time taken."""
        counts = self.counts()
        return {
            "old": self.release(self.old),
            "new": self.release(self.new),
            "identical": self.old.content_hash == self.new.content_hash,
            "common_nodes": self.n_common,
            "stable_nodes": int(self.stable_new.sum()),
            "counts": counts,
            "branch_depth": self.branch_depth,
            "by_branch": self.by_branch(),
            "changes": {k: self.entries(k, limit) for k in CHANGE_KINDS if counts[k]},
            "truncated": {
                k: counts[k] - limit for k in CHANGE_KINDS if limit is not None and counts[k] > limit
            },
            "seconds": round(self.seconds, 4),
        }


def diff_ontologies(old: Ontology, new: Ontology, *, branch_depth: int = 1) -> OntologyDiff:
    """The changes from ``old`` to ``new`` (see the module docstring for the kinds)."""
    import time

    t0 = time.perf_counter()
    old_ids, new_ids = _str_array(old.ids), _str_array(new.ids)
    o2n = match_ids(old_ids, new_ids)
    n2o = match_ids(new_ids, old_ids)
    vroot_new = 0 if new.virtual_root else -1
    vroot_old = 0 if old.virtual_root else -1
    real_new = np.ones(len(new), dtype=bool)
    if vroot_new == 0:
        real_new[0] = False
    real_old = np.ones(len(old), dtype=bool)
    if vroot_old == 0:
        real_old[0] = False
    # a release without a virtual root may still name the id (impossible in practice): ignore it
    old_alias = _str_array(old.alias_ids)
    new_alias = _str_array(new.alias_ids)

    common_new = (n2o >= 0) & real_new
    kinds: dict[str, np.ndarray] = {}
    kinds["added"] = np.flatnonzero((n2o < 0) & real_new)
    gone = np.flatnonzero((o2n < 0) & real_old)
    as_alias = match_ids(old_ids[gone], new_alias) >= 0 if gone.size else np.zeros(0, dtype=bool)
    kinds["merged"] = gone[as_alias]
    kinds["removed"] = gone[~as_alias]

    ci = np.flatnonzero(common_new)  # NEW indices of common nodes
    cj = n2o[ci]  # their OLD indices
    s_new, s_old = new.status[ci].astype(np.int8), old.status[cj].astype(np.int8)
    changed_status = s_new != s_old
    kinds["deprecated"] = ci[changed_status & (s_new == 1)]
    kinds["revoked"] = ci[changed_status & (s_new == 2)]
    kinds["reactivated"] = ci[changed_status & (s_new == 0)]
    # replacements compared as NEW indices (an OLD replacement absent from NEW is -2: differs)
    r_new = new.replaced_by[ci].astype(np.int64)
    r_old_raw = old.replaced_by[cj].astype(np.int64)
    r_old = np.where(r_old_raw >= 0, o2n[np.maximum(r_old_raw, 0)], -1)
    r_old = np.where((r_old_raw >= 0) & (r_old < 0), -2, r_old)
    kinds["replacement_changed"] = ci[~changed_status & (s_new != 0) & (r_new != r_old)]

    # moved: symmetric difference of the (child, parent) edge sets in NEW's numbering
    oc, op = _edges(old)
    nc, np_ = _edges(new)
    m = np.int64(len(new) + len(old) + 1)
    oc_n = o2n[oc]
    keep = oc_n >= 0
    op_n = o2n[op[keep]]
    op_n = np.where(op_n >= 0, op_n, len(new) + op[keep])  # a parent NEW lacks: a unique key
    keys_old = oc_n[keep] * m + op_n
    keep_n = n2o[nc] >= 0
    keys_new = nc[keep_n] * m + np_[keep_n]
    moved = _sorted_unique(_sorted_xor(keys_old, keys_new) // m)
    kinds["moved"] = moved[common_new[moved]] if moved.size else moved

    # labels and synonyms of common nodes
    lab_new = np.asarray(new.labels, dtype=object)[ci]
    lab_old = np.asarray(old.labels, dtype=object)[cj]
    kinds["relabelled"] = ci[lab_new != lab_old]
    syn_new, syn_old = new.synonyms, old.synonyms
    syn_changed = [
        i
        for i, j in zip(ci.tolist(), cj.tolist())
        if syn_new[i] != syn_old[j] and set(syn_new[i]) != set(syn_old[j])
    ]
    kinds["synonyms_changed"] = np.asarray(syn_changed, dtype=np.int64)

    # aliases
    if new_alias.size:
        in_old = (match_ids(new_alias, old_alias) >= 0) | (match_ids(new_alias, old_ids) >= 0)
        kinds["alias_added"] = np.flatnonzero(~in_old)
    else:
        kinds["alias_added"] = np.zeros(0, dtype=np.int64)
    if old_alias.size:
        in_new = (match_ids(old_alias, new_alias) >= 0) | (match_ids(old_alias, new_ids) >= 0)
        kinds["alias_removed"] = np.flatnonzero(~in_new)
    else:
        kinds["alias_removed"] = np.zeros(0, dtype=np.int64)
    kinds = {k: np.asarray(kinds[k], dtype=np.int64) for k in CHANGE_KINDS}
    return OntologyDiff(
        old=old,
        new=new,
        old_to_new=o2n,
        new_to_old=n2o,
        kinds=kinds,
        branch_depth=branch_depth,
        seconds=time.perf_counter() - t0,
    )
