"""Benchmark scale-out on Dask: hierarchy pairs and retrieval queries on a local cluster.

For each workload the records are generated *on the workers* from a partition spec
``(seed, start, count)`` (so the client never holds millions of record dicts), scored by the real
family (``score_hierarchy`` / ``score_retrieval``) and merged. Timed:

* ``in-process``: the same partitions scored one after another in this process (the baseline);
* ``dask N workers``: :func:`kg_rageval.integrations.dask.score_totals` on a ``LocalCluster`` with
  N single-threaded worker processes (``--workers 1,2``), ontology scattered once;
* ``rows``: :func:`score_distributed` (full merged Evaluation back to the client) for
  ``--rows-pairs`` pairs, checked identical to the in-process Evaluation.

Usage::

    .venv/bin/python benchmarks/bench_dask.py --pairs 10000000 --queries 1000000 --workers 1,2
    .venv/bin/python benchmarks/bench_dask.py --pairs 1000000 --queries 0      # quicker

Wall-clock figures on a shared machine are noisy: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kg_rageval.integrations.dask import (  # noqa: E402
    Partitions,
    local_client,
    merge_all,
    score_distributed,
    score_totals,
)


def _family(name: str):
    import importlib

    for module in (f"kg_rageval.{name.split('_', 1)[1]}", f"kg_rageval.{name.split('_', 1)[1]}.family"):
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    return None


# ---------------------------------------------------------------------- workloads
def hierarchy_records(ontology, seed: int, start: int, count: int) -> list[dict]:
    """``count`` one-label records: gold uniform over non-root nodes; prediction exact (40%),
    the gold node's first parent (30%) or a uniform random node (30%)."""
    rng = np.random.default_rng(seed)
    n = len(ontology)
    gold = rng.integers(1, n, count)
    parent = ontology.parent_idx[ontology.parent_ptr[gold]]
    r = rng.random(count)
    pred = np.where(r < 0.4, gold, np.where(r < 0.7, parent, rng.integers(1, n, count)))
    ids = ontology.ids
    return [
        {
            "id": f"h{start + i}",
            "slices": {"bucket": str((start + i) % 4)},
            "labels": {"gold": [ids[g]], "pred": [ids[p]]},
        }
        for i, (g, p) in enumerate(zip(gold.tolist(), pred.tolist()))
    ]


