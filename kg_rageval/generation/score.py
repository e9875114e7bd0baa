"""All generation families over one records file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..evaluation import Evaluation
from ..records import Record
from .calibration import score_calibration
from .concepts import ConceptLinker, dictionary_linker
from .correctness import score_correctness
from .faithfulness import score_faithfulness
from .judge_names import resolve_judge
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
    judge: Judge | str | None = None,
    nli_model: str | None = None,
    linker: ConceptLinker | None = None,
    n_bins: int = 10,
    strip_citations: bool = True,
) -> dict[str, Evaluation]:
    """``{"faithfulness", "correctness", "refusal", "unseen_concepts", "calibration"}`` →
    :class:`Evaluation`, each with its own rows and unscored records.

    ``judge``: a judge object or a name (``none``, ``ontology``, ``nli`` with ``nli_model``, or a
    plugin ``"module:callable"``; :func:`~kg_rageval.generation.judge_names.resolve_judge`)."""
    records = list(records)
    judge = resolve_judge(judge, ontology, nli_model=nli_model)
    linker = linker or dictionary_linker(ontology)
    return {
        "faithfulness": score_faithfulness(records, judgments=judgments, judge=judge),
        "correctness": score_correctness(records, ontology, linker=linker, strip_citations=strip_citations),
        "refusal": score_refusal(records),
        "unseen_concepts": score_unseen(records, ontology, linker=linker),
        "calibration": score_calibration(records, n_bins=n_bins),
    }
