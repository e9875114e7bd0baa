"""Judges you can trust: rubric contracts, an OpenAI-compatible backend, calibration against
human labels, prediction-powered estimates. See ``docs/judges.md``.

The names below are imported from their submodules on first use (PEP 562), so that a
module needing only the rubric contracts (the generation family) does not pay for the HTTP
client (``urllib.request``, ``ssl``) and the calibration families."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kg_rageval.base.imports import lazy_exports

_WHERE = {
    ".calibration": ("JudgeAgreementFamily", "JudgeCalibrationFamily", "PositionBiasFamily"),
    ".client": ("BackendError", "ChatClient", "Completion"),
    ".contracts": (
        "INVALID",
        "RUBRICS",
        "SCORED",
        "UNSCORABLE",
        "AnswerCorrectness",
        "CitationSupport",
        "PairwisePreference",
        "RefusalCorrectness",
        "Verdict",
        "VerdictOutcome",
        "json_object",
        "parse_verdict",
        "response_schema",
        "rubric",
    ),
    ".llm": ("PROMPTS", "RubricJudge"),
    ".ppi": ("PPIResult", "classical_mean", "ppi_from_sums", "ppi_mean", "ppi_sums"),
    ".score": ("score_judges",),
    ".stats": ("cohen_kappa", "wilson"),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

__all__ = sorted(_MODULE_OF)


__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF, globals(), __all__)


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from kg_rageval.families.judges.calibration import (
        JudgeAgreementFamily,
        JudgeCalibrationFamily,
        PositionBiasFamily,
    )
    from kg_rageval.families.judges.client import BackendError, ChatClient, Completion
    from kg_rageval.families.judges.contracts import (
        INVALID,
        RUBRICS,
        SCORED,
        UNSCORABLE,
        AnswerCorrectness,
        CitationSupport,
        PairwisePreference,
        RefusalCorrectness,
        Verdict,
        VerdictOutcome,
        json_object,
        parse_verdict,
        response_schema,
        rubric,
    )
    from kg_rageval.families.judges.llm import PROMPTS, RubricJudge
    from kg_rageval.families.judges.ppi import PPIResult, classical_mean, ppi_from_sums, ppi_mean, ppi_sums
    from kg_rageval.families.judges.score import score_judges
    from kg_rageval.families.judges.stats import cohen_kappa, wilson
