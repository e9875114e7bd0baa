"""Exact k-nearest-neighbour search in numpy and ANN Recall@k from vectors (``kg-rageval index
recall``; ``docs/ingestion.md``, *Index*).

Distances (smaller is closer, as ann-benchmarks stores them):

* ``l2``: Euclidean ``‖q − v‖``;
* ``ip``: ``−⟨q, v⟩`` (maximum inner product search);
* ``cosine``: ``1 − ⟨q, v⟩ / (‖q‖ ‖v‖)`` (a zero vector is an input error).

:func:`exact_knn` scans the vectors in blocks of ``block`` rows for blocks of ``query_block``
queries: one ``query_block × block`` float32 score matrix at a time plus a running top ``k``,
so memory is ``O(query_block · (block + k))`` whatever the number of vectors (a naive
``queries × vectors`` matrix is 800 MB for 1,000 queries over 200k vectors). The candidates
are chosen on float32 scores; the distances of the chosen ``k`` are then recomputed in float64
from the vectors and sorted (ties by id), so the reported distances do not carry the
``‖q‖² − 2⟨q, v⟩ + ‖v‖²`` cancellation error.

:func:`recall_hits` is the ann-benchmarks rule (``ann_benchmarks/plotting/metrics.py``,
``get_recall_values``): a returned id counts when its true distance is
``<= exact_distance[k-1] + ε`` (``ε = 1e-3``); an id outside ``[0, n)`` (``-1``: no result) or
repeated within a query counts as a miss.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.families.index.score import EPSILON

METRICS = ("l2", "ip", "cosine")
_FLOAT_KINDS = ("f",)


def load_matrix(path: str | Path, field: str, *, mmap: bool = True) -> np.ndarray:
    """A 2-D float array from a ``.npy`` file (never unpickled; memory-mapped when possible),
    checked: float dtype, two dimensions, at least one row, every value finite. A bad file is an
    ``InputError`` naming the file and the field (``vectors`` / ``queries``)."""
    p = Path(path)
    try:
        arr = np.load(p, mmap_mode="r" if mmap else None, allow_pickle=False)
    except ValueError as e:  # object arrays need pickle: refused
        raise InputError(f"{field}: not a plain numeric .npy array ({e})", source=str(p)) from None
    except OSError as e:
        raise InputError(f"{field}: cannot read a .npy array ({e})", source=str(p)) from None
    if not isinstance(arr, np.ndarray):
        raise InputError(f"{field}: expected one .npy array, found {type(arr).__name__}", source=str(p))
    if arr.dtype.kind not in _FLOAT_KINDS:
        raise InputError(f"{field}: expected a float array, found dtype {arr.dtype}", source=str(p))
    if arr.ndim != 2:
        raise InputError(
            f"{field}: expected a 2-D array (rows × dim), found shape {arr.shape}", source=str(p)
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InputError(f"{field}: empty array of shape {arr.shape}", source=str(p))
    check_finite(arr, field, str(p))
    return arr


def check_finite(arr: np.ndarray, field: str, source: str | None = None, block: int = 65536) -> None:
    """``InputError`` naming the first row holding a NaN or an infinity (scanned in blocks)."""
    for s in range(0, arr.shape[0], block):
        part = np.asarray(arr[s : s + block])
        bad = ~np.isfinite(part).all(axis=1)
        if bad.any():
            row = s + int(np.flatnonzero(bad)[0])
            raise InputError(f"{field}: row {row} holds a NaN or an infinity", source=source)


def _prepare(x: np.ndarray, metric: str, field: str, source: str | None) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if metric == "cosine":
        norms = np.linalg.norm(x.astype(np.float64), axis=1)
        if (norms == 0).any():
            raise InputError(
                f"{field}: row {int(np.flatnonzero(norms == 0)[0])} is a zero vector (no cosine)",
                source=source,
            )
        x = (x / norms[:, None]).astype(np.float32)
    return x


def distances(queries: np.ndarray, vectors: np.ndarray, ids: np.ndarray, metric: str) -> np.ndarray:
    """float64 distances of ``queries[i]`` to ``vectors[ids[i, j]]`` (``inf`` where the id is
    outside ``[0, n)``)."""
    n = vectors.shape[0]
    ok = (ids >= 0) & (ids < n)
    safe = np.where(ok, ids, 0)
    q = np.asarray(queries, dtype=np.float64)
    out = np.empty(ids.shape, dtype=np.float64)
    for s in range(0, len(q), 1024):
        v = np.asarray(vectors[safe[s : s + 1024].ravel()], dtype=np.float64).reshape(
            *safe[s : s + 1024].shape, -1
        )
        qq = q[s : s + 1024, None, :]
        if metric == "l2":
            out[s : s + 1024] = np.sqrt(((v - qq) ** 2).sum(axis=2))
        elif metric == "ip":
            out[s : s + 1024] = -(v * qq).sum(axis=2)
        else:
            qn = qq / np.linalg.norm(qq, axis=2, keepdims=True)
            vn = v / np.linalg.norm(v, axis=2, keepdims=True)
            out[s : s + 1024] = 1.0 - (vn * qn).sum(axis=2)
    out[~ok] = np.inf
    return out


def exact_knn(
    vectors: np.ndarray,
    queries: np.ndarray,
    k: int,
    metric: str = "l2",
    *,
    block: int = 16384,
    query_block: int = 1024,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top ``k`` of every query: ``(ids, distances)``, both ``(n_queries, k)``, ascending
    distance (module docstring for the metrics, the blocks and the float64 re-ranking)."""
    if metric not in METRICS:
        raise InputError(f"metric: {metric!r} is not one of {', '.join(METRICS)}")
    n, d = vectors.shape
    if queries.shape[1] != d:
        raise InputError(f"queries: dimension {queries.shape[1]} differs from the vectors' {d}")
    if not 1 <= k <= n:
        raise InputError(f"k: {k} must be between 1 and the number of vectors ({n})")
    nq = queries.shape[0]
    q_all = _prepare(queries, metric, "queries", None)
    best_s = np.full((nq, k), -np.inf, dtype=np.float32)  # scores: larger is closer
    best_i = np.full((nq, k), -1, dtype=np.int64)
    for vs in range(0, n, block):
        vb = _prepare(np.asarray(vectors[vs : vs + block]), metric, "vectors", None)
        sq = (vb.astype(np.float32) ** 2).sum(axis=1) if metric == "l2" else None
        for qs in range(0, nq, query_block):
            qb = q_all[qs : qs + query_block]
            s = qb @ vb.T  # (qb, vb)
            if sq is not None:
                s = 2.0 * s - sq[None, :]  # −‖q − v‖² + ‖q‖²: same order per query
            prev_i = best_i[qs : qs + query_block]
            cand_s = np.concatenate([best_s[qs : qs + query_block], s], axis=1)
            del s
            part = np.argpartition(cand_s, cand_s.shape[1] - k, axis=1)[:, -k:]  # the k largest
            cand_s = np.take_along_axis(cand_s, part, axis=1)
            # a position below k is a kept best; above, a row of this block
            cand_i = np.where(
                part < k, np.take_along_axis(prev_i, np.minimum(part, k - 1), axis=1), vs + part - k
            )
            best_s[qs : qs + query_block] = cand_s
            best_i[qs : qs + query_block] = cand_i
    dist = distances(queries, vectors, best_i, metric)
    order = np.lexsort((best_i, dist))  # per row: by distance, then by id
    return np.take_along_axis(best_i, order, axis=1), np.take_along_axis(dist, order, axis=1)


