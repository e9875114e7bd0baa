"""The corpus a test set is built from: documents with ontology categories.

One JSON object per line: ``id`` (required, unique), ``categories`` (an ontology id or a list;
the concepts the document is about — name configurable), ``type`` (document type, optional),
``source_id`` (the stable source the document comes from; default ``id``), ``session``
(optional: documents of one session/conversation are never split across sets) and any other
fields (``text``, ``title``, entitlement fields; not read here).

Compiled to a concept → documents CSR table (NumPy), so pools of documented concepts are
array operations.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.records import iter_objects


@dataclass
class TestsetCorpus:
    """Documents by position: ids, types, source ids; ``ptr``/``docs`` CSR concept → docs."""

    ids: list[str]
    types: list[str | None]
    sources: list[str]
    sessions: list[str | None]
    ptr: np.ndarray
    docs: np.ndarray
    n_unknown_categories: int = 0
    source: str = "<memory>"

    def __len__(self) -> int:
        return len(self.ids)

    def docs_of(self, concept: int) -> np.ndarray:
        """Document positions about concept index ``concept`` (ascending)."""
        return self.docs[self.ptr[concept] : self.ptr[concept + 1]]

    def n_docs(self) -> np.ndarray:
        """Documents per concept index."""
        return np.diff(self.ptr)

    def typed_mask(self, doc_type: str, n_concepts: int) -> np.ndarray:
        """Concepts with at least one document of ``doc_type``."""
        is_t = np.fromiter((t == doc_type for t in self.types), dtype=bool, count=len(self.types))
        owner = np.repeat(np.arange(n_concepts), np.diff(self.ptr))
        out = np.zeros(n_concepts, dtype=bool)
        out[owner[is_t[self.docs]]] = True
        return out

    @classmethod
    def from_docs(
        cls,
        docs: Iterable[dict[str, Any]],
        ontology: Any,
        *,
        category_field: str = "categories",
        type_field: str = "type",
        unknown_categories: str = "error",
        source: str = "<memory>",
        lines: list[int] | None = None,
    ) -> TestsetCorpus:
        index = ontology.id_index
        ids: list[str] = []
        types: list[str | None] = []
        sources: list[str] = []
        sessions: list[str | None] = []
        c_concept: list[int] = []
        c_doc: list[int] = []
        unknown = 0
        seen: set[str] = set()
        for k, d in enumerate(docs):
            loc = f"line {lines[k]}" if lines else f"document {k + 1}"
            did = d.get("id")
            if isinstance(did, int) and not isinstance(did, bool):
                did = str(did)
            if not isinstance(did, str) or not did:
                raise InputError("field id: a non-empty string is required", source=source, location=loc)
            if did in seen:
                raise InputError(f"duplicate document id {did!r}", source=source, location=loc)
            seen.add(did)
            cats = d.get(category_field)
            if cats is None:
                cats = []
            elif isinstance(cats, str):
                cats = [cats]
            elif not isinstance(cats, list) or not all(isinstance(c, str) for c in cats):
                raise InputError(
                    f"field {category_field}: an ontology id or a list of ids is required",
                    source=source,
                    location=loc,
                )
            pos = len(ids)
            for c in cats:
                i = index.get(c)
                if i is None:
                    if unknown_categories == "error":
                        hint = ontology.suggest(c) if hasattr(ontology, "suggest") else None
                        raise InputError(
                            f"field {category_field}: {c!r} is not in the ontology"
                            + (f" (did you mean {hint!r}?)" if hint else ""),
                            source=source,
                            location=loc,
                        )
                    unknown += 1
                    continue
                c_concept.append(i)
                c_doc.append(pos)
            t = d.get(type_field)
            ids.append(did)
            types.append(str(t) if t is not None else None)
            src = d.get("source_id")
            sources.append(str(src) if src not in (None, "") else did)
            ses = d.get("session")
            sessions.append(str(ses) if ses not in (None, "") else None)
        n = len(ontology)
        cc = np.asarray(c_concept, dtype=np.int64)
        cd = np.asarray(c_doc, dtype=np.int64)
        order = np.lexsort((cd, cc))
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(cc, minlength=n), out=ptr[1:])
        return cls(ids, types, sources, sessions, ptr, cd[order], unknown, source)


def read_testset_corpus(path: str | Path, ontology: Any, **options: Any) -> TestsetCorpus:
    """Read a corpus JSONL file (see the module docstring); errors name the file and line."""
    lines, docs = [], []
    for lineno, _rid, obj in iter_objects(path):
        lines.append(lineno)
        docs.append(obj)
    if not docs:
        raise InputError("the corpus is empty", source=str(path))
    return TestsetCorpus.from_docs(docs, ontology, source=str(path), lines=lines, **options)
