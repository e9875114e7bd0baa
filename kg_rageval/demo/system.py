"""A small but real baseline KG-RAG system over an ontology, and the labelled queries to test it.

**Corpus** (:func:`build_corpus`): one ``definition`` document per active concept with a
definition ("<label>: <definition>") and one ``glossary`` document per concept with synonyms
("<label> is also known as <syn1>, <syn2>."). Each document carries its concept as
``categories``, a stable ``source_id`` (``<concept id>#definition``), an entitlement field
``tenant`` (the tenants allowed to see it; about 10 % are restricted to one tenant) and a
``locale``.

**Held-out concepts** (NIL): a seeded sample of leaf concepts is removed from the linker's
dictionary and their documents from the index — the system does not know them, as if they
were missing from the ontology it was built on. Queries about them should end in NIL links
and refusals.

**Queries** (:func:`generate_queries`, built with the test-set builder
:func:`kg_rageval.testset.build_testset`; see ``docs/testset.md``), each labelled with its gold concept, gold mentions
(where the text contains them verbatim), gold documents and a reference answer; intents:

* ``label_lookup`` — "What is <label>?";
* ``synonym_lookup`` — "What is <synonym>?";
* ``description`` — the concept's definition with its own label removed ("Which disease is
  <definition>?"), a hard case: the text names *other* concepts (its parent, an organ);
* ``sibling_contrast`` — "How does <label> differ from <sibling label>?": the gold is the
  first concept, the sibling's documents are relevant at grade 1;
* ``unknown_concept`` — "What is <held-out label>?": a NIL concept (gold mention id null with
  its nearest in-ontology concept as ``nearest``, reference not answerable).

**Pipeline** (:class:`DemoSystem`): dictionary linking (the linking family's
:class:`~kg_rageval.families.linking.dictionary.DictionaryLinker`, pure Python) → the linked concept is
the longest mention (ties: the earliest); retrieval with BM25 pre-filtered by the principal's
entitlements and by the category filter ``within parent(linked concept)`` (the linked concept
itself when it is top-level) → an extractive answer: a templated lead sentence from the
ontology ("<label> is a kind of <parent> [1].") and the first sentence of the top document,
each with an inline citation marker ``[1]`` (= ``answer.citations[0]``), a structured output ``{<output_field>, "parent"}``, a confidence (the top BM25
score squashed to (0, 1)) and a refusal when nothing was linked and the best score is below
a threshold.

**Faithfulness judgment**: a deterministic extractive judge — a claim (sentence) is supported
when it occurs verbatim in a cited document. The templated lead sentence is *not* in the
documents, so it is honestly judged unsupported unless the document says it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kg_rageval.demo.bm25 import BM25
from kg_rageval.testset.kinds import clean_text
from kg_rageval.testset.kinds import first_sentence as _first_sentence

TENANTS = ("acme", "globex")


def _squash(score: float) -> float:
    return round(float(score / (score + 5.0)), 4) if score > 0 else 0.0


@dataclass
class Corpus:
    docs: list[dict[str, Any]]
    held_out: list[str]

    @property
    def indexed(self) -> list[dict[str, Any]]:
        return [d for d in self.docs if not d.get("_held_out")]


def _active_concepts(ontology: Any) -> list[int]:
    start = 1 if ontology.virtual_root else 0
    return [i for i in range(start, len(ontology)) if int(ontology.status[i]) == 0 and ontology.labels[i]]


def build_corpus(ontology: Any, rng: np.random.Generator, *, held_out_fraction: float = 0.04) -> Corpus:
    """Documents from the ontology's definitions and synonyms; a sample of leaves held out."""
    concepts = _active_concepts(ontology)
    ptr, _ = ontology.child_ptr_idx
    leaves = [i for i in concepts if ptr[i + 1] == ptr[i] and ontology.definitions[i]]
    n_hold = max(1, int(round(held_out_fraction * len(leaves))))
    held = sorted(rng.choice(len(leaves), size=min(n_hold, len(leaves)), replace=False).tolist())
    held_ids = {ontology.ids[leaves[k]] for k in held}
    docs: list[dict[str, Any]] = []
    for i in concepts:
        cid, label = ontology.ids[i], ontology.labels[i]
        u = rng.random()
        tenants = [TENANTS[0]] if u < 0.07 else ([TENANTS[1]] if u < 0.10 else list(TENANTS))
        base = {"categories": [cid], "tenant": tenants, "locale": "en", "concept": cid}
        if ontology.definitions[i]:
            docs.append(
                {
                    "id": f"doc:{cid}:def",
                    "source_id": f"{cid}#definition",
                    "type": "definition",
                    "title": label,
                    "text": f"{label}: {clean_text(ontology.definitions[i])}",
                    **base,
                }
            )
        syns = [s for s in ontology.synonyms[i] if s and s.lower() != label.lower()]
        if syns:
            docs.append(
                {
                    "id": f"doc:{cid}:syn",
                    "source_id": f"{cid}#synonyms",
                    "type": "glossary",
                    "title": label,
                    "text": f"{label} is also known as {', '.join(syns[:6])}.",
                    **base,
                }
            )
    for d in docs:
        if d["concept"] in held_ids:
            d["_held_out"] = True
    return Corpus(docs, sorted(held_ids))


