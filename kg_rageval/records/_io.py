"""The evaluation record format (JSONL, one record per evaluated query).

Every section is optional; each metric family reads its own section and reports how many
records it could score and why the others could not. See ``docs/records.md``::

    {"id": "q-17",
     "query": "Which technique covers dumping LSASS memory?",
     "slices": {"intent": "technique_lookup"},
     "mentions": {"gold": [{"start": 26, "end": 38, "id": "T1003.001"}],
                  "pred": [{"start": 26, "end": 38, "id": "T1003", "score": 0.82}]},
     "labels": {"gold": ["T1003.001"], "pred": ["T1003"]},
     "retrieval": {"gold": {"doc-12": 2, "doc-40": 1}, "run": ["doc-7", "doc-12"],
                   "filters": [{"field": "category", "op": "within", "value": "TA0006"}],
                   "principal": {"tenant": "acme"}},
     "answer": {"text": "...", "citations": ["doc-12"], "refused": false,
                "output": {"technique": "T1003.001", "tactic": "TA0006"}},
     "reference": {"answer": "...", "answerable": true}}

Reading never drops a record silently: a line that is not a JSON object, a missing or
duplicate ``id`` raise :class:`~kg_rageval.base.errors.InputError` naming the file and line.
"""

from __future__ import annotations

import gc
import json
import os
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError

Record = dict[str, Any]


def _open_binary(path: Path):
    from kg_rageval.base.safe_io import open_binary

    return open_binary(path)


def decode_line(raw: bytes, lineno: int, src: str) -> str:
    """A JSONL line's bytes as text: UTF-8, a byte-order mark allowed on line 1; anything else
    is an InputError naming the file, the line and the byte's column."""
    try:
        return raw.decode("utf-8-sig" if lineno == 1 else "utf-8")  # a leading BOM is fine
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text: {exc.reason} (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
            source=src,
            location=f"line {lineno}",
        ) from None


def iter_jsonl(
    path: str | Path,
    *,
    only: set[int] | frozenset[int] | None = None,
    span: tuple[int, int, int] | None = None,
    digests: list[bytes] | None = None,
) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for each non-blank line; malformed JSON raises with the
    file, line and column. Lines, nesting, numbers and ``.gz`` sizes are bounded and checked
    by :mod:`kg_rageval.base.safe_io` (NaN/Infinity and overflowing numbers name their field).
    ``only``: parse just these line numbers (the others are skipped unread; the file is read
    up to the last of them). ``span``: ``(start byte, end byte, lines before it)`` of a plain
    (not ``.gz``) file: only the lines starting in ``[start, end)`` are read, numbered as in the
    whole file (``start`` must begin a line; a partition of the file: :mod:`kg_rageval.audit.partitions`).
    ``digests``: a list that gets, for each value yielded (before it is), the 16-byte BLAKE2b
    digest of its line's bytes as read (line end included) — what tells two files' equal
    lines apart from the others without holding either (:func:`line_digest`)."""
    from kg_rageval.base import limits
    from kg_rageval.base.safe_io import NOT_FAST, fast_line, loads_json, read_line

    p = Path(path)
    src = str(p)
    if not p.exists():
        raise InputError("no such file", source=src)
    line_limit, depth_limit = limits.get("max_line_bytes"), limits.get("max_json_depth")  # once per file
    last = max(only, default=0) if only is not None else None
    with _open_binary(p) as fh:
        lineno = 0
        end = None
        if span is not None:
            fh.seek(span[0])
            lineno, end = span[2], span[1]
        while last is None or lineno < last:
            if end is not None and fh.tell() >= end:
                return
            try:
                raw = read_line(fh, src, lineno + 1, line_limit)
            except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile, a truncated .gz
                raise InputError(f"cannot read the gzip file: {exc}", source=src) from None
            if not raw:
                return
            lineno += 1
            if only is not None and lineno not in only:
                continue
            if lineno > 1:  # the common line: orjson on the bytes (line 1 may carry a BOM)
                doc = fast_line(raw, depth_limit)
                if doc is not NOT_FAST:
                    if digests is not None:
                        digests.append(line_digest(raw))
                    yield lineno, doc
                    continue
            line = decode_line(raw, lineno, src)
            if not line.strip():
                continue
            doc = loads_json(
                line.rstrip("\r\n"), source=src, location=f"line {lineno}", depth_limit=depth_limit
            )
            if digests is not None:
                digests.append(line_digest(raw))
            yield lineno, doc


def line_digest(raw: bytes) -> bytes:
    """The 16-byte BLAKE2b digest of one line's bytes (:func:`iter_jsonl`'s ``digests``)."""
    import hashlib

    return hashlib.blake2b(raw, digest_size=16).digest()


def iter_objects(
    path: str | Path,
    *,
    what: str = "record",
    span: tuple[int, int, int] | None = None,
    digests: list[bytes] | None = None,
) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """``(line number, id, object)`` for each line of a JSONL file of objects keyed by ``id``.

    Each line must be a JSON object whose ``id`` is a non-empty string (an integer is taken as
    its text); a duplicate id raises, naming the line of the first one. ``what`` names the
    rows in that message (``"record"``, ``"document"``, ``"judgment"``). Shared by
    :func:`read_records`, the provenance corpus reader and the judgments reader. ``span``: only
    that byte range (:func:`iter_jsonl`; duplicates are then found within it only).
    ``digests``: each object's line digest (:func:`iter_jsonl`)."""
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path, span=span, digests=digests):
        loc = f"line {lineno}"
        if not isinstance(obj, dict):
            raise InputError(
                f"expected a JSON object, found {type(obj).__name__}", source=str(path), location=loc
            )
        rid = obj.get("id")
        if not isinstance(rid, (str, int)) or isinstance(rid, bool) or rid == "":
            raise InputError(
                "field 'id' is missing or not a non-empty string", source=str(path), location=loc
            )
        rid = str(rid)
        if rid in seen:
            raise InputError(
                f"duplicate {what} id {rid!r} (first on line {seen[rid]})", source=str(path), location=loc
            )
        seen[rid] = lineno
        yield lineno, rid, obj


