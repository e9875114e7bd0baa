"""The records that drive each failing gate (the report's "Records driving the failures").

For a failed gate ``m OP t`` on the evaluation that owns ``m`` (restricted to the gate's
slice or branch), each record is finalized alone (its stats summed over its rows) and gets

* ``value`` = ``m`` on that record alone (records where ``m`` is undefined are left out: they
  do not move it), ``weight`` = its denominator (1 for a mean); for a ratio of sums this is
  computed for all records at once (:func:`per_record_values`);
* ``deficit`` = ``weight·(t − value)`` for ``>=``/``>`` (``weight·(value − t)`` for
  ``<=``/``<``): how many numerator units the record lacks to meet the threshold on its own.

Listed: the records with deficit > 0, worst first (largest deficit, then record id), at most
``report.failing_records`` per gate. For a gate that is *missing* evidence, and for a failed
``<family>.missing_run_rate`` budget gate, the records are the family's unscored ones with their
reasons (missing runs first). Each entry carries the record's ``id``, ``query``, ``gold`` and
``prediction`` (read from the family's section, shortened) and ``reason`` (the family's
per-row details for that record, e.g. the confusion relation, the attribution, the schema
failure kinds, or the unscored reason).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.audit.config import AuditConfig
    from kg_rageval.audit.gates import GateResult

RecordSource = Iterable[Mapping[str, Any]] | Callable[[set], Mapping[str, Mapping[str, Any]]]
"""The audited records (a list), or a lookup ``ids -> {id: record}`` of just the records asked for."""

MAX_TEXT = 240
MAX_ITEMS = 10


def _short(value: Any) -> Any:
    """A JSON value cut to a readable size (strings, lists, mappings)."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 1] + "…"
    if isinstance(value, (list, tuple)):
        out = [_short(v) for v in list(value)[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            out.append(f"… {len(value) - MAX_ITEMS} more")
        return out
    if isinstance(value, Mapping):
        text = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
        return value if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"
    return _short(str(value))


def _sec(record: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    s = record.get(name)
    return s if isinstance(s, Mapping) else {}


def _ids(items: Any) -> Any:
    if isinstance(items, list):
        return [m.get("id") if isinstance(m, Mapping) else m for m in items]
    if isinstance(items, Mapping):
        return list(items)
    return items


def _run_ids(run: Any) -> Any:
    if isinstance(run, Mapping):
        return list(run)
    if isinstance(run, list):
        return [
            e
            if isinstance(e, str)
            else (
                e.get("id") if isinstance(e, Mapping) else (e[0] if isinstance(e, (list, tuple)) and e else e)
            )
            for e in run
        ]
    return run


def gold_and_prediction(family: str, record: Mapping[str, Any]) -> tuple[Any, Any]:
    """What the family compares on one record: ``(gold, prediction)``."""
    ans, ref, ret = _sec(record, "answer"), _sec(record, "reference"), _sec(record, "retrieval")
    if family == "linking":
        m = _sec(record, "mentions")
        return _ids(m.get("gold")), _ids(m.get("pred"))
    if family in ("retrieval", "preference"):
        return _ids(ret.get("gold")), _run_ids(ret.get("run"))
    if family == "conformance":
        return ref.get("output"), ans.get("output")
    if family == "provenance":
        return _ids(ret.get("gold")), ans.get("citations") if ans.get("citations") is not None else ans.get(
            "text"
        )
    if family == "generation":
        pred = "(refused)" if ans.get("refused") is True else ans.get("text")
        gold = ref.get("answer")
        if gold is None and ref.get("answerable") is False:
            gold = "(unanswerable)"
        return gold, pred
    labels = _sec(record, "labels")
    if labels:
        return labels.get("gold"), labels.get("pred")
    return None, None


REASON_FIRST = (
    "outcome",
    "relation",
    "attribution",
    "fe_cause",
    "fe_filter",
    "filter_inconsistent",
    "failure_kinds",
    "failure_mode",
    "completeness",
    "reason",
    "status",
    "untraceable_at",
)
"""Detail (or key) columns that say why a record failed, shown first in the ``reason`` text;
positions and scores (``*_start``, ``*_end``, ``*_score``) are left out."""


def _reason(ev: Any, rows: np.ndarray) -> str:
    parts: list[str] = []
    # the rows of the stored columns (Columns.take: a coded column's rows are read without
    # building the whole column, a spilled one's from its file); linking's outcome is a key
    cols = {**{n: ev.keys for n in REASON_FIRST if n in ev.keys}, **dict.fromkeys(ev.details, ev.details)}
    names = [n for n in REASON_FIRST if n in cols] + [
        n for n in cols if n not in REASON_FIRST and not n.endswith(("_start", "_end", "_score"))
    ]
    for name in names:
        vals = []
        for v in cols[name].take(name, rows).tolist():
            if v is None or v == "" or v is False or (isinstance(v, float) and v != v):
                continue
            txt = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str, sort_keys=True)
            if txt not in vals:
                vals.append(txt)
        if vals:
            parts.append(f"{name}: {', '.join(vals[:3])}")
    return _short("; ".join(parts)) if parts else ""


def _shown(family: str, record: Mapping[str, Any] | None) -> dict[str, Any]:
    """What an entry shows of its record: ``query``, ``gold``, ``prediction`` (shortened)."""
    rec = record or {}
    gold, pred = gold_and_prediction(family, rec)
    return {
        "query": _short(rec.get("query", rec.get("text"))),
        "gold": _short(gold),
        "prediction": _short(pred),
    }


def _entry(rid: str, **extra: Any) -> dict[str, Any]:
    """An entry whose record fields are filled in once the listed records are known
    (:func:`_fill`: only the records shown are looked up)."""
    return {"id": rid, "query": None, "gold": None, "prediction": None, **extra}


def _fill(out: list[dict[str, Any]], records: RecordSource) -> None:
    """Fill in each listed entry's ``query``, ``gold`` and ``prediction`` from its record:
    ``records`` is the record list or a lookup ``ids -> {id: record}`` (a streamed audit reads
    just these records again)."""
    wanted = {e["id"] for item in out for e in item["records"]}
    if not wanted:
        return
    if callable(records):
        by_id = records(wanted)
    else:
        by_id = {str(r.get("id")): r for r in records if str(r.get("id")) in wanted}
    for item in out:
        for e in item["records"]:
            e.update(_shown(item["family"], by_id.get(e["id"])))


def _unscored(run: Any, limit: int, patterns: set[str]) -> list[dict]:
    from kg_rageval.records import MISSING_RUN_CODES

    codes = {c.value for c in MISSING_RUN_CODES}
    seen: set[str] = set()
    items: list[tuple[int, str, str]] = []
    for e in getattr(run, "missing_sections", ()):
        seen.add(e["record_id"])
        items.append((0, e["record_id"], e["reason"]))
    for ev in run.evaluations:
        for u in ev.unscored:
            rid = str(u.get("record_id", u.get("id")))
            if rid in seen:
                continue
            seen.add(rid)
            reason = str(u.get("reason", "unscored"))
            code = u.get("code")
            missing = str(code) in codes if code is not None else reason.strip().lower() in patterns
            items.append((0 if missing else 1, rid, reason))
    items.sort()
    return [
        _entry(rid, value=None, deficit=None, reason=reason, missing_run=missing == 0)
        for missing, rid, reason in items[:limit]
    ]


def worst_first(
    deficit: np.ndarray, driving: np.ndarray, ids_of: Callable[[np.ndarray], np.ndarray], limit: int
) -> list[int]:
    """The ``limit`` records of ``driving`` with the largest ``deficit``, ties by record id
    (``ids_of(records)``: their ids as text), worst first: the head of
    ``sorted(driving, key=lambda j: (-deficit[j], id[j]))`` without a Python object per
    driving record (a partition keeps the records at least as bad as the ``limit``-th)."""
    d = deficit[driving]
    if len(driving) > limit:
        kth = np.partition(d, len(d) - limit)[len(d) - limit]
        keep = d >= kth
        driving, d = driving[keep], d[keep]
    order = np.lexsort((ids_of(driving), -d))[:limit]
    return driving[order].tolist()


def _records_of(ev: Any, mask: np.ndarray | None) -> tuple[Any, Any]:
    """``(evaluation, per-record stats)`` of a gate's scope: ``ev`` and its cached view, or
    ``ev`` and a view of its rows in ``mask`` (a scope, without a copy of its rows), or
    ``ev.subset(mask)`` and its view for an evaluation that subsets its own way."""
    from kg_rageval.audit.evidence import plain_rows
    from kg_rageval.results.record_stats import RecordStats

    if mask is None:
        return ev, ev.record_stats()
    if plain_rows(ev):
        return ev, RecordStats(ev, np.flatnonzero(mask))
    sub = ev.subset(mask)
    return sub, sub.record_stats()


MAX_NONLINEAR = 20_000
"""Records finalized one by one for a metric that is not a ratio of two linear sums."""


def per_record_values(
    finalize: Any, metric: str, names: list[str], mat: Any
) -> tuple[np.ndarray | None, np.ndarray]:
    """``(value, weight)`` of ``metric`` on each row of ``mat`` (one record's summed stats per
    row, or a :class:`~kg_rageval.results.record_stats.RecordStats` view of them; NaN where undefined).
    A metric with a verified form (a ratio or mean of linear sums, a count, an F1 of two such
    ratios: :mod:`kg_rageval.results.forms`) is computed for all records at once; any other is
    finalized record by record, up to :data:`MAX_NONLINEAR` records (else ``(None, ...)``).
    The weight is the record's denominator (1 without one)."""
    from kg_rageval.results.forms import metric_values

    got = metric_values(finalize, names, mat, [metric], loop_limit=MAX_NONLINEAR)[metric]
    if got is None:
        return None, np.ones(len(mat))
    values, den = got
    return values, np.where(np.isnan(den) | (den == 0), 1.0, den)


def _delta_records(
    g: Any, baseline: Mapping[str, Any] | None, limit: int
) -> tuple[str | None, int, list[dict[str, Any]]]:
    """The records driving a failed ``delta:`` gate: the paired per-query deltas in the failing
    direction (regressions first), from the baseline comparison's ``worst_queries``."""
    worst = (baseline or {}).get("worst_queries") or {}
    name = g.metric[len("delta:") :]
    key = name if name in worst else next((k for k in worst if k.endswith("." + name)), None)
    if key is None:
        return None, 0, []
    higher = g.op in (">=", ">")
    rows = [r for r in worst[key] if (r["delta"] < 0 if higher else r["delta"] > 0)]
    rows.sort(key=lambda r: (r["delta"] if higher else -r["delta"], r["record_id"]))
    out = [
        _entry(
            str(r["record_id"]),
            value=r["candidate"],
            baseline=r["baseline"],
            deficit=abs(r["delta"]),
            reason=f"candidate {r['candidate']:.4g} vs baseline {r['baseline']:.4g}",
        )
        for r in rows[:limit]
    ]
    return key, len(rows), out


def failing_records(
    results: list[GateResult],
    index: Any,
    ontology: Any,
    records: RecordSource,
    config: AuditConfig,
    budget_gates: Iterable[str] = (),
    baseline: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """``[{"gate", "status", "family", "metric", "n_driving", "records": [...]}]`` for every gate
    that did not pass (see the module docstring); ``budget_gates``: the texts of the audit's
    own ``<family>.missing_run_rate`` budget gates. ``records``: the audited records, or a
    lookup ``ids -> {id: record}`` (called once, with the ids of the entries listed)."""
    out = _failing(results, index, ontology, config, budget_gates, baseline)
    _fill(out, records)
    return out


def _failing(
    results: list[GateResult],
    index: Any,
    ontology: Any,
    config: AuditConfig,
    budget_gates: Iterable[str],
    baseline: Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    from kg_rageval.audit.evidence import node_mask, slice_mask

    budget_gates = set(budget_gates)
    limit = config.report.failing_records
    if limit <= 0:
        return []
    patterns = {p.strip().lower() for p in config.missing_runs.reasons}
    out: list[dict[str, Any]] = []
    for res in results:
        g = res.gate
        if res.status == "pass" or g.metric == "gates_configured":
            continue
        head = {"gate": str(g), "status": res.status}
        if g.metric.startswith("delta:"):
            key, n, recs = _delta_records(g, baseline, limit)
            if key is not None:
                out.append(
                    {
                        **head,
                        "family": key.split(".", 1)[0],
                        "metric": g.metric,
                        "n_driving": n,
                        "records": recs,
                        "note": "paired per-query deltas (the 50 largest changes)",
                    }
                )
            continue
        fam_budget = g.metric[: -len(".missing_run_rate")] if str(g) in budget_gates else None
        if fam_budget is not None and fam_budget in index.runs:
            run = index.runs[fam_budget]
            recs = [e for e in _unscored(run, 10**9, patterns) if e["missing_run"]]
            out.append(
                {
                    **head,
                    "family": fam_budget,
                    "metric": "missing_run_rate",
                    "n_driving": len(recs),
                    "records": recs[:limit],
                }
            )
            continue
        owner, _ = index.owner(g.metric)
        if owner is None:
            continue
        ev = owner.ev
        if g.scope is not None:
            kind, _, rest = g.scope.partition(":")
            if kind == "slice":
                name, _, wanted = rest.partition("=")
                mask = slice_mask(ev, name, wanted)
            else:
                mask = node_mask(ev, ontology, rest) if rest in ontology else None
            if mask is None or not mask.any():
                out.append(
                    {**head, "family": owner.family, "metric": owner.metric, "n_driving": 0, "records": []}
                )
                continue
        else:
            mask = None
        if res.status == "missing" or res.observed is None:
            recs = _unscored(index.runs[owner.family], limit, patterns)
            out.append(
                {
                    **head,
                    "family": owner.family,
                    "metric": owner.metric,
                    "n_driving": len(recs),
                    "records": recs,
                }
            )
            continue
        ev, view = _records_of(ev, mask)
        values, weights = per_record_values(ev.family.finalize, owner.metric, view.names, view)
        sign = 1.0 if g.op in (">=", ">") else -1.0
        if values is None:
            out.append(
                {
                    **head,
                    "family": owner.family,
                    "metric": owner.metric,
                    "n_driving": None,
                    "records": [],
                    "note": f"not ranked: {len(view)} records and {owner.metric!r} is not a ratio of sums "
                    f"(at most {MAX_NONLINEAR} records are finalized one by one)",
                }
            )
            continue
        ok = np.isfinite(values)
        deficit = np.where(ok, sign * weights * (g.threshold - np.where(ok, values, 0.0)), 0.0)
        driving = np.flatnonzero(ok & (deficit > 1e-12))
        del ok
        recs = []
        for j in worst_first(deficit, driving, view.ids, limit):
            recs.append(
                _entry(
                    view.ids([j])[0].item(),
                    value=float(values[j]),
                    weight=float(weights[j]),
                    deficit=float(deficit[j]),
                    reason=_reason(ev, view.record_rows(j)),
                )
            )
        out.append(
            {
                **head,
                "family": owner.family,
                "metric": owner.metric,
                "n_driving": len(driving),
                "records": recs,
            }
        )
    return out
