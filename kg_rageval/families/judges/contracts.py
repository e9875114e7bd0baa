"""One contract for every rubric judge: a pydantic schema with semantic checks.

A rubric judge (an LLM, a human annotator, a heuristic) returns one JSON object per item. Five
rubrics are defined; each is a frozen pydantic model whose *semantic* checks run on
validation (a JSON schema alone cannot express them):

=====================  ================================================  ======================
rubric                 question                                          labels (calibration)
=====================  ================================================  ======================
``pairwise``           which answer is better, A or B (or a tie)?        ``A``, ``B``, ``tie``
``citation_support``   does the cited passage support the claim?         ``supported``,
                                                                         ``partially_supported``,
                                                                         ``not_supported``
``refusal``            is refusing / answering the right behaviour?      ``correct``, ``incorrect``
``answer_correctness`` is the answer correct against the reference?      ``correct``,
                                                                         ``partially_correct``,
                                                                         ``incorrect``
``nugget_support``     does the answer support the nugget (TREC 2024     ``support``,
                       RAG, AutoNuggetizer's assignment)?                ``partial_support``,
                                                                         ``not_support``
=====================  ================================================  ======================

Every rubric also accepts the verdict ``"unscorable"`` (the judge says it cannot decide, with a
``rationale``): such an output is **counted, never scored**. Output that is not JSON or breaks
the contract is ``invalid`` and is counted the same way (:func:`parse_verdict` never raises on
bad judge output; it returns the reason).

The *approval* label of a rubric (``APPROVE``) is the verdict that passes an item:
``supported``, ``correct`` (refusal and answer correctness), ``support`` (nugget support) and
``A`` (pairwise: the candidate A wins). Calibration counts a judge's approval of an item a human rejects as a **false
approval** (``docs/judges.md``).

The faithfulness judgment (:mod:`kg_rageval.families.generation.judgment`) follows the same contract
(:func:`json_object` is shared).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

from kg_rageval.families.judges.labels import (  # the statuses, re-exported
    INVALID,
    SCORED,
    UNSCORABLE,
    UNSCORABLE_VERDICT,
    AnswerCorrectnessLabels,
    CitationSupportLabels,
    NuggetSupportLabels,
    PairwiseLabels,
    RefusalLabels,
)
from kg_rageval.families.judges.rules import (  # json_object re-exported
    answer_fault,
    citation_fault,
    json_object,
    refusal_fault,
    unscorable_fault,
)


def validation_message(exc: ValidationError, what: str) -> str:
    """Pydantic errors as one line: ``field: message; field: message``."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or what}: {e['msg']}" for e in exc.errors())


