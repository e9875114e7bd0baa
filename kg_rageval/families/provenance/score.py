"""All provenance checks over one run (and its repeats, its run manifests, its PROV-O trail)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kg_rageval.families.provenance.citations import memo_claims, score_citations
from kg_rageval.families.provenance.corpus import Corpus
from kg_rageval.families.provenance.depth import score_depth
from kg_rageval.families.provenance.manifest import check_manifest, compare_manifests
from kg_rageval.families.provenance.reproducibility import score_reproducibility
from kg_rageval.records import Record
from kg_rageval.results.evaluation_set import EvaluationSet

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.ontology import Ontology


def score_provenance(
    ontology: Ontology | None,
    records: Iterable[Record],
    *,
    corpus: Corpus,
    repeats: Sequence[Iterable[Record] | str | Path] = (),
    manifests: Sequence[Mapping[str, Any] | str | Path] = (),
    trail: bool = False,
) -> EvaluationSet:
    """``{"citations", "provenance_depth"}`` plus ``"reproducibility"`` when repeats are given,
    ``"run_manifests"`` when manifests are given and ``"prov_trail"`` with ``trail=True``
    (:mod:`.audit_trail`): an :class:`EvaluationSet` of family ``provenance``.

    ``repeats``: record lists (or mappings record id → record) or paths of repeated runs'
    records files (read with :func:`~kg_rageval.records.read_records`); ``manifests``:
    manifest objects or paths (the first describes ``records``), checked against ``corpus``
    and the ontology's content hash (the audit resolves paths against its config's directory;
    the family's loaders read both once when it is bound).

    Partitions of ``records`` scored apart and concatenated give this call's result on all of
    them (the family streams): rows per record, and the per-run members combine as one call
    gives them (see docs/provenance.md, "Streaming")."""
    from kg_rageval.records import collector_paused
    from kg_rageval.records.fields import shared_row_keys

    records = list(records)
    # every member reads each record's claims: once; the rows, claims and trail triples made
    # from the records are acyclic, so the collector's passes over them are pure cost
    with memo_claims(), shared_row_keys(records), collector_paused():
        return _score_provenance(
            ontology, records, corpus=corpus, repeats=repeats, manifests=manifests, trail=trail
        )


def _score_provenance(
    ontology: Ontology | None,
    records: list[Record],
    *,
    corpus: Corpus,
    repeats: Any,
    manifests: Any,
    trail: bool,
) -> EvaluationSet:
    from kg_rageval.families.provenance.audit_trail import score_manifests, score_trail
    from kg_rageval.families.provenance.manifest import read_manifest
    from kg_rageval.records import read_records

    out = EvaluationSet(
        "provenance",
        {"citations": score_citations(records), "provenance_depth": score_depth(records, corpus)},
    )
    if isinstance(repeats, (str, Path)):
        repeats = [repeats]
    if isinstance(manifests, (str, Path)):
        manifests = [manifests]
    runs = [
        read_records(r) if isinstance(r, (str, Path)) else r if isinstance(r, Mapping) else list(r)
        for r in repeats
    ]
    if runs:
        out["reproducibility"] = score_reproducibility(records, runs)
    mans = [read_manifest(m) if isinstance(m, (str, Path)) else dict(m) for m in manifests]
    if mans:
        out["run_manifests"] = score_manifests(mans, corpus=corpus, ontology=ontology)
    if trail:
        out["prov_trail"] = score_trail(records, manifest=mans[0] if mans else None, corpus=corpus)
    return out


def manifest_report(
    manifests: Sequence[dict[str, Any]], *, corpus: Corpus | None = None, ontology: Ontology | None = None
) -> dict[str, Any]:
    """Check each run manifest against the snapshot and compare them with each other."""
    checks = [
        check_manifest(
            m,
            corpus_hash=corpus.hash if corpus else None,
            ontology_hash=ontology.content_hash if ontology is not None else None,
        )
        for m in manifests
    ]
    return {
        "manifests": checks,
        "all_complete": bool(checks) and all(c["complete"] for c in checks),
        **compare_manifests(list(manifests)),
    }
