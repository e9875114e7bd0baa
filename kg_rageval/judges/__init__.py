"""Judges you can trust: rubric contracts, an OpenAI-compatible backend, calibration against
human labels, prediction-powered estimates. See ``docs/judges.md``."""

from .calibration import JudgeAgreementFamily, JudgeCalibrationFamily, PositionBiasFamily
from .client import BackendError, ChatClient, Completion
from .contracts import (INVALID, RUBRICS, SCORED, UNSCORABLE, AnswerCorrectness, CitationSupport,
                        PairwisePreference, RefusalCorrectness, Verdict, VerdictOutcome, json_object,
                        parse_verdict, response_schema, rubric)
from .llm import PROMPTS, RubricJudge
from .ppi import PPIResult, classical_mean, ppi_from_sums, ppi_mean, ppi_sums
from .score import score_judges
from .stats import cohen_kappa, wilson

__all__ = [
    "AnswerCorrectness", "BackendError", "ChatClient", "CitationSupport", "Completion", "INVALID",
    "JudgeAgreementFamily", "JudgeCalibrationFamily", "PROMPTS", "PPIResult", "PairwisePreference",
    "PositionBiasFamily", "RUBRICS", "RefusalCorrectness", "RubricJudge", "SCORED", "UNSCORABLE",
    "Verdict", "VerdictOutcome", "classical_mean", "cohen_kappa", "json_object", "parse_verdict",
    "ppi_from_sums", "ppi_mean", "ppi_sums", "response_schema", "rubric", "score_judges", "wilson",
]
