"""Sampled filter false-exclusion rate (FER) on reviewed production queries, per branch,
with intervals, from a review queue's inclusion probabilities (``docs/monitoring_review.md``).

A *reviewed filtered query* is a production record drawn into a review queue
(:mod:`kg_rageval.monitor.review`, ``kg-rageval monitor sample``) to which the reviewer
added the relevant documents (``retrieval.gold``) beside what the system logged
(``retrieval.run``, ``retrieval.filters``, ``retrieval.principal``). Whether it is a false
exclusion is the retrieval family's definition, not a new one: the records are scored with
:func:`kg_rageval.families.retrieval.score_retrieval` against the corpus, and its per-query
sums ``fe_q_eligible`` (eligible relevant gold and a replayed filter log) and
``fe_q_excluded`` (every eligible relevant gold document excluded by the filters) are the
denominator and numerator of ``filter_false_exclusion_rate``.

Per branch (and ``(all)``; with ``by_window`` per window too) three estimates, each saying
which strata it comes from:

* ``weighted``: the ratio of inverse-probability-weighted totals
  ``sum(excluded / pi) / sum(eligible / pi)`` over every reviewed item of the mixed sample
  (the Hájek form of FER, a ratio itself, so the population size is not needed), with a
  Wilson interval at the Kish effective sample size ``(sum w)^2 / sum w^2`` (an
  approximation: equal weights give the plain Wilson interval). Unbiased for the population
  only when the design has a random stratum (every row could be drawn): without it the
  estimate is ``insufficient evidence`` and the warning of :data:`review.NO_RANDOM_WARNING`
  is given.
* ``random_stratum``: the plain rate of the items the random stratum drew, Wilson interval.
* ``by_stratum``: the plain rate within each stratum that drew items: that stratum only,
  not a population estimate (shown so a reader sees where the weighted figure comes from).

A cell with fewer than ``min_rows`` eligible reviewed queries is ``insufficient evidence``,
never a rate. A reviewed record that is not in the queue has no inclusion probability: it is
left out and counted (``not_in_queue``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from kg_rageval.audit.intervals import wilson
from kg_rageval.monitor.review import NO_RANDOM_WARNING, Item
from kg_rageval.monitor.traffic import TrafficRow
from kg_rageval.records import Record

ALL = "(all)"
INSUFFICIENT = "insufficient evidence"
MIN_ROWS = 30
WEIGHTED_FROM = "all strata, weighted by 1/inclusion_probability (Hájek ratio of weighted totals)"


@dataclass(frozen=True)
class FerObservation:
    """One reviewed record as the retrieval family scored it."""

    record_id: str
    window: str
    branch: str
    eligible: bool
    excluded: bool


def observations(rows: Sequence[TrafficRow], ontology: Any, corpus: Any) -> list[FerObservation]:
    """The reviewed rows (those whose record has a ``retrieval`` section) scored with the
    retrieval family against ``corpus``: eligible / excluded as ``fe_q_eligible`` /
    ``fe_q_excluded``."""
    from kg_rageval.families.retrieval import score_retrieval

    reviewed = [r for r in rows if isinstance(r.record.get("retrieval"), Mapping)]
    if not reviewed:
        return []
    ev = score_retrieval(ontology, [cast(Record, r.record) for r in reviewed], corpus)
    by_id = {r.record_id: r for r in reviewed}
    elig = ev.stats["fe_q_eligible"]
    excl = ev.stats["fe_q_excluded"]
    out = []
    for i, rid in enumerate(ev.record_ids.tolist()):
        r = by_id[str(rid)]
        out.append(FerObservation(r.record_id, r.window, r.branch, bool(elig[i] > 0), bool(excl[i] > 0)))
    return out


def load_queue(path: str | Path) -> dict[str, Item]:
    """A review queue written by ``kg-rageval monitor sample`` (JSONL of id, window, branch,
    strata, stratum_probabilities, inclusion_probability) as ``{id: Item}``."""
    from kg_rageval.records import iter_record_chunks, record_error

    out: dict[str, Item] = {}
    for chunk in iter_record_chunks(path, 65536):
        for r in chunk:
            pi = r.get("inclusion_probability")
            if isinstance(pi, bool) or not isinstance(pi, (int, float)) or not 0 < pi <= 1:
                raise record_error(r, "inclusion_probability", f"expected a number in (0, 1], found {pi!r}")
            strata = r.get("strata")
            if not isinstance(strata, list) or not strata or not all(isinstance(s, str) for s in strata):
                raise record_error(r, "strata", "expected a non-empty list of stratum names")
            probs = r.get("stratum_probabilities")
            if not isinstance(probs, Mapping) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in probs.values()
            ):
                raise record_error(r, "stratum_probabilities", "expected an object of stratum: probability")
            out[str(r["id"])] = Item(
                str(r["id"]),
                str(r.get("window", "")),
                str(r.get("branch", "")),
                list(strata),
                {str(k): float(v) for k, v in probs.items()},
                float(pi),
            )
    return out


def _rate(k: int, n: int, level: float, min_rows: int, source: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"n": n, "excluded": k, "from": source}
    if n < min_rows:
        entry.update(status=INSUFFICIENT, estimate=k / n if n else None, ci=None)
        return entry
    entry.update(status="estimated", estimate=k / n, ci=list(wilson(k, n, level)))
    return entry


def weighted_rate(
    pairs: Sequence[tuple[float, bool]], level: float = 0.95
) -> tuple[float, float, tuple[float, float]]:
    """``(estimate, effective n, Wilson interval)`` of ``sum(w x) / sum(w)`` over
    ``(weight, excluded)`` pairs; the interval is Wilson's at the Kish effective size."""
    sw = sum(w for w, _ in pairs)
    sw2 = sum(w * w for w, _ in pairs)
    p = sum(w for w, x in pairs if x) / sw
    n_eff = sw * sw / sw2
    return p, n_eff, wilson(min(p * n_eff, n_eff), n_eff, level)


