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

import numpy as np

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


# ------------------------------------------------------------ score fusion (ranx's conventions)

NORMS = ("min-max", "zmuv", "sum", "none")
"""Per-query normalisations, as ranx's ``norm_switch`` (``minmax``/``min_max`` and
``zscore``/``z-score`` are accepted spellings of ``min-max`` and ``zmuv``)."""
_NORM_ALIASES = {
    "min-max": "min-max",
    "minmax": "min-max",
    "min_max": "min-max",
    "zmuv": "zmuv",
    "zscore": "zmuv",
    "z-score": "zmuv",
    "sum": "sum",
    "none": "none",
}
METHODS = ("rrf", "wsum", "combsum", "combmnz", "combmax", "combanz")
"""Fusion methods of :func:`fuse` (ranx's ``rrf``, ``wsum``, ``sum``, ``mnz``, ``max``,
``anz``); ``convex`` is ``wsum`` with weights (α, 1 − α)."""
_METHOD_ALIASES = {
    "rrf": "rrf",
    "wsum": "wsum",
    "convex": "wsum",
    "combsum": "combsum",
    "sum": "combsum",
    "combmnz": "combmnz",
    "mnz": "combmnz",
    "combmax": "combmax",
    "max": "combmax",
    "combanz": "combanz",
    "anz": "combanz",
}
_FLOOR = 1e-9
"""ranx's floor on a normalisation's denominator (min-max spread, sd, sum above the minimum)."""


def norm_name(method: str | None) -> str:
    """The canonical normalisation name (``None`` → ``"none"``) or an :class:`InputError`."""
    key = "none" if method is None else str(method).lower()
    if key not in _NORM_ALIASES:
        raise InputError(f"normalisation must be one of {NORMS}, got {method!r}")
    return _NORM_ALIASES[key]


def method_name(method: str) -> str:
    key = str(method).lower()
    if key not in _METHOD_ALIASES:
        raise InputError(f"fusion method must be one of {(*METHODS, 'convex')}, got {method!r}")
    return _METHOD_ALIASES[key]


def normalise(scores: Mapping[str, float], method: str | None = "min-max") -> dict[str, float]:
    """One query's scores normalised as ranx does (same formulas, same floor):

    * ``min-max``: (s − min) / max(max − min, 1e-9) — all scores equal: 0.0 each;
    * ``zmuv`` (z-score): (s − mean) / max(sd, 1e-9), population sd — all equal: 0.0 each;
    * ``sum``: (s − min) / max(Σs − n·min, 1e-9);
    * ``none``: the scores unchanged.
    """
    import math

    m = norm_name(method)
    for d, s in scores.items():
        if not isinstance(s, (int, float)) or isinstance(s, bool) or not math.isfinite(s):
            raise InputError(f"document {d!r}: score must be a finite number, found {s!r}")
    if not scores or m == "none":
        return {d: float(s) for d, s in scores.items()}
    v = np.asarray(list(scores.values()), dtype=float)
    if m == "min-max":
        lo = v.min()
        den = max(v.max() - lo, _FLOOR)
        return {d: (s - lo) / den for d, s in zip(scores, v.tolist())}
    if m == "zmuv":
        mu = np.mean(v)
        den = max(float(np.std(v)), _FLOOR)
        return {d: (s - mu) / den for d, s in zip(scores, v.tolist())}
    lo = v.min()
    den = max(float(np.sum(v)) - lo * len(v), _FLOOR)
    return {d: (s - lo) / den for d, s in zip(scores, v.tolist())}