def recall_hits(
    run_distances: np.ndarray, exact_distances: np.ndarray, k: int, epsilon: float = EPSILON
) -> np.ndarray:
    """Per query, how many of the first ``k`` returned neighbours count (ann-benchmarks: true
    distance ``<= exact_distances[:, k-1] + ε``); ``inf`` (no result, a bad or repeated id)
    never counts."""
    limit = exact_distances[:, k - 1 : k] + epsilon
    return (run_distances[:, :k] <= limit).sum(axis=1).astype(np.int64)


def mask_repeats(ids: np.ndarray) -> np.ndarray:
    """A copy of ``ids`` with every repeat of an id within its row set to ``-1``."""
    out = np.array(ids, dtype=np.int64, copy=True)
    order = np.argsort(out, axis=1, kind="stable")
    s = np.take_along_axis(out, order, axis=1)
    dup = np.zeros(out.shape, dtype=bool)
    dup[:, 1:] = (s[:, 1:] == s[:, :-1]) & (s[:, 1:] >= 0)
    rows = np.repeat(np.arange(out.shape[0]), out.shape[1]).reshape(out.shape)
    out[rows[dup], order[dup]] = -1
    return out


@dataclass
class RecallResult:
    k: int
    metric: str
    backend: str
    recall: float
    per_query: np.ndarray
    ci: tuple[float, float]
    level: float
    n_resamples: int
    epsilon: float = EPSILON

    def distribution(self) -> dict[str, Any]:
        """Per-query recall: the number of queries at each value ``j / k`` and its quantiles."""
        hits = np.rint(self.per_query * self.k).astype(np.int64)
        counts = np.bincount(hits, minlength=self.k + 1)
        qs = np.quantile(self.per_query, [0.01, 0.05, 0.5])
        return {
            "histogram": {f"{j}/{self.k}": int(c) for j, c in enumerate(counts.tolist())},
            "min": float(self.per_query.min()),
            "p1": float(qs[0]),
            "p5": float(qs[1]),
            "p50": float(qs[2]),
            "queries_below_1": int((self.per_query < 1).sum()),
        }

    def to_dict(self, min_recall: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "measure": f"ann_recall@{self.k}",
            "k": self.k,
            "metric": self.metric,
            "backend": self.backend,
            "recall": self.recall,
            "ci": list(self.ci),
            "ci_level": self.level,
            "ci_method": f"percentile bootstrap over queries ({self.n_resamples} resamples)",
            "queries": int(len(self.per_query)),
            "tie_rule": f"a returned neighbour counts when its distance <= the k-th exact distance + {self.epsilon:g} (ann-benchmarks)",
            "per_query": self.distribution(),
        }
        if min_recall is not None:
            out["min_recall"] = min_recall
            out["passed"] = bool(self.recall >= min_recall)
            out["queries_below_min_recall"] = int((self.per_query < min_recall).sum())
        return out


