"""Declared metrics: every metric a family declares (:class:`MetricSpec`) and the ir_measures
aliases. Name resolution is :mod:`kg_rageval.contract.resolve`.

A :class:`MetricSpec` is a metric template of one family (``recall@{k}``,
``hierarchical_f1``) with its formula, its direction (``higher`` or ``lower`` is better, or
``none`` for counts and diagnostics) and the evaluation (``member``) that produces it.
Numeric placeholders (``{k}``) bind to the family's options (see
``Scorer.template_values``).

Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

DIRECTIONS = ("higher", "lower", "none")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")

IR_MEASURES: tuple[tuple[str, str], ...] = (
    (r"nDCG@(\d+)", r"ndcg@\1"),
    (r"P@(\d+)", r"precision@\1"),
    (r"R@(\d+)", r"recall@\1"),
    (r"AP", "map"),
    (r"MAP", "map"),
    (r"RR@(\d+)", r"mrr@\1"),
    (r"RR", "mrr"),
    (r"MRR", "mrr"),
    (r"Success@(\d+)", r"hit@\1"),
    (r"Rprec", "r_precision"),
    (r"R-Prec", "r_precision"),
    (r"Judged@(\d+)", r"judged@\1"),
)
"""ir_measures names → the retrieval family's metric names."""
IR_FAMILY = "retrieval"


@dataclass(frozen=True)
class MetricSpec:
    """A declared metric (template) of one family; see the module docstring."""

    name: str
    direction: str
    formula: str
    member: str | None = None
    family: str = ""
    when: tuple[tuple[str, Any], ...] = ()
    """Options under which the family produces this metric (``(("overlap", True),)``: only with
    ``overlap: true``); empty: always."""

    def applies(self, options: Mapping[str, Any]) -> bool:
        """Whether the family produces this metric under the (validated) ``options``."""
        return all(options.get(k) == v for k, v in self.when)

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"metric {self.name!r}: direction must be one of {DIRECTIONS}")

    @property
    def placeholders(self) -> tuple[str, ...]:
        return tuple(_PLACEHOLDER.findall(self.name))

    @property
    def _regex(self) -> re.Pattern[str]:
        parts = _PLACEHOLDER.split(self.name)
        pat = "".join(re.escape(p) if i % 2 == 0 else rf"(?P<{p}>\d+)" for i, p in enumerate(parts))
        return re.compile(pat + r"\Z")

    def match(self, metric: str) -> dict[str, str] | None:
        if not self.placeholders:
            return {} if metric == self.name else None
        m = self._regex.match(metric)
        return {k: str(int(v)) for k, v in m.groupdict().items()} if m else None

    def expand(self, values: Mapping[str, Iterable[Any]]) -> list[str]:
        """Concrete names for every combination of placeholder values."""
        names = [self.name]
        for ph in self.placeholders:
            vals = sorted({int(v) for v in values.get(ph, ())})
            names = [n.replace("{" + ph + "}", str(v)) for n in names for v in vals]
        return names

    def describe(self) -> dict[str, Any]:
        return {"name": f"{self.family}.{self.name}", "family": self.family, "member": self.member,
                "direction": self.direction, "formula": self.formula, "parameters": list(self.placeholders),
                **({"when": dict(self.when)} if self.when else {})}


def metric_specs(family: str, member: str | None, rows: Iterable[tuple[str, str, str]],
                 when: tuple[tuple[str, Any], ...] = ()) -> tuple[MetricSpec, ...]:
    """``(name, direction, formula)`` rows as specs of ``family`` (produced by ``member``, under
    the options ``when``)."""
    return tuple(MetricSpec(n, d, f, member, family, when) for n, d, f in rows)


def ir_alias(metric: str) -> str | None:
    """The retrieval metric an ir_measures name stands for, else ``None``."""
    for pat, repl in IR_MEASURES:
        if re.fullmatch(pat, metric):
            return re.sub(pat, repl, metric)
    return None
