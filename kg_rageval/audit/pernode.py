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

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from kg_rageval.audit.gates import finite_or_none, metric_dict
from kg_rageval.results.metric import Metric

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.audit.config import AuditConfig, CoverageConfig
    from kg_rageval.audit.families import FamilyRun
    from kg_rageval.audit.gates import GateResult


def _mdict(ms: Mapping[str, Metric]) -> dict[str, Any]:
    return {k: metric_dict(m) for k, m in ms.items()}


def safe_rollup(ev: Any, ontology: Any, key: str = "gold_node") -> dict[str, dict[str, Any]]:
    """:meth:`Evaluation.rollup` over every node, or ``{}`` when no row's ``key`` is an ontology
    id; cached per evaluation and key (in the attribute ``ev._audit_rollups``, which is not a
    dataclass field). Entries' metrics are finalized when read (:class:`LazyMetrics`)."""
    cache = getattr(ev, "_audit_rollups", None)
    if cache is None:
        cache = {}
        ev._audit_rollups = cache
    if key in cache:
        return cache[key]
    col = ev.keys.get(key)
    if col is None:
        out: dict[str, dict[str, Any]] = {}
    else:
        out = ev.rollup(ontology, key)
    cache[key] = out
    return out


def shown_nodes(config: AuditConfig, ontology: Any, drivers: list[dict[str, Any]]) -> set[str]:
    """The nodes the report's per-node section keeps (``report.node_rollup: true``): every
    node with ``depth_min <= report.node_depth`` (the markdown table shows depth 1-2, the HTML
    plot depth <= 3), each node a gate is scoped to (``node_gates``, ``[node:X]``) with its
    subtree down to ``node_depth`` levels below it (the reports plot a failed node gate over
    that subtree), and each failure driver."""
    depth = config.report.node_depth
    keep = {ontology.ids[i] for i in np.flatnonzero(ontology.depth_min <= depth).tolist()}
    gated = {n for n in config.node_gates if n in ontology}
    for text in config.gates:
        for m in re.finditer(r"\[\s*node:([^\]]+?)\s*\]", text):
            if m.group(1) in ontology:
                gated.add(m.group(1))
    for nid in gated:  # a failed node:X gate is plotted over X's subtree, node_depth levels down
        i = ontology.index(nid)
        sub = ontology.descendant_indices(i, include_self=True)
        sub = sub[ontology.depth_min[sub] <= ontology.depth_min[i] + depth]
        keep.update(ontology.ids[j] for j in sub.tolist())
    keep.update(d["node"] for d in drivers)
    return keep


def slice_breakdowns(
    runs: Mapping[str, FamilyRun], only: list[str] | None = None
) -> dict[str, dict[str, Any]]:
    """``{family: {"slice:intent": {value: {"n": rows, "metrics": {...}}}}}``; ``only`` limits
    the slice names (the config's ``slices``; ``None`` = every slice the records use)."""
    out: dict[str, dict[str, Any]] = {}
    wanted = None if only is None else {f"slice:{n}" for n in only}
    for fam, run in runs.items():
        for ev in run.evaluations:
            for key in sorted(
                k for k in ev.keys if k.startswith("slice:") and (wanted is None or k in wanted)
            ):
                bd = ev.breakdown(key)
                dst = out.setdefault(fam, {}).setdefault(key, {})
                for v, g in bd.items():
                    if v is None:
                        continue
                    dst.setdefault(str(v), {"n": 0, "metrics": {}})
                    dst[str(v)]["n"] += g["n"]
                    dst[str(v)]["metrics"].update(_mdict(g["metrics"]))
    return out


