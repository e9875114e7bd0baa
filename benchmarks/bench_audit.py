"""Benchmark: a full audit of N synthetic records on the bundled ATT&CK ontology with every
deterministic family (hierarchy, linking, retrieval, conformance, generation with recorded
judgments, provenance), bootstrap intervals for the bounded gates, and all four reports.

    .venv/bin/python benchmarks/bench_audit.py [--n 10000] [--seed 0] [--bootstrap 1000] [--keep DIR]
        [--baseline [--baseline-seed 1]]

Records are generated from the ontology: the gold is a random technique/sub-technique; the
prediction is the gold (60 %), its parent, a sibling or a random node; the query names the
gold's label (a gold mention) and the prediction's span; the corpus has two documents per node
(with tenant entitlements, ~10 % restricted); the run is 10 documents with the gold document
at a random rank (or absent), with a category filter ``within`` the predicted node's tactic;
the answer has a structured output ``{technique, tactic}``, inline citations and a recorded
faithfulness judgment. Prints the time of each phase and of each family, the process's CPU
time and peak RSS, and the size of ``report.json``; ``--keep DIR`` writes the data, the config
(``audit.yaml``, for ``kg-rageval audit -c``) and the reports there instead of a temporary folder.

``--compare-partitioned N`` runs the same audit in this process and partitioned over a local
Dask cluster of ``N`` one-thread worker processes (``run_audit(client=)``,
:mod:`kg_rageval.audit.partitions`), alternately, ``--repeat`` times each, in one run (the cluster
started once, before): per run the wall seconds, the CPU of this process and of the workers
(``os.times`` of each worker process, before and after), per partition its records and the
worker's CPU (thread time), the client's plan and merge CPU; the reports of every run are
compared byte for byte with the first in-process one (``report.json`` without its seconds,
``report.md``, ``prov.ttl``). ``--families a,b`` audits only those families (a cheaper set for
10M records; ``--slim`` keeps only the records' id, slices and labels), ``--replicate K`` makes the records file ``K`` copies of the generated one with
fresh ids (``n * K`` records, generated once), ``--reuse`` keeps the data of an earlier
``--keep DIR`` run, ``--partitions P`` (default twice the workers).

``--baseline`` adds a paired baseline comparison: ``baseline.jsonl`` holds the same records
(the same ids, queries, gold and references) with perturbed outputs (:func:`perturb`: about 30 %
of the records get another predicted node, mention id and structured-output technique, and a
shuffled run), and the config gains ``baseline:`` with delta budgets on
``hierarchy.hierarchical_f1`` and ``retrieval.mrr`` (paired bootstrap, per-query deltas).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SPEC = """\
title: AttackAnswer
fields:
  technique: {within: [enterprise-attack], node_type: [technique, sub-technique], required: true}
  tactic: {node_type: tactic}
