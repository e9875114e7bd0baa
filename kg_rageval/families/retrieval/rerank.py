"""Reranking delta (seed article, part 4): a reranked run against its candidate run.

A reranker only reorders what the first stage retrieved, so the comparison is valid only on
identical candidate sets: for every query both runs must hold the same documents (a query in
only one run, or with different sets, is refused with the query named, unless
``allow_mismatch=True``, which drops those queries and counts them). On the paired queries
with a relevant document (the default aggregation), ``ΔnDCG@k``, ``ΔRR`` (MRR) and ``ΔP@1``
= reranked − candidate per query, each with the bootstrap CI of the mean delta, the
randomisation-test p-value and wins/ties/losses (:func:`.compare.paired_compare`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kg_rageval.base.errors import InputError

DEFAULT_MEASURES = ("nDCG@10", "RR", "P@1")


def rerank_delta(
    qrels: Mapping[str, Mapping[str, float]],
    candidate: Mapping[str, Mapping[str, float]],
    reranked: Mapping[str, Mapping[str, float]],
    *,
    measures: Sequence[str] = DEFAULT_MEASURES,
    allow_mismatch: bool = False,
    rel_level: int = 1,
    **kw: Any,
) -> dict[str, Any]:
    """``{"n_queries", "n_mismatched", "deltas": {measure: PairedComparison.to_dict()}}``;
    runs are ``{qid: {doc: score}}``. Other keywords go to :func:`.compare.paired_compare`."""
    from kg_rageval.families.retrieval.compare import paired_compare
    from kg_rageval.families.retrieval.measures import compute, scored_mask
    from kg_rageval.families.retrieval.runs import Qrels, Run

    bad = []
    for q in dict.fromkeys([*candidate, *reranked]):
        if set(candidate.get(q, {})) != set(reranked.get(q, {})) or (q in candidate) != (q in reranked):
            bad.append(q)
    if bad and not allow_mismatch:
        q = bad[0]
        a, b = set(candidate.get(q, {})), set(reranked.get(q, {}))
        raise InputError(
            f"reranking delta: query {q!r} has different candidate sets "
            f"({len(a - b)} only in the candidate run, {len(b - a)} only in the reranked run); "
            f"{len(bad)} such queries (allow_mismatch=True drops and counts them)"
        )
    drop = set(bad)
    qr = {q: g for q, g in qrels.items() if q not in drop}
    if not qr:
        raise InputError("reranking delta: no judged queries with identical candidate sets")
    Q = Qrels.from_dict(qr)
    pa = compute(
        Q,
        Run.from_dict({q: v for q, v in candidate.items() if q not in drop}, vocab=Q.vocab),
        measures,
        rel_level=rel_level,
    )
    pb = compute(
        Q,
        Run.from_dict({q: v for q, v in reranked.items() if q not in drop}, vocab=Q.vocab),
        measures,
        rel_level=rel_level,
    )
    out: dict[str, Any] = {}
    for s in pa.specs:
        name = str(s)
        m = scored_mask(pa, s) & ~pa.ranked.missing
        out[name] = paired_compare(pa.values[name][m], pb.values[name][m], metric=f"Δ{name}", **kw).to_dict()
    return {"n_queries": int(len(Q)), "n_mismatched": len(bad), "mismatched": bad[:20], "deltas": out}
