"""The quantile bootstrap computed a block of resamples at a time (issue #33, start-up of
``score system``) against the loop it replaced: one ``finalize`` and one ``row_metrics`` per
resample, bit for bit; and the two helpers it uses against numpy (``np.quantile`` of the
percentile interval, the per-resample draws of the bootstrap weights)."""

from __future__ import annotations

import numpy as np
import pytest

from kg_rageval.families.index.score import score_index
from kg_rageval.families.system import QuantileEvaluation, RowFamily, score_system
from kg_rageval.families.system.quantiles import sorted_quantiles, sorted_quantiles_many
from kg_rageval.results.bootstrap import bootstrap_weights, linear_quantiles, percentile_interval
from kg_rageval.results.resample import resample_indices


def _loop_replicates(ev: QuantileEvaluation, n_resamples: int, seed: int, metrics=None):
    """The previous ``QuantileEvaluation.bootstrap_replicates``: a finalize and a row_metrics
    per resample."""
    point = ev.metrics()
    wanted = list(metrics) if metrics is not None else list(point)
    out = {m: np.full(n_resamples, np.nan) for m in wanted}
    ids, inverse = np.unique(ev.record_ids.astype(str), return_inverse=True)
    inverse = inverse.reshape(-1)
    n = len(ids)
    draws = resample_indices(n, n_resamples, seed)
    names = list(ev.stats)
    mat = np.stack([ev.stats[k] for k in names], axis=1)
    fam = ev.family
    assert isinstance(fam, RowFamily)
    row_names = set(fam.row_metrics(ev.stats))
    only = {m for m in wanted if m in row_names}
    for b in range(n_resamples):
        w = np.bincount(next(draws), minlength=n).astype(float)[inverse]
        res = fam.finalize(dict(zip(names, (w @ mat).tolist())))
        if only:
            res.update(fam.row_metrics(ev.stats, w, only))
        for m in wanted:
            got = res.get(m)
            if got is not None and got.value is not None:
                out[m][b] = got.value
    return out


def _system_records(n: int, rng: np.random.Generator) -> list[dict]:
    recs = []
    for i in range(n):
        lat = {"total": float(rng.lognormal(6, 0.7))}
        if i % 3:
            lat["retrieve"] = round(float(rng.exponential(40)), 3)
        if i % 5 == 0:
            lat["ttft"] = float(rng.integers(50, 400))
        s: dict = {"latency_ms": lat, "tokens": {"prompt": int(rng.integers(10, 2000))}}
        if i % 4:
            s["cost_usd"] = float(rng.exponential(0.003))
            s["tokens"]["completion"] = int(rng.integers(1, 300))
        if i % 2:
            s["cache"] = {"retrieval": bool(i % 3 == 1)}
        recs.append({"id": f"q{(i * 7919) % n:05d}", "system": s, "slices": {"intent": "ab"[i % 2]}})
    return recs


@pytest.mark.parametrize(("n", "seed"), [(1, 0), (2, 3), (7, 0), (31, 5), (400, 11)])
def test_system_replicates_equal_the_loop_bit_for_bit(n, seed):
    ev = score_system(None, _system_records(n, np.random.default_rng(n + seed)))
    want = _loop_replicates(ev, 300, seed)
    got = ev.bootstrap_replicates(n_resamples=300, seed=seed)
    assert set(got) == set(want) and len(want) > 40  # every metric: quantiles, max, means, rates, counts
    for m in want:
        assert np.array_equal(want[m], got[m], equal_nan=True), m
    some = ["latency.total_ms.p95", "latency.ttft_ms.mean", "latency.retrieve_ms.max", "cost.usd_total"]
    part = ev.bootstrap_replicates(n_resamples=300, seed=seed, metrics=some)
    for m in some:
        assert np.array_equal(part[m], want[m], equal_nan=True), m


def test_several_rows_of_a_record_travel_together():
    ev = score_system(None, _system_records(40, np.random.default_rng(2)))
    ids = ev.record_ids.copy()
    ids[1::2] = ids[0::2]  # 20 records of two rows each
    twin = QuantileEvaluation(family=ev.family, record_ids=ids, stats=dict(ev.stats))
    want = _loop_replicates(twin, 200, 9)
    got = twin.bootstrap_replicates(n_resamples=200, seed=9)
    for m in want:
        assert np.array_equal(want[m], got[m], equal_nan=True), m


def test_index_lag_quantiles_by_the_default_row_replicates():
    rng = np.random.default_rng(4)
    recs = [
        {"id": f"d{i}", "index": {"commit_ts": 0.0, "searchable_ts": float(rng.integers(1, 90))}}
        for i in range(25)
    ]
    ev = score_index(None, recs)
    want = _loop_replicates(ev, 200, 1)
    got = ev.bootstrap_replicates(n_resamples=200, seed=1)
    assert any(not np.isnan(v).all() for k, v in want.items() if k.startswith("freshness_lag_s_p"))
    for m in want:
        assert np.array_equal(want[m], got[m], equal_nan=True), m


def test_sorted_quantiles_many_equal_a_call_per_row():
    rng = np.random.default_rng(8)
    v = np.sort(rng.exponential(10, 9))
    w = rng.integers(0, 3, (500, 9)).astype(float)
    w[:5] = 0.0  # rows that count nothing
    qs = [0.0, 0.5, 0.95, 0.99, 1.0]
    got = sorted_quantiles_many(v, qs, w)
    for b in range(len(w)):
        want = [np.nan if x is None else x for x in sorted_quantiles(v, qs, w[b])]
        assert np.array_equal(got[b], np.asarray(want), equal_nan=True), b


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # inf - inf, in numpy too
def test_linear_quantiles_are_np_quantile_bit_for_bit():
    rng = np.random.default_rng(0)
    levels = [0.5, 0.8, 0.9, 0.95, 0.99, 0.999, 0.123456789]
    for n in (1, 2, 3, 7, 10, 999, 1000, 1001):
        for s in (rng.normal(0, 1, n), rng.integers(0, 4, n).astype(float), np.full(n, 0.1)):
            for level in levels:
                alpha = (1 - level) / 2
                want = np.quantile(s, [alpha, 1 - alpha])
                assert np.array_equal(linear_quantiles(s, [alpha, 1 - alpha]), want), (n, level)
    s = np.asarray([1.0, np.inf, 3.0, -np.inf, 2.0])
    assert np.array_equal(
        linear_quantiles(s, [0.1, 0.5, 0.9]), np.quantile(s, [0.1, 0.5, 0.9]), equal_nan=True
    )
    assert percentile_interval(np.asarray([1.0, np.nan, 2.0, 4.0]), 4, 0.9) == tuple(
        np.quantile([1.0, 2.0, 4.0], [0.05, 0.95]).tolist()
    )


@pytest.mark.parametrize("n", [1, 2, 7, 13, 64, 10_000])
def test_bootstrap_weights_are_the_per_resample_draws(n):
    blocks = list(bootstrap_weights(n, 300, 6))
    got = np.vstack([w for _, w in blocks])
    assert [lo for lo, _ in blocks] == list(range(0, 300, len(blocks[0][1])))
    draws = resample_indices(n, 300, 6)
    want = np.stack([np.bincount(next(draws), minlength=n) for _ in range(300)]).astype(float)
    assert got.dtype == want.dtype and np.array_equal(got, want)
