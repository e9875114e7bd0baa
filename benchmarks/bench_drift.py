"""Benchmark ontology drift (issue 15, Performance): diff two 350,000-concept releases and
re-base 1,000,000 records, target under 30 s each on this machine.

OLD is the SNOMED-shaped synthetic DAG (:func:`benchmarks.synthetic.make_dag`); NEW changes it
the way a terminology release does, each on about 1 % of the concepts: deprecations with a
replacement (some chained: a replacement that is itself deprecated), merges (a leaf that
becomes an alternative id of another concept), moves (another parent of a lower level),
relabels, synonym edits, and new leaves. Both are compiled to ``.kgro`` caches first (not
timed). Then, each in a fresh subprocess through the CLI, as a user runs it:

* ``diff``: ``kg-rageval ontology diff OLD.kgro NEW.kgro --format json`` (loads included);
* ``rebase``: ``kg-rageval records rebase --from OLD.kgro --to NEW.kgro --data R.jsonl
  --out OUT.jsonl`` over ``--records`` records (gold and predicted labels and one gold mention
  each, ids drawn from OLD; loads, the mapping, reading, re-basing and writing included).

Wall and CPU seconds of each subprocess are reported (on a shared machine the CPU time is
the figure to compare with the target).

Usage::

    .venv/bin/python benchmarks/bench_drift.py [--n 350000] [--records 1000000] [--json out.json]
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import make_dag  # noqa: E402

TARGETS = {"diff_s": 30.0, "rebase_s": 30.0}


def releases(n: int, seed: int = 0):
    """(OLD, NEW) compiled ontologies and the number of changes of each kind made."""
    from kg_rageval.ontology import OntologyBuilder

    child, parent = make_dag(n, seed=seed)
    rng = np.random.default_rng(seed + 1)
    ids = [f"SCT:{i}" for i in range(n)]
    labels = [f"concept {i}" for i in range(n)]

    def build(node_ids, labs, ch, pa, extra=lambda b: None):
        b = OntologyBuilder("synthetic")
        b.add_nodes(node_ids, labs)
        b.add_edges([ids[c] for c in ch.tolist()], [ids[p] for p in pa.tolist()])
        extra(b)
        return b.build()

    old = build(ids, labels, child, parent)
    k = n // 100
    has_kids = np.zeros(n, dtype=bool)
    has_kids[parent] = True
    leaves = np.flatnonzero(~has_kids)
    merged = rng.choice(leaves, k // 2, replace=False)
    rest = np.setdiff1d(np.arange(1, n), merged)
    deprecated = rng.choice(rest, k, replace=False)
    moved = rng.choice(np.setdiff1d(rest, deprecated), k, replace=False)
    relabelled = rng.choice(rest, k, replace=False)
    keep = ~np.isin(child, merged)
    ch, pa = child[keep], parent[keep]
    # moves: replace every parent of a moved node by one random node of a lower index
    mv = np.isin(ch, moved)
    to = (rng.random(k) * moved).astype(np.int64)
    to[np.isin(to, merged)] = 0
    ch, pa = np.concatenate([ch[~mv], moved]), np.concatenate([pa[~mv], to])
    new_ids = [x for i, x in enumerate(ids) if i not in set(merged.tolist())]
    new_labels = list(labels)
    for i in relabelled.tolist():
        new_labels[i] = f"concept {i} (revised)"
    new_labels = [lab for i, lab in enumerate(new_labels) if i not in set(merged.tolist())]
    n_added = k
    add_parents = rng.integers(0, n, n_added)
    merged_set = set(merged.tolist())
    add_parents = np.asarray([p if p not in merged_set else 0 for p in add_parents.tolist()])
    active = np.setdiff1d(rest, deprecated)

    def extra(b):
        for j in range(n_added):
            b.add_node(f"SCT:new{j}", label=f"new concept {j}")
            b.add_edge(f"SCT:new{j}", ids[int(add_parents[j])])
        targets = rng.choice(active, deprecated.size)
        for d, t in zip(deprecated.tolist(), targets.tolist()):
            b.add_node(ids[d], status="deprecated", replaced_by=ids[t])
        for j, d in enumerate(deprecated[: k // 10].tolist()):  # chains: d -> d2 -> active
            d2 = int(deprecated[(j + 1) % deprecated.size])
            if d2 != d:
                b.add_node(ids[d], replaced_by=ids[d2])
        into = rng.choice(active, merged.size)
        for m, t in zip(merged.tolist(), into.tolist()):
            b.add_alias(ids[m], ids[t])
        for i in relabelled[: k // 2].tolist():
            b.add_node(ids[i], synonyms=[f"synonym of {i}"])

    new = build(new_ids, new_labels, ch, pa, extra)
    return (
        old,
        new,
        {
            "deprecated": int(deprecated.size),
            "merged": int(merged.size),
            "moved": k,
            "relabelled": int(relabelled.size),
            "added": n_added,
        },
    )


def write_records(path: Path, old, n_records: int, seed: int = 2) -> None:
    rng = np.random.default_rng(seed)
    ids = old.ids
    g = rng.integers(1, len(ids), n_records).tolist()
    p = rng.integers(1, len(ids), n_records).tolist()
    with open(path, "w", encoding="utf-8") as fh:
        buf = []
        for i, (a, b) in enumerate(zip(g, p)):
            buf.append(
                json.dumps(
                    {
                        "id": f"q{i}",
                        "labels": {"gold": [ids[a]], "pred": [ids[b]]},
                        "mentions": {"gold": [{"start": 0, "end": 4, "id": ids[a]}]},
                        "slices": {"intent": "lookup"},
                    }
                )
            )
            if len(buf) == 50000:
                fh.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            fh.write("\n".join(buf) + "\n")


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, its standard output)."""
    import resource

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-2000:]}")
    return dt, cpu, r.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=350_000)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    from kg_rageval.ontology.cache import save_compiled

    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        t0 = time.perf_counter()
        old, new, made = releases(args.n)
        save_compiled(old, t / "old.kgro")
        save_compiled(new, t / "new.kgro")
        write_records(t / "r.jsonl", old, args.records)
        setup = time.perf_counter() - t0
        kg = [sys.executable, "-m", "kg_rageval.cli.main"]
        diff_s, diff_cpu, out = timed(
            kg + ["ontology", "diff", str(t / "old.kgro"), str(t / "new.kgro"), "--format", "json"]
        )
        diff = json.loads(out)
        rebase_s, rebase_cpu, out = timed(
            kg
            + [
                "records",
                "rebase",
                "--from",
                str(t / "old.kgro"),
                "--to",
                str(t / "new.kgro"),
                "--data",
                str(t / "r.jsonl"),
                "--out",
                str(t / "out.jsonl"),
                "--format",
                "json",
            ]
        )
        reb = json.loads(out)
        # the re-based file's sha256 (also in the report): the same on every tree, so a
        # before/after pair of runs shows that a speed-up left the output bytes as they were
        out_hash = reb["output"]["hash"]
        result = {
            "n": args.n,
            "records": args.records,
            "made": made,
            "setup_s": round(setup, 2),
            "diff_s": round(diff_s, 2),
            "diff_cpu_s": round(diff_cpu, 2),
            "diff_inner_s": diff["seconds"],
            "load_s": diff["load_seconds"],
            "diff_counts": diff["counts"],
            "rebase_s": round(rebase_s, 2),
            "rebase_cpu_s": round(rebase_cpu, 2),
            "rebase_inner_s": reb["seconds"],
            "load_avg": os.getloadavg()[0],
            "records_rebased": reb["records_rebased"],
            "records_flagged": reb["records_flagged"],
            "records_mb": round((t / "r.jsonl").stat().st_size / 1e6, 1),
            "output_hash": out_hash,
            "targets": TARGETS,
            "pass": diff_s < TARGETS["diff_s"] and rebase_s < TARGETS["rebase_s"],
        }
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
