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

**Queries** (:func:`generate_queries`), each labelled with its gold concept, gold mentions
(where the text contains them verbatim), gold documents and a reference answer; intents:

* ``label_lookup`` — "What is <label>?";
* ``synonym_lookup`` — "What is <synonym>?";
* ``description`` — the concept's definition with its own label removed ("Which disease is
  <definition>?"), a hard case: the text names *other* concepts (its parent, an organ);
* ``sibling_contrast`` — "How does <label> differ from <sibling label>?": the gold is the
  first concept, the sibling's document is relevant at grade 1;
* ``unknown_concept`` — "What is <held-out label>?": a NIL concept (gold mention id null,
  reference not answerable).

**Pipeline** (:class:`DemoSystem`): dictionary linking (the linking family's
:class:`~kg_rageval.linking.dictionary.DictionaryLinker`, pure Python) → the linked concept is
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
from dataclasses import dataclass
from typing import Any

import numpy as np

from .bm25 import BM25

TENANTS = ("acme", "globex")
QUERY_TEMPLATES = {
    "label_lookup": "What is {label}?",
    "synonym_lookup": "What is {label}?",
    "unknown_concept": "What is {label}?",
}


def _first_sentence(text: str) -> str:
    m = re.search(r"(?<=[.!?])\s+(?=[A-Z])", text)
    return text[: m.start()] if m else text


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


_CITATION = re.compile(r"\(Citation:[^)]*\)")
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_MDLINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")


def clean_text(text: str) -> str:
    """Definition text as prose: ATT&CK's ``(Citation: ...)`` markers, HTML tags and Markdown
    links removed, whitespace collapsed."""
    text = _MDLINK.sub(r"\1", _TAG.sub("", _CITATION.sub("", text)))
    return re.sub(r"\s+", " ", text).strip()


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
            docs.append({"id": f"doc:{cid}:def", "source_id": f"{cid}#definition", "type": "definition",
                         "title": label, "text": f"{label}: {clean_text(ontology.definitions[i])}", **base})
        syns = [s for s in ontology.synonyms[i] if s and s.lower() != label.lower()]
        if syns:
            docs.append({"id": f"doc:{cid}:syn", "source_id": f"{cid}#synonyms", "type": "glossary",
                         "title": label, "text": f"{label} is also known as {', '.join(syns[:6])}.", **base})
    for d in docs:
        if d["concept"] in held_ids:
            d["_held_out"] = True
    return Corpus(docs, sorted(held_ids))


def _strip_label(definition: str, label: str, noun: str = "disease") -> str:
    text = re.sub(re.escape(label), f"this {noun}", definition, flags=re.IGNORECASE)
    text = text[0].lower() + text[1:] if text else text
    return re.sub(r"^an?\s+", "", text).rstrip(".")


