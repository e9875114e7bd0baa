"""End-to-end benchmark per CLI command: file in, report out, each against an anchor measured
in the same run (issue #20; docs/performance.md, "End-to-end per command").

    python benchmarks/bench_e2e.py --n 100000 --out table.md
    python benchmarks/bench_e2e.py --n 1000 --nodes 2000 --only score-hierarchy,link

Every command runs in a fresh process through the console entry point (``python -m
kg_rageval.cli.main``, ``PYTHONPATH`` = this tree), as a user runs it: reading, the ontology
load, the work and writing the report are all included. Its **CPU time** (user + sys of the
child, ``os.wait4``) and **peak RSS** are reported beside an *anchor*: the least a tool must do
with the same input, in a fresh process too, in the same run (interleaved with the command
when ``--repeat`` > 1; the best of the repeats is kept):

* records commands: ``json.loads`` of every line of the records file (and ``orjson.loads``),
  the rows held; and the floor of a streamed command (issue #33): ``json.loads`` of every line,
  each dropped, plus the ontology load, in one process;
* ``score retrieval`` from TREC files and ``compare``: pytrec_eval and ranx reading the same
  files and computing the same measures (``compare``: ranx's ``compare`` with a paired t-test);
* ``link``: pyahocorasick, an automaton over the same labels scanning the same texts;
* ``ontology compile/inspect`` of Turtle: pyoxigraph's and rdflib's parse of the file; of an
  edge table: the stdlib ``csv`` reader; of a ``.kgro``: ``import numpy``;
* start-up (``metrics``, a 7-record ``score hierarchy``): ``python -c pass`` and ``python -c
  'import numpy'`` (also with ``OPENBLAS_THREAD_TIMEOUT=16``, which the console script sets
  unless the user did), best of ``--startup-repeat`` (7) interleaved runs.

Data is generated into a temporary directory (kept with ``--keep DIR``): ``--n`` records on
the bundled ATT&CK ontology with every section (``benchmarks/bench_audit.py``'s generator: labels,
mentions, a 10-document run with a category filter, structured output, citations, recorded
judgments; a corpus of two documents per technique), the same queries as TREC qrels/run files
(and two perturbed runs for ``compare``), ``--nodes``-concept SNOMED-shaped DAGs
(``benchmarks/synthetic.py``) as an edge table and as Turtle, two releases of a DAG for
``records rebase`` and a test-set corpus. ``score relations`` needs the ATT&CK knowledge graph
in ``../shared/data`` and is left out without it. Anchors whose library is not installed are
left out, and said so. Children get a bytecode cache under the temporary directory (this
machine sets ``PYTHONDONTWRITEBYTECODE``; an installed package has its ``.pyc`` files), filled by
``compileall`` before the first measurement; ``--warmup`` also runs each command and anchor once
unmeasured first (numba caches, the page cache).

Output: a Markdown table (command, n, CPU s, peak MB, anchor, anchor CPU s, ratio) on stdout and
in ``--out``; ``--json`` writes the raw figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ATTACK = ROOT / "ontologies" / "enterprise-attack-18.1.json.gz"
ATTACK_KG = ROOT.parent / "shared" / "data" / "attack" / "enterprise-attack-kg-18.1.json.gz"
KG = [sys.executable, "-m", "kg_rageval.cli.main"]

# ------------------------------------------------------------------ anchors (python -c CODE ARGS)
ANCHOR_CODE = {
    "python -c pass": "pass",
    "import numpy": "import numpy",
    "import numpy, short BLAS spin": "import os\nos.environ.setdefault('OPENBLAS_THREAD_TIMEOUT', '16')\nimport numpy",
    "json.loads": "import json, sys\nwith open(sys.argv[1], 'rb') as f:\n    rows = [json.loads(l) for l in f]",
    "orjson.loads": "import orjson, sys\nwith open(sys.argv[1], 'rb') as f:\n    rows = [orjson.loads(l) for l in f]",
    # the floor of a streamed records command (issue #33): each line parsed and dropped, and the
    # ontology loaded, in one process (what every ``score <family>`` must do at the least)
    "json.loads streamed + ontology load": "import json, sys\n"
    "from kg_rageval.ontology import load_ontology\n"
    "load_ontology(sys.argv[2])\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for l in f:\n"
    "        json.loads(l)",
    "csv reader": "import csv, sys\nwith open(sys.argv[1], newline='') as f:\n"
    "    rows = list(csv.reader(f, delimiter='\\t'))",
    "pyoxigraph parse": "import sys, pyoxigraph\n"
    "n = sum(1 for _ in pyoxigraph.parse(path=sys.argv[1], format=pyoxigraph.RdfFormat.TURTLE))",
    "rdflib parse": "import sys, rdflib\ng = rdflib.Graph(); g.parse(sys.argv[1], format='turtle')",
    "pytrec_eval": (
        "import sys, pytrec_eval\n"
        "def read(p, run):\n"
        "    d = {}\n"
        "    with open(p) as f:\n"
        "        for line in f:\n"
        "            c = line.split()\n"
        "            d.setdefault(c[0], {})[c[2]] = float(c[4]) if run else int(c[3])\n"
        "    return d\n"
        "qrels, run = read(sys.argv[1], False), read(sys.argv[2], True)\n"
        "ev = pytrec_eval.RelevanceEvaluator(qrels, {'P_10', 'ndcg_cut_10', 'recip_rank', 'map', 'recall_100'})\n"
        "res = ev.evaluate(run)\n"
        "means = {m: sum(q[m] for q in res.values()) / len(res) for m in next(iter(res.values()))}"
    ),
    "ranx": (
        "import sys\nfrom ranx import Qrels, Run, evaluate\n"
        "q = Qrels.from_file(sys.argv[1], kind='trec'); r = Run.from_file(sys.argv[2], kind='trec')\n"
        "evaluate(q, r, ['precision@10', 'ndcg@10', 'mrr', 'map', 'recall@100'])"
    ),
    "ranx compare": (
        "import sys\nfrom ranx import Qrels, Run, compare\n"
        "q = Qrels.from_file(sys.argv[1], kind='trec')\n"
        "runs = [Run.from_file(p, kind='trec', name=f's{i}') for i, p in enumerate(sys.argv[2:])]\n"
        "compare(q, runs=runs, metrics=['ndcg@10', 'mrr'], max_p=0.05, stat_test='student')"
    ),
    "pyahocorasick": (
        "import sys, ahocorasick\nA = ahocorasick.Automaton()\n"
        "with open(sys.argv[1], encoding='utf-8') as f:\n"
        "    for line in f:\n"
        "        label, _, cid = line.rstrip('\\n').partition('\\t')\n"
        "        A.add_word(label, cid)\n"
        "A.make_automaton()\n"
        "with open(sys.argv[2], encoding='utf-8') as f:\n"
        "    hits = [list(A.iter(line.rstrip('\\n').lower())) for line in f]"
    ),
}
ANCHOR_NEEDS = {
    "orjson.loads": "orjson",
    "pyoxigraph parse": "pyoxigraph",
    "rdflib parse": "rdflib",
    "pytrec_eval": "pytrec_eval",
    "ranx": "ranx",
    "ranx compare": "ranx",
    "pyahocorasick": "ahocorasick",
}


@dataclasses.dataclass
class Run:
    cpu: float
    rss_mb: float
    wall: float


@dataclasses.dataclass
class Case:
    name: str
    n: int
    argv: list[str]  # after ``kg-rageval``
    anchors: list[tuple[str, list[str]]]  # (anchor name, its argv)
    startup: bool = False


def measure(cmd: list[str], cwd: Path, env: dict[str, str]) -> Run:
    """CPU (user + sys) and peak RSS of a fresh process; raises on a failing exit (0 and 1,
    a failed gate, are fine). Linux carries a parent's peak RSS into its forked child's
    ``ru_maxrss``: this process stays small (standard library only; the data is generated in a
    child process) so that the figure is the command's."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            err.seek(0)
            tail = err.read().decode(errors="replace")[-3000:]
            raise RuntimeError(f"{' '.join(cmd)} exited {code}:\n{tail}")
    return Run(cpu=ru.ru_utime + ru.ru_stime, rss_mb=ru.ru_maxrss / 1024, wall=wall)


