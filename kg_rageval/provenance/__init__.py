"""Provenance and audit: citation completeness and precision/recall, provenance depth,
reproducibility with run manifests, and the PROV-O audit trail. See ``docs/provenance.md``."""

from .citations import CitationFamily, cited_ids, claim_citations, score_citations
from .corpus import Corpus, file_hash, is_stable_source_id, load_corpus, read_corpus
from .depth import ProvenanceDepthFamily, score_depth
from .manifest import REQUIRED, check_manifest, compare_manifests, read_manifest
from .prov import KGR, export_prov, validate_prov
from .reproducibility import ReproducibilityFamily, score_reproducibility
from .score import manifest_report, score_provenance

__all__ = [
    "CitationFamily", "Corpus", "KGR", "ProvenanceDepthFamily", "REQUIRED", "ReproducibilityFamily",
    "check_manifest", "cited_ids", "claim_citations", "compare_manifests", "export_prov",
    "file_hash", "is_stable_source_id", "load_corpus", "manifest_report", "read_corpus", "read_manifest",
    "score_citations", "score_depth", "score_provenance", "score_reproducibility", "validate_prov",
]
