"""Release gates: ``recall@10 >= 0.85`` and friends, parsed without ``eval``.

Grammar (whitespace is free around tokens)::

    gate    := target OP NUMBER
    target  := METRIC [ "[" SCOPE "]" ]
             | BOUND "(" METRIC [ "[" SCOPE "]" ] ")" [ "[" SCOPE "]" ]
    BOUND   := "ci_low" | "ci_high"
    OP      := ">=" | ">" | "<=" | "<" | "=="
    METRIC  := letters, digits and  _ @ . - / :   (e.g. recall@10, delta:mrr)
    SCOPE   := "slice:<name>=<value>" | "node:<ontology id>"

A quantile may be written as a function: ``p95(latency.total_ms)`` is the metric
``latency.total_ms.p95`` (``p50``/``p95``/``p99``, any ``p<1-2 digits>``; ``docs/system.md``),
also inside a bound: ``ci_high(p95(latency.total_ms))``.

Examples: ``recall@10 >= 0.85``, ``p95(latency.total_ms) <= 1500``, ``hierarchical_f1[node:TA0005] >= 0.7``,
``ci_low(faithfulness) >= 0.8``, ``mrr[slice:intent=lookup] > 0.5``.

``str(gate)`` is canonical and :func:`parse_gate` reads it back to an equal :class:`Gate`
(``ci_low(recall@10[slice:intent=lookup]) >= 0.85``).

Evaluation (:func:`evaluate_gates`) looks a gate up in a flat ``{key: Metric}`` mapping where
``key`` is :attr:`Gate.key` — the metric name, followed by ``[scope]`` for a scoped gate. A
gate whose metric is absent, has ``value=None`` (empty denominator) or lacks the requested
confidence bound gets status ``"missing"``: **missing evidence fails the audit**, it never
passes by default. ``==`` compares with an absolute tolerance of 1e-12.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import Iterable, Literal, Mapping

from kg_rageval.base.errors import ConfigError
from kg_rageval.results.metric import Metric
from kg_rageval.contract.names import SCOPE_KINDS, check_scope
from kg_rageval.base.fmt import fmt_count

OPS: tuple[str, ...] = (">=", ">", "<=", "<", "==")
USES: tuple[str, ...] = ("value", "ci_low", "ci_high")
EQ_TOLERANCE = 1e-12

Status = Literal["pass", "fail", "missing"]

_METRIC = r"[A-Za-z_][A-Za-z0-9_@.\-/:]*"
_SCOPE = r"[^\[\]]+"
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?"
_GATE_RE = re.compile(
    rf"""^\s*
    (?:
        (?P<bound>ci_low|ci_high)\s*\(\s*(?P<bmetric>{_METRIC})\s*(?:\[\s*(?P<bscope>{_SCOPE})\s*\])?\s*\)
        \s*(?:\[\s*(?P<oscope>{_SCOPE})\s*\])?
      |
        (?P<metric>{_METRIC})\s*(?:\[\s*(?P<scope>{_SCOPE})\s*\])?
    )
    \s*(?P<op>>=|<=|==|>|<)\s*
    (?P<threshold>{_NUMBER})
    \s*$""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Gate:
    """One threshold on one metric.

    ``scope`` restricts the metric to a record slice (``"slice:intent=lookup"``) or an ontology
    branch (``"node:TA0006"``: rows whose gold node lies in that node's subtree). ``use`` picks
    the point value or a bound of its bootstrap confidence interval.
    """

    metric: str
    op: str
    threshold: float
    scope: str | None = None
    use: str = "value"

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ConfigError(f"gate operator {self.op!r} is not one of {', '.join(OPS)}")
        if self.use not in USES:
            raise ConfigError(f"gate 'use' {self.use!r} is not one of {', '.join(USES)}")
        if not isinstance(self.threshold, (int, float)) or not math.isfinite(self.threshold):
            raise ConfigError(f"gate threshold {self.threshold!r} is not a finite number")
        if not re.fullmatch(_METRIC, self.metric or ""):
            raise ConfigError(f"gate metric name {self.metric!r} is not a valid metric name")
        if self.scope is not None:
            check_scope(self.scope)

    @property
    def key(self) -> str:
        """The lookup key in the metrics mapping: ``metric`` or ``metric[scope]``."""
        return f"{self.metric}[{self.scope}]" if self.scope else self.metric

    def __str__(self) -> str:
        target = self.key if self.use == "value" else f"{self.use}({self.key})"
        return f"{target} {self.op} {_fmt_threshold(self.threshold)}"

    def compare(self, observed: float) -> bool:
        t = self.threshold
        if self.op == ">=":
            return observed >= t
        if self.op == ">":
            return observed > t
        if self.op == "<=":
            return observed <= t
        if self.op == "<":
            return observed < t
        return abs(observed - t) <= EQ_TOLERANCE


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


