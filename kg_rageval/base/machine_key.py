"""This machine's secret key for keyed digests over the caches it writes (standard library only).

A cache is evidence: a compiled ontology (``.kgro``) or a judge's cached verdict decides an
audit gate without being recomputed, so an edited cache must not read as the genuine one. Each
cache entry this machine writes carries an HMAC-SHA256 under :func:`machine_key`; an entry that
does not verify is checked in full (``.kgro``) or asked again (judge verdicts), never trusted.

The key is ``KG_RAGEVAL_CACHE_KEY`` (any text) when set, else the 32 random bytes of
``$XDG_CONFIG_HOME/kg-rageval/cache.key`` (``~/.config/...``), created with mode 0600 on the
first write. Without either (the folder is not writable) there is no key, and nothing cached is
trusted.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

KEY_ENV = "KG_RAGEVAL_CACHE_KEY"


def key_path() -> Path:
    """Where the machine key file lives (``$XDG_CONFIG_HOME/kg-rageval/cache.key``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "kg-rageval" / "cache.key"


def machine_key(*, create: bool = False) -> bytes | None:
    """The key (see the module docstring); with ``create`` the key file is made when missing.
    ``None`` when there is none and it cannot be made."""
    env = os.environ.get(KEY_ENV)
    if env:
        return env.encode("utf-8")
    path = key_path()
    try:
        key = path.read_bytes()
        if len(key) >= 16:
            return key
    except OSError:
        pass
    if not create:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
        return path.read_bytes()
    except OSError:
        try:
            return path.read_bytes() or None  # another process created it first
        except OSError:
            return None


def key_id(key: bytes) -> str:
    """A short public name of ``key`` (16 hex digits of a domain-separated SHA-256): tells
    which key signed an entry without revealing it."""
    return hashlib.sha256(b"kg-rageval cache key id\x00" + key).hexdigest()[:16]


def keyed_digest(key: bytes, *parts: bytes) -> str:
    """HMAC-SHA256 under ``key`` over ``parts``, each prefixed by its length (so no two
    different part lists give the same input)."""
    h = hmac.new(key, digestmod=hashlib.sha256)
    for p in parts:
        h.update(len(p).to_bytes(8, "big"))
        h.update(p)
    return h.hexdigest()
