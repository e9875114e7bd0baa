"""Readers of the provenance family's extra inputs (``(path, ontology, options)``, the one
loader signature of :class:`kg_rageval.scoring.Input`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def corpus(path: str | Path, ontology: Any, options: Mapping[str, Any]) -> Any:
    from kg_rageval.families.provenance.corpus import read_corpus

    return read_corpus(path)


def repeats(paths: Any, ontology: Any, options: Mapping[str, Any]) -> Any:
    """The repeated runs' records, each ``{record id: record}`` (read once per bound family)."""
    from kg_rageval.records import read_records

    return tuple({r["id"]: r for r in read_records(p)} for p in paths)


def manifests(paths: Any, ontology: Any, options: Mapping[str, Any]) -> Any:
    from kg_rageval.families.provenance.manifest import read_manifest

    return tuple(read_manifest(p) for p in paths)