class Verdict(BaseModel):
    """Base of every rubric verdict: ``verdict`` (one of ``LABELS`` or ``"unscorable"``) and
    ``rationale`` (shown, never scored; required when the verdict is ``unscorable``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    RUBRIC: ClassVar[str] = ""
    LABELS: ClassVar[tuple[str, ...]] = ()
    APPROVE: ClassVar[str] = ""

    verdict: str
    rationale: str | None = Field(default=None, description="The judge's explanation.")

    @model_validator(mode="after")
    def _unscorable_has_reason(self) -> Verdict:
        fault = unscorable_fault(self.verdict, self.rationale)
        if fault is not None:
            raise ValueError(fault)
        return self

    @property
    def status(self) -> str:
        return UNSCORABLE if self.verdict == UNSCORABLE_VERDICT else SCORED

    @property
    def label(self) -> str | None:
        """The calibration label; ``None`` when unscorable."""
        return None if self.verdict == UNSCORABLE_VERDICT else self.verdict

    @property
    def approves(self) -> bool | None:
        lab = self.label
        return None if lab is None else lab == self.APPROVE


class PairwisePreference(Verdict):
    """Which of two answers, shown as A and B, is better. ``confidence`` in [0, 1] if given.
    ``winner`` names the answer *as shown*; the scorer maps it back when the entry says the
    answers were shown swapped (``order: "BA"``)."""

    RUBRIC: ClassVar[str] = PairwiseLabels.RUBRIC
    LABELS: ClassVar[tuple[str, ...]] = PairwiseLabels.LABELS
    APPROVE: ClassVar[str] = PairwiseLabels.APPROVE

    verdict: Literal["A", "B", "tie", "unscorable"] = Field(description="The better answer, or tie.")
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)


class CitationSupport(Verdict):
    """Does the cited passage support the claim? A ``supported`` or ``partially_supported``
    verdict must quote its ``evidence``; with the passage text in the validation context
    (``{"passage": text}``) the quote must occur in it (whitespace and case aside), and with
    ``{"citation": id}`` the judged ``citation`` must be that id."""

    RUBRIC: ClassVar[str] = CitationSupportLabels.RUBRIC
    LABELS: ClassVar[tuple[str, ...]] = CitationSupportLabels.LABELS
    APPROVE: ClassVar[str] = CitationSupportLabels.APPROVE

    verdict: Literal["supported", "partially_supported", "not_supported", "unscorable"]
    claim: str = Field(description="The claim judged.")
    citation: str | None = Field(default=None, description="The id of the cited passage.")
    evidence: str | None = Field(default=None, description="The passage text that supports the claim.")

    @model_validator(mode="after")
    def _evidence(self, info: ValidationInfo) -> CitationSupport:
        fault = citation_fault(self.verdict, self.claim, self.citation, self.evidence, info.context)
        if fault is not None:
            raise ValueError(fault)
        return self


class RefusalCorrectness(Verdict):
    """Was refusing (or answering) right? ``answerable``: can the question be answered from
    what the system had; ``refused``: did the answer refuse. The verdict must follow from
    them: ``correct`` exactly when ``refused == (not answerable)``."""

    RUBRIC: ClassVar[str] = RefusalLabels.RUBRIC
    LABELS: ClassVar[tuple[str, ...]] = RefusalLabels.LABELS
    APPROVE: ClassVar[str] = RefusalLabels.APPROVE

    verdict: Literal["correct", "incorrect", "unscorable"]
    answerable: bool | None = None
    refused: bool | None = None

    @model_validator(mode="after")
    def _consistent(self) -> RefusalCorrectness:
        fault = refusal_fault(self.verdict, self.answerable, self.refused)
        if fault is not None:
            raise ValueError(fault)
        return self


class AnswerCorrectness(Verdict):
    """Is the answer correct against the reference? ``missing_facts`` (reference facts the
    answer lacks) and ``wrong_facts`` (answer facts the reference contradicts) must be empty
    for ``correct`` and not both empty otherwise; ``score`` in [0, 1] if given is 1 exactly for
    ``correct``, 0 < score < 1 for ``partially_correct``, and < 1 for ``incorrect``."""

    RUBRIC: ClassVar[str] = AnswerCorrectnessLabels.RUBRIC
    LABELS: ClassVar[tuple[str, ...]] = AnswerCorrectnessLabels.LABELS
    APPROVE: ClassVar[str] = AnswerCorrectnessLabels.APPROVE

    verdict: Literal["correct", "partially_correct", "incorrect", "unscorable"]
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    missing_facts: list[str] = Field(default_factory=list)
    wrong_facts: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> AnswerCorrectness:
        fault = answer_fault(self.verdict, self.score, self.missing_facts, self.wrong_facts)
        if fault is not None:
            raise ValueError(fault)
        return self


class NuggetSupport(Verdict):
    """Does the answer support the nugget? The assignment of the TREC 2024 RAG Track
    (AutoNuggetizer, Pradeep et al. 2024): ``support`` (the answer states the nugget),
    ``partial_support`` (it states part of it), ``not_support``. ``nugget`` names the nugget
    judged if given (its text)."""

    RUBRIC: ClassVar[str] = NuggetSupportLabels.RUBRIC
    LABELS: ClassVar[tuple[str, ...]] = NuggetSupportLabels.LABELS
    APPROVE: ClassVar[str] = NuggetSupportLabels.APPROVE

    verdict: Literal["support", "partial_support", "not_support", "unscorable"]
    nugget: str | None = Field(default=None, description="The nugget judged.")


RUBRICS: dict[str, type[Verdict]] = {
    c.RUBRIC: c
    for c in (PairwisePreference, CitationSupport, RefusalCorrectness, AnswerCorrectness, NuggetSupport)
}


def rubric(name: str) -> type[Verdict]:
    """The verdict schema of a rubric name; ``KeyError`` listing the known ones."""
    try:
        return RUBRICS[name]
    except KeyError:
        raise KeyError(f"unknown rubric {name!r}; known: {', '.join(RUBRICS)}") from None


@dataclass(frozen=True)
class VerdictOutcome:
    """Judge output as read: a valid verdict, or the reason it is invalid."""

    verdict: Verdict | None
    error: str | None = None

    @property
    def status(self) -> str:
        return INVALID if self.verdict is None else self.verdict.status

    @property
    def label(self) -> str | None:
        return None if self.verdict is None else self.verdict.label


def parse_verdict(
    schema: type[Verdict] | str, raw: Any, *, context: Mapping[str, Any] | None = None
) -> VerdictOutcome:
    """Validate judge output against ``schema`` (a class or rubric name): a mapping, a verdict
    object or raw text holding one JSON object. ``context`` is passed to the semantic checks
    (e.g. ``{"passage": ...}`` for citation support). Never raises on bad judge output."""
    cls = rubric(schema) if isinstance(schema, str) else schema
    if isinstance(raw, cls):
        return VerdictOutcome(raw)
    obj, err = json_object(raw)
    if err:
        return VerdictOutcome(None, err)
    if not isinstance(obj, dict):
        return VerdictOutcome(None, f"{cls.RUBRIC} verdict must be an object, found {type(obj).__name__}")
    try:
        return VerdictOutcome(cls.model_validate(obj, context=dict(context or {})))
    except ValidationError as exc:
        return VerdictOutcome(
            None, f"{cls.RUBRIC} verdict breaks the contract: {validation_message(exc, 'verdict')}"
        )


def response_schema(schema: type[Verdict] | str) -> dict[str, Any]:
    """The JSON schema of a verdict, for structured output (``response_format``)."""
    cls = rubric(schema) if isinstance(schema, str) else schema
    return cls.model_json_schema()
