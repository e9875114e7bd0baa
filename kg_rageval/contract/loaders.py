"""Readers of the families' extra inputs, all with one signature: ``(path, ontology, options)``.

``options`` are the family's validated parameters (loader options such as retrieval's
``category_field`` are declared there, with ``input="corpus"``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping


def retrieval_corpus(path: str | Path, ontology: Any, options: Mapping[str, Any]) -> Any:
    from ..retrieval.corpus import DEFAULT_ENTITLEMENT_FIELDS, read_corpus

    # the corpus is data (gold): a category the ontology lacks is an error unless on_unknown_gold
    # is "count" (then it is dropped and counted by the reader)
    unknown = "ignore" if options.get("on_unknown_gold") == "count" else "error"
    return read_corpus(path, ontology, category_field=options.get("category_field", "categories"),
                       entitlement_fields=tuple(options.get("entitlement_fields") or DEFAULT_ENTITLEMENT_FIELDS),
                       unknown_categories=unknown)


def provenance_corpus(path: str | Path, ontology: Any, options: Mapping[str, Any]) -> Any:
    from ..provenance.corpus import read_corpus

    return read_corpus(path)


def conformance_spec(path: str | Path, ontology: Any, options: Mapping[str, Any]) -> Any:
    from ..conformance.spec import load_spec

    return load_spec(path)


def generation_judgments(path: str | Path, ontology: Any, options: Mapping[str, Any]) -> Any:
    from ..generation.judgment import load_judgments

    return load_judgments(path)


def provenance_repeats(paths: Any, ontology: Any, options: Mapping[str, Any]) -> Any:
    """The repeated runs' records, each ``{record id: record}`` (read once per bound family)."""
    from ..records import read_records

    return tuple({r["id"]: r for r in read_records(p)} for p in paths)


def provenance_manifests(paths: Any, ontology: Any, options: Mapping[str, Any]) -> Any:
    from ..provenance.manifest import read_manifest

    return tuple(read_manifest(p) for p in paths)