ROW_KEYS = ("id", "gold_node", "labels", "slices")
"""The top-level record keys every family's rows read: the id, the node the record's figures
are attributed to (:func:`~kg_rageval.records.nodes.gold_node`: ``gold_node``, else a single
gold label) and the slices (``slice:<name>`` row keys)."""

DEFAULT_CHUNK_SIZE = 65_536
"""Records per chunk of :func:`iter_record_chunks` (about 60 MB of parsed dicts for records of
a few hundred bytes)."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused inside the block (restored afterwards, also on an
    error; nothing to do when it is already off). For code that makes many acyclic objects
    from records (parsed JSON holds no reference cycles): each collection would walk every
    young object again, at a cost that grows with the records held."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def iter_record_chunks(
    path: str | Path,
    size: int = DEFAULT_CHUNK_SIZE,
    *,
    span: tuple[int, int, int] | None = None,
    digests: list[bytes] | None = None,
    keep: frozenset[str] | None = None,
) -> Iterator[list[Record]]:
    """The records of a JSONL file in consecutive lists of at most ``size`` (file order), each
    record checked as :func:`read_records` checks it (an object with a unique string ``id``;
    duplicates are found across chunks) and given ``_line`` and ``_source``.

    This is the streaming form of :func:`read_records`: a consumer that scores each chunk and
    keeps only the (columnar) results holds one chunk of dicts at a time. An empty file yields
    nothing. The cyclic garbage collector is paused while a chunk is filled (and restored
    before it is handed out, also on an error): parsed JSON holds no reference cycles, and the
    collector's repeated passes over a growing list of fresh dicts cost about as much as the
    parsing itself. ``span``: the records of that byte range only (:func:`iter_jsonl`), with
    their line numbers in the whole file. ``digests``: a list that gets each record's line
    digest, in order (:func:`iter_jsonl`; a chunk's are its last ``len(chunk)`` when it is
    handed out). ``keep``: only these top-level keys of each record are kept (in the record's
    order; ``_line`` and ``_source`` are added), the rest freed as the record is read — for a
    consumer that reads only those (:attr:`~kg_rageval.scoring.Scorer.reads`)."""
    if size < 1:
        raise ValueError("chunk size must be at least 1")
    source = str(path)
    objects = iter_objects(path, span=span, digests=digests)
    while True:
        chunk: list[Record] = []
        with collector_paused():
            for lineno, rid, obj in objects:
                if keep is not None:
                    obj = {k: v for k, v in obj.items() if k in keep}
                obj["id"] = rid
                obj["_line"] = lineno
                obj["_source"] = source
                chunk.append(obj)
                if len(chunk) >= size:
                    break
        if not chunk:
            return
        yield chunk
        if len(chunk) < size:
            return


def read_records_at(path: str | Path, lines: Iterable[int]) -> dict[int, Record]:
    """``{line number: record}`` of the records on ``lines`` of a JSONL file already read in
    full once (by :func:`iter_record_chunks`: a streamed audit reads the few records its
    report shows again): only those lines are parsed; each record gets ``_line`` and
    ``_source`` as :func:`read_records` gives them."""
    source = str(path)
    out: dict[int, Record] = {}
    for lineno, obj in iter_jsonl(path, only=frozenset(lines)):
        if isinstance(obj, dict):
            obj["id"] = str(obj.get("id"))
            obj["_line"], obj["_source"] = lineno, source
            out[lineno] = obj
    return out


def read_records(path: str | Path) -> list[Record]:
    """All records of a JSONL file, each checked to be an object with a unique string ``id``.

    Each record gets ``_line`` (its line number) and ``_source`` for later error messages.
    The whole file in one list: :func:`iter_record_chunks` with no chunk limit."""
    for chunk in iter_record_chunks(path, size=2**62):
        return chunk
    return []


STRUCTURED_SUFFIXES = (".yaml", ".yml", ".json", ".toml")


def read_structured(path: str | Path, *, what: str) -> tuple[Any, bytes]:
    """``(parsed document, raw bytes)`` of a YAML, JSON or TOML file, told apart by its
    extension (the audit config, a schema spec). ``what`` names the file in errors, which are
    :class:`~kg_rageval.base.errors.ConfigError`: ``"no such <what> file"``, ``"unknown <what> file
    type '.ini'; use .yaml, .yml, .json or .toml"``, ``"cannot parse the <what>: <parser
    message>"`` (not UTF-8, or a syntax error with its line)."""
    from kg_rageval.base.errors import ConfigError

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"no such {what} file", source=str(p))
    suffix = p.suffix.lower()
    if suffix not in STRUCTURED_SUFFIXES:
        raise ConfigError(
            f"unknown {what} file type {suffix or '(none)'!r}; use .yaml, .yml, .json or .toml", source=str(p)
        )
    from kg_rageval.base.errors import LimitExceeded
    from kg_rageval.base.safe_io import load_structured_text

    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
        return load_structured_text(text, suffix, str(p), what), raw
    except (ConfigError, LimitExceeded):
        raise
    except Exception as exc:  # UnicodeDecodeError, tomllib.TOMLDecodeError, JSONDecodeError, yaml.YAMLError
        raise ConfigError(f"cannot parse the {what}: {exc}", source=str(p)) from None


