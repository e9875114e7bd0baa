"""Prediction-powered inference (PPI) for a mean (Angelopoulos et al., Science 2023; as ARES).

``n`` items carry a human label ``y`` and a judge label ``ŷ``; ``N`` further items carry only
``ŷ``. The PPI estimate of the mean of ``y`` over the population is

    θ̂ = λ · mean_N(ŷ_u) + mean_n(y − λ · ŷ_l)

(the judge's mean on the unlabelled items, corrected by the *rectifier* — the judge's average
error on the labelled ones). Its ``level`` interval is ``θ̂ ± z · sqrt(σ̂²_f / N + σ̂²_r / n)``
with ``σ̂²_f = Var_N(λ·ŷ_u)`` and ``σ̂²_r = Var_n(y − λ·ŷ_l)`` (population variances, ddof 0, as
``ppi_py``), ``z`` the standard normal ``(1+level)/2`` quantile. ``λ = 1`` is plain PPI; ``λ =
0`` the classical interval of the labelled items alone; ``lam="auto"`` picks the variance-
minimising ``λ̂ = Cov_n(y, ŷ) / ((1 + n/N) · Var(ŷ))`` (PPI++, Angelopoulos, Duchi and Zrnic
2023; ``Var(ŷ)`` pooled over both sets with ddof 1, ``Cov`` with ddof 0, as ``ppi_py``),
clipped to [0, 1].

Everything is a function of additive sums (:data:`PPI_STATS`), so the estimate attaches to
slices and ontology branches like every other metric. It needs ``n >= 2`` and ``N >= 1``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

PPI_STATS = (
    "ppi_n",
    "ppi_sum_y",
    "ppi_sum_y2",
    "ppi_sum_yhat_l",
    "ppi_sum_yhat2_l",
    "ppi_sum_y_yhat",
    "ppi_N",
    "ppi_sum_yhat_u",
    "ppi_sum_yhat2_u",
)


@dataclass(frozen=True)
class PPIResult:
    """A PPI estimate: ``estimate``, the interval ``(low, high)``, the ``lam`` used, the
    standard error and the sizes; ``missing`` says why there is none (then the rest is None)."""

    estimate: float | None
    low: float | None
    high: float | None
    lam: float | None
    se: float | None
    n: int
    N: int
    missing: str | None = None


def z_value(level: float) -> float:
    """``scipy.stats.norm.ppf((1 + level) / 2)`` (``kg_rageval.base.normal``: no scipy import
    for the usual levels)."""
    from kg_rageval.base.normal import normal_ppf

    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), not {level!r}")
    return normal_ppf((1 + level) / 2)


def ppi_sums(y: Sequence[float], yhat: Sequence[float], yhat_unlabelled: Sequence[float]) -> dict[str, float]:
    """The additive sums PPI needs, from arrays."""
    ya, yh, yu = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabelled))
    if ya.shape != yh.shape:
        raise ValueError(f"y and yhat differ in length ({len(ya)} vs {len(yh)})")
    return {
        "ppi_n": float(len(ya)),
        "ppi_sum_y": float(ya.sum()),
        "ppi_sum_y2": float((ya * ya).sum()),
        "ppi_sum_yhat_l": float(yh.sum()),
        "ppi_sum_yhat2_l": float((yh * yh).sum()),
        "ppi_sum_y_yhat": float((ya * yh).sum()),
        "ppi_N": float(len(yu)),
        "ppi_sum_yhat_u": float(yu.sum()),
        "ppi_sum_yhat2_u": float((yu * yu).sum()),
    }


def ppi_from_sums(s: Mapping[str, float], *, level: float = 0.95, lam: float | str = 1.0) -> PPIResult:
    """The PPI estimate and interval from :data:`PPI_STATS` sums (see the module docstring)."""
    n, N = s["ppi_n"], s["ppi_N"]
    ni, Ni = int(round(n)), int(round(N))
    if n < 2:
        return PPIResult(
            None, None, None, None, None, ni, Ni, f"PPI needs at least 2 human-labelled items, has {ni}"
        )
    if N < 1:
        return PPIResult(
            None, None, None, None, None, ni, Ni, "PPI needs judge labels on unlabelled items, has none"
        )
    my, myh = s["ppi_sum_y"] / n, s["ppi_sum_yhat_l"] / n
    mu = s["ppi_sum_yhat_u"] / N
    var_u = max(0.0, s["ppi_sum_yhat2_u"] / N - mu * mu)
    var_l = max(0.0, s["ppi_sum_yhat2_l"] / n - myh * myh)
    cov = s["ppi_sum_y_yhat"] / n - my * myh
    if lam == "auto":
        m_all = (s["ppi_sum_yhat_l"] + s["ppi_sum_yhat_u"]) / (n + N)
        var_all = (
            max(0.0, (s["ppi_sum_yhat2_l"] + s["ppi_sum_yhat2_u"]) / (n + N) - m_all * m_all)
            * (n + N)
            / (n + N - 1)
        )  # sample variance (ddof 1), as ppi_py
        lam_v = 0.0 if var_all == 0 else min(1.0, max(0.0, cov / ((1 + n / N) * var_all)))
    elif isinstance(lam, (int, float)) and not isinstance(lam, bool) and math.isfinite(lam):
        lam_v = float(lam)
    else:
        raise ValueError(f"lam must be a number or 'auto', not {lam!r}")
    est = lam_v * mu + (my - lam_v * myh)
    var_f = lam_v * lam_v * var_u
    # Var(y − λŷ) = Var(y) − 2λ Cov(y, ŷ) + λ² Var(ŷ) on the labelled items
    var_y = max(0.0, s["ppi_sum_y2"] / n - my * my)
    var_r = max(0.0, var_y - 2 * lam_v * cov + lam_v * lam_v * var_l)
    se = math.sqrt(var_f / N + var_r / n)
    z = z_value(level)
    return PPIResult(est, est - z * se, est + z * se, lam_v, se, ni, Ni)


def ppi_mean(
    y: Sequence[float],
    yhat: Sequence[float],
    yhat_unlabelled: Sequence[float],
    *,
    level: float = 0.95,
    lam: float | str = 1.0,
) -> PPIResult:
    """PPI estimate of the mean of ``y`` from ``n`` labelled pairs and ``N`` unlabelled judge
    labels (arrays of equal-length ``y``/``yhat``)."""
    return ppi_from_sums(ppi_sums(y, yhat, yhat_unlabelled), level=level, lam=lam)


def classical_mean(y: Sequence[float], *, level: float = 0.95) -> PPIResult:
    """The classical normal interval of the labelled items alone (PPI with ``λ = 0``), for
    comparison: how much the judge labels narrow the interval."""
    ya = np.asarray(y, dtype=float)
    return ppi_mean(ya.tolist(), [0.0] * len(ya), [0.0], level=level, lam=0.0)
