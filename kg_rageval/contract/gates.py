"""The one gate expression grammar: ``recall@10 >= 0.85`` and friends, parsed without ``eval``.

Used by the audit config (:mod:`kg_rageval.audit.gates`, which evaluates gates), the pytest
plugin (``assert_gates``) and the CLI. Grammar (whitespace is free around tokens)::

    gate    := target OP NUMBER
    target  := METRIC [ "[" SCOPE "]" ]
             | BOUND "(" METRIC [ "[" SCOPE "]" ] ")" [ "[" SCOPE "]" ]
    BOUND   := "ci_low" | "ci_high"
    OP      := ">=" | ">" | "<=" | "<" | "=="
    METRIC  := letters, digits and  _ @ . - / :  with at most one group "(key=value,...)"
               (e.g. recall@10, delta:mrr, P(rel=2)@10, trec.RBP(p=0.5))
    SCOPE   := "slice:<name>=<value>" | "node:<ontology id>"

Function sugar, rewritten before parsing:

* a quantile ``p95(latency.total_ms)`` is the metric ``latency.total_ms.p95``
  (``p50``/``p95``/``p99``, any ``p<1-2 digits>``; ``docs/system.md``), also inside a bound:
  ``ci_high(p95(latency.total_ms))``;
* ``delta(retrieval.mrr)`` is the paired difference ``delta:retrieval.mrr`` against the baseline.

Metric names are those of :mod:`kg_rageval.contract.names` (any alias of
:mod:`kg_rageval.contract.measures` is accepted: ``recip_rank``, ``ndcg_cut_10``,
``P(rel=2)@10``); resolution to the canonical name is :func:`kg_rageval.scoring.resolve_metric`.

Examples: ``recall@10 >= 0.85``, ``p95(latency.total_ms) <= 1500``, ``hierarchical_f1[node:TA0005] >= 0.7``,
``ci_low(faithfulness) >= 0.8``, ``mrr[slice:intent=lookup] > 0.5``, ``trec.Bpref >= 0.3``.

``str(gate)`` is canonical and :func:`parse_gate` reads it back to an equal :class:`Gate`
(``ci_low(recall@10[slice:intent=lookup]) >= 0.85``). ``==`` compares with an absolute
tolerance of 1e-12. Standard library only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from kg_rageval.base.errors import ConfigError
from kg_rageval.contract.names import PARAMS, check_scope

OPS: tuple[str, ...] = (">=", ">", "<=", "<", "==")
USES: tuple[str, ...] = ("value", "ci_low", "ci_high")
EQ_TOLERANCE = 1e-12

_METRIC = rf"[A-Za-z_][A-Za-z0-9_@.\-/:]*(?:{PARAMS}[A-Za-z0-9_@.\-/:]*)?"
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


def _fmt_threshold(x: float) -> str:
    r = repr(float(x))
    return r[:-2] if r.endswith(".0") else r


def _parse_number(text: str) -> float:
    if text.endswith("%"):
        return float(text[:-1]) / 100.0
    return float(text)


_QUANTILE_CALL = re.compile(rf"\b(p\d{{1,2}})\s*\(\s*({_METRIC})\s*(\[[^\[\]]*\])?\s*\)")


_DELTA_CALL = re.compile(rf"\bdelta\s*\(\s*({_METRIC})\s*(\[[^\[\]]*\])?\s*\)")


def _quantile_sugar(text: str) -> str:
    """``p95(m)`` → ``m.p95`` (and ``p95(m[scope])`` → ``m.p95[scope]``); ``delta(m)`` →
    ``delta:m``."""
    text = _QUANTILE_CALL.sub(lambda m: f"{m.group(2)}.{m.group(1)}{m.group(3) or ''}", text)
    return _DELTA_CALL.sub(lambda m: f"delta:{m.group(1)}{m.group(2) or ''}", text)


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
        scope = bscope or oscope or None
    else:
        use, metric, scope = "value", m.group("metric"), m.group("scope")
    if metric in USES:
        raise ConfigError(f"gate {text!r}: {metric!r} needs parentheses, e.g. '{metric}(mrr) >= 0.5'")
    scope = scope.strip() if scope else None
    try:
        return Gate(
            metric=metric,
            op=m.group("op"),
            threshold=_parse_number(m.group("threshold")),
            scope=scope,
            use=use,
        )
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


__all__ = ["EQ_TOLERANCE", "OPS", "USES", "Gate", "parse_gate", "parse_gates"]