# ------------------------------------------------------------------ data
def _write_jsonl(path: Path, rows) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")


def make_records_data(d: Path, n: int, seed: int) -> dict[str, Path]:
    """Records with every section on ATT&CK, the corpus, a spec, TREC files, texts, labels."""
    import numpy as np

    from benchmarks.bench_audit import generate
    from kg_rageval.ontology import load_ontology

    onto = load_ontology(ATTACK)
    generate(onto, n, seed, d)  # records.jsonl, corpus.jsonl, spec.yaml
    rng = np.random.default_rng(seed + 1)
    qrels, runs = d / "qrels.trec", [d / f"run{k}.trec" for k in range(3)]
    fq = open(qrels, "w")
    fr = [open(p, "w") for p in runs]
    texts = open(d / "texts.txt", "w", encoding="utf-8")
    with open(d / "records.jsonl", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            qid = rec["id"]
            texts.write(rec["query"] + "\n")
            for doc, grade in rec["retrieval"]["gold"].items():
                fq.write(f"{qid} 0 {doc} {grade}\n")
            ranked = rec["retrieval"]["run"]
            for k, f in enumerate(fr):
                order = list(ranked)
                if k:  # perturbed systems: a few swapped neighbours
                    for i in range(len(order) - 1):
                        if rng.random() < 0.2 * k:
                            order[i], order[i + 1] = order[i + 1], order[i]
                for rank, doc in enumerate(order, 1):
                    f.write(f"{qid} Q0 {doc} {rank} {len(order) - rank + 1} sys{k}\n")
    fq.close()
    texts.close()
    for f in fr:
        f.close()
    with open(d / "labels.tsv", "w", encoding="utf-8") as fh:  # the dictionary linker's surface forms
        for i, cid in enumerate(onto.ids):
            for form in {onto.labels[i], *onto.synonyms[i]} - {None, ""}:
                fh.write(f"{form.lower()}\t{cid}\n")
    (d / "audit.yaml").write_text(
        json.dumps(
            {
                "name": f"bench-e2e-{n}",
                "ontology": str(ATTACK),
                "records": "records.jsonl",
                "corpus": "corpus.jsonl",
                "spec": "spec.yaml",
                "families": {
                    f: {}
                    for f in ("hierarchy", "linking", "retrieval", "conformance", "generation", "provenance")
                },
                "gates": [
                    "hierarchy.hierarchical_f1 >= 0.8",
                    "ci_low(retrieval.recall@10) >= 0.8",
                    "conformance.schema_validity >= 0.99",
                    "ci_low(generation.faithfulness) >= 0.8",
                    "linking.linking_macro_f1 >= 0.8",
                    "provenance.citation_completeness >= 0.9",
                ],
                "slice_gates": {"intent=lookup": ["retrieval.mrr >= 0.5"]},
                "node_gates": {"TA0006": ["hierarchy.hierarchical_f1 >= 0.7"]},
                "bootstrap": {"n_resamples": 1000, "seed": 0},
            },
            indent=1,
        )
    )
    with (
        open(d / "records.jsonl", encoding="utf-8") as src,
        open(d / "tiny.jsonl", "w", encoding="utf-8") as dst,
    ):
        for _ in range(7):
            dst.write(src.readline())
    return {
        "records": d / "records.jsonl",
        "corpus": d / "corpus.jsonl",
        "spec": d / "spec.yaml",
        "qrels": qrels,
        "runs": runs,
        "texts": d / "texts.txt",
        "labels": d / "labels.tsv",
        "audit": d / "audit.yaml",
        "tiny": d / "tiny.jsonl",
    }


def make_dag_data(d: Path, nodes: int, n: int, seed: int) -> dict[str, Path]:
    """A --nodes DAG as an edge table and as Turtle; two releases and records for rebase;
    a test-set ontology (.kgro) and corpus."""
    from benchmarks.bench_drift import releases, write_records
    from benchmarks.bench_testset import build_ontology, write_corpus
    from benchmarks.synthetic import make_dag, write_edge_table
    from kg_rageval.ontology.cache import save_compiled

    write_edge_table(str(d / "dag.tsv"), n=nodes, seed=seed)
    child, parent = make_dag(nodes, seed=seed)
    with open(d / "dag.ttl", "w", encoding="utf-8") as fh:
        fh.write(
            "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
            "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n@prefix n: <http://example.org/n/> .\n"
        )
        for i in range(nodes):
            fh.write(f'n:C{i} a owl:Class ; rdfs:label "concept {i}" .\n')
        for c, p in zip(child.tolist(), parent.tolist()):
            fh.write(f"n:C{c} rdfs:subClassOf n:C{p} .\n")
    old, new, _ = releases(nodes, seed=seed)
    save_compiled(old, d / "old.kgro")
    save_compiled(new, d / "new.kgro")
    write_records(d / "rebase.jsonl", old, n)
    ts = build_ontology(nodes, seed=seed)
    save_compiled(ts, d / "testset.kgro")
    write_corpus(d / "testset_corpus.jsonl", ts, max(n, 100), seed=seed)
    return {
        "tsv": d / "dag.tsv",
        "ttl": d / "dag.ttl",
        "old": d / "old.kgro",
        "new": d / "new.kgro",
        "rebase": d / "rebase.jsonl",
        "ts_onto": d / "testset.kgro",
        "ts_corpus": d / "testset_corpus.jsonl",
    }


def make_relations_data(d: Path, n: int) -> Path | None:
    if not ATTACK_KG.is_file():
        return None
    from benchmarks.bench_relations import build_records
    from kg_rageval.ontology import load_ontology

    records = build_records(load_ontology(ATTACK_KG), 10 * n)
    _write_jsonl(d / "relations.jsonl", records)
    return d / "relations.jsonl"


# ------------------------------------------------------------------ cases
def cases(d: Path, rec: dict, dag: dict, rel: Path | None, n: int, nodes: int) -> list[Case]:
    o, r = str(ATTACK), str(rec["records"])
    js = [("json.loads", [r]), ("orjson.loads", [r]), ("json.loads streamed + ontology load", [r, o])]
    start = [("python -c pass", []), ("import numpy", []), ("import numpy, short BLAS spin", [])]
    trec = [str(rec["qrels"]), str(rec["runs"][0])]
    out = lambda name: str(d / "out" / name)  # noqa: E731
    cs = [
        Case("metrics", 0, ["metrics"], start, startup=True),
        Case(
            "score hierarchy (7 records)",
            7,
            ["score", "hierarchy", "-O", o, "-d", str(rec["tiny"])],
            start,
            startup=True,
        ),
        Case("score hierarchy", n, ["score", "hierarchy", "-O", o, "-d", r, "--format", "json"], js),
        Case("score linking", n, ["score", "linking", "-O", o, "-d", r, "--format", "json"], js),
        Case(
            "score retrieval (records + corpus)",
            n,
            ["score", "retrieval", "-O", o, "-d", r, "--corpus", str(rec["corpus"]), "--format", "json"],
            js,
        ),
        Case(
            "score retrieval (TREC files)",
            n,
            [
                "score",
                "retrieval",
                "--qrels",
                trec[0],
                "--run",
                trec[1],
                "-m",
                "P@10,nDCG@10,RR,AP,R@100",
                "--format",
                "json",
            ],
            [("pytrec_eval", trec), ("ranx", trec)],
        ),
        Case(
            "score conformance",
            n,
            ["score", "conformance", "-O", o, "--schema-spec", str(rec["spec"]), "-d", r, "--format", "json"],
            js,
        ),
        Case("score generation", n, ["score", "generation", "-O", o, "-d", r, "--format", "json"], js),
        Case(
            "score provenance",
            n,
            ["score", "provenance", "-O", o, "-d", r, "--corpus", str(rec["corpus"]), "--format", "json"],
            js,
        ),
        Case(
            "link",
            n,
            ["link", "-O", o, "--text", str(rec["texts"]), "-o", out("links.jsonl")],
            [("pyahocorasick", [str(rec["labels"]), str(rec["texts"])])],
        ),
        Case("audit", n, ["audit", "-c", str(rec["audit"]), "-o", out("audit"), "-q"], js),
        Case(
            "compare (3 runs, t-test)",
            n,
            [
                "compare",
                "--qrels",
                trec[0],
                *[a for p in rec["runs"] for a in ("--run", str(p))],
                "-m",
                "nDCG@10,RR",
                "--test",
                "t",
                "--format",
                "json",
            ],
            [("ranx compare", [trec[0], *map(str, rec["runs"])])],
        ),
        Case(
            "ontology compile (Turtle)",
            nodes,
            ["ontology", "compile", str(dag["ttl"]), "-o", out("ttl.kgro")],
            [("pyoxigraph parse", [str(dag["ttl"])]), ("rdflib parse", [str(dag["ttl"])])],
        ),
        Case(
            "ontology inspect (Turtle)",
            nodes,
            ["ontology", "inspect", str(dag["ttl"]), "--format", "json"],
            [("pyoxigraph parse", [str(dag["ttl"])]), ("rdflib parse", [str(dag["ttl"])])],
        ),
        Case(
            "ontology compile (edge table)",
            nodes,
            ["ontology", "compile", str(dag["tsv"]), "-o", out("tsv.kgro")],
            [("csv reader", [str(dag["tsv"])])],
        ),
        Case(
            "ontology inspect (.kgro)",
            nodes,
            ["ontology", "inspect", str(dag["old"]), "--format", "json"],
            [("import numpy", [])],
        ),
        Case(
            "records rebase",
            n,
            [
                "records",
                "rebase",
                "--from",
                str(dag["old"]),
                "--to",
                str(dag["new"]),
                "-d",
                str(dag["rebase"]),
                "-o",
                out("rebased.jsonl"),
                "--format",
                "json",
            ],
            [("json.loads", [str(dag["rebase"])]), ("orjson.loads", [str(dag["rebase"])])],
        ),
        Case(
            "testset build",
            max(n, 100),
            [
                "testset",
                "build",
                "-O",
                str(dag["ts_onto"]),
                "--corpus",
                str(dag["ts_corpus"]),
                "--out",
                out("testset"),
                "--n",
                str(max(n // 10, 10)),
                "--format",
                "json",
            ],
            [("json.loads", [str(dag["ts_corpus"])])],
        ),
    ]
    if rel is not None:
        cs.insert(
            9,
            Case(
                "score relations",
                n,
                ["score", "relations", "-O", str(ATTACK_KG), "-d", str(rel), "--format", "json"],
                [("json.loads", [str(rel)]), ("orjson.loads", [str(rel)])],
            ),
        )
    return cs


class _Any(dict):
    """Stands for the data paths when only the command names are wanted."""

    def __missing__(self, key: str):
        return ["-"] * 3 if key == "runs" else "-"


def slug(name: str) -> str:
    """``score retrieval (TREC files)`` -> ``score-retrieval-trec-files``."""
    return "-".join("".join(ch if ch.isalnum() else " " for ch in name.lower()).split())


def selected(name: str, selectors: set[str]) -> bool:
    """A selector picks a command by its slug or a prefix of whole words (``score`` picks every
    ``score ...`` command, ``score-retrieval`` both retrieval rows)."""
    s = slug(name)
    return any(s == sel or s.startswith(sel + "-") for sel in selectors)


# ------------------------------------------------------------------ run
def run_cases(
    cs: list[Case],
    d: Path,
    env: dict,
    repeat: int,
    startup_repeat: int,
    warmup: bool,
    log: Callable[[str], None],
    skip_anchors: frozenset[str] = frozenset(),
) -> list[dict]:
    anchor_best: dict[tuple, Run] = {}
    rows = []
    for c in cs:
        (d / "out").mkdir(exist_ok=True)
        reps = startup_repeat if c.startup else repeat
        anchors = [
            (a, args)
            for a, args in c.anchors
            if a not in skip_anchors
            and (a not in ANCHOR_NEEDS or importlib.util.find_spec(ANCHOR_NEEDS[a]) is not None)
        ]
        if warmup or c.startup:  # the caches (numba, pages) of the command and its anchors
            measure(KG + c.argv, d, env)
            for a, args in anchors:
                if (a, tuple(args)) not in anchor_best:
                    measure([sys.executable, "-c", ANCHOR_CODE[a], *args], d, env)
        best: Run | None = None
        for _ in range(reps):
            for a, args in anchors:
                key = (a, tuple(args))
                run = measure([sys.executable, "-c", ANCHOR_CODE[a], *args], d, env)
                if key not in anchor_best or run.cpu < anchor_best[key].cpu:
                    anchor_best[key] = run
            run = measure(KG + c.argv, d, env)
            best = run if best is None or run.cpu < best.cpu else best
        assert best is not None
        shutil.rmtree(d / "out", ignore_errors=True)
        row = {
            "command": c.name,
            "n": c.n,
            "cpu_s": round(best.cpu, 3),
            "peak_mb": round(best.rss_mb, 1),
            "wall_s": round(best.wall, 3),
            "repeats": reps,
            "anchors": [],
        }
        for a, args in anchors:
            ar = anchor_best[(a, tuple(args))]
            row["anchors"].append(
                {
                    "anchor": a,
                    "cpu_s": round(ar.cpu, 3),
                    "peak_mb": round(ar.rss_mb, 1),
                    "ratio": round(best.cpu / ar.cpu, 2) if ar.cpu > 0 else None,
                }
            )
        left = [a for a, _ in c.anchors if (a, _) not in anchors]
        if left:
            row["anchors_left_out"] = left
        rows.append(row)
        log(
            f"{c.name}: {best.cpu:.2f} s CPU, {best.rss_mb:.0f} MB; "
            + ", ".join(f"{x['anchor']} {x['cpu_s']:.2f} s ({x['ratio']}x)" for x in row["anchors"])
        )
    return rows


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        f"<!-- bench_e2e: {json.dumps(meta)} -->",
        "| command | n | CPU s | peak MB | anchor | anchor CPU s | ratio |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        anchors = r["anchors"] or [{"anchor": "(none installed)", "cpu_s": None, "ratio": None}]
        for k, a in enumerate(anchors):
            head = (
                f"| `{r['command']}` | {r['n']:,} | {r['cpu_s']:.2f} | {r['peak_mb']:.0f} "
                if k == 0
                else "| 〃 | | | "
            )
            cpu = "" if a["cpu_s"] is None else f"{a['cpu_s']:.2f}"
            ratio = "" if a["ratio"] is None else f"{a['ratio']:.2f}×"
            lines.append(f"{head}| {a['anchor']} | {cpu} | {ratio} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="records per records command (default 10,000)")
    ap.add_argument(
        "--nodes",
        type=int,
        default=None,
        help="concepts of the synthetic DAGs (ontology compile/inspect, rebase, testset); default min(n, 100,000)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each command and anchor (best CPU kept)")
    ap.add_argument("--startup-repeat", type=int, default=7)
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated commands by slug or slug prefix, e.g. score-hierarchy,link,audit or score",
    )
    ap.add_argument("--skip", default="", help="comma-separated commands (slug or prefix) to leave out")
    ap.add_argument(
        "--skip-anchor",
        default="",
        help="comma-separated anchor names to leave out (e.g. 'json.loads,orjson.loads': at 1,000,000 "
        "records their held rows take GBs)",
    )
    ap.add_argument("--out", type=Path, default=None, help="write the Markdown table here")
    ap.add_argument("--json", type=Path, default=None, help="write the raw figures here")
    ap.add_argument(
        "--keep", type=Path, default=None, help="generate the data into this directory and keep it"
    )
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="with --keep DIR: use the data a previous run generated there (DIR/paths.json) instead "
        "of generating it again (minutes at 1,000,000 records)",
    )
    ap.add_argument("--warmup", action="store_true", help="run each command and anchor once unmeasured first")
    ap.add_argument("--no-pyc-cache", action="store_true", help="children compile the package on every run")
    ap.add_argument("--generate-into", type=Path, default=None, help=argparse.SUPPRESS)  # the data child
    args = ap.parse_args(argv)
    nodes = args.nodes or max(min(args.n, 100_000), 1_000)
    if args.generate_into is not None:
        d = args.generate_into
        paths = {
            "records": make_records_data(d, args.n, args.seed),
            "dag": make_dag_data(d, nodes, args.n, args.seed),
            "relations": make_relations_data(d, args.n),
        }
        (d / "paths.json").write_text(json.dumps(paths, default=str))
        return []
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731

    tmp = tempfile.mkdtemp(prefix="bench_e2e_") if args.keep is None else str(args.keep)
    d = Path(tmp)
    d.mkdir(parents=True, exist_ok=True)
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if not args.no_pyc_cache:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(d / "pycache")
        only = {s for s in args.only.split(",") if s}
        skip = {s for s in args.skip.split(",") if s}
        names = [c.name for c in cases(d, _Any(), _Any(), "-", args.n, nodes)]  # before any work
        unknown = {sel for sel in only | skip if not any(selected(name, {sel}) for name in names)}
        if unknown:
            raise SystemExit(f"no command matches {sorted(unknown)}; commands: {', '.join(map(slug, names))}")
        t0 = time.perf_counter()
        reuse = args.reuse and args.keep is not None and (d / "paths.json").exists()
        if not reuse:
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--generate-into",
                    str(d),
                    "--n",
                    str(args.n),
                    "--nodes",
                    str(nodes),
                    "--seed",
                    str(args.seed),
                ],
                check=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
        paths = json.loads((d / "paths.json").read_text())
        rec, dag, rel = paths["records"], paths["dag"], paths["relations"]
        log(f"data: {time.perf_counter() - t0:.1f} s in {d}")
        cs = cases(d, rec, dag, rel, args.n, nodes)
        cs = [c for c in cs if (not only or selected(c.name, only)) and not selected(c.name, skip)]
        if not args.no_pyc_cache:
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(ROOT / "kg_rageval")],
                check=True,
                env=env,
                stdout=subprocess.DEVNULL,
            )
        skip_anchors = frozenset(a for a in args.skip_anchor.split(",") if a)
        rows = run_cases(cs, d, env, args.repeat, args.startup_repeat, args.warmup, log, skip_anchors)
        meta = {
            "n": args.n,
            "nodes": nodes,
            "repeat": args.repeat,
            "load_avg": round(os.getloadavg()[0], 1),
            "python": sys.version.split()[0],
            "relations": rel is not None,
        }
        table = markdown(rows, meta)
        print(table)
        if args.out:
            args.out.write_text(table)
        if args.json:
            args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        return rows
    finally:
        if args.keep is None:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
