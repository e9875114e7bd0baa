"""Shared by the audit equality tests (``tests/`` is on ``sys.path``)."""

from __future__ import annotations

from typing import Any

VOLATILE = frozenset({"timings", "seconds"})
"""Keys of a report holding wall times: they differ from run to run."""


def without_timings(x: Any) -> Any:
    """``x`` (a report's JSON value) with every ``VOLATILE`` key dropped, at any depth."""
    if isinstance(x, dict):
        return {k: without_timings(v) for k, v in x.items() if k not in VOLATILE}
    if isinstance(x, list):
        return [without_timings(v) for v in x]
    return x
