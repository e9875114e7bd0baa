"""Coverage and sample-size planning (``kg-rageval testset plan``).

**Coverage**: the audit's coverage matrix (:func:`kg_rageval.audit.pernode.coverage_matrix`):
records per intent × document type × ontology branch, empty and thin cells listed — the same
matrix the audit report shows, so the plan and the audit never disagree.

**Interval width** (normal approximation to a proportion ``p`` such as recall@10, the seed's
formula): with ``z = Φ⁻¹(1 − (1 − level)/2)`` (1.96 at 95 %)::

    half_width(n) = z · sqrt(p (1 − p) / n)          200 queries at p = 0.8: ± 0.0554
    n_ci(h)       = ceil(z² · p (1 − p) / h²)

**Paired difference** of two systems on the same queries (per-query outcomes ``x_i, y_i`` in
{0, 1}, difference ``d_i = x_i − y_i``): a two-sided test at level ``alpha`` with power
``power`` detects a mean difference ``δ`` when ``n ≥ (z_{1−α/2} + z_{power})² · σ_d² / δ²``.
Assumptions, stated: the normal approximation to the mean of ``d``; both systems near the same
success rate ``p`` (so ``Var(x) = Var(y) = p(1 − p)``); per-query outcomes correlated with
``rho`` (``σ_d² = 2 p (1 − p) (1 − rho)``; ``rho = 0`` is the unpaired worst case, pairing on
the same queries typically gives ``rho`` of 0.3–0.7); queries independent (grouped queries,
e.g. one session, count less). So::

    n_delta(δ) = ceil((z_{1−α/2} + z_power)² · 2 p (1 − p)(1 − rho) / δ²)
    mde(n)     = (z_{1−α/2} + z_power) · sqrt(2 p (1 − p)(1 − rho) / n)

For every ontology branch and every value of the configured slices, the plan reports ``n``,
``half_width(n)``, ``mde(n)``, the queries needed for the target half-width and delta, the
shortfall, and whether the current set can decide each (``n ≥`` the requirement).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any

from kg_rageval.testset.config import PlanConfig


def z_of(level: float) -> float:
    return NormalDist().inv_cdf(1 - (1 - level) / 2)


def half_width(n: int, p: float, level: float = 0.95) -> float | None:
    return z_of(level) * math.sqrt(p * (1 - p) / n) if n > 0 else None


def n_for_half_width(h: float, p: float, level: float = 0.95) -> int:
    return math.ceil(z_of(level) ** 2 * p * (1 - p) / h**2)


def _paired_var(p: float, rho: float) -> float:
    return 2 * p * (1 - p) * (1 - rho)


def _z_sum(alpha: float, power: float) -> float:
    return NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)


def n_for_delta(delta: float, p: float, *, alpha: float = 0.05, power: float = 0.8, rho: float = 0.5) -> int:
    return math.ceil(_z_sum(alpha, power) ** 2 * _paired_var(p, rho) / delta**2)


def mde(n: int, p: float, *, alpha: float = 0.05, power: float = 0.8, rho: float = 0.5) -> float | None:
    return _z_sum(alpha, power) * math.sqrt(_paired_var(p, rho) / n) if n > 0 else None


def _row(group: str, value: str, n: int, cfg: PlanConfig, need_ci: int, need_delta: int) -> dict[str, Any]:
    hw = half_width(n, cfg.p, cfg.level)
    md = mde(n, cfg.p, alpha=cfg.alpha, power=cfg.power, rho=cfg.rho)
    return {
        "group": group,
        "value": value,
        "n": n,
        "half_width": hw,
        "mde": md,
        "n_needed_ci": need_ci,
        "n_needed_delta": need_delta,
        "short_ci": max(0, need_ci - n),
        "short_delta": max(0, need_delta - n),
        "decides_ci": n >= need_ci,
        "decides_delta": n >= need_delta,
    }


def plan_testset(
    records: Sequence[Mapping[str, Any]],
    ontology: Any,
    cfg: PlanConfig | None = None,
    *,
    corpus: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The plan (module docstring): ``coverage``, ``targets`` and one row per group."""
    from kg_rageval.audit.config import CoverageConfig
    from kg_rageval.audit.pernode import coverage_matrix, gold_node_of, make_branch_of

    cfg = cfg or PlanConfig()
    cov_cfg = CoverageConfig(branch_depth=cfg.branch_depth, branches=cfg.branches, thin=cfg.thin)
    coverage = coverage_matrix([dict(r) for r in records], ontology, corpus, cov_cfg)
    need_ci = n_for_half_width(cfg.half_width, cfg.p, cfg.level)
    need_delta = n_for_delta(cfg.delta, cfg.p, alpha=cfg.alpha, power=cfg.power, rho=cfg.rho)
    branch_of = make_branch_of(ontology, cov_cfg)
    counts: dict[tuple[str, str], int] = {}
    for b in coverage["axes"]["branch"]:
        counts[("branch", b)] = 0
    for r in records:
        counts[("branch", branch_of(gold_node_of(r)))] = (
            counts.get(("branch", branch_of(gold_node_of(r))), 0) + 1
        )
        sl: Mapping[str, Any] = r["slices"] if isinstance(r.get("slices"), Mapping) else {}
        for name in cfg.slices:
            if name in sl:
                key = (f"slice:{name}", str(sl[name]))
                counts[key] = counts.get(key, 0) + 1
    rows = [_row("all", "all", len(records), cfg, need_ci, need_delta)]
    rows += [_row(g, v, n, cfg, need_ci, need_delta) for (g, v), n in sorted(counts.items())]
    undecided = [r for r in rows if not r["decides_ci"]]
    return {
        "targets": {
            "p": cfg.p,
            "level": cfg.level,
            "z": z_of(cfg.level),
            "half_width": cfg.half_width,
            "delta": cfg.delta,
            "alpha": cfg.alpha,
            "power": cfg.power,
            "rho": cfg.rho,
            "n_needed_ci": need_ci,
            "n_needed_delta": need_delta,
        },
        "formulas": {
            "half_width": "z*sqrt(p(1-p)/n)",
            "n_ci": "ceil(z^2 p(1-p)/h^2)",
            "n_delta": "ceil((z_{1-alpha/2}+z_power)^2 * 2p(1-p)(1-rho) / delta^2)",
            "mde": "(z_{1-alpha/2}+z_power)*sqrt(2p(1-p)(1-rho)/n)",
        },
        "rows": rows,
        "n_groups": len(rows),
        "cannot_decide_ci": [[r["group"], r["value"]] for r in undecided],
        "cannot_decide_delta": [[r["group"], r["value"]] for r in rows if not r["decides_delta"]],
        "queries_short_ci": sum(r["short_ci"] for r in rows if r["group"] == "branch"),
        "coverage": coverage,
    }
