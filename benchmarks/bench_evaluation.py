"""Benchmark the shared result framework (:mod:`kg_rageval.results`: Evaluation and its roll-ups and bootstraps).

Measures, on a toy precision/recall family (stats ``tp``, ``n_pred``, ``n_gold``):

* ``bootstrap``: :meth:`Evaluation.bootstrap` with ``--records`` records (one row each) and
  ``--resamples`` resamples (default 100,000 x 1,000), plus the peak memory it allocates
  (tracemalloc);
* ``breakdown``: :meth:`Evaluation.breakdown` of ``--rows`` rows (default 1,000,000) on an
  object key column with 50 string values and ~5 % ``None``;
* ``rollup``: :meth:`Evaluation.rollup` of ``--rows`` rows onto the SNOMED-shaped synthetic
  ontology (``benchmarks/synthetic.py: build_ontology(--nodes)``, default 350,000 nodes);
  ~2 % of the rows carry ``None`` or an unknown id. Ontology construction is not timed.
  ``rollup_core`` is the same with a family whose ``finalize`` returns nothing (the
  framework's own cost); ``rollup`` includes the toy family's ``finalize`` for every node;
  ``breakdown_nodes`` is :meth:`Evaluation.breakdown` of the same rows by ``gold_node``
  (~330,000 groups).

Each figure is reported as wall-clock and as process CPU time (``time.process_time``), which
is less distorted on a shared, overloaded machine.

``--baseline FILE`` also times a second copy of the module (e.g. the previous
``evaluation.py`` saved somewhere) in the same process on the same data and prints the
ratios, so that figures from a loaded machine can still be compared.

Usage::

    .venv/bin/python benchmarks/bench_evaluation.py [--records 100000] [--resamples 1000]
        [--rows 1000000] [--nodes 350000] [--only bootstrap,breakdown,rollup]
        [--baseline /tmp/evaluation_orig.py] [--json out.json]

Figures are wall-clock, best of ``--repeat``; on a shared machine compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def load_impl(path: str | None) -> Any:
    """The current implementation (``Evaluation``, ``Family``, ``ratio``, ``harmonic`` from the
    modules of :mod:`kg_rageval.results` that hold them), or a copy of the former single
    ``evaluation.py`` loaded from ``path`` inside the package namespace (so its relative
    imports still resolve)."""
    if path is None:
        from kg_rageval.results.evaluation import Evaluation
        from kg_rageval.results.family import Family
        from kg_rageval.results.metric import harmonic, ratio

        return SimpleNamespace(Evaluation=Evaluation, Family=Family, ratio=ratio, harmonic=harmonic)
    spec = importlib.util.spec_from_file_location("kg_rageval._evaluation_baseline", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def pr_family(mod: Any) -> Any:
    class PR(mod.Family):
        name = "bench_pr"
        stats = ("tp", "n_pred", "n_gold")

        def finalize(self, s):
            p = mod.ratio("precision", s["tp"], s["n_pred"], missing="no predictions")
            r = mod.ratio("recall", s["tp"], s["n_gold"], missing="no gold")
            return {"precision": p, "recall": r, "f1": mod.harmonic("f1", p, r)}

    return PR()


def toy_stats(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_pred = rng.integers(0, 4, n).astype(float)
    n_gold = rng.integers(1, 4, n).astype(float)
    tp = np.minimum(n_pred, rng.integers(0, 4, n)).astype(float)
    tp = np.minimum(tp, n_gold)
    return {"tp": tp, "n_pred": n_pred, "n_gold": n_gold}


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Best wall-clock and best process CPU seconds of ``repeat`` calls, and the result."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        cpus.append(time.process_time() - c0)
        walls.append(time.perf_counter() - t0)
    return min(walls), min(cpus), out


def peak_mb(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def null_family(mod: Any) -> Any:
    """Same stats, no metrics: times the framework without any family's finalize cost."""

    class Null(mod.Family):
        name = "bench_null"
        stats = ("tp", "n_pred", "n_gold")

        def finalize(self, s):
            return {}

    return Null()


