"""Start-up cost: a tiny command imports only what it uses (issue #20).

Each tiny command runs in a fresh interpreter through the console-script entry point
(``main()`` with ``sys.argv``), then reports ``sys.modules``. Checked: module *absence*, never
timings (the figures are in docs/performance.md, "Start-up of a tiny ``score`` command"):

* no command imports scipy (the hierarchy roll-up pools with NumPy; equal to scipy's sparse
  product bit for bit: ``tests/results/test_rollup_bounded.py``), pandas/pyarrow (an edge table under
  1 MiB is read by the stdlib), rdflib/pyoxigraph (no RDF input), ``importlib.metadata`` (no
  entry-point scan for a built-in format) or the judges' HTTP client (``urllib.request``);
* no tiny ``score`` imports pydantic (plainly valid specs, judgments and verdicts are read
  without it; an unusual or invalid one goes to the pydantic models), only conformance (its
  YAML spec) imports yaml, and those whose code avoids NumPy 2's plain ``np.unique`` do not
  import ``numpy.ma``;
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

from benchmarks.bench_startup import prepare, tiny_commands

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


# issue #33: the spill file and the gzip reader are imported where they are used (a tiny run
# spills nothing and reads no .gz; tempfile brings shutil, bz2, lzma and random). Let off:
# conformance (its .kgro ontology is read by np.load, whose zipfile imports shutil), generation
# and metrics (importlib.metadata imports them)
SPILL = ("tempfile", "shutil", "gzip")
SPILL_LET_OFF = {"score conformance", "score generation", "metrics"}
# issue #33: a few record ids are packed without numpy.strings (results.recordstore)
NO_NP_STRINGS = {"score hierarchy", "score system", "score judges", "score preference"}

TINY_NAMES = list(tiny_commands(ROOT, Path("unused")))
"""The tiny commands: one table with the start-up benchmark (benchmarks/bench_startup.py), so
what is measured is what is checked."""
_LEAN = NO_SCAN + ("pydantic", "yaml", "numpy.ma", "numpy.random")
# what each may not import beyond NEVER (what the command does not use)
NOT_USED = {
    "score hierarchy": NO_SCAN + ("pydantic", "yaml", "numpy.ma", "numpy.random"),
    "score linking": NO_SCAN + ("pydantic", "yaml", "numpy.random"),
    "score retrieval": NO_SCAN + ("pydantic", "yaml", "numpy.ma", "numpy.random"),
    # issue #33: a plainly valid spec is read without the pydantic spec models
    # (kg_rageval.families.conformance.spec.plain_spec); yaml parses the spec file
    "score conformance": NO_SCAN + ("pydantic", "numpy.ma", "numpy.random"),
    # issue #33: well-formed judgments are checked without the pydantic judgment model (built
    # only for a judgment that breaks the contract, whose message is pydantic's)
    "score generation": NO_SCAN + ("pydantic", "yaml", "numpy.random"),
    # issue #33: the TREC pair reads no numba kernels and no scipy; system no longer imports the
    # generation package's judgment models (pydantic); judges and nuggets take the normal
    # quantile of the usual levels without scipy.stats (kg_rageval.base.normal)
    "score retrieval --qrels/--run": _LEAN,
    "score consistency": _LEAN,
    # issue #33: nuggets calibrates with the judges' rows and the nugget-support labels
    # (kg_rageval.families.judges.labels), not the pydantic verdict models
    "score nuggets": NO_SCAN + ("pydantic", "yaml", "numpy.random"),
    "score parsing": _LEAN,
    "score chunking": _LEAN,
    "score index": _LEAN,
    "score cleaning": _LEAN,
    "score routing": _LEAN,
    "score extraction": _LEAN,
    # issue #33: provenance reads the claim splitter of the generation judges, no longer the
    # pydantic judgment model behind it (imported where a judge builds a Judgment)
    "score provenance": NO_SCAN + ("pydantic", "yaml", "numpy.ma", "numpy.random"),
    "score relations": NO_SCAN + ("pydantic", "yaml", "numpy.random"),
    # issue #33: system's percentile intervals and record codes no longer call np.quantile /
    # np.unique, which import numpy.ma (numpy.random: its bootstrap draws)
    "score system": NO_SCAN + ("pydantic", "yaml", "numpy.ma"),
    # issue #33: judges reads plainly valid verdicts without the pydantic rubric models
    # (kg_rageval.families.judges.rules; an invalid one is validated by its model)
    "score judges": NO_SCAN + ("pydantic", "yaml", "numpy.ma", "numpy.random"),
    # issue #33: preference reads the gold with retrieval.gold, not the whole retrieval scorer
    "score preference": _LEAN
    + ("kg_rageval.families.retrieval.metrics", "kg_rageval.families.retrieval.runs"),
    "ontology inspect": NO_SCAN + ("pydantic", "yaml", "numpy.ma", "numpy.random"),
    "metrics": ("numpy", "pydantic", "yaml"),  # importlib.metadata: it lists the entry-point families too
}


def test_score_hierarchy_help_imports_no_scipy():
    assert not _present(_probe("score", "hierarchy", "--help")["modules"], NEVER + NO_SCAN)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, list[str]]:
    """The benchmark's tiny commands over its prepared inputs (7 hierarchy records, the same
    with the quality sections of tests/family_demo.py, the conformance ontology as a .kgro)."""
    tmp = tmp_path_factory.mktemp("tiny")
    prepare(tmp)
    return tiny_commands(ROOT, tmp)


@pytest.mark.parametrize("name", TINY_NAMES)
def test_tiny_command_imports_only_what_it_uses(name, tiny):
    res = _probe(*tiny[name])
    assert res["code"] == 0
    assert "kg_rageval.cli.main" in res["modules"]  # the probe saw the command's modules
    spill = (() if name in SPILL_LET_OFF else SPILL) + (("numpy.strings",) if name in NO_NP_STRINGS else ())
    assert _present(res["modules"], NEVER + NOT_USED[name] + spill) == []


def test_tiny_score_conformance_reads_a_plain_spec_without_pydantic(tiny, tmp_path):
    """The YAML spec is parsed (yaml) and read without pydantic; an unusual spec (a value the
    models coerce) and an invalid one go to the pydantic models: the first scores (exit 0),
    the second exits 2 (its message: tests/families/conformance/test_spec_plain.py)."""
    res = _probe(*tiny["score conformance"])
    assert res["code"] == 0
    assert "yaml" in res["modules"] and "pydantic" not in res["modules"]
    args = tiny["score conformance"]
    at = args.index("--schema-spec") + 1
    text = Path(args[at]).read_text(encoding="utf-8")
    assert "    required: true\n" in text and "kind: list\n" in text
    for name, body, code in (
        ("unusual.yaml", text.replace("    required: true\n", "    required: 'true'\n", 1), 0),
        ("invalid.yaml", text.replace("kind: list\n", "kind: lists\n", 1), 2),
    ):
        (tmp_path / name).write_text(body, encoding="utf-8")
        res = _probe(*args[:at], str(tmp_path / name), *args[at + 1 :])
        assert res["code"] == code and "pydantic" in res["modules"], name


def test_console_script_shortens_blas_spin_unless_set():
    assert _probe("metrics")["blas"] == "16"
    assert _probe("metrics", env={"OPENBLAS_THREAD_TIMEOUT": "24"})["blas"] == "24"
