"""The file path of :func:`kg_rageval.drift.rebase.rebase_file` (``kg-rageval records
rebase``): the records read in blocks, the walk skipped for records it would leave untouched,
and the line of an unchanged record copied when it already is that record's encoding — the
output bytes, the report and every input error those of :func:`~kg_rageval.drift.rebase.rebase_records`
over :func:`kg_rageval.records.iter_objects` with ``json.dumps`` (``tests/drift/test_rebase_fast.py``)."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Iterator
from itertools import compress, repeat
from operator import itemgetter
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


# ---------------------------------------------------------------------- line shapes
_S = rb'"[ !#-\[\]-~]*"'  # printable ASCII but '"' and '\\': a string json.dumps writes without an escape
_SC = rb'"([ !#-\[\]-~]*)"'  # the same, captured (an id the walk would read)
_INT = rb"(?:0|-?[1-9][0-9]{0,17})"  # an integer as int.__repr__ writes it (no 20-digit run)
_HEAVY = frozenset({"gold_node", "relations", "retrieval", "answer", "reference"})
_SHAPES = 16  # shapes learnt per file at most


def _key(k: str) -> bytes | None:
    """A key's pattern: its ``json.dumps`` text when that has no escape, else None."""
    if not isinstance(k, str) or any(c in k for c in '"\\') or any(ord(c) < 32 for c in k):
        return None
    return re.escape(('"' + k + '": ').encode("utf-8"))


def _pattern(v: Any, slots: list[tuple[str, bool]], slot: tuple[str, bool] | None = None) -> bytes | None:
    """The pattern of the lines ``json.dumps(x, ensure_ascii=False)`` writes for every ``x``
    of ``v``'s shape (same keys in the same order, same list lengths, same types; strings
    of printable ASCII without an escape, integers of at most 18 digits, no float), or None. A string at
    ``slot`` is captured and ``slot`` appended to ``slots``."""
    c = v.__class__
    if c is str:
        if slot is None:
            return _S
        slots.append(slot)
        return _SC
    if c is bool:
        return rb"(?:true|false)"
    if c is int:
        return _INT
    if v is None:
        return rb"null"
    parts: list[bytes] = []
    if c is list:
        for x in v:
            p = _pattern(x, slots, slot)
            if p is None:
                return None
            parts.append(p)
        return rb"\[" + b", ".join(parts) + rb"\]"
    if c is dict:
        for k, x in v.items():
            kp = _key(k)
            p = _pattern(x, slots) if kp is not None else None
            if kp is None or p is None:
                return None
            parts.append(kp + p)
        return rb"\{" + b", ".join(parts) + rb"\}"
    return None  # a float: its spelling is not checked here


def _labels(v: dict[str, Any], slots: list[Any]) -> bytes | None:
    """The pattern of a ``labels`` object: a string under ``gold`` / ``pred`` captured (the
    walk leaves an empty one), each string of a list there captured (none may be empty, and
    the list is checked for a repeated id)."""
    parts = []
    for k, x in v.items():
        kp = _key(k)
        if kp is None:
            return None
        if k in ("gold", "pred") and x.__class__ is list:
            if any(e.__class__ is not str for e in x):
                return None
            n = len(slots)
            slots.extend((k, False, n) for _ in x)
            p: bytes | None = rb"\[" + b", ".join(_SC for _ in x) + rb"\]"
        elif k in ("gold", "pred") and x.__class__ is str:
            p = _pattern(x, slots, (k, True))
        else:
            p = _pattern(x, slots)
        if p is None:
            return None
        parts.append(kp + p)
    return rb"\{" + b", ".join(parts) + rb"\}"


def _mentions(v: dict[str, Any], slots: list[Any]) -> bytes | None:
    """The pattern of a ``mentions`` object: in each object of its ``gold`` / ``pred`` list,
    a string ``id`` (and, gold, ``nearest``) captured; the walk leaves an empty one."""
    parts = []
    for k, x in v.items():
        kp = _key(k)
        if kp is None:
            return None
        if k in ("gold", "pred") and x.__class__ is list:
            items = []
            for e in x:
                if e.__class__ is dict:
                    fs = []
                    for f, y in e.items():
                        fp = _key(f)
                        if fp is None:
                            return None
                        cap = y.__class__ is str and (f == "id" or (f == "nearest" and k == "gold"))
                        q = _pattern(y, slots, (k, True)) if cap else _pattern(y, slots)
                        if q is None:
                            return None
                        fs.append(fp + q)
                    items.append(rb"\{" + b", ".join(fs) + rb"\}")
                else:
                    q = _pattern(e, slots)
                    if q is None:
                        return None
                    items.append(q)
            p: bytes | None = rb"\[" + b", ".join(items) + rb"\]"
        else:
            p = _pattern(x, slots)
        if p is None:
            return None
        parts.append(kp + p)
    return rb"\{" + b", ".join(parts) + rb"\}"


