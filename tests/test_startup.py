"""Start-up cost: a tiny ``score`` command imports only what it uses (issue #20).

Checked in a fresh interpreter (``sys.modules`` after the command): no ``scipy`` (the
hierarchy roll-up pools with NumPy) and no entry-point scan (``importlib.metadata``) for a
built-in ontology format. And the NumPy pooling equals scipy's sparse product bit for bit.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from kg_rageval.evaluation import _pool_over_ancestors

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


@pytest.mark.parametrize("seed", [0, 1])
def test_pooling_equals_scipy_sparse_bit_for_bit(seed):
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(seed)
    n, rows = 300, 200
    lens = rng.integers(1, 12, rows)
    ptr = np.concatenate(([0], np.cumsum(lens)))
    idx = np.concatenate([np.sort(rng.choice(n, k, replace=False)) for k in lens]).astype(np.int32)
    weights = np.concatenate([rng.integers(0, 5, (rows, 1)).astype(float), rng.random((rows, 3))], axis=1)
    ours = _pool_over_ancestors(ptr, idx, weights, n)
    ref = np.asarray(sparse.csr_matrix((np.ones(len(idx)), idx, ptr), shape=(rows, n)).T @ weights)
    assert ours.shape == (n, 4) and np.array_equal(ours, ref)
    a = int(idx[0])  # by hand: column a pools the rows that hold a
    assert ours[a, 0] == sum(weights[r, 0] for r in range(rows) if a in idx[ptr[r]:ptr[r + 1]])
