"""The one registry of import formats: ``kg-rageval import FORMAT``, the library
(:func:`read`) and the audit config (``records: {format: ragas, path: ...}``) all resolve
names here."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

from kg_rageval.base.errors import ConfigError
from kg_rageval.interop._common import Imported

FORMATS: dict[str, str] = {
    "ragas": "RAGAS evaluation dataset (JSONL, CSV, Parquet or a datasets folder)",
    "deepeval": "DeepEval test cases / goldens (JSON dataset file, JSONL or CSV)",
}


def reader(fmt: str) -> Callable[[str | Path], Imported]:
    """The reader of ``fmt``; an unknown name is a :class:`ConfigError` with a suggestion."""
    if fmt not in FORMATS:
        close = difflib.get_close_matches(fmt, list(FORMATS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown import format {fmt!r} (known: {', '.join(FORMATS)}){hint}")
    if fmt == "ragas":
        from kg_rageval.interop import ragas

        return ragas.read
    from kg_rageval.interop import deepeval

    return deepeval.read


def read(fmt: str, path: str | Path) -> Imported:
    """Read ``path`` as ``fmt`` into records (see ``docs/interop.md``)."""
    return reader(fmt)(path)
