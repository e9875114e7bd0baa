"""Start-up cost: a tiny command imports only what it uses (issue #20).

Each tiny command runs in a fresh interpreter through the console-script entry point
(``main()`` with ``sys.argv``), then reports ``sys.modules``. Checked: module *absence*, never
timings (the figures are in docs/performance.md, "Start-up of a tiny ``score`` command"):

* no command imports scipy (the hierarchy roll-up pools with NumPy; equal to scipy's sparse
  product bit for bit: ``tests/results/test_rollup_bounded.py``), pandas/pyarrow (an edge table under
  1 MiB is read by the stdlib), rdflib/pyoxigraph (no RDF input), ``importlib.metadata`` (no
  entry-point scan for a built-in format) or the judges' HTTP client (``urllib.request``);
* the commands without a YAML spec or judgments import neither pydantic nor yaml, and those
  whose code avoids NumPy 2's plain ``np.unique`` do not import ``numpy.ma``;
* ``metrics`` does not import NumPy at all;
* the console script shortens OpenBLAS's idle spin (``OPENBLAS_THREAD_TIMEOUT``) unless the
  user set it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "fixtures"

_PROBE = r"""
import json, os, sys
sys.argv = ["kg-rageval", *sys.argv[1:]]
from kg_rageval.cli.main import main
try:
    code = main()
except SystemExit as exc:
    code = exc.code
print("\n" + json.dumps({"code": code, "modules": sorted(sys.modules),
                         "blas": os.environ.get("OPENBLAS_THREAD_TIMEOUT")}))