def _fmt_threshold(x: float) -> str:
    r = repr(float(x))
    return r[:-2] if r.endswith(".0") else r


def _parse_number(text: str) -> float:
    if text.endswith("%"):
        return float(text[:-1]) / 100.0
    return float(text)


_QUANTILE_CALL = re.compile(rf"\b(p\d{{1,2}})\s*\(\s*({_METRIC})\s*(\[[^\[\]]*\])?\s*\)")


def _quantile_sugar(text: str) -> str:
    """``p95(m)`` → ``m.p95`` (and ``p95(m[scope])`` → ``m.p95[scope]``)."""
    return _QUANTILE_CALL.sub(lambda m: f"{m.group(2)}.{m.group(1)}{m.group(3) or ''}", text)


def parse_gate(text: str) -> Gate:
    """Parse one gate expression (see the module docstring); raises :class:`ConfigError`
    naming the expression and what was expected."""
    if not isinstance(text, str):
        raise ConfigError(f"gate must be a string like 'recall@10 >= 0.85', got {text!r}")
    m = _GATE_RE.match(_quantile_sugar(text))
    if not m:
        hint = ""
        if "=" in text and not any(op in text for op in OPS):
            hint = " (use '==' for equality)"
        elif not any(op in text for op in ("<", ">", "==")):
            hint = f" (no comparison operator; use one of {', '.join(OPS)})"
        raise ConfigError(
            f"cannot parse gate {text!r}{hint}; expected 'metric[scope] OP number' or "
            f"'ci_low(metric[scope]) OP number', e.g. 'recall@10 >= 0.85'"
        )
    if m.group("bound"):
        use = m.group("bound")
        metric = m.group("bmetric")
        bscope, oscope = m.group("bscope"), m.group("oscope")
        if bscope and oscope:
            raise ConfigError(f"gate {text!r} gives a scope twice")
        scope = (bscope or oscope or None)
    else:
        use, metric, scope = "value", m.group("metric"), m.group("scope")
    if metric in USES:
        raise ConfigError(f"gate {text!r}: {metric!r} needs parentheses, e.g. '{metric}(mrr) >= 0.5'")
    scope = scope.strip() if scope else None
    try:
        return Gate(metric=metric, op=m.group("op"), threshold=_parse_number(m.group("threshold")),
                    scope=scope, use=use)
    except ConfigError as exc:
        raise ConfigError(f"gate {text!r}: {exc}") from None


def parse_gates(texts: Iterable[str], *, source: str | None = None, field: str = "gates") -> list[Gate]:
    """Parse many gates, reporting **all** parse errors at once in one :class:`ConfigError`."""
    gates: list[Gate] = []
    errors: list[str] = []
    for i, t in enumerate(texts):
        try:
            gates.append(parse_gate(t))
        except ConfigError as exc:
            errors.append(f"{field}[{i}]: {exc}")
    if errors:
        raise ConfigError(
            f"{len(errors)} invalid gate{'s' if len(errors) > 1 else ''}:\n  " + "\n  ".join(errors),
            source=source,
        )
    return gates


def evaluate_gates(gates: Iterable[Gate], metrics: Mapping[str, Metric]) -> list[GateResult]:
    """Decide every gate against ``metrics`` (keys as :attr:`Gate.key`).

    * metric absent → ``missing`` ("no family produced ..."), with close names suggested;
    * ``value is None`` → ``missing`` with the metric's own reason (empty denominator, ...);
    * ``use`` is a CI bound but no interval was computed → ``missing``;
    * otherwise ``pass`` or ``fail`` by the comparison.
    """
    out: list[GateResult] = []
    for g in gates:
        m = metrics.get(g.key)
        if m is None:
            close = difflib.get_close_matches(g.key, list(metrics), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            out.append(GateResult(g, "missing", None, f"missing evidence: no family produced {g.key!r}{hint}"))
            continue
        if m.value is None:
            out.append(GateResult(g, "missing", None, f"missing evidence: {m.missing or 'metric undefined'}"))
            continue
        if not math.isfinite(m.value):
            out.append(GateResult(g, "missing", None, f"missing evidence: non-finite value {m.value!r}"))
            continue
        if g.use == "value":
            observed = float(m.value)
        elif m.ci is None:
            out.append(GateResult(g, "missing", None,
                                  f"missing evidence: no confidence interval for {g.key!r} "
                                  f"(bootstrap disabled, or fewer records than bootstrap.min_units)"))
            continue
        else:
            observed = float(m.ci[0] if g.use == "ci_low" else m.ci[1])
            if not math.isfinite(observed):
                out.append(GateResult(g, "missing", None, f"missing evidence: non-finite {g.use} {observed!r}"))
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
    "OPS",
    "USES",
    "Gate",
    "GateResult",
    "evaluate_gates",
    "parse_gate",
    "parse_gates",
]
