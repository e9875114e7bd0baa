"""Reciprocal Rank Fusion (Cormack, Clarke and Buettcher, SIGIR 2009).

``score(d) = Σ_lanes 1 / (k + rank_lane(d))`` with 1-based ranks, summed over the lanes that
return ``d``; ``k = 60`` by default. Score-agnostic: only positions matter.

Tie order (deterministic, documented): equal fused scores are ordered by the best (smallest)
rank the document reached in any lane, then by the lane in which it first appeared (lane order
as given), then by document id ascending. Each lane must list unique ids (k counts unique
documents); a repeated id raises :class:`~kg_rageval.errors.InputError` naming the lane.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..errors import InputError


def rrf(rankings: Sequence[Sequence[str]], k: float = 60, *, depth: int | None = None) -> list[tuple[str, float]]:
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


def rrf_runs(lanes: Mapping[str, Mapping[str, Sequence[str]]], k: float = 60, *, depth: int | None = None) -> dict[str, list[str]]:
    """Fuse per-query runs of several named lanes: ``{lane: {qid: [doc, ...]}}`` →
    ``{qid: [doc, ...]}`` (queries of any lane; lanes in the mapping's order)."""
    qids: dict[str, None] = {}
    for run in lanes.values():
        qids.update(dict.fromkeys(run))
    out: dict[str, list[str]] = {}
    for q in qids:
        out[q] = [d for d, _ in rrf([run.get(q, []) for run in lanes.values()], k, depth=depth)]
    return out