def generate_queries(ontology: Any, corpus: Corpus, rng: np.random.Generator, *, n_label: int = 150,
                     n_synonym: int = 80, n_description: int = 100, n_sibling: int = 50,
                     noun: str = "disease") -> list[dict[str, Any]]:
    """Labelled queries (see the module docstring); deterministic for a given ``rng`` state.
    ``noun`` names the kind of concept in the description queries ("Which <noun> is ...")."""
    docs_of: dict[str, dict[str, str]] = {}
    for d in corpus.docs:
        docs_of.setdefault(d["concept"], {})[d["type"]] = d["id"]
    held = set(corpus.held_out)
    known = [i for i in _active_concepts(ontology) if ontology.ids[i] not in held
             and "definition" in docs_of.get(ontology.ids[i], {})]
    queries: list[dict[str, Any]] = []

    def pick(pool: list[int], n: int) -> list[int]:
        if not pool:
            return []
        return [pool[k] for k in sorted(rng.choice(len(pool), size=min(n, len(pool)), replace=False).tolist())]

    def gold_docs(cid: str, extra: dict[str, int] | None = None) -> dict[str, int]:
        g = {docs_of[cid]["definition"]: 2}
        if "glossary" in docs_of.get(cid, {}):
            g[docs_of[cid]["glossary"]] = 1
        g.update(extra or {})
        return g

    def add(intent: str, text: str, cid: str | None, mentions: list[dict[str, Any]], gold: dict[str, int] | None,
            *, answerable: bool = True) -> None:
        q: dict[str, Any] = {"intent": intent, "query": text, "gold_node": cid, "gold_mentions": mentions,
                             "gold_docs": gold, "answerable": answerable}
        queries.append(q)

    for i in pick(known, n_label):
        cid, label = ontology.ids[i], ontology.labels[i]
        text = f"What is {label}?"
        add("label_lookup", text, cid, [{"start": 8, "end": 8 + len(label), "id": cid}], gold_docs(cid))
    with_syn = [i for i in known if any(s.lower() != (ontology.labels[i] or "").lower() for s in ontology.synonyms[i])]
    for i in pick(with_syn, n_synonym):
        cid = ontology.ids[i]
        syns = [s for s in ontology.synonyms[i] if s.lower() != ontology.labels[i].lower()]
        syn = syns[int(rng.integers(len(syns)))]
        add("synonym_lookup", f"What is {syn}?", cid, [{"start": 8, "end": 8 + len(syn), "id": cid}],
            gold_docs(cid))
    for i in pick(known, n_description):
        cid, label = ontology.ids[i], ontology.labels[i]
        desc = _strip_label(_first_sentence(clean_text(ontology.definitions[i])), label, noun)
        add("description", f"Which {noun} is {desc}?", cid, [], gold_docs(cid))
    pairs = []
    for i in known:
        for p in ontology.parent_indices(i).tolist():
            sibs = [c for c in ontology.child_indices(p).tolist() if c != i and c in set(known)]
            if sibs:
                pairs.append((i, sibs[0]))
                break
    for k in pick(list(range(len(pairs))), n_sibling):
        i, s = pairs[k]
        cid, sid = ontology.ids[i], ontology.ids[s]
        a, b = ontology.labels[i], ontology.labels[s]
        text = f"How does {a} differ from {b}?"
        start_b = 9 + len(a) + len(" differ from ")
        add("sibling_contrast", text, cid,
            [{"start": 9, "end": 9 + len(a), "id": cid}, {"start": start_b, "end": start_b + len(b), "id": sid}],
            gold_docs(cid, {docs_of[sid]["definition"]: 1}))
    for cid in corpus.held_out:
        label = ontology.label(cid)
        add("unknown_concept", f"What is {label}?", None, [{"start": 8, "end": 8 + len(label), "id": None}],
            None, answerable=False)
    return queries


class DemoSystem:
    """The baseline pipeline: dictionary linker → filtered BM25 → extractive cited answer.
    ``use_filters=False`` drops the category filter (entitlements stay): the plain-BM25
    system the demo compares against."""

    def __init__(self, ontology: Any, corpus: Corpus, *, k: int = 10, refuse_below: float = 4.0,
                 output_field: str = "disease", use_filters: bool = True):
        from ..linking.dictionary import DictionaryLinker

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
        parents = [p for p in self.ontology.parents(linked) if p != self.ontology.root_id or not self.ontology.virtual_root]
        scope = parents[0] if parents else linked
        return [{"field": "category", "op": "within", "value": scope}]

    def answer(self, text: str, principal: dict[str, str]) -> dict[str, Any]:
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
            ans.update(text=" ".join(sentences), citations=[top["id"]],
                       output={self.output_field: concept, "parent": parents[0] if parents else None})
            if ans["output"]["parent"] is None:
                del ans["output"]["parent"]
            ans["judgment"] = _extractive_judgment(sentences, top["text"])
        return {"mentions": mentions, "linked": linked, "filters": filters, "run": run, "contexts": contexts,
                "answer": ans}


def _extractive_judgment(sentences: list[str], source: str) -> dict[str, Any]:
    """A claim is supported when its text (citation marker removed) occurs in the cited doc."""
    claims, supported, unsupported = [], [], []
    for s in sentences:
        c = re.sub(r"\s*\[\d+\]", "", s).strip()
        if not c or c in claims:
            continue
        claims.append(c)
        (supported if c.rstrip(".") in source else unsupported).append(c)
    return {"claims": claims, "supported": supported, "unsupported": unsupported,
            "failure_mode": "unsupported_claim" if unsupported else None,
            "rationale": "extractive judge: a claim is supported when it occurs verbatim in the cited document"}
