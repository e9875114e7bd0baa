"""The standard normal quantile without importing ``scipy.stats`` (0.6-0.9 s of start-up).

``normal_ppf(q)`` is ``float(scipy.stats.norm.ppf(q))`` bit for bit: the quantiles of the usual
two-sided levels (80, 90, 95, 98, 99, 99.5, 99.9 %) are stored as scipy 1.17 computes them
(``tests/base/test_normal.py`` checks each against scipy), any other ``q`` is computed by scipy.
(``statistics.NormalDist().inv_cdf`` is another algorithm: it differs from scipy in the last
bit for about two thirds of the arguments, which would change reported interval bounds.)
"""

from __future__ import annotations

# q -> scipy.stats.norm.ppf(q); q as (1 + level) / 2 (equal to 1 - (1 - level) / 2 for these levels)
KNOWN: dict[float, float] = {
    0.9: 1.2815515655446004,
    0.95: 1.6448536269514722,
    0.975: 1.959963984540054,
    0.99: 2.3263478740408408,
    0.995: 2.5758293035489004,
    0.9975: 2.807033768343811,
    0.9995: 3.2905267314919255,
}


def normal_ppf(q: float) -> float:
    """The quantile function of the standard normal at ``q`` in (0, 1), equal to
    ``float(scipy.stats.norm.ppf(q))``; scipy is imported only for a ``q`` not in ``KNOWN``."""
    z = KNOWN.get(q)
    if z is not None:
        return z
    from scipy.stats import norm  # type: ignore[import-untyped]

    return float(norm.ppf(q))
