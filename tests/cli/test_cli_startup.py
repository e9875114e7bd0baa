"""The CLI must work from a plain (non-editable) install, where no site hook has imported
``importlib.util`` or anything else for us: run it with ``python -S`` and the package on the
path."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run_bare(args: list[str]) -> subprocess.CompletedProcess:
    code = (
        "import sys; sys.path[:0] = [{root!r}, {site!r}]; "
        "from kg_rageval.cli.main import main; raise SystemExit(main({args!r}))"
    ).format(root=str(ROOT), site=sysconfig.get_paths()["purelib"], args=args)
    return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=120)


def test_score_help_without_site_hooks():
    proc = _run_bare(["score", "--help"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    for family in ("hierarchy", "linking", "retrieval", "conformance", "generation", "provenance"):
        assert family in proc.stdout


def test_inspect_without_site_hooks():
    proc = _run_bare(
        ["ontology", "inspect", str(ROOT / "ontologies" / "doid-cancer-slim.obo"), "--format", "json"]
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"nodes": 730' in proc.stdout
