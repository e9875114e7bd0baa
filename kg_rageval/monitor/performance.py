"""Performance drift: production-equivalent rates per window and group, with binomial
intervals, control bands from a reference period and change detection (``docs/monitoring_review.md``).

Rates (each a proportion ``k / n`` over the rows that carry the field; a row without it is
not in the denominator):

* ``regeneration_rate``: ``feedback.regenerated`` is true;
* ``thumbs_down_rate``: ``feedback.thumbs == "down"`` over rows with a thumbs verdict;
* ``refusal_rate``: ``answer.refused`` is true over rows with an ``answer.refused`` flag;
* ``faithfulness``: judged answers (``answer.judgment``, the generation family's contract)
  whose claims are all supported, over judged answers with at least one claim; a reviewed
  ``review.faithful`` (bool) takes precedence over the judge.

Intervals are Wilson score intervals (:func:`kg_rageval.audit.intervals.wilson`, equal to
``statsmodels`` ``proportion_confint(method="wilson")``). A window with fewer than
``min_rows`` rows is **insufficient evidence**, never a band violation.

Control band: the pooled reference rate ``p0`` and, for a window of ``n`` rows, the exact
binomial acceptance region ``[ppf(a/2), isf(a/2)]`` of Binomial(n, p0), where the per-window
``a = budget / m`` (Bonferroni over the ``m`` monitored window cells): the chance that any
in-control cell leaves its band is at most ``budget``.

Change detection: a two-sided CUSUM on the standardised window rates
``z_t = (p_t - p0) / sqrt(p0 (1 - p0) / n_t)`` (reference value ``k = 0.5``, decision
interval ``h = 5``); when it signals, a step model (one change point, two levels) and a linear
trend are fitted by weighted least squares and compared by BIC: ``sudden`` when the step wins
by more than 2, ``gradual`` when the trend does, else ``undetermined``. The shape of a change
does not prove its cause.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kg_rageval.audit.intervals import wilson
from kg_rageval.monitor.traffic import TrafficRow

MIN_ROWS = 30
CAUSE_NOTE = "the shape of a change (sudden or gradual) does not prove its cause"
INSUFFICIENT = "insufficient evidence"
CUSUM_K = 0.5
CUSUM_H = 5.0


def _regenerated(row: TrafficRow) -> bool | None:
    v = row.feedback.get("regenerated")
    return v if isinstance(v, bool) else None


def _thumbs_down(row: TrafficRow) -> bool | None:
    v = row.feedback.get("thumbs")
    return None if v is None else v == "down"


def _refused(row: TrafficRow) -> bool | None:
    ans = row.record.get("answer")
    v = ans.get("refused") if isinstance(ans, Mapping) else None
    return v if isinstance(v, bool) else None


def faithful(row: TrafficRow) -> bool | None:
    """Reviewed ``review.faithful``, else the judge's verdict: every claim supported;
    ``None`` for an unjudged answer, an invalid judgment or one without claims."""
    return faithful_source(row.record)[1]


def faithful_source(record: Mapping[str, Any]) -> tuple[str | None, bool | None]:
    """``(source, verdict)`` of :func:`faithful` on a record: ``("reviewed", bool)`` from
    ``review.faithful``, else ``("judged", bool)`` from ``answer.judgment``, else
    ``(None, None)``. The window store keeps the two sources' counts apart."""
    review = record.get("review")
    if isinstance(review, Mapping) and isinstance(review.get("faithful"), bool):
        return "reviewed", bool(review["faithful"])
    ans = record.get("answer")
    raw = ans.get("judgment") if isinstance(ans, Mapping) else None
    if raw is None:
        return None, None
    from kg_rageval.families.generation.judgment import parse_judgment

    j = parse_judgment(raw)  # its counts, read without building the pydantic model
    if not j.valid or not j.n_claims:
        return None, None
    return "judged", j.n_supported == j.n_claims


RATES: dict[str, Callable[[TrafficRow], bool | None]] = {
    "regeneration_rate": _regenerated,
    "thumbs_down_rate": _thumbs_down,
    "refusal_rate": _refused,
    "faithfulness": faithful,
}


def group_of(row: TrafficRow, by: str) -> str:
    if by == "all":
        return "(all)"
    if by == "branch":
        return row.branch
    if by == "intent":
        return row.intent or "(no intent)"
    raise ValueError(f"by must be all, branch or intent, got {by!r}")


