"""SHA-256 of files and bytes, written one way everywhere: ``sha256:<hex>``.

The audit's manifest, its reports' hashes, a run manifest's corpus hash, a test set's pinned
files and a re-based records file all use :func:`file_hash`. A hashed JSON document (a test-set
manifest, its gold labels) is hashed over :func:`canonical_json`. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

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


def canonical_json(x: Any) -> bytes:
    """The one canonical JSON form that is hashed: sorted keys, ASCII, no spaces; a non-finite
    number raises ``ValueError`` (JSON has none)."""
    return json.dumps(x, sort_keys=True, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode()


def document_hash(doc: Any) -> str:
    """``sha256:<hex>`` of a self-hashed document (a test-set manifest): over the canonical JSON
    of every key but ``hash`` — the value the document states under ``hash`` when it was
    written that way. Raises ``ValueError`` for a non-finite number, ``TypeError`` for a
    value JSON cannot hold."""
    body = {k: v for k, v in doc.items() if k != "hash"}
    return bytes_hash(canonical_json(body))
