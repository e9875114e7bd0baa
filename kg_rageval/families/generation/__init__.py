"""Generation quality: faithfulness (extract → verify → aggregate), answer correctness,
refusal behaviour, the unseen-concept flag and calibration. See ``docs/generation.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kg_rageval.base.imports import lazy_exports

_WHERE = {
    ".calibration": (
        "CalibrationFamily",
        "bin_index",
        "score_calibration",
    ),
    ".concepts": (
        "DictionaryConceptLinker",
        "dictionary_linker",
    ),
    ".correctness": (
        "CorrectnessFamily",
        "score_correctness",
    ),
    ".faithfulness": (
        "FaithfulnessFamily",
        "score_faithfulness",
    ),
    ".judgment": (
        "INVALID",
        "NO_CLAIMS",
        "SCORED",
        "Judgment",
        "JudgmentOutcome",
        "load_judgments",
        "parse_judgment",
    ),
    ".refusal": (
        "RefusalFamily",
        "score_refusal",
    ),
    ".score": ("score_generation",),
    ".squad": (
        "exact_match_score",
        "f1_score",
        "normalize_answer",
    ),
    ".unseen": (
        "UnseenConceptFamily",
        "score_unseen",
        "unseen_concepts",
    ),
    ".verifiers": (
        "ExtractVerifyJudge",
        "LLMJudge",
        "NLIVerifier",
        "OntologyVerifier",
        "sentence_claims",
    ),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

__all__ = [
    "DictionaryConceptLinker",
    "CalibrationFamily",
    "CorrectnessFamily",
    "ExtractVerifyJudge",
    "FaithfulnessFamily",
    "INVALID",
    "Judgment",
    "JudgmentOutcome",
    "LLMJudge",
    "NLIVerifier",
    "NO_CLAIMS",
    "OntologyVerifier",
    "RefusalFamily",
    "SCORED",
    "UnseenConceptFamily",
    "bin_index",
    "dictionary_linker",
    "exact_match_score",
    "f1_score",
    "load_judgments",
    "normalize_answer",
    "parse_judgment",
    "score_calibration",
    "score_correctness",
    "score_faithfulness",
    "score_generation",
    "score_refusal",
    "score_unseen",
    "sentence_claims",
    "unseen_concepts",
]


__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF, globals(), __all__)


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from kg_rageval.families.generation.calibration import CalibrationFamily, bin_index, score_calibration
    from kg_rageval.families.generation.concepts import DictionaryConceptLinker, dictionary_linker
    from kg_rageval.families.generation.correctness import CorrectnessFamily, score_correctness
    from kg_rageval.families.generation.faithfulness import FaithfulnessFamily, score_faithfulness
    from kg_rageval.families.generation.judgment import (
        INVALID,
        NO_CLAIMS,
        SCORED,
        Judgment,
        JudgmentOutcome,
        load_judgments,
        parse_judgment,
    )
    from kg_rageval.families.generation.refusal import RefusalFamily, score_refusal
    from kg_rageval.families.generation.score import score_generation
    from kg_rageval.families.generation.squad import exact_match_score, f1_score, normalize_answer
    from kg_rageval.families.generation.unseen import UnseenConceptFamily, score_unseen, unseen_concepts
    from kg_rageval.families.generation.verifiers import (
        ExtractVerifyJudge,
        LLMJudge,
        NLIVerifier,
        OntologyVerifier,
        sentence_claims,
    )
