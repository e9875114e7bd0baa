"""Building an :class:`~kg_rageval.results.evaluation.Evaluation` from row dicts or from columns.

:func:`build_evaluation` checks every row (a missing ``record_id`` or a non-finite stat raises
:class:`~kg_rageval.base.errors.InputError` naming the row and field); :func:`columns_evaluation`
makes the same columns without a dict per row; :func:`empty_evaluation` has no rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from itertools import repeat
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.results.columns import CodedColumn, _object_column
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family


def empty_evaluation(family: Family, **kw: Any) -> Evaluation:
    """An evaluation with no scored rows (its metrics all report missing evidence)."""
    return Evaluation(family, np.asarray([], dtype=object), {k: np.zeros(0) for k in family.stats}, **kw)


_PLAIN_NUMBERS = {float, int, bool}


def build_evaluation(
    family: Family,
    rows: Iterable[Mapping[str, Any]],
    *,
    keys: Iterable[str] = (),
    details: Iterable[str] = (),
    unscored: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
) -> Evaluation:
    """Convenience constructor from row dicts holding ``record_id``, the family's stats and
    the named key/detail fields (absent fields become ``None``; absent stats 0).

    A row without ``record_id`` or with a stat that is not a finite number raises
    :class:`InputError` naming the row and field."""
    rows = list(rows)
    keys, details = list(keys), list(details)
    for i, r in enumerate(rows):
        if "record_id" not in r:
            raise InputError(f"{family.name}: row {i} has no 'record_id' (fields: {sorted(r)})")
    stats: dict[str, np.ndarray] = {}
    # a stat no row holds is 0 on every row: one pass over the keys (C level) finds them, so a
    # family whose rows are sparse (most stats absent from most rows) reads only what they hold
    present: set[str] = set().union(*rows) if rows else set()
    plain_dicts = all(type(r) is dict for r in rows)
    n = len(rows)
    for s in family.stats:
        if s not in present:
            stats[s] = np.zeros(n)
            continue
        try:
            # dict.get mapped over the rows: the same values as r.get(s, 0.0), without a
            # bytecode loop
            vals: list[Any] = (
                list(map(dict.get, rows, repeat(s, n), repeat(0.0, n)))  # type: ignore[arg-type]
                if plain_dicts
                else [r.get(s, 0.0) for r in rows]
            )
            # plain numbers (the common case) convert in one C-level pass, as float() would
            col = np.asarray(
                vals if set(map(type, vals)) <= _PLAIN_NUMBERS else [float(v) for v in vals], dtype=float
            )
            bad = np.flatnonzero(~np.isfinite(col))
        except (TypeError, ValueError):
            bad = None
        if bad is None or bad.size:
            for i, r in enumerate(rows):
                v = r.get(s, 0.0)
                try:
                    ok = math.isfinite(float(v))
                except (TypeError, ValueError):
                    ok = False
                if not ok:
                    raise InputError(
                        f"{family.name}: row {i} (record {r['record_id']!r}): stat "
                        f"{s!r} is {v!r}, expected a finite number"
                    )
        stats[s] = col
    return Evaluation(
        family=family,
        record_ids=_object_column([r["record_id"] for r in rows]),
        stats=stats,
        keys={k: _object_column([r.get(k) for r in rows]) for k in keys},
        details={k: _object_column([r.get(k) for r in rows]) for k in details},
        unscored=list(unscored or []),
        meta=dict(meta or {}),
    )


def _stat_column(values: Any) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu" and values.dtype.itemsize <= 4:
        return values
    return np.asarray(values, dtype=float)


def columns_evaluation(
    family: Family,
    record_ids: Any,
    stats: Iterable[Iterable[float]],
    *,
    keys: Mapping[str, Any] | None = None,
    details: Mapping[str, Any] | None = None,
    unscored: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
) -> Evaluation:
    """What :func:`build_evaluation` makes of row dicts, from columns: ``stats`` holds one
    sequence of finite numbers per name of ``family.stats``, in that order (a family building
    its rows as tuples passes ``zip(*rows)``); ``keys`` and ``details`` one list of values each.
    The same columns (float stats, object ids, keys and details), without a dict per row.
    Record ids given as a 1-D NumPy unicode array and key columns given coded
    (:class:`~kg_rageval.results.columns.CodedColumn`) are kept as they are, and a stats column
    given as a NumPy integer array of at most 4 bytes a value too (the evaluation stores them
    so and reads whole-number stats as float64; every read gives the same values)."""
    cols = list(stats)
    if not cols and not len(record_ids):  # zip(*[]) of no rows
        cols = [()] * len(family.stats)
    if len(cols) != len(family.stats):
        raise ValueError(f"{family.name}: {len(cols)} stats columns for {len(family.stats)} stats")
    return Evaluation(
        family=family,
        record_ids=_given_ids(record_ids),
        stats={s: _stat_column(c) for s, c in zip(family.stats, cols)},
        keys=_key_columns(keys or {}),
        details={k: _object_column(v) for k, v in (details or {}).items()},
        unscored=list(unscored or []),
        meta=dict(meta or {}),
    )


def _given_ids(record_ids: Any) -> np.ndarray:
    """Record ids given to :func:`columns_evaluation`: a 1-D unicode array as it is, else as an
    object column (the evaluation stores both as it stores ids)."""
    if isinstance(record_ids, np.ndarray) and record_ids.ndim == 1 and record_ids.dtype.kind == "U":
        return record_ids
    return _object_column(record_ids)


def _key_columns(keys: Mapping[str, Any]) -> Any:
    """Key columns as given: a :class:`CodedColumn` as it is (stored already), anything else
    as a 1-D object array."""
    return {k: v if isinstance(v, CodedColumn) else _object_column(v) for k, v in keys.items()}
