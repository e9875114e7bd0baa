"""What every reader shares: the source rows (JSONL, JSON, CSV, Parquet, a Hugging Face
``datasets`` folder), read bounded; the one-line error naming file, row and field; the
``source`` section that keeps fields with no record field; the per-field missing counts.

A reader returns an :class:`Imported`: the records plus, for each record field it maps,
how many rows lacked it (``missing``). Nothing absent is invented: a field the source lacks
is left out of the record and counted. The only made-up value is the ``id`` of a source
without one (``row-<n>``, its 1-based row), and that is counted as missing too.
"""

from __future__ import annotations

import ast
import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError

Record = dict[str, Any]


@dataclass
class Imported:
    """The records read from a source, and the missing count of each mapped record field."""

    format: str
    records: list[Record]
    missing: dict[str, int] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    """What else the reader counted (BEIR: run queries without judgements; traces: spans read)."""

    def summary(self) -> dict[str, Any]:
        out = {"format": self.format, "n_records": len(self.records), "missing": dict(self.missing)}
        if self.counts:
            out["counts"] = dict(self.counts)
        return out


def bad(path: str | Path, row: int, name: str, message: str) -> InputError:
    """``"data.csv, row 3, field user_input: expected a string, found int"``."""
    return InputError(message, source=str(path), location=f"row {row}, field {name}")


def kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _cell(value: str) -> Any:
    """A CSV cell: lists and objects are written by pandas as their Python repr (RAGAS's
    ``to_csv``) or as JSON; anything else stays text. An empty cell is absent."""
    text = value.strip()
    if text == "":
        return None
    if text[:1] in "[{":
        try:
            return json.loads(text)
        except ValueError:
            try:
                return ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return value
    return value


def _none_if_nan(value: Any) -> Any:
    if isinstance(value, float) and value != value:  # pandas' missing cell
        return None
    if hasattr(value, "tolist"):  # numpy arrays from pandas/pyarrow
        return value.tolist()
    return value


def iter_rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(1-based row, row dict)`` from a JSONL, JSON (a list of objects, or an object with
    one list of them), CSV or Parquet file, or a Hugging Face ``datasets`` folder. Every file
    is read bounded (:mod:`kg_rageval.base.safe_io`: line, depth and document sizes)."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or folder", source=str(p))
    if p.is_dir():
        yield from _hf_rows(p)
        return
    name = p.name.lower()
    if name.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        from kg_rageval.records._io import iter_jsonl

        for lineno, obj in iter_jsonl(p):
            if not isinstance(obj, dict):
                raise InputError(
                    f"expected a JSON object, found {kind(obj)}", source=str(p), location=f"row {lineno}"
                )
            yield lineno, obj
    elif name.endswith((".json", ".json.gz")):
        yield from _json_rows(p)
    elif name.endswith((".csv", ".csv.gz")):
        yield from _csv_rows(p)
    elif name.endswith(".parquet"):
        yield from _parquet_rows(p)
    else:
        raise InputError(
            "unknown file type: expected .jsonl, .json, .csv, .parquet or a datasets folder", source=str(p)
        )


