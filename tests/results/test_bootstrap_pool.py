"""``kg_rageval.results.bootstrap_pool``: the generator's state at any resample, found from the
rejected values before it, continues NumPy's own stream of ``integers(0, n)``; the resample
blocks computed on a pool (a synchronous stand-in for a Dask client here; a real
``LocalCluster`` in tests/audit/test_audit_partitions.py) give the serial pass's intervals bit
for bit on the real audit fixture's evaluations; a failed check falls back to the serial pass."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kg_rageval.results import bootstrap as bootstrap_mod
from kg_rageval.results import bootstrap_pool as bp
from kg_rageval.results.evaluation import bootstrap_many

AUDIT = Path(__file__).resolve().parents[2] / "fixtures" / "audit"


@pytest.mark.parametrize("n", [7, 1000, 1_000_003, 2**31 + 12345, 2**32 - 5])
def test_state_at_the_kth_draw_continues_numpy_stream(n):
    """Draw ``k`` of ``rng.integers(0, n)``'s stream (from any earlier calls' sizes) is where
    :func:`state_at` of :func:`start_position` puts a fresh generator: the same next draws, at
    even and odd positions, with rejections rare (n = 1000) or about every other value
    (n = 2**31 + 12345)."""
    seed, total = 11, 20_000
    rng = np.random.default_rng(seed)
    ref = np.concatenate([rng.integers(0, n, size=s) for s in (5000, 1, 7000, total - 12001)])
    rejected = bp._rejected(seed, n, 0, 4 * total)
    expected = total * bp.threshold(n) / 2**32
    assert abs(len(rejected[rejected < total]) - expected) <= 6 * np.sqrt(expected) + 3
    odd = 0
    for k in (0, 1, 2, 999, 5000, 5001, 12_000, 19_990):
        p = bp.start_position(k, rejected)
        odd += p % 2
        g = np.random.default_rng(seed)
        g.bit_generator.state = bp.state_at(seed, p)
        assert np.array_equal(g.integers(0, n, size=10)[: total - k], ref[k : k + 10])
    if bp.threshold(n) > 2**30:
        assert odd  # some starts fall on the high half of a 64-bit output
    # a scan in two halves finds what one finds
    halves = np.concatenate(
        [bp._rejected(seed, n, 0, 2 * total), bp._rejected(seed, n, 2 * total, 2 * total)]
    )
    assert np.array_equal(halves, rejected)


def test_block_weights_are_bootstrap_weights():
    rng = np.random.default_rng(5)
    got = np.vstack([bp.block_weights(rng, 300, 4) for _ in range(3)])
    want = np.vstack([w for _, w in bootstrap_mod.bootstrap_weights(300, 12, 5)])
    assert np.array_equal(got, want)


class _Future:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


class _Client:
    """A synchronous stand-in for ``distributed.Client``: submit runs the call at once (its
    future arguments resolved), gather returns the results, scatter wraps."""

    def __init__(self):
        self.calls: list[str] = []

    def submit(self, fn, *args, pure=True):
        self.calls.append(fn.__name__)
        return _Future(fn(*(a.value if isinstance(a, _Future) else a for a in args)))

    def gather(self, futures):
        return [f.result() for f in futures]

    def scatter(self, data, broadcast=False, hash=True):
        return [_Future(x) for x in data]


@pytest.fixture(scope="module", params=["fixture", "generated"])
def evaluations(request, generated_attack):
    """Evaluations of one size, each bootstrapped on every metric: the real audit fixture's
    widest ones (4 records), or the 2,000 generated ATT&CK records' retrieval and generation
    evaluations (the audit's bounded gates' families)."""
    from kg_rageval.audit.config import config_from_mapping, load_config
    from kg_rageval.audit.runner import run_audit

    if request.param == "fixture":
        res = run_audit(load_config(AUDIT / "real.yaml"), progress=False)
    else:
        out, onto = generated_attack
        mapping = {
            "name": "pool",
            "ontology": str(onto),
            "records": "records.jsonl",
            "corpus": "corpus.jsonl",
            "families": {"retrieval": {}, "generation": {}},
            "gates": ["retrieval.recall@10 >= 0.5"],
        }
        res = run_audit(config_from_mapping(mapping, base_dir=out), progress=False)
    evs = [ev for run in res.families.values() for ev in run.evaluations if len(ev)]
    n = max(len(ev.record_stats()) for ev in evs)
    return [
        (ev, [m for m in ev.metrics() if m not in PER_RESAMPLE]) for ev in evs if len(ev.record_stats()) == n
    ]


PER_RESAMPLE = {"ece"}
"""Metrics finalized per resample (no linear form): their jobs stay serial (tested below)."""


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 3 resamples at the fixture's size: many blocks to split over the pool."""
    monkeypatch.setattr(bootstrap_mod, "_BOOTSTRAP_CELLS", 1)
    monkeypatch.setattr(bootstrap_mod, "_BOOTSTRAP_MIN_BLOCK", 3)
    monkeypatch.setattr(bootstrap_mod, "_BOOTSTRAP_MAX_CELLS", 1 << 40)