"""


def generate(onto, n: int, seed: int, out: Path) -> None:
    rng = np.random.default_rng(seed)
    techs = [
        i
        for i in range(len(onto))
        if onto.node_types[i] in ("technique", "sub-technique") and int(onto.status[i]) == 0
    ]
    techset = set(techs)
    tactic_of = {}
    for i in techs:
        anc = [a for a in onto.ancestor_indices(i).tolist() if onto.node_types[a] == "tactic"]
        tactic_of[i] = anc[0] if anc else 0
    docs = []
    for i in techs:
        for kind in ("desc", "proc"):
            u = rng.random()
            tenant = ["acme"] if u < 0.1 else ["acme", "globex"]
            docs.append(
                {
                    "id": f"{onto.ids[i]}:{kind}",
                    "source_id": f"attack:{onto.ids[i]}#{kind}",
                    "categories": [onto.ids[i]],
                    "tenant": tenant,
                    "type": kind,
                    "text": f"{onto.labels[i]} ({kind})",
                }
            )
    with open(out / "corpus.jsonl", "w") as fh:
        for d in docs:
            fh.write(json.dumps(d) + "\n")
    doc_ids = [d["id"] for d in docs]
    intents = ["lookup", "mitigation", "detection"]
    with open(out / "records.jsonl", "w") as fh:
        for q in range(n):
            g = techs[int(rng.integers(len(techs)))]
            u = rng.random()
            if u < 0.6:
                p = g
            elif u < 0.75:
                p = int(onto.parent_indices(g)[0])
            elif u < 0.88:
                sibs = [
                    c
                    for c in onto.child_indices(int(onto.parent_indices(g)[0])).tolist()
                    if c != g and c in techset
                ]
                p = sibs[int(rng.integers(len(sibs)))] if sibs else g
            else:
                p = techs[int(rng.integers(len(techs)))]
            gid, pid = onto.ids[g], onto.ids[p]
            label = onto.labels[g]
            text = f"Which technique covers {label}?"
            start = len("Which technique covers ")
            gold_docs = {f"{gid}:desc": 2, f"{gid}:proc": 1}
            run = [doc_ids[int(k)] for k in rng.choice(len(doc_ids), size=10, replace=False)]
            if rng.random() < 0.85 and f"{gid}:desc" not in run:
                run[int(rng.integers(10))] = f"{gid}:desc"
            tactic = onto.ids[tactic_of.get(p, 0)] if p in tactic_of else onto.ids[tactic_of[g]]
            refused = rng.random() < 0.03
            sup = ["The technique is described in the cited document."]
            uns = [] if rng.random() < 0.8 else ["It always succeeds."]
            answer = {
                "text": f"{onto.labels[p]} [1]. " + " ".join(s + "" for s in sup + uns),
                "citations": [run[0]],
                "refused": bool(refused),
                "confidence": float(rng.random()),
                "output": {"technique": pid, "tactic": onto.ids[tactic_of.get(p, tactic_of[g])]},
            }
            if not refused:
                answer["judgment"] = {"claims": sup + uns, "supported": sup, "unsupported": uns}
            rec = {
                "id": f"q{q:06d}",
                "query": text,
                "slices": {"intent": intents[q % 3]},
                "mentions": {
                    "gold": [{"start": start, "end": start + len(label), "id": gid}],
                    "pred": [{"start": start, "end": start + len(label), "id": pid, "score": 0.9}],
                },
                "labels": {"gold": [gid], "pred": [pid]},
                "retrieval": {
                    "gold": gold_docs,
                    "run": run,
                    "filters": [{"field": "category", "op": "within", "value": tactic}],
                    "principal": {"tenant": "acme" if rng.random() < 0.9 else "globex"},
                },
                "answer": answer,
                "reference": {
                    "answerable": True,
                    "answer": label,
                    "output": {"technique": gid, "tactic": onto.ids[tactic_of[g]]},
                },
            }
            fh.write(json.dumps(rec) + "\n")
    (out / "spec.yaml").write_text(SPEC)


def perturb(src: Path, dst: Path, seed: int, share: float = 0.3) -> int:
    """Write ``dst``: the records of ``src`` (one JSON object a line) with perturbed system
    outputs — for a ``share`` of the records (drawn with ``seed``) the predicted label, the
    predicted mention's id and the answer's ``output.technique`` become one node drawn from the
    file's predicted nodes, and the run is shuffled; ids, queries, gold and references are
    unchanged. Returns the number of records perturbed."""
    rng = np.random.default_rng(seed)
    pool: list[str] = []
    seen: set[str] = set()
    with open(src) as fh:
        for line in fh:
            for p in json.loads(line)["labels"]["pred"]:
                if p not in seen:
                    seen.add(p)
                    pool.append(p)
    changed = 0
    with open(src) as fh, open(dst, "w") as out:
        for line in fh:
            rec = json.loads(line)
            if rng.random() < share:
                pid = pool[int(rng.integers(len(pool)))]
                rec["labels"]["pred"] = [pid]
                for m in rec["mentions"]["pred"]:
                    m["id"] = pid
                rec["answer"]["output"]["technique"] = pid
                run = rec["retrieval"]["run"]
                rec["retrieval"]["run"] = [run[int(k)] for k in rng.permutation(len(run))]
                changed += 1
            out.write(json.dumps(rec) + "\n")
    return changed


def slim(path: Path) -> None:
    """Keep only ``id``, ``slices`` and ``labels`` of every record of ``path`` (the hierarchy
    family's section: a cheap records file for a 10M-record hierarchy audit)."""
    tmp = path.with_suffix(".tmp")
    with open(path) as src, open(tmp, "w") as dst:
        for line in src:
            rec = json.loads(line)
            dst.write(json.dumps({k: rec[k] for k in ("id", "slices", "labels")}) + "\n")
    tmp.replace(path)


def replicate(path: Path, k: int) -> None:
    """Make ``path`` ``k`` copies of itself, copy ``j > 0`` with its ids prefixed ``c<j>``."""
    tmp = path.with_suffix(".tmp")
    with open(path, "rb") as src, open(tmp, "wb") as dst:
        data = src.read()
        dst.write(data)
        for j in range(1, k):
            dst.write(data.replace(b'{"id": "q', b'{"id": "c%dq' % j))
    tmp.replace(path)


def _worker_cpu(client) -> float:
    """User + system CPU seconds of every worker process so far."""

    def times() -> float:
        import os

        t = os.times()
        return t.user + t.system

    return sum(client.run(times).values())


def _report_files(folder: Path) -> dict[str, bytes]:
    """The reports compared byte for byte: report.json without its seconds, report.md, prov.ttl."""

    def scrub(x):
        if isinstance(x, dict):
            return {k: scrub(v) for k, v in x.items() if k not in ("timings", "seconds")}
        if isinstance(x, list):
            return [scrub(v) for v in x]
        return x

    out = {"report.json": json.dumps(scrub(json.loads((folder / "report.json").read_text()))).encode()}
    for name in ("report.md", "prov.ttl"):
        if (folder / name).exists():
            out[name] = (folder / name).read_bytes()
    return out


def compare_partitioned(
    mapping: dict, out: Path, n_records: int, workers: int, repeat: int, partitions: int | None
) -> None:
    """In-process and partitioned audits alternately (see the module docstring)."""
    import gc

    from kg_rageval.audit import partitions as parts
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.reports import write_reports
    from kg_rageval.audit.runner import run_audit
    from kg_rageval.integrations.dask import local_client

    t0 = time.perf_counter()
    client = local_client(n_workers=workers, threads_per_worker=1)
    print(
        f"LocalCluster of {workers} one-thread worker processes started in {time.perf_counter() - t0:.1f} s"
    )
    print(f"records: {n_records}  families: {', '.join(mapping['families'])}  load: {os.getloadavg()}")
    ref: dict[str, bytes] | None = None
    rows = []
    try:
        for r in range(repeat):
            for mode in ("in-process", f"partitioned ({workers} workers)"):
                on = mode != "in-process"
                cfg = config_from_mapping(mapping, base_dir=out)
                gc.collect()
                parts.LAST_STATS = None
                w0 = _worker_cpu(client) if on else 0.0
                t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
                res = run_audit(cfg, progress=False, client=client if on else None, partitions=partitions)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                main = time.thread_time() - m0
                wcpu = _worker_cpu(client) - w0 if on else 0.0
                folder = out / f"report-{'p' if on else 'i'}{r}"
                write_reports(res, folder)
                files = _report_files(folder)
                if ref is None:
                    ref = files
                same = files == ref
                st = parts.LAST_STATS if on else None
                fam_wall = res.timings.get("families", 0.0)
                rows.append((r, mode, wall, cpu, wcpu, fam_wall, same, st))
                line = (
                    f"run {r} {mode:26s} wall {wall:8.2f} s  CPU here {cpu:8.2f} s  CPU workers {wcpu:8.2f} s"
                    f"  families phase {fam_wall:7.2f} s wall  reports identical: {same}"
                )
                print(line, flush=True)
                print("  phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in res.timings.items()))
                print(f"  CPU of this process's main thread {main:.2f} s (other threads {cpu - main:.2f} s)")
                if st is not None:
                    print(
                        f"  plan {st.plan_seconds:.2f} s, merge CPU here {st.merge_cpu_seconds:.2f} s, "
                        f"partitioned stream wall {st.wall:.2f} s, CPU of every client thread in it "
                        f"{st.stream_cpu_seconds:.2f} s (main thread {st.stream_main_cpu_seconds:.2f} s, of which waiting on results "
                        f"{st.receive_cpu_seconds:.2f} s); main thread outside the stream {main - st.stream_main_cpu_seconds:.2f} s; partitions: "
                        + ", ".join(
                            f"{n} rec {c:.2f} s CPU / {w:.2f} s wall"
                            for n, c, w in zip(st.records, st.cpu_seconds, st.wall_seconds)
                        )
                    )
                del res
        print(f"load after: {os.getloadavg()}")
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    assert all(row[6] for row in rows), "a run's reports differ"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--keep", type=Path, default=None, help="write data, config and reports here")
    ap.add_argument(
        "--dask-workers",
        type=int,
        default=None,
        help="score the streamed chunks on a local Dask cluster of N worker processes",
    )
    ap.add_argument(
        "--baseline",
        action="store_true",
        help="add a paired baseline: the same record ids with perturbed outputs (baseline.jsonl)",
    )
    ap.add_argument("--baseline-seed", type=int, default=1, help="seed of the baseline's perturbations")
    ap.add_argument(
        "--baseline-share",
        type=float,
        default=0.3,
        help="share of the baseline's records whose outputs are perturbed (the others are the audited lines)",
    )
    ap.add_argument(
        "--generate-only",
        action="store_true",
        help="write the data and audit.yaml (with --keep) and stop: for `kg-rageval audit -c` under a timer",
    )
    ap.add_argument(
        "--compare",
        type=Path,
        default=None,
        help="compare the reports with those in this folder: report.json (timings aside), report.md, prov.ttl",
    )
    ap.add_argument(
        "--compare-partitioned",
        type=int,
        default=None,
        metavar="N",
        help="in-process against partitioned on a local cluster of N workers, alternately",
    )
    ap.add_argument("--repeat", type=int, default=1, help="runs of each with --compare-partitioned")
    ap.add_argument("--partitions", type=int, default=None, help="partitions (default: twice the workers)")
    ap.add_argument("--families", default=None, help="comma-separated families (default: the six)")
    ap.add_argument("--replicate", type=int, default=1, help="the records file is K copies, fresh ids")
    ap.add_argument("--reuse", action="store_true", help="reuse the data already in --keep DIR")
    ap.add_argument(
        "--gate",
        action="append",
        default=[],
        help="one more gate (repeatable), e.g. 'ci_low(hierarchy.hierarchical_f1) >= 0.5' for a bootstrap",
    )
    ap.add_argument(
        "--slim",
        action="store_true",
        help="records keep only id, slices and labels (for --families hierarchy)",
    )
    args = ap.parse_args()

    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.reports import write_reports
    from kg_rageval.audit.runner import run_audit
    from kg_rageval.ontology import load_ontology

    onto_path = ROOT / "ontologies" / "enterprise-attack-18.1.json.gz"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) if args.keep is None else args.keep
        out.mkdir(parents=True, exist_ok=True)
        onto = load_ontology(onto_path)
        t0 = time.perf_counter()
        if not (args.reuse and (out / "records.jsonl").exists()):
            generate(onto, args.n, args.seed, out)
            if args.slim:
                slim(out / "records.jsonl")
            if args.replicate > 1:
                replicate(out / "records.jsonl", args.replicate)
            if args.baseline:
                perturb(
                    out / "records.jsonl", out / "baseline.jsonl", args.baseline_seed, args.baseline_share
                )
        t_gen = time.perf_counter() - t0
        families = (
            args.families.split(",")
            if args.families
            else ["hierarchy", "linking", "retrieval", "conformance", "generation", "provenance"]
        )
        mapping = {
            "name": f"bench-{args.n}",
            "ontology": str(onto_path),
            "records": "records.jsonl",
            "corpus": "corpus.jsonl",
            "spec": "spec.yaml",
            "families": {f: {} for f in families},
            "gates": [
                g
                for g in (
                    "hierarchy.hierarchical_f1 >= 0.8",
                    "ci_low(retrieval.recall@10) >= 0.8",
                    "retrieval.filter_false_exclusion_rate <= 0.02",
                    "conformance.schema_validity >= 0.99",
                    "ci_low(generation.faithfulness) >= 0.8",
                    "linking.linking_macro_f1 >= 0.8",
                    "provenance.citation_completeness >= 0.9",
                )
                if g.split("(")[-1].split(".")[0] in families
            ]
            + args.gate,
            "slice_gates": {"intent=lookup": ["retrieval.mrr >= 0.5"]} if "retrieval" in families else {},
            "node_gates": {"TA0006": ["hierarchy.hierarchical_f1 >= 0.7"]} if "hierarchy" in families else {},
            "missing_runs": {"budget": 0.05},
            "bootstrap": {"n_resamples": args.bootstrap, "seed": 0},
        }
        if args.baseline:
            mapping["baseline"] = {
                "records": "baseline.jsonl",
                "budgets": {"hierarchy.hierarchical_f1": 0.05, "retrieval.mrr": 0.05},
            }
        (out / "audit.yaml").write_text(json.dumps(mapping, indent=1))  # JSON is YAML
        if args.generate_only:
            print(f"data and audit.yaml in {out} ({t_gen:.2f} s)")
            return
        cfg = config_from_mapping(mapping, base_dir=out)
        if args.compare_partitioned is not None:
            n_records = args.n * args.replicate
            compare_partitioned(
                mapping, out, n_records, args.compare_partitioned, args.repeat, args.partitions
            )
            return
        from kg_rageval.integrations.dask import audit_client

        with audit_client(workers=args.dask_workers) as client:  # None: in-process
            t0, c0 = time.perf_counter(), time.process_time()
            res = run_audit(cfg, progress=False, client=client)
            t_audit, c_audit = time.perf_counter() - t0, time.process_time() - c0
        t0 = time.perf_counter()
        write_reports(res, out / "report")
        t_rep = time.perf_counter() - t0
        print(f"records: {args.n}  ontology: {len(onto)} nodes  bootstrap: {args.bootstrap}")
        print(f"generate data      {t_gen:7.2f} s (not part of the audit)")
        print(f"audit (run_audit)  {t_audit:7.2f} s wall, {c_audit:7.2f} s CPU of this process")
        print("  phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in res.timings.items()))
        for fam, c in res.counts["families"].items():
            print(
                f"  family {fam:12s} {c['seconds']:7.2f} s  status={c['status']} scored={c['scored_records']}"
            )
        print(f"reports (4 + manifest) {t_rep:5.2f} s")
        print(f"total audit + reports {t_audit + t_rep:6.2f} s   gates: {res.status_counts()}")
        size = (out / "report" / "report.json").stat().st_size
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"process CPU {time.process_time():.2f} s (data generation included), peak RSS {peak:.0f} MB, "
            f"report.json {size / 2**20:.2f} MB"
        )
        if args.compare is not None:
            diff = compare_reports(args.compare, out / "report")
            print(f"reports differ: {diff}" if diff else f"reports identical to {args.compare}'s")


def compare_reports(a: Path, b: Path) -> list[str]:
    """What differs between the reports in folders ``a`` and ``b``: ``report.json`` with its
    timings left out (``timings``, ``seconds``), ``report.md`` and ``prov.ttl`` byte for byte
    (an empty list: identical)."""

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in ("timings", "seconds")}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    out = []
    ja, jb = (strip(json.loads((d / "report.json").read_text())) for d in (a, b))
    out += [f"report.json: {k}" for k in sorted(set(ja) | set(jb)) if ja.get(k) != jb.get(k)]
    out += [f for f in ("report.md", "prov.ttl") if (a / f).read_bytes() != (b / f).read_bytes()]
    return out


if __name__ == "__main__":
    main()
