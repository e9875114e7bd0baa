"""Readers and writers for TREC qrels, TREC run files and BEIR-style qrels.

Formats (whitespace-separated; blank lines and comment lines, whose first non-blank
character is ``#``, are skipped, as trec_eval 10.0 does; ``#`` inside an id is kept):

* TREC qrels: ``query_id iteration doc_id relevance`` (exactly four columns; relevance a
  number, negative = in the pool but not judged; the iteration column is ignored).
* TREC run: ``query_id Q0 doc_id rank score run_tag [anything]`` (six or more columns, the
  rest of the line ignored, as trec_eval). The rank column is not used: the ranking comes
  from the score (descending, then doc id descending).
* BEIR qrels: a TSV with the header ``query-id<TAB>corpus-id<TAB>score``.
* ranx / ir_measures JSON: ``{query: {document: grade-or-score}}`` (:func:`load_qrels`,
  :func:`load_run` pick the format from the extension or the first bytes).

Errors name the file and line: a wrong number of columns, a non-numeric relevance, rank or
score, a document judged twice for one query, or a run listing a document twice for a query
(unless ``dedupe=True``, which keeps the first line and counts the rest in
``Run.duplicates``). Files are read in chunks with vectorised column conversion; gzip files
(``.gz``) are read transparently, their decompressed size bounded by the ``max_gz_bytes`` limit.
JSON qrels/runs are parsed whole: a file larger than ``max_doc_bytes`` is refused (use the TREC
format).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.base.redact import excerpt
from kg_rageval.base.safe_io import KeptRows, loads_json, open_binary, read_document
from kg_rageval.families.retrieval.runs import LazyVocab, Qrels, Run, Vocab, _csr

CHUNK_BYTES = 1 << 26
GZ_CHUNK_BYTES = 1 << 23
"""Blocks of a ``.gz`` file are smaller: parsing a block of short lines takes about 20 times
its size for a moment, and a gzip bomb must not reach that with 64 MiB blocks."""
ROW_BYTES = 48
"""Memory charged per row read from a ``.gz`` qrels or run (:class:`~kg_rageval.base.safe_io.KeptRows`):
the document code and value kept (16 bytes) and the grouping, duplicate check and ranking
arrays built from them afterwards."""
GROUP_BYTES = 128
"""Memory charged per query group (a Python list of the query id and its row count)."""
MAX_GRADE = 2**31 - 1
"""Largest relevance grade accepted (in absolute value): trec_eval and ranx read grades as
integers; a larger one is not a judgement, and its gain overflows nDCG and ERR."""
NUMBA_MIN_BYTES = 1 << 20
"""Blocks of at least this many bytes are tokenized by the compiled kernel when numba is present."""
PLAIN_BLOCK_BYTES = 1 << 22
"""Blocks of the numpy TREC reader (:func:`_read_plain`): its arrays of one block (about ten
bytes per byte of the block, for a moment) stay small next to the columns kept."""
COMPILED_PAIR_MIN_BYTES = 64 << 20
"""The TREC files scored together (the qrels and the runs, :func:`compiled_pays`) go to the
compiled reader from this many bytes on: below, importing numba and loading its kernels (about
0.4 s CPU and 90 MB) costs more than the numpy reader spends on them."""
GZ_SIZE_FACTOR = 4
"""A ``.gz`` file counts as this many times its size on disk in :func:`compiled_pays`."""
_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True
_TAB = np.zeros(256, dtype=bool)
_TAB[[9, 10, 13]] = True


def _blocks(path: Path, skip_header: bool = False, size: int | None = None) -> Iterator[tuple[int, bytes]]:
    """``(first line number, bytes)``: blocks of whole lines, read in binary (``size`` bytes
    at a time, by default :data:`CHUNK_BYTES`, :data:`GZ_CHUNK_BYTES` for a ``.gz``)."""
    if not path.exists():
        raise InputError("no such file", source=str(path))
    lineno = 1
    rest = b""
    if size is None:
        size = GZ_CHUNK_BYTES if path.suffix == ".gz" else CHUNK_BYTES
    elif path.suffix == ".gz":
        size = min(size, GZ_CHUNK_BYTES)
    with open_binary(path, kept=True) as fh:
        if skip_header:
            fh.readline()
            lineno = 2
        while True:
            block = fh.read(size)
            if not block:
                break
            block = rest + block
            cut = block.rfind(b"\n")
            if cut < 0:
                rest = block
                continue
            rest = block[cut + 1 :]
            body = block[: cut + 1]
            yield lineno, body
            lineno += body.count(b"\n")
        if rest:
            yield lineno, rest


def _line_text(data: bytes, line: int) -> str:
    lines = data.split(b"\n")
    return lines[line].decode("utf-8", "replace").strip() if line < len(lines) else ""


def _blank_comments(data: bytes, compiled: bool = True) -> bytes:
    """``data`` with every comment line (first non-blank character ``#``, as trec_eval 10.0
    skips them) overwritten by spaces, so line numbers stay right. Vectorised: only the
    ``#`` bytes are inspected (document ids may contain ``#`` mid-line). ``compiled=False``:
    never the compiled kernel (numba is not imported)."""
    if b"#" not in data:
        return data
    raw = np.frombuffer(data, dtype=np.uint8)
    from kg_rageval.families.retrieval import _kernels

    if compiled and _kernels.HAVE_NUMBA and len(raw) >= NUMBA_MIN_BYTES:
        return _kernels.blank_comments(raw).tobytes()
    hs = np.flatnonzero(raw == 35)
    nl = np.flatnonzero(raw == 10)
    line_start = np.concatenate(([0], nl + 1))[np.searchsorted(nl, hs)]
    body = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum(raw > 32, out=body[1:])
    lead = body[hs] == body[line_start]  # a '#' with only blanks before it on its line
    if not lead.any():
        return data
    starts = line_start[lead]  # sorted (as the '#' are): drop repeats without np.unique,
    starts = starts[np.concatenate(([True], starts[1:] != starts[:-1]))]  # 10 s on 2M of them
    ends = np.concatenate((nl, [len(raw)]))[np.searchsorted(nl, starts)]
    # +1 at each comment line's start, -1 at its end (np.add.at took minutes on a block of
    # comment lines: bincount is one pass)
    mark = np.bincount(starts, minlength=len(raw) + 1) - np.bincount(ends, minlength=len(raw) + 1)
    out = raw.copy()
    out[np.cumsum(mark[:-1]) > 0] = 32
    return out.tobytes()


def _tokenize(
    path: Path,
    start: int,
    data: bytes,
    ncol: int,
    what: str,
    sep: np.ndarray,
    extra_ok: bool = False,
    compiled: bool = True,
):
    """Vectorised split of a block into ``ncol`` columns without creating a Python object
    per token: returns (token start offsets per column, end offsets per column, line index
    of each row within the block, the padded byte buffer). Blank lines are skipped; any
    other line must have exactly ``ncol`` fields (at least ``ncol`` with ``extra_ok``, the
    rest of the line ignored, as trec_eval reads runs), else the error names it.
    ``compiled=False``: never the compiled kernel."""
    raw = np.frombuffer(data, dtype=np.uint8)
    from kg_rageval.families.retrieval import _kernels

    if compiled and _kernels.HAVE_NUMBA and len(raw) >= NUMBA_MIN_BYTES:
        starts, ends, rows_line, bad, cnt = _kernels.tokenize(raw, sep is _WS, ncol)
        if bad < 0:
            width = int((ends - starts).max()) if len(starts) else 1
            buf = np.concatenate((raw, np.zeros(width, dtype=np.uint8)))
            return (
                [starts[j::ncol] for j in range(ncol)],
                [ends[j::ncol] for j in range(ncol)],
                rows_line,
                buf,
            )
        if not (extra_ok and cnt > ncol):
            least = "at least " if extra_ok else ""
            raise InputError(
                f"expected {least}{ncol} columns ({what}), found {cnt}: {excerpt(_line_text(data, bad))}",
                source=str(path),
                location=f"line {start + bad}",
            )
        # lines with trailing columns: the numpy path below keeps the first ncol fields
    padded = np.empty(len(raw) + 2, dtype=np.uint8)
    padded[0] = padded[-1] = 10
    padded[1:-1] = raw
    if sep is _WS:  # whitespace and control characters separate; ids never contain them
        body = padded > 32
    else:
        body = (padded != 9) & (padded != 10) & (padded != 13)
    edges = np.flatnonzero(body[1:] != body[:-1])
    starts, ends = edges[0::2], edges[1::2]
    nl = np.flatnonzero(raw == 10)
    # tokens before each line end -> tokens per line (one searchsorted per line, not per token)
    upto = np.searchsorted(starts, np.concatenate((nl, [len(raw)])))
    counts = np.diff(np.concatenate(([0], upto)))
    bad = np.flatnonzero((counts != 0) & ((counts < ncol) if extra_ok else (counts != ncol)))
    if bad.size:
        ln = int(bad[0])
        least = "at least " if extra_ok else ""
        raise InputError(
            f"expected {least}{ncol} columns ({what}), found {int(counts[ln])}: {excerpt(_line_text(data, ln))}",
            source=str(path),
            location=f"line {start + ln}",
        )
    if extra_ok and (counts > ncol).any():  # keep the first ncol tokens of every line
        first = np.repeat(np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
        keep = (np.arange(len(starts)) - first) < ncol
        starts, ends = starts[keep], ends[keep]
        counts = np.minimum(counts, ncol)
    width = int((ends - starts).max()) if len(starts) else 1
    buf = np.concatenate((raw, np.zeros(width, dtype=np.uint8)))
    return (
        [starts[j::ncol] for j in range(ncol)],
        [ends[j::ncol] for j in range(ncol)],
        np.flatnonzero(counts),
        buf,
    )


def _fixed(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Tokens as a fixed-width bytes array (``S<w>``): rows of a strided view of the (padded)
    buffer, bytes past each token's end zeroed."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype="S1")
    lens = ends - starts
    w = int(lens.max())
    view = np.lib.stride_tricks.as_strided(buf, shape=(len(buf) - w + 1, w), strides=(1, 1), writeable=False)
    mat = view[starts]
    if (lens != w).any():  # zero the bytes past each token's end (a product: no index arrays)
        mat *= np.arange(w, dtype=lens.dtype)[None, :] < lens[:, None]
    return mat.view(f"S{w}").ravel()


def _to_float(path: Path, start: int, arr: np.ndarray, rows_line: np.ndarray, what: str) -> np.ndarray:
    """The column as floats; a value that is not a number, or not finite (``nan``, ``inf``:
    not a measurement), raises naming the file, line and column."""
    try:
        out = arr.astype(np.float64)
    except ValueError:
        pass
    else:
        bad = np.flatnonzero(~np.isfinite(out))
        if bad.size:
            i = int(bad[0])
            raise InputError(
                f"{what} is not a finite number: {arr[i].decode('utf-8', 'replace')!r}",
                source=str(path),
                location=f"line {start + int(rows_line[i])}",
            )
        return out
    for i, v in enumerate(arr.tolist()):
        try:
            float(v)
        except ValueError:
            raise InputError(
                f"{what} is not a number: {v.decode('utf-8', 'replace')!r}",
                source=str(path),
                location=f"line {start + int(rows_line[i])}",
            ) from None
    raise InputError(f"unreadable {what} column", source=str(path))  # pragma: no cover


def _line_of_row(path: Path, row: int, skip_header: bool = False) -> int:
    """Line number of the ``row``-th (0-based) data line: rescans the file (error path only)."""
    seen = -1
    with open_binary(path, kept=True) as fh:
        for lineno, ln in enumerate(fh, start=1):
            if skip_header and lineno == 1:
                continue
            if ln.strip() and not ln.lstrip().startswith(b"#"):
                seen += 1
                if seen == row:
                    return lineno
    return -1  # pragma: no cover


def _group(groups: list[list]):
    """Query grouping in first-seen order: (qids, ptr, permutation or None, row codes). Files
    usually list each query's lines together (one group per query); otherwise rows are
    stably sorted by query."""
    lens = np.fromiter((n for _, n in groups), dtype=np.int64, count=len(groups))
    names = [k for k, _ in groups]
    if len(set(names)) == len(names):
        qcode = np.repeat(np.arange(len(groups), dtype=np.int64), lens)
        return names, _csr(lens), None, qcode  # already grouped: identity permutation
    qv = Vocab()
    gcode = qv.codes(names)
    qcode = np.repeat(gcode, lens)
    perm = np.argsort(qcode, kind="stable")
    ptr = _csr(np.bincount(qcode, minlength=len(qv)))
    return qv.strings, ptr, perm, qcode


def _read_pairs(
    path,
    ncol,
    q_i,
    d_i,
    what,
    numeric_cols,
    sep=None,
    skip_header=False,
    vocab=None,
    extra_ok=False,
):
    """Columns of a whitespace (or tab) separated table, block by block, vectorised: query
    groups ``[[qid, n]]`` in file order (adjacent equal ids merged), document codes in
    ``vocab`` (int64), numeric columns as float arrays. With numba, document ids are hashed
    and query changes detected in one compiled pass; only distinct ids become Python strings
    (BEIR qrels; TREC qrels and runs have their own readers, :func:`_read_compiled` and
    :func:`_read_plain`)."""
    from kg_rageval.families.retrieval import _kernels

    path = Path(path)
    vocab = vocab if vocab is not None else Vocab()
    sepmask = _WS if sep is None else _TAB
    groups: list[list] = []
    doc_parts: list[np.ndarray] = []
    nums: dict[int, list[np.ndarray]] = {c: [] for c, _ in numeric_cols}
    kept = KeptRows(path, ROW_BYTES)  # a .gz input: refused once its rows pass the memory limit
    for start, data in _blocks(path, skip_header=skip_header):
        data = _blank_comments(data)
        if not data.strip():  # blank and comment lines only (C speed: a bomb of them is cheap)
            continue
        st, en, rows_line, buf = _tokenize(path, start, data, ncol, what, sepmask, extra_ok)
        nrow = len(rows_line)
        if nrow == 0:
            continue
        for c, name in numeric_cols:
            if _kernels.HAVE_NUMBA and len(data) >= NUMBA_MIN_BYTES:
                vals, ok = _kernels.parse_floats(buf, st[c], en[c])
                if not ok.all():
                    bad = np.flatnonzero(~ok)
                    vals[bad] = _to_float(
                        path, start, _fixed(buf, st[c][bad], en[c][bad]), rows_line[bad], name
                    )
                nums[c].append(vals)
            else:
                nums[c].append(_to_float(path, start, _fixed(buf, st[c], en[c]), rows_line, name))
        if _kernels.HAVE_NUMBA and len(data) >= NUMBA_MIN_BYTES:
            dhash, qnew = _kernels.row_keys(buf, st[q_i], en[q_i], st[d_i], en[d_i])
            heads = np.flatnonzero(qnew)
            names = [
                data[s_:e_].decode("utf-8")
                for s_, e_ in zip(st[q_i][heads].tolist(), en[q_i][heads].tolist())
            ]
            counts = np.diff(np.concatenate((heads, [nrow]))).tolist()
            local, first, arena = _kernels.intern_rows(buf, st[d_i], en[d_i], dhash)
            distinct = arena.tobytes().decode("utf-8").split("\n")[: len(first)]
            doc_parts.append(vocab.codes_distinct(distinct)[local])
        else:
            q = _fixed(buf, st[q_i], en[q_i])
            cut = np.flatnonzero(q[1:] != q[:-1]) + 1
            bounds = np.concatenate(([0], cut, [len(q)]))
            names = [x.decode("utf-8") for x in q[bounds[:-1]].tolist()]
            counts = np.diff(bounds).tolist()
            doc_parts.append(vocab.codes_array(_fixed(buf, st[d_i], en[d_i])))
        before, known = len(groups), len(vocab)
        _add_groups(groups, names, counts)
        kept.charge(nrow, (len(groups) - before) * GROUP_BYTES + (len(vocab) - known) * GROUP_BYTES)
    num = {c: (np.concatenate(v) if v else np.zeros(0)) for c, v in nums.items()}
    docs = np.concatenate(doc_parts) if doc_parts else np.zeros(0, dtype=np.int64)
    return groups, docs, num


def _add_groups(groups: list[list], names: list[str], counts: list[int]) -> None:
    for k, cnt in zip(names, counts):
        if groups and groups[-1][0] == k:
            groups[-1][1] += cnt
        else:
            groups.append([k, cnt])


def _duplicates(
    path: Path,
    qcode: np.ndarray,
    docs: np.ndarray,
    V: int,
    what: str,
    dedupe: bool,
    skip_header: bool = False,
    compiled: bool = True,
):
    """Rows repeating a (query, doc) pair: error naming both lines, or a keep-mask
    (``compiled=False``: by numpy, numba not imported)."""
    from kg_rageval.families.retrieval import _kernels

    keep = np.ones(len(docs), dtype=bool)
    if (
        compiled
        and _kernels.HAVE_NUMBA
        and len(docs) >= 100_000
        and (len(qcode) < 2 or (qcode[1:] >= qcode[:-1]).all())
    ):
        found = bool(_kernels.later_duplicates(qcode, docs, max(V, 1)).any())
    else:
        sk = qcode * max(V, 1)  # one key array, summed and sorted in place
        sk += docs
        sk.sort()
        found = bool(len(sk) and (sk[1:] == sk[:-1]).any())
        del sk
    if found:
        key = qcode * max(V, 1) + docs
        order = np.argsort(key, kind="stable")
        sk = key[order]
        same = np.flatnonzero(sk[1:] == sk[:-1]) + 1
        if not dedupe:
            j = order[same[0]]
            first = order[np.searchsorted(sk, sk[same[0]])]
            raise InputError(
                f"{what} (first on line {_line_of_row(path, int(first), skip_header)}); k counts unique "
                "document ids (pass dedupe=True to keep the first occurrence)",
                source=str(path),
                location=f"line {_line_of_row(path, int(j), skip_header)}",
            )
        keep[order[same]] = False
    return keep


def read_qrels(path: str | Path, *, vocab: Vocab | None = None, compiled: bool | None = None) -> Qrels:
    """A TREC qrels file (``qid iter docid rel``) as :class:`Qrels`. ``compiled``: the fused
    compiled reader (``True``, when numba is installed), the numpy reader (``False``: numba is
    not imported), or by the file's size (``None``, from :data:`NUMBA_MIN_BYTES`)."""
    return _qrels_from(path, 4, 0, 2, 3, vocab=vocab, compiled=compiled)


