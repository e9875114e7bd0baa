"""Declared metrics: every metric a family declares (:class:`MetricSpec`). The aliases
(ir_measures and trec_eval spellings) are the one table of :mod:`kg_rageval.contract.measures`;
name resolution is :mod:`kg_rageval.scoring.resolve`.

A :class:`MetricSpec` is a metric template of one family (``recall@{k}``,
``hierarchical_f1``) with its formula, its direction (``higher`` or ``lower`` is better, or
``none`` for counts and diagnostics) and the evaluation (``member``) that produces it.
Numeric placeholders (``{k}``) bind to the family's options (see
``Scorer.template_values``).

Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kg_rageval.contract.measures import measure_metric

DIRECTIONS = ("higher", "lower", "none")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)(?::(word))?\}")
"""``{k}``: a number bound to the family's options; ``{stage:word}``: a name the records decide
(letters, digits, ``_``), accepted as written (e.g. ``latency.{stage:word}_ms.p95``)."""

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
        return tuple(name for name, _ in _PLACEHOLDER.findall(self.name))

    @property
    def word_placeholders(self) -> tuple[str, ...]:
        return tuple(name for name, kind in _PLACEHOLDER.findall(self.name) if kind)

    @property
    def _regex(self) -> re.Pattern[str]:
        pat, pos = "", 0
        for m in _PLACEHOLDER.finditer(self.name):
            pat += re.escape(self.name[pos : m.start()])
            pat += rf"(?P<{m.group(1)}>[A-Za-z0-9_]+?)" if m.group(2) else rf"(?P<{m.group(1)}>\d+)"
            pos = m.end()
        return re.compile(pat + re.escape(self.name[pos:]) + r"\Z")

    def match(self, metric: str) -> dict[str, str] | None:
        if not self.placeholders:
            return {} if metric == self.name else None
        m = self._regex.match(metric)
        if not m:
            return None
        words = self.word_placeholders
        return {k: v if k in words else str(int(v)) for k, v in m.groupdict().items()}

    def expand(self, values: Mapping[str, Iterable[Any]]) -> list[str]:
        """Concrete names for every combination of placeholder values (a word placeholder
        without values stays as the template text, ``{stage}``)."""
        names = [self.name]
        for m in _PLACEHOLDER.finditer(self.name):
            ph, word = m.group(1), bool(m.group(2))
            given = list(values.get(ph, ()))
            if word and not given:
                names = [n.replace(m.group(0), "{" + ph + "}") for n in names]
                continue
            vals = (
                sorted({str(v) for v in given}) if word else [str(v) for v in sorted({int(v) for v in given})]
            )
            names = [n.replace(m.group(0), v) for n in names for v in vals]
        return names

    def describe(self) -> dict[str, Any]:
        return {
            "name": f"{self.family}.{self.name}",
            "family": self.family,
            "member": self.member,
            "direction": self.direction,
            "formula": self.formula,
            "parameters": list(self.placeholders),
            **({"when": dict(self.when)} if self.when else {}),
        }


def metric_specs(
    family: str,
    member: str | None,
    rows: Iterable[tuple[str, str, str]],
    when: tuple[tuple[str, Any], ...] = (),
) -> tuple[MetricSpec, ...]:
    """``(name, direction, formula)`` rows as specs of ``family`` (produced by ``member``, under
    the options ``when``)."""
    return tuple(MetricSpec(n, d, f, member, family, when) for n, d, f in rows)


def ir_alias(metric: str) -> str | None:
    """The ``retrieval`` metric an ir_measures or trec_eval name stands for (``ndcg@10`` for
    ``nDCG@10`` or ``ndcg_cut_10``), else ``None`` (:func:`~kg_rageval.contract.measures.measure_metric`)."""
    got = measure_metric(metric)
    return got[1] if got is not None and got[0] == IR_FAMILY else None
