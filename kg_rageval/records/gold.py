"""The gold part of a record and its hash: what a test set pins.

:func:`gold_view` is the gold of one record (its id, query, slices, ``gold_node`` and the gold
keys of ``mentions``, ``labels``, ``retrieval`` and ``reference``; never a prediction), and
:func:`labels_hash` the sha256 over the canonical JSON
(:func:`~kg_rageval.base.hashing.canonical_json`) of every record's gold view, sorted by id and
joined by newlines — so reordering the records does not change it, and adding predictions to
them (``labels.pred``, ``retrieval.run``, ``answer``) does not either. The test-set manifest
records it (``labels_sha256``, :func:`kg_rageval.testset.check.testset_manifest`) and an audit
that cites the manifest recomputes it over the records it audits (``docs/testset.md``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kg_rageval.base.hashing import bytes_hash, canonical_json

GOLD_SECTIONS = ("slices", "gold_node")
"""Top-level keys of a record that are gold as a whole."""
GOLD_KEYS: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("mentions", ("gold",)),
    ("labels", ("gold",)),
    ("retrieval", ("gold", "gold_filters", "gold_node")),
    ("reference", None),
)
"""Sections and their gold keys (``None``: the whole section is gold)."""


def gold_view(rec: Mapping[str, Any]) -> dict[str, Any]:
    """The gold part of a record: what the labels hash covers."""
    out: dict[str, Any] = {"id": str(rec["id"]), "query": rec.get("query")}
    for k in GOLD_SECTIONS:
        if k in rec:
            out[k] = rec[k]
    for sec, keys in GOLD_KEYS:
        v = rec.get(sec)
        if isinstance(v, Mapping):
            out[sec] = dict(v) if keys is None else {k: v[k] for k in keys if k in v}
    return out


def labels_hash(records: Iterable[Mapping[str, Any]]) -> str:
    """``sha256:<hex>`` of the records' gold (module docstring); ``records`` is read once (a
    streamed view's records are read again chunk by chunk, and only their gold views are
    kept). Raises ``ValueError`` for a non-finite number in a gold section."""
    rows = sorted(((str(r["id"]), canonical_json(gold_view(r))) for r in records), key=lambda t: t[0])
    return bytes_hash(b"\n".join(b for _, b in rows))
