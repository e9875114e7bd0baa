"""SHA-256 of files and bytes, written one way everywhere: ``sha256:<hex>``.

The audit's manifest, its reports' hashes, a run manifest's corpus hash, a test set's pinned
files and a re-based records file all use :func:`file_hash`. Standard library only.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

BLOCK = 1 << 20
"""Bytes read at a time (1 MiB): a file of any size is hashed in constant memory."""


def file_hash(path: str | Path) -> str:
    """``sha256:<hex>`` of a file's bytes, read in blocks of :data:`BLOCK`."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(BLOCK), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def bytes_hash(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()