def write_records(path: str | Path, records: Iterable[Record], *, sort_keys: bool = False) -> None:
    """Write records as JSONL (private ``_``-prefixed fields are left out; ``sort_keys`` for
    byte-stable files), atomically: into a temporary sibling renamed over ``path`` at the end,
    so a failure leaves the old file, and a hard link to the old file keeps its content."""
    from kg_rageval.base.outputs import atomic_path, writing

    tmp = atomic_path(path)
    try:
        with writing(path), open(tmp, "w", encoding="utf-8") as fh:
            for r in records:
                fh.write(
                    json.dumps(
                        {k: v for k, v in r.items() if not k.startswith("_")},
                        ensure_ascii=False,
                        sort_keys=sort_keys,
                    )
                )
                fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def where(record: Record, field: str) -> str:
    """``"record 'q-17' (line 3), field mentions.gold[0].end"`` for error messages."""
    line = f" (line {record['_line']})" if "_line" in record else ""
    return f"record {record.get('id')!r}{line}, field {field}"


def located(record: Record, field: str) -> str:
    """:func:`where` preceded by the record's file when it was read from one:
    ``"data.jsonl, record 'q-17' (line 3), field labels.pred[0]"``."""
    src = record.get("_source")
    return f"{src}, {where(record, field)}" if src else where(record, field)


def record_error(record: Record, field: str, message: str) -> InputError:
    """An :class:`InputError` naming the record's file (``_source``), id, line and ``field``:
    ``"data.jsonl, record 'q-17' (line 3), field answer.text: expected a string, found int"``."""
    return InputError(message, source=record.get("_source"), location=where(record, field))


def record_object(record: Record, field: str, value: Any, allowed: frozenset[str]) -> dict:
    """``value`` when it is an object whose keys are all in ``allowed``; else the
    :func:`record_error` naming ``field`` (or ``field.<first unknown key>``)."""
    if not isinstance(value, dict):
        raise record_error(record, field, f"expected an object, found {type(value).__name__}")
    if allowed.issuperset(value):  # the common case: no set of the keys built
        return value
    unknown = set(value) - allowed
    if unknown:
        raise record_error(
            record, f"{field}.{sorted(unknown)[0]}", f"unknown field; expected {', '.join(sorted(allowed))}"
        )
    return value


def record_text(record: Record) -> str | None:
    """The text a record's mention spans index: ``text`` when it is a string, else ``query``
    when that is, else ``None`` (used by linking and ``kg-rageval link``)."""
    for name in ("text", "query"):
        value = record.get(name)
        if isinstance(value, str):
            return value
    return None
