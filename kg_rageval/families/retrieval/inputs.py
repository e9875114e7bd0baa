"""Readers of the retrieval family's extra inputs (the one loader signature of
:class:`kg_rageval.scoring.Input`: ``(path, ontology, options)``, where ``options`` are the
family's validated parameters; ``category_field`` and ``entitlement_fields`` are declared
with ``input="corpus"``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def corpus(path: str | Path, ontology: Any, options: Mapping[str, Any]) -> Any:
    """The corpus with its category and entitlement fields (shared by ``preference``)."""
    from kg_rageval.families.retrieval.corpus import DEFAULT_ENTITLEMENT_FIELDS, read_corpus

    # the corpus is data (gold): a category the ontology lacks is an error unless on_unknown_gold
    # is "count" (then it is dropped and counted by the reader)
    unknown = "ignore" if options.get("on_unknown_gold") == "count" else "error"
    return read_corpus(
        path,
        ontology,
        category_field=options.get("category_field", "categories"),
        entitlement_fields=tuple(options.get("entitlement_fields") or DEFAULT_ENTITLEMENT_FIELDS),
        unknown_categories=unknown,
    )


def qrels(path: str | Path, ontology: Any, options: Mapping[str, Any]) -> Any:
    """Qrels of the ``trec`` family: TREC, BEIR TSV or ranx/ir_measures JSON (sniffed)."""
    from kg_rageval.families.retrieval.trec import load_qrels

    return load_qrels(path)


def run(path: str | Path, ontology: Any, options: Mapping[str, Any]) -> Any:
    """A run of the ``trec`` family: TREC or ranx/ir_measures JSON (sniffed)."""
    from kg_rageval.families.retrieval.trec import load_run

    return load_run(path, dedupe=bool(options.get("dedupe")))
