"""All provenance checks over one run (and its repeats)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Sequence

from pathlib import Path

from ..evaluation import EvaluationSet
from ..records import Record
from .citations import score_citations
from .corpus import Corpus
from .depth import score_depth
from .manifest import check_manifest, compare_manifests
from .reproducibility import score_reproducibility

if TYPE_CHECKING:  # pragma: no cover
    from ..ontology import Ontology


def score_provenance(
    ontology: "Ontology | None",
    records: Iterable[Record],
    *,
    corpus: Corpus,
    repeats: Sequence[Iterable[Record] | str | Path] = (),
) -> EvaluationSet:
    """``{"citations", "provenance_depth"}`` plus ``"reproducibility"`` when repeats are given
    (an :class:`EvaluationSet` of family ``provenance``). A repeat given as a path is read with
    :func:`~kg_rageval.records.read_records`. The ontology is not used (the family's evidence
    is the corpus); it is the first argument like every family's."""
    from ..records import read_records

    records = list(records)
    out = EvaluationSet("provenance", {"citations": score_citations(records),
                                       "provenance_depth": score_depth(records, corpus)})
    if repeats:
        runs = [read_records(r) if isinstance(r, (str, Path)) else list(r) for r in repeats]
        out["reproducibility"] = score_reproducibility(records, runs)
    return out


def manifest_report(
    manifests: Sequence[dict[str, Any]], *, corpus: Corpus | None = None, ontology: "Ontology | None" = None
) -> dict[str, Any]:
    """Check each run manifest against the snapshot and compare them with each other."""
    checks = [
        check_manifest(m, corpus_hash=corpus.hash if corpus else None,
                       ontology_hash=ontology.content_hash if ontology is not None else None)
        for m in manifests
    ]
    return {"manifests": checks, "all_complete": bool(checks) and all(c["complete"] for c in checks),
            **compare_manifests(list(manifests))}
