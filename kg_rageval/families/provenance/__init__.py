"""Provenance and audit: citation completeness and precision/recall, provenance depth,
reproducibility with run manifests, and the PROV-O audit trail. See ``docs/provenance.md``."""

from kg_rageval.families.provenance.citations import (
    CitationFamily,
    cited_ids,
    claim_citations,
    score_citations,
)
from kg_rageval.families.provenance.corpus import (
    Corpus,
    file_hash,
    is_stable_source_id,
    load_corpus,
    read_corpus,
)
from kg_rageval.families.provenance.depth import ProvenanceDepthFamily, score_depth
from kg_rageval.families.provenance.manifest import REQUIRED, check_manifest, compare_manifests, read_manifest
from kg_rageval.families.provenance.prov import KGR, export_prov, validate_prov
from kg_rageval.families.provenance.reproducibility import ReproducibilityFamily, score_reproducibility
from kg_rageval.families.provenance.score import manifest_report, score_provenance

__all__ = [
    "CitationFamily",
    "Corpus",
    "KGR",
    "ProvenanceDepthFamily",
    "REQUIRED",
    "ReproducibilityFamily",
    "check_manifest",
    "cited_ids",
    "claim_citations",
    "compare_manifests",
    "export_prov",
    "file_hash",
    "is_stable_source_id",
    "load_corpus",
    "manifest_report",
    "read_corpus",
    "read_manifest",
    "score_citations",
    "score_depth",
    "score_provenance",
    "score_reproducibility",
    "validate_prov",
]
