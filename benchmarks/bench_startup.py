"""Start-up of the tiny commands (issues #20, #33; docs/performance.md, "Start-up of a tiny
`score` command"): each as a multiple of ``python -c pass``, of ``python -c 'import numpy'`` and,
for ``score retrieval --qrels/--run``, of the ir_measures CLI on the same TREC pair.

    python benchmarks/bench_startup.py [--repeat 7] [--tree PATH ...] [--only NAMES] [--check-outputs]

Fresh processes run from a temporary directory (so ``-m`` imports the tree named by
``PYTHONPATH``), the commands and the anchors interleaved, ``--repeat`` rounds; the median and
the best CPU time (user + sys, ``os.wait4``) and the median wall time of each are kept. Every
``--tree`` (default: this checkout) is measured in the same rounds, so a before/after comparison
is one run. The children get a bytecode cache in the temporary directory (an installed package
has its ``.pyc`` files; this machine sets ``PYTHONDONTWRITEBYTECODE``), filled by one unmeasured
round.

``--check-outputs`` (with two or more trees) first runs every tiny command once per tree, as
measured and, for a ``score`` command, with ``--format json --rows`` too, and stops unless the
exit codes and the outputs (the trees' and the temporary directory's paths written as
placeholders) are byte-identical across the trees.

Anchors: ``python -c pass``; ``python -c 'import numpy'`` as is, and with
``OPENBLAS_THREAD_TIMEOUT=16`` (what the console script sets unless the user did:
``kg_rageval.cli.main.BLAS_SPIN_ENV``) and with ``OPENBLAS_NUM_THREADS=1``; ``python -m
ir_measures qrels run "nDCG@10 P@5 AP"`` when ir_measures is installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = "fixtures"
SPEC = """\
title: AttackAnswer
fields:
  technique: {within: [enterprise-attack], node_type: [technique, sub-technique], required: true}
