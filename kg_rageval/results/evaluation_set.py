"""What every family's scorer returns: its evaluations by member name (:class:`EvaluationSet`).

Its metrics under their canonical names ``<family>.<metric>``, member-wise merges
(:func:`concat_sets`) and the normalisation of a family function's result
(:func:`as_evaluation_set`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kg_rageval.results.evaluation import Evaluation, concat_evaluations
from kg_rageval.results.frames import _frame, _metric_rows
from kg_rageval.results.metric import Metric


class EvaluationSet(dict):
    """What every family's scorer returns: its evaluations by member name (``Family.name``).

    A family with one evaluation (hierarchy, linking, retrieval, conformance) has one member
    named like the family; generation has ``faithfulness``, ``correctness``, ``refusal``,
    ``unseen_concepts``, ``calibration``; provenance ``citations``, ``provenance_depth`` (and
    ``reproducibility`` with repeated runs). It is a ``dict`` (``result["refusal"]``), plus:

    * :meth:`metrics` — every metric under its canonical name ``<family>.<metric>``;
    * :meth:`owner` — the member evaluation that produces a metric;
    * :meth:`merge` — member-wise :meth:`Evaluation.merge` (partitions, Dask);
    * :attr:`single` — the one evaluation of a one-member family.
    """

    def __init__(
        self, family: str, members: Mapping[str, Evaluation] | Iterable[tuple[str, Evaluation]] = ()
    ):
        super().__init__(members)
        self.family = family

    def __reduce__(self):  # pickling keeps the family name (Dask)
        return (EvaluationSet, (self.family, list(self.items())))

    @property
    def evaluations(self) -> list[Evaluation]:
        return list(self.values())

    @property
    def single(self) -> Evaluation:
        if len(self) != 1:
            raise ValueError(f"{self.family}: {len(self)} evaluations ({', '.join(self)}), not one")
        return next(iter(self.values()))

    def owner(self, metric: str) -> tuple[str, Evaluation] | None:
        """``(member, evaluation)`` producing the bare ``metric``, else ``None``."""
        for name, ev in self.items():
            if metric in ev.metrics():
                return name, ev
        return None

    def metrics(self) -> dict[str, Metric]:
        """``{"<family>.<metric>": Metric}`` over every member (names unique within a family)."""
        out: dict[str, Metric] = {}
        for ev in self.values():
            for name, m in ev.metrics().items():
                key = f"{self.family}.{name}"
                if key in out:
                    raise ValueError(f"{self.family}: metric {name!r} produced by two members")
                out[key] = Metric(key, m.value, m.numerator, m.denominator, m.missing, m.ci)
        return out

    def merge(self, other: EvaluationSet) -> EvaluationSet:
        return concat_sets([self, other])

    def to_pandas(self, what: str = "rows") -> Any:
        """Rows of every member (a ``member`` column first) or the canonical metrics, as a
        ``pandas.DataFrame`` (see :meth:`Evaluation.to_pandas`)."""
        if what == "rows":
            return _frame([{"member": m, **r} for m, ev in self.items() for r in ev.rows()], what)
        return _frame(_metric_rows(self.metrics()), what)

    @property
    def unscored_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for ev in self.values():
            for k, v in ev.unscored_counts.items():
                out[k] = out.get(k, 0) + v
        return dict(sorted(out.items()))


def concat_sets(parts: Iterable[EvaluationSet], *, consume: bool = False) -> EvaluationSet:
    """Member-wise :func:`concat_evaluations` of partitions' :class:`EvaluationSet` objects
    (every partition must have the same members)."""
    parts = list(parts)
    if not parts:
        raise ValueError("nothing to concatenate")
    first = parts[0]
    for p in parts[1:]:
        if set(p) != set(first):
            raise ValueError(
                f"{first.family}: cannot merge results with members {sorted(first)} and {sorted(p)}"
            )
    if len(parts) == 1:
        return first
    return EvaluationSet(
        first.family, {k: concat_evaluations([p[k] for p in parts], consume=consume) for k in first}
    )


def as_evaluation_set(family: str, result: Any) -> EvaluationSet:
    """A family function's result as an :class:`EvaluationSet`: one :class:`Evaluation`
    (member named by its ``Family.name``), a mapping of them, or a list/tuple of them.
    Anything else is a family bug (``TypeError``)."""
    if isinstance(result, EvaluationSet):
        return result if result.family == family else EvaluationSet(family, result)
    if isinstance(result, Evaluation):
        return EvaluationSet(family, {result.family.name: result})
    if isinstance(result, Mapping) and all(isinstance(v, Evaluation) for v in result.values()) and result:
        return EvaluationSet(family, {str(k): v for k, v in result.items()})
    if isinstance(result, (list, tuple)) and result and all(isinstance(v, Evaluation) for v in result):
        return EvaluationSet(family, {v.family.name: v for v in result})
    raise TypeError(
        f"family {family!r} returned {type(result).__name__}, not an Evaluation or a mapping of them"
    )
