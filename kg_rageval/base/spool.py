"""Text kept in a temporary file: a large result text (the PROV-O trail's Turtle of a streamed
audit) that is written once to its file instead of being held.

A :class:`Spool` is one anonymous temporary file (``tempfile.TemporaryFile``: no name on
disk, removed by the system when it is closed or the process ends) that segments of UTF-8
text are appended to. A :class:`SpooledText` is a text made of a ``head`` held in memory and
one segment of a spool: :meth:`SpooledText.write_to` copies it into a file in blocks (its
memory is the head and one block), :meth:`SpooledText.text` reads it whole (for a caller
that wants the ``str``: JSON of the meta, comparisons). Equal texts compare equal, whether
spooled or ``str``.
"""

from __future__ import annotations

import os
import threading
from typing import IO, Any

BLOCK = 1 << 20
"""Bytes copied per read when a spooled text is written out."""


class Spool:
    """An append-only temporary file of UTF-8 segments."""

    def __init__(self, directory: str | None = None):
        import tempfile  # on first use (tempfile imports shutil, bz2, lzma, random): no spill, no import

        self._fh: IO[bytes] = tempfile.TemporaryFile(dir=directory)
        self._end = 0
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        return self._end

    def fileno(self) -> int:
        return self._fh.fileno()

    def append(self, text: str) -> tuple[int, int]:
        """Write ``text`` at the end; its ``(start, end)`` byte offsets."""
        return self.append_bytes(text.encode("utf-8"))

    def append_bytes(self, data: bytes | memoryview) -> tuple[int, int]:
        """Write the bytes ``data`` at the end; their ``(start, end)`` byte offsets."""
        with self._lock:
            start = self._end
            self._end += len(data)
        at, fd = 0, self._fh.fileno()
        while at < len(data):  # a large write may be done in parts
            at += os.pwrite(fd, data[at:], start + at)
        return start, start + len(data)

    def close(self) -> None:
        self._fh.close()

    def read(self, start: int, end: int) -> bytes:
        return os.pread(self._fh.fileno(), end - start, start) if end > start else b""

    def copy(self, start: int, end: int, out: IO[bytes]) -> None:
        """Bytes ``start:end`` into the binary file ``out``, a block at a time."""
        at = start
        while at < end:
            block = self.read(at, min(end, at + BLOCK))
            if not block:
                raise OSError("a spooled text's temporary file is shorter than written")
            out.write(block)
            at += len(block)


class SpooledText:
    """``head`` + bytes ``start:end`` of ``spool`` (UTF-8), as one text."""

    __slots__ = ("end", "head", "spool", "start")

    def __init__(self, head: str, spool: Spool, start: int, end: int):
        self.head, self.spool, self.start, self.end = head, spool, start, end

    def text(self) -> str:
        return self.head + self.spool.read(self.start, self.end).decode("utf-8")

    __str__ = text

    def write_to(self, out: IO[bytes]) -> None:
        """The text, UTF-8 encoded, into the binary file ``out``."""
        out.write(self.head.encode("utf-8"))
        self.spool.copy(self.start, self.end, out)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, (str, SpooledText)):
            return self.text() == (other if isinstance(other, str) else other.text())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.text())

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(head={len(self.head)} characters, spooled={self.end - self.start} bytes)"
        )


def write_text(text: str | SpooledText, path: str | os.PathLike[str]) -> None:
    """``text`` (held or spooled) into the file ``path`` as UTF-8, as ``Path.write_text``
    writes a ``str``."""
    with open(path, "wb") as out:
        if isinstance(text, SpooledText):
            text.write_to(out)
        else:
            out.write(text.encode("utf-8"))
