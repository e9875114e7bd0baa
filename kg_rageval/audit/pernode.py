"""The per-node and per-slice parts of the audit report.

* :func:`node_rollups` — every metric of every family whose rows carry a ``gold_node`` key,
  rolled up the hierarchy (:meth:`Evaluation.rollup`: a row counts once under each ancestor).
* :func:`failure_drivers` — for each failed global gate, the ontology branches that drive the
  failure, ranked by their contribution to the shortfall **beyond their size** (see
  :func:`branch_impact`), deepest first among ties; the root is never a driver.
* :func:`coverage_matrix` — records per (intent × document type × ontology branch) cell; a cell
  with 0 records is *empty*, one with fewer than ``thin`` is *thin*.
* :func:`relation_counts` — the confusion relations (exact, parent, sibling, ...) counted from
  a family's ``relation`` detail column.
* :func:`exclusion_attribution` — which filter fields removed gold documents (replayed from
  the records' filters over the corpus), split from entitlement exclusions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from ..evaluation import Metric
from .gates import finite_or_none, metric_dict

if TYPE_CHECKING:  # pragma: no cover
    from .config import AuditConfig, CoverageConfig
    from .families import FamilyRun
    from .gates import GateResult


def _mdict(ms: Mapping[str, Metric]) -> dict[str, Any]:
    return {k: metric_dict(m) for k, m in ms.items()}


def safe_rollup(ev: Any, ontology: Any, key: str = "gold_node") -> dict[str, dict[str, Any]]:
    """:meth:`Evaluation.rollup`, or ``{}`` when no row's ``key`` is an ontology id (the
    evaluation's rollup does not handle an empty selection); cached per evaluation and key
    (in the attribute ``ev._audit_rollups``, which is not a dataclass field)."""
    cache = getattr(ev, "_audit_rollups", None)
    if cache is None:
        cache = {}
        ev._audit_rollups = cache
    if key in cache:
        return cache[key]
    col = ev.keys.get(key)
    if col is None or not any(isinstance(v, str) and v in ontology for v in col.tolist()):
        out: dict[str, dict[str, Any]] = {}
    else:
        out = ev.rollup(ontology, key)
    cache[key] = out
    return out


def slice_breakdowns(runs: Mapping[str, "FamilyRun"], only: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """``{family: {"slice:intent": {value: {"n": rows, "metrics": {...}}}}}``; ``only`` limits
    the slice names (the config's ``slices``; ``None`` = every slice the records use)."""
    out: dict[str, dict[str, Any]] = {}
    wanted = None if only is None else {f"slice:{n}" for n in only}
    for fam, run in runs.items():
        for ev in run.evaluations:
            for key in sorted(k for k in ev.keys if k.startswith("slice:") and (wanted is None or k in wanted)):
                bd = ev.breakdown(key)
                dst = out.setdefault(fam, {}).setdefault(key, {})
                for v, g in bd.items():
                    if v is None:
                        continue
                    dst.setdefault(str(v), {"n": 0, "metrics": {}})
                    dst[str(v)]["n"] += g["n"]
                    dst[str(v)]["metrics"].update(_mdict(g["metrics"]))
    return out


def node_rollups(runs: Mapping[str, "FamilyRun"], ontology: Any) -> dict[str, dict[str, Any]]:
    """``{node id: {"label", "depth", "n": {family: rows}, "metrics": {family.metric: value}}}``."""
    nodes: dict[str, dict[str, Any]] = {}
    for fam, run in runs.items():
        for ev in run.evaluations:
            if "gold_node" not in ev.keys:
                continue
            for nid, g in safe_rollup(ev, ontology).items():
                d = nodes.setdefault(nid, {"label": ontology.label(nid), "depth": g["depth"],
                                           "n": {}, "metrics": {}})
                d["n"][fam] = max(d["n"].get(fam, 0), g["n"])
                for m, val in g["metrics"].items():
                    d["metrics"][f"{fam}.{m}"] = finite_or_none(val.value)
    return dict(sorted(nodes.items(), key=lambda kv: (kv[1]["depth"], kv[0])))


def branch_impact(value: float, weight: float, global_value: float, threshold: float, op: str
                  ) -> dict[str, float]:
    """How much of a failing gate's shortfall a branch carries beyond its size.

    For a gate ``m >= t`` (``>``: the same; ``<=``/``<``: signs reversed) failing globally at
    ``V``, and a branch with value ``v`` and weight ``w`` (the metric's denominator on the
    branch, else its rows; ``W`` the global weight):

    * deficit ``d = w·(t − v)``: numerator units the branch lacks to meet the threshold;
    * the total deficit ``D = W·(t − V)``, so the branch's size-proportional share of it is
      ``(w/W)·D = w·(t − V)``;
    * **impact** = ``d − (w/W)·D = w·(V − v)``: the deficit beyond that share, i.e. rows (or
      denominator units) × how much worse than the global value the branch is.

    A branch as bad as the whole (a uniformly bad one, or the root, which contains everything,
    ``v = V``) has impact 0 and is no driver; a branch better than the global value has a
    negative impact. Drivers are the branches with impact > 0."""
    sign = 1.0 if op in (">=", ">") else -1.0
    return {"deficit": sign * weight * (threshold - value),
            "impact": sign * weight * (global_value - value)}


def failure_drivers(results: list["GateResult"], index: Any, ontology: Any, config: "AuditConfig"
                    ) -> list[dict[str, Any]]:
    """Branches driving each failed global value gate, most impact first (:func:`branch_impact`)."""
    out: list[dict[str, Any]] = []
    thin = config.coverage.thin
    roots = {ontology.root_id}
    for r in results:
        g = r.gate
        if r.status != "fail" or g.scope is not None or g.metric.startswith("delta:") or g.op == "==":
            continue
        owner, _ = index.owner(g.metric)
        if owner is None or "gold_node" not in owner.ev.keys:
            continue
        total = index.totals.get((id(owner.ev), owner.metric))
        if total is None or finite_or_none(total.value) is None:
            continue
        gv = float(total.value)
        ev = owner.ev
        for nid, row in safe_rollup(ev, ontology).items():
            if nid in roots:
                continue
            m = row["metrics"].get(owner.metric)
            if m is None or finite_or_none(m.value) is None:
                continue  # undefined on this branch: not a driver of the failure
            if g.compare(m.value):
                continue
            weight = float(m.denominator) if m.denominator else float(row["n"])
            imp = branch_impact(float(m.value), weight, gv, g.threshold, g.op)
            if imp["impact"] <= 1e-12:
                continue
            total_w = float(total.denominator) if total.denominator else float(len(ev))
            total_def = branch_impact(gv, total_w, gv, g.threshold, g.op)["deficit"]
            out.append({"gate": str(g), "node": nid, "label": ontology.label(nid), "depth": row["depth"],
                        "n": row["n"], "value": m.value, "status": "fail", "weight": weight,
                        "shortfall": abs(m.value - g.threshold), "deficit": imp["deficit"],
                        "deficit_share": imp["deficit"] / total_def if total_def else None,
                        "size_share": weight / total_w if total_w else None,
                        "impact": imp["impact"], "thin": row["n"] < thin})
    out.sort(key=lambda e: (-e["impact"], -e["depth"], e["node"]))
    return out[: max(config.report.top_branches * 5, 50)]


def gold_node_of(record: Mapping[str, Any]) -> str | None:
    """The record's gold ontology node: ``gold_node``, else ``labels.gold[0]``, else the first
    gold mention id, else ``answer.output`` is not used (it is a prediction)."""
    if isinstance(record.get("gold_node"), str):
        return record["gold_node"]
    labels = record.get("labels")
    if isinstance(labels, dict):
        gold = labels.get("gold")
        if isinstance(gold, list) and gold and isinstance(gold[0], str):
            return gold[0]
        if isinstance(gold, str):
            return gold
    mentions = record.get("mentions")
    if isinstance(mentions, dict):
        for m in mentions.get("gold") or []:
            if isinstance(m, dict) and isinstance(m.get("id"), str):
                return m["id"]
    return None


def _branch_of(ontology: Any, node: str | None, depth: int) -> str:
    """The node's ancestor at ``depth`` (root = depth 0; with a virtual root, depth 1 is the real
    roots); ``(no gold node)`` / ``(not in ontology)`` otherwise; the node itself when it is
    shallower than ``depth``."""
    if node is None:
        return "(no gold node)"
    i = ontology.id_index.get(node)
    if i is None:
        return "(not in ontology)"
    want = depth
    anc = ontology.anc_idx[ontology.anc_ptr[i]:ontology.anc_ptr[i + 1]]
    cands = [a for a in anc.tolist() if int(ontology.depth_min[a]) == want]
    if cands:
        return ontology.ids[min(cands)]
    return ontology.ids[i] if i != 0 else "(root)"


def make_branch_of(ontology: Any, cfg: "CoverageConfig"):
    """``node id -> branch id``: the first of ``cfg.branches`` whose subtree holds the node
    (``(other)`` for none), else the node's ancestor at ``cfg.branch_depth``."""
    if not cfg.branches:
        return lambda node: _branch_of(ontology, node, cfg.branch_depth)
    unknown = [b for b in cfg.branches if b not in ontology]
    if unknown:
        from ..errors import ConfigError

        raise ConfigError(f"coverage.branches: not in the ontology: {', '.join(unknown)}")
    subtrees = [(b, set(ontology.descendant_indices(ontology.index(b), include_self=True).tolist()))
                for b in cfg.branches]

    def branch_of(node: str | None) -> str:
        if node is None:
            return "(no gold node)"
        i = ontology.id_index.get(node)
        if i is None:
            return "(not in ontology)"
        return next((b for b, sub in subtrees if i in sub), "(other)")

    return branch_of


def coverage_matrix(records: list[dict], ontology: Any, corpus: list[dict] | None,
                    cfg: "CoverageConfig") -> dict[str, Any]:
    """Records per (intent, doc type, branch) with the empty and thin cells listed."""
    doc_type: dict[str, str] = {}
    for d in corpus or []:
        t = d.get(cfg.type_field)
        if t is not None:
            doc_type[str(d["id"])] = str(t)
    branch_of = make_branch_of(ontology, cfg)
    cells: dict[tuple[str, str, str], int] = {}
    intents: set[str] = set()
    types: set[str] = set()
    branches: set[str] = set()
    for r in records:
        sl = r.get("slices") if isinstance(r.get("slices"), dict) else {}
        intent = str(sl.get(cfg.intent_slice, "(none)"))
        dt = sl.get(cfg.doc_type_slice)
        if dt is None:
            gold = (r.get("retrieval") or {}).get("gold") if isinstance(r.get("retrieval"), dict) else None
            first = None
            if isinstance(gold, dict) and gold:
                first = next(iter(gold))
            elif isinstance(gold, list) and gold:
                first = gold[0]
            dt = doc_type.get(str(first)) if first is not None else None
        dt = str(dt) if dt is not None else "(none)"
        br = branch_of(gold_node_of(r))
        intents.add(intent)
        types.add(dt)
        branches.add(br)
        cells[(intent, dt, br)] = cells.get((intent, dt, br), 0) + 1
    # every branch at the configured depth is a column, even when no record reaches it
    if cfg.branches:
        all_branches = list(cfg.branches)
    else:
        all_branches = [ontology.ids[i] for i in np.flatnonzero(ontology.depth_min == cfg.branch_depth).tolist()]
    if len(all_branches) <= 200:
        branches.update(all_branches)
    intents_l, types_l, branches_l = sorted(intents), sorted(types), sorted(branches)
    empty, thin = [], []
    matrix = []
    for it in intents_l:
        for dt in types_l:
            for br in branches_l:
                n = cells.get((it, dt, br), 0)
                matrix.append({"intent": it, "doc_type": dt, "branch": br, "n": n})
                if n == 0:
                    empty.append([it, dt, br])
                elif n < cfg.thin:
                    thin.append([it, dt, br])
    return {
        "axes": {"intent": intents_l, "doc_type": types_l, "branch": branches_l},
        "branch_labels": {b: ontology.label(b) for b in branches_l if b in ontology},
        "thin_threshold": cfg.thin,
        "cells": matrix,
        "n_cells": len(matrix),
        "n_empty": len(empty),
        "n_thin": len(thin),
        "empty": empty[:500],
        "thin": thin[:500],
    }


def relation_counts(runs: Mapping[str, "FamilyRun"]) -> dict[str, dict[str, int]]:
    """``{family: {relation: rows}}`` from any ``relation`` detail column."""
    out: dict[str, dict[str, int]] = {}
    for fam, run in runs.items():
        for ev in run.evaluations:
            col = ev.details.get("relation")
            if col is None:
                continue
            d = out.setdefault(fam, {})
            for v in col.tolist():
                if v is None:
                    continue
                d[str(v)] = d.get(str(v), 0) + 1
    return out


def exclusion_attribution(runs: Mapping[str, "FamilyRun"], records: list[dict],
                          corpus: list[dict] | None, ontology: Any, *, branch_of: Any = None) -> dict[str, Any]:
    """Gold documents excluded before ranking, attributed to the filter (or entitlement) that
    removed them. Filters are replayed: ``within X`` keeps documents with a category in X's
    subtree (X included; the document's ``categories``); ``eq``/``in`` compare the document
    field. Entitlement: a document that sets a principal's field (e.g. ``tenant``) without the
    principal's value is excluded *for entitlement* — counted apart, since it is correct
    behaviour, not a false exclusion. A gold document the record's run retrieved although its
    logged filters exclude it is an *inconsistent filter log* (``inconsistent_filter_log``,
    with up to 20 ``(record, document)`` examples), never also counted as excluded."""
    if not corpus:
        return {}
    docs = {str(d["id"]): d for d in corpus}
    by_field: dict[str, int] = {}
    by_branch: dict[str, int] = {}
    entitlement = 0
    n_gold = 0
    inconsistent = 0
    examples: list[list[str]] = []
    for r in records:
        ret = r.get("retrieval")
        if not isinstance(ret, dict):
            continue
        gold = ret.get("gold")
        gold_ids = list(gold) if isinstance(gold, (dict, list)) else []
        filters = ret.get("filters") or []
        principal = ret.get("principal") or {}
        run = ret.get("run")
        retrieved = _run_ids(run)
        for gid in gold_ids:
            doc = docs.get(str(gid))
            if doc is None:
                continue
            n_gold += 1
            if _entitlement_excluded(doc, principal):
                entitlement += 1
                continue
            for f in filters:
                if not isinstance(f, dict):
                    continue
                if not _keeps(doc, f, ontology):
                    if str(gid) in retrieved:  # the run proves the document passed
                        inconsistent += 1
                        if len(examples) < 20:
                            examples.append([str(r.get("id")), str(gid)])
                        break
                    fld = str(f.get("field"))
                    by_field[fld] = by_field.get(fld, 0) + 1
                    node = gold_node_of(r)
                    br = branch_of(node) if branch_of else _branch_of(ontology, node, 1)
                    by_branch[br] = by_branch.get(br, 0) + 1
                    break
    return {
        "gold_documents": n_gold,
        "excluded_by_filter": dict(sorted(by_field.items(), key=lambda kv: -kv[1])),
        "excluded_by_branch": dict(sorted(by_branch.items(), key=lambda kv: -kv[1])),
        "excluded_by_entitlement": entitlement,
        "inconsistent_filter_log": inconsistent,
        "inconsistent_examples": examples,
    }


def _run_ids(run: Any) -> set[str]:
    """The document ids of a logged run in any of its shapes (ids, [id, score], {"id"}, {id: score})."""
    out: set[str] = set()
    for d in run if isinstance(run, (list, dict)) else []:
        if isinstance(d, str):
            out.add(d)
        elif isinstance(d, dict) and isinstance(d.get("id"), str):
            out.add(d["id"])
        elif isinstance(d, (list, tuple)) and d and isinstance(d[0], str):
            out.add(d[0])
    return out


def _entitlement_excluded(doc: Mapping[str, Any], principal: Mapping[str, Any]) -> bool:
    """A document is hidden from a principal when, for some principal field, the document sets
    that field (a value or a list of values) and the principal's value is not among them."""
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
    for key, want in principal.items():
        allowed = doc.get(key, meta.get(key))
        if allowed is None or want is None:
            continue
        vals = allowed if isinstance(allowed, list) else [allowed]
        if vals and want not in vals:
            return True
    return False


def _keeps(doc: Mapping[str, Any], f: Mapping[str, Any], ontology: Any) -> bool:
    field_, op, value = f.get("field"), f.get("op", "eq"), f.get("value")
    dv = doc.get(field_)
    if dv is None and field_ in ("category", "categories"):
        dv = doc.get("categories", doc.get("category"))
    vals = dv if isinstance(dv, list) else ([dv] if dv is not None else [])
    if op == "within":
        return any(isinstance(v, str) and v in ontology and (v == value or (value in ontology and ontology.is_ancestor(value, v))) for v in vals)
    if op == "in":
        allowed = value if isinstance(value, list) else [value]
        return any(v in allowed for v in vals)
    if op in ("eq", "=="):
        return value in vals
    if op in ("ne", "!="):
        return value not in vals
    return True
