"""All generation families over one records file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kg_rageval.families.generation.calibration import score_calibration
from kg_rageval.families.generation.concepts import ConceptLinker, dictionary_linker, memoised
from kg_rageval.families.generation.correctness import score_correctness
from kg_rageval.families.generation.faithfulness import score_faithfulness
from kg_rageval.families.generation.judge_names import resolve_judge
from kg_rageval.families.generation.refusal import score_refusal
from kg_rageval.families.generation.unseen import score_unseen
from kg_rageval.families.generation.verifiers import Judge
from kg_rageval.records import Record
from kg_rageval.records.fields import shared_row_keys
from kg_rageval.results.evaluation_set import EvaluationSet

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.ontology import Ontology


def score_generation(
    ontology: Ontology,
    records: Iterable[Record],
    *,
    judgments: Mapping[str, Any] | None = None,
    judge: Judge | str | None = "none",
    nli_model: str | None = None,
    linker: ConceptLinker | None = None,
    n_bins: int = 10,
    strip_citations: bool = True,
    **ids: Any,
) -> EvaluationSet:
    """``{"faithfulness", "correctness", "refusal", "unseen_concepts", "calibration"}`` →
    :class:`Evaluation` (an :class:`EvaluationSet` of family ``generation``), each with its own
    rows and unscored records.

    ``judge``: a :class:`Judge` callable, or by name ``"none"`` (only recorded judgments),
    ``"ontology"`` (the deterministic :class:`OntologyVerifier`), ``"nli"`` (a local NLI
    cross-encoder at ``nli_model``; never downloaded) or a plugin ``"module:callable"``
    (:func:`~kg_rageval.families.generation.judge_names.resolve_judge`). ``strip_citations``: remove
    inline citation markers from answers before exact match / token F1. Given concept ids
    (``answer.concepts``, ``reference.concepts``) are resolved by the one id resolver with the
    ``on_*`` / ``aliases`` options (:mod:`kg_rageval.ontology.resolver`).

    Batched: the concept-level counts of all records are one
    :func:`~kg_rageval.families.hierarchy.hierarchical_counts` call, each distinct text is linked once
    (correctness and unseen concepts share the linker's results) and each distinct string
    SQuAD-normalised once per family."""
    from kg_rageval.ontology import IdOptions

    id_opts = IdOptions.of(**ids)
    records = list(records)
    linker = memoised(linker or dictionary_linker(ontology))  # each distinct text linked once
    judge_fn = make_judge(ontology, judge, nli_model)
    with shared_row_keys(records):  # each record's breakdown keys read once, not per family
        return EvaluationSet(
            "generation",
            {
                "faithfulness": score_faithfulness(records, judgments=judgments, judge=judge_fn),
                "correctness": score_correctness(
                    records, ontology, linker=linker, ids=id_opts, strip_citations=strip_citations
                ),
                "refusal": score_refusal(records),
                "unseen_concepts": score_unseen(records, ontology, linker=linker, ids=id_opts),
                "calibration": score_calibration(records, n_bins=n_bins),
            },
        )


def make_judge(ontology: Ontology, judge: Judge | str | None, nli_model: str | None = None) -> Judge | None:
    """The faithfulness judge named ``judge`` (a callable is returned as it is): see
    :func:`~kg_rageval.families.generation.judge_names.resolve_judge`."""
    return resolve_judge(judge, ontology, nli_model=nli_model)
