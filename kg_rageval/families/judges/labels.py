"""The judges' names that need no validation model (no pydantic): the statuses of a judge
output and each rubric's name, labels and approving label, read by the calibration families,
the judges' scorer and the nuggets family's calibration.
:mod:`kg_rageval.families.judges.contracts` defines its models from these."""

from __future__ import annotations

from typing import ClassVar

SCORED, UNSCORABLE, INVALID = "scored", "unscorable", "invalid"
UNSCORABLE_VERDICT = "unscorable"


class RubricLabels:
    """A rubric's name (``RUBRIC``), calibration labels (``LABELS``) and approving label
    (``APPROVE``): the class attributes of its verdict model, without the model."""

    RUBRIC: ClassVar[str] = ""
    LABELS: ClassVar[tuple[str, ...]] = ()
    APPROVE: ClassVar[str] = ""


class PairwiseLabels(RubricLabels):
    RUBRIC: ClassVar[str] = "pairwise"
    LABELS: ClassVar[tuple[str, ...]] = ("A", "B", "tie")
    APPROVE: ClassVar[str] = "A"


class CitationSupportLabels(RubricLabels):
    RUBRIC: ClassVar[str] = "citation_support"
    LABELS: ClassVar[tuple[str, ...]] = ("supported", "partially_supported", "not_supported")
    APPROVE: ClassVar[str] = "supported"


class RefusalLabels(RubricLabels):
    RUBRIC: ClassVar[str] = "refusal"
    LABELS: ClassVar[tuple[str, ...]] = ("correct", "incorrect")
    APPROVE: ClassVar[str] = "correct"


class AnswerCorrectnessLabels(RubricLabels):
    RUBRIC: ClassVar[str] = "answer_correctness"
    LABELS: ClassVar[tuple[str, ...]] = ("correct", "partially_correct", "incorrect")
    APPROVE: ClassVar[str] = "correct"


class NuggetSupportLabels(RubricLabels):
    """The rubric name, labels and approving label of
    :class:`~kg_rageval.families.judges.contracts.NuggetSupport` (which takes them from here)."""

    RUBRIC: ClassVar[str] = "nugget_support"
    LABELS: ClassVar[tuple[str, ...]] = ("support", "partial_support", "not_support")
    APPROVE: ClassVar[str] = "support"


RUBRIC_LABELS: dict[str, type[RubricLabels]] = {
    c.RUBRIC: c
    for c in (
        PairwiseLabels,
        CitationSupportLabels,
        RefusalLabels,
        AnswerCorrectnessLabels,
        NuggetSupportLabels,
    )
}
"""Every rubric's labels, in the order of :data:`~kg_rageval.families.judges.contracts.RUBRICS`."""