def bench(mod: Any, args: argparse.Namespace, only: set[str], onto: Any) -> dict[str, float]:
    fam = pr_family(mod)
    out: dict[str, float] = {}
    if "bootstrap" in only:
        n = args.records
        ev = mod.Evaluation(fam, np.asarray([f"r{i}" for i in range(n)], dtype=object), toy_stats(n, 1))
        call = lambda: ev.bootstrap(n_resamples=args.resamples, seed=0)  # noqa: E731
        out["bootstrap_s"], out["bootstrap_cpu_s"], ci = best(call, args.repeat)
        out["bootstrap_peak_mb"] = peak_mb(call)
        print(
            f"  bootstrap {n} records x {args.resamples}: {out['bootstrap_s']:.3f} s "
            f"(cpu {out['bootstrap_cpu_s']:.3f} s), peak {out['bootstrap_peak_mb']:.0f} MiB, "
            f"f1 CI {ci['f1']}"
        )
    if "breakdown" in only:
        n = args.rows
        rng = np.random.default_rng(2)
        vals = np.asarray([f"intent{i}" for i in range(50)] + [None], dtype=object)
        col = vals[np.minimum(rng.integers(0, 53, n), 50)]
        ev = mod.Evaluation(
            fam,
            np.asarray([f"r{i // 3}" for i in range(n)], dtype=object),
            toy_stats(n, 3),
            keys={"slice:intent": col},
        )
        out["breakdown_s"], out["breakdown_cpu_s"], bd = best(
            lambda: ev.breakdown("slice:intent"), args.repeat
        )
        print(
            f"  breakdown {n} rows: {out['breakdown_s']:.3f} s (cpu {out['breakdown_cpu_s']:.3f} s, "
            f"{len(bd)} groups)"
        )
    if "rollup" in only and onto is not None:
        n = args.rows
        rng = np.random.default_rng(4)
        ids = np.asarray(onto.ids, dtype=object)
        col = ids[rng.integers(0, len(ids), n)]
        bad = rng.random(n)
        col[bad < 0.01] = None
        col[(bad >= 0.01) & (bad < 0.02)] = "SCT:unknown"
        rid = np.asarray([f"r{i}" for i in range(n)], dtype=object)
        stats = toy_stats(n, 5)
        for label, family in (("rollup_core", null_family(mod)), ("rollup", fam)):
            ev = mod.Evaluation(family, rid, stats, keys={"gold_node": col})
            out[f"{label}_s"], out[f"{label}_cpu_s"], roll = best(lambda: ev.rollup(onto), args.repeat)  # noqa: B023 - timed now
            print(
                f"  {label} ({family.name}) {n} rows on {len(onto)} nodes: {out[f'{label}_s']:.3f} s "
                f"(cpu {out[f'{label}_cpu_s']:.3f} s; {len(roll)} nodes, "
                f"skipped {ev.meta['rollup_skipped']})"
            )
        out["rollup_peak_mb"] = peak_mb(lambda: ev.rollup(onto))
        print(f"  rollup peak {out['rollup_peak_mb']:.0f} MiB")
        out["breakdown_nodes_s"], out["breakdown_nodes_cpu_s"], bd = best(
            lambda: ev.breakdown("gold_node"), args.repeat
        )
        print(
            f"  breakdown by gold_node ({fam.name}) {n} rows: {out['breakdown_nodes_s']:.3f} s "
            f"(cpu {out['breakdown_nodes_cpu_s']:.3f} s, {len(bd)} groups)"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--nodes", type=int, default=350_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", default="bootstrap,breakdown,rollup")
    ap.add_argument("--baseline", default=None, help="path of another evaluation.py to compare")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    onto = None
    if "rollup" in only:
        from benchmarks.synthetic import build_ontology

        t0 = time.perf_counter()
        onto = build_ontology(args.nodes)
        anc = float(np.diff(onto.anc_ptr).mean())
        print(
            f"ontology: {len(onto)} nodes, mean ancestor-or-self set {anc:.1f} "
            f"(built in {time.perf_counter() - t0:.1f} s, not timed)"
        )
    results: dict[str, dict[str, float]] = {}
    print("current kg_rageval/results")
    results["current"] = bench(load_impl(None), args, only, onto)
    if args.baseline:
        print(f"baseline {args.baseline}")
        results["baseline"] = bench(load_impl(args.baseline), args, only, onto)
        for k, v in results["current"].items():
            if k.endswith("_s") and results["baseline"].get(k):
                print(f"  {k}: baseline/current = {results['baseline'][k] / max(v, 1e-9):.1f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