class _Shapes:
    """Lines recognised without parsing: each learnt shape is one compiled pattern that
    matches exactly the ``json.dumps(r, ensure_ascii=False)`` texts of the records ``r`` of
    that shape (:func:`_pattern`) and captures the record id and every id :class:`_Quick`
    reads (``labels.gold`` / ``.pred``, ``mentions.gold[].id`` / ``.nearest``,
    ``mentions.pred[].id``), plus a check of those ids that is :meth:`_Quick.clean`'s answer
    for a record of the shape. A line it matches and whose ids pass is a JSON object (so
    :func:`kg_rageval.base.safe_io.fast_line` reads it as orjson does), already its record's
    encoding and untouched by the walk: it is copied without being parsed. Shapes are
    learnt from records the walk skipped; records with a section :class:`_Quick` reads
    beyond labels and mentions are never learnt (``tests/drift/test_rebase_fast.py``)."""

    def __init__(self, quick: _Quick):
        def enc(ids: frozenset[str]) -> frozenset[bytes]:
            return frozenset(map(str.encode, ids, repeat("utf-8"), repeat("surrogatepass")))

        g, p = enc(quick.safe["gold"]), enc(quick.safe["pred"])
        self.sets = {
            ("gold", False): g,
            ("gold", True): g | {b""},
            ("pred", False): p,
            ("pred", True): p | {b""},
        }
        self.shapes: list[
            tuple[Callable[[bytes], Any], Callable[[list[tuple[bytes, ...]]], set[int]], int]
        ] = []
        self.known: set[bytes] = set()

    def learn(self, r: dict[str, Any]) -> None:
        """Add the shape of record ``r`` (one :class:`_Quick` lets through)."""
        if len(self.shapes) >= _SHAPES or not _HEAVY.isdisjoint(r) or r.get("id").__class__ is not str:
            return
        slots: list[Any] = []
        parts = []
        for k, v in r.items():
            kp = _key(k)
            if kp is None:
                return
            if k == "id":
                p = _pattern(v, slots, ("id", True))
            elif k == "labels" and v.__class__ is dict:
                p = _labels(v, slots)
            elif k == "mentions" and v.__class__ is dict:
                p = _mentions(v, slots)
            else:
                p = _pattern(v, slots)
            if p is None:
                return
            parts.append(kp + p)
        pat = rb"\{" + b", ".join(parts) + rb"\}"
        if pat in self.known:
            return
        self.known.add(pat)
        self.shapes.append((re.compile(pat).fullmatch, self._check(slots), slots.index(("id", True))))

    def _check(self, slots: list[Any]) -> Callable[[list[tuple[bytes, ...]]], set[int]]:
        """``[groups] -> {the positions that fail}`` (column by column, C-level set
        operations): every captured id in its side's set (the empty string where the walk
        leaves it), each list of labels without a repeated id."""
        sets = self.sets
        cols: list[tuple[Any, Any]] = []  # (contains, take one captured id)
        lists: dict[int, list[int]] = {}
        for i, s in enumerate(slots):
            if s[0] in ("gold", "pred"):
                cols.append((sets[(s[0], s[1])], itemgetter(i)))
            if len(s) == 3:  # an element of a list of labels: (side, False, the list's first slot)
                lists.setdefault(s[2], []).append(i)
        distinct = [(itemgetter(*idx), len(idx)) for idx in lists.values() if len(idx) > 1]

        def check(gs: list[tuple[bytes, ...]]) -> set[int]:
            bad: set[int] = set()
            for within, take in cols:
                col = list(map(take, gs))
                out = set(col).difference(within)  # one C-level pass; few ids are out
                if out:
                    bad.update(compress(range(len(col)), map(out.__contains__, col)))
            for take, n in distinct:
                bad.update(compress(range(len(gs)), map(n.__ne__, map(len, map(set, map(take, gs))))))
            return bad

        return check

    def split(self, lines: list[bytes]) -> tuple[list[int], list[bytes], int]:
        """(the positions of the lines recognised and untouched, their record ids, in line
        order; how many lines had a learnt shape)."""
        todo = list(range(len(lines)))  # (a pattern matches printable ASCII only)
        got: list[tuple[int, bytes]] = []
        n = len(todo)
        for match, check, rid in self.shapes:
            if not todo:
                break
            ms = list(map(match, lines if len(todo) == len(lines) else map(lines.__getitem__, todo)))
            hit = list(map(_is_not_none, ms))
            gs = list(map(_GROUPS, compress(ms, hit)))
            keys = list(compress(todo, hit))
            bad = check(gs)
            pairs = zip(keys, map(itemgetter(rid), gs))
            got += [x for j, x in enumerate(pairs) if j not in bad] if bad else pairs
            todo = list(compress(todo, map(_not, hit)))
        if len(self.shapes) > 1:
            got.sort()
        return list(map(_FIRST, got)), list(map(_SECOND, got)), n - len(todo)


_GROUPS = re.Match.groups
_FIRST, _SECOND = itemgetter(0), itemgetter(1)


def _is_not_none(x: Any) -> bool:
    return x is not None


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