def _json_rows(p: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    from kg_rageval.base.safe_io import loads_json, read_document

    doc = loads_json(bytes(read_document(p)).decode("utf-8-sig"), source=str(p))
    if isinstance(doc, dict):
        lists = [v for v in doc.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise InputError(
                "expected a list of objects, or an object holding one list of them", source=str(p)
            )
        doc = lists[0]
    if not isinstance(doc, list):
        raise InputError(f"expected a list of objects, found {kind(doc)}", source=str(p))
    for n, obj in enumerate(doc, 1):
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, found {kind(obj)}", source=str(p), location=f"row {n}")
        yield n, obj


def _csv_rows(p: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    from kg_rageval.base.safe_io import read_document

    text = bytes(read_document(p)).decode("utf-8-sig")
    csv.field_size_limit(64 << 20)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    for n, row in enumerate(reader, 1):
        yield n, {k: _cell(v) for k, v in row.items() if k and k != "Unnamed: 0" and v is not None}


def _parquet_rows(p: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    from kg_rageval.base import limits

    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            "reading Parquet needs pyarrow: pip install 'kg-rageval[parquet]'", source=str(p)
        ) from None
    size, limit = p.stat().st_size, limits.get("max_doc_bytes")
    if size > limit:
        raise limits.exceeded("max_doc_bytes", f"the Parquet file is {size} bytes", source=str(p))
    try:
        table = pq.read_table(p)
    except Exception as exc:  # pyarrow.ArrowInvalid and friends
        raise InputError(f"cannot read the Parquet file: {exc}", source=str(p)) from None
    n = 0
    for batch in table.to_batches():
        for row in batch.to_pylist():
            n += 1
            yield n, {k: _none_if_nan(v) for k, v in row.items() if k != "__index_level_0__"}


def _hf_rows(p: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        import datasets
    except ImportError:
        raise InputError(
            "reading a datasets folder needs datasets: pip install 'kg-rageval[hf]'", source=str(p)
        ) from None
    try:
        ds = datasets.load_from_disk(str(p))
    except Exception as exc:  # FileNotFoundError, a folder that is not a saved dataset
        raise InputError(f"not a Hugging Face datasets folder: {exc}", source=str(p)) from None
    if isinstance(ds, datasets.DatasetDict):
        if len(ds) != 1:
            raise InputError(
                f"the folder holds the splits {sorted(ds)}: name one (path/to/folder/<split>)", source=str(p)
            )
        ds = next(iter(ds.values()))
    for n, row in enumerate(ds, 1):
        yield n, dict(row)


class Builder:
    """Builds records from rows, counting the fields each row lacks."""

    def __init__(self, fmt: str, path: str | Path, fields: tuple[str, ...]):
        self.format, self.path = fmt, str(path)
        self.missing = dict.fromkeys(fields, 0)
        self.records: list[Record] = []
        self._ids: dict[str, int] = {}

    def take_id(self, row: int, value: Any, name: str) -> str:
        if value is None:
            self.missing["id"] = self.missing.get("id", 0) + 1
            rid = f"row-{row}"
        elif isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
            rid = str(value)
        else:
            raise bad(self.path, row, name, f"expected a non-empty string id, found {kind(value)}")
        if rid in self._ids:
            raise bad(self.path, row, name, f"duplicate id {rid!r} (first on row {self._ids[rid]})")
        self._ids[rid] = row
        return rid

    def lack(self, name: str) -> None:
        self.missing[name] += 1

    def fill(
        self,
        record: Record,
        *,
        query: str | None,
        contexts: list[str] | None,
        answer: str | None,
        reference: str | None,
    ) -> None:
        """Set the four standard record fields that are present (``query``,
        ``retrieval.contexts``, ``answer.text``, ``reference.answer``); count each absent one."""
        missing = self.missing
        if query is None:
            missing["query"] += 1
        else:
            record["query"] = query
        if contexts is None:
            missing["retrieval.contexts"] += 1
        else:
            record["retrieval"] = {"contexts": contexts}
        if answer is None:
            missing["answer.text"] += 1
        else:
            record["answer"] = {"text": answer}
        if reference is None:
            missing["reference.answer"] += 1
        else:
            record["reference"] = {"answer": reference}

    def add(self, record: Record, row: int, extra: dict[str, Any]) -> None:
        source: dict[str, Any] = {"format": self.format, "file": self.path, "row": row}
        if extra:
            source["extra"] = extra
        record["source"] = source
        self.records.append(record)

    def result(self) -> Imported:
        return Imported(self.format, self.records, self.missing)


def text_or_none(b: Builder, row: int, name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise bad(b.path, row, name, f"expected a string, found {kind(value)}")
    return value


def strings_or_none(b: Builder, row: int, name: str, value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise bad(b.path, row, name, f"expected a list of strings, found {kind(value)}")
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise bad(b.path, row, f"{name}[{i}]", f"expected a string, found {kind(v)}")
    return value
