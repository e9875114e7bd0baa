"""Start-up cost: a tiny ``score`` command imports only what it uses (issue #20).

Checked in a fresh interpreter (``sys.modules`` after the command): no ``scipy`` (the
hierarchy roll-up pools with NumPy) and no entry-point scan (``importlib.metadata``) for a
built-in ontology format. (The NumPy roll-up equals scipy's sparse product bit for bit:
``tests/test_rollup_bounded.py``.)
"""

from __future__ import annotations

import json
import subprocess
import sys


ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]

_PROBE = r"""
import json, sys
from kg_rageval.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("\n" + json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("scipy", "rdflib", "pandas")
                        or m == "importlib.metadata")))
"""


def _imported(*args: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True,
                         cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_score_hierarchy_help_imports_no_scipy():
    assert "scipy" not in _imported("score", "hierarchy", "--help")


def test_tiny_score_hierarchy_imports_no_scipy_nor_entry_points(fixtures_dir):
    mods = _imported("score", "hierarchy", "--ontology", str(fixtures_dir / "hierarchy" / "vehicles.obo"),
                     "--data", str(fixtures_dir / "hierarchy" / "records.jsonl"))
    assert not [m for m in mods if m.startswith("scipy")]
    assert "importlib.metadata" not in mods and "rdflib" not in mods
