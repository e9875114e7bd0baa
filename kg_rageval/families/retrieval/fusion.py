"""Reciprocal Rank Fusion (Cormack, Clarke and Buettcher, SIGIR 2009).

``score(d) = Σ_lanes 1 / (k + rank_lane(d))`` with 1-based ranks, summed over the lanes that
return ``d``; ``k = 60`` by default. Score-agnostic: only positions matter.

Tie order (deterministic, documented): equal fused scores are ordered by the best (smallest)
rank the document reached in any lane, then by the lane in which it first appeared (lane order
as given), then by document id ascending. Each lane must list unique ids (k counts unique
documents); a repeated id raises :class:`~kg_rageval.base.errors.InputError` naming the lane.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kg_rageval.base.errors import InputError


def rrf(
    rankings: Sequence[Sequence[str]], k: float = 60, *, depth: int | None = None
) -> list[tuple[str, float]]:
    """Fuse ranked lists; returns ``[(doc, score), ...]`` best first.

    ``depth`` cuts each lane to its first ``depth`` documents before fusing (``None``: all).

    >>> dense = ["d3", "d7", "d1", "d4", "d2", "d9", "d10"]
    >>> sparse = ["d2", "d3", "d8", "d1", "d11", "d4", "d6"]
    >>> [d for d, _ in rrf([dense, sparse])[:3]]
    ['d3', 'd2', 'd1']
    """
    if not (k > 0):
        raise InputError(f"RRF k must be positive, got {k!r}")
    scores: dict[str, float] = {}
    best: dict[str, tuple[int, int]] = {}
    for lane, ranking in enumerate(rankings):
        ids = list(ranking)[: depth if depth is not None else None]
        if len(ids) != len(set(ids)):
            seen: set[str] = set()
            dup = next(d for d in ids if d in seen or seen.add(d))  # type: ignore[func-returns-value]
            raise InputError(f"RRF lane {lane}: document {dup!r} is listed more than once")
        for rank, d in enumerate(ids, start=1):
            scores[d] = scores.get(d, 0.0) + 1.0 / (k + rank)
            b = best.get(d)
            if b is None:
                best[d] = (rank, lane)
            elif rank < b[0]:
                best[d] = (rank, b[1])
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]][0], best[kv[0]][1], kv[0]))


def rrf_runs(
    lanes: Mapping[str, Mapping[str, Sequence[str]]], k: float = 60, *, depth: int | None = None
) -> dict[str, list[str]]:
    """Fuse per-query runs of several named lanes: ``{lane: {qid: [doc, ...]}}`` →
    ``{qid: [doc, ...]}`` (queries of any lane; lanes in the mapping's order)."""
    qids: dict[str, None] = {}
    for run in lanes.values():
        qids.update(dict.fromkeys(run))
    out: dict[str, list[str]] = {}
    for q in qids:
        out[q] = [d for d, _ in rrf([run.get(q, []) for run in lanes.values()], k, depth=depth)]
    return out


# ------------------------------------------------------------ score fusion (convex combination)

NORMS = ("minmax", "zscore")


def normalise(scores: Mapping[str, float], method: str = "minmax") -> dict[str, float]:
    """Per-query score normalisation: ``minmax`` (s − min) / (max − min) (all equal: 1.0 each),
    ``zscore`` (s − mean) / sd (population sd; all equal: 0.0 each)."""
    if method not in NORMS:
        raise InputError(f"normalisation must be one of {NORMS}, got {method!r}")
    if not scores:
        return {}
    import math

    v = list(scores.values())
    for d, s in scores.items():
        if not isinstance(s, (int, float)) or isinstance(s, bool) or not math.isfinite(s):
            raise InputError(f"document {d!r}: score must be a finite number, found {s!r}")
    if method == "minmax":
        lo, hi = min(v), max(v)
        if hi == lo:
            return dict.fromkeys(scores, 1.0)
        return {d: (s - lo) / (hi - lo) for d, s in scores.items()}
    mu = sum(v) / len(v)
    sd = math.sqrt(sum((x - mu) ** 2 for x in v) / len(v))
    if sd == 0:
        return dict.fromkeys(scores, 0.0)
    return {d: (s - mu) / sd for d, s in scores.items()}


def convex(
    a: Mapping[str, float],
    b: Mapping[str, float],
    alpha: float,
    *,
    norm: str = "minmax",
    missing: float | None = None,
) -> dict[str, float]:
    """``alpha · norm(a) + (1 − alpha) · norm(b)`` per document (one query's scored lanes). A
    document only one lane returned gets ``missing`` for the other (default: that lane's
    minimum normalised score, i.e. 0 for min-max)."""
    if not 0.0 <= alpha <= 1.0:
        raise InputError(f"alpha must lie in [0, 1], got {alpha!r}")
    na, nb = normalise(a, norm), normalise(b, norm)
    fa = missing if missing is not None else (min(na.values()) if na else 0.0)
    fb = missing if missing is not None else (min(nb.values()) if nb else 0.0)
    docs = dict.fromkeys([*na, *nb])
    return {d: alpha * na.get(d, fa) + (1.0 - alpha) * nb.get(d, fb) for d in docs}


def convex_runs(
    a: Mapping[str, Mapping[str, float]],
    b: Mapping[str, Mapping[str, float]],
    alpha: float,
    *,
    norm: str = "minmax",
) -> dict[str, dict[str, float]]:
    """:func:`convex` for every query of either run (``{qid: {doc: score}}``)."""
    return {q: convex(a.get(q, {}), b.get(q, {}), alpha, norm=norm) for q in dict.fromkeys([*a, *b])}


def alpha_sweep(
    qrels: Mapping[str, Mapping[str, float]],
    a: Mapping[str, Mapping[str, float]],
    b: Mapping[str, Mapping[str, float]],
    *,
    measure: str = "nDCG@10",
    norm: str = "minmax",
    alphas: Sequence[float] | None = None,
    rel_level: int = 1,
) -> dict:
    """Evaluate the convex fusion for each α on the labelled queries (those in ``qrels``):
    ``{"measure", "norm", "alphas": [{"alpha", "value", "n"}], "best": {...},
    "lane_a": value, "lane_b": value}``. α = 1 is lane A alone, α = 0 lane B (after the same
    normalisation, so the same ranking). Means follow the default aggregation (queries with
    a relevant document). Pick α on tuning queries and report on held-out ones."""
    from kg_rageval.families.retrieval.measures import aggregate, compute
    from kg_rageval.families.retrieval.runs import Qrels, Run

    grid = list(alphas) if alphas is not None else [i / 10 for i in range(11)]
    q = Qrels.from_dict(qrels)
    out: list[dict[str, Any]] = []
    for al in grid:
        fused = convex_runs(a, b, float(al), norm=norm)
        pq = compute(q, Run.from_dict(fused, vocab=q.vocab), [measure], rel_level=rel_level)
        agg = aggregate(pq)
        name = str(pq.specs[0])
        out.append({"alpha": float(al), "value": agg.values[name], "n": agg.n[name]})
    lanes: dict[str, Any] = {}
    for key, run in (("lane_a", a), ("lane_b", b)):
        pq = compute(q, Run.from_dict(run, vocab=q.vocab), [measure], rel_level=rel_level)
        lanes[key] = aggregate(pq).values[str(pq.specs[0])]
    valid = [r for r in out if r["value"] is not None]
    best = max(valid, key=lambda r: (r["value"], -abs(r["alpha"] - 0.5))) if valid else None
    return {
        "measure": measure,
        "norm": norm,
        "alphas": out,
        "best": best,
        **lanes,
        "beats_both_lanes": bool(best and all(v is not None and best["value"] > v for v in lanes.values())),
    }