def _duplicate(data: str | Path, rid: str, loc: str, src: str) -> None:
    """Raise the error of :func:`kg_rageval.records.iter_objects` for the first duplicate
    record id of ``data`` (``rid``, on ``loc``): the file is read again by that reader, which
    names the line of the id's first record (the file path keeps the ids read, not their
    lines). Every line before it was read without an error, so the reader's first error is
    this duplicate."""
    from kg_rageval.records import iter_objects

    for _ in iter_objects(data):
        pass
    raise InputError(
        f"duplicate record id {rid!r}", source=src, location=loc
    )  # pragma: no cover - not reached


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
    quick = _Quick(mapping)
    clean = quick.clean
    shapes = _Shapes(quick) if _orjson is not None else None
    shapes_on = shapes is not None
    learning = [4 * _SHAPES]  # records whose shape is learnt, at most (one per block)
    misses = [0]  # blocks in which most lines had no learnt shape
    encode = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode
    loads = _orjson.loads if _orjson is not None else None
    decode_error = _orjson.JSONDecodeError if _orjson is not None else ValueError
    seen: set[str] = set()  # the ids read; the line of a duplicate's first one is found by re-reading
    lineno = 0
    n_records = 0
    id_key = repeat("id")
    get = dict.get

    def parsed(lines: list[bytes]) -> tuple[list[Any], list[Any]] | None:
        """(records, ids) of lines every one of which the fast reader takes as an object,
        else None."""
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
            docs = list(map(loads, lines))  # type: ignore[arg-type]  # None: no fast path
        except decode_error:
            return None
        if any(_depth_over(docs[k], depth_limit) for k in deep):
            return None
        try:
            ids: list[Any] = list(map(get, docs, id_key))
        except TypeError:  # a line that is not an object
            return None
        return docs, ids

    def fast_block(lines: list[bytes], first: int) -> tuple[list[Any], list[str]] | None:
        """(records, ids) of a block every line of which the fast reader takes and every
        record of which passes the checks, else None (nothing recorded)."""
        if loads is None or first == 1:
            return None
        got = parsed(lines)
        if got is None:
            return None
        docs, ids = got
        if set(map(type, ids)) != _STR_ONLY:
            return None
        u = set(ids)
        if len(u) != len(ids) or "" in u or not seen.isdisjoint(u):
            return None
        seen.update(u)
        return docs, ids

    def shaped_block(lines: list[bytes], first: int) -> tuple[list[Any], list[str], list[int]] | None:
        """As :func:`fast_block`, the lines :class:`_Shapes` recognises not parsed: (records,
        None for those; ids; the positions of the others), else None (nothing recorded)."""
        if loads is None or first == 1 or shapes is None:
            return None
        pos, sids, matched = shapes.split(lines)
        n = len(lines)
        if 2 * matched < n:  # most lines of other shapes: after 8 such blocks, shapes are not tried
            misses[0] += 1
            if misses[0] >= 8:
                shapes.shapes.clear()
            if not pos:
                return None
        docs: list[Any] = [None] * n
        ids: list[Any] = [None] * n
        flag = bytearray(n)
        for k in pos:
            flag[k] = 1
        others = [k for k in range(n) if not flag[k]]
        if others:
            got = parsed([lines[k] for k in others])
            if got is None:
                return None
            for k, d, i in zip(others, *got):
                docs[k] = d
                ids[k] = i
            if set(map(type, got[1])) != _STR_ONLY:
                return None
        for k, i in zip(pos, map(bytes.decode, sids)):
            ids[k] = i
        u = set(ids)
        if len(u) != n or "" in u or not seen.isdisjoint(u):
            return None
        seen.update(u)
        return docs, ids, others

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
                _duplicate(data, rid, loc, src_o)
            seen.add(rid)
            raws.append(raw)
            docs.append(doc)
            ids.append(rid)
        return raws, docs, ids

    with collector_paused():
        for lines, last_nl, digits in _lines(p, src, line_limit):
            first = lineno + 1
            lineno += len(lines)
            shaped = None if digits or not shapes_on or not shapes.shapes else shaped_block(lines, first)  # type: ignore[union-attr]
            if shaped is not None:
                raws = lines
                docs, ids, todo = shaped
            else:
                got = None if digits else fast_block(lines, first)
                if got is not None:
                    raws = lines
                    docs, ids = got
                else:
                    raws, docs, ids = slow_block(lines, first, last_nl)
                    if not raws:
                        continue
                todo = list(range(len(docs)))
            n_records += len(raws)
            changed = set()
            fine = []
            for i, ok in zip(todo, map(clean, [docs[i] for i in todo])):
                if ok:
                    fine.append(i)
                    continue
                rb.touches = []
                rb.record(docs[i])
                if rb.touches and apply(docs[i], ids[i], rb.touches):
                    changed.add(i)
            if fine and shapes_on and learning[0] and misses[0] < 8:
                learning[0] -= 1
                shapes.learn(docs[fine[0]])  # type: ignore[union-attr]
            if changed:
                raws = list(raws)
                for i in changed:
                    raws[i] = encode(docs[i]).encode("utf-8")
                same = [i for i in todo if i not in changed]
            else:
                same = list(todo)
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