@dataclass
class RateCell:
    window: str
    group: str
    rate: str
    k: int
    n: int
    level: float = 0.95
    min_rows: int = MIN_ROWS
    band: tuple[float, float] | None = None
    status: str = ""

    @property
    def estimate(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def ci(self) -> tuple[float, float] | None:
        return wilson(self.k, self.n, self.level) if self.n else None

    @property
    def enough(self) -> bool:
        return self.n >= self.min_rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "group": self.group,
            "rate": self.rate,
            "k": self.k,
            "n": self.n,
            "estimate": self.estimate,
            "ci": list(self.ci) if self.ci else None,
            "band": list(self.band) if self.band else None,
            "status": self.status or (INSUFFICIENT if not self.enough else "no band"),
        }


def rate_cells(
    rows: Iterable[TrafficRow],
    rate: str,
    *,
    by: str = "branch",
    level: float = 0.95,
    min_rows: int = MIN_ROWS,
) -> dict[tuple[str, str], RateCell]:
    """``(window, group) -> RateCell`` of one rate; groups by ``all``, ``branch`` or ``intent``."""
    if rate not in RATES:
        raise ValueError(f"unknown rate {rate!r}; known: {', '.join(RATES)}")
    fn = RATES[rate]
    out: dict[tuple[str, str], RateCell] = {}
    for row in rows:
        v = fn(row)
        if v is None:
            continue
        key = (row.window, group_of(row, by))
        cell = out.get(key)
        if cell is None:
            cell = out[key] = RateCell(key[0], key[1], rate, 0, 0, level, min_rows)
        cell.n += 1
        cell.k += int(v)
    return out


def binomial_band(n: int, p0: float, alpha: float) -> tuple[int, int]:
    """Exact acceptance region ``[lo, hi]`` of counts under Binomial(n, p0): ``P(X < lo) <=
    alpha/2`` and ``P(X > hi) <= alpha/2``."""
    from scipy.stats import binom

    return int(binom.ppf(alpha / 2, n, p0)), int(binom.isf(alpha / 2, n, p0))


def predictive_band(n: int, k0: int, n0: int, alpha: float) -> tuple[int, int]:
    """Acceptance region ``[lo, hi]`` of a window's count that carries the reference's own
    sampling error: the beta-binomial posterior predictive of ``n`` rows given ``k0`` of ``n0``
    reference rows (Jeffreys prior, ``BetaBinomial(n, k0 + 1/2, n0 - k0 + 1/2)``), ``P(X < lo)
    <= alpha/2`` and ``P(X > hi) <= alpha/2``; it tends to :func:`binomial_band` as ``n0`` grows."""
    from scipy.stats import betabinom

    dist = betabinom(n, k0 + 0.5, n0 - k0 + 0.5)
    return int(dist.ppf(alpha / 2)), int(dist.isf(alpha / 2))


def apply_bands(
    cells: Mapping[tuple[str, str], RateCell],
    reference: Sequence[str],
    *,
    budget: float = 0.05,
    reference_error: bool = False,
) -> dict[str, Any]:
    """Set band and status of every non-reference cell from the pooled reference rate of its
    group; returns the stated false-alarm budget. Status: ``ok``, ``above band``, ``below
    band``, ``insufficient evidence`` (too few rows in the window or in the reference).
    ``reference_error``: the band is :func:`predictive_band` (the reference rate's own
    sampling error included) instead of :func:`binomial_band` around it taken as known."""
    ref = set(reference)
    pooled: dict[str, tuple[int, int]] = {}
    for (w, g), c in cells.items():
        if w in ref:
            k, n = pooled.get(g, (0, 0))
            pooled[g] = (k + c.k, n + c.n)
    monitored = [c for (w, _), c in cells.items() if w not in ref]
    m = max(1, len(monitored))
    alpha = budget / m
    for c in monitored:
        k0, n0 = pooled.get(c.group, (0, 0))
        if not c.enough or n0 < c.min_rows:
            c.status = INSUFFICIENT
            continue
        p0 = k0 / n0
        lo, hi = predictive_band(c.n, k0, n0, alpha) if reference_error else binomial_band(c.n, p0, alpha)
        c.band = (lo / c.n, hi / c.n)
        c.status = "below band" if c.k < lo else "above band" if c.k > hi else "ok"
    for (w, _), c in cells.items():
        if w in ref:
            c.status = "reference"
    return {
        "false_alarm_budget": budget,
        "per_window_alpha": alpha,
        "correction": f"Bonferroni over {m} monitored window cells",
        "band": (
            "beta-binomial predictive acceptance region from the pooled reference counts (Jeffreys "
            "prior: the reference rate's own sampling error included)"
            if reference_error
            else "exact binomial acceptance region around the pooled reference rate"
        ),
    }


def cusum(z: Sequence[float], k: float = CUSUM_K, h: float = CUSUM_H) -> int | None:
    """Index of the first window where the two-sided CUSUM of ``z`` exceeds ``h``; ``None``."""
    hi = lo = 0.0
    for i, x in enumerate(z):
        hi = max(0.0, hi + x - k)
        lo = max(0.0, lo - x - k)
        if hi > h or lo > h:
            return i
    return None