@pytest.mark.parametrize(("n_resamples", "tasks"), [(200, 2), (61, 3), (10, 4)])
def test_pool_gives_the_serial_intervals(evaluations, small_blocks, n_resamples, tasks):
    """Every metric's interval of every evaluation (the fixture's widest: one pass over the
    weights serves them all) with the blocks on the pool equals the serial pass's; the pool ran
    the scans and the ranges (a last block shorter than the others: 61 = 20 x 3 + 1)."""
    reqs = evaluations
    want = bootstrap_many(reqs, n_resamples=n_resamples, seed=4)
    client = _Client()
    got = bootstrap_many(reqs, n_resamples=n_resamples, seed=4, pool=bp.BootstrapPool(client, tasks))
    assert got == want
    assert any(v is not None for r in want for v in r.values())
    blocks = -(-n_resamples // 3)
    assert client.calls.count("_range_call") == min(tasks, blocks - 1)
    assert client.calls.count("_rejected") >= 1


def test_a_failed_check_computes_the_serial_pass(evaluations, small_blocks, monkeypatch):
    """A start state one value off (what a changed NumPy stream would give): the range before
    it ends elsewhere, the pool's replicates are dropped and the serial pass's are returned; a
    worker whose products differ (another BLAS kernel) is dropped too."""
    reqs = evaluations
    want = bootstrap_many(reqs, n_resamples=90, seed=2)
    jobs_done = []
    orig_on_pool = bp.replicate_on_pool

    def recording(*a, **kw):
        jobs_done.append(orig_on_pool(*a, **kw))
        return jobs_done[-1]

    monkeypatch.setattr(bp, "replicate_on_pool", recording)
    orig_state = bp.state_at
    monkeypatch.setattr(bp, "state_at", lambda seed, p: orig_state(seed, p + 1))
    assert bootstrap_many(reqs, n_resamples=90, seed=2, pool=bp.BootstrapPool(_Client(), 2)) == want
    assert jobs_done == [False]
    monkeypatch.setattr(bp, "state_at", orig_state)
    orig_task = bp._range_task

    def other_kernel(payload, probes, *rest):
        probes = [[{h: np.nextafter(v, np.inf) for h, v in p.items()} for p in jp] for jp in probes]
        return orig_task(payload, probes, *rest)

    monkeypatch.setattr(bp, "_range_task", other_kernel)
    assert bootstrap_many(reqs, n_resamples=90, seed=2, pool=bp.BootstrapPool(_Client(), 2)) == want
    assert jobs_done == [False, False]
    monkeypatch.setattr(bp, "_range_task", orig_task)
    assert bootstrap_many(reqs, n_resamples=90, seed=2, pool=bp.BootstrapPool(_Client(), 2)) == want
    assert jobs_done == [False, False, True]


def test_too_few_blocks_or_a_metric_per_resample_stay_serial(evaluations, monkeypatch):
    """One block of resamples (the default block size at the fixture's size), or a job with a
    metric finalized per resample (calibration's ``ece``): nothing is sent to the pool."""
    client = _Client()
    reqs = evaluations
    assert bootstrap_many(reqs, n_resamples=50, seed=1, pool=bp.BootstrapPool(client, 2)) == bootstrap_many(
        reqs, n_resamples=50, seed=1
    )
    assert client.calls == []
    monkeypatch.setattr(bootstrap_mod, "_BOOTSTRAP_CELLS", 1)
    monkeypatch.setattr(bootstrap_mod, "_BOOTSTRAP_MIN_BLOCK", 3)
    with_ece = [(ev, None) for ev, _ in reqs if "ece" in ev.metrics()]
    if with_ece:
        got = bootstrap_many(with_ece, n_resamples=30, seed=1, pool=bp.BootstrapPool(client, 2))
        assert got == bootstrap_many(with_ece, n_resamples=30, seed=1)
        assert client.calls == []