def bootstrap_ci(
    values: np.ndarray, *, n_resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (queries resampled with
    replacement; drawn in batches so memory stays ``O(batch · n)``)."""
    rng = np.random.default_rng(seed)
    n = len(values)
    means = np.empty(n_resamples)
    batch = max(1, min(n_resamples, 2_000_000 // max(n, 1)))
    for s in range(0, n_resamples, batch):
        b = min(batch, n_resamples - s)
        means[s : s + b] = values[rng.integers(0, n, size=(b, n))].mean(axis=1)
    a = (1 - level) / 2
    lo, hi = np.quantile(means, [a, 1 - a])
    return float(lo), float(hi)


def ann_recall(
    vectors: np.ndarray,
    queries: np.ndarray,
    run_ids: np.ndarray,
    k: int,
    metric: str = "l2",
    *,
    backend: str = "results",
    exact: tuple[np.ndarray, np.ndarray] | None = None,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    epsilon: float = EPSILON,
) -> RecallResult:
    """ANN Recall@k of ``run_ids`` (``(n_queries, >= k)`` row ids, ``-1``: no result) against
    exact search at the same ``k`` (``exact``: a precomputed ``exact_knn`` result)."""
    if run_ids.ndim != 2 or run_ids.shape[0] != queries.shape[0]:
        raise InputError(
            f"results: expected {queries.shape[0]} rows of ids (one per query), found shape {run_ids.shape}"
        )
    if run_ids.shape[1] < k:
        pad = np.full((run_ids.shape[0], k - run_ids.shape[1]), -1, dtype=np.int64)
        run_ids = np.concatenate([run_ids.astype(np.int64), pad], axis=1)
    run_ids = mask_repeats(run_ids[:, :k])
    _, ex_d = exact if exact is not None else exact_knn(vectors, queries, k, metric)
    run_d = distances(queries, vectors, run_ids, metric)
    per_query = recall_hits(run_d, ex_d, k, epsilon) / k
    ci = bootstrap_ci(per_query, n_resamples=n_resamples, level=level, seed=seed)
    return RecallResult(
        k, metric, backend, float(per_query.mean()), per_query, ci, level, n_resamples, epsilon
    )


__all__ = [
    "METRICS",
    "RecallResult",
    "ann_recall",
    "bootstrap_ci",
    "check_finite",
    "distances",
    "exact_knn",
    "load_matrix",
    "mask_repeats",
    "recall_hits",
]