def generate_queries(
    ontology: Any,
    corpus: Corpus,
    rng: np.random.Generator,
    *,
    n_label: int = 150,
    n_synonym: int = 80,
    n_description: int = 100,
    n_sibling: int = 50,
    noun: str = "disease",
) -> list[dict[str, Any]]:
    """Labelled queries built with the test-set builder (:func:`kg_rageval.testset.build_testset`):
    label, synonym and definition lookups, sibling contrasts and one NIL probe per held-out
    concept; deterministic for a given ``rng`` state (one draw seeds the builder). ``noun`` names
    the kind of concept in the description queries ("Which <noun> is ...")."""
    from kg_rageval.testset import TestsetConfig, TestsetCorpus, build_testset

    cfg = TestsetConfig(
        seed=int(rng.integers(2**31)),
        noun=noun,
        require_type="definition",
        held_out=list(corpus.held_out),
        grades={"definition": 2, "glossary": 1},
        partner_grade=1,
        id_prefix="q-",
        counts={
            "label_lookup": n_label,
            "synonym_lookup": n_synonym,
            "definition_lookup": n_description,
            "sibling_contrast": n_sibling,
            "nil_probe": len(corpus.held_out),
        },
    )
    built = build_testset(ontology, TestsetCorpus.from_docs(corpus.docs, ontology), cfg)
    queries = []
    for r in built.records:
        gold = (r.get("labels") or {}).get("gold")
        queries.append(
            {
                "intent": r["slices"]["intent"],
                "query": r["query"],
                "gold_node": gold[0] if gold else None,
                "gold_mentions": (r.get("mentions") or {}).get("gold", []),
                "gold_docs": r["retrieval"]["gold"] or None,
                "answerable": r["reference"]["answerable"],
            }
        )
    return queries


