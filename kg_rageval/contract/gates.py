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

**Minimum of rows** (:class:`RowMinimum`, :func:`thin_evidence`): every point-value gate
needs enough rows under its number, or it is *missing evidence* (which is not a pass; a
``ci_low``/``ci_high`` gate needs ``bootstrap.min_units`` records, and its interval widens
with few rows). Its
rows are the smaller of the metric's ``denominator`` (the units a rate or mean counts: claims,
records with gold, lookups) and its ``rows`` (records in the gate's scope, a quantile's values,
a delta's paired records) — :func:`rows_of`. The minimum is ``min_rows.metrics[<metric>]`` when
declared, else the larger of ``min_rows.default`` (:data:`MIN_ROWS`, 30, as the bootstrap's
``min_units``) and, for a quantile ``pQ``, :func:`quantile_min_rows`: the fewest rows for which
the sample's largest (for ``q < 0.5``: smallest) value is a 95 % distribution-free confidence
bound on that quantile, ``ceil(ln 0.05 / ln max(q, 1-q))`` — 59 for p95, 299 for p99, 5 for p50
(so 30). Below it, no order statistic of the sample bounds the quantile, and ``p95 <= 1500``
on 20 rows is the largest of a handful. A number given without any count (a bare float) cannot
be checked and is decided as given.

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
MIN_ROWS = 30
"""The default minimum of rows of every gate (``min_rows.default``): as ``bootstrap.min_units``."""
QUANTILE_CONFIDENCE = 0.95
"""The confidence of the distribution-free bound behind :func:`quantile_min_rows`."""
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


_QUANTILE_NAME = re.compile(r"\.p(\d{1,2})$")


def quantile_of(metric: str) -> float | None:
    """The quantile level of a quantile metric (``latency.total_ms.p95`` → 0.95, also as
    ``delta:...p95``); ``None`` for any other metric."""
    m = _QUANTILE_NAME.search(metric)
    return int(m.group(1)) / 100.0 if m else None


def quantile_min_rows(q: float, confidence: float = QUANTILE_CONFIDENCE) -> int:
    """Fewest rows ``n`` for which the sample's extreme value is a ``confidence``
    distribution-free bound on the ``q`` quantile: ``P(max < x_q) = q**n <= 1 - confidence``
    (the smallest value, by symmetry, for ``q < 0.5``), i.e. ``n = ceil(ln(1-c) / ln max(q, 1-q))``:
    59 for p95, 299 for p99, 29 for p90, 5 for p50."""
    p = max(q, 1.0 - q)
    if p <= 0.0:
        return 1
    if p >= 1.0:  # p0 / p100: the extreme itself, no sample size bounds it
        return MIN_ROWS
    return max(1, math.ceil(math.log(1.0 - confidence) / math.log(p) - 1e-9))


@dataclass(frozen=True)
class RowMinimum:
    """The declared minimum of rows of each gate (the audit config's ``min_rows``; see the
    module docstring). ``metrics`` maps a gate's metric as written (or ``metric[scope]``) to its
    own minimum, which replaces both the default and the quantile rule."""

    default: int = MIN_ROWS
    metrics: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.default, bool) or not isinstance(self.default, int) or self.default < 1:
            raise ConfigError(f"min_rows must be a whole number >= 1, got {self.default!r}")
        for k, v in self.metrics:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"min_rows.metrics[{k!r}] must be a whole number >= 1, got {v!r}")

    @classmethod
    def of(cls, default: int = MIN_ROWS, metrics: dict[str, int] | None = None) -> RowMinimum:
        return cls(default, tuple((_quantile_sugar(k).strip(), v) for k, v in (metrics or {}).items()))

    def for_gate(self, g: Gate) -> tuple[int, str]:
        """``(minimum, where it comes from)`` for gate ``g``."""
        own = dict(self.metrics)
        for k in (g.key, g.metric):
            if k in own:
                return own[k], f"min_rows.metrics[{k!r}]"
        q = quantile_of(g.metric)
        if q is not None:
            need = quantile_min_rows(q)
            if need > self.default:
                return need, (
                    f"a p{round(q * 100)} needs {need} rows: with fewer, not even the "
                    f"{'largest' if q >= 0.5 else 'smallest'} value is a "
                    f"{QUANTILE_CONFIDENCE:.0%} bound on it"
                )
        return self.default, "min_rows"


def rows_of(m: object) -> tuple[int | None, str]:
    """The rows a metric rests on and what they are: the smaller of its ``denominator`` (the
    units it counts) and its ``rows`` (records in scope, values, paired records); ``None`` when
    neither is known."""
    den = getattr(m, "denominator", None)
    rows = getattr(m, "rows", None)
    got: list[tuple[float, str]] = []
    if den is not None and math.isfinite(float(den)):
        got.append((float(den), "its denominator"))
    if rows is not None:
        got.append((float(rows), "rows in scope"))
    if not got:
        return None, ""
    n, what = min(got, key=lambda t: t[0])
    return math.floor(n + 1e-9), what


def thin_evidence(g: Gate, m: object, minimum: RowMinimum) -> str | None:
    """The missing-evidence reason when the metric ``m`` of gate ``g`` rests on fewer rows
    than the gate's minimum (naming the count and the minimum); ``None`` when it has enough,
    or when no count is known."""
    n, what = rows_of(m)
    if n is None:
        return None
    need, rule = minimum.for_gate(g)
    if n >= need:
        return None
    rows = getattr(m, "rows", None)
    if what == "its denominator":
        over = f" over {rows} record{'s' if rows != 1 else ''}" if rows is not None else ""
        basis = f"a denominator of {n}{over}"
    else:
        basis = f"{n} row{'s' if n != 1 else ''}"
    return f"missing evidence: {g.key} rests on {basis}; it needs at least {need} rows ({rule})"


__all__ = [
    "EQ_TOLERANCE",
    "MIN_ROWS",
    "OPS",
    "QUANTILE_CONFIDENCE",
    "USES",
    "Gate",
    "RowMinimum",
    "parse_gate",
    "parse_gates",
    "quantile_min_rows",
    "quantile_of",
    "rows_of",
    "thin_evidence",
]