def read_beir_qrels(path: str | Path, *, vocab: Vocab | None = None) -> Qrels:
    """A BEIR qrels TSV (header ``query-id corpus-id score``) as :class:`Qrels`."""
    p = Path(path)
    with open_binary(p) as fh:
        header = fh.readline().decode("utf-8").rstrip("\r\n").split("\t")
    if [h.strip() for h in header] != ["query-id", "corpus-id", "score"]:
        raise InputError(
            f"expected the BEIR header 'query-id<TAB>corpus-id<TAB>score', found {header!r}",
            source=str(p),
            location="line 1",
        )
    return _qrels_from(p, 3, 0, 1, 2, vocab=vocab, sep="\t", skip_header=True)


def _qrels_from(
    path, ncol, q_i, d_i, g_i, *, vocab=None, sep=None, skip_header=False, compiled=None
) -> Qrels:
    path = Path(path)
    trec = ncol == 4 and sep is None and not skip_header
    fused = trec and _compiled_ok(path, vocab, compiled)
    if fused:
        groups, docs, grades, vocab = _read_compiled(path, "qrels", vocab)
    elif trec:
        groups, docs, grades, vocab = _read_plain(path, "qrels", vocab)
    else:
        vocab = vocab if vocab is not None else Vocab()
        groups, docs, num = _read_pairs(
            path,
            ncol,
            q_i,
            d_i,
            "query-id, corpus-id, score",
            [(g_i, "relevance")],
            sep,
            skip_header,
            vocab,
        )
        grades = num[g_i]
    big = np.flatnonzero(np.abs(grades) > MAX_GRADE)
    if big.size:
        i = int(big[0])
        raise InputError(
            f"relevance {float(grades[i]):.6g} is beyond ±{MAX_GRADE} (grades are small integers)",
            source=str(path),
            location=f"line {_line_of_row(path, i, skip_header)}",
        )
    qids, ptr, perm, qcode = _group(groups)
    _duplicates(
        path, qcode, docs, len(vocab), "document judged twice for one query", False, skip_header, fused
    )
    # within each query: ascending doc code
    order = np.lexsort((docs, qcode))
    return Qrels(list(qids), ptr, docs[order], grades[order], vocab)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # the reader names the file
        return 0