def node_rollups(
    runs: Mapping[str, FamilyRun], ontology: Any, only: set[str] | None = None
) -> dict[str, dict[str, Any]]:
    """``{node id: {"label", "depth", "n": {family: rows}, "metrics": {family.metric: value}}}``
    for every node with rows, or only the nodes in ``only`` (see :func:`shown_nodes`).

    Only the kept nodes are rolled up (:func:`~kg_rageval.results.rollup.rollup_sums` with those
    nodes), and each metric is computed for all of them at once where it has a verified form
    (:func:`~kg_rageval.results.forms.metric_values`), so no :class:`Metric` is built per node and
    metric; an evaluation with its own roll-up (quantiles) is finalized node by node."""
    from kg_rageval.results.columns import StatColumns
    from kg_rageval.results.forms import metric_values
    from kg_rageval.results.rollup import rollup_sums

    nodes: dict[str, dict[str, Any]] = {}
    keep = np.ones(len(ontology), dtype=bool)
    if only is not None:
        keep = np.zeros(len(ontology), dtype=bool)
        keep[[ontology.index(n) for n in only if n in ontology]] = True
    ids = ontology.ids

    def entry(i: int) -> dict[str, Any]:
        nid = ids[i]
        d = nodes.get(nid)
        if d is None:
            d = nodes[nid] = {
                "label": ontology.label(nid),
                "depth": int(ontology.depth_min[i]),
                "n": {},
                "metrics": {},
            }
        return d

    for fam, run in runs.items():
        for ev in run.evaluations:
            if "gold_node" not in ev.keys:
                continue
            if not sums_rollup(ev):
                for nid, g in safe_rollup(ev, ontology).items():
                    if only is not None and nid not in only:
                        continue
                    d = entry(ontology.index(nid))
                    d["n"][fam] = max(d["n"].get(fam, 0), g["n"])
                    for m, val in g["metrics"].items():
                        d["metrics"][f"{fam}.{m}"] = finite_or_none(val.value)
                continue
            node = ev.node_indices(ontology, "gold_node")  # -1: not an ontology id, left out
            names = list(ev.stats)
            kept, pooled = rollup_sums(ontology, node, StatColumns(ev.stats, names), keep)
            if not len(kept):
                continue
            metrics = list(ev.metrics())
            vals = metric_values(ev.family.finalize, names, pooled[:, 1:], metrics)
            counts = np.rint(pooled[:, 0]).astype(np.int64).tolist()
            cols = []
            for m in metrics:
                v = vals[m][0]  # type: ignore[index]
                cols.append([None if not np.isfinite(x) else x for x in v.tolist()])
            keys = [f"{fam}.{m}" for m in metrics]
            for j, i in enumerate(kept.tolist()):
                d = entry(i)
                d["n"][fam] = max(d["n"].get(fam, 0), counts[j])
                dm = d["metrics"]
                for key, col in zip(keys, cols):
                    dm[key] = col[j]
    return dict(sorted(nodes.items(), key=lambda kv: (kv[1]["depth"], kv[0])))


