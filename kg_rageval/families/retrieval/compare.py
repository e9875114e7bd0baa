"""Paired comparison of two systems on the same queries.

Given per-query values ``a_q`` and ``b_q`` of one metric (same queries, same order), the
delta is ``d_q = b_q - a_q`` and the report gives

* ``mean_delta`` = mean of d_q over the n paired queries;
* a percentile **bootstrap** confidence interval for the mean delta (queries resampled with
  replacement, ``n_resamples`` times, seeded);
* a two-sided **randomisation (sign-flip permutation) test** p-value: under H0 the labels
  a/b are exchangeable per query, so each d_q's sign is flipped at random;
  ``p = (1 + #{|mean(s·d)| >= |mean(d)|}) / (1 + n_permutations)`` (the +1 keeps p > 0, as in
  Phipson & Smyth 2010). With fewer than 13 queries all 2^n sign patterns are enumerated
  and p is exact (no +1).

No queries is missing evidence (:class:`~kg_rageval.base.errors.MissingEvidence`), never a delta 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError, MissingEvidence
from kg_rageval.results.resample import resample_indices


@dataclass(frozen=True)
class PairedComparison:
    metric: str
    n: int
    mean_a: float
    mean_b: float
    mean_delta: float
    ci: tuple[float, float]
    level: float
    p_value: float
    wins: int
    losses: int
    ties: int
    deltas: np.ndarray
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "n": self.n,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "mean_delta": self.mean_delta,
            "ci": list(self.ci),
            "level": self.level,
            "p_value": self.p_value,
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "seed": self.seed,
        }


def bootstrap_ci(
    d: np.ndarray, *, n_resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``d`` (chunked, seeded): the resamples of
    :func:`~kg_rageval.results.resample.resample_indices`, the scheme of every bootstrap."""
    d = np.asarray(d, dtype=float)
    n = len(d)
    if n == 0:
        raise MissingEvidence("bootstrap of an empty sample")
    draws = resample_indices(n, n_resamples, seed)
    means = np.empty(n_resamples)
    chunk = max(1, min(n_resamples, 4_000_000 // n))
    for lo in range(0, n_resamples, chunk):
        hi = min(n_resamples, lo + chunk)
        idx = np.stack([next(draws) for _ in range(hi - lo)])
        means[lo:hi] = d[idx].mean(axis=1)
    a = (1 - level) / 2
    q = np.quantile(means, [a, 1 - a])
    return float(q[0]), float(q[1])


def permutation_p(d: np.ndarray, *, n_permutations: int = 10000, seed: int = 0) -> float:
    """Two-sided sign-flip randomisation test of mean(d) = 0 (see the module docstring)."""
    d = np.asarray(d, dtype=float)
    n = len(d)
    if n == 0:
        raise MissingEvidence("permutation test of an empty sample")
    obs = abs(d.mean())
    tol = 1e-12 * max(1.0, obs)
    if n < 13:
        signs = ((np.arange(1 << n)[:, None] >> np.arange(n)[None, :]) & 1) * 2 - 1
        stats = np.abs(signs @ d) / n
        return float((stats >= obs - tol).mean())
    rng = np.random.default_rng(seed)
    count = 0
    chunk = max(1, min(n_permutations, 4_000_000 // n))
    for lo in range(0, n_permutations, chunk):
        hi = min(n_permutations, lo + chunk)
        s = rng.integers(0, 2, size=(hi - lo, n)) * 2 - 1
        count += int((np.abs(s @ d) / n >= obs - tol).sum())
    return (1 + count) / (1 + n_permutations)


def paired_compare(
    a: Sequence[float] | Mapping[str, float],
    b: Sequence[float] | Mapping[str, float],
    *,
    metric: str = "metric",
    n_resamples: int = 2000,
    n_permutations: int = 10000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedComparison:
    """Compare system B against A on the same queries (``delta = B - A``).

    ``a`` and ``b`` are equal-length sequences, or mappings ``{qid: value}`` with the same
    query ids (a query in only one of them raises, naming it: pairs must be complete)."""
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
            raise InputError("paired_compare: give both systems as mappings or both as sequences")
        only = sorted(set(a) ^ set(b))
        if only:
            raise InputError(f"paired_compare: queries scored for one system only: {only[:10]}")
        keys = sorted(a)
        av = np.asarray([a[k] for k in keys], dtype=float)
        bv = np.asarray([b[k] for k in keys], dtype=float)
    else:
        av, bv = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if av.shape != bv.shape:
            raise InputError(f"paired_compare: {len(av)} values for A but {len(bv)} for B")
    if len(av) == 0:
        raise MissingEvidence(f"paired comparison of {metric}: no paired queries")
    d = bv - av
    return PairedComparison(
        metric=metric,
        n=len(d),
        mean_a=float(av.mean()),
        mean_b=float(bv.mean()),
        mean_delta=float(d.mean()),
        ci=bootstrap_ci(d, n_resamples=n_resamples, level=level, seed=seed),
        level=level,
        p_value=permutation_p(d, n_permutations=n_permutations, seed=seed),
        wins=int((d > 0).sum()),
        losses=int((d < 0).sum()),
        ties=int((d == 0).sum()),
        deltas=d,
        seed=seed,
    )


def compare_runs(
    qrels: Mapping[str, Mapping[str, float]],
    run_a: Mapping[str, Mapping[str, float]],
    run_b: Mapping[str, Mapping[str, float]],
    *,
    metric: str = "ndcg@10",
    gain: str = "graded",
    **kw: Any,
) -> PairedComparison:
    """Paired comparison of two runs (``{qid: {doc: score}}``) on the same judged queries.

    Both runs are scored with :func:`~kg_rageval.families.retrieval.metrics.evaluate_dicts` over every
    judged query with relevant gold (a query missing from a run scores 0, trec_eval ``-c``), so
    the pairs are always complete; ``metric`` is any per-query name (``recall@5``, ``mrr``,
    ``map``, ...) and its cut-off is taken from the name. Other keywords go to
    :func:`paired_compare`."""
    from kg_rageval.families.retrieval.metrics import evaluate_dicts, metric_names

    ks = sorted({int(m.split("@")[1]) for m in [metric] if "@" in m} or {10})
    allowed = metric_names(ks)
    if metric not in allowed:
        raise InputError(f"compare_runs: unknown metric {metric!r}; allowed: {allowed}")
    a = evaluate_dicts(qrels, run_a, ks, gain=gain)
    b = evaluate_dicts(qrels, run_b, ks, gain=gain)
    m = a.scored
    return paired_compare(a.values[metric][m], b.values[metric][m], metric=metric, **kw)