def compiled_pays(paths: Iterable[str | Path]) -> bool:
    """Whether the TREC files scored together (a qrels file and its runs) should all be read by
    the fused compiled reader (``compiled=True`` of :func:`load_qrels` and :func:`load_run`, so
    that the runs continue the qrels' document table): numba installed, and numba already
    imported or the files' total size (a ``.gz`` counted :data:`GZ_SIZE_FACTOR` times) at least
    :data:`COMPILED_PAIR_MIN_BYTES`. Otherwise the numpy reader reads them and numba is not
    imported."""
    import sys

    from kg_rageval.families.retrieval import _kernels

    if not _kernels.HAVE_NUMBA:
        return False
    if "numba" in sys.modules:
        return True
    total = 0
    for p in map(Path, paths):
        total += _size(p) * (GZ_SIZE_FACTOR if p.suffix == ".gz" else 1)
    return total >= COMPILED_PAIR_MIN_BYTES


_LAYOUT = {
    # ncol, query, document, value field; exactly ncol fields; the columns named in errors; value name
    "run": (6, 0, 2, 4, False, "query, Q0, document, rank, score, tag", "score"),
    "qrels": (4, 0, 2, 3, True, "query, iteration, document, relevance", "relevance"),
}


def _compiled_ok(path: Path, vocab: Vocab | None, compiled: bool | None = None) -> bool:
    """Whether the fused compiled reader reads this file: numba installed, ``compiled`` not
    ``False`` (``None``: a file of :data:`NUMBA_MIN_BYTES` or more; below, importing numba costs
    more than it saves), and no vocabulary or one that carries a compiled table
    (:class:`~.runs.LazyVocab`)."""
    from kg_rageval.families.retrieval import _kernels

    if compiled is False or not _kernels.HAVE_NUMBA:
        return False
    if vocab is not None and not (isinstance(vocab, LazyVocab) and vocab.table is not None):
        return False
    return compiled is True or _size(path) >= NUMBA_MIN_BYTES


