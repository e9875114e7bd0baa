"""Alarm calibration: the false-alarm rate on simulated no-shift windows and the detection
power on injected shifts, of the whole drift report (every test, corrected together).

Each trial draws a reference and a current window with ``branches`` branches (equal branch
shares, ``n`` rows per branch and window, ``dim``-dimensional standard-normal query embeddings,
every concept in the golden set) and runs :func:`~kg_rageval.monitor.drift.drift_report` on
them; an alarm is any corrected test below ``alpha``. No-shift trials estimate the
false-alarm rate (it should be <= alpha: Holm and BH hold the family-wise / false-discovery
rate); shifted trials add ``shift`` to every coordinate of one branch's current embeddings
(and, with ``mix_shift``, move that share of another branch's rows to it) and estimate the
power. Both come with Wilson 95 % intervals and their trial counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from kg_rageval.base.errors import ConfigError, InputError


class MemoryWindows:
    """Two or more windows held in memory, read as a window store is by ``drift_report``:
    ``{window: {branch: (n_rows, embeddings array)}}``."""

    def __init__(
        self, windows: Mapping[str, Mapping[str, tuple[int, np.ndarray]]], model: str = "sim"
    ) -> None:
        self._w = windows
        self.model = model

    def windows(self) -> list[str]:
        return sorted(self._w)

    def require(self, window: str) -> None:
        if window not in self._w:
            raise InputError(f"no window {window!r}")

    def branch_counts(self, window: str) -> dict[str, int]:
        return {b: n for b, (n, _) in self._w[window].items()}

    def concept_counts(self, window: str) -> dict[tuple[str, str], int]:
        return {(b, f"{b}:c"): n for b, (n, _) in self._w[window].items()}

    def embeddings(self, window: str, branch: str | None = None) -> tuple[np.ndarray, str | None]:
        arr = self._w[window][branch][1] if branch is not None else None
        return (arr, self.model) if arr is not None else (np.zeros((0, 0)), None)


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials."""
    if n == 0:
        raise ConfigError("an interval needs at least one trial")
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def calibrate(
    *,
    trials: int = 200,
    n: int = 30,
    dim: int = 4,
    branches: int = 3,
    shift: float = 1.0,
    mix_shift: float = 0.0,
    alpha: float = 0.05,
    correction: str = "holm",
    n_permutations: int = 100,
    seed: int = 0,
) -> dict[str, Any]:
    """False-alarm rate (no shift) and power (``shift`` in branch ``B0``) over ``trials``
    seeded trials each; see the module docstring."""
    from kg_rageval.monitor.drift import drift_report

    if trials < 1 or n < 2 or dim < 1 or branches < 1:
        raise ConfigError("calibrate: trials >= 1, n >= 2, dim >= 1, branches >= 1")
    if not 0 <= mix_shift < 1:
        raise ConfigError(f"mix_shift {mix_shift}: expected a share in [0, 1)")
    rng = np.random.default_rng(seed)
    names = [f"B{i}" for i in range(branches)]
    golden = {f"{b}:c" for b in names}

    def window(shifted: bool) -> dict[str, tuple[int, np.ndarray]]:
        counts = dict.fromkeys(names, n)
        if shifted and mix_shift and branches > 1:
            moved = int(round(mix_shift * n))
            counts[names[0]] += moved
            counts[names[1]] -= moved
        out = {}
        for b in names:
            x = rng.normal(size=(counts[b], dim))
            if shifted and b == names[0]:
                x = x + shift
            out[b] = (counts[b], x)
        return out

    def rate(shifted: bool) -> tuple[int, list[str]]:
        alarms = 0
        which: list[str] = []
        for t in range(trials):
            store = MemoryWindows({"ref": window(False), "cur": window(shifted)})
            rep = drift_report(
                store, "ref", "cur", golden=golden, alpha=alpha, correction=correction,
                n_permutations=n_permutations, seed=seed + t,
            )  # fmt: skip
            if rep["alert"]:
                alarms += 1
                which.extend(f"{x['test']}:{x['branch'] or '(all)'}" for x in rep["tests"] if x["drift"])
        return alarms, which

    fa, fa_tests = rate(False)
    hits, hit_tests = rate(True)
    return {
        "trials": trials,
        "n_per_branch": n,
        "dim": dim,
        "branches": branches,
        "alpha": alpha,
        "correction": correction,
        "n_permutations": n_permutations,
        "shift": shift,
        "mix_shift": mix_shift,
        "false_alarm_rate": fa / trials,
        "false_alarm_ci": list(wilson(fa, trials)),
        "false_alarms": fa,
        "power": hits / trials,
        "power_ci": list(wilson(hits, trials)),
        "detections": hits,
        "detected_by": {k: hit_tests.count(k) for k in sorted(set(hit_tests))},
        "false_alarms_by": {k: fa_tests.count(k) for k in sorted(set(fa_tests))},
        "seed": seed,
    }
