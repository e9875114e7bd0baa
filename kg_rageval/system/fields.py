"""Record fields shared by the judges, system and context families.

``row_keys``: the breakdown keys every row carries — ``gold_node`` (the record's
``gold_node``, else its single ``labels.gold`` id) and ``slice:<name>`` per record slice.
"""

from __future__ import annotations

from typing import Any

from ..records import Record


def row_keys(record: Record) -> dict[str, Any]:
    from ..generation.fields import row_keys as generation_keys

    keys = generation_keys(record)
    if isinstance(record.get("gold_node"), str):
        keys["gold_node"] = record["gold_node"]
    return keys
