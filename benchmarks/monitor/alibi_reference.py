"""Reference figures for ``kg_rageval.monitor.drift.mmd_test`` from alibi-detect's MMDDrift.

alibi-detect downgrades numpy, so it runs in a side venv, never the dev venv:

    python3 -m venv /tmp/mon1-refvenv
    /tmp/mon1-refvenv/bin/pip install alibi-detect torch==2.13.0   # alibi-detect 0.13.0
    /tmp/mon1-refvenv/bin/python benchmarks/monitor/alibi_reference.py

It writes ``tests/monitor/data/alibi_mmd.npz`` (the data and alibi-detect's own permutations,
captured by re-seeding torch: the kernel computations draw no random numbers) and prints the
p-values, MMD² and bandwidths that ``tests/monitor/test_monitor_drift.py`` holds as constants.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from alibi_detect.cd import MMDDrift

OUT = Path(__file__).resolve().parents[2] / "tests" / "monitor" / "data" / "alibi_mmd.npz"
N_PERM = 100


def case(name: str, shift: float, sigma: float | None, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x_ref = rng.normal(size=(40, 4))
    x = rng.normal(size=(30, 4)) + shift
    kw = {} if sigma is None else {"sigma": np.array([sigma])}
    det = MMDDrift(x_ref, backend="pytorch", p_val=0.05, n_permutations=N_PERM, device="cpu", **kw)
    torch.manual_seed(seed)
    p_val, mmd2, _ = det._detector.score(x)
    torch.manual_seed(seed)
    perms = np.stack([torch.randperm(len(x_ref) + len(x)).numpy() for _ in range(N_PERM)])
    got_sigma = float(det._detector.kernel.sigma.detach().numpy()[0])
    print(f"{name}: p_val={p_val!r} mmd2={mmd2!r} sigma={got_sigma!r}")
    return {f"{name}_x_ref": x_ref, f"{name}_x": x, f"{name}_perms": perms}


def main() -> None:
    arrays: dict[str, np.ndarray] = {}
    arrays.update(case("noshift", 0.0, None, 1))
    arrays.update(case("shift", 0.35, None, 2))
    arrays.update(case("sigma", 0.35, 1.5, 3))
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
