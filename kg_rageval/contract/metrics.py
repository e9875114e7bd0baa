"""The metric registry: every metric a family declares, and the one resolver of metric names.

A :class:`MetricSpec` is a metric template of one family (``recall@{k}``,
``hierarchical_f1``) with its formula, its direction (``higher`` or ``lower`` is better, or
``none`` for counts and diagnostics) and the evaluation (``member``) that produces it.
Numeric placeholders (``{k}``) bind to the family's options (see
``Scorer.template_values``).

:func:`resolve_metric` turns whatever a user wrote — in an audit gate, a baseline budget,
``assert_gates`` or ``kg-rageval metrics NAME`` — into the canonical
:class:`~kg_rageval.contract.names.MetricName`, or raises :class:`ConfigError` with a "did
you mean". Accepted spellings:

* canonical ``family.metric`` (``retrieval.ndcg@10``);
* a bare metric that exactly one family declares (``mrr``), or that exactly one of the
  families in scope declares (``hierarchical_f1`` with only ``hierarchy`` configured);
* ir_measures names: ``nDCG@10``, ``P@10``, ``R@100``, ``AP``, ``RR``, ``RR@10``,
  ``Success@10``, ``Rprec``, ``Judged@10`` (retrieval);
* the older three-part form ``family.member.metric`` (``generation.faithfulness.faithfulness``).

Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ..errors import ConfigError
from .names import MetricName
from .params import did_you_mean

if TYPE_CHECKING:  # pragma: no cover
    from .scorer import Scorer

DIRECTIONS = ("higher", "lower", "none")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)(?::(word))?\}")
"""``{k}``: a number bound to the family's options; ``{stage:word}``: a name the records decide
(letters, digits, ``_``), accepted as written (e.g. ``latency.{stage:word}_ms.p95``)."""

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
            pat += re.escape(self.name[pos:m.start()])
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
            vals = sorted({str(v) for v in given}) if word else [str(v) for v in sorted({int(v) for v in given})]
            names = [n.replace(m.group(0), v) for n in names for v in vals]
        return names

    def describe(self) -> dict[str, Any]:
        return {"name": f"{self.family}.{self.name}", "family": self.family, "member": self.member,
                "direction": self.direction, "formula": self.formula, "parameters": list(self.placeholders)}


def metric_specs(family: str, member: str | None, rows: Iterable[tuple[str, str, str]]) -> tuple[MetricSpec, ...]:
    """``(name, direction, formula)`` rows as specs of ``family`` (produced by ``member``)."""
    return tuple(MetricSpec(n, d, f, member, family) for n, d, f in rows)


def ir_alias(metric: str) -> str | None:
    """The retrieval metric an ir_measures name stands for, else ``None``."""
    for pat, repl in IR_MEASURES:
        if re.fullmatch(pat, metric):
            return re.sub(pat, repl, metric)
    return None


# ---------------------------------------------------------------------- resolution
def _spellings(scorer: "Scorer", metric: str) -> list[str]:
    out = [metric]
    alias = ir_alias(metric) if scorer.name == IR_FAMILY else None
    if alias:
        out.append(alias)
    low = metric.lower()
    if low != metric:
        out.append(low)
    member, dot, rest = metric.partition(".")
    if dot and member in scorer.member_names and rest:
        out.append(rest)
    return out


def _find(scorer: "Scorer", metric: str) -> tuple[str, dict[str, str]] | None:
    for s in _spellings(scorer, metric):
        got = scorer.find_metric(s)
        if got is not None:
            return s, got[1]
    return None


def resolve_metric(name: MetricName | str, *, scope: Sequence[str] | None = None,
                   options: Mapping[str, Mapping[str, Any]] | None = None,
                   registry: Mapping[str, "Scorer"] | None = None) -> MetricName:
    """The canonical :class:`MetricName` for ``name`` (see the module docstring).

    ``scope``: the families of the run (configured ones), which decide a bare name declared by
    several families; ``options``: each family's validated options (for placeholder values).
    A family without declared metrics (a test stub) accepts any metric name: it is checked
    after the family ran. Raises :class:`ConfigError` for an unknown family or metric, an
    ambiguous bare name and a cut-off the options do not produce."""
    from .registry import REGISTRY

    reg = REGISTRY if registry is None else registry
    mn = MetricName.parse(name) if isinstance(name, str) else name
    fams = list(scope) if scope is not None else list(reg)
    if mn.family is not None and mn.family in reg:
        return _resolve_in(reg[mn.family], mn, mn.metric, options, text=str(name))
    bare = mn.qualified  # no (registered) family prefix: a bare name, maybe with dots
    hits: list[tuple["Scorer", str]] = []
    for fam, sc in reg.items():
        got = _find(sc, bare)
        if got is not None:
            hits.append((sc, got[0]))
    if len(hits) > 1:
        in_scope = [h for h in hits if h[0].name in fams]
        hits = in_scope if len(in_scope) == 1 else hits
    if len(hits) == 1:
        sc, metric = hits[0]
        return _resolve_in(sc, replace(mn, family=sc.name, metric=bare), metric, options, text=str(name))
    if len(hits) > 1:
        names = ", ".join(sorted(f"{sc.name}.{m}" for sc, m in hits))
        raise ConfigError(f"ambiguous metric {str(name)!r}: produced by {names}; name one")
    undeclared = [f for f in fams if f not in reg or not reg[f].metrics]
    if undeclared:  # a family without declared metrics may produce it: decided after the run
        return mn
    if mn.family is not None:
        fam_hint = did_you_mean(mn.family, list(reg))
        if fam_hint:
            raise ConfigError(f"unknown family {mn.family!r} in metric {str(name)!r}{fam_hint}")
    raise ConfigError(f"unknown metric {str(name)!r}"
                      + (did_you_mean(bare, all_metric_names(reg, options)) or
                         did_you_mean(bare, [n.split('.', 1)[1] for n in all_metric_names(reg, options)]))
                      + " (see 'kg-rageval metrics')")


def _resolve_in(sc: "Scorer", mn: MetricName, metric: str, options: Mapping[str, Mapping[str, Any]] | None,
                *, text: str) -> MetricName:
    if not sc.metrics:
        return replace(mn, family=sc.name, metric=metric)
    got = _find(sc, metric)
    if got is None:
        known = sc.metric_names((options or {}).get(sc.name))
        where = f" (in {text!r})" if text != f"{sc.name}.{metric}" else ""
        raise ConfigError(f"family {sc.name!r} has no metric {metric!r}" + did_you_mean(metric, known) + where
                          + f"; see 'kg-rageval metrics --family {sc.name}'")
    canonical, values = got
    if values and sc.template_values is not None:
        opts = sc.validate((options or {}).get(sc.name) or {})
        allowed = sc.template_values(opts)
        for ph, v in values.items():
            ok = {str(int(x)) for x in allowed.get(ph, ())}
            if v not in ok:
                raise ConfigError(f"{sc.name}.{canonical}: {ph}={v} is not produced by the options of family "
                                  f"{sc.name!r} ({ph} values: {', '.join(sorted(ok, key=int)) or 'none'}); "
                                  f"add it to families.{sc.name}")
    return replace(mn, family=sc.name, metric=canonical)


def all_metric_names(registry: Mapping[str, "Scorer"] | None = None,
                     options: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Every concrete canonical metric name (placeholders expanded under ``options``)."""
    from .registry import REGISTRY

    reg = REGISTRY if registry is None else registry
    return [f"{f}.{m}" for f, sc in reg.items() for m in sc.metric_names((options or {}).get(f))]
