"""Agreement and proportion statistics from additive counts.

* Cohen's κ from a confusion matrix's marginals: ``p_o = agree / n``,
  ``p_e = Σ_c judge_c · human_c / n²``, ``κ = (p_o − p_e) / (1 − p_e)``; missing when ``n = 0``
  or ``p_e = 1`` (both raters used one and the same label: agreement beyond chance is
  undefined). Equal to ``sklearn.metrics.cohen_kappa_score`` (unweighted).
* Wilson score interval of a proportion ``k / n`` at ``level``:
  ``(p̂ + z²/2n ± z·sqrt(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kg_rageval.results.metric import Metric, ratio


def cohen_kappa(
    name: str,
    n: float,
    agree: float,
    judge: Sequence[float],
    human: Sequence[float],
    *,
    missing: str = "no items labelled by both raters",
) -> Metric:
    """Cohen's κ from the number of items ``n``, the agreements and each rater's per-label
    counts (same label order)."""
    if n <= 0:
        return Metric(name, None, missing=missing)
    p_o = agree / n
    p_e = sum(a * b for a, b in zip(judge, human)) / (n * n)
    if p_e >= 1 - 1e-15:
        return Metric(name, None, missing="chance agreement is 1 (both raters used a single label)")
    return Metric(name, (p_o - p_e) / (1 - p_e), agree, n)


def wilson(k: float, n: float, level: float = 0.95) -> tuple[float, float] | None:
    """The Wilson score interval of ``k / n``; ``None`` when ``n = 0``."""
    if n <= 0:
        return None
    from kg_rageval.families.judges.ppi import z_value

    z = z_value(level)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def rate_with_wilson(
    name: str, k: float, n: float, *, missing: str, level: float = 0.95
) -> tuple[Metric, Metric, Metric]:
    """``k / n`` with its Wilson interval as ``ci``, and the interval's bounds as metrics of
    their own (``<name>_wilson_low`` / ``_wilson_high``) so that a gate can use them."""
    m = ratio(name, k, n, missing=missing)
    ci = wilson(k, n, level)
    if ci is None:
        return (
            m,
            Metric(f"{name}_wilson_low", None, missing=missing),
            Metric(f"{name}_wilson_high", None, missing=missing),
        )
    return (
        m.with_ci(ci),
        Metric(f"{name}_wilson_low", ci[0], k, n),
        Metric(f"{name}_wilson_high", ci[1], k, n),
    )
