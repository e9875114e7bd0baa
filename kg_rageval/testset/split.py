"""Four separate sets — development, judge calibration, release, monitoring — grouped so that
queries sharing a source document or a session never cross sets.

Groups are the connected components of the graph record — source id / session (two records are
in one group when they share any source document or session; computed with
``scipy.sparse.csgraph.connected_components``). Groups are shuffled with the seed and assigned
largest first (ties: shuffled order) to the set whose filled share is furthest below its target
proportion (the largest ``target·N − size``), so the achieved proportions are as close to the
targets as whole groups allow. Deterministic for a seed.

A record's sources are ``testset.sources`` (written by ``kg-rageval testset build``), else the
``source_id`` (from the corpus, else the id) of each ``retrieval.gold`` document; its session is
``testset.session``, else ``session``, else ``slices.session``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kg_rageval.testset.config import SETS


def record_sources(rec: Mapping[str, Any], source_of: Mapping[str, str] | None = None) -> list[str]:
    """The source ids a record was made from (module docstring)."""
    ts: Mapping[str, Any] = rec["testset"] if isinstance(rec.get("testset"), Mapping) else {}
    if isinstance(ts.get("sources"), list):
        return [str(s) for s in ts["sources"]]
    ret: Mapping[str, Any] = rec["retrieval"] if isinstance(rec.get("retrieval"), Mapping) else {}
    gold = ret.get("gold")
    ids = list(gold) if isinstance(gold, (dict, list)) else []
    src = source_of or {}
    return sorted({src.get(str(d), str(d)) for d in ids})


def record_session(rec: Mapping[str, Any]) -> str | None:
    ts: Mapping[str, Any] = rec["testset"] if isinstance(rec.get("testset"), Mapping) else {}
    sl: Mapping[str, Any] = rec["slices"] if isinstance(rec.get("slices"), Mapping) else {}
    for v in (ts.get("session"), rec.get("session"), sl.get("session")):
        if v not in (None, ""):
            return str(v)
    return None


def groups(records: Sequence[Mapping[str, Any]], source_of: Mapping[str, str] | None = None) -> np.ndarray:
    """Group label per record: connected components over shared sources and sessions."""
    from scipy.sparse import coo_matrix  # type: ignore[import-untyped]
    from scipy.sparse.csgraph import connected_components  # type: ignore[import-untyped]

    keys: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    n = len(records)
    for r, rec in enumerate(records):
        ks = ["s\x1f" + s for s in record_sources(rec, source_of)]
        ses = record_session(rec)
        if ses is not None:
            ks.append("t\x1f" + ses)
        for k in ks:
            rows.append(r)
            cols.append(n + keys.setdefault(k, len(keys)))
    m = n + len(keys)
    g = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(m, m))
    _, labels = connected_components(g, directed=False)
    return labels[:n]


def assign(sizes: np.ndarray, proportions: Mapping[str, float], seed: int) -> np.ndarray:
    """Set index (into :data:`SETS`) per group (module docstring)."""
    props = np.asarray([proportions.get(s, 0.0) for s in SETS], dtype=float)
    props = props / props.sum()
    rng = np.random.default_rng(seed)
    shuffled = rng.permutation(len(sizes))
    order = shuffled[np.argsort(-sizes[shuffled], kind="stable")]
    total = float(sizes.sum())
    filled = np.zeros(len(SETS))
    out = np.empty(len(sizes), dtype=np.int64)
    active = props > 0
    for g in order.tolist():
        room = np.where(active, props * total - filled, -np.inf)
        k = int(np.argmax(room))
        out[g] = k
        filled[k] += sizes[g]
    return out


def split_testset(
    records: Sequence[dict[str, Any]],
    proportions: Mapping[str, float],
    *,
    seed: int = 0,
    source_of: Mapping[str, str] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """``{set name: records}`` in input order (module docstring)."""
    if not records:
        return {s: [] for s in SETS}
    labels = groups(records, source_of)
    uniq, inv = np.unique(labels, return_inverse=True)
    sizes = np.bincount(inv)
    set_of_group = assign(sizes, proportions, seed)
    set_of = set_of_group[inv]
    return {s: [records[i] for i in np.flatnonzero(set_of == k).tolist()] for k, s in enumerate(SETS)}


def split_summary(sets: Mapping[str, Sequence[Any]], proportions: Mapping[str, float]) -> dict[str, Any]:
    total = sum(len(v) for v in sets.values())
    psum = sum(proportions.values()) or 1.0
    return {
        s: {
            "records": len(sets[s]),
            "share": (len(sets[s]) / total) if total else None,
            "target": proportions.get(s, 0.0) / psum,
        }
        for s in SETS
    }
