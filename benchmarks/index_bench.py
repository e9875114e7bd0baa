"""Exact k-NN search of ``kg-rageval index recall`` (:func:`kg_rageval.families.index.exact.exact_knn`,
blocked) against a naive numpy full matrix (``Q @ V.T`` for every query at once, then
``argpartition``) on the same 200k × 384 float32 vectors (issue #30; docs/performance.md,
"Exact search of index recall"). Not a test.

    python benchmarks/index_bench.py [--n 200000] [--dim 384] [--queries 1000] [--k 10] [--metric ip]

Both sides find the top k of every query; their id sets are checked equal (random Gaussian
data: no ties at the k-th score) before the figures are printed. Time: wall-clock
(``time.perf_counter``), best of ``--repeat``; memory: the peak of numpy's allocations above the
inputs (``tracemalloc``, which numpy reports to), each side measured on its own. Ratios are
naive / blocked.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kg_rageval.families.index.exact import exact_knn  # noqa: E402


def naive(v: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    s = q @ v.T  # (queries, n) float32: the whole score matrix at once
    part = np.argpartition(-s, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(s, part, axis=1), axis=1)
    return np.take_along_axis(part, order, axis=1)


def measure(fn, repeat: int):
    best, peak, out = float("inf"), 0, None
    for _ in range(repeat):
        tracemalloc.start()
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
        peak = max(peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    return out, best, peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    v = rng.standard_normal((a.n, a.dim), dtype=np.float32)
    q = rng.standard_normal((a.queries, a.dim), dtype=np.float32)
    ref, t_naive, m_naive = measure(lambda: naive(v, q, a.k), a.repeat)
    (ids, _), t_ours, m_ours = measure(lambda: exact_knn(v, q, a.k, "ip"), a.repeat)
    same = all(set(x) == set(y) for x, y in zip(ids.tolist(), ref.tolist()))
    if not same:
        raise SystemExit("blocked and naive top k differ")
    res = {
        "n": a.n,
        "dim": a.dim,
        "queries": a.queries,
        "k": a.k,
        "inputs_mb": round((v.nbytes + q.nbytes) / 2**20, 1),
        "naive_s": round(t_naive, 3),
        "blocked_s": round(t_ours, 3),
        "time_ratio_naive_over_blocked": round(t_naive / t_ours, 3),
        "naive_peak_mb": round(m_naive / 2**20, 1),
        "blocked_peak_mb": round(m_ours / 2**20, 1),
        "memory_ratio_naive_over_blocked": round(m_naive / m_ours, 2),
        "same_top_k": same,
    }
    print(json.dumps(res, indent=2) if a.json else "\n".join(f"{k}: {v}" for k, v in res.items()))


if __name__ == "__main__":
    main()
