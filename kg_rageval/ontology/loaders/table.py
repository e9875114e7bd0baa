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
"""

from __future__ import annotations

import csv
from pathlib import Path

from ...errors import InputError
from ..builder import OntologyBuilder
from ..model import Ontology

_CHILD_HEADERS = {"child", "id", "node", "concept", "child_id", "node_id", "concept_id", "subclass"}
_PARENT_HEADERS = {"parent", "broader", "is_a", "parent_id", "superclass", "parents"}


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
    """Load an edge table (see the module docstring). ``triples``: a second table of relation
    triples, ``subject, predicate, object[, subject_kind[, object_kind]]`` per line (same
    delimiter rule, optional header ``subject,predicate,object``): ends that are not nodes of
    the edge table become instances of the given kind (or untyped)."""
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
        if len(row) < 2 and delimiter not in row[0]:
            # a single id on its own line declares a node without parents
            row = [row[0], ""]
        if len(row) > 3:
            raise InputError(
                f"expected 2 or 3 columns (child, parent[, label]), found {len(row)}: {row!r}",
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
            rows = list(csv.reader(fh, delimiter="\t" if path.suffix.lower() in (".tsv", ".tab") else delimiter))
    except UnicodeDecodeError as exc:
        raise InputError(f"not {encoding} text: {exc}", source=str(path)) from None
    except csv.Error as exc:
        raise InputError(f"malformed table: {exc}", source=str(path)) from None
    start = 1 if rows and [c.strip().lower() for c in rows[0][:3]] == ["subject", "predicate", "object"] else 0
    pending: list[tuple[str, str | None, str]] = []
    for lineno, row in enumerate(rows[start:], start=start + 1):
        if not row or all(not c.strip() for c in row) or row[0].lstrip().startswith("#"):
            continue
        cells = [c.strip() for c in row]
        if not 3 <= len(cells) <= 5 or not all(cells[:3]):
            raise InputError(f"expected subject, predicate, object[, subject_kind[, object_kind]], found {row!r}",
                             source=str(path), location=f"line {lineno}")
        s, q, o = cells[:3]
        kinds = (cells[3] if len(cells) > 3 and cells[3] else None, cells[4] if len(cells) > 4 and cells[4] else None)
        b.add_triple(s, q, o, where=f"{path.name} line {lineno}")
        pending.extend([(s, kinds[0], f"{path.name} line {lineno}"), (o, kinds[1], f"{path.name} line {lineno}")])
    for x, kind, where in pending:
        if not b.has_node(x):
            b.add_instance(x, kind=kind, where=where)
