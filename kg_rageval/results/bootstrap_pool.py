"""The percentile bootstrap's resample blocks computed on a Dask cluster, bit for bit.

The replicates of :func:`~kg_rageval.results.forms.replicate_jobs` are sums ``weights @ stats``
over blocks of resamples whose weights come from **one** random stream
(:func:`~kg_rageval.results.bootstrap.bootstrap_weights`: ``rng.integers(0, n, size=n)`` per
resample from ``np.random.default_rng(seed)``), so a block can be computed anywhere once the
generator's state at its first resample is known. That state is found without drawing the
resamples before it:

* NumPy draws ``integers(0, n)`` (``n < 2**32``) by Lemire's method from the generator's 32-bit
  stream (PCG64's 64-bit outputs, low half first): a 32-bit value ``v`` is a draw unless
  ``(v * n) mod 2**32 < (2**32 - n) mod n`` (rejected: the next value is taken), and the stream
  runs on from one call to the next;
* so resample ``r`` starts at the value that is the ``r * n``-th accepted one, and its position
  follows from the positions of the rejected values before it (:func:`start_position`), which
  the workers find in parallel over slices of the stream (:func:`_rejected`, the generator
  advanced to each slice: ``PCG64.advance``); a position gives the state (:func:`state_at`).

:func:`replicate_on_pool` runs the first block on the client as the serial pass does (the forms
are checked against the metric's ``finalize`` there), then the remaining blocks in as many
contiguous ranges as the pool has tasks, each on a worker from its start state. Every result is
checked before it is used, else the caller computes the replicates serially (the same numbers,
slower): each range ends in the state the next range started from (so every start state was the
serial pass's), and each worker's product of the first block's weights with the stats equals
the client's bit for bit for every block height it computes (the same BLAS kernel: a worker on
another CPU could round a sum differently).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

_MASK32 = (1 << 32) - 1


@dataclass(frozen=True)
class BootstrapPool:
    """Where :func:`~kg_rageval.results.forms.replicate_jobs` may compute resample blocks: a
    ``distributed.Client`` and the number of tasks to split them into (its worker threads)."""

    client: Any
    tasks: int


def threshold(n: int) -> int:
    """The rejection threshold of NumPy's bounded draws in ``[0, n)``: ``(2**32 - n) mod n``."""
    return ((1 << 32) - n) % n


