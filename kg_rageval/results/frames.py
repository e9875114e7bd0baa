"""``pandas.DataFrame`` views of rows and metrics (``to_pandas``); pandas is optional."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.results.metric import Metric


def _metric_rows(metrics: Mapping[str, Metric]) -> list[dict[str, Any]]:
    return [
        {
            "metric": k,
            "value": m.value,
            "numerator": m.numerator,
            "denominator": m.denominator,
            "missing": m.missing,
            "ci_low": m.ci[0] if m.ci else None,
            "ci_high": m.ci[1] if m.ci else None,
        }
        for k, m in metrics.items()
    ]


def _frame(rows: list[dict[str, Any]], what: str) -> Any:
    if what not in ("rows", "metrics"):
        raise InputError(f"to_pandas: what must be 'rows' or 'metrics', not {what!r}")
    try:
        import pandas as pd
    except ImportError:
        raise InputError("to_pandas needs pandas (pip install pandas)") from None
    return pd.DataFrame(rows)
