"""Readers and writers for TREC qrels, TREC run files and BEIR-style qrels.

Formats (whitespace-separated; blank lines are skipped):

* TREC qrels: ``query_id iteration doc_id relevance`` (relevance an integer; the iteration
  column is ignored, as trec_eval does).
* TREC run: ``query_id Q0 doc_id rank score run_tag``. The rank column is read and checked to be
  an integer but, as in trec_eval, the ranking comes from the score (descending, then doc id
  descending).
* BEIR qrels: a TSV with the header ``query-id<TAB>corpus-id<TAB>score``.

Errors name the file and line: a wrong number of columns, a non-numeric relevance, rank or
score, a document judged twice for one query, or a run listing a document twice for a query
(unless ``dedupe=True``, which keeps the first line and counts the rest in
``Run.duplicates``). Files are read in chunks with vectorised column conversion; gzip files
(``.gz``) are read transparently.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Iterator

import numpy as np

from ..errors import InputError
from .runs import Qrels, Run, Vocab, _csr

CHUNK_BYTES = 1 << 24


def _open(path: Path, mode: str = "rt"):
    if path.suffix == ".gz":
        return gzip.open(path, mode, encoding="utf-8")
    return open(path, mode, encoding="utf-8", newline="")


def _chunks(path: Path, skip_header: bool = False) -> Iterator[tuple[int, list[str]]]:
    """``(first line number, lines)`` blocks of whole lines."""
    if not path.exists():
        raise InputError("no such file", source=str(path))
    lineno = 1
    rest = ""
    first = True
    with _open(path) as fh:
        while True:
            block = fh.read(CHUNK_BYTES)
            if not block:
                break
            block = rest + block
            cut = block.rfind("\n")
            if cut < 0:
                rest = block
                continue
            rest = block[cut + 1 :]
            lines = block[:cut].split("\n")
            if first and skip_header:
                lines = lines[1:]
                lineno += 1
                first = False
            first = False
            yield lineno, lines
            lineno += len(lines)
        if rest:
            lines = [rest]
            if first and skip_header:
                lines, lineno = [], lineno + 1
            yield lineno, lines


def _columns(path: Path, start: int, lines: list[str], ncol: int, what: str, sep: str | None = None) -> list[list[str]]:
    """Split lines into ``ncol`` columns; the fast path splits the whole block at once and
    falls back to a per-line scan (for the line number) when the counts disagree."""
    body = [ln for ln in lines if ln.strip()]
    if sep is None:
        tokens = "\n".join(body).split()
        if len(tokens) == ncol * len(body):
            cols = [tokens[i::ncol] for i in range(ncol)]
            return cols
    for off, ln in enumerate(lines):
        if not ln.strip():
            continue
        parts = ln.rstrip("\r").split(sep) if sep else ln.split()
        if len(parts) != ncol:
            raise InputError(
                f"expected {ncol} columns ({what}), found {len(parts)}: {ln.strip()[:80]!r}",
                source=str(path),
                location=f"line {start + off}",
            )
    rows = [(ln.rstrip("\r").split(sep) if sep else ln.split()) for ln in body]
    return [list(c) for c in zip(*rows)] if rows else [[] for _ in range(ncol)]


def _numbers(path: Path, start: int, lines: list[str], values: list[str], dtype, what: str, col: int, ncol: int) -> np.ndarray:
    try:
        return np.asarray(values, dtype=dtype) if values else np.zeros(0, dtype=dtype)
    except ValueError:
        pass
    conv = int if dtype is np.int64 else float
    body = [(start + off, ln) for off, ln in enumerate(lines) if ln.strip()]
    for (lineno, ln), v in zip(body, values):
        try:
            conv(v)
        except ValueError:
            raise InputError(f"{what} is not a number: {v!r}", source=str(path), location=f"line {lineno}") from None
    raise InputError(f"unreadable {what} column", source=str(path))  # pragma: no cover


def _line_numbers(start: int, lines: list[str]) -> np.ndarray:
    nonblank = np.fromiter((bool(ln.strip()) for ln in lines), dtype=bool, count=len(lines))
    return start + np.flatnonzero(nonblank)


def _group(qids_col: list[str], *arrays: np.ndarray):
    """Stable grouping by query id in first-seen order: (qids, ptr, permutation)."""
    qv = Vocab()
    qcode = qv.codes(qids_col)
    if len(qcode) and np.all(qcode[1:] >= qcode[:-1]):
        perm = np.arange(len(qcode))
    else:
        perm = np.argsort(qcode, kind="stable")
    ptr = _csr(np.bincount(qcode, minlength=len(qv)))
    return qv.strings, ptr, perm, qcode


def _read_pairs(path, ncol, q_i, d_i, what, numeric_cols, sep=None, skip_header=False):
    path = Path(path)
    qs: list[str] = []
    ds: list[str] = []
    nums: dict[int, list[np.ndarray]] = {c: [] for c, _, _ in numeric_cols}
    linenos: list[np.ndarray] = []
    for start, lines in _chunks(path, skip_header=skip_header):
        cols = _columns(path, start, lines, ncol, what, sep)
        qs.extend(cols[q_i])
        ds.extend(cols[d_i])
        for c, dtype, name in numeric_cols:
            nums[c].append(_numbers(path, start, lines, cols[c], dtype, name, c, ncol))
        linenos.append(_line_numbers(start, lines))
    num = {c: (np.concatenate(v) if v else np.zeros(0)) for c, v in nums.items()}
    return qs, ds, num, (np.concatenate(linenos) if linenos else np.zeros(0, np.int64))


def _duplicates(path: Path, qcode: np.ndarray, docs: np.ndarray, lines: np.ndarray, V: int, what: str, dedupe: bool):
    """Rows repeating a (query, doc) pair: error naming both lines, or a keep-mask."""
    key = qcode * max(V, 1) + docs
    order = np.argsort(key, kind="stable")
    sk = key[order]
    same = np.flatnonzero(sk[1:] == sk[:-1]) + 1
    keep = np.ones(len(key), dtype=bool)
    if same.size:
        if not dedupe:
            j = order[same[0]]
            first = order[np.searchsorted(sk, sk[same[0]])]
            raise InputError(
                f"{what} (first on line {int(lines[first])}); k counts unique document ids "
                "(pass dedupe=True to keep the first occurrence)",
                source=str(path),
                location=f"line {int(lines[j])}",
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
    qs, ds, num, lines = _read_pairs(path, ncol, q_i, d_i, "query, iteration, document, relevance" if ncol == 4
                                     else "query-id, corpus-id, score", [(g_i, np.float64, "relevance")], sep, skip_header)
    grades = num[g_i]
    qids, ptr, perm, qcode = _group(qs)
    docs = vocab.codes(ds)
    _duplicates(path, qcode, docs, lines, len(vocab), "document judged twice for one query", False)
    # within each query: ascending doc code
    order = np.lexsort((docs, qcode))
    return Qrels(list(qids), ptr, docs[order], grades[order], vocab)


def read_run(path: str | Path, *, vocab: Vocab | None = None, dedupe: bool = False) -> Run:
    """A TREC run file (``qid Q0 docid rank score tag``) as a :class:`Run` ranked in trec_eval's
    order. ``vocab``: intern documents into this vocabulary (e.g. the qrels')."""
    path = Path(path)
    vocab = vocab if vocab is not None else Vocab()
    qs, ds, num, lines = _read_pairs(path, 6, 0, 2, "query, Q0, document, rank, score, tag",
                                     [(3, np.int64, "rank"), (4, np.float64, "score")])
    scores = num[4]
    qids, ptr, perm, qcode = _group(qs)
    docs = vocab.codes(ds)
    keep = _duplicates(path, qcode, docs, lines, len(vocab), "run lists a document twice for one query", dedupe)
    dup = np.zeros(len(qids), dtype=np.int64)
    if not keep.all():
        dup = np.bincount(qcode[~keep], minlength=len(qids)).astype(np.int64)
        qcode, docs, scores = qcode[keep], docs[keep], scores[keep]
        perm = np.argsort(qcode, kind="stable")
        ptr = _csr(np.bincount(qcode, minlength=len(qids)))
    run = Run.from_columns(list(qids), ptr, docs[perm], scores[perm], vocab, check_duplicates=False)
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
