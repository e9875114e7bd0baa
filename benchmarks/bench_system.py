"""Benchmark the system family's quantile machinery (:mod:`kg_rageval.families.system.quantiles`).

* ``bootstrap``: the record-level percentile bootstrap of ``latency.total_ms.p95`` over
  ``--records`` records and ``--resamples`` resamples, against the reference
  ``scipy.stats.bootstrap(method="percentile")`` of ``np.percentile(x, 95)`` on the same values
  (vectorised, batch 100); both are O(resamples x records). The ratio is the figure to keep.
* ``rollup``: :meth:`QuantileEvaluation.rollup` on the synthetic ontology (``--nodes``), against
  the sum-only :meth:`Evaluation.rollup` of the same rows (the framework's own roll-up).
* ``score``: :func:`score_system` on the records (reading and checking the section).

Usage::

    .venv/bin/python benchmarks/bench_system.py [--records 20000] [--resamples 1000] [--nodes 5000]

Figures are wall-clock, best of ``--repeat``; on a shared machine compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def best(fn, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    from scipy import stats

    from kg_rageval.families.system import score_system
    from kg_rageval.ontology import OntologyBuilder
    from kg_rageval.results.evaluation import Evaluation

    rng = np.random.default_rng(0)
    lat = rng.exponential(500, a.records)
    b = OntologyBuilder("bench")
    for i in range(a.nodes):
        b.add_node(f"n{i}", label=f"n{i}")
    for i in range(1, a.nodes):
        b.add_edge(f"n{i}", f"n{int(rng.integers(0, i))}")
    onto = b.build()
    nodes = rng.integers(0, a.nodes, a.records)
    recs = [
        {
            "id": f"q{i:07d}",
            "gold_node": f"n{nodes[i]}",
            "system": {"latency_ms": {"total": float(lat[i])}, "cost_usd": 0.001},
        }
        for i in range(a.records)
    ]
    t_score = best(lambda: score_system(None, recs), a.repeat)
    ev = score_system(None, recs)
    t_boot = best(lambda: ev.bootstrap(n_resamples=a.resamples, metrics=["latency.total_ms.p95"]), a.repeat)
    t_ref = best(
        lambda: stats.bootstrap(
            (lat,),
            lambda x, axis=-1: np.percentile(x, 95, axis=axis),
            n_resamples=a.resamples,
            method="percentile",
            vectorized=True,
            batch=100,
            random_state=0,
        ),
        a.repeat,
    )
    t_roll = best(lambda: ev.rollup(onto), 1)
    plain = Evaluation(ev.family, ev.record_ids, ev.stats, ev.keys)
    t_plain = best(lambda: Evaluation.rollup(plain, onto), 1)
    print(f"records={a.records} resamples={a.resamples} nodes={a.nodes}")
    print(f"score_system          {t_score:8.3f} s")
    print(
        f"bootstrap p95         {t_boot:8.3f} s   scipy.stats.bootstrap {t_ref:8.3f} s   ratio {t_boot / t_ref:6.2f}"
    )
    print(
        f"rollup (quantiles)    {t_roll:8.3f} s   sum-only rollup       {t_plain:8.3f} s   ratio {t_roll / t_plain:6.2f}"
    )


if __name__ == "__main__":
    main()
