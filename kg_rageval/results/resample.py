"""The one resampling scheme of every bootstrap in kg-rageval.

Each resample draws ``n`` record indices uniformly with replacement from
``np.random.default_rng(seed)``, one ``rng.integers(0, n, size=n)`` call per resample in
resample order. numpy's generator gives the same stream whether the draws are made one
resample at a time or as one ``(b, n)`` call, so callers may block resamples as memory and
speed suit without changing a number: :func:`~kg_rageval.results.evaluation.bootstrap_weights`
turns each resample into per-record counts (intervals of mergeable sums), and
:func:`~kg_rageval.families.retrieval.compare.bootstrap_ci` averages the drawn deltas.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


def resample_indices(n: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The ``n`` drawn record indices (int64, draw order) of each of ``n_resamples``
    resamples, in resample order, from ``np.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    for _ in range(n_resamples):
        yield rng.integers(0, n, size=n)
