"""Benchmark the ontology model on the SNOMED-shaped synthetic DAG (issue 2, Performance).

Measures, each in a fresh subprocess so one step's caches and memory do not help the next:

* ``table_parse`` / ``compile``: ``load_ontology(path)`` of a TSV edge table written by
  :func:`benchmarks.synthetic.write_edge_table`, split at ``OntologyBuilder.build`` (parse =
  reading the table and feeding the builder, compile = ``build()``);
* ``save``: :func:`kg_rageval.ontology.cache.save_compiled`;
* ``reload``: :func:`load_ontology` of the ``.kgro`` cache, then the first ``index()`` lookup
  (which builds the id → int dict) timed separately;
* ``index_memory``: tracemalloc peak of reloading the cache and building the id dict (the
  resident index), and the RSS delta of the same step;
* CLI wall time (best of ``--repeat``): ``kg-rageval --help`` and ``kg-rageval ontology inspect``
  of a small edge table.

Usage::

    .venv/bin/python benchmarks/bench_ontology.py [--n 350000] [--repeat 5] [--json out.json]

Figures are wall-clock on whatever machine runs it; on a shared machine run it twice and
compare ratios rather than absolute seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
KG = str(Path(PY).with_name("kg-rageval"))

TARGETS = {"build_s": 5.0, "reload_s": 0.5, "index_mb": 400.0, "cli_help_s": 1.0, "cli_inspect_s": 1.0}

_BUILD = r"""
import json, sys, time
t0 = time.perf_counter()
from kg_rageval.ontology import OntologyBuilder, load_ontology
from kg_rageval.ontology.cache import save_compiled
t_import = time.perf_counter() - t0
marks = {}
orig = OntologyBuilder.build
def timed(self, *a, **k):
    marks['build_start'] = time.perf_counter()
    marks['cpu_build_start'] = time.process_time()
    out = orig(self, *a, **k)
    marks['build_end'] = time.perf_counter()
    marks['cpu_build_end'] = time.process_time()
    return out
OntologyBuilder.build = timed
t0, c0 = time.perf_counter(), time.process_time()
onto = load_ontology(sys.argv[1])
t1, c1 = time.perf_counter(), time.process_time()
t2, c2 = time.perf_counter(), time.process_time()
p = save_compiled(onto, sys.argv[2])
t3, c3 = time.perf_counter(), time.process_time()
print(json.dumps({
    "import_s": t_import,
    "table_parse_s": marks['build_start'] - t0,
    "compile_s": marks['build_end'] - marks['build_start'],
    "load_total_s": t1 - t0,
    "save_s": t3 - t2,
    "cpu_table_parse_s": marks['cpu_build_start'] - c0,
    "cpu_compile_s": marks['cpu_build_end'] - marks['cpu_build_start'],
    "cpu_build_s": c1 - c0,
    "cpu_save_s": c3 - c2,
    "cache_mb": p.stat().st_size / 2**20,
    "nodes": len(onto), "edges": onto.n_edges, "closure": int(onto.anc_idx.size),
    "max_depth": onto.max_depth, "hash": onto.content_hash,
}))
"""

_RELOAD = r"""
import json, sys, time
from kg_rageval.ontology import load_ontology
import kg_rageval.ontology.cache  # import cost is not reload cost
t0, c0 = time.perf_counter(), time.process_time()
onto = load_ontology(sys.argv[1])
t1, c1 = time.perf_counter(), time.process_time()
i = onto.index("SCT:12345")
t2 = time.perf_counter()
anc = onto.ancestors("SCT:12345")
print(json.dumps({"reload_s": t1 - t0, "cpu_reload_s": c1 - c0, "first_lookup_s": t2 - t1, "nodes": len(onto),
                  "hash": onto.content_hash}))
"""

_MEMORY = r"""
import gc, json, resource, sys, time, tracemalloc
from kg_rageval.ontology import load_ontology
import kg_rageval.ontology.cache
def rss_mb():
    with open('/proc/self/statm') as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 2**20
