"""Shadow evaluation: candidate outputs recorded beside production on the same traffic,
compared offline, paired by record id, per branch (``docs/monitoring_review.md``).

Nothing here calls a tool or writes to the system under test: both sides are records files
that were already written. Per-record values (``None``: not measured on that record, the pair
left out of that metric and counted):

* ``faithfulness``: 1 when every judged claim is supported (or ``review.faithful``), else 0;
* ``refusal``: ``answer.refused`` as 0/1;
* ``latency_ms``: ``system.latency_ms.total``; ``cost_usd``: ``system.cost_usd``.

Each metric is compared per branch (the production row's) and ``(all)`` with the retrieval
family's paired statistics (:func:`kg_rageval.families.retrieval.compare.paired_compare`:
percentile bootstrap interval of the mean delta, sign-flip permutation p; ``delta =
candidate - production``); p-values across branches are Holm-adjusted
(:func:`kg_rageval.families.retrieval.significance.holm`). A branch with fewer than
``min_pairs`` pairs is insufficient evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kg_rageval.monitor import performance as perf
from kg_rageval.monitor.traffic import TrafficRow

ALL = "(all)"


def _system(row: TrafficRow, *path: str) -> float | None:
    cur: Any = row.record.get("system")
    for p in path:
        cur = cur.get(p) if isinstance(cur, Mapping) else None
    return float(cur) if isinstance(cur, (int, float)) and not isinstance(cur, bool) else None


def _b(v: bool | None) -> float | None:
    return None if v is None else float(v)


METRICS: dict[str, Callable[[TrafficRow], float | None]] = {
    "faithfulness": lambda r: _b(perf.faithful(r)),
    "refusal": lambda r: _b(perf.RATES["refusal_rate"](r)),
    "latency_ms": lambda r: _system(r, "latency_ms", "total"),
    "cost_usd": lambda r: _system(r, "cost_usd"),
}


def compare_shadow(
    production: Sequence[TrafficRow],
    candidate: Sequence[TrafficRow],
    *,
    metrics: Sequence[str] = tuple(METRICS),
    min_pairs: int = perf.MIN_ROWS,
    n_resamples: int = 2000,
    n_permutations: int = 10000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    from kg_rageval.families.retrieval.compare import paired_compare
    from kg_rageval.families.retrieval.significance import holm

    prod = {r.record_id: r for r in production}
    cand = {r.record_id: r for r in candidate}
    ids = sorted(set(prod) & set(cand))
    out: dict[str, Any] = {
        "n_production": len(prod),
        "n_candidate": len(cand),
        "n_paired": len(ids),
        "only_production": len(set(prod) - set(cand)),
        "only_candidate": len(set(cand) - set(prod)),
        "delta": "candidate - production",
        "correction": "Holm over branches, per metric",
        "metrics": {},
    }
    for m in metrics:
        fn = METRICS[m]
        groups: dict[str, tuple[dict[str, float], dict[str, float]]] = {}
        unmeasured = 0
        for i in ids:
            a, b = fn(prod[i]), fn(cand[i])
            if a is None or b is None:
                unmeasured += 1
                continue
            for g in (ALL, prod[i].branch):
                ga, gb = groups.setdefault(g, ({}, {}))
                ga[i], gb[i] = a, b
        rows: dict[str, Any] = {}
        tested: list[str] = []
        for g, (va, vb) in sorted(groups.items()):
            if len(va) < min_pairs:
                rows[g] = {"n": len(va), "status": perf.INSUFFICIENT}
                continue
            pc = paired_compare(
                va,
                vb,
                metric=m,
                n_resamples=n_resamples,
                n_permutations=n_permutations,
                level=level,
                seed=seed,
            )
            rows[g] = {**pc.to_dict(), "status": "compared"}
            if g != ALL:
                tested.append(g)
        for g, p in zip(tested, holm([rows[g]["p_value"] for g in tested])):
            rows[g]["p_holm"] = p
        out["metrics"][m] = {"pairs_unmeasured": unmeasured, "groups": rows}
    return out
