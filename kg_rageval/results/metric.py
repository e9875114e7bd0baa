"""Metrics: one computed value with the numbers behind it, and the helpers that make them.

:class:`Metric` carries a value with its numerator, denominator, the reason it is missing and
its interval. Honest numbers: a ratio whose denominator is 0 (:func:`ratio`, :func:`mean_of`)
is a :class:`Metric` with ``value=None`` and a ``missing`` reason, never a 0 or 1; F1
(:func:`harmonic`) is missing when precision or recall is. :class:`LazyMetrics` finalizes a
roll-up node's sums only when they are read. See ``docs/evaluation.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kg_rageval.base.errors import MissingEvidence


@dataclass(frozen=True)
class Metric:
    """A computed metric value with the numbers behind it.

    ``value`` is ``None`` exactly when the metric is undefined on this data; ``missing`` then
    says why (e.g. ``"no records with gold documents"``). ``ci`` is a (low, high) confidence
    interval when one was computed. ``rows`` is how many rows (records) the value rests on when
    that is known apart from ``denominator`` (a quantile's values, a gate's records in scope,
    a delta's paired records): a gate's minimum of rows reads the smaller of the two
    (:func:`kg_rageval.contract.gates.rows_of`). :meth:`to_dict` writes it when known, so a
    gate read back from a report (``assert_gates`` on ``report.json``) is held to the same
    minimum as in the audit.
    """

    name: str
    value: float | None
    numerator: float | None = None
    denominator: float | None = None
    missing: str | None = None
    ci: tuple[float, float] | None = None
    rows: int | None = None

    @property
    def is_missing(self) -> bool:
        return self.value is None

    def require(self) -> float:
        """The value, or :class:`MissingEvidence` when it is undefined."""
        if self.value is None:
            raise MissingEvidence(f"{self.name}: {self.missing or 'missing evidence'}")
        return self.value

    def with_ci(self, ci: tuple[float, float] | None) -> Metric:
        """This metric with the interval ``ci``. A bound that misses the value by rounding only
        (within 1e-9 relative: the bootstrap sums resampled stats in another order than the
        point estimate, so an interval of identical replicates can lie an ulp beside it) is
        moved onto the value; a real miss is kept as computed."""
        v = self.value
        if ci is not None and v is not None and math.isfinite(v):
            lo, hi = ci
            tol = 1e-9 * max(1.0, abs(v))
            if v - tol <= hi < v:
                hi = v
            if v < lo <= v + tol:
                lo = v
            ci = (lo, hi)
        return Metric(self.name, self.value, self.numerator, self.denominator, self.missing, ci, self.rows)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict; a non-finite number raises ``ValueError``."""
        d: dict[str, Any] = {"name": self.name, "value": _clean(self.value)}
        if self.numerator is not None:
            d["numerator"] = _clean(self.numerator)
        if self.denominator is not None:
            d["denominator"] = _clean(self.denominator)
        if self.missing:
            d["missing"] = self.missing
        if self.ci is not None:
            d["ci"] = [_clean(self.ci[0]), _clean(self.ci[1])]
        if self.rows is not None:
            d["rows"] = int(self.rows)
        return d


def ratio(name: str, numerator: float, denominator: float, *, missing: str) -> Metric:
    """``numerator / denominator`` as a :class:`Metric`; an empty denominator is missing
    evidence (``value=None`` with the reason ``missing``), never 0 or 1.

    A NaN or infinite numerator or denominator raises ``ValueError`` (it is a bug upstream,
    not a measurement)."""
    num, den = float(numerator), float(denominator)
    if not (math.isfinite(num) and math.isfinite(den)):
        raise ValueError(f"{name}: non-finite ratio {numerator!r} / {denominator!r}")
    if den == 0:
        return Metric(name, None, num, den, missing)
    return Metric(name, num / den, num, den)


def harmonic(name: str, p: Metric, r: Metric) -> Metric:
    """F1 = 2·P·R/(P+R); missing when P or R is (with the reason of the first missing one);
    0 when P + R = 0 (both measured as 0)."""
    if p.value is None or r.value is None:
        why = (p.missing if p.value is None else None) or (r.missing if r.value is None else None)
        gone = p.name if p.value is None else r.name
        return Metric(name, None, missing=why or f"{gone} is missing")
    if p.value + r.value == 0:
        return Metric(name, 0.0)
    return Metric(name, 2 * p.value * r.value / (p.value + r.value))


class Metrics(dict):
    """``{name: Metric}`` filled by :meth:`add`, which keys each metric by its own name (so a
    family's ``finalize`` writes each name once)."""

    def add(self, *metrics: Metric) -> Metrics:
        for m in metrics:
            self[m.name] = m
        return self


def named(*metrics: Metric) -> Metrics:
    """``{m.name: m}`` in the given order (a :class:`Metrics`)."""
    return Metrics().add(*metrics)


def mean_of(name: str, total: float, count: float, *, missing: str) -> Metric:
    """A mean of per-row values kept as (sum, count): same convention as :func:`ratio`."""
    return ratio(name, total, count, missing=missing)


def _clean(x: Any) -> Any:
    """JSON-safe number: NaN/inf never reach a report."""
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"non-finite number {x!r} in a metric")
    return x


class LazyMetrics(Mapping):
    """A read-only ``{metric name: Metric}`` that finalizes its sums on first access (per-node
    roll-ups: a node that is never shown builds no :class:`Metric`)."""

    __slots__ = ("_fin", "_metrics", "_names", "_row")

    def __init__(
        self, finalize: Callable[[Mapping[str, float]], dict[str, Metric]], names: list[str], row: list[float]
    ):
        self._fin, self._names, self._row = finalize, names, row
        self._metrics: dict[str, Metric] | None = None

    def _get(self) -> dict[str, Metric]:
        if self._metrics is None:
            self._metrics = self._fin(dict(zip(self._names, self._row)))
        return self._metrics

    def __getitem__(self, name: str) -> Metric:
        return self._get()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return repr(self._get())

    def __reduce__(self):  # pickles (Dask) as the finalized dict
        return (dict, (self._get(),))


MetricFn = Callable[[Mapping[str, float]], Metric]
