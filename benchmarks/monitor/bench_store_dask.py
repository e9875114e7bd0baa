"""Benchmark ``monitor ingest`` in-process against the Dask path (:mod:`kg_rageval.monitor.partitioned`).

The traffic file of :mod:`benchmarks.monitor.bench_store` (``--rows`` records over ``--days``
daily windows), ingested record by record (``engine="python"``, what every Dask worker runs)

* ``inproc``: in this machine's one process;
* ``dask``: ``ingest(..., client=local_client(n_workers=--workers))``, the cluster started and
  closed inside the run (its start-up is in the figures; ``ingest_wall_s`` is the ingest alone).

Each run is a fresh child process; its CPU is measured by the parent as the children's rusage
(user + sys of the child and every process it waited for: the nannies and workers included).
Runs are interleaved ``--repeat`` times, best CPU kept; the stores are checked equal (windows,
integer sums, concept counts, sorted raw latencies; float sums to 1e-9 relative).

Usage::

    .venv/bin/python benchmarks/monitor/bench_store_dask.py --rows 1000000 [--days 30] [--workers 2] [--repeat 1]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _digest(store: Path) -> dict[str, object]:
    from kg_rageval.monitor.store import SUM_COLUMNS, WindowStore

    with WindowStore(store, read_only=True) as st:
        con = st.con
        h = hashlib.sha256()
        ints = ", ".join(c for c in SUM_COLUMNS if not c.endswith(("_sum", "_sq")))
        for sql in (
            "SELECT win, windowing, rows, first_ts, last_ts FROM windows ORDER BY ALL",
            f"SELECT win, branch, intent, slice, {ints} FROM sums ORDER BY ALL",
            "SELECT * FROM concepts ORDER BY ALL",
            "SELECT * FROM latency ORDER BY ALL",
        ):
            h.update(repr(con.execute(sql).fetchall()).encode())
        lat, cost = con.execute("SELECT sum(latency_sum), sum(cost_sq) FROM sums").fetchone()
        n = con.execute("SELECT sum(rows) FROM windows").fetchone()[0]
    return {"digest": h.hexdigest()[:16], "latency_sum": lat, "cost_sq": cost, "rows": int(n)}


def child(what: str, traffic: Path, store: Path, workers: int) -> None:
    from kg_rageval.monitor.store import WindowStore, ingest
    from kg_rageval.ontology import load_ontology

    t = time.perf_counter()
    onto = load_ontology(ROOT / "fixtures" / "hierarchy" / "vehicles.obo")
    store.unlink(missing_ok=True)
    out: dict[str, object] = {"what": what}
    if what == "dask":
        from kg_rageval.integrations.dask import local_client
        from kg_rageval.monitor import partitioned

        client = local_client(n_workers=workers, threads_per_worker=1)
        try:
            with WindowStore(store) as st:
                ingest(st, traffic, onto, engine="python", client=client)
        finally:
            cluster = client.cluster
            client.close()
            cluster.close()
        out["partitions"] = partitioned.LAST_STATS["partitions"]
        out["ingest_wall_s"] = round(partitioned.LAST_STATS["wall_seconds"], 2)
        out["worker_cpu_s"] = round(sum(partitioned.LAST_STATS["cpu_seconds"]), 2)
    else:
        with WindowStore(store) as st:
            ingest(st, traffic, onto, engine="python")
    out["wall_s"] = round(time.perf_counter() - t, 2)
    out.update(_digest(store))
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--data", type=Path, default=Path("/tmp/kg-rageval-bench-monitor"))
    ap.add_argument("--child", choices=["inproc", "dask"], default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.data.mkdir(parents=True, exist_ok=True)
    traffic = a.data / f"traffic-{a.rows}-{a.days}.jsonl"
    if a.child:
        child(a.child, traffic, a.data / f"store-{a.child}-{a.rows}.duckdb", a.workers)
        return
    if not traffic.exists():
        from benchmarks.monitor.bench_store import generate
        from kg_rageval.ontology import load_ontology

        onto = load_ontology(ROOT / "fixtures" / "hierarchy" / "vehicles.obo")
        generate(traffic, a.rows, a.days, sorted(n for n in onto.ids if onto.depth(n) >= 1))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs: dict[str, list[dict]] = {"inproc": [], "dask": []}
    for i in range(a.repeat):
        for what in ("inproc", "dask") if i % 2 == 0 else ("dask", "inproc"):
            cmd = [
                sys.executable,
                __file__,
                "--rows",
                str(a.rows),
                "--days",
                str(a.days),
                "--data",
                str(a.data),
            ]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            proc = subprocess.run(
                [*cmd, "--workers", str(a.workers), "--child", what],
                capture_output=True, text=True, env=env, check=True,
            )  # fmt: skip
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            got["cpu_s"] = round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2)
            got["load_1m"] = round(os.getloadavg()[0], 2)
            print(json.dumps(got), flush=True)
            runs[what].append(got)
    best = {w: min(r, key=lambda x: x["cpu_s"]) for w, r in runs.items()}
    a_, b_ = best["inproc"], best["dask"]
    assert a_["digest"] == b_["digest"] and a_["rows"] == b_["rows"] == a.rows, (a_, b_)
    for k in ("latency_sum", "cost_sq"):
        assert abs(a_[k] - b_[k]) <= 1e-9 * abs(a_[k]), (k, a_[k], b_[k])
    print(json.dumps({"rows": a.rows, "workers": a.workers, "same_store": True, "inproc": a_, "dask": b_}))


if __name__ == "__main__":
    main()
