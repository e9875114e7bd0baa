"""Slice keys: the one normalisation of a record's ``slices`` for every family.

A record's ``slices`` object gives free-form breakdown keys (``{"intent": "lookup", "tier":
0}``). Every family turns them into row keys ``slice:<name>`` whose value is the slice's
*text* (:func:`slice_text`): a string as it is, any other JSON value in its JSON spelling
(``0``, ``true``, ``null`` is no slice). So ``{"tier": 0}`` is the key ``slice:tier`` with the
value ``"0"`` in every family, and the audit's ``[slice:tier=0]`` gate selects exactly those
rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

Record = dict[str, Any]


def slice_text(value: Any) -> str | None:
    """The text of a slice value: strings unchanged, ``None`` → ``None`` (no slice), other
    JSON values in their JSON spelling (``0`` → ``"0"``, ``True`` → ``"true"``)."""
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def slice_texts(values: list[Any]) -> list[str | None]:
    """:func:`slice_text` of each value (a list of texts and ``None`` is returned as it is)."""
    if set(map(type, values)) <= {str, type(None)}:
        return values
    return [slice_text(v) for v in values]


def record_slices(record: Mapping[str, Any]) -> dict[str, str]:
    """``{"slice:<name>": text}`` for a record's slices (``None`` values and a missing or
    non-object ``slices`` give no keys)."""
    s = record.get("slices")
    if not isinstance(s, Mapping):
        return {}
    out: dict[str, str] = {}
    for k, v in s.items():
        t = slice_text(v)
        if t is not None:
            out[f"slice:{k}"] = t
    return out


def slice_keys(records: Iterable[Record]) -> list[str]:
    """All slice names used by any record, sorted."""
    keys: set[str] = set()
    for r in records:
        s = r.get("slices")
        if isinstance(s, dict):
            keys.update(s)
    return sorted(keys)


def slice_values(records: Iterable[Record]) -> dict[str, set[str]]:
    """``{slice name: {value texts}}`` over ``records`` (for checking gate scopes)."""
    out: dict[str, set[str]] = {}
    for r in records:
        for k, v in record_slices(r).items():
            out.setdefault(k[len("slice:") :], set()).add(v)
    return out
