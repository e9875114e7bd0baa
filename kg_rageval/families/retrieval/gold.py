"""One record's ``retrieval.gold`` read and checked (``{doc: grade}`` or a list of ids), and
the finite-number rule of grades and scores: shared by the retrieval scorer
(:mod:`.score`) and the preference family (:mod:`.preference`), which needs no more of the
scorer (a tiny ``score preference`` no longer imports the metric kernels and the run reader)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.records import Record, where


def _finite(rec: Record, field: str, value: float | int, what: str) -> float:
    """``float(value)``; an integer too large for a float or a non-finite number is an input
    error naming the record and field (NaN/inf are not measurements)."""
    try:
        x = float(value)
    except OverflowError:
        raise InputError(
            f"{where(rec, field)}: {what} {str(value)[:20]}... is too large for a number"
        ) from None
    if not math.isfinite(x):
        raise InputError(f"{where(rec, field)}: {what} must be a finite number, found {x!r}")
    return x


def _parse_gold(rec: Record, raw: Any) -> dict[str, float]:
    if isinstance(raw, Mapping):
        out = {}
        for d, g in raw.items():
            if isinstance(g, bool) or not isinstance(g, (int, float)):
                raise InputError(
                    f"{where(rec, f'retrieval.gold[{d!r}]')}: grade must be a number, found {g!r}"
                )
            out[str(d)] = _finite(rec, f"retrieval.gold[{d!r}]", g, "grade")
        return out
    if isinstance(raw, list):
        for i, d in enumerate(raw):
            if not isinstance(d, str):
                raise InputError(f"{where(rec, f'retrieval.gold[{i}]')}: expected a document id, found {d!r}")
        return dict.fromkeys(raw, 1.0)
    raise InputError(
        f"{where(rec, 'retrieval.gold')}: expected an object {{doc: grade}} or a list of ids, found {raw!r}"
    )
