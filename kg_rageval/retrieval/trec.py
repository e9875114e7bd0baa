"""Readers and writers for TREC qrels, TREC run files and BEIR-style qrels.

Formats (whitespace-separated; blank lines are skipped):

* TREC qrels: ``query_id iteration doc_id relevance`` (relevance an integer; the iteration
  column is ignored, as trec_eval does).
* TREC run: ``query_id Q0 doc_id rank score run_tag``. As in trec_eval the rank column is not
  used: the ranking comes from the score (descending, then doc id descending).
* BEIR qrels: a TSV with the header ``query-id<TAB>corpus-id<TAB>score``.

Errors name the file and line: a wrong number of columns, a non-numeric relevance, rank or
score, a document judged twice for one query, or a run listing a document twice for a query
(unless ``dedupe=True``, which keeps the first line and counts the rest in
``Run.duplicates``). Files are read in chunks with vectorised column conversion; gzip files
(``.gz``) are read transparently.
"""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path
from typing import Iterator

import numpy as np

from ..errors import InputError
from .runs import Qrels, Run, Vocab, _csr

CHUNK_BYTES = 1 << 26
NUMBA_MIN_BYTES = 1 << 20
"""Blocks of at least this many bytes are tokenized by the compiled kernel when numba is present."""
_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True
_TAB = np.zeros(256, dtype=bool)
_TAB[[9, 10, 13]] = True


def _open(path: Path, mode: str = "rt"):
    if path.suffix == ".gz":
        return gzip.open(path, mode, encoding="utf-8")
    return open(path, mode, encoding="utf-8", newline="")


def _blocks(path: Path, skip_header: bool = False) -> Iterator[tuple[int, bytes]]:
    """``(first line number, bytes)``: blocks of whole lines, read in binary."""
    if not path.exists():
        raise InputError("no such file", source=str(path))
    opener = gzip.open if path.suffix == ".gz" else open
    lineno = 1
    rest = b""
    with opener(path, "rb") as fh:
        if skip_header:
            fh.readline()
            lineno = 2
        while True:
            block = fh.read(CHUNK_BYTES)
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
    return lines[line].decode("utf-8", "replace").strip()[:80] if line < len(lines) else ""


def _tokenize(path: Path, start: int, data: bytes, ncol: int, what: str, sep: np.ndarray):
    """Vectorised split of a block into ``ncol`` columns without creating a Python object
    per token: returns (token start offsets per column, end offsets per column, line index
    of each row within the block, the padded byte buffer). Blank lines are skipped; any
    other line must have exactly ``ncol`` fields, else the error names it."""
    raw = np.frombuffer(data, dtype=np.uint8)
    from . import _kernels

    if _kernels.HAVE_NUMBA and len(raw) >= NUMBA_MIN_BYTES:
        starts, ends, rows_line, bad, cnt = _kernels.tokenize(raw, sep is _WS, ncol)
        if bad >= 0:
            raise InputError(f"expected {ncol} columns ({what}), found {cnt}: {_line_text(data, bad)!r}",
                             source=str(path), location=f"line {start + bad}")
        width = int((ends - starts).max()) if len(starts) else 1
        buf = np.concatenate((raw, np.zeros(width, dtype=np.uint8)))
        return ([starts[j::ncol] for j in range(ncol)], [ends[j::ncol] for j in range(ncol)], rows_line, buf)
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
    bad = np.flatnonzero((counts != 0) & (counts != ncol))
    if bad.size:
        ln = int(bad[0])
        raise InputError(
            f"expected {ncol} columns ({what}), found {int(counts[ln])}: {_line_text(data, ln)!r}",
            source=str(path), location=f"line {start + ln}",
        )
    width = int((ends - starts).max()) if len(starts) else 1
    buf = np.concatenate((raw, np.zeros(width, dtype=np.uint8)))
    return ([starts[j::ncol] for j in range(ncol)], [ends[j::ncol] for j in range(ncol)],
            np.flatnonzero(counts), buf)


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
    if (lens != w).any():
        mat[np.arange(w)[None, :] >= lens[:, None]] = 0
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
            raise InputError(f"{what} is not a finite number: {arr[i].decode('utf-8', 'replace')!r}",
                             source=str(path), location=f"line {start + int(rows_line[i])}")
        return out
    for i, v in enumerate(arr.tolist()):
        try:
            float(v)
        except ValueError:
            raise InputError(f"{what} is not a number: {v.decode('utf-8', 'replace')!r}", source=str(path),
                             location=f"line {start + int(rows_line[i])}") from None
    raise InputError(f"unreadable {what} column", source=str(path))  # pragma: no cover


def _line_of_row(path: Path, row: int, skip_header: bool = False) -> int:
    """Line number of the ``row``-th (0-based) data line: rescans the file (error path only)."""
    seen = -1
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        for lineno, ln in enumerate(fh, start=1):
            if skip_header and lineno == 1:
                continue
            if ln.strip():
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


