"""RDF loading: the pyoxigraph walk against today's paths and the parsers alone (issue #20;
docs/performance.md, "RDF parsed by pyoxigraph").

    python benchmarks/bench_rdf.py FILE [FILE ...] [--repeat 3]

Each row runs in a fresh process (``PYTHONPATH`` = this tree, imports included) and reports
its CPU time (user + sys of the child, ``RUSAGE_CHILDREN``), interleaved ``--repeat`` times; the best
is kept and every run is listed:

* ``load (pyoxigraph walk)``: ``load_ontology(FILE)`` as shipped — pyoxigraph's triples walked
  as plain strings, no rdflib ``Graph``;
* ``load (pyoxigraph → rdflib Graph)``: the same with the walk-without-rdflib switched off
  (``rdf._oxigraph_store`` → ``None``): the path before this change;
* ``load (rdflib)``: rdflib's own parser too (``rdf._parse_oxigraph`` → ``False``);
* ``pyoxigraph parse`` / ``rdflib parse``: the parse alone (every triple iterated), the anchors.

The three loads must give the same content hash (checked; printed).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LOAD = (
    "import sys\nfrom kg_rageval.ontology.loaders import rdf\n{patch}"
    "from kg_rageval.ontology import load_ontology\n"
    "print(load_ontology(sys.argv[1]).content_hash)\n"
)
ROWS = {
    "load (pyoxigraph walk)": LOAD.format(patch=""),
    "load (pyoxigraph → rdflib Graph)": LOAD.format(patch="rdf._oxigraph_store = lambda *a, **k: None\n"),
    "load (rdflib)": LOAD.format(
        patch="rdf._oxigraph_store = lambda *a, **k: None\nrdf._parse_oxigraph = lambda *a, **k: False\n"
    ),
    "pyoxigraph parse": (
        "import sys, pyoxigraph as ox\nfrom kg_rageval.ontology.loaders.rdf import rdf_syntax\n"
        "fmt = {'xml': ox.RdfFormat.RDF_XML, 'turtle': ox.RdfFormat.TURTLE, 'nt': ox.RdfFormat.N_TRIPLES}"
        "[rdf_syntax(sys.argv[1])]\n"
        "print(sum(1 for _ in ox.parse(path=sys.argv[1], format=fmt)))\n"
    ),
    "rdflib parse": (
        "import sys, rdflib\nfrom kg_rageval.ontology.loaders.rdf import rdf_syntax\n"
        "print(len(rdflib.Graph().parse(sys.argv[1], format=rdf_syntax(sys.argv[1]))))\n"
    ),
}


def cpu_of(code: str, path: Path, env: dict) -> tuple[float, str]:
    """CPU seconds (user + sys) of one fresh child running ``code`` on ``path``, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, env=env, cwd="/tmp")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"{code!r} failed on {path}: {proc.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, proc.stdout.decode().strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    print(f"load average {os.getloadavg()[0]:.1f}, python {sys.version.split()[0]}")
    print("| file | path | CPU s (best) | runs | ratio to pyoxigraph parse | ratio to rdflib parse |")
    print("| --- | --- | --- | --- | --- | --- |")
    for path in (p.resolve() for p in args.files):
        runs: dict[str, list[float]] = {k: [] for k in ROWS}
        outs: dict[str, set[str]] = {k: set() for k in ROWS}
        for _ in range(args.repeat):
            for name, code in ROWS.items():
                cpu, out = cpu_of(code, path, env)
                runs[name].append(cpu)
                outs[name].add(out)
        hashes = {h for k in ROWS if k.startswith("load") for h in outs[k]}
        if len(hashes) != 1:
            raise SystemExit(f"{path}: the loads disagree: {outs}")
        best = {k: min(v) for k, v in runs.items()}
        for name in ROWS:
            print(
                f"| {path.name} | {name} | {best[name]:.2f} | {' / '.join(f'{x:.2f}' for x in runs[name])} | "
                f"{best[name] / best['pyoxigraph parse']:.2f}× | {best[name] / best['rdflib parse']:.2f}× |"
            )
        print(f"<!-- {path.name}: content hash {hashes.pop()} on all three loads -->")


if __name__ == "__main__":
    main()
