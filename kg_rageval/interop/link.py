"""Concepts from text for imported rows (``kg-rageval import ... --link ONTOLOGY``;
``docs/interop.md``, *Concepts from text*).

A source that has only text (RAGAS, DeepEval, traces) gets ontology ids from the project's
dictionary linker (:class:`kg_rageval.families.linking.dictionary.DictionaryLinker`: exact
normalised labels and synonyms; a form naming several nodes abstains). They are **linked, not
labelled**: they go to their own section, never to ``labels`` / ``reference.concepts``::

    "linked": {"by": "dictionary", "ontology": "<source>",
               "query": [ids], "answer": [ids], "contexts": [[ids] per context]}

(each list the distinct ids in text order; a part the record lacks is left out), and the
top-level branch of the query's first linked concept (its ancestor at depth 1, itself at depth
0 or 1) becomes the slice ``slices.linked_branch``, so every family's breakdowns (``slice:
linked_branch``) give per-branch numbers on day one, with the slice's name saying where the
branch came from. A record whose query links to nothing gets no slice; a record that already
has ``slices.linked_branch`` keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Record = dict[str, Any]


def _text_of(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("text"), str):
        return str(value["text"])
    return None


def _branch(ontology: Any, node: str) -> str:
    for a in ontology.ancestors(node, include_self=True):
        if int(ontology.depth_min[ontology.index(a)]) == 1:
            return str(a)
    return node


def link_records(records: list[Record], ontology: Any, *, source: str | None = None) -> dict[str, int]:
    """Add the ``linked`` section (and ``slices.linked_branch``) to ``records`` in place, as
    the module docstring says; returns counts: ``n_linked_queries`` (records whose query
    linked to a concept), ``n_mentions`` (linked mentions), ``n_abstained`` (forms naming
    several nodes, left unlinked)."""
    from kg_rageval.families.linking.dictionary import DictionaryLinker

    linker = DictionaryLinker(ontology)
    texts: list[str] = []
    where: list[tuple[int, str, int]] = []
    for k, r in enumerate(records):
        q = r.get("query")
        if isinstance(q, str):
            texts.append(q)
            where.append((k, "query", -1))
        a = _text_of(r.get("answer"))
        if a is not None:
            texts.append(a)
            where.append((k, "answer", -1))
        ctx = (r.get("retrieval") or {}).get("contexts") if isinstance(r.get("retrieval"), Mapping) else None
        if isinstance(ctx, list):
            for j, c in enumerate(ctx):
                t = _text_of(c)
                if t is not None:
                    texts.append(t)
                    where.append((k, "contexts", j))
    mentions = linker.predict_many(texts)
    counts = {"n_linked_queries": 0, "n_mentions": 0, "n_abstained": 0}
    sections: dict[int, dict[str, Any]] = {}
    for (k, part, j), ms in zip(where, mentions, strict=True):
        ids: list[str] = []
        for m in ms:
            if m["id"] is None:
                counts["n_abstained"] += 1
                continue
            counts["n_mentions"] += 1
            if m["id"] not in ids:
                ids.append(m["id"])
        sec = sections.setdefault(k, {"by": linker.name, "ontology": source})
        if part == "contexts":
            ctx = records[k]["retrieval"]["contexts"]
            sec.setdefault("contexts", [[] for _ in ctx])[j] = ids
        else:
            sec[part] = ids
    for k, sec in sections.items():
        rec = records[k]
        rec["linked"] = sec
        q = sec.get("query")
        if q:
            counts["n_linked_queries"] += 1
            slices = rec.get("slices")
            if not isinstance(slices, dict):
                slices = rec["slices"] = {}
            slices.setdefault("linked_branch", _branch(ontology, q[0]))
    return counts
