"""The number formats of every human-readable output (CLI tables, gate reasons, Markdown and
HTML reports): one place, so a value reads the same everywhere. Standard library only."""

from __future__ import annotations

from typing import Any

MISSING_TEXT = "—"


def fmt_value(x: Any, digits: int = 4) -> str:
    """A metric value: ``None`` → ``"—"``, a float with ``digits`` decimals, anything else as
    ``str``."""
    if x is None:
        return MISSING_TEXT
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def fmt_count(x: float) -> str:
    """A numerator/denominator: a whole number without decimals, else three decimals."""
    return str(int(x)) if float(x).is_integer() else f"{x:.3f}"
