"""RAGAS evaluation datasets (``EvaluationDataset.to_jsonl``/``to_csv``/``to_pandas`` then
Parquet, or ``to_hf_dataset().save_to_disk``) into kg-rageval records (``docs/interop.md``).

Single-turn sample (RAGAS ``SingleTurnSample``) -> record:

==================== ==========================
``user_input``       ``query``
``retrieved_contexts`` ``retrieval.contexts``
``response``         ``answer.text``
``reference``        ``reference.answer``
any other column     ``source.extra.<column>`` (``reference_contexts``, ``rubrics``, ...)
==================== ==========================

A multi-turn sample (``user_input`` a list of ``{"content", "type"}`` messages) keeps the
whole conversation under ``source.extra.user_input``; ``query`` is the last ``human``
message, ``answer.text`` the last ``ai`` message after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kg_rageval.interop._common import Builder, Imported, bad, iter_rows, kind, strings_or_none, text_or_none

FIELDS = ("id", "query", "retrieval.contexts", "answer.text", "reference.answer")
COLUMNS = ("user_input", "retrieved_contexts", "response", "reference")


def _turns(b: Builder, row: int, messages: list[Any]) -> tuple[str | None, str | None]:
    query = answer = None
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("content"), str):
            raise bad(
                b.path, row, f"user_input[{i}]", f"expected a message {{content, type}}, found {kind(m)}"
            )
        if m.get("type") == "human":
            query, answer = m["content"], None
        elif m.get("type") == "ai" and m["content"]:
            answer = m["content"]
    return query, answer


def read(path: str | Path) -> Imported:
    """Read a RAGAS dataset file or ``datasets`` folder; see the module docstring."""
    b = Builder("ragas", path, FIELDS)
    for row, obj in iter_rows(path):
        extra = {k: v for k, v in obj.items() if k not in COLUMNS and k != "id" and v is not None}
        rec: dict[str, Any] = {"id": b.take_id(row, obj.get("id"), "id")}
        ui = obj.get("user_input")
        if isinstance(ui, (list, tuple)):
            query, answer = _turns(b, row, list(ui))
            extra["user_input"] = list(ui)
        else:
            query, answer = text_or_none(b, row, "user_input", ui), None
        response = text_or_none(b, row, "response", obj.get("response"))
        answer = response if response is not None else answer
        contexts = strings_or_none(b, row, "retrieved_contexts", obj.get("retrieved_contexts"))
        reference = text_or_none(b, row, "reference", obj.get("reference"))
        b.fill(rec, query=query, contexts=contexts, answer=answer, reference=reference)
        b.add(rec, row, extra)
    return b.result()