def _wls_sse(y: Sequence[float], w: Sequence[float], cols: Sequence[Sequence[float]]) -> float:
    import numpy as np

    Y, W = np.asarray(y, float), np.asarray(w, float)
    X = np.column_stack([np.asarray(c, float) for c in cols])
    sw = np.sqrt(W)
    beta, *_ = np.linalg.lstsq(X * sw[:, None], Y * sw, rcond=None)
    r = (Y - X @ beta) * sw
    return float(r @ r)


def change_shape(p: Sequence[float], n: Sequence[int], p0: float) -> dict[str, Any]:
    """Step (best single change point, 3 parameters) against linear trend (2 parameters) by
    BIC on the weighted window rates (weights ``n / (p0 (1 - p0))``, so SSE is a chi-square)."""
    T = len(p)
    var = max(p0 * (1 - p0), 1e-12)
    w = [ni / var for ni in n]
    ones = [1.0] * T
    trend_sse = _wls_sse(p, w, [ones, list(range(T))])
    best: tuple[float, int] | None = None
    for tau in range(1, T):
        sse = _wls_sse(p, w, [ones, [float(t >= tau) for t in range(T)]])
        if best is None or sse < best[0]:
            best = (sse, tau)
    if best is None:
        return {"shape": "undetermined", "reason": "one window only"}
    bic_step = best[0] + 3 * math.log(T)
    bic_trend = trend_sse + 2 * math.log(T)
    diff = bic_trend - bic_step
    shape = "sudden" if diff > 2 else "gradual" if diff < -2 else "undetermined"
    return {
        "shape": shape,
        "model_comparison": "step (one change point) vs linear trend, weighted least squares, BIC",
        "bic_step": bic_step,
        "bic_trend": bic_trend,
        "change_index": best[1] if shape == "sudden" else None,
        "note": CAUSE_NOTE,
    }


def detect_change(cells: Sequence[RateCell], p0: float) -> dict[str, Any]:
    """CUSUM over the time-ordered windows of one group (too-small windows skipped, counted),
    then :func:`change_shape` over them when it signals."""
    used = [c for c in sorted(cells, key=lambda c: c.window) if c.enough]
    skipped = len(cells) - len(used)
    if len(used) < 2 or not 0 < p0 < 1:
        return {"signal": None, "status": INSUFFICIENT, "windows_used": len(used), "windows_skipped": skipped}
    sd = math.sqrt(p0 * (1 - p0))
    z = [(c.k / c.n - p0) / (sd / math.sqrt(c.n)) for c in used]
    at = cusum(z)
    out: dict[str, Any] = {
        "method": f"two-sided CUSUM on standardised rates, k={CUSUM_K}, h={CUSUM_H}",
        "signal": used[at].window if at is not None else None,
        "windows_used": len(used),
        "windows_skipped": skipped,
        "note": CAUSE_NOTE,
    }
    if at is not None:
        shape = change_shape([c.k / c.n for c in used], [c.n for c in used], p0)
        if shape.get("change_index") is not None:
            shape["change_window"] = used[shape["change_index"]].window
        out.update(shape)
    else:
        out["shape"] = "no change detected"
    return out


def performance_report(
    rows: Sequence[TrafficRow],
    reference: Sequence[str],
    *,
    rates: Sequence[str] = tuple(RATES),
    by: str = "branch",
    budget: float = 0.05,
    level: float = 0.95,
    min_rows: int = MIN_ROWS,
) -> dict[str, Any]:
    """Every rate per window and group with its interval, band and a change verdict per group."""
    out: dict[str, Any] = {"by": by, "reference": list(reference), "level": level, "min_rows": min_rows}
    for rate in rates:
        cells = rate_cells(rows, rate, by=by, level=level, min_rows=min_rows)
        bands = apply_bands(cells, reference, budget=budget)
        changes: dict[str, Any] = {}
        for g in sorted({g for _, g in cells}):
            ref_cells = [c for (w, gg), c in cells.items() if gg == g and w in set(reference)]
            k0, n0 = sum(c.k for c in ref_cells), sum(c.n for c in ref_cells)
            cur = [c for (w, gg), c in cells.items() if gg == g and w not in set(reference)]
            changes[g] = (
                detect_change(cur, k0 / n0)
                if n0 >= min_rows
                else {"status": INSUFFICIENT, "reason": f"reference has {n0} rows (< {min_rows})"}
            )
        out[rate] = {
            **bands,
            "cells": [c.to_dict() for c in sorted(cells.values(), key=lambda c: (c.group, c.window))],
            "change": changes,
        }
    return out
