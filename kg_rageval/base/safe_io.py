"""Bounded, strict readers for the text inputs of kg-rageval (records, configs, specs, gzip).

Every reader here refuses, with a one-line :class:`~kg_rageval.base.errors.InputError` naming the
file, line and field, what would otherwise be silently accepted or exhaust memory:

* **numbers**: ``NaN``, ``Infinity``, ``-Infinity`` and numbers that overflow a float
  (``1e999``) are not measurements; integers longer than :data:`MAX_INT_DIGITS` digits are
  refused (they cannot be converted to a float either, and Python's own parser limit is 4300
  digits, beyond which it raises an unhelpful ``ValueError``);
* **nesting** deeper than the ``max_json_depth`` limit (a deep ``[[[[...]]]]`` line would
  otherwise end in a ``RecursionError``);
* **lines** longer than ``max_line_bytes`` (read with a bounded ``readline``);
* **gzip** data decompressing to more than ``max_gz_bytes`` (counted while decompressing);
* **documents** read whole (:func:`read_document`) larger than ``max_doc_bytes``;
* **configs**: duplicate keys in a JSON or YAML mapping (a second ``gates:`` would silently
  replace the first; TOML refuses them itself), YAML loaded with the safe loader only and its
  alias expansion bounded by ``max_config_nodes`` (a 530-byte "billion laughs" YAML expands
  to billions of values);
* **credential files**: a path named like one (``.env``, ``.env.local``, ``prod.env``,
  ``.netrc``, ``.pgpass``, ``.git-credentials``, an SSH private key, ``*.pem``/``*.p12``/
  ``*.pfx``) is refused before it is opened (:func:`refuse_credentials_file`): a ``.env`` given
  where an ontology table was expected used to load as two root nodes named
  ``OPENAI_API_KEY=sk-...`` and print them.

The limits are those of :mod:`kg_rageval.base.limits`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from kg_rageval.base import limits
from kg_rageval.base.errors import ConfigError, InputError

MAX_INT_DIGITS = 300
"""Longest integer literal accepted in JSON (a float holds at most ~1.8e308)."""

_CHUNK = 1 << 16


class _Bad:
    """A parsed value that is not allowed; replaced by an error naming its field."""

    __slots__ = ("why",)

    def __init__(self, why: str):
        self.why = why


def _find_bad(node: Any, trail: str = "") -> tuple[str, str] | None:
    stack: list[tuple[Any, str]] = [(node, trail)]
    while stack:
        obj, path = stack.pop()
        if isinstance(obj, _Bad):
            return path or "(top level)", obj.why
        if isinstance(obj, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in obj.items())
        elif isinstance(obj, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(obj))
    return None


def _depth_over(obj: Any, limit: int) -> bool:
    """Whether ``obj`` nests containers deeper than ``limit`` (iterative, level by level: the
    containers at depth ``d`` are found by one comprehension over those at ``d - 1``, scalars
    never stacked; stops at the first level past ``limit``)."""
    level = [obj] if isinstance(obj, (dict, list)) else []
    d = 1
    while level:
        if d > limit:
            return True
        level = [
            v
            for o in level
            for v in (o.values() if isinstance(o, dict) else o)
            if isinstance(v, (dict, list))
        ]
        d += 1
    return False


class _Hooks:
    """Parse hooks that mark disallowed values (and remember that one was seen)."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen = False

    def constant(self, name: str) -> _Bad:
        self.seen = True
        return _Bad(f"non-finite number {name} is not allowed")

    def float(self, text: str) -> float | _Bad:
        x = float(text)
        if math.isfinite(x):
            return x
        self.seen = True
        return _Bad(f"number {text[:40]} overflows a float")

    def int(self, text: str) -> int | _Bad:
        digits = len(text) - text.startswith("-")
        if digits > MAX_INT_DIGITS:
            self.seen = True
            return _Bad(f"integer with {digits} digits is beyond the accepted {MAX_INT_DIGITS}")
        return int(text)

    def pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                self.seen = True
                out[k] = _Bad(f"duplicate key {k!r}")
                continue
            out[k] = v
        return out