def _simple_split(
    raw: np.ndarray, ncol: int, cols: tuple[int, ...]
) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """The fields ``cols`` of a block (ending in a newline) whose every line is exactly ``ncol``
    fields separated by one whitespace byte, nothing before the first or after the last: (starts,
    ends) per field; ``None`` for any other block (blank lines, runs of whitespace, ``\r\n``,
    other field counts: the general tokenizer reads it). One pass finds the separators; the
    checks are on them only."""
    sep = np.flatnonzero(raw <= 32)
    n = len(sep) // ncol
    if n == 0 or len(sep) != n * ncol or sep[0] == 0:
        return None
    ends = sep.reshape(n, ncol)
    # each row of separators ends at a newline and holds no other: then rows are lines
    if not (raw[ends[:, -1]] == 10).all() or int(np.count_nonzero(raw == 10)) != n:
        return None
    if not (np.diff(sep) > 1).all():  # no empty field, no line starting with whitespace
        return None
    out = []
    for j in cols:
        if j == 0:
            st = np.empty(n, dtype=sep.dtype)
            st[0] = 0
            st[1:] = ends[:-1, -1] + 1
        else:
            st = ends[:, j - 1] + 1
        out.append((st, np.ascontiguousarray(ends[:, j])))
    return out


def _read_plain(path: Path, kind: str = "run", vocab: Vocab | None = None):
    """A run or TREC qrels file read by numpy alone (numba is not imported), in blocks of
    :data:`PLAIN_BLOCK_BYTES`: a block of plain lines (:func:`_simple_split`) is split from its
    separators alone, any other by :func:`_tokenize` (comments, blank lines, extra run
    columns, and the errors); values by numpy's float parser (:func:`_to_float`); the document
    ids are kept as fixed-width bytes and coded once for the file (:func:`~.runs.code_ids`:
    first-seen codes, the ids of ``vocab`` keeping theirs), as the fused reader codes them.
    Returns (query groups, document codes, values, the vocabulary)."""
    from kg_rageval.families.retrieval.runs import code_ids, id_keys

    ncol, q_i, d_i, v_i, exact, what, value = _LAYOUT[kind]
    groups: list[list] = []
    doc_parts: list[np.ndarray] = []
    val_parts: list[np.ndarray] = []
    kept = KeptRows(path, ROW_BYTES)  # a .gz input: refused once its rows pass the memory limit
    for start, data in _blocks(path, size=PLAIN_BLOCK_BYTES):
        if not data.endswith(b"\n"):
            data += b"\n"  # the last line
        raw = np.frombuffer(data, dtype=np.uint8)
        split = None if b"#" in data else _simple_split(raw, ncol, (q_i, d_i, v_i))
        if split is not None:
            cols = split
            rows_line = None
            width = max(int((e - s).max()) for s, e in cols)
            buf = np.concatenate((raw, np.zeros(width, dtype=np.uint8)))
        else:
            data = _blank_comments(data, compiled=False)
            if not data.strip():  # blank and comment lines only
                continue
            sts, ens, rows_line, buf = _tokenize(
                path, start, data, ncol, what, _WS, not exact, compiled=False
            )
            cols = [(sts[j], ens[j]) for j in (q_i, d_i, v_i)]
        (qs, qe), (ds, de), (vs, ve) = cols
        nrow = len(qs)
        if nrow == 0:
            continue
        if rows_line is None:
            rows_line = np.arange(nrow)
        val_parts.append(_to_float(path, start, _fixed(buf, vs, ve), rows_line, value))
        q = _fixed(buf, qs, qe)
        bounds = np.concatenate(([0], np.flatnonzero(q[1:] != q[:-1]) + 1, [nrow]))
        names = [x.decode("utf-8") for x in q[bounds[:-1]].tolist()]
        del q
        keys = id_keys(_fixed(buf, ds, de))
        doc_parts.append(keys)
        before = len(groups)
        _add_groups(groups, names, np.diff(bounds).tolist())
        kept.charge(nrow, (len(groups) - before) * GROUP_BYTES + nrow * keys.dtype.itemsize)
        del raw, buf, data, cols
    vals = np.concatenate(val_parts) if val_parts else np.zeros(0)
    del val_parts
    codes, vocab = code_ids(doc_parts, vocab)
    return groups, codes, vals, vocab


