"""Giving freed memory back to the system.

CPython frees a NumPy array's buffer with ``free``; glibc keeps freed blocks below its (dynamic,
up to 32 MB) mmap threshold in the heap for reuse instead of returning them. A stream that
frees one chunk's arrays while the result's columns grow in fresh memory would otherwise hold
both: peak memory about the result twice over.
"""

from __future__ import annotations

from typing import Any

_TRIM: Any = None


def trim_heap() -> None:
    """Return the heap's free pages to the system (glibc's ``malloc_trim(0)``, which also
    releases free pages in the middle of the heap; a no-op where there is no glibc). Costs
    about a millisecond: call it after freeing a chunk or a column, not per row."""
    global _TRIM
    if _TRIM is None:
        try:
            import ctypes

            _TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)