class _NonFinite(Exception):
    pass


def _raise_constant(name: str) -> None:
    raise _NonFinite(name)


_DECODER = json.JSONDecoder(parse_constant=_raise_constant)
"""Reused (``json.loads`` with any keyword builds a decoder per call): NaN/Infinity abort."""

_orjson: Any
try:  # the optional fast reader (``pip install kg-rageval[fast]``); the stdlib is the reference
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is in the dev extras
    _orjson = None

_DIGIT_TABLE = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
_DIGIT_RUN = b"0" * 20


def _long_digits(text: str | bytes) -> bool:
    """Whether ``text`` has 20 ASCII digits in a row: orjson reads an integer beyond 64 bits as
    a float, so such a text goes to the stdlib parser, which keeps it an integer. One C-level
    byte translation and a substring search (a regex ``\\d{20}`` re-scans every digit run and
    cost six times the parse on lines of many short numbered ids)."""
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return _DIGIT_RUN in raw.translate(_DIGIT_TABLE)


_UNSET: Any = object()


def fast_json_reader() -> str:
    """``"orjson"`` when the fast reader is in use, else ``"json"`` (the standard library)."""
    return "orjson" if _orjson is not None else "json"


def fast_line(raw: bytes, depth_limit: int) -> Any:
    """The value of one JSONL line (bytes, not decoded) when orjson takes it whole and it needs
    none of :func:`loads_json`'s slower checks, else :data:`NOT_FAST` (the caller then decodes
    the line and calls :func:`loads_json`, whose errors and values it keeps). The same rules as
    loads_json's orjson path: no 20-digit run (orjson would make it a float), nesting within
    ``depth_limit``; orjson validates UTF-8 itself and refuses what the stdlib path words."""
    if _orjson is None or _DIGIT_RUN in raw.translate(_DIGIT_TABLE):
        return NOT_FAST
    try:
        doc = _orjson.loads(raw)
    except _orjson.JSONDecodeError:
        return NOT_FAST
    if raw.count(b"[") + raw.count(b"{") > depth_limit and _depth_over(doc, depth_limit):
        return NOT_FAST
    return doc


NOT_FAST: Any = object()
""":func:`fast_line`'s answer for a line the full reader must parse."""