def _read_compiled(path: Path, kind: str = "run", vocab: LazyVocab | None = None):
    """A run or TREC qrels file read by the fused compiled reader
    (:func:`~._run_kernels.read_run_block`): one pass per block tokenizes, parses the score or
    grade, detects query changes and interns the document into one table shared by the blocks
    (first-seen codes across the file, bytes compared on every hash match), so no token offset
    arrays and no per-block vocabularies are built. ``vocab``: a :class:`~.runs.LazyVocab` whose
    table is continued (its ids keep their codes; the new ones are numbered on), else a new
    one. Returns (query groups, document codes, values, the vocabulary)."""
    from kg_rageval.families.retrieval import _run_kernels

    ncol, q_i, d_i, v_i, exact, what, value = _LAYOUT[kind]
    columns = f"{'' if exact else 'at least '}{ncol} columns ({what})"
    table = vocab.table if vocab is not None else None
    state = _run_kernels.new_run_state(table=table)
    table = state["table"]
    groups: list[list] = []
    kept = KeptRows(path, ROW_BYTES)  # a .gz input: refused once its rows pass the memory limit
    disk = 0 if path.suffix == ".gz" else _size(path)
    data, raw = b"", None
    for start, data in _blocks(path):
        data = _blank_comments(data)
        raw = np.frombuffer(data, dtype=np.uint8)
        m0, r0 = table["m"], state["rows"]
        a0 = int(table["a_start"][m0])
        nlines = data.count(b"\n") + 1
        if r0 == 0 and disk:  # reserve the file's rows, guessed from this block, at once
            state["expect"] = int(disk / max(len(data), 1) * nlines * 1.1) + 1024
        heads, hs, he, bf_row, bf_line, bf_s, bf_e, bad, cnt = _run_kernels.read_run_block(
            raw, nlines, state, ncol, q_i, d_i, v_i, exact
        )
        if bad >= 0:
            raise InputError(
                f"expected {columns}, found {cnt}: {excerpt(_line_text(data, bad))}",
                source=str(path),
                location=f"line {start + bad}",
            )
        r = state["rows"]
        if r == r0:
            continue
        if len(bf_row):  # numbers outside the compiled fast path (exponents, long mantissas)
            buf = np.concatenate((raw, np.zeros(int((bf_e - bf_s).max()), dtype=np.uint8)))
            state["vals"][bf_row] = _to_float(path, start, _fixed(buf, bf_s, bf_e), bf_line, value)
        names = [data[s_:e_].decode("utf-8") for s_, e_ in zip(hs.tolist(), he.tolist())]
        counts = np.diff(np.concatenate((heads, [r]))).tolist()
        before = len(groups)
        _add_groups(groups, names, counts)
        m = table["m"]
        new_bytes = int(table["a_start"][m]) - a0 + 16 * (m - m0)
        kept.charge(r - r0, (len(groups) - before) * GROUP_BYTES + new_bytes)
    del data, raw  # the last block
    r = state["rows"]
    # views of the reserved columns: the pages past row r were never touched
    docs, vals = state["codes"][:r], state["vals"][:r]
    if vocab is None:
        vocab = LazyVocab(table=table)
    else:
        vocab._rank_key = None  # it grew
    return groups, docs, vals, vocab


