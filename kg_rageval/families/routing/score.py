"""The routing family (issue #31, "Routing"): was the query sent to the right downstream
pipeline?

Record section (``docs/routing.md``; each part optional, at least one present)::

    "routing": {"intent": {"gold": "lookup", "pred": "compare"},
                "route":  {"gold": "VH:sedan", "pred": "VH:car"},
                "mode":   {"gold": "one_shot", "pred": "iterative", "cost": 3.0}}

Conventions (each record is one row of sufficient statistics, so slices and ontology branches
pool exactly):

* **Intent** — single-label classification over free labels (letters, digits, ``_``). Per
  label ``l``: ``precision = tp / (tp + fp)``, ``recall = tp / (tp + fn)``,
  ``f1 = 2·tp / (2·tp + fp + fn)``, ``support = tp + fn``, over the labels named as gold or
  predicted — scikit-learn's ``classification_report(..., zero_division=np.nan)``: an empty
  denominator is **missing evidence** (a never-predicted intent has no precision, a
  never-gold one no recall), never 0 (Honest numbers). ``macro`` is the mean of the defined
  per-label values, ``weighted`` their support-weighted mean (undefined ones and their weight
  left out, as scikit-learn's ``_nanaverage``); ``micro`` pools tp/fp/fn (single-label: equal
  to ``accuracy``).
* **Route** — router classes that are ontology nodes. ``accuracy``: exact node; ``wu_palmer``:
  Wu-Palmer of (gold, pred) with identical nodes 1 (hierarchy kernels, ``identical="one"``);
  ``hierarchical_precision/recall/f1``: micro hP/hR over ancestor-or-self sets, roots left out
  (Kosmopoulos et al. 2015, :func:`~kg_rageval.families.hierarchy.kernels.hierarchical_counts`).
  Each wrong route falls in one category of the confusion taxonomy, counted apart:
  ``ancestor`` (routed to a more general node), ``descendant`` (more specific),
  ``sibling_branch`` (no line of descent, but a common ancestor below the root: the same
  branch), ``unrelated_branch`` (only the root, or nothing, in common), ``unknown_id`` (the
  predicted node is not in the ontology: a fault of the system under test, counted, scored 0
  credit and an opaque element of one in hP). A gold node the ontology lacks is an input error
  naming file, record and field (``routing.route.gold``). Rows are keyed by the gold node
  (``gold_node``), so every metric rolls up per branch.
* **Mode** — adaptive retrieval (after Adaptive-RAG, Jeong et al. 2024): the labels
  ``no_retrieval < one_shot < iterative`` are ordered by the retrieval they spend.
  ``over_retrieval_rate``: predicted mode above gold; ``under_retrieval_rate``: below; counted
  apart. Per-mode P/R/F1 as for intents; ``<mode>.cost.mean``: mean recorded ``cost`` of the
  records *predicted* in that mode (what the router's choice cost), ``cost.mean`` over all
  records with a cost.

Unscored: a record without a ``routing`` section (``no_section``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from itertools import compress, repeat
from operator import is_not
from typing import Any

import numpy as np

from kg_rageval.base.errors import ConfigError
from kg_rageval.ontology import IdOptions, IdResolver
from kg_rageval.records import Record, located, record_error
from kg_rageval.records.fields import _EMPTY, _GET, all_slice_keys, section, section_columns
from kg_rageval.records.fields import stated_row_keys as row_keys
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation, columns_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, harmonic, mean_of, ratio

MODES = ("no_retrieval", "one_shot", "iterative")
"""Adaptive retrieval modes, in the order of the retrieval they spend."""
TAXONOMY = ("ancestor", "descendant", "sibling_branch", "unrelated_branch", "unknown_id")
"""Confusion categories of a wrong route (module docstring)."""
_LABEL = re.compile(r"[A-Za-z0-9_]+")
_PARTS = {
    "intent": frozenset({"gold", "pred"}),
    "route": frozenset({"gold", "pred"}),
    "mode": frozenset({"gold", "pred", "cost"}),
}
_PART_NAMES = frozenset(_PARTS)


def class_report(s: Mapping[str, float], prefix: str, labels: Iterable[str]) -> dict[str, Metric]:
    """Per-label and averaged P/R/F1 from the stats ``<prefix>:<l>:tp|gold|pred`` (module
    docstring; equal to scikit-learn's ``classification_report`` with ``zero_division=nan``)."""
    out: dict[str, Metric] = {}
    per: dict[str, list[tuple[float | None, float]]] = {"precision": [], "recall": [], "f1": []}
    tp_all = pred_all = gold_all = 0.0
    for lab in labels:
        tp, g, p = (s.get(f"{prefix}:{lab}:{k}", 0.0) for k in ("tp", "gold", "pred"))
        tp_all, gold_all, pred_all = tp_all + tp, gold_all + g, pred_all + p
        ms = {
            "precision": ratio(f"{prefix}.{lab}.precision", tp, p, missing=f"{lab} never predicted"),
            "recall": ratio(f"{prefix}.{lab}.recall", tp, g, missing=f"{lab} never gold"),
            "f1": ratio(f"{prefix}.{lab}.f1", 2 * tp, g + p, missing=f"{lab} neither gold nor predicted"),
        }
        for k, m in ms.items():
            out[m.name] = m
            per[k].append((m.value, g))
        out[f"{prefix}.{lab}.support"] = Metric(f"{prefix}.{lab}.support", g)
    for k, vals in per.items():
        got = [(v, w) for v, w in vals if v is not None]
        why = f"no {prefix} label with a defined {k}"
        out[f"{prefix}.macro.{k}"] = mean_of(
            f"{prefix}.macro.{k}", math.fsum(v for v, _ in got), len(got), missing=why
        )
        out[f"{prefix}.weighted.{k}"] = ratio(
            f"{prefix}.weighted.{k}",
            math.fsum(v * w for v, w in got),
            math.fsum(w for _, w in got),
            missing=why + " and support",
        )
    mp = ratio(f"{prefix}.micro.precision", tp_all, pred_all, missing=f"no {prefix} decision")
    mr = ratio(f"{prefix}.micro.recall", tp_all, gold_all, missing=f"no {prefix} decision")
    out[mp.name], out[mr.name] = mp, mr
    out[f"{prefix}.micro.f1"] = harmonic(f"{prefix}.micro.f1", mp, mr)
    return out


class RoutingFamily(Family):
    """Stats: the fixed counts below plus, per intent label ``l`` the records name,
    ``intent:<l>:tp|gold|pred`` (read back from the sums' keys, so merged partitions report
    every label either side named)."""

    name = "routing"
    version = "1"
    stats = (
        "intent_n",
        "intent_correct",
        "route_n",
        "route_correct",
        "route_wup_sum",
        "route_h_inter",
        "route_h_pred",
        "route_h_gold",
        *(f"route_{t}" for t in TAXONOMY),
        "mode_n",
        "mode_correct",
        "mode_over",
        "mode_under",
        "mode_cost_sum",
        "mode_n_cost",
        *(f"mode:{m}:{k}" for m in MODES for k in ("tp", "gold", "pred", "cost_sum", "n_cost")),
    )

    def __init__(self, intents: Iterable[str] = ()):
        self.intents = tuple(sorted(set(intents)))
        self.stats = (
            *RoutingFamily.stats,
            *(f"intent:{i}:{k}" for i in self.intents for k in ("tp", "gold", "pred")),
        )

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        out: dict[str, Metric] = {}
        labels = sorted({k.split(":")[1] for k in s if k.startswith("intent:")})
        no_i = "no record with an intent decision"
        out["intent.accuracy"] = ratio("intent.accuracy", s["intent_correct"], s["intent_n"], missing=no_i)
        out.update(class_report(s, "intent", labels))
        no_r = "no record with a route decision"
        n = s["route_n"]
        out["route.accuracy"] = ratio("route.accuracy", s["route_correct"], n, missing=no_r)
        out["route.wu_palmer.mean"] = mean_of("route.wu_palmer.mean", s["route_wup_sum"], n, missing=no_r)
        hp = ratio(
            "route.hierarchical_precision",
            s["route_h_inter"],
            s["route_h_pred"],
            missing="no predicted node below the root",
        )
        hr = ratio(
            "route.hierarchical_recall",
            s["route_h_inter"],
            s["route_h_gold"],
            missing="no gold node below the root",
        )
        out[hp.name], out[hr.name] = hp, hr
        out["route.hierarchical_f1"] = harmonic("route.hierarchical_f1", hp, hr)
        for t in TAXONOMY:
            out[f"route.{t}_rate"] = ratio(f"route.{t}_rate", s[f"route_{t}"], n, missing=no_r)
        no_m = "no record with a mode decision"
        m = s["mode_n"]
        out["mode.accuracy"] = ratio("mode.accuracy", s["mode_correct"], m, missing=no_m)
        out["mode.over_retrieval_rate"] = ratio("mode.over_retrieval_rate", s["mode_over"], m, missing=no_m)
        out["mode.under_retrieval_rate"] = ratio(
            "mode.under_retrieval_rate", s["mode_under"], m, missing=no_m
        )
        out.update(class_report(s, "mode", MODES))
        for md in MODES:
            out[f"mode.{md}.cost.mean"] = mean_of(
                f"mode.{md}.cost.mean",
                s[f"mode:{md}:cost_sum"],
                s[f"mode:{md}:n_cost"],
                missing=f"no record routed to {md} with a cost",
            )
        out["mode.cost.mean"] = mean_of(
            "mode.cost.mean", s["mode_cost_sum"], s["mode_n_cost"], missing="no record with a cost"
        )
        return out


def _parts(rec: Record) -> dict[str, dict[str, Any]]:
    """The checked parts of a record's routing section."""
    sec = section(rec, "routing")
    if not isinstance(sec, dict):
        raise record_error(rec, "routing", f"expected an object, found {type(sec).__name__}")
    bad = set(sec) - set(_PARTS)
    if bad:
        raise record_error(rec, f"routing.{sorted(bad)[0]}", "unknown field; expected intent, route or mode")
    if not sec:
        raise record_error(rec, "routing", "empty; expected at least one of intent, route or mode")
    out: dict[str, dict[str, Any]] = {}
    for part, part_sec in sec.items():
        f = f"routing.{part}"
        if not isinstance(part_sec, dict):
            raise record_error(rec, f, f"expected an object, found {type(part_sec).__name__}")
        unk = set(part_sec) - _PARTS[part]
        if unk:
            raise record_error(
                rec, f"{f}.{sorted(unk)[0]}", f"unknown field; expected {', '.join(sorted(_PARTS[part]))}"
            )
        for side in ("gold", "pred"):
            v = part_sec.get(side)
            if not isinstance(v, str) or not v:
                raise record_error(rec, f"{f}.{side}", f"expected a non-empty string, found {v!r}")
            if part == "intent" and not _LABEL.fullmatch(v):
                raise record_error(rec, f"{f}.{side}", f"intent labels are letters, digits and _, not {v!r}")
            if part == "mode" and v not in MODES:
                raise record_error(rec, f"{f}.{side}", f"expected one of {', '.join(MODES)}, not {v!r}")
        cost = part_sec.get("cost")
        if cost is not None and (
            isinstance(cost, bool)
            or not isinstance(cost, (int, float))
            or not math.isfinite(cost)
            or cost < 0
        ):
            raise record_error(rec, f"{f}.cost", f"expected a number >= 0, found {cost!r}")
        out[part] = part_sec
    return out


def _route_stats(
    ontology: Any, resolver: IdResolver, recs: list[Record], golds: list[str], preds: list[str]
) -> tuple[list[str], dict[str, np.ndarray]]:
    """The route stats of the records ``recs`` (each with a route part ``golds[k]`` →
    ``preds[k]``): the gold node of each and one column per ``route_*`` stat."""
    from kg_rageval.families.hierarchy.kernels import (
        ANCESTOR,
        CHILD,
        DESCENDANT,
        EXACT,
        PARENT,
        hierarchical_counts,
        pair_measures,
    )

    g = resolver.resolve(golds, "gold", lambda k: located(recs[k], "routing.route.gold")).idx
    p = resolver.resolve(preds, "pred", lambda k: located(recs[k], "routing.route.pred")).idx
    n = len(g)
    known = p >= 0
    gi, pi = g[known], p[known]
    _, codes, wup, _ = pair_measures(ontology, gi, pi, identical="one")
    inter, npred, ngold = hierarchical_counts(ontology, gi, pi)
    _, _, ngold_all = hierarchical_counts(ontology, g, np.full(n, -1, dtype=np.int64))
    codes = np.asarray(codes)
    inter = np.asarray(inter, dtype=float)

    def on_known(v: np.ndarray, unknown: float = 0.0) -> np.ndarray:
        out = np.full(n, unknown)
        out[known] = v
        return out

    sib = ~np.isin(codes, (EXACT, PARENT, ANCESTOR, CHILD, DESCENDANT))
    cols = {
        "route_n": np.ones(n),
        "route_h_gold": np.asarray(ngold_all, dtype=float),
        "route_unknown_id": (~known).astype(float),
        # an unknown prediction is an opaque element with no ancestor: one predicted element
        "route_h_pred": on_known(np.asarray(npred, dtype=float), 1.0),
        "route_correct": on_known((codes == EXACT).astype(float)),
        "route_wup_sum": on_known(np.asarray(wup, dtype=float)),
        "route_h_inter": on_known(inter),
        "route_ancestor": on_known(np.isin(codes, (PARENT, ANCESTOR)).astype(float)),
        "route_descendant": on_known(np.isin(codes, (CHILD, DESCENDANT)).astype(float)),
        "route_sibling_branch": on_known((sib & (inter > 0)).astype(float)),
        "route_unrelated_branch": on_known((sib & (inter <= 0)).astype(float)),
    }
    ids = ontology.ids
    return [ids[int(x)] for x in g.tolist()], cols


def _route_rows(ontology: Any, resolver: IdResolver, recs: list[Record], rows: list[dict[str, Any]]) -> None:
    """Fill the route stats of ``rows`` (aligned with ``recs``, each with a route part)."""
    golds = [r["routing"]["route"]["gold"] for r in recs]
    preds = [r["routing"]["route"]["pred"] for r in recs]
    nodes, cols = _route_stats(ontology, resolver, recs, golds, preds)
    lists = {k: v.tolist() for k, v in cols.items()}
    for k, row in enumerate(rows):
        row["gold_node"] = nodes[k]
        for stat, vals in lists.items():
            row[stat] = vals[k]


def _present(col: list[dict[str, Any]]) -> np.ndarray:
    """Whether each entry of a column read with the default ``_EMPTY`` is there."""
    return np.fromiter(map(is_not, col, repeat(_EMPTY)), dtype=bool, count=len(col))


def _pair_column(
    secs: list[dict[str, Any]], part: str
) -> tuple[np.ndarray, list[str], list[str], list[dict[str, Any]]] | None:
    """The positions, gold and predicted labels and objects of ``part`` of the routing
    sections ``secs``; ``None`` when some part is not in the well-formed shape :func:`_parts`
    accepts (the record loop then raises the first problem)."""
    col = list(map(_GET, secs, repeat(part), repeat(_EMPTY)))
    if not set(map(type, col)) <= {dict}:
        return None
    mask = _present(col)
    objs = list(compress(col, mask))
    if not all(map(_PARTS[part].issuperset, objs)):
        return None
    gold = list(map(_GET, objs, repeat("gold")))
    pred = list(map(_GET, objs, repeat("pred")))
    if not set(map(type, gold)) | set(map(type, pred)) <= {str}:  # None: absent
        return None
    labels = set(gold) | set(pred)
    if part == "intent" and not all(_LABEL.fullmatch(x) for x in labels):
        return None
    if part == "mode" and not labels <= set(MODES):
        return None
    if part == "route" and "" in labels:
        return None
    return np.flatnonzero(mask), gold, pred, objs


def _codes(values: list[str], labels: Iterable[str]) -> np.ndarray:
    code = {x: i for i, x in enumerate(labels)}
    return np.fromiter(map(code.__getitem__, values), dtype=np.int64, count=len(values))


def _score_columns(ontology: Any, records: list[Record], ids: dict[str, Any]) -> Evaluation | None:
    """:func:`score_routing` read from the records' columns
    (:class:`~kg_rageval.records.fields.RecordColumns`): per-label counts as comparisons of
    label codes, no row dict a record. The same evaluation, or ``None`` when a column is not in
    its well-formed shape (the record loop then raises the first problem as it always did)."""
    chunk = section_columns(records, "routing")
    if chunk is None:
        return None
    cols, rid, secs, has = chunk
    at = np.flatnonzero(has)
    present = list(compress(secs, has))
    if not present:
        return None
    if not all(map(_PART_NAMES.issuperset, present)) or not all(present):
        return None
    parts = {part: _pair_column(present, part) for part in ("intent", "mode", "route")}
    if any(v is None for v in parts.values()):
        return None
    n = len(present)
    stats: dict[str, np.ndarray] = {}

    def put(name: str, pos: np.ndarray, values: Any) -> None:
        col = stats.get(name)
        if col is None:
            col = stats[name] = np.zeros(n)
        col[pos] = values

    intents: list[str] = []
    got = parts["intent"]
    if got is not None and got[0].size:
        pos, gold, pred, _ = got
        intents = sorted(set(gold) | set(pred))
        g, p = _codes(gold, intents), _codes(pred, intents)
        put("intent_n", pos, 1.0)
        put("intent_correct", pos, g == p)
        for c, lab in enumerate(intents):
            put(f"intent:{lab}:gold", pos, g == c)
            put(f"intent:{lab}:pred", pos, p == c)
            put(f"intent:{lab}:tp", pos, (g == c) & (p == c))
    got = parts["mode"]
    if got is not None and got[0].size:
        pos, gold, pred, objs = got
        g, p = _codes(gold, MODES), _codes(pred, MODES)
        d = p - g
        put("mode_n", pos, 1.0)
        put("mode_correct", pos, d == 0)
        put("mode_over", pos, d > 0)
        put("mode_under", pos, d < 0)
        costs = list(map(_GET, objs, repeat("cost")))
        if not set(map(type, costs)) <= {int, float, type(None)}:
            return None
        with_cost = np.fromiter(map(is_not, costs, repeat(None)), dtype=bool, count=len(costs))
        try:
            cost = np.asarray(list(compress(costs, with_cost)), dtype=float)
        except OverflowError:
            return None
        if not (np.isfinite(cost).all() and (cost >= 0).all()):
            return None
        cpos = pos[with_cost]
        put("mode_cost_sum", cpos, cost)
        put("mode_n_cost", cpos, 1.0)
        pc = p[with_cost]
        for c, md in enumerate(MODES):
            put(f"mode:{md}:gold", pos, g == c)
            put(f"mode:{md}:pred", pos, p == c)
            put(f"mode:{md}:tp", pos, (g == c) & (p == c))
            put(f"mode:{md}:cost_sum", cpos, np.where(pc == c, cost, 0.0))
            put(f"mode:{md}:n_cost", cpos, pc == c)
    keys = cols.key_columns(at)
    got = parts["route"]
    if got is not None and got[0].size:
        if ontology is None:
            raise ConfigError("routing: route decisions name ontology nodes; the family needs the ontology")
        pos, gold, pred, _ = got
        resolver = IdResolver(ontology, IdOptions.of(**ids))
        nodes, route = _route_stats(ontology, resolver, [records[k] for k in at[pos].tolist()], gold, pred)
        for stat, vals in route.items():
            put(stat, pos, vals)
        gold_nodes = keys["gold_node"].copy()
        gold_nodes[pos] = nodes
        keys["gold_node"] = gold_nodes
    else:
        IdOptions.of(**ids)
    family = RoutingFamily(intents)
    names = sorted(set(all_slice_keys(records)) | {"gold_node"})
    none = np.full(n, None, dtype=object)
    unscored = [
        unscored_entry(rid[k], "no routing section", Reason.NO_SECTION) for k in np.flatnonzero(~has).tolist()
    ]
    return columns_evaluation(
        family,
        [rid[k] for k in at.tolist()],
        [stats.get(s, np.zeros(n)) for s in family.stats],
        keys={k: keys.get(k, none) for k in names},
        unscored=unscored,
    )


def score_routing(ontology: Any, records: Iterable[Record], **ids: Any) -> Evaluation:
    """One row per record with a routing section (module docstring for every convention). The
    ontology is needed when a record has a ``route`` part (a ConfigError otherwise)."""
    records = list(records)
    ev = _score_columns(ontology, records, ids)
    if ev is not None:
        return ev
    rows: list[dict[str, Any]] = []
    routed: list[tuple[Record, dict[str, Any]]] = []
    unscored = []
    for rec in records:
        if rec.get("routing") is None:
            unscored.append(unscored_entry(rec["id"], "no routing section", Reason.NO_SECTION))
            continue
        parts = _parts(rec)
        row: dict[str, Any] = {"record_id": rec["id"], **row_keys(rec)}
        if "intent" in parts:
            gl, pr = parts["intent"]["gold"], parts["intent"]["pred"]
            row["intent_n"], row["intent_correct"] = 1, int(gl == pr)
            row[f"intent:{gl}:gold"] = 1
            row[f"intent:{pr}:pred"] = 1
            if gl == pr:
                row[f"intent:{gl}:tp"] = 1
        if "mode" in parts:
            gl, pr = parts["mode"]["gold"], parts["mode"]["pred"]
            d = MODES.index(pr) - MODES.index(gl)
            row.update(mode_n=1, mode_correct=int(d == 0), mode_over=int(d > 0), mode_under=int(d < 0))
            row[f"mode:{gl}:gold"] = 1
            row[f"mode:{pr}:pred"] = 1
            if d == 0:
                row[f"mode:{gl}:tp"] = 1
            cost = parts["mode"].get("cost")
            if cost is not None:
                row["mode_cost_sum"], row["mode_n_cost"] = float(cost), 1
                row[f"mode:{pr}:cost_sum"], row[f"mode:{pr}:n_cost"] = float(cost), 1
        if "route" in parts:
            routed.append((rec, row))
        rows.append(row)
    if routed:
        if ontology is None:
            raise ConfigError("routing: route decisions name ontology nodes; the family needs the ontology")
        _route_rows(
            ontology,
            IdResolver(ontology, IdOptions.of(**ids)),
            [r for r, _ in routed],
            [w for _, w in routed],
        )
    else:
        IdOptions.of(**ids)
    intents = {k.split(":")[1] for r in rows for k in r if k.startswith("intent:")}
    keys = sorted(
        set(all_slice_keys(records))
        | {k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")}
    )
    return build_evaluation(RoutingFamily(intents), rows, keys=keys, unscored=unscored)