class DemoSystem:
    """The baseline pipeline: dictionary linker → filtered BM25 → extractive cited answer.
    ``use_filters=False`` drops the category filter (entitlements stay): the plain-BM25
    system the demo compares against."""

    def __init__(
        self,
        ontology: Any,
        corpus: Corpus,
        *,
        k: int = 10,
        refuse_below: float = 4.0,
        output_field: str = "disease",
        use_filters: bool = True,
    ):
        from kg_rageval.families.linking.dictionary import DictionaryLinker

        self.ontology = ontology
        self.docs = corpus.indexed
        self.linker = DictionaryLinker(ontology, ambiguous="lca", exclude=corpus.held_out)
        self.index = BM25([f"{d['title']} {d['text']}" for d in self.docs])
        self.k = k
        self.refuse_below = refuse_below
        self.output_field = output_field
        self.use_filters = use_filters
        self._cat = [self.ontology.index(d["categories"][0]) for d in self.docs]
        self._tenants = [set(d["tenant"]) for d in self.docs]

    def _within(self, node: str) -> np.ndarray:
        desc = set(self.ontology.descendant_indices(self.ontology.index(node), include_self=True).tolist())
        return np.asarray([c in desc for c in self._cat], dtype=bool)

    def filter_for(self, linked: str | None) -> list[dict[str, Any]]:
        """``within parent(linked)``; the linked concept itself when it is top-level."""
        if linked is None:
            return []
        parents = [
            p
            for p in self.ontology.parents(linked)
            if p != self.ontology.root_id or not self.ontology.virtual_root
        ]
        scope = parents[0] if parents else linked
        return [{"field": "category", "op": "within", "value": scope}]

    def link_many(self, texts: Sequence[str]) -> list[list[Any]]:
        """The linker's mentions of every query text, one batched
        :meth:`~kg_rageval.families.linking.dictionary.DictionaryLinker.find_many` call (the same links
        as one ``find`` per text); pass ``links[k]`` to :meth:`answer`."""
        return self.linker.find_many(texts)

    def answer(self, text: str, principal: dict[str, str], links: list[Any] | None = None) -> dict[str, Any]:
        """The system's output for one query; ``links``: the linker's mentions of ``text``
        when already found (:meth:`link_many`), else they are found here."""
        if links is None:
            links = self.linker.find(text)
        mentions = [lk.to_mention() for lk in links]
        linked_links = [lk for lk in links if lk.id is not None]
        linked = max(linked_links, key=lambda lk: (lk.end - lk.start, -lk.start)).id if linked_links else None
        filters = self.filter_for(linked) if self.use_filters else []
        mask = np.asarray([principal["tenant"] in t for t in self._tenants], dtype=bool)
        for f in filters:
            mask &= self._within(f["value"])
        hits = self.index.search(text, self.k, mask)
        run = [self.docs[i]["id"] for i, _ in hits]
        top_score = hits[0][1] if hits else 0.0
        contexts = [{"id": self.docs[i]["id"], "text": self.docs[i]["text"]} for i, _ in hits[:3]]
        refused = (linked is None and top_score < self.refuse_below) or not hits
        ans: dict[str, Any] = {"refused": refused, "confidence": _squash(top_score)}
        if refused:
            ans.update(text="I cannot answer this from the available documents.", citations=[])
        else:
            top = self.docs[hits[0][0]]
            concept = linked or top["concept"]
            label = self.ontology.label(concept)
            parents = [p for p in self.ontology.parents(concept) if p != self.ontology.root_id]
            sentences = []
            if parents:
                sentences.append(f"{label} is a kind of {self.ontology.label(parents[0])} [1].")
            first = _first_sentence(top["text"]).rstrip()
            sentences.append(f"{first.rstrip('.')} [1].")
            ans.update(
                text=" ".join(sentences),
                citations=[top["id"]],
                output={self.output_field: concept, "parent": parents[0] if parents else None},
            )
            if ans["output"]["parent"] is None:
                del ans["output"]["parent"]
            ans["judgment"] = _extractive_judgment(sentences, top["text"])
        return {
            "mentions": mentions,
            "linked": linked,
            "filters": filters,
            "run": run,
            "contexts": contexts,
            "answer": ans,
        }


def _extractive_judgment(sentences: list[str], source: str) -> dict[str, Any]:
    """A claim is supported when its text (citation marker removed) occurs in the cited doc."""
    claims: list[str] = []
    supported: list[str] = []
    unsupported: list[str] = []
    for s in sentences:
        c = re.sub(r"\s*\[\d+\]", "", s).strip()
        if not c or c in claims:
            continue
        claims.append(c)
        (supported if c.rstrip(".") in source else unsupported).append(c)
    return {
        "claims": claims,
        "supported": supported,
        "unsupported": unsupported,
        "failure_mode": "unsupported_claim" if unsupported else None,
        "rationale": "extractive judge: a claim is supported when it occurs verbatim in the cited document",
    }
