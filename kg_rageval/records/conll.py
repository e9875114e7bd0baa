"""CoNLL BIO files as ``extraction`` records (``docs/ingestion.md``, *Extraction*).

One token a line: ``TOKEN TAG`` or ``TOKEN GOLD PRED`` (columns split on tabs or runs of
spaces; with more columns, pick the tag columns by index: ``gold_col`` / ``pred_col``, e.g.
the CoNLL-2003 ``word POS chunk NER`` layout is ``gold_col=-1``); a blank line ends a
sentence; ``-DOCSTART-`` lines (and the blank line after them) are skipped. Each sentence is
one record ``{"id": "<stem>:<n>", "extraction": {"tokens", "gold_tags", "pred_tags"}}`` (with
a second file of predictions, :func:`read_conll_pair`, the two must have the same tokens).
A bad line — too few columns, a tag that is not ``O`` or ``<prefix>-<type>`` — is an
``InputError`` naming the file and line. At most ``max_bytes`` are read (bounded input cost).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError

MAX_BYTES = 512 * 1024 * 1024


def _tag_ok(t: str) -> bool:
    return t == "O" or (len(t) >= 2 and t[1] == "-")


def read_conll(
    path: str | Path,
    *,
    gold_col: int = 1,
    pred_col: int | None = None,
    max_bytes: int = MAX_BYTES,
) -> list[dict[str, Any]]:
    """The sentences of a CoNLL file as records (module docstring). ``gold_col`` / ``pred_col``:
    column indices of the gold and predicted tags (``pred_col=None``: a file of gold tags only;
    the records then carry no ``pred_tags``)."""
    p = Path(path)
    if p.stat().st_size > max_bytes:
        raise InputError(f"{p.stat().st_size} bytes, above the limit of {max_bytes}", source=str(p))
    records: list[dict[str, Any]] = []
    tokens: list[str] = []
    gold: list[str] = []
    pred: list[str] = []
    start = 0

    def flush() -> None:
        if tokens:
            ext: dict[str, Any] = {"tokens": list(tokens), "gold_tags": list(gold)}
            if pred_col is not None:
                ext["pred_tags"] = list(pred)
            records.append(
                {"id": f"{p.stem}:{len(records) + 1}", "_source": str(p), "_line": start, "extraction": ext}
            )
        tokens.clear()
        gold.clear()
        pred.clear()

    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line_no = data.count(b"\n", 0, e.start) + 1
        raise InputError(f"not UTF-8 text: {e.reason}", source=str(p), location=f"line {line_no}") from None
    for n, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        if not line.strip():
            flush()
            continue
        cols = line.split()
        if cols[0] == "-DOCSTART-":
            flush()
            continue
        need = max(abs(c) + (c >= 0) for c in (gold_col, pred_col) if c is not None)
        if len(cols) < max(2, need):
            raise InputError(
                f"expected a token and its tag column(s), found {len(cols)} column(s): {line[:60]!r}",
                source=str(p),
                location=f"line {n}",
            )
        if not tokens:
            start = n
        tags = [cols[gold_col]] + ([cols[pred_col]] if pred_col is not None else [])
        for t in tags:
            if not _tag_ok(t):
                raise InputError(
                    f"{t!r} is not a tag: expected 'O' or '<prefix>-<type>' (B-PER)",
                    source=str(p),
                    location=f"line {n}",
                )
        tokens.append(cols[0])
        gold.append(tags[0])
        if pred_col is not None:
            pred.append(tags[1])
    flush()
    return records


def read_conll_pair(
    gold_path: str | Path, pred_path: str | Path, *, gold_col: int = -1, pred_col: int = -1
) -> list[dict[str, Any]]:
    """Records from a gold CoNLL file and a predictions file of the same sentences (the tag of
    each in its ``gold_col`` / ``pred_col``, default the last column). A sentence or token that
    differs between the two files is an ``InputError`` naming the predictions file's line."""
    gold = read_conll(gold_path, gold_col=gold_col)
    pred = read_conll(pred_path, gold_col=pred_col)
    if len(gold) != len(pred):
        raise InputError(f"{len(pred)} sentences for {len(gold)} in {gold_path}", source=str(pred_path))
    for g, q in zip(gold, pred):
        if g["extraction"]["tokens"] != q["extraction"]["tokens"]:
            raise InputError(
                f"the sentence's tokens differ from {gold_path} line {g['_line']}",
                source=str(pred_path),
                location=f"line {q['_line']}",
            )
        g["extraction"]["pred_tags"] = q["extraction"]["gold_tags"]
    return gold


__all__ = ["MAX_BYTES", "read_conll", "read_conll_pair"]
