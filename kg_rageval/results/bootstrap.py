"""The one resampling scheme of every bootstrap: weights drawn per block of resamples.

:func:`bootstrap_weights` yields how often each record is drawn in each resample (records
resampled uniformly with replacement from ``np.random.default_rng(seed)``), in blocks of
:func:`bootstrap_block` resamples; :func:`percentile_interval` turns replicates into a
percentile interval. Intervals of an evaluation: :meth:`~kg_rageval.results.evaluation.Evaluation.bootstrap`
and :func:`~kg_rageval.results.evaluation.bootstrap_many`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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


_ONE_CALL_DRAWS = 1 << 16
"""Up to this many draws a block (resamples x records) are made by one ``rng.integers`` call
of shape (resamples, records) and counted by one ``bincount``: the same stream, so the same
weights (``tests/families/system/test_system_bootstrap.py``), without the per-call overhead
that made 1,000 resamples of a tiny input cost 20 ms; above it one resample at a time (the
draws of a block would be another 8 bytes a weight)."""


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
    chunk = bootstrap_block(n, n_resamples)
    if chunk * n <= _ONE_CALL_DRAWS:  # a small input: each block's draws in one call
        rng = np.random.default_rng(seed)
        for lo in range(0, n_resamples, chunk):
            b = min(chunk, n_resamples - lo)
            idx = rng.integers(0, n, size=(b, n)) + (n * np.arange(b))[:, None]
            yield lo, np.bincount(idx.ravel(), minlength=b * n).reshape(b, n).astype(float)
        return
    draws = resample_indices(n, n_resamples, seed)
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
    lo, hi = linear_quantiles(s, [alpha, 1 - alpha])
    return (float(lo), float(hi))


def linear_quantiles(s: np.ndarray, qs: list[float]) -> np.ndarray:
    """``np.quantile(s, qs)`` (the default ``linear`` method, type 7) of a 1-D float array
    without NaN, ``qs`` within [0, 1], bit for bit: numpy's own steps (virtual index
    ``(n - 1) * q``, its floor and the next order statistic, ``a + (b - a)·γ``, or
    ``b - (b - a)·(1 - γ)`` where ``γ ≥ 0.5``) on a copy partitioned at the same indices. ``np.quantile`` picks the
    order statistics with ``np.unique``, which imports ``numpy.ma`` (tens of ms) on its first
    call in a process; a tiny command's one interval paid for it
    (``tests/results/test_bootstrap_quantiles.py`` compares both)."""
    q = np.asarray(qs, dtype=float)
    n = len(s)
    v = (n - 1) * q
    prev = np.floor(v)
    nxt = prev + 1
    top = v >= n - 1
    prev[top] = nxt[top] = -1
    low = v < 0
    prev[low] = nxt[low] = 0
    i, j = prev.astype(np.intp), nxt.astype(np.intp)
    arr = np.array(s, dtype=float)  # partitioned at numpy's indices: the same order statistics
    arr.partition(np.asarray(sorted({0, -1, *i.tolist(), *j.tolist()}), dtype=np.intp))
    a, b = arr[i], arr[j]
    gamma = v - i
    diff = b - a
    out = a + diff * gamma
    np.subtract(b, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    return out


_CONTROLLER: list[Any] = []


def single_blas_thread() -> Any:
    """A context running numpy's BLAS on one thread (``threadpoolctl``), or ``None`` without
    it. Every resampled sum is computed under it (:func:`_replicates`): a block of resamples is
    a short, wide weight matrix times a tall per-record matrix (``b × n`` by ``n × k``, ``b``
    = 8 at a million records: :func:`~kg_rageval.results.bootstrap.bootstrap_block`), a shape
    OpenBLAS splits badly over its threads — on two cores
    ``2 × 10^6`` by ``10^6 × 200`` took 1.68 s with two threads and 0.16 s with one, wall and
    CPU alike — and on one thread the bits of a sum no longer depend on how many threads the
    machine's BLAS runs."""
    if not _CONTROLLER:
        try:
            from threadpoolctl import ThreadpoolController

            _CONTROLLER.append(ThreadpoolController())
        except ImportError:  # pragma: no cover - the same sums, only more CPU time
            _CONTROLLER.append(None)
    ctl = _CONTROLLER[0]
    return None if ctl is None else ctl.limit(limits=1, user_api="blas")
