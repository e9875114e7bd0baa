"""Plain Python values for output: numpy scalars and arrays converted, NaN and infinity refused.

:func:`_jsonable` converts a value for a JSON report (raising ``ValueError`` that names where a
non-finite number is); :func:`_out_column` converts one column of rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from kg_rageval.base.spool import SpooledText


def _py(v: Any) -> Any:
    """A plain Python value for output (numpy scalars and arrays converted)."""
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def _jsonable(v: Any, where: str) -> Any:
    """``v`` with numpy values converted, tuples as lists; NaN/inf raise naming ``where``."""
    v = _py(v)
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"non-finite number {v!r} in {where}")
    if isinstance(v, SpooledText):  # a text kept in a temporary file (the PROV-O trail)
        return v.text()
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x, f"{where}.{k}") for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        seq = sorted(v, key=str) if isinstance(v, (set, frozenset)) else v
        return [_jsonable(x, where) for x in seq]
    return v


_PLAIN = (str, int, bool, type(None))


def _out_column(col: np.ndarray, name: str, json_safe: bool, nan_is_none: bool = False) -> list[Any]:
    """A column as plain Python values; with ``json_safe``, NaN/inf raise naming the column,
    except NaN in a key column (``nan_is_none``), which is a missing key and comes out as
    ``None``."""
    vals = col.tolist()
    if col.dtype.kind in "biu":
        return vals
    if col.dtype.kind == "f":
        if json_safe and not np.isfinite(col).all():
            bad = ~np.isfinite(col)
            if nan_is_none and not np.isinf(col).any():
                return [None if b else v for v, b in zip(vals, bad.tolist())]
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"non-finite number {vals[i]!r} in column {name!r}, row {i}")
        return vals
    if all(type(v) in _PLAIN for v in vals):
        return vals
    if json_safe:
        if nan_is_none:
            vals = [None if isinstance(v, float) and v != v else v for v in vals]
        return [_jsonable(v, f"column {name!r}, row {i}") for i, v in enumerate(vals)]
    return [_py(v) for v in vals]
