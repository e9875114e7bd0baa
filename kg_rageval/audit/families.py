"""The audit's view of the metric families: the one registry of :mod:`kg_rageval.scoring`.

Each family is a :class:`~kg_rageval.scoring.Scorer`: it declares the record sections that
are its evidence, its extra inputs with their readers, its parameters and its metrics. The
audit validates ``families.<name>`` options against the declaration when the config is read
(an unknown key or a bad value is exit 2 naming the key), and calls every family the same
way, ``scorer.bind(ontology, **inputs, **options)(records)`` — no signature inspection.

A family whose module cannot be imported, whose required input is not configured, or whose
section is absent from every record, is *not run*: the runner reports its gates as missing
evidence, never as passing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.evaluation_set import EvaluationSet
from kg_rageval.scoring import REGISTRY, FamilyUnavailable, Scorer, register, unregister
from kg_rageval.scoring.builtin import DETERMINISTIC

FamilySpec = Scorer
"""The audit's older name for a family declaration (``FamilySpec(name, target, sections)``)."""


def register_family(spec: Scorer) -> None:
    """Add a family (tests register stub families this way): :func:`kg_rageval.scoring.register`,
    which refuses a name or member name another family uses; the same declaration again is a no-op."""
    register(spec)


def unregister_family(name: str) -> None:
    unregister(name)


def normalize_result(result: Any) -> list[Evaluation]:
    """Every :class:`Evaluation` inside ``result`` (itself, a sequence, a mapping, or the
    attributes of a result object), in a stable order, without duplicates."""
    out: list[Evaluation] = []
    seen: set[int] = set()

    def visit(obj: Any, depth: int) -> None:
        if depth > 3 or obj is None:
            return
        if isinstance(obj, Evaluation):
            if id(obj) not in seen:
                seen.add(id(obj))
                out.append(obj)
            return
        if isinstance(obj, (list, tuple)):
            for o in obj:
                visit(o, depth + 1)
            return
        if isinstance(obj, Mapping):
            for o in obj.values():
                visit(o, depth + 1)
            return
        if isinstance(obj, (str, bytes, int, float)):
            return
        if dataclasses.is_dataclass(obj):
            for f in dataclasses.fields(obj):
                visit(getattr(obj, f.name, None), depth + 1)
            return
        if hasattr(obj, "evaluations"):
            visit(obj.evaluations, depth + 1)
            return
        if hasattr(obj, "__dict__"):
            for o in vars(obj).values():
                visit(o, depth + 1)

    visit(result, 0)
    return out


def has_section(record: Mapping[str, Any], spec: Scorer) -> bool:
    return spec.has_section(record)


@dataclass
class FamilyRun:
    """What happened to one family in an audit."""

    name: str
    status: str  # "ran" | "unavailable" | "no_evidence" | "error" | "missing_input"
    reason: str = ""
    evaluations: list[Evaluation] = field(default_factory=list)
    n_with_section: int = 0
    seconds: float = 0.0
    options: dict[str, Any] = field(default_factory=dict)
    result: EvaluationSet | None = None
    missing_sections: list[dict[str, str]] = field(default_factory=list)
    """The unscored entries (code ``missing_section``) of the audited records that lack the
    section of a family in the audit that requires it (:func:`~.missing_runs.mark_missing_sections`)."""
    shared: Any = None
    """A baseline's run only: what makes its result from the audited run's rows when it is
    paired (:class:`~.paired_baseline._Reuse`; ``result`` holds the rows scored until then)."""

    @property
    def versions(self) -> list[str]:
        return sorted({e.family.qualified_name for e in self.evaluations})


__all__ = [
    "DETERMINISTIC",
    "FamilyRun",
    "FamilySpec",
    "FamilyUnavailable",
    "REGISTRY",
    "has_section",
    "normalize_result",
    "register_family",
    "unregister_family",
]
