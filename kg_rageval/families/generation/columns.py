"""Per-record results gathered column by column and made into an :class:`Evaluation` in one
step: the same evaluation :func:`~kg_rageval.results.builders.build_evaluation` makes from the
equivalent row dicts (stats float64 in the family's order, a stat a row lacks 0; keys and
details object columns, a key a row lacks ``None``), without a dict per row per stat."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kg_rageval.results.builders import _key_columns
from kg_rageval.results.columns import _object_column
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family


def column_evaluation(
    family: Family,
    record_ids: Sequence[Any],
    stats: Mapping[str, Any],
    *,
    key_rows: Sequence[Mapping[str, Any]] = (),
    keys: Sequence[str] = (),
    key_columns: Mapping[str, Sequence[Any]] | None = None,
    details: Mapping[str, Sequence[Any]],
    unscored: list[dict[str, Any]],
    meta: dict[str, Any] | None = None,
) -> Evaluation:
    """``stats``: name → one number per row (absent names are all 0); ``key_rows``: the
    breakdown keys of each row (:func:`~kg_rageval.records.fields.row_keys`), of which the
    columns ``keys`` are kept (or ``key_columns``: name → one key value per row, the same
    columns read at once, :meth:`~kg_rageval.records.fields.RecordColumns.key_columns`);
    ``details``: name → one value per row."""
    n = len(record_ids)
    cols = {
        s: np.zeros(n) if stats.get(s) is None else np.asarray(stats[s], dtype=float) for s in family.stats
    }
    return Evaluation(
        family=family,
        record_ids=_object_column(record_ids),
        stats=cols,
        keys=(
            {k: _object_column([kr.get(k) for kr in key_rows]) for k in keys}
            if key_columns is None
            else _key_columns(key_columns)
        ),
        details={k: _object_column(v) for k, v in details.items()},
        unscored=list(unscored),
        meta=dict(meta or {}),
    )


def stored_key_columns(cols: Any, at: Any) -> dict[str, Any]:
    """The key columns of the rows ``at`` of a chunk's
    :class:`~kg_rageval.records.fields.RecordColumns` as an evaluation stores them
    (:func:`~kg_rageval.results.columns.compact_object`): a text column coded once for all
    rows (shared by the members through ``cols.cached``) and each selection's stored column
    made from the codes (:func:`~kg_rageval.results.columns.compact_rows`; the same stored
    column)."""
    from kg_rageval.results.columns import compact_rows, text_codes

    keys = cols.keys()
    coded = cols.cached("coded keys", lambda: {k: text_codes(v) for k, v in keys.items()})
    idx = np.arange(cols.n) if at is None else np.asarray(at, dtype=np.intp)
    out: dict[str, Any] = {}
    for k, v in keys.items():
        c = coded[k]
        out[k] = v[idx] if c is None else compact_rows(c[0], c[1], idx)
    return out