def _rejected(seed: int, n: int, first: int, count: int, block: int = 1 << 20) -> np.ndarray:
    """The positions (int64) of the rejected values among 32-bit values ``first ..
    first + count - 1`` of ``default_rng(seed)``'s stream (``first``, ``count`` even)."""
    bg = np.random.PCG64(seed)
    bg.advance(first // 2)
    thr = np.uint32(threshold(n))
    mult = np.uint32(n)
    out = []
    done = 0
    buf = np.empty(block, dtype=np.uint32)
    while done < count:
        k = min(block, count - done)
        v = bg.random_raw(k // 2).view(np.uint32)  # little-endian: the low half first
        prod = np.multiply(v, mult, out=buf[:k])  # (v * n) mod 2**32
        hits = np.flatnonzero(prod < thr)
        if len(hits):
            out.append(hits + (first + done))
        done += k
    return np.concatenate(out).astype(np.int64) if out else np.zeros(0, dtype=np.int64)


def start_position(k: int, rejected: np.ndarray) -> int:
    """The stream position of the ``k``-th accepted value (0-based), given the sorted positions
    of every rejected value before it: rejected value ``i`` comes before it when the values
    accepted before that one (``rejected[i] - i``) are at most ``k``."""
    j = int(np.searchsorted(rejected - np.arange(len(rejected)), k, side="right"))
    return k + j


def state_at(seed: int, position: int) -> dict[str, Any]:
    """The state of ``default_rng(seed)``'s bit generator whose next 32-bit value is value
    ``position`` of the stream (an odd position: the high half of a 64-bit output held)."""
    bg = np.random.PCG64(seed)
    bg.advance(position // 2)
    if position % 2:
        raw = int(bg.random_raw())
        state: dict[str, Any] = dict(bg.state)
        state["has_uint32"], state["uinteger"] = 1, raw >> 32
        return state
    return dict(bg.state)


def block_weights(rng: np.random.Generator, n: int, rows: int) -> np.ndarray:
    """The next ``rows`` resamples' weights from ``rng``, as
    :func:`~kg_rageval.results.bootstrap.bootstrap_weights` makes them."""
    weights = np.empty((rows, n))
    for j in range(rows):
        weights[j] = np.bincount(rng.integers(0, n, size=n), minlength=n)
    return weights


def _heights(n_resamples: int, chunk: int, lo_block: int) -> set[int]:
    """The block heights from block ``lo_block`` on (the last may be shorter)."""
    out = {chunk} if n_resamples - lo_block * chunk >= chunk else set()
    if n_resamples % chunk:
        out.add(n_resamples % chunk)
    return out


def _range_task(
    payload: list[tuple[Any, list[np.ndarray], list[str]]],
    probes: list[list[dict[int, np.ndarray]]],
    n: int,
    n_resamples: int,
    seed: int,
    chunk: int,
    first: int,
    last: int,
    state: dict[str, Any],
) -> tuple[list[list[dict[str, np.ndarray]]], dict[str, Any], bool]:
    """Blocks ``first .. last - 1`` on a worker: per job and matrix the replicates of their
    resamples, the generator's state after them, and whether the first block's products equal
    the client's (``probes``)."""
    from contextlib import nullcontext

    from kg_rageval.results.bootstrap import single_blas_thread

    one = single_blas_thread()
    with one if one is not None else nullcontext():
        w0 = block_weights(np.random.default_rng(seed), n, min(chunk, n_resamples))
        same = all(
            np.array_equal(w0[:h] @ pmat, want)
            for (_, pmats, _), job_probes in zip(payload, probes)
            for pmat, per_height in zip(pmats, job_probes)
            for h, want in per_height.items()
        )
        rng = np.random.default_rng(seed)
        rng.bit_generator.state = state
        lo, hi = first * chunk, min(last * chunk, n_resamples)
        outs = [[{m: np.empty(hi - lo) for m in metrics} for _ in pmats] for _, pmats, metrics in payload]
        for start in range(lo, hi, chunk):
            w = block_weights(rng, n, min(chunk, n_resamples - start))
            for (proj, pmats, metrics), job_out in zip(payload, outs):
                for pmat, dst in zip(pmats, job_out):
                    sums = w @ pmat
                    for m in metrics:
                        dst[m][start - lo : start - lo + len(w)] = proj.values(m, sums)[0]
    return outs, rng.bit_generator.state, same


def replicate_on_pool(
    jobs: list[Any], n_resamples: int, seed: int, pool: BootstrapPool, block: Callable[..., bool]
) -> bool:
    """The replicates of ``jobs`` (:class:`~kg_rageval.results.forms._Job`, reset, every
    matrix with ``n`` rows; see the module docstring) with blocks after the first on ``pool``:
    ``True`` when every job's ``out`` is filled as the serial pass fills it, ``False`` when the
    caller must run the serial pass (a form failed on the first block — its ``forms`` updated
    as the serial pass updates them —, a metric finalized per resample, fewer than three
    blocks, ``n`` of 2**32 or more, or a check failed). ``block``: the serial pass's
    :func:`~kg_rageval.results.forms._block` (the first block and its check)."""
    from contextlib import nullcontext

    from kg_rageval.results.bootstrap import bootstrap_block, single_blas_thread

    n = len(jobs[0].mats[0])
    chunk = bootstrap_block(n, n_resamples)
    n_blocks = -(-n_resamples // chunk)
    tasks = min(pool.tasks, n_blocks - 1)
    if tasks < 2 or n >= 1 << 32 or any(job.loop for job in jobs):
        return False
    one = single_blas_thread()
    with one if one is not None else nullcontext():
        rng = np.random.default_rng(seed)
        w0 = block_weights(rng, n, chunk)
        for job in jobs:
            if not block(job, w0, 0, chunk, True):
                return False
        after_first = rng.bit_generator.state
        heights = _heights(n_resamples, chunk, 1)
        payload = [(job.proj, job.projs, list(job.proj.metrics)) for job in jobs]
        probes = [[{h: w0[:h] @ pmat for h in heights} for pmat in job.projs] for job in jobs]
    del w0
    bounds = [1 + round(i * (n_blocks - 1) / tasks) for i in range(tasks + 1)]
    client = pool.client
    # the start states of ranges 1.. from the rejected values before them
    starts_k = [b * chunk * n for b in bounds[1:-1]]
    span = starts_k[-1] + starts_k[-1] // max(1, (1 << 32) // max(threshold(n), 1)) + 4 * 4096 + 4096
    span += span % 2
    step = -(-span // tasks)
    step += step % 2
    scans = [
        client.submit(_rejected, seed, n, a, min(step, span - a), pure=False) for a in range(0, span, step)
    ]
    rejected = np.concatenate(client.gather(scans)) if scans else np.zeros(0, dtype=np.int64)
    positions = [start_position(k, rejected) for k in starts_k]
    if positions and positions[-1] >= span:  # more rejections than the margin: not covered
        return False
    states = [after_first] + [state_at(seed, p) for p in positions]
    [data] = client.scatter([(payload, probes)], broadcast=True, hash=False)
    futures = [
        client.submit(_range_call, data, n, n_resamples, seed, chunk, a, b, st, pure=False)
        for a, b, st in zip(bounds, bounds[1:], states)
    ]
    got = client.gather(futures)
    for (_, end, same), nxt in zip(got, [*states[1:], None]):
        if not same or (nxt is not None and _key(end) != _key(nxt)):
            return False
    for (outs, _, _), a, b in zip(got, bounds, bounds[1:]):
        lo, hi = a * chunk, min(b * chunk, n_resamples)
        for job, job_out in zip(jobs, outs):
            for dst, part in zip(job.out, job_out):
                for m, vals in part.items():
                    dst[m][lo:hi] = vals
    return True


def _key(state: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a bit generator's state determines: its PCG64 state and the 32-bit value it holds
    (none when ``has_uint32`` is 0: ``uinteger`` is then a stale value, never read)."""
    held = state["uinteger"] if state["has_uint32"] else None
    return (state["bit_generator"], state["state"]["state"], state["state"]["inc"], held)


def _range_call(
    data: tuple[Any, Any], n: int, n_resamples: int, seed: int, chunk: int, first: int, last: int, state: Any
) -> Any:
    """:func:`_range_task` on the scattered ``(payload, probes)``."""
    payload, probes = data
    return _range_task(payload, probes, n, n_resamples, seed, chunk, first, last, state)
