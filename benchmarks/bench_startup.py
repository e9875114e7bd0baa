"""Start-up of the tiny commands (issue #20; docs/performance.md, "Start-up of a tiny `score`
command"): each as a multiple of ``python -c pass`` and of ``python -c 'import numpy'``.

    python benchmarks/bench_startup.py [--repeat 7] [--tree PATH ...] [--markdown]

Fresh processes run from a temporary directory (so ``-m`` imports the tree named by
``PYTHONPATH``), the commands and the anchors interleaved, ``--repeat`` rounds; the best CPU
time (user + sys, ``os.wait4``) and the best wall time of each are kept. Every ``--tree`` (default:
this checkout) is measured in the same rounds, so a before/after comparison is one run. The
children get a bytecode cache in the temporary directory (an installed package has its
``.pyc`` files; this machine sets ``PYTHONDONTWRITEBYTECODE``), filled by one unmeasured round.

Anchors: ``python -c pass``; ``python -c 'import numpy'`` as is, and with
``OPENBLAS_THREAD_TIMEOUT=16`` (what the console script sets unless the user did:
``kg_rageval.cli.main.BLAS_SPIN_ENV``) and with ``OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import os
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
        "metrics": ["metrics"],
        "ontology inspect": ["ontology", "inspect", str(f / "hierarchy" / "vehicles.obo")],
    }


def prepare(tmp: Path) -> None:
    """The 7-record hierarchy file and the conformance fixture's ontology as a .kgro."""
    with open(ROOT / FIX / "hierarchy" / "records.jsonl", encoding="utf-8") as src:
        (tmp / "h7.jsonl").write_text("".join(src.readlines()[:7]), encoding="utf-8")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1] + '/tests')\n"
        "from conformance_helpers import build_attack_like\n"
        "from kg_rageval.ontology.cache import save_compiled\n"
        "save_compiled(build_attack_like(), sys.argv[2])"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(ROOT), str(tmp / "attack_like.kgro")],
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
        only = {s.strip() for s in args.only.split(",") if s.strip()}
        for tree in trees:
            env = {**base, "PYTHONPATH": str(tree)}
            label = "" if len(trees) == 1 else f" [{tree}]"
            for name, cmd in tiny_commands(tree, tmp).items():
                if not only or name in only:
                    jobs.append((name + label, [py, "-m", "kg_rageval.cli.main", *cmd], env))
        best: dict[str, list[float]] = {}
        for rnd in range(args.repeat + 1):  # round 0 fills the bytecode caches
            for name, cmd, env in jobs:
                cpu, wall = run_once(cmd, env, tmp)
                if rnd:
                    b = best.setdefault(name, [cpu, wall])
                    b[0], b[1] = min(b[0], cpu), min(b[1], wall)
    p_cpu, p_wall = best["python -c pass"]
    n_cpu, n_wall = best["python -c 'import numpy'"]
    print(
        f"<!-- bench_startup: repeat {args.repeat}, load average {os.getloadavg()[0]:.1f}, python {sys.version.split()[0]} -->"
    )
    print(
        "| command | best CPU | × pass (CPU) | × import numpy (CPU) | best wall | × pass (wall) | × import numpy (wall) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, (cpu, wall) in best.items():
        print(
            f"| {name} | {cpu:.3f} s | {cpu / p_cpu:.1f} | {cpu / n_cpu:.2f} | {wall:.3f} s | {wall / p_wall:.1f} | "
            f"{wall / n_wall:.2f} |"
        )
    return best


if __name__ == "__main__":
    main()