def read_run(
    path: str | Path, *, vocab: Vocab | None = None, dedupe: bool = False, compiled: bool | None = None
) -> Run:
    """A TREC run file (``qid Q0 docid rank score tag``) as a :class:`Run` ranked in trec_eval's
    order. ``vocab``: intern documents into this vocabulary (e.g. the qrels'). ``compiled``: as
    in :func:`read_qrels` (``None``: the fused compiled reader from :data:`NUMBA_MIN_BYTES`,
    where importing numba pays; ``False``: numpy alone, numba not imported)."""
    from kg_rageval.families.retrieval import _run_kernels
    from kg_rageval.families.retrieval.runs import trec_order

    path = Path(path)
    fused = _compiled_ok(path, vocab, compiled)
    if fused:
        groups, docs, scores, vocab = _read_compiled(path, "run", vocab)  # type: ignore[arg-type]
    else:
        groups, docs, scores, vocab = _read_plain(path, "run", vocab)
    qids, ptr, perm, qcode = _group(groups)
    keep = _duplicates(
        path, qcode, docs, len(vocab), "run lists a document twice for one query", dedupe, compiled=fused
    )
    dup = np.zeros(len(qids), dtype=np.int64)
    if not keep.all():
        dup = np.bincount(qcode[~keep], minlength=len(qids)).astype(np.int64)
        qcode, docs, scores = qcode[keep], docs[keep], scores[keep]
        perm = np.argsort(qcode, kind="stable")
        ptr = _csr(np.bincount(qcode, minlength=len(qids)))
    del qcode
    if perm is not None:
        docs, scores = docs[perm], scores[perm]
    if fused:  # trec_eval's order by one compiled pass (ids compared as bytes)
        assert isinstance(vocab, LazyVocab) and vocab.table is not None
        _run_kernels.trec_rank(ptr, scores, docs, vocab.a_start, vocab.arena)  # in place: both are ours
    elif len(docs):
        order = trec_order(ptr, scores, docs, vocab, compiled=False)
        if order is not None:
            docs, scores = docs[order], scores[order]
    return Run(list(qids), ptr, docs, scores, vocab, dup)