def trec_ranking(scores: Mapping[str, float]) -> list[str]:
    """Documents in trec_eval's order: score descending, then document id descending."""
    return [d for d, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def fuse_query(
    lanes: Sequence[Mapping[str, float]],
    method: str = "rrf",
    *,
    norm: str | None = "min-max",
    k: float = 60,
    weights: Sequence[float] | None = None,
) -> dict[str, float]:
    """Fuse one query's scored lanes (``[{doc: score}, ...]``) into ``{doc: fused score}``.

    Equal to ranx's ``fuse(runs, norm=..., method=..., params=...)`` on the same query:

    * ``rrf``: Σ over the lanes that return d of 1 / (k + rank), rank 1-based in the lane's
      trec_eval order (:func:`trec_ranking`); normalisation cannot change it (it is monotone);
    * ``wsum``: Σ wᵢ · normᵢ(d); ``combsum``: Σ normᵢ(d) — a document a lane did not return
      contributes 0 from that lane (after normalisation: ranx's convention);
    * ``combmnz``: Σ normᵢ(d) over the lanes that return d, times their number;
    * ``combmax``: max of normᵢ(d) over the lanes that return d;
    * ``combanz``: mean of normᵢ(d) over the lanes that return d.
    """
    m = method_name(method)
    if m == "rrf":
        if not (k > 0):
            raise InputError(f"RRF k must be positive, got {k!r}")
        out: dict[str, float] = {}
        for lane in lanes:
            for rank, d in enumerate(trec_ranking(lane), start=1):
                out[d] = out.get(d, 0.0) + 1.0 / (k + rank)
        return out
    normed = [normalise(lane, norm) for lane in lanes]
    docs = dict.fromkeys(d for lane in normed for d in lane)
    if m == "wsum":
        if weights is None or len(weights) != len(lanes):
            raise InputError(
                f"wsum needs one weight per run: {len(lanes)} runs, "
                f"{'no' if weights is None else len(weights)} weights"
            )
        w = [float(x) for x in weights]
        return {d: sum(wi * lane.get(d, 0.0) for wi, lane in zip(w, normed)) for d in docs}
    if m == "combsum":
        return {d: sum(lane.get(d, 0.0) for lane in normed) for d in docs}
    out = {}
    for d in docs:
        present = [lane[d] for lane in normed if d in lane]
        if m == "combmnz":
            out[d] = sum(present) * len(present)
        elif m == "combmax":
            out[d] = max(present)
        else:
            out[d] = sum(present) / len(present)
    return out


def fuse(
    runs: Sequence[Mapping[str, Mapping[str, float]]],
    method: str = "rrf",
    *,
    norm: str | None = "min-max",
    k: float = 60,
    weights: Sequence[float] | None = None,
) -> dict[str, dict[str, float]]:
    """Fuse N runs (``{qid: {doc: score}}``) per query with :func:`fuse_query`: every query of
    any run (in first-seen order); a query a run lacks gets nothing from that run (ranx
    refuses runs whose query ids differ; on runs with the same queries the two agree)."""
    if len(runs) < 2:
        raise InputError(f"fusion needs at least two runs, got {len(runs)}")
    qids = dict.fromkeys(q for run in runs for q in run)
    return {
        q: fuse_query([run.get(q, {}) for run in runs], method, norm=norm, k=k, weights=weights) for q in qids
    }


def convex(
    a: Mapping[str, float],
    b: Mapping[str, float],
    alpha: float,
    *,
    norm: str = "min-max",
    missing: float = 0.0,
) -> dict[str, float]:
    """``alpha · norm(a) + (1 − alpha) · norm(b)`` per document (one query's scored lanes): ranx's
    ``wsum`` with weights (α, 1 − α). A document only one lane returned gets ``missing`` (after
    normalisation; default 0.0, ranx's convention) for the other."""
    if not 0.0 <= alpha <= 1.0:
        raise InputError(f"alpha must lie in [0, 1], got {alpha!r}")
    if missing == 0.0:
        return fuse_query([a, b], "wsum", norm=norm, weights=(alpha, 1.0 - alpha))
    na, nb = normalise(a, norm), normalise(b, norm)
    docs = dict.fromkeys([*na, *nb])
    return {d: alpha * na.get(d, missing) + (1.0 - alpha) * nb.get(d, missing) for d in docs}


def convex_runs(
    a: Mapping[str, Mapping[str, float]],
    b: Mapping[str, Mapping[str, float]],
    alpha: float,
    *,
    norm: str = "min-max",
) -> dict[str, dict[str, float]]:
    """:func:`convex` for every query of either run (``{qid: {doc: score}}``)."""
    return {q: convex(a.get(q, {}), b.get(q, {}), alpha, norm=norm) for q in dict.fromkeys([*a, *b])}


def alpha_sweep(
    qrels: Mapping[str, Mapping[str, float]],
    a: Mapping[str, Mapping[str, float]],
    b: Mapping[str, Mapping[str, float]],
    *,
    measure: str = "nDCG@10",
    norm: str = "min-max",
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
