"""The one registry of import formats: ``kg-rageval import FORMAT``, the library
(:func:`read`) and the audit config (``records: {format: ragas, path: ...}``) all resolve
names here."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import ConfigError
from kg_rageval.interop._common import Imported

FORMATS: dict[str, str] = {
    "ragas": "RAGAS evaluation dataset (JSONL, CSV, Parquet or a datasets folder)",
    "deepeval": "DeepEval test cases / goldens (JSON dataset file, JSONL or CSV)",
    "beir": "BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv), optionally with a run file",
    "trec-rag": "TREC 2024 RAG Track answer file (ragnarok) or nugget / assignment file (JSONL)",
    "phoenix": "Phoenix / OpenInference span export (JSONL, JSON or Parquet)",
    "otlp": "OTLP JSON trace export (resourceSpans / scopeSpans / spans)",
}

MODULES = {
    "ragas": "ragas",
    "deepeval": "deepeval",
    "beir": "beir",
    "trec-rag": "trec_rag",
    "phoenix": "traces",
    "otlp": "traces",
}

OPTIONS: dict[str, tuple[str, ...]] = {
    "beir": ("split", "run"),
    "trec-rag": ("nuggets",),
    "phoenix": ("id_attribute",),
    "otlp": ("id_attribute",),
}
"""The reader options each format takes (``read(fmt, path, **options)``)."""


def reader(fmt: str) -> Callable[..., Imported]:
    """The reader of ``fmt``; an unknown name is a :class:`ConfigError` with a suggestion."""
    if fmt not in FORMATS:
        close = difflib.get_close_matches(fmt, list(FORMATS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown import format {fmt!r} (known: {', '.join(FORMATS)}){hint}")
    mod = importlib.import_module(f"kg_rageval.interop.{MODULES[fmt]}")
    if fmt == "phoenix":
        return mod.read_phoenix  # type: ignore[no-any-return]
    if fmt == "otlp":
        return mod.read_otlp  # type: ignore[no-any-return]
    return mod.read  # type: ignore[no-any-return]


def read(fmt: str, path: str | Path, **options: Any) -> Imported:
    """Read ``path`` as ``fmt`` into records (see ``docs/interop.md``). ``options`` are the
    format's (:data:`OPTIONS`); one the format does not take is a :class:`ConfigError`;
    ``None`` values are left out. The records are built with the cyclic garbage collector
    paused (:func:`~kg_rageval.records.collector_paused`: parsed rows and the records made of
    them hold no reference cycles; each collection would walk every record built so far)."""
    from kg_rageval.records._io import collector_paused

    fn = reader(fmt)
    given = {k: v for k, v in options.items() if v is not None}
    wrong = sorted(set(given) - set(OPTIONS.get(fmt, ())))
    if wrong:
        takes = ", ".join(OPTIONS.get(fmt, ())) or "none"
        raise ConfigError(f"import format {fmt!r} takes no option {wrong[0]!r} (its options: {takes})")
    with collector_paused():
        return fn(path, **given)