"""

# never imported by a tiny command (``importlib.metadata``: pydantic scans its plugin entry
# points when it builds a model, so the commands that validate with pydantic are let off)
NEVER = (
    "numba",
    "torch",
    "scipy",
    "pandas",
    "pyarrow",
    "rdflib",
    "pyoxigraph",
    "owlready2",
    "sklearn",
    "jsonschema",
    "urllib.request",
    "http.client",
    "ssl",
)
NO_SCAN = ("importlib.metadata",)


def _probe(*args: str, env: dict | None = None) -> dict:
    environ = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**environ, "PYTHONPATH": str(ROOT), **(env or {})},
        check=False,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _present(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


@pytest.fixture(scope="module")
def attack_kgro(tmp_path_factory):
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from conformance_helpers import build_attack_like
    finally:
        sys.path.pop(0)
    from kg_rageval.ontology.cache import save_compiled

    return str(save_compiled(build_attack_like(), tmp_path_factory.mktemp("kgro") / "attack_like.kgro"))


TINY = {
    "score hierarchy": [
        "score",
        "hierarchy",
        "-O",
        str(FIX / "hierarchy" / "vehicles.obo"),
        "-d",
        str(FIX / "hierarchy" / "records.jsonl"),
    ],
    "score linking": [
        "score",
        "linking",
        "-O",
        str(FIX / "linking" / "vehicles.tsv"),
        "-d",
        str(FIX / "linking" / "records.jsonl"),
    ],
    "score retrieval": [
        "score",
        "retrieval",
        "-O",
        str(FIX / "retrieval" / "attack-mini.tsv"),
        "-d",
        str(FIX / "retrieval" / "seed_metrics.jsonl"),
    ],
    "score generation": [
        "score",
        "generation",
        "-O",
        str(FIX / "generation" / "vehicles.csv"),
        "-d",
        str(FIX / "generation" / "records.jsonl"),
    ],
    "score retrieval --qrels/--run": [
        "score",
        "retrieval",
        "--qrels",
        str(FIX / "retrieval" / "qrels.txt"),
        "--run",
        str(FIX / "retrieval" / "run.txt"),
    ],
    "score consistency": [
        "score",
        "consistency",
        "-O",
        str(FIX / "hierarchy" / "vehicles.obo"),
        "-d",
        str(FIX / "consistency" / "samples.jsonl"),
    ],
    "score nuggets": [
        "score",
        "nuggets",
        "-O",
        str(FIX / "hierarchy" / "vehicles.obo"),
        "-d",
        str(FIX / "nuggets" / "records.jsonl"),
    ],
    "score parsing": ["score", "parsing", "-d", str(FIX / "parsing" / "pages.jsonl")],
    "score chunking": ["score", "chunking", "-d", str(FIX / "chunking" / "docs.jsonl")],
    "score index": ["score", "index", "-d", str(FIX / "index" / "queries.jsonl"), "--k", "3"],
    "score provenance": [
        "score",
        "provenance",
        "-O",
        str(FIX / "generation" / "vehicles.csv"),
        "-d",
        str(FIX / "generation" / "prov_records.jsonl"),
        "--corpus",
        str(FIX / "generation" / "corpus.jsonl"),
    ],
    "score relations": [
        "score",
        "relations",
        "-O",
        str(FIX / "ontology" / "kg_catalogue.csv"),
        "--ontology-option",
        f"triples={FIX / 'ontology' / 'kg_triples.csv'}",
        "-d",
        str(FIX / "relations" / "catalogue.jsonl"),
    ],
    "score system": ["score", "system", "-O", str(FIX / "hierarchy" / "vehicles.obo"), "-d", "{q7}"],
    "score judges": ["score", "judges", "-O", str(FIX / "hierarchy" / "vehicles.obo"), "-d", "{q7}"],
    "score preference": [
        "score",
        "preference",
        "-O",
        str(FIX / "retrieval" / "attack-mini.tsv"),
        "-d",
        str(FIX / "retrieval" / "preference_records.jsonl"),
        "--corpus",
        str(FIX / "retrieval" / "preference_corpus.jsonl"),
        "--field",
        "category",
        "--op",
        "within",
        "--value-from",
        "labels.pred",
        "--k",
        "1",
    ],
    "ontology inspect": ["ontology", "inspect", str(FIX / "hierarchy" / "vehicles.obo")],
    "metrics": ["metrics"],
}
_LEAN = NO_SCAN + ("pydantic", "yaml", "numpy.ma", "numpy.random")
# what each may not import beyond NEVER (what the command does not use)
NOT_USED = {
    "score hierarchy": NO_SCAN + ("pydantic", "yaml", "numpy.ma", "numpy.random"),
    "score linking": NO_SCAN + ("pydantic", "yaml", "numpy.random"),
    "score retrieval": NO_SCAN + ("pydantic", "yaml", "numpy.ma", "numpy.random"),
    "score generation": ("yaml", "numpy.random"),  # pydantic: the faithfulness judgments
    # issue #33: the TREC pair reads no numba kernels and no scipy; system no longer imports the
    # generation package's judgment models (pydantic); judges and nuggets take the normal
    # quantile of the usual levels without scipy.stats (kg_rageval.base.normal)
    "score retrieval --qrels/--run": _LEAN,
    "score consistency": _LEAN,
    "score nuggets": ("yaml", "numpy.random"),  # pydantic: the nugget-support contract
    "score parsing": _LEAN,
    "score chunking": _LEAN,
    "score index": _LEAN,
    "score provenance": ("yaml", "numpy.ma", "numpy.random"),  # pydantic: the judgment contract
    "score relations": NO_SCAN + ("pydantic", "yaml", "numpy.random"),
    "score system": NO_SCAN + ("pydantic", "yaml"),  # numpy.random: its bootstrap intervals
    "score judges": ("yaml", "numpy.ma", "numpy.random"),  # pydantic: the rubric contracts
    "score preference": _LEAN,
    "ontology inspect": NO_SCAN + ("pydantic", "yaml", "numpy.ma", "numpy.random"),
    "metrics": ("numpy", "pydantic", "yaml"),  # importlib.metadata: it lists the entry-point families too
}


def test_score_hierarchy_help_imports_no_scipy():
    assert not _present(_probe("score", "hierarchy", "--help")["modules"], NEVER + NO_SCAN)


@pytest.fixture(scope="module")
def quality_records(tmp_path_factory):
    """The first 7 hierarchy fixture records with the quality sections of tests/family_demo.py
    (judges, system, parsing, nuggets, chunking)."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from family_demo import add_quality_sections
    finally:
        sys.path.pop(0)
    from kg_rageval.ontology import load_ontology

    recs = [json.loads(x) for x in (FIX / "hierarchy" / "records.jsonl").read_text().splitlines()[:7]]
    path = tmp_path_factory.mktemp("q7") / "q7.jsonl"
    quality = add_quality_sections(recs, load_ontology(FIX / "hierarchy" / "vehicles.obo"))
    path.write_text("".join(json.dumps(r) + "\n" for r in quality))
    return str(path)


@pytest.mark.parametrize("name", list(TINY))
def test_tiny_command_imports_only_what_it_uses(name, quality_records):
    res = _probe(*(a.replace("{q7}", quality_records) for a in TINY[name]))
    assert res["code"] == 0
    assert "kg_rageval.cli.main" in res["modules"]  # the probe saw the command's modules
    assert _present(res["modules"], NEVER + NOT_USED[name]) == []


def test_tiny_score_conformance(attack_kgro):
    res = _probe(
        "score",
        "conformance",
        "-O",
        attack_kgro,
        "--schema-spec",
        str(FIX / "conformance" / "attack_spec.yaml"),
        "-d",
        str(FIX / "conformance" / "records.jsonl"),
    )
    assert res["code"] == 0
    assert _present(res["modules"], NEVER + ("numpy.random",)) == []
    assert "yaml" in res["modules"] and "pydantic" in res["modules"]  # the YAML spec is validated by pydantic


def test_console_script_shortens_blas_spin_unless_set():
    assert _probe("metrics")["blas"] == "16"
    assert _probe("metrics", env={"OPENBLAS_THREAD_TIMEOUT": "24"})["blas"] == "24"