def branch_impact(value: Any, weight: Any, global_value: float, threshold: float, op: str) -> dict[str, Any]:
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
    negative impact. Drivers are the branches with impact > 0. ``value`` and ``weight`` may be
    numpy arrays (one entry per branch): the results are then arrays."""
    sign = 1.0 if op in (">=", ">") else -1.0
    return {"deficit": sign * weight * (threshold - value), "impact": sign * weight * (global_value - value)}


def sums_rollup(ev: Any) -> bool:
    """Whether ``ev``'s roll-up is the sums roll-up of :class:`~kg_rageval.results.evaluation.Evaluation`
    (a subclass such as the system family's quantiles rolls up its own way)."""
    from kg_rageval.results.evaluation import Evaluation

    return getattr(type(ev), "rollup", None) is Evaluation.rollup


def _table_of(
    rollup: Mapping[str, Mapping[str, Any]], ontology: Any, metric: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`node_metric`'s arrays from a finalized roll-up (one entry per node)."""
    if not rollup:
        return None
    idx, n, val, den = [], [], [], []
    for nid, row in rollup.items():
        m = row["metrics"].get(metric)
        v = None if m is None else finite_or_none(m.value)
        idx.append(ontology.index(nid))
        n.append(float(row["n"]))
        val.append(np.nan if v is None else float(v))
        den.append(float(m.denominator) if m is not None and m.denominator is not None else np.nan)
    return np.asarray(idx), np.asarray(n), np.asarray(val), np.asarray(den)


def node_metric(
    ev: Any, ontology: Any, metric: str, key: str = "gold_node"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """``(node indices, rows, values, denominators)`` of one metric on every node with rows in
    its subtree (the roll-up of :meth:`Evaluation.rollup`, in index order; NaN where the metric
    is undefined or has no denominator), or ``None`` when no row's ``key`` is an ontology id.

    Vectorised over the nodes: a metric with a verified form (:mod:`kg_rageval.results.forms`) rolls up
    only the stat projections it reads (for a ratio of two stats: those two columns, so the
    sums are the full roll-up's bit for bit) and is evaluated on all nodes at once; any other
    metric rolls up every stat and is finalized node by node."""
    from kg_rageval.results.columns import StatColumns
    from kg_rageval.results.forms import Projection, metric_forms, metric_values
    from kg_rageval.results.rollup import rollup_sums

    if key not in ev.keys:
        return None
    if not sums_rollup(ev):  # its own roll-up (quantiles): finalized node by node
        return _table_of(safe_rollup(ev, ontology, key), ontology, metric)
    node = ev.node_indices(ontology, key)
    ok = node >= 0
    if not ok.any():
        return None
    names = list(ev.stats)
    keep = np.ones(len(ontology), dtype=bool)
    # probed on the per-record total and sample records (the evaluation's cached view)
    forms = metric_forms(ev.family.finalize, names, [metric], ev.record_stats().probe_rows())
    if forms.get(metric) is not None:
        proj = Projection(forms, [metric])
        cols = proj.columns_of(StatColumns(ev.stats, names))
        kept, pooled = rollup_sums(ontology, node, cols, keep)  # rows of node -1 left out
        values, den = proj.values(metric, pooled[:, 1:])
        if _form_holds(ev, ontology, node, ok, metric, kept, values):
            return kept, pooled[:, 0], values, den if den is not None else np.full(len(kept), np.nan)
    kept, pooled = rollup_sums(ontology, node, StatColumns(ev.stats, names), keep)
    got = metric_values(ev.family.finalize, names, pooled[:, 1:], [metric], forms=forms)[metric]
    assert got is not None
    return kept, pooled[:, 0], got[0], got[1]


def _form_holds(
    ev: Any,
    ontology: Any,
    node: np.ndarray,
    ok: np.ndarray,
    metric: str,
    kept: np.ndarray,
    values: np.ndarray,
) -> bool:
    """The form's values against ``finalize`` on the full sums of three sample nodes (the
    first, a middle and the last kept node): a form that does not hold there is not used."""
    if not len(kept):
        return True
    for j in sorted({0, len(kept) // 2, len(kept) - 1}):
        sub = ontology.descendant_indices(int(kept[j]), include_self=True)
        rows = ok & np.isin(node, sub)
        m = ev.family.finalize(ev.totals(rows)).get(metric)
        got = None if not np.isfinite(values[j]) else float(values[j])
        want = None if m is None or m.value is None else float(m.value)
        if (got is None) != (want is None):
            return False
        if got is not None and want is not None and abs(got - want) > 1e-9 * max(1.0, abs(want)):
            return False
    return True


def failure_drivers(
    results: list[GateResult], index: Any, ontology: Any, config: AuditConfig
) -> list[dict[str, Any]]:
    """Branches driving each failed global value gate, most impact first (:func:`branch_impact`).

    The metric is computed on every node at once (:func:`node_metric`); only the drivers
    (impact > 0) become entries."""
    out: list[dict[str, Any]] = []
    thin = config.coverage.thin
    root = ontology.index(ontology.root_id) if ontology.root_id in ontology else -1
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
        got = node_metric(ev, ontology, owner.metric)
        if got is None:
            continue
        kept, n_rows, values, den = got
        defined = np.isfinite(values) & (kept != root)  # undefined on a branch: not a driver
        with np.errstate(invalid="ignore"):
            observed: Any = np.where(defined, values, 0.0)  # Gate.compare is elementwise on arrays
            fails = defined & ~np.asarray(g.compare(observed), dtype=np.bool_)
        weight = np.where(np.isnan(den) | (den == 0), n_rows, den)
        imp = branch_impact(np.where(fails, values, 0.0), weight, gv, g.threshold, g.op)
        total_w = float(total.denominator) if total.denominator else float(len(ev))
        total_def = branch_impact(gv, total_w, gv, g.threshold, g.op)["deficit"]
        for j in np.flatnonzero(fails & (imp["impact"] > 1e-12)).tolist():
            i, v, w, n = int(kept[j]), float(values[j]), float(weight[j]), int(round(float(n_rows[j])))
            nid = ontology.ids[i]
            deficit, impact = float(imp["deficit"][j]), float(imp["impact"][j])
            out.append(
                {
                    "gate": str(g),
                    "node": nid,
                    "label": ontology.label(nid),
                    "depth": int(ontology.depth_min[i]),
                    "n": n,
                    "value": v,
                    "status": "fail",
                    "weight": w,
                    "shortfall": abs(v - g.threshold),
                    "deficit": deficit,
                    "deficit_share": deficit / total_def if total_def else None,
                    "size_share": w / total_w if total_w else None,
                    "impact": impact,
                    "thin": n < thin,
                }
            )
    out.sort(key=lambda e: (-e["impact"], -e["depth"], e["node"]))
    return out[: max(config.report.top_branches * 5, 50)]


def gold_node_of(record: Mapping[str, Any]) -> str | None:
    """The record's gold ontology node by the one rule (:func:`kg_rageval.records.gold_node`:
    its ``gold_node``, else its single ``labels.gold`` id), with the first gold mention id as
    the fallback (``answer.output`` is not used: it is a prediction). Ids as given."""
    from kg_rageval.records import gold_node

    first = None
    mentions = record.get("mentions")
    if isinstance(mentions, dict):
        for m in mentions.get("gold") or []:
            if isinstance(m, dict) and isinstance(m.get("id"), str):
                first = m["id"]
                break
    return gold_node(record, fallback=first)


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
    anc = ontology.anc_idx[ontology.anc_ptr[i] : ontology.anc_ptr[i + 1]]
    cands = [a for a in anc.tolist() if int(ontology.depth_min[a]) == want]
    if cands:
        return ontology.ids[min(cands)]
    return ontology.ids[i] if i != 0 else "(root)"


def make_branch_of(ontology: Any, cfg: CoverageConfig):
    """``node id -> branch id``: the first of ``cfg.branches`` whose subtree holds the node
    (``(other)`` for none), else the node's ancestor at ``cfg.branch_depth``."""
    if not cfg.branches:
        memo: dict[str | None, str] = {}

        def at_depth(node: str | None) -> str:  # once per distinct node
            got = memo.get(node)
            if got is None:
                got = memo[node] = _branch_of(ontology, node, cfg.branch_depth)
            return got

        return at_depth
    unknown = [b for b in cfg.branches if b not in ontology]
    if unknown:
        from kg_rageval.base.errors import ConfigError

        raise ConfigError(f"coverage.branches: not in the ontology: {', '.join(unknown)}")
    subtrees = [
        (b, set(ontology.descendant_indices(ontology.index(b), include_self=True).tolist()))
        for b in cfg.branches
    ]

    def branch_of(node: str | None) -> str:
        if node is None:
            return "(no gold node)"
        i = ontology.id_index.get(node)
        if i is None:
            return "(not in ontology)"
        return next((b for b, sub in subtrees if i in sub), "(other)")

    return branch_of


def coverage_matrix(
    records: Iterable[Mapping[str, Any]], ontology: Any, corpus: list[dict] | None, cfg: CoverageConfig
) -> dict[str, Any]:
    """Records per (intent, doc type, branch) with the empty and thin cells listed
    (:class:`CoverageCounter` over ``records``)."""
    counter = CoverageCounter(ontology, corpus, cfg)
    counter.add(records)
    return counter.result()


class CoverageCounter:
    """The coverage matrix counted chunk by chunk: :meth:`add` the records in any number of
    batches (a streamed audit adds each chunk), :meth:`result` the matrix
    (:func:`coverage_matrix`). Each record adds one to its (intent, doc type, branch) cell;
    the counts are all it keeps."""

    def __init__(self, ontology: Any, corpus: list[dict] | None, cfg: CoverageConfig) -> None:
        doc_type: dict[str, str] = {}
        for d in corpus or []:
            t = d.get(cfg.type_field)
            if t is not None:
                doc_type[str(d["id"])] = str(t)
        self.ontology, self.cfg, self.doc_type = ontology, cfg, doc_type
        self.branch_of = make_branch_of(ontology, cfg)
        self.cells: dict[tuple[str, str, str], int] = {}

    def add(self, records: Iterable[Mapping[str, Any]]) -> None:
        cfg, doc_type, branch_of, cells = self.cfg, self.doc_type, self.branch_of, self.cells
        for r in records:
            raw_slices = r.get("slices")
            sl = raw_slices if isinstance(raw_slices, dict) else {}
            intent = str(sl.get(cfg.intent_slice, "(none)"))
            dt = sl.get(cfg.doc_type_slice)
            if dt is None:
                gold = (
                    (r.get("retrieval") or {}).get("gold") if isinstance(r.get("retrieval"), dict) else None
                )
                first = None
                if isinstance(gold, dict) and gold:
                    first = next(iter(gold))
                elif isinstance(gold, list) and gold:
                    first = gold[0]
                dt = doc_type.get(str(first)) if first is not None else None
            dt = str(dt) if dt is not None else "(none)"
            key = (intent, dt, branch_of(gold_node_of(r)))
            cells[key] = cells.get(key, 0) + 1

    def result(self) -> dict[str, Any]:
        ontology, cfg, cells = self.ontology, self.cfg, self.cells
        intents, types, branches = {k[0] for k in cells}, {k[1] for k in cells}, {k[2] for k in cells}
        # every branch at the configured depth is a column, even when no record reaches it
        if cfg.branches:
            all_branches = list(cfg.branches)
        else:
            all_branches = [
                ontology.ids[i] for i in np.flatnonzero(ontology.depth_min == cfg.branch_depth).tolist()
            ]
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


def relation_counts(runs: Mapping[str, FamilyRun]) -> dict[str, dict[str, int]]:
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


def category_diagnosis_of(runs: Mapping[str, FamilyRun], ontology: Any) -> dict[str, Any]:
    """Where the retrieval family's false exclusions come from: ``score retrieval``'s
    ``category_diagnosis`` (:func:`kg_rageval.families.retrieval.category_diagnosis`: counts and
    shares by cause and deepest common ancestor) of the audit's retrieval evaluation; ``{}`` when
    retrieval did not run or replayed no filters (no corpus)."""
    run = runs.get("retrieval")
    if run is None or run.status != "ran":
        return {}
    for ev in run.evaluations:
        if "fe_cause" in ev.details:
            from kg_rageval.families.retrieval import category_diagnosis

            return category_diagnosis(ev, ontology)
    return {}


def exclusion_attribution(
    runs: Mapping[str, FamilyRun],
    records: Iterable[Mapping[str, Any]],
    corpus: list[dict] | None,
    ontology: Any,
    *,
    branch_of: Any = None,
) -> dict[str, Any]:
    """Gold documents excluded before ranking, attributed to the filter (or entitlement) that
    removed them. Filters are replayed: ``within X`` keeps documents with a category in X's
    subtree (X included; the document's ``categories``); ``eq``/``in`` compare the document
    field. Entitlement: a document that sets a principal's field (e.g. ``tenant``) without the
    principal's value is excluded *for entitlement* — counted apart, since it is correct
    behaviour, not a false exclusion. A gold document the record's run retrieved although its
    logged filters exclude it is an *inconsistent filter log* (``inconsistent_filter_log``,
    with up to 20 ``(record, document)`` examples), never also counted as excluded.
    (:class:`ExclusionCounter` over ``records``; ``{}`` without a corpus.)"""
    counter = ExclusionCounter(corpus, ontology, branch_of=branch_of)
    counter.add(records)
    return counter.result()


class ExclusionCounter:
    """The exclusion attribution counted chunk by chunk (:func:`exclusion_attribution`):
    :meth:`add` records in any number of batches, in file order (the examples are the first
    20), :meth:`result` the attribution. It keeps the counts, the examples and the memoised
    verdicts."""

    def __init__(self, corpus: list[dict] | None, ontology: Any, *, branch_of: Any = None) -> None:
        self.active = bool(corpus)
        self.docs = {str(d["id"]): d for d in corpus or []}
        self.ontology, self.branch_of = ontology, branch_of
        self.by_field: dict[str, int] = {}
        self.by_branch: dict[str, int] = {}
        self.entitlement = 0
        self.n_gold = 0
        self.inconsistent = 0
        self.examples: list[list[str]] = []
        # (document, principal) and (document, filter) verdicts, read once per distinct pair
        # (records repeat them)
        self.hidden = _Memo(_entitlement_excluded, _principal_key)
        self.keeps = _Memo(_keeps, _filter_key, ontology)

    def add(self, records: Iterable[Mapping[str, Any]]) -> None:
        if not self.active:
            return
        docs, hidden, keeps, ontology, branch_of = (
            self.docs,
            self.hidden,
            self.keeps,
            self.ontology,
            self.branch_of,
        )
        by_field, by_branch, examples = self.by_field, self.by_branch, self.examples
        for r in records:
            ret = r.get("retrieval")
            if not isinstance(ret, dict):
                continue
            gold = ret.get("gold")
            gold_ids = list(gold) if isinstance(gold, (dict, list)) else []
            principal = ret.get("principal") or {}
            pkey: Any = None  # the principal's and the filters' memo keys, once per record
            fkeys: list[tuple[Mapping[str, Any], Any]] | None = None
            retrieved: set[str] | None = None  # read only when a filter excludes a gold document
            for gid in gold_ids:
                sgid = str(gid)
                doc = docs.get(sgid)
                if doc is None:
                    continue
                self.n_gold += 1
                if pkey is None:
                    pkey = hidden.key(principal)
                if hidden.get(sgid, doc, principal, pkey):
                    self.entitlement += 1
                    continue
                if fkeys is None:
                    fkeys = [(f, keeps.key(f)) for f in ret.get("filters") or [] if isinstance(f, dict)]
                for f, fkey in fkeys:
                    if not keeps.get(sgid, doc, f, fkey):
                        if retrieved is None:
                            retrieved = _run_ids(ret.get("run"))
                        if sgid in retrieved:  # the run proves the document passed
                            self.inconsistent += 1
                            if len(examples) < 20:
                                examples.append([str(r.get("id")), str(gid)])
                            break
                        fld = str(f.get("field"))
                        by_field[fld] = by_field.get(fld, 0) + 1
                        node = gold_node_of(r)
                        br = branch_of(node) if branch_of else _branch_of(ontology, node, 1)
                        by_branch[br] = by_branch.get(br, 0) + 1
                        break

    def result(self) -> dict[str, Any]:
        if not self.active:
            return {}
        return {
            "gold_documents": self.n_gold,
            "excluded_by_filter": dict(sorted(self.by_field.items(), key=lambda kv: -kv[1])),
            "excluded_by_branch": dict(sorted(self.by_branch.items(), key=lambda kv: -kv[1])),
            "excluded_by_entitlement": self.entitlement,
            "inconsistent_filter_log": self.inconsistent,
            "inconsistent_examples": self.examples,
        }


_SCALARS = (str, int, float, bool, type(None))


def _frozen(x: Any) -> Any:
    """A hashable stand-in for a JSON value (dicts and lists as sorted / ordered tuples), typed
    so that ``1``, ``1.0`` and ``True`` stay apart."""
    if type(x) in _SCALARS:
        return (type(x), x)
    if isinstance(x, Mapping):
        return (dict, tuple(sorted((str(k), _frozen(v)) for k, v in x.items())))
    if isinstance(x, (list, tuple)):
        return (list, tuple(_frozen(v) for v in x))
    return (type(x), id(x))  # anything else: never shared


def _filter_key(f: Mapping[str, Any]) -> Any:
    """What :func:`_keeps` reads of a filter: its field, op and value."""
    v = f.get("value")
    return (
        (f.get("field"), f.get("op", "eq"), type(v), v)
        if type(v) in _SCALARS
        else (f.get("field"), f.get("op", "eq"), _frozen(v))
    )


def _principal_key(principal: Mapping[str, Any]) -> Any:
    """What :func:`_entitlement_excluded` reads of a principal: its items."""
    items = tuple(principal.items())
    if all(type(v) in _SCALARS and type(k) is str for k, v in items):
        return tuple((k, type(v), v) for k, v in items)
    return _frozen(principal)


class _Memo:
    """``fn(doc, arg, *extra)`` memoised on ``(document id, key(arg))``: a corpus document's
    verdict for one principal or one filter is the same on every record that repeats them."""

    def __init__(self, fn: Any, key: Any, *extra: Any) -> None:
        self.fn, self.key, self.extra = fn, key, extra
        self.cache: dict[Any, bool] = {}

    def __call__(self, doc_id: str, doc: Mapping[str, Any], arg: Mapping[str, Any]) -> bool:
        return self.get(doc_id, doc, arg, self.key(arg))

    def get(self, doc_id: str, doc: Mapping[str, Any], arg: Mapping[str, Any], arg_key: Any) -> bool:
        """The verdict with ``arg``'s key already made (``self.key(arg)``: once per record)."""
        key = (doc_id, arg_key)
        got = self.cache.get(key)
        if got is None:
            got = self.cache[key] = bool(self.fn(doc, arg, *self.extra))
        return got


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
    raw_meta = doc.get("metadata")
    meta = raw_meta if isinstance(raw_meta, Mapping) else {}
    for key, want in principal.items():
        allowed = doc.get(key, meta.get(key))
        if allowed is None or want is None:
            continue
        vals = allowed if isinstance(allowed, list) else [allowed]
        if vals and want not in vals:
            return True
    return False


def _keeps(doc: Mapping[str, Any], f: Mapping[str, Any], ontology: Any) -> bool:
    field_: Any = f.get("field")
    op, value = f.get("op", "eq"), f.get("value")
    dv = doc.get(field_)
    if dv is None and field_ in ("category", "categories"):
        dv = doc.get("categories", doc.get("category"))
    vals = dv if isinstance(dv, list) else ([dv] if dv is not None else [])
    if op == "within":
        return any(
            isinstance(v, str)
            and v in ontology
            and (v == value or (value in ontology and ontology.is_ancestor(value, v)))
            for v in vals
        )
    if op == "in":
        allowed = value if isinstance(value, list) else [value]
        return any(v in allowed for v in vals)
    if op in ("eq", "=="):
        return value in vals
    if op in ("ne", "!="):
        return value not in vals
    return True
