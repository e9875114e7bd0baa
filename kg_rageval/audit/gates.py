"""Release gates: deciding ``recall@10 >= 0.85`` and friends against a run's metrics.

The grammar (:class:`Gate`, :func:`parse_gate`, :func:`parse_gates`) is
:mod:`kg_rageval.contract.gates`, the one parser shared with the pytest plugin and the CLI;
it is re-exported here.

Evaluation (:func:`evaluate_gates`) looks a gate up in a flat ``{key: Metric}`` mapping where
``key`` is :attr:`Gate.key` — the metric name, followed by ``[scope]`` for a scoped gate. A
gate whose metric is absent, has ``value=None`` (empty denominator) or lacks the requested
confidence bound gets status ``"missing"``: **missing evidence fails the audit**, it never
passes by default. So does a gate whose number rests on fewer rows than its declared minimum
(:class:`~kg_rageval.contract.gates.RowMinimum`: ``min_rows``, 30 by default, 59 for a p95,
299 for a p99; the reason names the count and the minimum)."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from kg_rageval.base.fmt import fmt_count
from kg_rageval.contract.gates import (
    EQ_TOLERANCE,
    OPS,
    USES,
    Gate,
    RowMinimum,
    _fmt_threshold,
    parse_gate,
    parse_gates,
    thin_evidence,
)
from kg_rageval.results.metric import Metric

Status = Literal["pass", "fail", "missing"]


@dataclass(frozen=True)
class GateResult:
    """The decision on one gate: ``pass``, ``fail`` or ``missing`` (which fails the audit)."""

    gate: Gate
    status: Status
    observed: float | None
    reason: str

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def to_dict(self) -> dict:
        return {
            "gate": str(self.gate),
            "metric": self.gate.metric,
            "op": self.gate.op,
            "threshold": self.gate.threshold,
            "scope": self.gate.scope,
            "use": self.gate.use,
            "status": self.status,
            "observed": self.observed,
            "reason": self.reason,
        }


def evaluate_gates(
    gates: Iterable[Gate],
    metrics: Mapping[str, Metric],
    *,
    min_rows: RowMinimum | None = None,
    notes: Mapping[str, str] | None = None,
) -> list[GateResult]:
    """Decide every gate against ``metrics`` (keys as :attr:`Gate.key`). The one decision of
    the audit, the CLI and the pytest plugin.

    * metric absent → ``missing`` ("no family produced ..."), with close names suggested;
    * ``value is None`` → ``missing`` with the metric's own reason (empty denominator, ...);
    * a point-value gate on fewer rows than its minimum (``min_rows``, default
      :class:`RowMinimum()`: 30, a p95 59; a ``ci_low``/``ci_high`` gate has its own,
      ``bootstrap.min_units``, and an interval that widens with few rows) → ``missing``, naming the count and the minimum, with ``notes[gate.key]`` (the
      audit's: the family's records and unscored ones) appended;
    * ``use`` is a CI bound but no interval was computed → ``missing``;
    * otherwise ``pass`` or ``fail`` by the comparison.
    """
    out: list[GateResult] = []
    minimum = RowMinimum() if min_rows is None else min_rows
    for g in gates:
        m = metrics.get(g.key)
        if m is None:
            close = difflib.get_close_matches(g.key, list(metrics), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            out.append(
                GateResult(g, "missing", None, f"missing evidence: no family produced {g.key!r}{hint}")
            )
            continue
        if m.value is None:
            out.append(GateResult(g, "missing", None, f"missing evidence: {m.missing or 'metric undefined'}"))
            continue
        if not math.isfinite(m.value):
            out.append(GateResult(g, "missing", None, f"missing evidence: non-finite value {m.value!r}"))
            continue
        thin = thin_evidence(g, m, minimum) if g.use == "value" else None  # a bound: min_units
        if thin is not None:
            note = (notes or {}).get(g.key)
            out.append(GateResult(g, "missing", None, f"{thin}; {note}" if note else thin))
            continue
        if g.use == "value":
            observed = float(m.value)
        elif m.ci is None:
            out.append(
                GateResult(
                    g,
                    "missing",
                    None,
                    f"missing evidence: no confidence interval for {g.key!r} "
                    f"(bootstrap disabled, or fewer records than bootstrap.min_units)",
                )
            )
            continue
        else:
            observed = float(m.ci[0] if g.use == "ci_low" else m.ci[1])
            if not math.isfinite(observed):
                out.append(
                    GateResult(g, "missing", None, f"missing evidence: non-finite {g.use} {observed!r}")
                )
                continue
        ok = g.compare(observed)
        frac = ""
        if m.numerator is not None and m.denominator is not None:
            frac = f" ({_n(m.numerator)}/{_n(m.denominator)})"
        what = "value" if g.use == "value" else g.use
        reason = f"{what} {observed:.4f}{frac} {'meets' if ok else 'violates'} {g.op} {_fmt_threshold(g.threshold)}"
        out.append(GateResult(g, "pass" if ok else "fail", observed, reason))
    return out


def metric_dict(m: Metric) -> dict:
    """``Metric.to_dict()``, or — when a family produced a non-finite number — the metric as
    missing with that reason (a report never carries NaN/inf, and never crashes on one)."""
    try:
        return m.to_dict()
    except ValueError as exc:
        return {"name": m.name, "value": None, "missing": f"non-finite value from the family ({exc})"}


def finite_or_none(x: float | None) -> float | None:
    return x if x is None or math.isfinite(x) else None


_n = fmt_count


__all__ = [
    "EQ_TOLERANCE",
    "OPS",
    "USES",
    "Gate",
    "GateResult",
    "RowMinimum",
    "evaluate_gates",
    "parse_gate",
    "parse_gates",
]
