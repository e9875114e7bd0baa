"""The one resampling scheme of every bootstrap: weights drawn per block of resamples.

:func:`bootstrap_weights` yields how often each record is drawn in each resample (records
resampled uniformly with replacement from ``np.random.default_rng(seed)``), in blocks of
:func:`bootstrap_block` resamples; :func:`percentile_interval` turns replicates into a
percentile interval. Intervals of an evaluation: :meth:`~kg_rageval.results.evaluation.Evaluation.bootstrap`
and :func:`~kg_rageval.results.evaluation.bootstrap_many`.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from kg_rageval.results.resample import resample_indices

_BOOTSTRAP_CELLS = 2_000_000
"""Weights per bootstrap block (resamples x records, 8 bytes each: 16 MB) for most sizes: a
block's memory, and how many resamples one ``weights @ stats`` product takes."""

_BOOTSTRAP_MIN_BLOCK, _BOOTSTRAP_MAX_CELLS = 8, 8_000_000
"""At least 8 resamples a block while that stays within 8,000,000 weights (64 MB; up to
1,000,000 records): a product reads the tall stats matrix once per block, and at 1,000,000
records a block of 2 (``_BOOTSTRAP_CELLS // n``) cost 2.5-3x the CPU per resample of a block
of 8 on one BLAS thread. The draws do not depend on the block size: one sequential stream
of ``rng.integers`` (tested)."""


def bootstrap_block(n: int, n_resamples: int) -> int:
    """Resamples per block of :func:`bootstrap_weights` for ``n`` records:
    ``max(_BOOTSTRAP_CELLS // n, min(8, _BOOTSTRAP_MAX_CELLS // n))``, within 1 and
    ``n_resamples`` (20 at 100,000 records, 8 at 1,000,000, 4 at 2,000,000, 1 from
    8,000,000)."""
    n = max(n, 1)
    return max(
        1, min(n_resamples, max(_BOOTSTRAP_CELLS // n, min(_BOOTSTRAP_MIN_BLOCK, _BOOTSTRAP_MAX_CELLS // n)))
    )


def bootstrap_weights(n: int, n_resamples: int, seed: int) -> Iterator[tuple[int, np.ndarray]]:
    """The one resampling scheme of every bootstrap in kg-rageval (intervals, paired deltas;
    the draws are :func:`~kg_rageval.results.resample.resample_indices`).

    Yields ``(first resample, weights)`` chunks: ``weights[j, i]`` is how often record ``i``
    (of ``n``, in a fixed order) is drawn in resample ``first + j``; each resample draws ``n``
    records uniformly with replacement from ``np.random.default_rng(seed)``. Resampled sums
    are ``weights @ per_record_stats``; applying the same weights to two systems' stats
    aligned on the same record ids gives the paired bootstrap. Chunks of :func:`bootstrap_block` resamples bound memory
    to 8,000,000 weights (and one resample's ``n`` draws); the weights do not depend on the
    chunk size."""
    draws = resample_indices(n, n_resamples, seed)
    chunk = bootstrap_block(n, n_resamples)
    for lo in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - lo)
        weights = np.empty((b, n))
        for j in range(b):  # one resample's draws at a time: the same stream as a (b, n) call
            weights[j] = np.bincount(next(draws), minlength=n)
        yield lo, weights


def percentile_interval(samples: np.ndarray, n_resamples: int, level: float) -> tuple[float, float] | None:
    """The ``(1-level)/2`` and ``(1+level)/2`` quantiles (numpy's linear interpolation) of the
    defined (non-NaN) replicates; ``None`` when more than half of the ``n_resamples`` are
    undefined."""
    s = np.asarray(samples, dtype=float)
    s = s[~np.isnan(s)]
    if len(s) * 2 < n_resamples or len(s) == 0:
        return None
    alpha = (1 - level) / 2
    lo, hi = np.quantile(s, [alpha, 1 - alpha])
    return (float(lo), float(hi))
