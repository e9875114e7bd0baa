"""All provenance checks over one run (and its repeats)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ..evaluation import Evaluation
from ..records import Record
from .citations import score_citations
from .corpus import Corpus
from .depth import score_depth
from .manifest import check_manifest, compare_manifests
from .reproducibility import score_reproducibility

if TYPE_CHECKING:  # pragma: no cover
    from ..ontology import Ontology


def score_provenance(
    records: Iterable[Record],
    corpus: Corpus,
    *,
    repeats: Sequence[Iterable[Record]] = (),
) -> dict[str, Evaluation]:
    """``{"citations", "provenance_depth"}`` plus ``"reproducibility"`` when repeats are given."""
    records = list(records)
    out = {"citations": score_citations(records), "provenance_depth": score_depth(records, corpus)}
    if repeats:
        out["reproducibility"] = score_reproducibility(records, [list(r) for r in repeats])
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
