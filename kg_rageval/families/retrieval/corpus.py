"""The document corpus: ids, stable source ids, ontology categories and metadata fields.

A corpus file is JSONL, one document per line::

    {"id": "doc-12", "source_id": "kb://policies/42#v3", "categories": ["TA0006"],
     "tenant": "acme", "jurisdiction": ["NL", "EU"], "status": "published", "locale": "en-US"}

* ``id`` (required, unique) and ``source_id`` (optional: the stable id of the source the
  document, chunk or version comes from; defaults to ``id``).
* ``categories`` (name configurable: ``category_field``): one ontology id or a list; every id
  must be in the ontology (an unknown id raises, naming the line), unless
  ``unknown_categories="ignore"``, which drops and counts them.
* Every other top-level field (and the fields of an optional ``metadata`` object) is a
  metadata field usable by filters; a list value means several values. Values are compared as
  strings (numbers and booleans in their JSON spelling).
* **Entitlement fields** (``entitlement_fields``, default ``tenant``, ``jurisdiction``,
  ``status``) decide eligibility; see :meth:`Corpus.eligible`.

Internally every field is a CSR table (doc → sorted value codes) and the categories a CSR
table of ontology indices, so filters replay vectorised (:mod:`.filters`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError, UnknownIdError
from kg_rageval.records import iter_jsonl

DEFAULT_ENTITLEMENT_FIELDS = ("tenant", "jurisdiction", "status")
RESERVED = ("id", "source_id", "metadata")


def value_key(v: Any) -> str:
    """The string a metadata value is compared as (JSON spelling for non-strings)."""
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


@dataclass
class FieldTable:
    """One metadata field: ``ptr``/``codes`` CSR (doc → ascending value codes)."""

    name: str
    ptr: np.ndarray
    codes: np.ndarray
    values: dict[str, int]

    def code(self, value: Any) -> int:
        return self.values.get(value_key(value), -1)


@dataclass
class Corpus:
    """Compiled corpus (see the module docstring)."""

    ids: list[str]
    source_ids: list[str]
    cat_ptr: np.ndarray
    cat_idx: np.ndarray
    fields: dict[str, FieldTable]
    category_field: str = "categories"
    entitlement_fields: tuple[str, ...] = DEFAULT_ENTITLEMENT_FIELDS
    source: str = "<memory>"
    diagnostics: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index: dict[str, int] = {d: i for i, d in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def lookup(self, ids: Sequence[str]) -> np.ndarray:
        """Corpus indices of document ids (-1 for ids not in the corpus)."""
        return np.fromiter(map(self.index.get, ids, itertools.repeat(-1)), dtype=np.int64, count=len(ids))

    def categories_of(self, doc: int) -> np.ndarray:
        return self.cat_idx[self.cat_ptr[doc] : self.cat_ptr[doc + 1]]

    # ------------------------------------------------------------------ building
    @classmethod
    def from_records(
        cls,
        docs: Iterable[Mapping[str, Any]],
        ontology,
        *,
        category_field: str = "categories",
        entitlement_fields: Sequence[str] = DEFAULT_ENTITLEMENT_FIELDS,
        unknown_categories: str = "error",
        source: str = "<memory>",
        _lines: Sequence[int] | None = None,
    ) -> Corpus:
        if unknown_categories not in ("error", "ignore"):
            raise InputError(f"unknown_categories must be 'error' or 'ignore', not {unknown_categories!r}")
        ids: list[str] = []
        sources: list[str] = []
        cat_lens: list[int] = []
        cats: list[int] = []
        field_rows: dict[str, tuple[list[int], list[int], dict[str, int]]] = {}
        seen: dict[str, int] = {}
        oindex = ontology.id_index
        n_unknown = 0
        for pos, d in enumerate(docs):
            loc = f"line {_lines[pos]}" if _lines is not None else f"document {pos}"
            if not isinstance(d, Mapping):
                raise InputError(
                    f"expected a JSON object, found {type(d).__name__}", source=source, location=loc
                )
            did = d.get("id")
            if not isinstance(did, (str, int)) or isinstance(did, bool) or did == "":
                raise InputError(
                    "field 'id' is missing or not a non-empty string", source=source, location=loc
                )
            did = str(did)
            if did in seen:
                raise InputError(
                    f"duplicate document id {did!r} (first at {seen[did]})", source=source, location=loc
                )
            seen[did] = loc  # type: ignore[assignment]
            ids.append(did)
            sources.append(str(d.get("source_id", did)))
            raw = d.get(category_field, [])
            raw = [raw] if isinstance(raw, str) else (raw or [])
            if not isinstance(raw, list):
                raise InputError(
                    f"field {category_field!r} must be an id or a list of ids, found {raw!r}",
                    source=source,
                    location=loc,
                )
            row = []
            for c in raw:
                i = oindex.get(c, -1) if isinstance(c, str) else -1
                if i < 0:
                    if unknown_categories == "error":
                        raise UnknownIdError(str(c), where=f"{source}, {loc}, field {category_field}")
                    n_unknown += 1
                    continue
                row.append(i)
            row = sorted(set(row))
            cat_lens.append(len(row))
            cats.extend(row)
            meta = dict(d.get("metadata") or {}) if isinstance(d.get("metadata"), Mapping) else {}
            for k, v in d.items():
                if k not in RESERVED and k != category_field:
                    meta[k] = v
            for k, v in meta.items():
                vals = v if isinstance(v, list) else [v]
                rows, codes, vocab = field_rows.setdefault(k, ([], [], {}))
                cs = sorted({vocab.setdefault(value_key(x), len(vocab)) for x in vals if x is not None})
                rows.extend([pos] * len(cs))
                codes.extend(cs)
        n = len(ids)
        cat_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(cat_lens, out=cat_ptr[1:])
        fields: dict[str, FieldTable] = {}
        for k, (rows, codes, vocab) in field_rows.items():
            r = np.asarray(rows, dtype=np.int64)
            c = np.asarray(codes, dtype=np.int64)
            order = np.lexsort((c, r))
            ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(r, minlength=n), out=ptr[1:])
            fields[k] = FieldTable(k, ptr, c[order], vocab)
        return cls(
            ids,
            sources,
            cat_ptr,
            np.asarray(cats, dtype=np.int64),
            fields,
            category_field,
            tuple(entitlement_fields),
            source,
            {"unknown_categories_dropped": n_unknown},
        )

    @classmethod
    def from_arrays(
        cls,
        ids: list[str],
        cat_ptr: np.ndarray,
        cat_idx: np.ndarray,
        fields: Mapping[str, tuple[np.ndarray, np.ndarray, Sequence[str]]] | None = None,
        **kw: Any,
    ) -> Corpus:
        """Build from arrays (benchmarks, generated corpora): ``fields[name] = (ptr, codes,
        value strings)`` with codes ascending within each document."""
        tables = {
            k: FieldTable(k, np.asarray(p), np.asarray(c), {v: i for i, v in enumerate(vals)})
            for k, (p, c, vals) in dict(fields or {}).items()
        }
        return cls(list(ids), list(ids), np.asarray(cat_ptr), np.asarray(cat_idx), tables, **kw)

    # ------------------------------------------------------------------ entitlement
    def check_principal(self, principal: Mapping[str, Any], where: str = "principal") -> None:
        bad = sorted(set(principal) - set(self.entitlement_fields))
        if bad:
            raise InputError(
                f"{where}: {bad} are not entitlement fields; allowed: {list(self.entitlement_fields)} "
                "(configure entitlement_fields)"
            )

    def eligible(self, docs: np.ndarray, principal: Mapping[str, Any] | None) -> np.ndarray:
        """Which of ``docs`` (corpus indices, all >= 0) the principal may see.

        For every entitlement field the principal names (a value or a list of values), the
        document must carry at least one of those values; a document without the field is *not*
        eligible (fail closed). Fields the principal does not name do not restrict. No principal
        (``None``) means every document is eligible."""
        docs = np.asarray(docs, dtype=np.int64)
        if not principal:
            return np.ones(len(docs), dtype=bool)
        return eligible_pairs(self, np.zeros(len(docs), dtype=np.int64), docs, [principal])


def eligible_pairs(
    corpus: Corpus,
    pair_group: np.ndarray,
    pair_doc: np.ndarray,
    principals: Sequence[Mapping[str, Any] | None],
) -> np.ndarray:
    """:meth:`Corpus.eligible` for many (group, document) pairs at once, each group with its
    own principal (``None``: everything eligible). Vectorised: for each entitlement field the
    groups' principals fall into a few classes (the same values for that field: records repeat
    a few principals), each class's allowed value codes are resolved once, and every (pair,
    document value) is looked up among the allowed (class, value) keys with one
    ``searchsorted``."""
    pair_group = np.asarray(pair_group, dtype=np.int64)
    pair_doc = np.asarray(pair_doc, dtype=np.int64)
    ok = np.ones(len(pair_doc), dtype=bool)
    given = [pr for pr in principals if pr]
    if not given or not len(pair_doc):
        return ok
    fields = set(itertools.chain.from_iterable(given))  # ``ok &=`` per field: any order
    for f in sorted(fields):
        table = corpus.fields.get(f)
        # the class of each group's value for f: NOT_GIVEN (unrestricted) or its value keys
        classes: dict[Any, int] = {_NOT_GIVEN: 0}
        cls = np.fromiter(
            (classes.setdefault(_class_key(pr, f), len(classes)) for pr in principals),
            dtype=np.int64,
            count=len(principals),
        )
        sel = cls[pair_group] > 0
        if table is None:
            ok &= ~sel
            continue
        allowed_codes = {
            c: sorted({table.code(v) for v in _class_values(key)} - {-1}) for key, c in classes.items() if c
        }
        idx = np.flatnonzero(sel)
        ndoc, ncode = len(table.ptr) - 1, len(table.codes)
        if len(allowed_codes) * (ndoc + ncode) <= len(idx):
            # fewer (class, document) cells than pairs: decide each cell once, then look up
            ok[idx] &= _class_table(table, allowed_codes, len(classes))[cls[pair_group[idx]], pair_doc[idx]]
            continue
        C = len(table.values) + 1
        keys = [c * C + code for c, codes_ in allowed_codes.items() for code in codes_]
        docs = pair_doc[idx]
        lens = table.ptr[docs + 1] - table.ptr[docs]
        rep = np.repeat(np.arange(len(idx)), lens)
        offs = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        codes = table.codes[np.repeat(table.ptr[docs], lens) + offs]
        allowed = np.unique(np.asarray(keys, dtype=np.int64))
        want_keys = cls[pair_group[idx]][rep] * C + codes
        pos = np.minimum(np.searchsorted(allowed, want_keys), max(len(allowed) - 1, 0))
        hit = (allowed[pos] == want_keys) if len(allowed) else np.zeros(len(want_keys), dtype=bool)
        any_hit = np.bincount(rep[hit], minlength=len(idx)) > 0
        ok[idx] &= any_hit
    return ok


def _class_table(table: FieldTable, allowed: Mapping[int, Sequence[int]], n_classes: int) -> np.ndarray:
    """``(n_classes, documents)`` booleans: does the document carry one of class ``c``'s
    allowed value codes of ``table`` (a document without the field: no)? Row 0, the
    unrestricted class, is not filled (its pairs are not looked up)."""
    ndoc = len(table.ptr) - 1
    doc_of_code = np.repeat(np.arange(ndoc, dtype=np.int64), np.diff(table.ptr))
    out = np.zeros((n_classes, ndoc), dtype=bool)
    wanted = np.zeros(len(table.values) + 1, dtype=bool)
    for c, codes in allowed.items():
        wanted[:] = False
        wanted[np.asarray(codes, dtype=np.int64)] = True
        out[c, doc_of_code[wanted[table.codes]]] = True
    return out


_NOT_GIVEN = object()
"""The class of a principal that does not name a field (or no principal): unrestricted."""


def _class_key(pr: Mapping[str, Any] | None, f: str) -> Any:
    """What a principal's value for entitlement field ``f`` is compared as: a string value is
    its own key; a list the tuple of its :func:`value_key` strings; another value the 1-tuple
    of its key (so ``1`` and ``"1"``, compared as the same string, may be two classes with the
    same codes)."""
    if not pr or f not in pr:
        return _NOT_GIVEN
    v = pr[f]
    if type(v) is str:
        return v
    return tuple(map(value_key, v)) if isinstance(v, list) else (value_key(v),)


def _class_values(key: Any) -> tuple[str, ...]:
    return (key,) if type(key) is str else key


def rows_contain(ptr: np.ndarray, idx: np.ndarray, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For each pair ``(rows[i], values[i])``: does CSR row ``rows[i]`` (ascending) contain
    ``values[i]``? Vectorised bisection over all pairs at once."""
    lo = ptr[rows].copy()
    hi = ptr[rows + 1].copy()
    end = hi.copy()
    active = lo < hi
    while active.any():
        mid = (lo + hi) >> 1
        less = np.zeros(len(lo), dtype=bool)
        less[active] = idx[mid[active]] < values[active]
        lo = np.where(active & less, mid + 1, lo)
        hi = np.where(active & ~less, mid, hi)
        active = lo < hi
    found = lo < end
    out = np.zeros(len(rows), dtype=bool)
    out[found] = idx[lo[found]] == values[found]
    return out


def rows_contain_any(ptr: np.ndarray, idx: np.ndarray, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For each row in ``rows``: does it contain any of ``values`` (one shared value set)?"""
    out = np.zeros(len(rows), dtype=bool)
    for v in np.asarray(values).tolist():
        out |= rows_contain(ptr, idx, rows, np.full(len(rows), v, dtype=np.int64))
    return out


def read_corpus(
    path: str | Path,
    ontology,
    *,
    category_field: str = "categories",
    entitlement_fields: Sequence[str] = DEFAULT_ENTITLEMENT_FIELDS,
    unknown_categories: str = "error",
) -> Corpus:
    """Read a corpus JSONL file (see the module docstring); errors name the file and line."""
    lines, docs = [], []
    for lineno, obj in iter_jsonl(path):
        lines.append(lineno)
        docs.append(obj)
    return Corpus.from_records(
        docs,
        ontology,
        category_field=category_field,
        entitlement_fields=entitlement_fields,
        unknown_categories=unknown_categories,
        source=str(path),
        _lines=lines,
    )