def retrieval_records(ontology, seed: int, start: int, count: int) -> list[dict]:
    """``count`` queries over a 100,000-document space: 1-5 graded gold documents, a ranked run of
    20 documents with about half the gold ones placed at random ranks."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        ng = int(rng.integers(1, 6))
        gold = rng.choice(100_000, ng, replace=False)
        run = rng.choice(100_000, 20, replace=False).tolist()
        for g in gold[: max(1, ng // 2)].tolist():
            run[int(rng.integers(0, 20))] = g
        run = list(dict.fromkeys(run))
        out.append(
            {
                "id": f"q{start + i}",
                "retrieval": {
                    "gold": {f"d{g}": int(rng.integers(1, 3)) for g in gold.tolist()},
                    "run": [f"d{d}" for d in run],
                },
            }
        )
    return out


def score_spec_hierarchy(ontology, spec, **opts):
    fn = _family("score_hierarchy")
    return fn(ontology, hierarchy_records(ontology, *spec), **opts)


def score_spec_retrieval(ontology, spec, **opts):
    fn = _family("score_retrieval")
    return fn(ontology, retrieval_records(ontology, *spec), **opts)


def specs(total: int, size: int, seed: int) -> Partitions:
    return Partitions(
        (seed + k, start, min(size, total - start)) for k, start in enumerate(range(0, total, size))
    )


# ---------------------------------------------------------------------- timing
def in_process(fn, ontology, parts) -> tuple[float, dict]:
    """Wall time of scoring ``parts`` here one after another (also sets ``LAST_CPU``)."""
    global LAST_CPU
    t0 = time.perf_counter()
    c0 = time.process_time()
    sums: dict[str, float] = {}
    for spec in parts:
        ev = fn(ontology, spec)
        for k, v in ev.totals().items():
            sums[k] = sums.get(k, 0.0) + v
    LAST_CPU = time.process_time() - c0
    return time.perf_counter() - t0, sums


LAST_CPU = 0.0


def _worker_cpu() -> float:
    import psutil

    t = psutil.Process().cpu_times()
    return t.user + t.system


def on_cluster(fn, ontology, parts, workers: int) -> dict:
    t0 = time.perf_counter()
    client = local_client(n_workers=workers, threads_per_worker=1)
    t_start = time.perf_counter() - t0
    try:
        # warm-up: the ontology reaches each worker and its closure is built there once
        t0 = time.perf_counter()
        score_totals(fn, ontology, Partitions([(0, 0, 10)] * workers), client=client)
        t_warm = time.perf_counter() - t0
        cpu0 = client.run(_worker_cpu)
        t0 = time.perf_counter()
        family, sums, n_rows, _ = score_totals(fn, ontology, parts, client=client)
        t_run = time.perf_counter() - t0
        cpu1 = client.run(_worker_cpu)
        cpu = [cpu1[w] - cpu0[w] for w in cpu0]
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    # CPU seconds each worker spent in the run: on an idle machine with a core per worker the
    # wall time would be about max(cpu); cpu_share = sum(cpu) / (workers x wall) says how much
    # of its cores the cluster actually got on a shared machine
    return {
        "workers": workers,
        "cluster_start_s": t_start,
        "warmup_s": t_warm,
        "run_s": t_run,
        "rows": n_rows,
        "sums": sums,
        "worker_cpu_s": cpu,
        "idle_wall_est_s": max(cpu),
        "cpu_share": sum(cpu) / (workers * t_run),
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=350_000, help="concepts in the synthetic ontology")
    ap.add_argument("--pairs", type=int, default=10_000_000)
    ap.add_argument("--queries", type=int, default=1_000_000)
    ap.add_argument("--partition", type=int, default=250_000, help="records per partition")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument(
        "--baseline-fraction",
        type=float,
        default=0.1,
        help="in-process baseline on this fraction of the partitions (extrapolated)",
    )
    ap.add_argument("--rows-pairs", type=int, default=200_000)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    workers = [int(w) for w in args.workers.split(",") if w]

    from benchmarks.synthetic import build_ontology

    t0 = time.perf_counter()
    onto = build_ontology(args.n)
    res: dict = {
        "ontology_nodes": len(onto),
        "build_ontology_s": time.perf_counter() - t0,
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg()[0],
        "workloads": {},
    }
    print(f"ontology: {len(onto)} nodes ({res['build_ontology_s']:.1f} s)", flush=True)

    loads = []
    if args.pairs:
        loads.append(("hierarchy", "score_hierarchy", score_spec_hierarchy, args.pairs))
    if args.queries:
        loads.append(("retrieval", "score_retrieval", score_spec_retrieval, args.queries))
    for name, fam, fn, total in loads:
        if _family(fam) is None:
            print(f"{name}: kg_rageval {fam} is not available: skipped", flush=True)
            res["workloads"][name] = {"skipped": f"{fam} not available"}
            continue
        parts = specs(total, args.partition, seed=1000)
        w: dict = {"records": total, "partitions": len(parts)}
        fn(onto, (0, 0, 10))  # warm this process (closure, imports)
        nb = max(1, int(round(len(parts) * args.baseline_fraction)))
        t_base, _ = in_process(fn, onto, parts[:nb])
        per_rec = t_base / sum(p[2] for p in parts[:nb])
        w["in_process_s_per_1M"] = per_rec * 1e6
        w["in_process_est_s"] = per_rec * total
        w["in_process_cpu_s_per_1M"] = LAST_CPU / sum(p[2] for p in parts[:nb]) * 1e6
        print(
            f"{name}: in-process {per_rec * 1e6:.1f} s per 1M records "
            f"(CPU {w['in_process_cpu_s_per_1M']:.1f} s) "
            f"({nb} of {len(parts)} partitions measured)",
            flush=True,
        )
        for k in workers:
            r = on_cluster(fn, onto, parts, k)
            if r["rows"] != total:
                raise SystemExit(f"{name}: {r['rows']} rows scored, expected {total}")
            r["records_per_s"] = total / r["run_s"]
            r["speedup_vs_in_process"] = w["in_process_est_s"] / r["run_s"]
            r.pop("sums")
            w[f"dask_{k}"] = r
            print(
                f"{name}: dask {k} worker(s): {r['run_s']:.1f} s for {total:,} "
                f"({r['records_per_s']:,.0f}/s, x{r['speedup_vs_in_process']:.2f} vs in-process; "
                f"cluster start {r['cluster_start_s']:.1f} s, warm-up {r['warmup_s']:.1f} s; "
                f"worker CPU {', '.join(f'{c:.1f}' for c in r['worker_cpu_s'])} s, "
                f"CPU share {r['cpu_share']:.2f})",
                flush=True,
            )
        # rows mode: the full Evaluation comes back and equals the in-process one
        if args.rows_pairs:
            rp = specs(min(args.rows_pairs, total), max(1, min(args.rows_pairs, total) // 4), seed=7)
            t0 = time.perf_counter()
            single = merge_all([fn(onto, s) for s in rp])
            t_single = time.perf_counter() - t0
            client = local_client(n_workers=max(workers), threads_per_worker=1)
            try:
                score_distributed(fn, onto, Partitions(rp[:1]), client=client)  # warm
                t0 = time.perf_counter()
                dist = score_distributed(fn, onto, rp, client=client)
                t_dist = time.perf_counter() - t0
            finally:
                cluster = client.cluster
                client.close()
                cluster.close()
            same = dist.record_ids.tolist() == single.record_ids.tolist() and all(
                np.array_equal(dist.stats[k], single.stats[k]) for k in single.stats
            )
            w["rows_mode"] = {
                "records": len(single),
                "in_process_s": t_single,
                "dask_s": t_dist,
                "workers": max(workers),
                "identical": bool(same),
            }
            print(
                f"{name}: rows mode {len(single):,} records: in-process {t_single:.1f} s, "
                f"dask {t_dist:.1f} s, identical={same}",
                flush=True,
            )
        res["workloads"][name] = w
    res["loadavg_end"] = os.getloadavg()[0]
    print(f"load average {res['loadavg_start']:.2f} -> {res['loadavg_end']:.2f} on {res['cpus']} CPUs")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()
