"""Slow, obviously-correct reference implementations for the hierarchy kernel tests.

Each follows its definition line by line on Python sets: ``nltk_wup`` mirrors NLTK 3.x's
``Synset.wup_similarity`` (``lowest_common_hypernyms(use_min_depth=True)``, ``sorted()`` by
name, ``self`` preferred, ``max_depth() + 1``, ``shortest_path_distance`` via upward BFS) on an
:class:`~kg_rageval.ontology.Ontology`; ``random_dag`` makes small polyhierarchies.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from kg_rageval.ontology import OntologyBuilder


def upward_distances(o, a: int) -> dict[int, int]:
    """NLTK's ``_shortest_hypernym_paths``: BFS over parents, first visit wins."""
    out: dict[int, int] = {}
    queue = deque([(a, 0)])
    while queue:
        s, d = queue.popleft()
        if s in out:
            continue
        out[s] = d
        queue.extend((int(p), d + 1) for p in o.parent_indices(s))
    return out


def shortest_path_distance(o, a: int, b: int) -> int:
    if a == b:
        return 0
    da, db = upward_distances(o, a), upward_distances(o, b)
    return min(d + db[x] for x, d in da.items() if x in db)


def nltk_wup(o, a: int, b: int, *, use_min_depth: bool = True) -> float:
    common = set(o.ancestor_indices(a).tolist()) & set(o.ancestor_indices(b).tolist())
    depth = o.depth_min if use_min_depth else o.depth_max
    best = max(int(depth[c]) for c in common)
    subsumers = sorted((c for c in common if depth[c] == best), key=lambda c: o.ids[c])
    s = a if a in subsumers else subsumers[0]
    d = int(o.depth_max[s]) + 1
    len1 = shortest_path_distance(o, a, s) + d
    len2 = shortest_path_distance(o, b, s) + d
    return 2.0 * d / (len1 + len2)


def aug(o, nodes, *, include_root: bool) -> set[int]:
    out: set[int] = set()
    for n in nodes:
        out.update(int(x) for x in o.ancestor_indices(n))
    if o.virtual_root or not include_root:
        out.discard(0)
    return out


def random_dag(n: int, *, seed: int = 0, extra_p: float = 0.5, roots: int = 1, name: str = "dag"):
    """Random polyhierarchy: node k > 0 gets a parent among earlier nodes and, with
    probability ``extra_p``, one or two more; ids ``n<k>`` sort differently from the indices."""
    rng = np.random.default_rng(seed)
    b = OntologyBuilder(name)
    ids = [f"n{(k * 7919) % (n * 3):05d}_{k}" for k in range(n)]
    for i in ids:
        b.add_node(i, label=i)
    for k in range(roots, n):
        parents = {int(rng.integers(0, k))}
        while rng.random() < extra_p and len(parents) < 4:
            parents.add(int(rng.integers(max(0, k - 40), k)))
        for p in parents:
            b.add_edge(ids[k], ids[p])
    return b.build()
