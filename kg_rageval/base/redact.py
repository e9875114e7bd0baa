"""Secrets never printed: credentials in URIs and key-like settings are redacted.

* :func:`redact` removes the password of every ``scheme://user:password@host`` in a text
  (``bolt://neo4j:s3cret@db:7687`` → ``bolt://neo4j:***@db:7687``) and the value of
  ``password=``/``api_key=``/``token=`` query parameters. The CLI passes every error line
  and internal-error traceback through it; the audit applies it to its manifest and reports.
* :func:`redact_settings` walks a settings mapping (the audit config's ``judge``, family
  options, loader options) and replaces the value of every key that names a secret
  (``api_key``, ``token``, ``password``, ``secret``, ``authorization``, ``credentials``, ...)
  with ``"***"``, and redacts URIs in the other strings.

Pass credentials by environment variable (``KG_RAGEVAL_NEO4J_USER`` /
``KG_RAGEVAL_NEO4J_PASSWORD``, the judge client's ``api_key_env``), never in a config file or
a URI: a redacted secret still sat in a file.
"""

from __future__ import annotations

import re
from typing import Any

_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^/@\s:'\"]*):(?P<pw>[^/@\s'\"]*)@"
)
_QUERY = re.compile(
    r"(?i)(?P<k>[?&;](?:password|passwd|pwd|api[_-]?key|apikey|token|access[_-]?token|secret)=)"
    r"(?P<v>[^&#\s'\"]*)"
)
_SECRET_PARTS = frozenset(
    {
        "password",
        "passwd",
        "pass",
        "pwd",
        "secret",
        "token",
        "authorization",
        "auth",
        "credential",
        "credentials",
        "bearer",
        "cookie",
        "apikey",
    }
)
_SECRET_KEY = re.compile(r"(?i)(api|private|access|secret)[_\-]?key")
MASK = "***"


def redact(text: str) -> str:
    """``text`` with URI passwords and secret query parameters masked."""
    if not isinstance(text, str) or ("://" not in text and "=" not in text):
        return text
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{m.group('user')}:{MASK}@", text)
    return _QUERY.sub(lambda m: f"{m.group('k')}{MASK}", text)


def is_secret_key(key: Any) -> bool:
    """Whether a settings key names a secret (``api_key``, ``password``, ``auth_token``, ...);
    ``*_env`` keys (which name an environment variable, not its value) are not secrets."""
    k = str(key).lower()
    if k.endswith("_env"):
        return False
    parts = set(re.split(r"[_\-. ]+", k))
    return bool(parts & _SECRET_PARTS) or bool(_SECRET_KEY.search(k))


def redact_settings(x: Any) -> Any:
    """A copy of ``x`` with secret-named keys masked and URIs redacted (see the module docstring)."""
    if isinstance(x, dict):
        return {
            k: (MASK if is_secret_key(k) and v not in (None, "") else redact_settings(v))
            for k, v in x.items()
        }
    if isinstance(x, (list, tuple)):
        return [redact_settings(v) for v in x]
    if isinstance(x, str):
        return redact(x)
    return x


_ASSIGN = re.compile(r"(?P<k>\b[A-Za-z_][A-Za-z0-9_.\-]*\s*[=:]\s*)(?P<v>\S+)")
EXCERPT_CHARS = 60


def excerpt(text: Any, limit: int = EXCERPT_CHARS) -> str:
    """A short, redacted, quoted excerpt of an input line for an error message: at most
    ``limit`` characters, URI passwords masked and the value of every ``NAME=value`` /
    ``NAME: value`` assignment replaced by ``***`` (a ``.env`` or config line given where a
    table was expected is never echoed). Every error that quotes a line of its input uses this,
    so a file of the wrong kind cannot make kg-rageval print its secrets."""
    if isinstance(text, (list, tuple)):
        text = " ".join(str(c) for c in text)
    s = redact(str(text).strip())
    s = _ASSIGN.sub(lambda m: f"{m.group('k')}{MASK}", s)
    if len(s) > limit:
        s = s[: limit - 3] + "..."
    return repr(s)
