"""All generation families over one records file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..errors import ConfigError
from ..evaluation import EvaluationSet
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
    ontology: "Ontology",
    records: Iterable[Record],
    *,
    judgments: Mapping[str, Any] | None = None,
    judge: Judge | str | None = "none",
    nli_model: str | None = None,
    linker: ConceptLinker | None = None,
    n_bins: int = 10,
    **ids: Any,
) -> EvaluationSet:
    """``{"faithfulness", "correctness", "refusal", "unseen_concepts", "calibration"}`` →
    :class:`Evaluation` (an :class:`EvaluationSet` of family ``generation``), each with its own
    rows and unscored records.

    ``judge``: a :class:`Judge` callable, or by name ``"none"`` (only recorded judgments),
    ``"ontology"`` (the deterministic :class:`OntologyVerifier`) or ``"nli"`` (a local NLI
    cross-encoder at ``nli_model``; never downloaded). Given concept ids (``answer.concepts``,
    ``reference.concepts``) are resolved by the one id resolver with the ``on_*`` / ``aliases``
    options (:mod:`kg_rageval.ontology.resolver`)."""
    from ..ontology import IdOptions

    id_opts = IdOptions.of(**ids)
    records = list(records)
    linker = linker or dictionary_linker(ontology)
    judge_fn = make_judge(ontology, judge, nli_model)
    return EvaluationSet("generation", {
        "faithfulness": score_faithfulness(records, judgments=judgments, judge=judge_fn),
        "correctness": score_correctness(records, ontology, linker=linker, ids=id_opts),
        "refusal": score_refusal(records),
        "unseen_concepts": score_unseen(records, ontology, linker=linker, ids=id_opts),
        "calibration": score_calibration(records, n_bins=n_bins),
    })


def make_judge(ontology: "Ontology", judge: Judge | str | None, nli_model: str | None = None) -> Judge | None:
    """The faithfulness judge named ``judge`` (a callable is returned as it is)."""
    if judge is None or judge == "none":
        return None
    if callable(judge):
        return judge
    from .verifiers import ExtractVerifyJudge, NLIVerifier, OntologyVerifier

    if judge == "ontology":
        return ExtractVerifyJudge(OntologyVerifier(ontology))
    if judge == "nli":
        if not nli_model:
            raise ConfigError("judge 'nli' needs nli_model (--nli-model DIR, a local cross-encoder)")
        return ExtractVerifyJudge(NLIVerifier(nli_model))
    raise ConfigError(f"judge must be none, ontology, nli or a Judge, not {judge!r}")
