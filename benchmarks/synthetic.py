"""A SNOMED-shaped synthetic DAG for benchmarks.

``make_dag(n=350_000)`` returns (child, parent) index arrays of a rooted DAG with about 1.5
parents per node on average and a depth of about 15-20: nodes are created level by level, each
with a primary parent on the previous level (chosen with a preference for early nodes, which
gives skewed fan-out) and, with probability ``extra_parent_p``, an extra parent: a sibling of
the primary parent (~1.5 parents per node). Deterministic for a seed.
"""

from __future__ import annotations

import numpy as np


def level_sizes(n: int, depth: int) -> list[int]:
    # geometric growth over the first levels, then a wide, slowly thinning body
    sizes = [1]
    growth = [8, 6, 5, 4, 3, 2.5, 2, 1.6, 1.3, 1.15]
    while sum(sizes) < n and len(sizes) < depth:
        g = growth[len(sizes) - 1] if len(sizes) - 1 < len(growth) else 0.92
        sizes.append(max(1, int(sizes[-1] * g)))
    total = sum(sizes)
    if total < n:  # spread the remainder over the body
        body = range(len(sizes) // 2, len(sizes))
        extra = n - total
        for i, k in enumerate(body):
            sizes[k] += extra // len(body) + (1 if i < extra % len(body) else 0)
    elif total > n:
        sizes[-1] -= total - n
    return sizes


def make_dag(
    n: int = 350_000, *, depth: int = 18, extra_parent_p: float = 1.0, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(child, parent) int64 arrays over node indices 0..n-1 (0 is the root)."""
    rng = np.random.default_rng(seed)
    sizes = level_sizes(n, depth)
    starts = np.concatenate(([0], np.cumsum(sizes)))
    child_parts, parent_parts = [], []
    primary_of = np.zeros(n, dtype=np.int64)
    for lvl in range(1, len(sizes)):
        lo, hi = starts[lvl], starts[lvl + 1]
        kids = np.arange(lo, hi)
        plo, phi = starts[lvl - 1], starts[lvl]
        span = phi - plo
        # skewed choice of the primary parent
        primary = plo + np.minimum((rng.pareto(1.2, kids.size) * span / 8).astype(np.int64), span - 1)
        primary = np.where(rng.random(kids.size) < 0.5, plo + rng.integers(0, span, kids.size), primary)
        child_parts.append(kids)
        parent_parts.append(primary)
        # extra parents: a sibling of the primary parent (another child of the primary
        # parent's own primary parent), so ancestor sets overlap the way they do in clinical
        # terminologies
        pick = np.flatnonzero(rng.random(kids.size) < extra_parent_p)
        if lvl >= 2 and pick.size:
            prev_primary = primary_of[plo:phi]  # primary parent of each previous-level node
            order = np.argsort(prev_primary, kind="stable")
            sorted_pp = prev_primary[order]
            gp = primary_of[primary[pick]]
            lo_i = np.searchsorted(sorted_pp, gp, "left")
            hi_i = np.searchsorted(sorted_pp, gp, "right")
            choice = lo_i + (rng.random(pick.size) * (hi_i - lo_i)).astype(np.int64)
            extra = plo + order[choice]
            ok = extra != primary[pick]
            child_parts.append(kids[pick][ok])
            parent_parts.append(extra[ok])
        primary_of[lo:hi] = primary
    child = np.concatenate(child_parts)
    parent = np.concatenate(parent_parts)
    key = np.unique(child * n + parent)
    return key // n, key % n


def write_edge_table(path: str, n: int = 350_000, **kw) -> None:
    """Write the DAG as a TSV edge table with ids ``SCT:<n>`` and labels."""
    child, parent = make_dag(n, **kw)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("child\tparent\tlabel\n")
        fh.write("SCT:0\t\tconcept 0\n")
        for c, p in zip(child.tolist(), parent.tolist()):
            fh.write(f"SCT:{c}\tSCT:{p}\tconcept {c}\n")


def build_ontology(n: int = 350_000, **kw):
    """The synthetic DAG compiled as an Ontology (ids ``SCT:<n>``, labels ``concept <n>``)."""
    from kg_rageval.ontology import OntologyBuilder

    child, parent = make_dag(n, **kw)
    b = OntologyBuilder(f"synthetic-dag-{n}")
    for i in range(n):
        b.add_node(f"SCT:{i}", label=f"concept {i}")
    for c, p in zip(child.tolist(), parent.tolist()):
        b.add_edge(f"SCT:{c}", f"SCT:{p}")
    return b.build()
