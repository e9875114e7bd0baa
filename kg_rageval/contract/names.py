"""Metric names as values: parsed one way, printed one way.

The canonical form of a number is ``<family>.<metric>``, optionally scoped and bounded::

    retrieval.ndcg@10
    hierarchy.hierarchical_f1[node:TA0005]
    retrieval.mrr[slice:intent=lookup]
    ci_low(generation.faithfulness)
    delta:retrieval.recall@10
    trec.P(rel=2)@10

:class:`MetricName` holds the parts; ``str(name)`` is the canonical text and
:meth:`MetricName.parse` reads it back (``parse(str(n)) == n``). Parsing is syntax only:
whether ``family`` is a registered family and ``metric`` one of its metrics is decided by
:func:`kg_rageval.scoring.resolve_metric`, which also accepts the aliases users expect
(a bare metric name that only one family produces, and every ir_measures or trec_eval
spelling of a retrieval measure — ``nDCG@10``, ``ndcg_cut_10``, ``recip_rank``, ``P_10``,
``P(rel=2)@10``, ``Bpref`` — through the one alias table of :mod:`kg_rageval.contract.measures`).
The gate expression grammar built on these names is :mod:`kg_rageval.contract.gates`.

Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from kg_rageval.base.errors import ConfigError

BOUNDS = ("ci_low", "ci_high")
SCOPE_KINDS = ("slice", "node")
_FAMILY = re.compile(r"[a-z_][a-z0-9_]*")
_TEXT = re.compile(
    r"""^\s*(?:(?P<bound>ci_low|ci_high)\s*\(\s*(?P<inner>.*?)\s*\)\s*(?:\[\s*(?P<oscope>[^\[\]]+?)\s*\])?
          |(?P<plain>.*?))\s*$""",
    re.VERBOSE,
)
PARAMS = r"\(\s*[A-Za-z_]+\s*=\s*[A-Za-z0-9_.\-]+(?:\s*,\s*[A-Za-z_]+\s*=\s*[A-Za-z0-9_.\-]+)*\s*\)"
"""A metric may carry one parameter group of ``key=value`` pairs, as ir_measures names do
(``P(rel=2)@10``, ``RBP(p=0.5,rel=1)``); shared with :mod:`kg_rageval.contract.gates`."""
_BODY = re.compile(
    rf"^(?P<delta>delta:)?(?P<name>[A-Za-z_][A-Za-z0-9_@.\-/]*(?:{PARAMS}[A-Za-z0-9_@.\-/]*)?)"
    r"(?:\[\s*(?P<scope>[^\[\]]+?)\s*\])?$"
)


@dataclass(frozen=True)
class MetricName:
    """One metric number's name (see the module docstring).

    ``family`` is ``None`` only for a name as a user wrote it before resolution (``mrr``).
    ``scope`` is ``"slice:<name>=<value>"`` or ``"node:<id>"``; ``bound`` is ``"ci_low"``,
    ``"ci_high"`` or ``None`` (the point value); ``delta`` marks a paired difference against a
    baseline."""

    family: str | None
    metric: str
    scope: str | None = None
    bound: str | None = None
    delta: bool = False

    def __post_init__(self) -> None:
        if self.bound is not None and self.bound not in BOUNDS:
            raise ConfigError(f"metric bound {self.bound!r} is not one of {', '.join(BOUNDS)}")
        if self.scope is not None:
            check_scope(self.scope)

    # ---------------------------------------------------------------- printing
    @property
    def qualified(self) -> str:
        """``family.metric`` (or the bare metric when unresolved)."""
        return f"{self.family}.{self.metric}" if self.family else self.metric

    @property
    def key(self) -> str:
        """The name of the number without its bound: ``[delta:]family.metric[scope]``."""
        base = ("delta:" if self.delta else "") + self.qualified
        return f"{base}[{self.scope}]" if self.scope else base

    def __str__(self) -> str:
        return f"{self.bound}({self.key})" if self.bound else self.key

    def unbounded(self) -> MetricName:
        return replace(self, bound=None)

    def unscoped(self) -> MetricName:
        return replace(self, scope=None, bound=None)

    # ---------------------------------------------------------------- parsing
    @classmethod
    def parse(cls, text: str) -> MetricName:
        """Read a metric name (see the module docstring); a malformed name raises
        :class:`ConfigError`. ``a.b`` is read as family ``a``, metric ``b`` when ``a`` looks like
        a family name (lower-case identifier); resolution may still reinterpret it."""
        if not isinstance(text, str):
            raise ConfigError(f"metric name must be a string, got {text!r}")
        m = _TEXT.match(text)
        bound, body, oscope = (
            (m.group("bound"), m.group("inner"), m.group("oscope"))
            if m and m.group("bound")
            else (None, text.strip(), None)
        )
        b = _BODY.match(body or "")
        if not b:
            raise ConfigError(
                f"{text!r} is not a metric name; expected e.g. 'retrieval.ndcg@10', "
                "'hierarchy.hierarchical_f1[node:TA0005]' or 'ci_low(generation.faithfulness)'"
            )
        scope = b.group("scope") or None
        if scope and oscope:
            raise ConfigError(f"{text!r} gives a scope twice")
        scope = scope or oscope
        family, metric = split_family(b.group("name"))
        return cls(family, metric, scope.strip() if scope else None, bound, bool(b.group("delta")))


def split_family(name: str) -> tuple[str | None, str]:
    """``("retrieval", "ndcg@10")`` for ``retrieval.ndcg@10``; ``(None, name)`` when the part
    before the first dot is not a family-like identifier (``attribution@10.filter``)."""
    head, dot, rest = name.partition(".")
    if dot and rest and _FAMILY.fullmatch(head):
        return head, rest
    return None, name


def check_scope(scope: str) -> None:
    """A scope is ``slice:<name>=<value>`` or ``node:<ontology id>`` (ConfigError otherwise)."""
    kind, sep, rest = scope.partition(":")
    if not sep or kind not in SCOPE_KINDS or not rest.strip():
        raise ConfigError(f"scope {scope!r} must be 'slice:<name>=<value>' or 'node:<ontology id>'")
    if kind == "slice":
        name, eq, value = rest.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise ConfigError(f"slice scope {scope!r} must look like 'slice:<name>=<value>'")


def parse_scope(scope: str) -> tuple[str, str, str | None]:
    """``("slice", name, value)`` or ``("node", id, None)``."""
    check_scope(scope)
    kind, _, rest = scope.partition(":")
    if kind == "slice":
        name, _, value = rest.partition("=")
        return "slice", name.strip(), value.strip()
    return "node", rest.strip(), None