def write_qrels(path: str | Path, qrels: Qrels) -> None:
    """TREC qrels (iteration column 0; grades written as integers when they are)."""
    s = qrels.vocab.strings
    with open(path, "w", encoding="utf-8") as fh:
        for i, q in enumerate(qrels.qids):
            a, b = int(qrels.ptr[i]), int(qrels.ptr[i + 1])
            for d, g in zip(qrels.docs[a:b].tolist(), qrels.grades[a:b].tolist()):
                fh.write(f"{q} 0 {s[d]} {_num(g)}\n")


def write_beir_qrels(path: str | Path, qrels: Qrels) -> None:
    s = qrels.vocab.strings
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for i, q in enumerate(qrels.qids):
            a, b = int(qrels.ptr[i]), int(qrels.ptr[i + 1])
            for d, g in zip(qrels.docs[a:b].tolist(), qrels.grades[a:b].tolist()):
                fh.write(f"{q}\t{s[d]}\t{_num(g)}\n")


def write_run(path: str | Path, run: Run, *, tag: str = "kg-rageval") -> None:
    """TREC run in ranked order; a run without scores gets scores n..1 (rank order kept)."""
    s = run.vocab.strings
    with open(path, "w", encoding="utf-8") as fh:
        for i, q in enumerate(run.qids):
            a, b = int(run.ptr[i]), int(run.ptr[i + 1])
            docs = run.docs[a:b].tolist()
            sc = run.scores[a:b].tolist() if run.scores is not None else list(range(b - a, 0, -1))
            for r, (d, v) in enumerate(zip(docs, sc), start=1):
                fh.write(f"{q} Q0 {s[d]} {r} {v!r} {tag}\n")


