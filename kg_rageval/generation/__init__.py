"""Generation quality: faithfulness (extract → verify → aggregate), answer correctness,
refusal behaviour, the unseen-concept flag and calibration. See ``docs/generation.md``."""

from .calibration import CalibrationFamily, bin_index, score_calibration
from .concepts import DictionaryConceptLinker, dictionary_linker
from .correctness import CorrectnessFamily, score_correctness
from .faithfulness import FaithfulnessFamily, score_faithfulness
from .judgment import INVALID, NO_CLAIMS, SCORED, Judgment, JudgmentOutcome, load_judgments, parse_judgment
from .refusal import RefusalFamily, score_refusal
from .score import score_generation
from .squad import exact_match_score, f1_score, normalize_answer
from .unseen import UnseenConceptFamily, score_unseen, unseen_concepts
from .verifiers import (
    ExtractVerifyJudge,
    LLMJudge,
    NLIVerifier,
    OntologyVerifier,
    sentence_claims,
)

__all__ = [
    "DictionaryConceptLinker", "CalibrationFamily", "CorrectnessFamily", "ExtractVerifyJudge",
    "FaithfulnessFamily", "INVALID", "Judgment", "JudgmentOutcome", "LLMJudge", "NLIVerifier",
    "NO_CLAIMS", "OntologyVerifier", "RefusalFamily", "SCORED", "UnseenConceptFamily", "bin_index",
    "dictionary_linker", "exact_match_score", "f1_score", "load_judgments", "normalize_answer",
    "parse_judgment", "score_calibration", "score_correctness", "score_faithfulness",
    "score_generation", "score_refusal", "score_unseen", "sentence_claims", "unseen_concepts",
]