"""


def tiny_commands(tree: Path, tmp: Path) -> dict[str, list[str]]:
    f = tree / FIX
    return {
        "score hierarchy": [
            "score",
            "hierarchy",
            "-O",
            str(f / "hierarchy" / "vehicles.obo"),
            "-d",
            str(tmp / "h7.jsonl"),
        ],
        "score linking": [
            "score",
            "linking",
            "-O",
            str(f / "linking" / "vehicles.tsv"),
            "-d",
            str(f / "linking" / "records.jsonl"),
        ],
        "score retrieval": [
            "score",
            "retrieval",
            "-O",
            str(f / "retrieval" / "attack-mini.tsv"),
            "-d",
            str(f / "retrieval" / "seed_metrics.jsonl"),
        ],
        "score retrieval --qrels/--run": [
            "score",
            "retrieval",
            "--qrels",
            str(f / "retrieval" / "qrels.txt"),
            "--run",
            str(f / "retrieval" / "run.txt"),
        ],
        "score conformance": [
            "score",
            "conformance",
            "-O",
            str(tmp / "attack_like.kgro"),
            "--schema-spec",
            str(f / "conformance" / "attack_spec.yaml"),
            "-d",
            str(f / "conformance" / "records.jsonl"),
        ],
        "score generation": [
            "score",
            "generation",
            "-O",
            str(f / "generation" / "vehicles.csv"),
            "-d",
            str(f / "generation" / "records.jsonl"),
        ],
        "score consistency": [
            "score",
            "consistency",
            "-O",
            str(f / "hierarchy" / "vehicles.obo"),
            "-d",
            str(f / "consistency" / "samples.jsonl"),
        ],
        "score nuggets": [
            "score",
            "nuggets",
            "-O",
            str(f / "hierarchy" / "vehicles.obo"),
            "-d",
            str(f / "nuggets" / "records.jsonl"),
        ],
        "score parsing": ["score", "parsing", "-d", str(f / "parsing" / "pages.jsonl")],
        "score chunking": ["score", "chunking", "-d", str(f / "chunking" / "docs.jsonl")],
        "score index": ["score", "index", "-d", str(f / "index" / "queries.jsonl"), "--k", "3"],
        "score cleaning": ["score", "cleaning", "-d", str(f / "cleaning" / "documents.jsonl")],
        "score routing": [
            "score",
            "routing",
            "-O",
            str(f / "hierarchy" / "vehicles.obo"),
            "-d",
            str(f / "routing" / "decisions.jsonl"),
        ],
        "score extraction": ["score", "extraction", "-d", str(f / "extraction" / "records.jsonl")],
        "score provenance": [
            "score",
            "provenance",
            "-O",
            str(f / "generation" / "vehicles.csv"),
            "-d",
            str(f / "generation" / "prov_records.jsonl"),
            "--corpus",
            str(f / "generation" / "corpus.jsonl"),
        ],
        "score relations": [
            "score",
            "relations",
            "-O",
            str(f / "ontology" / "kg_catalogue.csv"),
            "--ontology-option",
            f"triples={f / 'ontology' / 'kg_triples.csv'}",
            "-d",
            str(f / "relations" / "catalogue.jsonl"),
        ],
        "score system": [
            "score",
            "system",
            "-O",
            str(f / "hierarchy" / "vehicles.obo"),
            "-d",
            str(tmp / "q7.jsonl"),
        ],
        "score judges": [
            "score",
            "judges",
            "-O",
            str(f / "hierarchy" / "vehicles.obo"),
            "-d",
            str(tmp / "q7.jsonl"),
        ],
        "score preference": [
            "score",
            "preference",
            "-O",
            str(f / "retrieval" / "attack-mini.tsv"),
            "-d",
            str(f / "retrieval" / "preference_records.jsonl"),
            "--corpus",
            str(f / "retrieval" / "preference_corpus.jsonl"),
            "--field",
            "category",
            "--op",
            "within",
            "--value-from",
            "labels.pred",
            "--k",
            "1",
        ],
        "metrics": ["metrics"],
        "ontology inspect": ["ontology", "inspect", str(f / "hierarchy" / "vehicles.obo")],
    }


def prepare(tmp: Path) -> None:
    """The 7-record hierarchy file, the same 7 records with the quality sections of
    ``tests/family_demo.py`` (judges, system, ...: ``q7.jsonl``) and the conformance fixture's
    ontology as a .kgro."""
    with open(ROOT / FIX / "hierarchy" / "records.jsonl", encoding="utf-8") as src:
        (tmp / "h7.jsonl").write_text("".join(src.readlines()[:7]), encoding="utf-8")
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1] + '/tests')\n"
        "from conformance_helpers import build_attack_like\n"
        "from family_demo import add_quality_sections\n"
        "from kg_rageval.ontology import load_ontology\n"
        "from kg_rageval.ontology.cache import save_compiled\n"
        "save_compiled(build_attack_like(), sys.argv[2] + '/attack_like.kgro')\n"
        "recs = [json.loads(x) for x in open(sys.argv[2] + '/h7.jsonl', encoding='utf-8')]\n"
        "q = add_quality_sections(recs, load_ontology(sys.argv[1] + '/fixtures/hierarchy/vehicles.obo'))\n"
        "open(sys.argv[2] + '/q7.jsonl', 'w', encoding='utf-8').write(''.join(json.dumps(r) + '\\n' for r in q))"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(ROOT), str(tmp)],
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def run_once(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} exited {code}")
    return ru.ru_utime + ru.ru_stime, wall


def check_outputs(trees: list[Path], tmp: Path, env: dict[str, str], only: set[str]) -> int:
    """Run each tiny command once per tree (as measured; a ``score`` command also with
    ``--format json --rows``) and compare exit codes and outputs byte for byte, the trees' and
    ``tmp``'s paths replaced by placeholders; raises on a difference, returns the runs compared."""
    variants: dict[tuple[str, int], list[tuple[int, bytes]]] = {}
    for tree in trees:
        for name, cmd in tiny_commands(tree, tmp).items():
            if only and name not in only:
                continue
            forms = [cmd] + ([[*cmd, "--format", "json", "--rows"]] if cmd[0] == "score" else [])
            for k, args in enumerate(forms):
                p = subprocess.run(
                    [sys.executable, "-m", "kg_rageval.cli.main", *args],
                    cwd=tmp,
                    env={**env, "PYTHONPATH": str(tree)},
                    capture_output=True,
                    check=False,
                )
                out = p.stdout.replace(str(tree).encode(), b"<tree>").replace(str(tmp).encode(), b"<tmp>")
                variants.setdefault((name, k), []).append((p.returncode, out))
    for (name, k), outs in variants.items():
        if any(o != outs[0] for o in outs[1:]):
            raise RuntimeError(
                f"{name} ({'json --rows' if k else 'as measured'}): outputs differ across the trees"
            )
    return sum(len(v) for v in variants.values())


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument(
        "--tree",
        type=Path,
        action="append",
        default=None,
        help="a checkout to measure (repeatable; default this one); the first is 'after' in the table",
    )
    ap.add_argument("--only", default="", help="comma-separated tiny commands (default all)")
    ap.add_argument("--json", type=Path, default=None, help="also write every CPU time here")
    ap.add_argument(
        "--check-outputs",
        action="store_true",
        help="first check that every tree gives byte-identical outputs and exit codes",
    )
    args = ap.parse_args(argv)
    trees = [t.resolve() for t in (args.tree or [ROOT])]
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as tmp_s:
        tmp = Path(tmp_s)
        prepare(tmp)
        base = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONDONTWRITEBYTECODE", "OPENBLAS_THREAD_TIMEOUT", "OPENBLAS_NUM_THREADS")
        }
        base["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        jobs: list[tuple[str, list[str], dict[str, str]]] = [
            ("python -c pass", [py, "-c", "pass"], base),
            ("python -c 'import numpy'", [py, "-c", "import numpy"], base),
            (
                "import numpy, OPENBLAS_THREAD_TIMEOUT=16",
                [py, "-c", "import numpy"],
                {**base, "OPENBLAS_THREAD_TIMEOUT": "16"},
            ),
            (
                "import numpy, OPENBLAS_NUM_THREADS=1",
                [py, "-c", "import numpy"],
                {**base, "OPENBLAS_NUM_THREADS": "1"},
            ),
        ]
        if importlib.util.find_spec("ir_measures") is not None:
            trec = ROOT / FIX / "retrieval"
            jobs.append(
                (
                    IR_MEASURES,
                    [
                        py,
                        "-m",
                        "ir_measures",
                        str(trec / "qrels.txt"),
                        str(trec / "run.txt"),
                        "nDCG@10 P@5 AP",
                    ],
                    base,
                )
            )
        only = {s.strip() for s in args.only.split(",") if s.strip()}
        if args.check_outputs:
            n = check_outputs(trees, tmp, base, only)
            print(
                f"<!-- bench_startup: {n} runs, outputs and exit codes identical across {len(trees)} trees -->"
            )
        for tree in trees:
            env = {**base, "PYTHONPATH": str(tree)}
            label = "" if len(trees) == 1 else f" [{tree}]"
            for name, cmd in tiny_commands(tree, tmp).items():
                if not only or name in only:
                    jobs.append((name + label, [py, "-m", "kg_rageval.cli.main", *cmd], env))
        times: dict[str, list[tuple[float, float]]] = {}
        for rnd in range(args.repeat + 1):  # round 0 fills the bytecode caches
            for name, cmd, env in jobs:
                cpu, wall = run_once(cmd, env, tmp)
                if rnd:
                    times.setdefault(name, []).append((cpu, wall))
    med = {
        n: (statistics.median(c for c, _ in t), statistics.median(w for _, w in t)) for n, t in times.items()
    }
    p_cpu = med["python -c pass"][0]
    n_cpu = med["python -c 'import numpy'"][0]
    irm = med.get(IR_MEASURES, (float("nan"), 0.0))[0]
    print(
        f"<!-- bench_startup: repeat {args.repeat}, load average {os.getloadavg()[0]:.1f}, python {sys.version.split()[0]} -->"
    )
    print("| command | median CPU | best CPU | × pass | × import numpy | × ir_measures CLI | median wall |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, (cpu, wall) in med.items():
        best = min(c for c, _ in times[name])
        vs_irm = f"{cpu / irm:.2f}" if "--qrels" in name or name == IR_MEASURES else ""
        print(
            f"| {name} | {cpu:.3f} s | {best:.3f} s | {cpu / p_cpu:.1f} | {cpu / n_cpu:.2f} | {vs_irm} | {wall:.3f} s |"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(times, indent=1), encoding="utf-8")
    return med


IR_MEASURES = "python -m ir_measures qrels run (3 measures)"


if __name__ == "__main__":
    main()
