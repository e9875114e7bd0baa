"""The file path of :func:`kg_rageval.drift.rebase.rebase_file` (``kg-rageval records
rebase``): the records read in blocks, the walk skipped for records it would leave untouched,
and the line of an unchanged record copied when it already is that record's encoding — the
output bytes, the report and every input error those of :func:`~kg_rageval.drift.rebase.rebase_records`
over :func:`kg_rageval.records.iter_objects` with ``json.dumps`` (``tests/drift/test_rebase_fast.py``)."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator
from itertools import compress, repeat
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.base.safe_io import _DIGIT_RUN, _DIGIT_TABLE, _orjson
from kg_rageval.records._io import collector_paused, decode_line


class _Quick:
    """Whether the walk (:meth:`kg_rageval.drift.rebase._Rebaser.record`) would leave a record untouched, answered
    without it for the common shapes: ``labels`` and ``mentions`` exactly (an id is untouched
    when it is not a non-empty string or is an active node of NEW that no chain starts from
    and, on the gold side, that did not move; a list of ids also needs its strings distinct),
    ``answer`` / ``reference`` concept lists without an ``output`` object, ``retrieval``
    without filters or a gold node. ``False`` (walk it) for anything else: the answer is never
    ``True`` for a record the walk would touch (``tests/drift/test_drift.py`` compares both on
    every shape)."""

    def __init__(self, mapping: Any):
        active = mapping._active_new - mapping.nontrivial.keys()
        self.safe = {"gold": active - mapping._moved, "pred": active}
        self.clean = _clean_function(self.safe["gold"], self.safe["pred"])


def _clean_function(sg: frozenset[str], sp: frozenset[str]) -> Callable[[dict[str, Any]], bool]:
    heavy = frozenset({"gold_node", "relations", "retrieval", "answer", "reference"})
    STR, LIST, DICT = str, list, dict

    def ids(v: Any, safe: frozenset[str]) -> bool:  # what many() leaves as it is
        c = v.__class__
        if c is LIST:
            if len(v) == 1:
                x = v[0]
                return x.__class__ is STR and x in safe
            for x in v:
                if x.__class__ is not STR or x not in safe:
                    return False
            return len(set(v)) == len(v)
        if c is STR:
            return not v or v in safe
        return True

    def sections(r: dict[str, Any]) -> bool:
        if "gold_node" in r or "relations" in r:
            return False
        ret = r.get("retrieval")
        if ret.__class__ is DICT and ("gold_node" in ret or "filters" in ret or "gold_filters" in ret):
            return False
        for sec, safe in (("answer", sp), ("reference", sg)):
            s = r.get(sec)
            if s.__class__ is not DICT:
                continue  # the walk reads only an object
            if s.get("output").__class__ in (DICT, LIST):
                return False
            if "concepts" in s and not ids(s["concepts"], safe):
                return False
            if safe is sg and "unseen_concepts" in s and not ids(s["unseen_concepts"], safe):
                return False
        return True

    def clean(r: dict[str, Any]) -> bool:
        labels = r.get("labels")
        if labels.__class__ is DICT:
            v = labels.get("gold")
            if v is not None and not ids(v, sg):
                return False
            v = labels.get("pred")
            if v is not None and not ids(v, sp):
                return False
        mentions = r.get("mentions")
        if mentions.__class__ is DICT:
            ms = mentions.get("gold")
            if ms.__class__ is LIST:
                for x in ms:
                    if x.__class__ is DICT:
                        v = x.get("id")
                        if v.__class__ is STR and v and v not in sg:
                            return False
                        v = x.get("nearest")
                        if v.__class__ is STR and v and v not in sg:
                            return False
            ms = mentions.get("pred")
            if ms.__class__ is LIST:
                for x in ms:
                    if x.__class__ is DICT:
                        v = x.get("id")
                        if v.__class__ is STR and v and v not in sp:
                            return False
        return heavy.isdisjoint(r) or sections(r)

    return clean


# ---------------------------------------------------------------------- the file path
_BLOCK = 1 << 16  # bytes read at a time: a block's records stay in the CPU caches from parse to write
_CHECK = 1024  # records per output batch (the unit of the verbatim check)


def _verbatim(raws: list[bytes], docs: list[Any]) -> bool:
    """Whether every ``raws[i]`` (a line as read, no newline) is exactly the bytes the
    re-encoding writes for ``docs[i]`` — ``json.dumps(doc, ensure_ascii=False)`` in UTF-8 —
    so that the line can be copied instead of encoded. Checked by the standard library's
    encoder itself, once for the whole batch: its encoding of the list of records is ``[`` +
    the records' encodings joined by ``", "`` + ``]``, and it equals ``[`` + the lines joined
    by ``", "`` + ``]`` only if each line is its record's encoding (each line is one complete
    JSON value, so the element boundaries of the two texts fall at the same places)."""
    if _LIST_ENCODER is None:
        return False
    try:
        text = "".join(_LIST_ENCODER(docs, 0)).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: encoded (and refused) record by record
        return False
    return (
        len(text) == 2 + sum(map(len, raws)) + 2 * (len(raws) - 1) and text == b"[" + b", ".join(raws) + b"]"
    )


_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
_LIST_ENCODER = (
    _C_ENCODER(None, None, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)
    if _C_ENCODER is not None
    else None
)
"""The encoder ``json.JSONEncoder(ensure_ascii=False, check_circular=False).encode`` builds
for each call (``iterencode``'s one-shot C encoder), built once."""


def _settle(raws: list[bytes], docs: list[Any], idx: list[int], encode: Callable[[Any], str]) -> None:
    """Replace ``raws[i]`` (``i`` in ``idx``: records written unchanged) by its record's
    encoding where the line is not that encoding already (:func:`_verbatim`, halving a batch
    that does not pass down to 32 lines, then encoding each)."""
    if not idx:
        return
    if len(idx) <= 32 or not _verbatim([raws[i] for i in idx], [docs[i] for i in idx]):
        if len(idx) <= 32:
            for i in idx:
                e = encode(docs[i]).encode("utf-8")
                raws[i] = e
            return
        mid = len(idx) // 2
        _settle(raws, docs, idx[:mid], encode)
        _settle(raws, docs, idx[mid:], encode)


def _lines(path: Path, src: str, line_limit: int) -> Iterator[tuple[list[bytes], bool, bool]]:
    """The lines of a records file in batches: ``(lines without their newline, whether the
    last one had a newline, whether the batch has a 20-digit run)`` — a plain file in blocks
    of :data:`_BLOCK` bytes, a ``.gz`` one line by line through the bounded reader (its size
    limit and read errors met where :func:`kg_rageval.records.iter_jsonl` meets them). A line
    longer than ``line_limit`` raises as the reader does, after the lines before it."""
    from kg_rageval.base import limits
    from kg_rageval.base.safe_io import open_binary, read_line

    if path.suffix == ".gz":
        with open_binary(path) as fh:
            lineno = 0
            while True:
                try:
                    raw = read_line(fh, src, lineno + 1, line_limit)
                except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile, a truncated .gz
                    raise InputError(f"cannot read the gzip file: {exc}", source=src) from None
                if not raw:
                    return
                lineno += 1
                nl = raw.endswith(b"\n")
                line = raw[:-1] if nl else raw
                yield [line], nl, _DIGIT_RUN in line.translate(_DIGIT_TABLE)
    with open_binary(path) as fh:
        carry = b""
        lineno = 0
        while True:
            block = fh.read(_BLOCK)
            if not block:
                break
            buf = carry + block if carry else block
            lines = buf.split(b"\n")
            carry = lines.pop()
            digits = _DIGIT_RUN in buf.translate(_DIGIT_TABLE)
            if len(buf) > line_limit:
                for k, line in enumerate(lines):
                    if len(line) > line_limit:
                        if k:
                            yield lines[:k], True, digits
                        _too_long(limits, line_limit, src, lineno + k + 1)
            if len(carry) > line_limit:
                if lines:
                    yield lines, True, digits
                _too_long(limits, line_limit, src, lineno + len(lines) + 1)
            lineno += len(lines)
            if lines:
                yield lines, True, digits
        if carry:
            yield [carry], False, _DIGIT_RUN in carry.translate(_DIGIT_TABLE)


def _too_long(limits: Any, limit: int, src: str, lineno: int) -> None:
    raise limits.exceeded(
        "max_line_bytes", f"a line longer than {limit} bytes", source=src, location=f"line {lineno}"
    )


def _slow_line(raw: bytes, lineno: int, src: str, depth_limit: int) -> Any:
    """A line the fast parse did not take, as :func:`kg_rageval.records.iter_jsonl` reads it
    (``raw`` with its newline): decoded (a BOM on line 1), blank → :data:`_BLANK`, else
    :func:`~kg_rageval.base.safe_io.loads_json` with its errors."""
    from kg_rageval.base.safe_io import loads_json

    line = decode_line(raw, lineno, src)
    if not line.strip():
        return _BLANK
    return loads_json(line.rstrip("\r\n"), source=src, location=f"line {lineno}", depth_limit=depth_limit)


_BLANK: Any = object()


def _rebase_path(
    data: str | Path, mapping: Any, out: Any, rep: Any, digest: Any, rb: Any, apply: Any
) -> None:
    """Re-base the records file ``data`` into the binary stream ``out`` (``digest``: a hash
    updated with every byte written, or None; ``rb``, ``apply``: the walk and the report booking of :mod:`kg_rageval.drift.rebase`). The same records, checks, errors and output
    bytes as :func:`rebase_records` over :func:`kg_rageval.records.iter_objects` with each
    record encoded by ``json.dumps(ensure_ascii=False)``, faster:

    * lines are read in blocks (:func:`_lines`); a block is parsed by orjson line by line in
      one C-level ``map`` and its records checked as whole columns (objects, string ids,
      distinct, not seen before) when :func:`kg_rageval.base.safe_io.fast_line` would take
      every line of it (no 20-digit run, nesting within ``max_json_depth``, not line 1) and
      every check passes; any other block is read line by line exactly as
      :func:`kg_rageval.records.iter_jsonl` and ``iter_objects`` read it (their errors, in
      line order);
    * a record the walk would not touch (:class:`_Quick`) is not walked;
    * the line of a record written unchanged is copied when it is already its record's
      encoding (:func:`_verbatim`, checked per block), else encoded."""
    from kg_rageval.base import limits
    from kg_rageval.base.safe_io import _depth_over

    p = Path(data)
    src, src_o = str(p), str(data)
    if not p.exists():
        raise InputError("no such file", source=src)
    line_limit, depth_limit = limits.get("max_line_bytes"), limits.get("max_json_depth")
    clean = _Quick(mapping).clean
    encode = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode
    loads = _orjson.loads if _orjson is not None else None
    decode_error = _orjson.JSONDecodeError if _orjson is not None else ValueError
    seen: dict[str, int] = {}
    lineno = 0
    n_records = 0
    id_key = repeat("id")
    get = dict.get

    def fast_block(lines: list[bytes], first: int) -> tuple[list[Any], list[str]] | None:
        """(records, ids) of a block every line of which the fast reader takes and every
        record of which passes the checks, else None (nothing recorded)."""
        if loads is None or first == 1:
            return None
        if max(map(len, lines)) > depth_limit:
            deep = [
                k
                for k, (a, b) in enumerate(
                    zip(map(bytes.count, lines, repeat(b"[")), map(bytes.count, lines, repeat(b"{")))
                )
                if a + b > depth_limit
            ]
        else:
            deep = []
        try:
            docs = list(map(loads, lines))
        except decode_error:
            return None
        if any(_depth_over(docs[k], depth_limit) for k in deep):
            return None
        try:
            ids: list[Any] = list(map(get, docs, id_key))
        except TypeError:  # a line that is not an object
            return None
        if set(map(type, ids)) != _STR_ONLY:
            return None
        u = set(ids)
        if len(u) != len(ids) or "" in u or not seen.keys().isdisjoint(u):
            return None
        seen.update(zip(ids, range(first, first + len(ids))))
        return docs, ids

    def slow_block(lines: list[bytes], first: int, last_nl: bool) -> tuple[list[bytes], list[Any], list[str]]:
        """The block line by line as iter_jsonl and iter_objects read it."""
        raws, docs, ids = [], [], []
        n = len(lines)
        for k, raw in enumerate(lines):
            no = first + k
            doc = _BLANK
            if no > 1 and loads is not None and _DIGIT_RUN not in raw.translate(_DIGIT_TABLE):
                try:
                    doc = loads(raw)
                except decode_error:
                    doc = _BLANK
                else:
                    if (
                        len(raw) > depth_limit
                        and raw.count(b"[") + raw.count(b"{") > depth_limit
                        and _depth_over(doc, depth_limit)
                    ):
                        doc = _BLANK
            if doc is _BLANK:
                doc = _slow_line(raw + b"\n" if k < n - 1 or last_nl else raw, no, src, depth_limit)
                if doc is _BLANK:
                    continue
            # the checks of kg_rageval.records.iter_objects, with its messages
            loc = f"line {no}"
            if not isinstance(doc, dict):
                raise InputError(
                    f"expected a JSON object, found {type(doc).__name__}", source=src_o, location=loc
                )
            rid = doc.get("id")
            if not isinstance(rid, (str, int)) or isinstance(rid, bool) or rid == "":
                raise InputError(
                    "field 'id' is missing or not a non-empty string", source=src_o, location=loc
                )
            rid = str(rid)
            if rid in seen:
                raise InputError(
                    f"duplicate record id {rid!r} (first on line {seen[rid]})", source=src_o, location=loc
                )
            seen[rid] = no
            raws.append(raw)
            docs.append(doc)
            ids.append(rid)
        return raws, docs, ids

    with collector_paused():
        for lines, last_nl, digits in _lines(p, src, line_limit):
            first = lineno + 1
            lineno += len(lines)
            got = None if digits else fast_block(lines, first)
            if got is not None:
                raws = lines
                docs, ids = got
            else:
                raws, docs, ids = slow_block(lines, first, last_nl)
                if not raws:
                    continue
            n_records += len(raws)
            changed = set()
            for i in compress(range(len(docs)), map(_not, map(clean, docs))):
                rb.touches = []
                rb.record(docs[i])
                if rb.touches and apply(docs[i], ids[i], rb.touches):
                    changed.add(i)
            if changed:
                raws = list(raws)
                for i in changed:
                    raws[i] = encode(docs[i]).encode("utf-8")
                same = [i for i in range(len(raws)) if i not in changed]
            else:
                same = list(range(len(raws)))
            for j in range(0, len(same), _CHECK):
                _settle(raws, docs, same[j : j + _CHECK], encode)
            chunk = b"\n".join(raws) + b"\n"
            out.write(chunk)
            if digest is not None:
                digest.update(chunk)
    rep.n_records = n_records


_STR_ONLY = {str}


def _not(x: Any) -> bool:
    return not x
