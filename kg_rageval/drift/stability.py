"""Per-branch stability between two releases: which branches changed, and how much the
hierarchy metrics on them moved because of the ontology alone.

The same records (same gold labels, same predictions) are scored twice with the hierarchy
family: as they are under OLD, and re-based (:mod:`kg_rageval.drift.rebase`) under NEW. Records
the re-base flags on a gold id (retired, removed, cycle, fork, unknown) are left out of *both*
scorings and counted, so both sides score exactly the same records. Each side's rows roll up
its own hierarchy (:meth:`Evaluation.rollup`): a branch is a node at ``branch_depth`` and pools
the rows whose gold node lies in its subtree *in that release* (a node that moved to another
branch moves its rows with it). ``delta`` = metric under NEW − metric under OLD; a metric
undefined on one side is ``None`` with the reason, never 0. Branches that changed but hold no
record are listed too (rows 0, metrics missing). Deprecated or revoked ids are
scored where they stand (``on_status="flag"``, ``on_status_gold="flag"``) on both sides.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.drift.diff import OntologyDiff, diff_ontologies
from kg_rageval.drift.rebase import _Rebaser, build_mapping
from kg_rageval.ontology.model import Ontology

DEFAULT_METRICS = ("hierarchical_f1", "hierarchical_precision", "hierarchical_recall", "exact_accuracy")


def _metric_pair(old_m: Any, new_m: Any) -> dict[str, Any]:
    vo = old_m.value if old_m is not None else None
    vn = new_m.value if new_m is not None else None
    out: dict[str, Any] = {"old": vo, "new": vn, "delta": None if vo is None or vn is None else vn - vo}
    if out["delta"] is None:
        why = (
            (old_m.missing if old_m is not None and vo is None else None)
            or (new_m.missing if new_m is not None and vn is None else None)
            or "no rows in this branch"
        )
        out["missing"] = why
    return out


def stability(
    old: Ontology,
    new: Ontology,
    records: str | Path | Iterable[dict[str, Any]],
    *,
    branch_depth: int = 1,
    metrics: Iterable[str] | None = None,
    diff: OntologyDiff | None = None,
) -> dict[str, Any]:
    """The stability view (module docstring) as a JSON-ready dict: both releases, record
    counts, per-branch changed nodes, rows and metric deltas (largest |delta| first)."""
    from kg_rageval.records import read_records
    from kg_rageval.scoring import score

    recs = read_records(records) if isinstance(records, (str, Path)) else list(records)
    d = diff or diff_ontologies(old, new, branch_depth=branch_depth)
    mapping = build_mapping(old, new, diff=d)
    keep_old: list[dict[str, Any]] = []
    keep_new: list[dict[str, Any]] = []
    flagged = 0
    for r in recs:
        if not isinstance(r.get("labels"), dict):
            continue
        nr = copy.deepcopy(r)
        rb = _Rebaser(mapping)
        rb.record(nr)
        if any(t.res.flagged and t.side == "gold" for t in rb.touches):
            flagged += 1
            continue
        keep_old.append(r)
        keep_new.append(nr)
    names = tuple(metrics or DEFAULT_METRICS)

    def run(onto: Ontology, recs_: list[dict[str, Any]]):  # the family, through the one contract
        return score(
            "hierarchy",
            onto,
            recs_,
            on_status="flag",
            on_status_gold="flag",
            on_unknown="count",
            on_unknown_gold="count",
        ).single

    ev_old = run(old, keep_old) if keep_old else None
    ev_new = run(new, keep_new) if keep_new else None
    both = 0
    if ev_old is not None and ev_new is not None:
        common = np.intersect1d(ev_old.record_ids.astype(str), ev_new.record_ids.astype(str))
        ev_old = ev_old.subset(np.isin(ev_old.record_ids.astype(str), common))
        ev_new = ev_new.subset(np.isin(ev_new.record_ids.astype(str), common))
        both = int(common.size)
    branches_changed = d.branches_changed()
    by_kind = d.by_branch()
    rows: list[dict[str, Any]] = []
    scored = ev_old is not None and ev_new is not None and both > 0
    at_o: dict[str, Any] = {}
    at_n: dict[str, Any] = {}
    if scored and ev_old is not None and ev_new is not None:
        ro = ev_old.rollup(old, "gold_node", max_depth=branch_depth)
        rn = ev_new.rollup(new, "gold_node", max_depth=branch_depth)
        at_o = {k: v for k, v in ro.items() if v["depth"] == branch_depth}
        at_n = {k: v for k, v in rn.items() if v["depth"] == branch_depth}
    # every branch with rows under either release, and every branch that changed
    for b in sorted(set(at_o) | set(at_n) | set(branches_changed)):
        vo, vn = at_o.get(b), at_n.get(b)
        mo = vo["metrics"] if vo else {}
        mn = vn["metrics"] if vn else {}
        lab = (
            new.labels[new.id_index[b]]
            if b in new.id_index
            else (old.labels[old.id_index[b]] if b in old.id_index else None)
        )
        rows.append(
            {
                "branch": b,
                "label": lab,
                "changed_nodes": branches_changed.get(b, 0),
                "changes": {k: per[b] for k, per in by_kind.items() if per.get(b)},
                "rows": {"old": vo["n"] if vo else 0, "new": vn["n"] if vn else 0},
                "metrics": {m: _metric_pair(mo.get(m), mn.get(m)) for m in names},
            }
        )
    if scored and ev_old is not None and ev_new is not None:
        tm_o, tm_n = ev_old.metrics(), ev_new.metrics()
        total = {m: _metric_pair(tm_o.get(m), tm_n.get(m)) for m in names}
    else:
        total = {
            m: {"old": None, "new": None, "delta": None, "missing": "no record scored under both releases"}
            for m in names
        }

    def size(row: dict[str, Any]) -> tuple:
        deltas = [abs(v["delta"]) for v in row["metrics"].values() if v.get("delta") is not None]
        return (-(max(deltas) if deltas else 0.0), -row["changed_nodes"], row["branch"])

    rows.sort(key=size)
    return {
        "old": OntologyDiff.release(old),
        "new": OntologyDiff.release(new),
        "records": len(recs),
        "with_labels": len(keep_old) + flagged,
        "scored_both": both,
        "flagged": flagged,
        "left_out": len(recs) - both,
        "branch_depth": branch_depth,
        "metrics": list(names),
        "changes": d.counts(),
        "total": total,
        "branches": rows,
    }