gc.collect()
r0 = rss_mb()
onto = load_ontology(sys.argv[1])
onto.index("SCT:1")
gc.collect()
r1 = rss_mb()
del onto
gc.collect()
tracemalloc.start()
onto = load_ontology(sys.argv[1])
onto.index("SCT:1")
cur, peak = tracemalloc.get_traced_memory()
print(json.dumps({"rss_delta_mb": r1 - r0, "traced_current_mb": cur / 2**20,
                  "traced_peak_mb": peak / 2**20}))
"""


def _run_json(code: str, *args: str) -> dict:
    out = subprocess.run([PY, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, check=False)
    if out.returncode:
        raise SystemExit(f"benchmark step failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _best_wall(cmd: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True, cwd=ROOT)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=350_000, help="concepts in the synthetic DAG")
    ap.add_argument("--repeat", type=int, default=5, help="CLI runs (best is reported)")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--skip-cli", action="store_true")
    args = ap.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    from benchmarks.synthetic import write_edge_table

    res: dict = {"n": args.n, "cpus": os.cpu_count(), "loadavg_start": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        table = os.path.join(tmp, "dag.tsv")
        t0 = time.perf_counter()
        write_edge_table(table, args.n)
        res["write_table_s"] = time.perf_counter() - t0
        res["table_mb"] = os.path.getsize(table) / 2**20
        res.update(_run_json(_BUILD, table, os.path.join(tmp, "dag.kgro")))
        res["build_s"] = res["load_total_s"]
        reload_ = _run_json(_RELOAD, os.path.join(tmp, "dag.kgro"))
        if reload_["hash"] != res["hash"]:
            raise SystemExit("reloaded ontology differs from the built one")
        res["reload_s"] = reload_["reload_s"]
        res["cpu_reload_s"] = reload_["cpu_reload_s"]
        res["first_lookup_s"] = reload_["first_lookup_s"]
        res.update(_run_json(_MEMORY, os.path.join(tmp, "dag.kgro")))
        res["index_mb"] = max(res["rss_delta_mb"], res["traced_peak_mb"])

        if not args.skip_cli:
            small = os.path.join(tmp, "small.tsv")
            write_edge_table(small, 200)
            res["cli_help_s"] = _best_wall([KG, "--help"], args.repeat)
            res["cli_inspect_s"] = _best_wall([KG, "ontology", "inspect", small], args.repeat)
            res["python_startup_s"] = _best_wall([PY, "-c", "pass"], args.repeat)
    res["loadavg_end"] = os.getloadavg()[0]

    print(
        f"synthetic DAG: {res['nodes']} nodes, {res['edges']} edges, {res['closure']} "
        f"closure entries, max depth {res['max_depth']}  (table {res['table_mb']:.1f} MB)"
    )
    rows = [
        ("table parse", res["table_parse_s"], res["cpu_table_parse_s"], "s"),
        ("compile (build)", res["compile_s"], res["cpu_compile_s"], "s"),
        ("build total (load_ontology)", res["build_s"], res["cpu_build_s"], "s"),
        ("save cache", res["save_s"], res["cpu_save_s"], "s"),
        ("cache size", res["cache_mb"], None, "MB"),
        ("reload from cache", res["reload_s"], res["cpu_reload_s"], "s"),
        ("first id lookup (builds dict)", res["first_lookup_s"], None, "s"),
        ("index memory: RSS delta", res["rss_delta_mb"], None, "MB"),
        ("index memory: tracemalloc peak", res["traced_peak_mb"], None, "MB"),
    ]
    if not args.skip_cli:
        rows += [
            ("python -c pass", res["python_startup_s"], None, "s"),
            ("kg-rageval --help", res["cli_help_s"], None, "s"),
            ("kg-rageval ontology inspect (200 nodes)", res["cli_inspect_s"], None, "s"),
        ]
    print(f"  {'step':<42} {'wall':>8}  {'cpu':>8}")
    for name, val, cpu, unit in rows:
        cpu_txt = f"{cpu:8.3f}" if cpu is not None else " " * 8
        print(f"  {name:<42} {val:8.3f}  {cpu_txt} {unit}")
    for key, limit in TARGETS.items():
        if key in res:
            print(f"  target {key:<12} < {limit:<6} {'met' if res[key] < limit else 'MISSED'}")
    print(f"  load average {res['loadavg_start']:.2f} -> {res['loadavg_end']:.2f} on {res['cpus']} CPUs")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()