def cell_estimate(
    obs: Sequence[tuple[FerObservation, Item]], *, level: float = 0.95, min_rows: int = MIN_ROWS
) -> dict[str, Any]:
    """The three estimates (module docstring) of one cell of reviewed queue items."""
    elig = [(o, it) for o, it in obs if o.eligible]
    out: dict[str, Any] = {
        "n_reviewed": len(obs),
        "n_eligible": len(elig),
        "n_excluded": sum(o.excluded for o, _ in elig),
        "n_not_eligible": len(obs) - len(elig),
    }
    with_random = all(it.stratum_probabilities.get("random", 0) > 0 for _, it in elig)
    strata = sorted({s for _, it in elig for s in it.strata})
    source = f"{WEIGHTED_FROM}; strata {', '.join(strata) or 'none'}"
    if len(elig) < min_rows:
        w: dict[str, Any] = {
            "status": INSUFFICIENT,
            "reason": f"{len(elig)} eligible reviewed queries (< {min_rows})",
            "estimate": None,
            "ci": None,
        }
    elif not with_random:
        w = {"status": INSUFFICIENT, "reason": NO_RANDOM_WARNING, "estimate": None, "ci": None}
    else:
        p, n_eff, ci = weighted_rate([(1 / it.inclusion_probability, o.excluded) for o, it in elig], level)
        w = {"status": "estimated", "estimate": p, "ci": list(ci), "n_effective": n_eff}
    out["weighted"] = {**w, "n": len(elig), "from": source}
    rnd = [o for o, it in elig if "random" in it.strata]
    out["random_stratum"] = _rate(
        sum(o.excluded for o in rnd), len(rnd), level, min_rows, "random stratum only"
    )
    out["by_stratum"] = {
        s: _rate(
            sum(o.excluded for o in ss),
            len(ss),
            level,
            min_rows,
            "random stratum only" if s == "random" else f"{s} stratum only: not a population estimate",
        )
        for s in strata
        for ss in [[o for o, it in elig if s in it.strata]]
    }
    if not with_random and elig:
        out["warnings"] = [NO_RANDOM_WARNING]
    return out


def sampled_fer(
    obs: Iterable[FerObservation],
    queue: Mapping[str, Item],
    *,
    by_window: bool = False,
    level: float = 0.95,
    min_rows: int = MIN_ROWS,
) -> dict[str, Any]:
    """Sampled FER per branch and ``(all)`` (with ``by_window``: per window and branch)."""
    cells: dict[tuple[str, str], list[tuple[FerObservation, Item]]] = {}
    missing: list[str] = []
    for o in obs:
        it = queue.get(o.record_id)
        if it is None:
            missing.append(o.record_id)
            continue
        w = o.window if by_window else ALL
        cells.setdefault((w, ALL), []).append((o, it))
        cells.setdefault((w, o.branch), []).append((o, it))
    results = [
        {"window": w, "branch": b, **cell_estimate(c, level=level, min_rows=min_rows)}
        for (w, b), c in sorted(cells.items())
    ]
    return {
        "metric": "filter_false_exclusion_rate",
        "definition": "retrieval family: fe_q_excluded / fe_q_eligible on reviewed filtered queries",
        "level": level,
        "min_rows": min_rows,
        "interval": "Wilson; weighted: Wilson at the Kish effective sample size",
        "not_in_queue": len(missing),
        "not_in_queue_ids": missing[:20],
        "results": results,
    }


def fer_cells(report: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """``(window, branch) -> result`` of a :func:`sampled_fer` report."""
    return {(r["window"], r["branch"]): dict(r) for r in report["results"]}
