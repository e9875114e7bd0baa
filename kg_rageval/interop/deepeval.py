"""DeepEval test cases and goldens (``EvaluationDataset.save_as(file_type="json")``, a JSON
list, or JSONL/CSV with the same keys) into kg-rageval records (``docs/interop.md``).

==================== ==========================
``input``            ``query``
``actual_output``    ``answer.text``
``expected_output``  ``reference.answer``
``retrieval_context`` ``retrieval.contexts``
``name`` / ``id``    ``id`` (else ``row-<n>``, counted missing)
any other key        ``source.extra.<key>`` (``context``, ``additional_metadata``, ``comments``, ...)
==================== ==========================

DeepEval's own JSONL and CSV files (``save_as(file_type="jsonl" | "csv")``) write the list
columns ``retrieval_context`` and ``context`` as one text joined by ``|`` (its ``DELIMITER``);
such a text is split on ``|`` as DeepEval's ``add_goldens_from_csv_file`` does (an empty text
is no context). ``tools_called`` / ``expected_tools`` are kept as written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kg_rageval.interop._common import Builder, Imported, iter_rows, strings_or_none, text_or_none

FIELDS = ("id", "query", "retrieval.contexts", "answer.text", "reference.answer")
KEYS = ("input", "actual_output", "expected_output", "retrieval_context")
DELIMITER = "|"
"""DeepEval's separator of list items in its JSONL and CSV files."""
LIST_KEYS = ("retrieval_context", "context")


def _split(value: Any) -> Any:
    """A list column written by DeepEval as one ``|``-joined text, as its list."""
    if isinstance(value, str):
        return value.split(DELIMITER) if value else None
    return value


def read(path: str | Path) -> Imported:
    """Read a DeepEval dataset file; see the module docstring."""
    b = Builder("deepeval", path, FIELDS)
    for row, obj in iter_rows(path):
        obj = {k: _split(v) if k in LIST_KEYS else v for k, v in obj.items()}
        id_key = "id" if obj.get("id") is not None else "name"
        extra = {k: v for k, v in obj.items() if k not in KEYS and k != id_key and v is not None}
        rec: dict[str, Any] = {"id": b.take_id(row, obj.get(id_key), id_key)}
        query = text_or_none(b, row, "input", obj.get("input"))
        answer = text_or_none(b, row, "actual_output", obj.get("actual_output"))
        reference = text_or_none(b, row, "expected_output", obj.get("expected_output"))
        contexts = strings_or_none(b, row, "retrieval_context", obj.get("retrieval_context"))
        b.fill(rec, query=query, contexts=contexts, answer=answer, reference=reference)
        b.add(rec, row, extra)
    return b.result()