def _read_pairs(path, ncol, q_i, d_i, what, numeric_cols, sep=None, skip_header=False, vocab=None):
    """Columns of a whitespace (or tab) separated table, block by block, vectorised: query
    groups ``[[qid, n]]`` in file order (adjacent equal ids merged), document codes in
    ``vocab`` (int64), numeric columns as float arrays. With numba, document ids are hashed
    and query changes detected in one compiled pass; only distinct ids become Python strings."""
    from . import _kernels

    path = Path(path)
    vocab = vocab if vocab is not None else Vocab()
    sepmask = _WS if sep is None else _TAB
    groups: list[list] = []
    doc_parts: list[np.ndarray] = []
    nums: dict[int, list[np.ndarray]] = {c: [] for c, _ in numeric_cols}
    for start, data in _blocks(path, skip_header=skip_header):
        st, en, rows_line, buf = _tokenize(path, start, data, ncol, what, sepmask)
        nrow = len(rows_line)
        if nrow == 0:
            continue
        for c, name in numeric_cols:
            nums[c].append(_to_float(path, start, _fixed(buf, st[c], en[c]), rows_line, name))
        if _kernels.HAVE_NUMBA and len(data) >= NUMBA_MIN_BYTES:
            dhash, qnew = _kernels.row_keys(buf, st[q_i], en[q_i], st[d_i], en[d_i])
            heads = np.flatnonzero(qnew)
            names = [data[s_:e_].decode("utf-8") for s_, e_ in zip(st[q_i][heads].tolist(), en[q_i][heads].tolist())]
            counts = np.diff(np.concatenate((heads, [nrow]))).tolist()
            local, first, arena = _kernels.intern_rows(buf, st[d_i], en[d_i], dhash)
            distinct = arena.tobytes().decode("utf-8").split("\n")[: len(first)]
            ucodes = vocab.codes(distinct)
            doc_parts.append(ucodes[local])
        else:
            q = _fixed(buf, st[q_i], en[q_i])
            cut = np.flatnonzero(q[1:] != q[:-1]) + 1
            bounds = np.concatenate(([0], cut, [len(q)]))
            names = [x.decode("utf-8") for x in q[bounds[:-1]].tolist()]
            counts = np.diff(bounds).tolist()
            doc_parts.append(vocab.codes_array(_fixed(buf, st[d_i], en[d_i])))
        for k, cnt in zip(names, counts):
            if groups and groups[-1][0] == k:
                groups[-1][1] += cnt
            else:
                groups.append([k, cnt])
    num = {c: (np.concatenate(v) if v else np.zeros(0)) for c, v in nums.items()}
    docs = np.concatenate(doc_parts) if doc_parts else np.zeros(0, dtype=np.int64)
    return groups, docs, num


def _duplicates(path: Path, qcode: np.ndarray, docs: np.ndarray, V: int, what: str, dedupe: bool,
                skip_header: bool = False):
    """Rows repeating a (query, doc) pair: error naming both lines, or a keep-mask."""
    from . import _kernels

    key = qcode * max(V, 1) + docs
    keep = np.ones(len(key), dtype=bool)
    if _kernels.HAVE_NUMBA and len(key) >= 100_000 and (len(qcode) < 2 or (qcode[1:] >= qcode[:-1]).all()):
        found = bool(_kernels.later_duplicates(qcode, docs, max(V, 1)).any())
    else:
        sk = np.sort(key)
        found = bool(len(sk) and (sk[1:] == sk[:-1]).any())
    if found:
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


def read_qrels(path: str | Path, *, vocab: Vocab | None = None) -> Qrels:
    """A TREC qrels file (``qid iter docid rel``) as :class:`Qrels`."""
    return _qrels_from(path, 4, 0, 2, 3, vocab=vocab)


def read_beir_qrels(path: str | Path, *, vocab: Vocab | None = None) -> Qrels:
    """A BEIR qrels TSV (header ``query-id corpus-id score``) as :class:`Qrels`."""
    p = Path(path)
    with _open(p) as fh:
        header = fh.readline().rstrip("\r\n").split("\t")
    if [h.strip() for h in header] != ["query-id", "corpus-id", "score"]:
        raise InputError(
            f"expected the BEIR header 'query-id<TAB>corpus-id<TAB>score', found {header!r}",
            source=str(p), location="line 1",
        )
    return _qrels_from(p, 3, 0, 1, 2, vocab=vocab, sep="\t", skip_header=True)


def _qrels_from(path, ncol, q_i, d_i, g_i, *, vocab=None, sep=None, skip_header=False) -> Qrels:
    path = Path(path)
    vocab = vocab if vocab is not None else Vocab()
    groups, docs, num = _read_pairs(path, ncol, q_i, d_i, "query, iteration, document, relevance" if ncol == 4
                                    else "query-id, corpus-id, score", [(g_i, "relevance")], sep, skip_header,
                                    vocab)
    grades = num[g_i]
    qids, ptr, perm, qcode = _group(groups)
    _duplicates(path, qcode, docs, len(vocab), "document judged twice for one query", False, skip_header)
    # within each query: ascending doc code
    order = np.lexsort((docs, qcode))
    return Qrels(list(qids), ptr, docs[order], grades[order], vocab)


def read_run(path: str | Path, *, vocab: Vocab | None = None, dedupe: bool = False) -> Run:
    """A TREC run file (``qid Q0 docid rank score tag``) as a :class:`Run` ranked in trec_eval's
    order. ``vocab``: intern documents into this vocabulary (e.g. the qrels')."""
    path = Path(path)
    vocab = vocab if vocab is not None else Vocab()
    groups, docs, num = _read_pairs(path, 6, 0, 2, "query, Q0, document, rank, score, tag",
                                    [(4, "score")], vocab=vocab)
    scores = num[4]
    qids, ptr, perm, qcode = _group(groups)
    keep = _duplicates(path, qcode, docs, len(vocab), "run lists a document twice for one query", dedupe)
    dup = np.zeros(len(qids), dtype=np.int64)
    if not keep.all():
        dup = np.bincount(qcode[~keep], minlength=len(qids)).astype(np.int64)
        qcode, docs, scores = qcode[keep], docs[keep], scores[keep]
        perm = np.argsort(qcode, kind="stable")
        ptr = _csr(np.bincount(qcode, minlength=len(qids)))
    if perm is not None:
        docs, scores = docs[perm], scores[perm]
    run = Run.from_columns(list(qids), ptr, docs, scores, vocab, check_duplicates=False)
    run.duplicates = dup
    return run


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