def loads_json(
    text: str | bytes,
    *,
    source: str | None,
    location: str | None = None,
    duplicates: bool = True,
    error: Callable[..., InputError] = InputError,
    depth_limit: int | None = None,
) -> Any:
    """``json.loads`` with the checks of this module; ``duplicates=False`` makes a repeated key
    in one object an error. Errors name ``source``, ``location`` and the field path.
    ``depth_limit`` is the ``max_json_depth`` limit when the caller has read it already (one
    look-up per file, not per line).

    With orjson installed, a text orjson accepts is taken from it (same values: orjson refuses
    NaN/Infinity, overflowing floats, lone surrogates and nesting beyond 1024, and a text with
    a 20-digit run, which orjson would turn into a float, is not given to it); every text it
    refuses goes through the standard-library path below, so errors and accepted values are
    those of the stdlib parser (``tests/base/test_json_reader.py``).

    The common case costs one decode with a reused decoder and a bracket count: the field of a
    ``NaN``/``Infinity`` or of an integer beyond Python's parser limit is located by a second,
    hooked parse only when the first one fails. A float literal that overflows (``1e999``)
    parses as ``inf`` here; the families refuse a non-finite number where they read one
    (grades, scores, confidences), naming the record and field."""
    long_digits = duplicates and _orjson is not None and _long_digits(text)
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if depth_limit is None:
        depth_limit = limits.get("max_json_depth")
    brackets = text.count("[") + text.count("{")
    doc = _UNSET
    if duplicates and _orjson is not None and not long_digits:
        try:
            doc = _orjson.loads(text)
        except _orjson.JSONDecodeError:  # the stdlib path says why (or accepts what orjson does not)
            doc = _UNSET
    try:
        if doc is not _UNSET:
            suspicious = False
        elif duplicates:
            doc = _DECODER.decode(text)
            suspicious = False
        else:
            doc, suspicious = None, True
    except _NonFinite:
        doc, suspicious = None, True
    except json.JSONDecodeError as exc:
        if location:  # one line of a JSONL file: the column within it
            raise error(
                f"not valid JSON: {exc.msg} (column {exc.colno})", source=source, location=location
            ) from None
        raise error(
            f"not valid JSON: {exc.msg}", source=source, location=f"line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:
        raise limits.exceeded(
            "max_json_depth", "JSON nested too deeply", source=source, location=location
        ) from None
    except ValueError:  # Python's integer-string conversion limit (4300 digits)
        suspicious = True
    if suspicious:
        hooks = _Hooks()
        try:
            doc = json.loads(
                text,
                parse_constant=hooks.constant,
                parse_float=hooks.float,
                parse_int=hooks.int,
                object_pairs_hook=None if duplicates else hooks.pairs,
            )
        except json.JSONDecodeError as exc:
            raise error(
                f"not valid JSON: {exc.msg}",
                source=source,
                location=location or f"line {exc.lineno}, column {exc.colno}",
            ) from None
        except RecursionError:
            raise limits.exceeded(
                "max_json_depth", "JSON nested too deeply", source=source, location=location
            ) from None
        if hooks.seen:
            bad = _find_bad(doc)
            if bad is not None:
                field, why = bad
                loc = ", ".join(p for p in (location, f"field {field}") if p)
                raise error(why, source=source, location=loc)
    if brackets > depth_limit and _depth_over(doc, depth_limit):
        raise limits.exceeded("max_json_depth", "JSON nested too deeply", source=source, location=location)
    return doc


# ---------------------------------------------------------------------- gzip and lines
def gz_memory_limit() -> tuple[int, str]:
    """``(value, name)`` of the limit on a ``.gz`` input whose content is kept in memory: the
    smaller of ``max_gz_memory_bytes`` and ``max_gz_bytes``."""
    memory, total = limits.get("max_gz_memory_bytes"), limits.get("max_gz_bytes")
    return (memory, "max_gz_memory_bytes") if memory <= total else (total, "max_gz_bytes")


class BoundedGzip:
    """A gzip reader that refuses to decompress more than ``max_gz_bytes`` bytes (with
    ``kept=True``, for a reader that keeps what it reads, the :func:`gz_memory_limit`),
    counted as it decompresses, before the data is returned."""

    def __init__(self, path: str | Path, *, kept: bool = False):
        import gzip  # on first use: a command reading no gzip input does not import it

        self.path = str(path)
        self._fh = gzip.open(path, "rb")
        self._limit, self._name = gz_memory_limit() if kept else (limits.get("max_gz_bytes"), "max_gz_bytes")
        self._read = 0

    def _count(self, data: bytes) -> bytes:
        self._read += len(data)
        if self._read > self._limit:
            raise limits.exceeded(
                self._name,
                f"the gzip data decompresses to more than {self._limit} bytes",
                source=self.path,
            )
        return data

    def readline(self, size: int = -1) -> bytes:
        return self._count(self._fh.readline(size))

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            out = bytearray()
            while True:
                chunk = self._count(self._fh.read(_CHUNK))
                if not chunk:
                    return bytes(out)
                out += chunk
        return self._count(self._fh.read(size))

    def __iter__(self):
        while True:
            line = self.readline()
            if not line:
                return
            yield line

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> BoundedGzip:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_CREDENTIAL_NAMES = frozenset(
    {".env", ".netrc", "_netrc", ".pgpass", ".git-credentials", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"}
)
_CREDENTIAL_SUFFIXES = (".env", ".pem", ".p12", ".pfx")


def refuse_credentials_file(path: str | Path) -> None:
    """Raise an :class:`InputError` when ``path`` is named like a credentials file (see the
    module docstring); its content is never read, so nothing of it can be printed. A real
    input with such a name is renamed (``data.env`` → ``data.tsv``)."""
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name in _CREDENTIAL_NAMES or name.startswith(".env.") or name.endswith(_CREDENTIAL_SUFFIXES):
        raise InputError(
            "refusing to read a file named like a credentials file (.env, .netrc, a private "
            "key); nothing of it was read — rename it if it really is an input",
            source=str(path),
        )


def open_binary(path: str | Path, *, kept: bool = False) -> BinaryIO:
    """A binary reader of ``path``; ``.gz`` files are decompressed with the ``max_gz_bytes``
    bound (``kept=True``: the :func:`gz_memory_limit`, for readers that keep every row, such as
    the TREC qrels and run readers)."""
    p = Path(path)
    refuse_credentials_file(p)
    if p.suffix == ".gz":
        return BoundedGzip(p, kept=kept)  # type: ignore[return-value]
    return open(p, "rb")


class KeptRows:
    """The memory a streaming reader keeps from a ``.gz`` input, charged as it reads: the rows
    parsed so far (``row_bytes`` each: what the reader and the scoring after it hold per row)
    plus any other bytes it keeps (ids, groups). Past the :func:`gz_memory_limit` it refuses,
    naming the file and the limit, so a gzip bomb of short lines is stopped by the memory it
    would take, not only by its decompressed size. Plain files are not charged (their size on
    disk is what they cost)."""

    def __init__(self, path: str | Path, row_bytes: int):
        self.path = str(path)
        self.active = Path(path).suffix == ".gz"
        self.row_bytes = row_bytes
        self.rows = 0
        self.other = 0
        self.limit, self.name = gz_memory_limit() if self.active else (0, "")

    def charge(self, rows: int, other_bytes: int = 0) -> None:
        if not self.active:
            return
        self.rows += rows
        self.other += other_bytes
        need = self.rows * self.row_bytes + self.other
        if need > self.limit:
            raise limits.exceeded(
                self.name,
                f"the {self.rows} rows read so far from the gzip data need about {need} bytes of "
                f"memory ({self.row_bytes} bytes a row), more than {self.limit}",
                source=self.path,
            )


def read_document(path: str | Path, *, found: str = "the file") -> bytes | bytearray:
    """The bytes of a document read whole (a JSON run, trace file or manifest): a file larger
    than ``max_doc_bytes`` on disk is refused before it is read, and a ``.gz`` one is
    decompressed whole (:func:`decompress_bounded`: the ``max_gz_memory_bytes`` bound). ``found`` words the refusal
    (``"the relevance JSON"``); errors name the file."""
    p = Path(path)
    refuse_credentials_file(p)
    size = p.stat().st_size
    limit = limits.get("max_doc_bytes")
    if size > limit:
        raise limits.exceeded("max_doc_bytes", f"{found} is {size} bytes", source=str(p))
    if p.suffix == ".gz":
        return decompress_bounded(p.read_bytes(), str(p))
    return p.read_bytes()


def decompress_bounded(raw: bytes | bytearray, source: str) -> bytearray:
    """``gzip.decompress`` for data that is kept whole in memory: it stops as soon as the output
    passes the smaller of ``max_gz_memory_bytes`` and ``max_gz_bytes`` (counted while
    decompressing, before more is kept), so a gzip bomb costs at most that limit of memory;
    handles concatenated members; corrupt data is an :class:`InputError`. Returns the one
    ``bytearray`` it filled (no second copy)."""
    import zlib

    limit, name = gz_memory_limit()
    out = bytearray()
    data = raw
    step = 16 << 20  # output per call: the array grows in place, never beside a copy of itself
    try:
        while data:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            buf = data
            while True:
                piece = d.decompress(buf, min(step, limit + 1 - len(out)))
                out += piece
                if len(out) > limit:
                    raise limits.exceeded(
                        name, f"the gzip data decompresses to more than {limit} bytes", source=source
                    )
                buf = d.unconsumed_tail
                if d.eof or (not buf and not piece):
                    break
            if not d.eof:
                raise InputError("corrupt gzip data: truncated stream", source=source)
            data = d.unused_data.lstrip(b"\x00")
    except zlib.error as exc:
        raise InputError(f"corrupt gzip data: {exc}", source=source) from None
    return out


def read_line(fh: BinaryIO, source: str, lineno: int, limit: int | None = None) -> bytes:
    """One line of ``fh`` (bytes, with its newline), refusing one longer than ``max_line_bytes``
    (``limit``, when the caller has read it already)."""
    if limit is None:
        limit = limits.get("max_line_bytes")
    raw = fh.readline(limit + 1)
    if len(raw) > limit and not raw.endswith(b"\n"):
        raise limits.exceeded(
            "max_line_bytes", f"a line longer than {limit} bytes", source=source, location=f"line {lineno}"
        )
    return raw


# ---------------------------------------------------------------------- configs
def _yaml_loader():
    import yaml

    class StrictSafeLoader(yaml.SafeLoader):
        """The safe loader (no Python objects) refusing duplicate mapping keys."""

        def construct_mapping(self, node, deep=False):  # type: ignore[override]
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue
                if key in seen:
                    raise ConfigError(
                        f"duplicate key {key!r} (line {key_node.start_mark.line + 1}; first on "
                        f"line {seen[key] + 1})"
                    )
                seen[key] = key_node.start_mark.line
            return super().construct_mapping(node, deep=deep)

    return StrictSafeLoader


def _count_expanded(doc: Any, limit: int) -> int | None:
    """Values in ``doc`` counting every alias expansion (shared objects count each time);
    ``None`` as soon as the count passes ``limit`` (so a bomb costs at most ``limit`` steps)."""
    count = 0
    stack = [doc]
    while stack:
        o = stack.pop()
        count += 1
        if count > limit:
            return None
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, list):
            stack.extend(o)
    return count


def load_structured_text(text: str, suffix: str, source: str, what: str = "config") -> Any:
    """Parse a config/spec document (``.toml``, ``.json``, ``.yaml``/``.yml``) strictly:
    duplicate keys refused, YAML safe and alias expansion bounded, JSON numbers finite.
    Raises :class:`ConfigError` naming ``source``."""
    if suffix == ".toml":
        import tomllib

        doc = tomllib.loads(text)  # refuses duplicate keys itself
    elif suffix == ".json":
        try:
            json.loads(text, object_pairs_hook=lambda pairs: None)  # syntax errors, parser's wording
        except json.JSONDecodeError as exc:
            raise ConfigError(f"cannot parse the {what}: {exc}", source=source) from None
        except (RecursionError, ValueError):
            pass  # reported by loads_json
        doc = loads_json(text, source=source, duplicates=False, error=ConfigError)
    else:
        import yaml

        try:
            doc = yaml.load(text, Loader=_yaml_loader())
        except ConfigError as exc:
            raise ConfigError(str(exc), source=source) from None
        except RecursionError:
            raise limits.exceeded("max_json_depth", "YAML nested too deeply", source=source) from None
    limit = limits.get("max_config_nodes")
    if _count_expanded(doc, limit) is None:
        raise limits.exceeded(
            "max_config_nodes",
            f"the document expands (YAML aliases included) to more than {limit} values",
            source=source,
        )
    depth = limits.get("max_json_depth")
    if _depth_over(doc, depth):
        raise limits.exceeded("max_json_depth", "the document is nested too deeply", source=source)
    bad = _find_bad_float(doc)
    if bad is not None:
        raise ConfigError(f"field {bad}: non-finite number (NaN/inf) is not allowed", source=source)
    return doc


def _find_bad_float(doc: Any) -> str | None:
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        o, path = stack.pop()
        if isinstance(o, float) and not math.isfinite(o):
            return path or "(top level)"
        if isinstance(o, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in o.items())
        elif isinstance(o, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(o))
    return None
