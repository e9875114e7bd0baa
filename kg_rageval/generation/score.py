"""All generation families over one records file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..evaluation import Evaluation
from ..records import Record
from .calibration import score_calibration
from .concepts import ConceptLinker, dictionary_linker
from .correctness import score_correctness
from .faithfulness import score_faithfulness
from .refusal import score_refusal
from .unseen import score_unseen
from .verifiers import Judge

if TYPE_CHECKING:  # pragma: no cover
    from ..ontology import Ontology


def score_generation(
    records: Iterable[Record],
    ontology: "Ontology",
    *,
    judgments: Mapping[str, Any] | None = None,
    judge: Judge | None = None,
    linker: ConceptLinker | None = None,
    n_bins: int = 10,
) -> dict[str, Evaluation]:
    """``{"faithfulness", "correctness", "refusal", "unseen_concepts", "calibration"}`` →
    :class:`Evaluation`, each with its own rows and unscored records."""
    records = list(records)
    linker = linker or dictionary_linker(ontology)
    return {
        "faithfulness": score_faithfulness(records, judgments=judgments, judge=judge),
        "correctness": score_correctness(records, ontology, linker=linker),
        "refusal": score_refusal(records),
        "unseen_concepts": score_unseen(records, ontology, linker=linker),
        "calibration": score_calibration(records, n_bins=n_bins),
    }
