"""The number formats of every human-readable output (CLI tables, gate reasons, Markdown and
HTML reports) and the plain text table: one place, so a value reads the same everywhere.
Standard library only."""

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


def table(rows: list[list[Any]], headers: list[str] | None = None) -> str:
    """A plain text table with right-aligned numbers."""
    cells = [[fmt_value(c) for c in r] for r in rows]
    if headers:
        cells.insert(0, list(headers))
    if not cells:
        return ""
    widths = [max(len(r[i]) if i < len(r) else 0 for r in cells) for i in range(max(map(len, cells)))]
    lines = []
    for k, r in enumerate(cells):
        parts = []
        for i, c in enumerate(r):
            numeric = bool(headers) and k > 0
            if numeric and _is_num(c):
                parts.append(c.rjust(widths[i]))
            else:
                parts.append(c.ljust(widths[i]))
        lines.append("  ".join(parts).rstrip())
        if k == 0 and headers:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _is_num(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False
