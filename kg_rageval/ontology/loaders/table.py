"""Edge tables: ``child, parent[, label]`` per line, CSV or TSV.

* The delimiter is a tab for ``.tsv``/``.tab`` files and a comma otherwise (``delimiter=``
  overrides). Quoting follows the csv module, so ids may contain commas when quoted.
* A header line is detected when its first two cells are one of the header names
  (``child``, ``id``, ``node``, ``concept`` / ``parent``, ``broader``, ``is_a``) and neither is
  used as an id elsewhere in the table. ``header=True/False`` forces it.
* A row with an empty parent declares a root (or a node without parents). The optional third
  column is the child's label. Ids may contain dots, colons and slashes.
* Parents never declared as a child become nodes themselves (they are the table's roots),
  unless ``dangling="error"``, which refuses them.

Two paths build the same :class:`Ontology` (same ids in the same order, labels, edges,
diagnostics and content hash; tested on generated tables and the fixtures):

* the **column path** (default): the table is read by a C tokenizer — pandas' C parser when
  pandas is installed (extra ``fast``) and the file has at least ``_PANDAS_MIN_BYTES``
  (1 MiB: importing pandas costs more than reading a smaller table), the stdlib ``csv``
  module otherwise — and handled as
  whole columns: ids are factorised once, nodes and edges go into the builder through
  :meth:`OntologyBuilder.add_nodes_bulk` / :meth:`OntologyBuilder.add_edges_bulk`;
* the **row path**: one row at a time. The column path hands over to it whenever a table
  is not plain — more than 3 columns, an empty child id, a single cell holding the
  delimiter, conflicting labels, control or bidirectional characters in ids, undeclared
  parents under ``dangling="error"``/``"drop"``, a byte-order mark, a read error — so every
  error and warning is the row path's, naming the file and line.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError, OntologyError
from kg_rageval.base.redact import excerpt
from kg_rageval.ontology.builder import OntologyBuilder
from kg_rageval.ontology.model import Ontology

_CHILD_HEADERS = {"child", "id", "node", "concept", "child_id", "node_id", "concept_id", "subclass"}
_PARENT_HEADERS = {"parent", "broader", "is_a", "parent_id", "superclass", "parents"}

# below this file size the column path reads with the stdlib (importing pandas, ~0.2 s CPU,
# would cost more than the table: a tiny ``score`` command stays near NumPy's start-up)
_PANDAS_MIN_BYTES = 1 << 20


def load_table(
    path: str | Path,
    *,
    delimiter: str | None = None,
    header: bool | None = None,
    dangling: str = "declare",
    conflicts: str = "error",
    encoding: str = "utf-8",
    strict: bool = False,
    triples: str | Path | None = None,
) -> Ontology:
    """Load an edge table (see the module docstring for the format and the two paths).
    ``triples``: a second table of relation triples, ``subject, predicate, object[,
    subject_kind[, object_kind]]`` per line (same delimiter rule, optional header
    ``subject,predicate,object``): ends that are not nodes of the edge table become instances
    of the given kind (or untyped)."""
    p = Path(path)
    if delimiter is None:
        delimiter = "\t" if p.suffix.lower() in (".tsv", ".tab") else ","
    if len(delimiter) == 1 and delimiter not in '"\r\n':
        onto = _load_columns(p, delimiter, header, dangling, conflicts, encoding, strict, triples)
        if onto is not None:
            return onto
    return load_table_rows(
        p,
        delimiter=delimiter,
        header=header,
        dangling=dangling,
        conflicts=conflicts,
        encoding=encoding,
        strict=strict,
        triples=triples,
    )


class _Fallback(Exception):
    """The column path cannot decide this table: the row path takes over."""


def _pandas(p: Path) -> Any:
    """pandas when installed and the table is large enough to repay its import, else None."""
    try:
        if p.stat().st_size < _PANDAS_MIN_BYTES:
            return None
    except OSError:
        return None  # the reader below raises the error the row path names
    try:
        import pandas as pd
    except ImportError:
        return None
    return pd


def _read_columns(p: Path, delimiter: str, encoding: str, pd: Any) -> tuple[list[str], list[str], list[str]]:
    """The table's first three cells per row (missing cells ""), by a C tokenizer (pandas'
    when ``pd`` is given, else the stdlib ``csv`` module)."""
    with open(p, "rb") as fh:
        if fh.read(4).startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
            raise _Fallback  # a BOM: the row path keeps it in the first cell, as it always has
    if pd is not None:
        try:
            df = pd.read_csv(
                p,
                sep=delimiter,
                header=None,
                names=[0, 1, 2],
                index_col=False,
                dtype=str,
                na_filter=False,
                keep_default_na=False,
                skip_blank_lines=False,
                engine="c",
                encoding=encoding,
                quotechar='"',
                doublequote=True,
                escapechar=None,
            )
        except (ValueError, UnicodeError, OSError, pd.errors.ParserError) as exc:
            raise _Fallback from exc  # e.g. a row with 4 cells: the row path names its line
        return df[0].tolist(), df[1].tolist(), df[2].tolist()
    try:
        with open(p, newline="", encoding=encoding) as fh:
            rows = list(csv.reader(fh, delimiter=delimiter))
    except (UnicodeError, csv.Error) as exc:
        raise _Fallback from exc
    if rows and max(map(len, rows)) > 3:
        raise _Fallback
    return (
        [r[0] if r else "" for r in rows],
        [r[1] if len(r) > 1 else "" for r in rows],
        [r[2] if len(r) > 2 else "" for r in rows],
    )


def _factorize(values: list[str], pd: Any) -> tuple[np.ndarray, list[str]]:
    """Codes (in order of first appearance) and the distinct values (``pd``: pandas or None)."""
    if pd is None:
        table: dict[str, int] = {}
        codes = np.fromiter(
            (table.setdefault(v, len(table)) for v in values), dtype=np.int64, count=len(values)
        )
        return codes, list(table)
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=False)
    return codes.astype(np.int64, copy=False), uniques.tolist()


def _load_columns(
    p: Path,
    delimiter: str,
    header: bool | None,
    dangling: str,
    conflicts: str,
    encoding: str,
    strict: bool,
    triples: str | Path | None = None,
) -> Ontology | None:
    """The column path; ``None`` hands the table to the row path (see the module docstring)."""
    pd = _pandas(p)
    try:
        raw0, raw1, raw2 = _read_columns(p, delimiter, encoding, pd)
    except _Fallback:
        return None
    if not raw0:
        return None
    strip = str.strip
    c0, c1, c2 = list(map(strip, raw0)), list(map(strip, raw1)), list(map(strip, raw2))
    n_rows = len(c0)
    start = 0
    auto_header = False
    if header is not False:
        first = [c0[0].lower(), c1[0].lower()]
        looks = first[0] in _CHILD_HEADERS and first[1] in _PARENT_HEADERS
        auto_header = looks and header is None
        if header or looks:
            start = 1
    # rows kept: not blank, not a comment (the row path's first test); one scan decides
    # for the usual table without either
    if "" not in c0 and "#" not in "".join(c0):
        keep = list(range(start, n_rows))
    else:
        keep = [k for k in range(start, n_rows) if (c0[k] or c1[k] or c2[k]) and not c0[k].startswith("#")]
    if auto_header:
        h0, h1 = c0[0], c1[0]
        named = {c0[k] for k in keep}
        named.update(c1[k] for k in keep)
        if h0 in named or h1 in named:
            keep.append(0)  # "id,parent" is data when those names are ids elsewhere: row 1, last
    if not keep:
        return None
    if len(keep) == n_rows:
        child, parent, label = c0, c1, c2
    else:
        child, parent, label = [c0[k] for k in keep], [c1[k] for k in keep], [c2[k] for k in keep]
    if "" in child:
        return None  # empty child id: the row path names its line and column
    if delimiter in "".join(child):  # a lone cell holding the delimiter: the row path refuses it
        if any(delimiter in c and not q and not x for c, q, x in zip(child, parent, label)):
            return None
    lines = np.asarray(keep, dtype=np.int64) + 1
    if "" in parent:
        edge_rows = np.flatnonzero(np.fromiter(map(bool, parent), dtype=bool, count=len(parent)))
        parents = [parent[k] for k in edge_rows.tolist()]
    else:
        edge_rows, parents = np.arange(len(parent)), parent
    # one factorisation over children, then parents: children get codes in first-appearance
    # order, then the parents never seen as a child, in first-appearance order (the row
    # path's declaration order)
    codes, uniques = _factorize(child + parents, pd)
    child_code, parent_code = codes[: len(child)], codes[len(child) :]
    n_children = int(child_code.max()) + 1
    n_declared = len(uniques) - n_children
    if n_declared and dangling != "declare":
        return None  # refused or dropped edges: the row path names them with their lines
    # labels: the first non-empty label of each child; any other label is a conflict (so
    # with no conflict every labelled row of a child holds the same label)
    node_labels: list[str | None] = [None] * len(uniques)
    if "" in label:
        labelled = np.flatnonzero(np.fromiter(map(bool, label), dtype=bool, count=len(label)))
        labels_kept = [label[k] for k in labelled.tolist()]
    else:
        labelled, labels_kept = np.arange(len(label)), label
    if labelled.size:
        lab_codes, lab_uniques = _factorize(labels_kept, pd)
        owners = child_code[labelled]
        chosen = np.full(len(uniques), -1, dtype=np.int64)
        chosen[owners] = lab_codes
        if (chosen[owners] != lab_codes).any():
            return None  # conflicting labels: the row path lists them with their lines
        named_nodes = np.flatnonzero(chosen >= 0)
        out = np.full(len(uniques), None, dtype=object)
        out[named_nodes] = np.asarray(lab_uniques, dtype=object)[chosen[named_nodes]]
        node_labels = out.tolist()
    # where each node was declared: its first row as a child, else its first row as a parent
    # (codes are in first-appearance order: a code first appears where the running max grows)
    all_lines = np.concatenate([lines, lines[edge_rows]])
    top = np.maximum.accumulate(codes)
    new = np.empty(codes.size, dtype=bool)
    new[0] = True
    np.greater(top[1:], top[:-1], out=new[1:])
    where = list(map("line {}".format, all_lines[new].tolist()))

    b = OntologyBuilder(str(p))
    try:
        pos = b.add_nodes_bulk(uniques, node_labels, where=where)
    except OntologyError:
        return None  # an invalid id: the row path raises it at its line
    if b.diagnostics:
        return None  # e.g. bidirectional characters: the row path warns in its order
    b.add_edges_bulk(pos[child_code[edge_rows]], pos[parent_code])
    if n_declared:
        b.warn("parents_declared_from_edges", count=n_declared)
    if triples is not None:
        _read_triples(b, Path(triples), delimiter, encoding)
    return b.build(dangling="error", conflicts=conflicts, strict=strict)


def load_table_rows(
    path: str | Path,
    *,
    delimiter: str | None = None,
    header: bool | None = None,
    dangling: str = "declare",
    conflicts: str = "error",
    encoding: str = "utf-8",
    strict: bool = False,
    triples: str | Path | None = None,
) -> Ontology:
    """The row path: one row at a time (the reference for the column path)."""
    p = Path(path)
    if delimiter is None:
        delimiter = "\t" if p.suffix.lower() in (".tsv", ".tab") else ","
    try:
        with open(p, newline="", encoding=encoding) as fh:
            rows = list(csv.reader(fh, delimiter=delimiter))
    except UnicodeDecodeError as exc:
        raise InputError(f"not {encoding} text: {exc}", source=str(p)) from None
    except csv.Error as exc:
        raise InputError(f"malformed table: {exc}", source=str(p)) from None
    start = 0
    auto_header = False
    if rows and header is not False:
        first = [c.strip().lower() for c in rows[0][:2]]
        looks = len(first) == 2 and first[0] in _CHILD_HEADERS and first[1] in _PARENT_HEADERS
        auto_header = looks and header is None
        if header or looks:
            start = 1
    b = OntologyBuilder(str(p))
    parents_seen: list[tuple[str, int]] = []

    def add_row(lineno: int, row: list[str]) -> None:
        if not row or all(not c.strip() for c in row) or row[0].lstrip().startswith("#"):
            return
        if len(row) < 2:
            if delimiter in row[0]:
                raise InputError(
                    f"expected 2 or 3 columns (child, parent[, label]), found 1 holding the "
                    f"delimiter {delimiter!r} (quoted?): {excerpt(row)}",
                    source=str(p),
                    location=f"line {lineno}",
                )
            # a single id on its own line declares a node without parents
            row = [row[0], ""]
        if len(row) > 3:
            raise InputError(
                f"expected 2 or 3 columns (child, parent[, label]), found {len(row)}: {excerpt(row)}",
                source=str(p),
                location=f"line {lineno}",
            )
        child, parent = row[0].strip(), row[1].strip()
        label = row[2].strip() if len(row) == 3 and row[2].strip() else None
        if not child:
            raise InputError("empty child id", source=str(p), location=f"line {lineno}, column 1")
        where = f"line {lineno}"
        b.add_node(child, label=label, where=where)
        if parent:
            b.add_edge(child, parent, where=where)
            parents_seen.append((parent, lineno))

    for lineno, row in enumerate(rows[start:], start=start + 1):
        add_row(lineno, row)
    if auto_header:
        # "id,parent" is data, not a header, when those names are ids elsewhere in the table
        h0, h1 = rows[0][0].strip(), rows[0][1].strip()
        named = {q for q, _ in parents_seen}
        if b.has_node(h0) or b.has_node(h1) or h0 in named or h1 in named:
            add_row(1, rows[0])
    if dangling == "declare":
        for parent, lineno in parents_seen:
            if not b.has_node(parent):
                b.add_node(parent, where=f"line {lineno}")
                b.warn("parents_declared_from_edges")
        dangling = "error"
    if triples is not None:
        _read_triples(b, Path(triples), delimiter, encoding)
    return b.build(dangling=dangling, conflicts=conflicts, strict=strict)


def _read_triples(b: OntologyBuilder, path: Path, delimiter: str, encoding: str) -> None:
    """Add the triples of ``path`` (``subject, predicate, object[, subject_kind[, object_kind]]``)."""
    try:
        with open(path, newline="", encoding=encoding) as fh:
            rows = list(
                csv.reader(fh, delimiter="\t" if path.suffix.lower() in (".tsv", ".tab") else delimiter)
            )
    except UnicodeDecodeError as exc:
        raise InputError(f"not {encoding} text: {exc}", source=str(path)) from None
    except csv.Error as exc:
        raise InputError(f"malformed table: {exc}", source=str(path)) from None
    start = (
        1 if rows and [c.strip().lower() for c in rows[0][:3]] == ["subject", "predicate", "object"] else 0
    )
    pending: list[tuple[str, str | None, str]] = []
    for lineno, row in enumerate(rows[start:], start=start + 1):
        if not row or all(not c.strip() for c in row) or row[0].lstrip().startswith("#"):
            continue
        cells = [c.strip() for c in row]
        if not 3 <= len(cells) <= 5 or not all(cells[:3]):
            raise InputError(
                f"expected subject, predicate, object[, subject_kind[, object_kind]], found {excerpt(row)}",
                source=str(path),
                location=f"line {lineno}",
            )
        s, q, o = cells[:3]
        kinds = (
            cells[3] if len(cells) > 3 and cells[3] else None,
            cells[4] if len(cells) > 4 and cells[4] else None,
        )
        b.add_triple(s, q, o, where=f"{path.name} line {lineno}")
        pending.extend(
            [(s, kinds[0], f"{path.name} line {lineno}"), (o, kinds[1], f"{path.name} line {lineno}")]
        )
    for x, kind, where in pending:
        if not b.has_node(x):
            b.add_instance(x, kind=kind, where=where)
