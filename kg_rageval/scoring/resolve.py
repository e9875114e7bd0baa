"""The one resolver of metric names (see :mod:`kg_rageval.contract.metrics` for what a family
declares and :mod:`kg_rageval.contract.names` for the syntax).

:func:`resolve_metric` turns whatever a user wrote — in an audit gate, a baseline budget,
``assert_gates`` or ``kg-rageval metrics NAME`` — into the canonical
:class:`~kg_rageval.contract.names.MetricName`, or raises :class:`ConfigError` with a "did
you mean". Accepted spellings:

* canonical ``family.metric`` (``retrieval.ndcg@10``);
* a bare metric that exactly one family declares (``mrr``), or that exactly one of the
  families in scope declares (``hierarchical_f1`` with only ``hierarchy`` configured);
* every ir_measures or trec_eval spelling of a retrieval measure, through the one alias table
  of :mod:`kg_rageval.contract.measures`: ``nDCG@10``/``ndcg_cut_10`` → ``retrieval.ndcg@10``,
  ``RR``/``recip_rank`` → ``retrieval.mrr``, ``P_10`` → ``retrieval.precision@10``; a measure
  the records family does not compute belongs to the TREC-file family ``trec``
  (``Bpref`` → ``trec.Bpref``, ``P(rel=2)@10`` → ``trec.P(rel=2)@10``, ``Judged@10``), and
  ``trec.<any spelling>`` is its canonical ir_measures spelling (``trec.ndcg_cut_10`` →
  ``trec.nDCG@10``); with ``trec`` and not ``retrieval`` in ``scope``, every measure
  spelling is ``trec``'s (``recip_rank`` → ``trec.RR``);
* the older three-part form ``family.member.metric`` (``generation.faithfulness.faithfulness``).

Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kg_rageval.base.errors import ConfigError
from kg_rageval.contract.measures import MEASURES_FAMILY, measure_metric, parse_measure
from kg_rageval.contract.metrics import IR_FAMILY, ir_alias
from kg_rageval.contract.names import MetricName
from kg_rageval.contract.params import did_you_mean

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.scoring.scorer import Scorer


def _spellings(scorer: Scorer, metric: str) -> list[str]:
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


def _find(scorer: Scorer, metric: str) -> tuple[str, dict[str, str]] | None:
    for s in _spellings(scorer, metric):
        got = scorer.find_metric(s)
        if got is not None:
            return s, got[1]
    return None


def resolve_metric(
    name: MetricName | str,
    *,
    scope: Sequence[str] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    registry: Mapping[str, Scorer] | None = None,
) -> MetricName:
    """The canonical :class:`MetricName` for ``name`` (see the module docstring).

    ``scope``: the families of the run (configured ones), which decide a bare name declared by
    several families; ``options``: each family's validated options (for placeholder values).
    A family without declared metrics (a test stub) accepts any metric name: it is checked
    after the family ran. Raises :class:`ConfigError` for an unknown family or metric, an
    ambiguous bare name and a cut-off the options do not produce."""
    from kg_rageval.scoring.registry import REGISTRY

    reg = REGISTRY if registry is None else registry
    mn = MetricName.parse(name) if isinstance(name, str) else name
    fams = list(scope) if scope is not None else list(reg)
    if mn.family is not None and mn.family in reg:
        return _resolve_in(reg[mn.family], mn, mn.metric, options, text=str(name))
    bare = mn.qualified  # no (registered) family prefix: a bare name, maybe with dots
    alias = measure_metric(bare) if mn.family is None else None
    if alias is not None and alias[0] == IR_FAMILY and IR_FAMILY not in fams and MEASURES_FAMILY in fams:
        alias = (MEASURES_FAMILY, str(parse_measure(bare)))  # only the TREC files are in scope
    if (
        alias is not None
        and alias[0] in reg
        and not any(_find(sc, bare) for f, sc in reg.items() if f not in (IR_FAMILY, MEASURES_FAMILY))
    ):
        # a retrieval measure's spelling (the one alias table): retrieval's name, else trec's
        return _resolve_in(
            reg[alias[0]], replace(mn, family=alias[0], metric=alias[1]), alias[1], options, text=str(name)
        )
    hits: list[tuple[Scorer, str]] = []
    for fam, sc in reg.items():
        if fam == MEASURES_FAMILY:
            continue  # reached through the alias table above (it would match every measure)
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
    raise ConfigError(
        f"unknown metric {str(name)!r}"
        + (
            did_you_mean(bare, all_metric_names(reg, options))
            or did_you_mean(bare, [n.split(".", 1)[1] for n in all_metric_names(reg, options)])
        )
        + " (see 'kg-rageval metrics')"
    )


def _resolve_in(
    sc: Scorer, mn: MetricName, metric: str, options: Mapping[str, Mapping[str, Any]] | None, *, text: str
) -> MetricName:
    if not sc.metrics:
        return replace(mn, family=sc.name, metric=metric)
    if sc.name == MEASURES_FAMILY:  # every measure spelling, named by its ir_measures form
        try:
            return replace(mn, family=sc.name, metric=str(parse_measure(metric)))
        except ValueError as exc:
            declared = sc.find_metric(metric)
            if declared is not None and not declared[0].placeholders:  # n_queries, n_missing_run, ...
                return replace(mn, family=sc.name, metric=metric)
            raise ConfigError(
                f"family {sc.name!r}: {exc} (in {text!r}); see 'kg-rageval metrics --family {sc.name}'"
            ) from None
    got = _find(sc, metric)
    other = measure_metric(metric) if got is None and sc.name == IR_FAMILY else None
    if other is not None and other[0] == MEASURES_FAMILY:
        raise ConfigError(
            f"{text!r} is the measure {MEASURES_FAMILY}.{other[1]}, which family {sc.name!r} "
            f"does not compute from records; it is computed from qrels and run files by family "
            f"{MEASURES_FAMILY!r} (see 'kg-rageval metrics --family {MEASURES_FAMILY}')"
        )
    if got is None:
        known = sc.metric_names((options or {}).get(sc.name))
        where = f" (in {text!r})" if text != f"{sc.name}.{metric}" else ""
        raise ConfigError(
            f"family {sc.name!r} has no metric {metric!r}"
            + did_you_mean(metric, known)
            + where
            + f"; see 'kg-rageval metrics --family {sc.name}'"
        )
    canonical, values = got
    spec = sc.find_metric(canonical)
    if spec is not None and spec[0].when and options is not None and sc.name in options:
        opts = sc.validate(options[sc.name] or {})
        if not spec[0].applies(opts):
            need = ", ".join(f"families.{sc.name}.{k} = {json.dumps(v)}" for k, v in spec[0].when)
            raise ConfigError(f"{sc.name}.{canonical} is produced only with {need}")
    if values and sc.template_values is not None:
        opts = sc.validate((options or {}).get(sc.name) or {})
        allowed = sc.template_values(opts)
        for ph, v in values.items():
            ok = {str(int(x)) for x in allowed.get(ph, ())}
            if v not in ok:
                raise ConfigError(
                    f"{sc.name}.{canonical}: {ph}={v} is not produced by the options of family "
                    f"{sc.name!r} ({ph} values: {', '.join(sorted(ok, key=int)) or 'none'}); "
                    f"add it to families.{sc.name}"
                )
    return replace(mn, family=sc.name, metric=canonical)


def all_metric_names(
    registry: Mapping[str, Scorer] | None = None, options: Mapping[str, Mapping[str, Any]] | None = None
) -> list[str]:
    """Every concrete canonical metric name (placeholders expanded under ``options``)."""
    from kg_rageval.scoring.registry import REGISTRY

    reg = REGISTRY if registry is None else registry
    return [f"{f}.{m}" for f, sc in reg.items() for m in sc.metric_names((options or {}).get(f))]
