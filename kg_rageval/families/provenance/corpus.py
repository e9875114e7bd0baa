"""The corpus snapshot that citations must resolve to.

A corpus file is JSONL, one document per line::

    {"id": "doc-12", "source_id": "attack:T1003.001", "categories": ["T1003"], "text": "..."}

``id`` (required, unique) is what records cite and list as gold evidence; ``source_id`` is the
stable id of the source document the row was cut from (a URL, a DOI, an ATT&CK id ...). A
``source_id`` that is missing, empty or looks like a content hash (``sha256:…``/``md5:…`` or 16+
hex digits alone) does **not** count as stable. Other fields are kept but unused here.

``corpus_hash`` is ``sha256:`` + the SHA-256 of the file's bytes: the snapshot id a run
manifest must record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.base.hashing import file_hash
from kg_rageval.records import iter_objects

_HASHLIKE = re.compile(r"^(?:(?:sha1|sha256|sha512|md5|blake2b?)[:-])?[0-9a-fA-F]{16,}$")


def is_stable_source_id(value: Any) -> bool:
    """A non-empty string that is not just a content hash."""
    return isinstance(value, str) and bool(value.strip()) and not _HASHLIKE.match(value.strip())


@dataclass
class Corpus:
    """Documents by id, with the snapshot hash of the file they came from."""

    docs: dict[str, dict[str, Any]]
    source: str = "<memory>"
    hash: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self.docs

    def __len__(self) -> int:
        return len(self.docs)

    def source_id(self, doc_id: str) -> str | None:
        d = self.docs.get(doc_id)
        return None if d is None else d.get("source_id")


def read_corpus(path: str | Path) -> Corpus:
    """Read a corpus JSONL file (see the module docstring); bad rows and a file without documents
    raise :class:`InputError`."""
    docs: dict[str, dict[str, Any]] = {}
    for lineno, did, obj in iter_objects(path, what="document"):
        sid = obj.get("source_id")
        if sid is not None and not isinstance(sid, str):
            raise InputError(
                f"field 'source_id' must be a string, found {sid!r}",
                source=str(path),
                location=f"line {lineno}",
            )
        docs[did] = obj
    if not docs:
        # every citation would silently count as unresolved: an empty snapshot is bad input
        raise InputError("the corpus has no documents", source=str(path))
    return Corpus(docs, source=str(path), hash=file_hash(path))


def load_corpus(path: str | Path) -> Corpus:
    """The provenance corpus reader. :mod:`kg_rageval.families.retrieval.corpus` reads the same file
    format but defaults a missing ``source_id`` to the ``id`` and checks categories against
    the ontology (it is built for filter replay); a provenance audit must see that a source id
    was *not* recorded, and needs no categories, so it reads the rows itself."""
    return read_corpus(path)