def _num(g: float) -> str:
    return str(int(g)) if float(g).is_integer() else repr(float(g))


# ------------------------------------------------------------------ JSON and format detection

FORMATS = ("auto", "trec", "beir", "json")


def _read_json(path: Path, what: str) -> dict:
    if not path.exists():
        raise InputError("no such file", source=str(path))
    raw = read_document(path, found=f"the {what} JSON (use the TREC format for large files)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=str(path)) from None
    del raw
    # the bounded reader: NaN/Infinity and over-long integers name their field, deep nesting is
    # the max_json_depth limit (never a RecursionError)
    data = loads_json(text, source=str(path))
    if not isinstance(data, dict):
        raise InputError(
            f"expected a JSON object {{query: {{document: {what}}}}} (ranx / ir_measures), "
            f"found {type(data).__name__}",
            source=str(path),
        )
    for q, docs in data.items():
        if not isinstance(docs, dict):
            raise InputError(
                f"query {q!r}: expected an object {{document: {what}}}, found {type(docs).__name__}",
                source=str(path),
            )
        for d, v in docs.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise InputError(
                    f"query {q!r}, document {d!r}: {what} must be a number, found {v!r}", source=str(path)
                )
            if not math.isfinite(v):  # 1e999 parses as inf; the TREC reader refuses it too
                raise InputError(
                    f"query {q!r}, document {d!r}: {what} is not a finite number: {v!r}", source=str(path)
                )
            if what == "relevance" and abs(v) > MAX_GRADE:
                raise InputError(
                    f"query {q!r}, document {d!r}: relevance {v!r} is beyond ±{MAX_GRADE} "
                    "(grades are small integers)",
                    source=str(path),
                )
    return data


def read_json_qrels(path: str | Path, *, vocab: Vocab | None = None) -> Qrels:
    """ranx / ir_measures JSON qrels ``{query: {document: grade}}`` (``.json`` or ``.json.gz``)."""
    return Qrels.from_dict(_read_json(Path(path), "relevance"), vocab=vocab)


def read_json_run(path: str | Path, *, vocab: Vocab | None = None) -> Run:
    """ranx / ir_measures JSON run ``{query: {document: score}}``, ranked in trec_eval's order."""
    return Run.from_dict(_read_json(Path(path), "score"), vocab=vocab)


def _sniff(path: Path) -> str:
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    if name.endswith(".json"):
        return "json"
    if not path.exists():
        raise InputError("no such file", source=str(path))
    with open_binary(path) as fh:
        head = fh.read(4096)
    first = head.lstrip()[:1]
    if first == b"{":
        return "json"
    line = head.split(b"\n", 1)[0].rstrip(b"\r")
    if line.split(b"\t")[:2] == [b"query-id", b"corpus-id"]:
        return "beir"
    return "trec"


def load_qrels(
    path: str | Path, *, format: str = "auto", vocab: Vocab | None = None, compiled: bool | None = None
) -> Qrels:
    """Qrels in any supported format: TREC (``qid iter doc rel``, ``#`` comments), BEIR TSV
    (header ``query-id corpus-id score``) or ranx/ir_measures JSON; ``auto`` decides from the
    extension (``.json``), then the first bytes (``{`` or the BEIR header). ``compiled``: the
    TREC reader's choice (:func:`read_qrels`; see :func:`compiled_pays`)."""
    p = Path(path)
    fmt = _sniff(p) if format == "auto" else format
    if fmt == "trec":
        return read_qrels(p, vocab=vocab, compiled=compiled)
    if fmt == "beir":
        return read_beir_qrels(p, vocab=vocab)
    if fmt == "json":
        return read_json_qrels(p, vocab=vocab)
    raise ValueError(f"qrels format must be one of {FORMATS}, got {format!r}")


def load_run(
    path: str | Path,
    *,
    format: str = "auto",
    vocab: Vocab | None = None,
    dedupe: bool = False,
    compiled: bool | None = None,
) -> Run:
    """A run in TREC format (six or more columns, ``#`` comments) or ranx/ir_measures JSON
    (``compiled``: the TREC reader's choice, :func:`read_run`)."""
    p = Path(path)
    fmt = _sniff(p) if format == "auto" else format
    if fmt in ("trec", "beir"):
        return read_run(p, vocab=vocab, dedupe=dedupe, compiled=compiled)
    if fmt == "json":
        return read_json_run(p, vocab=vocab)
    raise ValueError(f"run format must be one of {FORMATS}, got {format!r}")


def run_tag(path: str | Path) -> str | None:
    """The run tag (sixth column) of a TREC run's first data line, else ``None``."""
    p = Path(path)
    if _sniff(p) != "trec":
        return None
    with open_binary(p) as fh:
        for ln in fh:
            parts = ln.split()
            if parts and not parts[0].startswith(b"#") and len(parts) >= 6:
                return parts[5].decode("utf-8", "replace")
    return None
