"""``build_testset``: labelled test cases from an ontology and a corpus (see :mod:`.kinds`).

Deterministic: kind ``k`` draws from ``numpy.random.default_rng([seed, k])``, so a given seed,
ontology, corpus and config write byte-identical records, and changing one kind's count never
changes the cases of another kind. Eligibility is decided with array operations over the
compiled index (documents per concept, known children per node, a known sibling per node);
each drawn case then reads its parents/children rows.

Every record is gold-only (the system under test fills ``labels.pred``, ``retrieval.run``,
``answer``): ``query``, ``slices`` (``intent``, ``case_kind``, ``doc_type`` and, for
quantifiers, ``quantifier``), ``mentions.gold``, ``labels.gold``, ``retrieval.gold`` (graded by
document type), ``retrieval.gold_filters`` where the query states a constraint,
``reference.answerable`` (and ``reference.answer``: the gold concept's definition) and a
``testset`` section: kind, template, the concepts involved, their relation, the source ids the
case was made from, the session, distractor documents, the nearest concept of a NIL probe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.testset.config import TestsetConfig
from kg_rageval.testset.corpus import TestsetCorpus
from kg_rageval.testset.holdout import nearest_kept, without_leaves
from kg_rageval.testset.kinds import DEFAULT_INTENTS, KINDS, OFF_TOPIC, TEMPLATES, clean_text, describe, fill

ACTIVE = 0


@dataclass
class BuildResult:
    records: list[dict[str, Any]]
    held_out: list[str]
    nearest: dict[str, str | None]
    heldout_ontology: Any
    requested: dict[str, int]
    produced: dict[str, int]
    paraphrase: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def shortfall(self) -> dict[str, int]:
        """Kinds with fewer cases than requested (the ontology or corpus had too few)."""
        return {
            k: self.requested[k] - self.produced.get(k, 0)
            for k in self.requested
            if self.requested[k] > self.produced.get(k, 0)
        }


class _Builder:
    def __init__(self, ontology: Any, corpus: TestsetCorpus, cfg: TestsetConfig):
        self.o, self.c, self.cfg = ontology, corpus, cfg
        o = ontology
        n = len(o)
        self.n = n
        labelled = np.fromiter((bool(x) for x in o.labels), dtype=bool, count=n)
        usable = (np.asarray(o.status) == ACTIVE) & labelled
        if o.virtual_root:
            usable[0] = False
        self.usable = usable
        ndocs = corpus.n_docs()
        documented = ndocs > 0
        if cfg.require_type is not None:
            documented &= corpus.typed_mask(cfg.require_type, n)
        self.documented = documented
        self.grade = np.asarray(
            [
                cfg.grades.get(t, cfg.default_grade) if t is not None else cfg.default_grade
                for t in corpus.types
            ],
            dtype=np.int64,
        )
        self.child_ptr, self.child_idx = o.child_ptr_idx
        self.edge_child = np.repeat(np.arange(n), np.diff(o.parent_ptr))
        self.edge_parent = o.parent_idx.astype(np.int64)
        self.real_edge = (
            self.edge_parent != 0 if o.virtual_root else np.ones(len(self.edge_parent), dtype=bool)
        )
        self.held: set[int] = set()
        self.known = usable & documented
        self.records: list[dict[str, Any]] = []
        self.intents = DEFAULT_INTENTS | cfg.intents

    # -------------------------------------------------------------- eligibility (vectorised)
    def set_held_out(self, held: list[int]) -> None:
        self.held = set(held)
        self.known = self.usable & self.documented
        if held:
            self.known[np.asarray(held)] = False
            self.usable = self.usable.copy()
            self.usable[np.asarray(held)] = False
        k = self.known
        e = self.real_edge
        # known children per node; a node has a known sibling when one of its real parents has
        # another known child
        self.n_known_children = np.bincount(self.edge_parent[e & k[self.edge_child]], minlength=self.n)
        other = self.n_known_children[self.edge_parent] - k[self.edge_child].astype(np.int64)
        self.has_sibling = np.zeros(self.n, dtype=bool)
        self.has_sibling[self.edge_child[e & (other >= 1)]] = True
        self.has_known_parent = np.zeros(self.n, dtype=bool)
        self.has_known_parent[self.edge_child[e & k[self.edge_parent]]] = True
        self.has_usable_parent = np.zeros(self.n, dtype=bool)
        self.has_usable_parent[self.edge_child[e & self.usable[self.edge_parent]]] = True

    def pool(self, mask: np.ndarray) -> np.ndarray:
        return np.flatnonzero(mask)

    # -------------------------------------------------------------- ontology rows
    def parents(self, i: int) -> list[int]:
        return [int(p) for p in self.o.parent_indices(i).tolist() if not (self.o.virtual_root and p == 0)]

    def children(self, i: int) -> list[int]:
        return [int(c) for c in self.child_idx[self.child_ptr[i] : self.child_ptr[i + 1]].tolist()]

    def siblings(self, i: int, parent: int | None = None) -> list[int]:
        ps = [parent] if parent is not None else self.parents(i)
        out: set[int] = set()
        for p in ps:
            out.update(c for c in self.children(p) if c != i and self.known[c])
        return sorted(out)

    def cousins(self, i: int, rng: np.random.Generator, tries: int = 12) -> list[int]:
        """A few known cousins of ``i`` (checked with :meth:`Ontology.relation_index`)."""
        cands: set[int] = set()
        for p in self.parents(i):
            for g in self.parents(p):
                for u in self.children(g):
                    if u != p:
                        cands.update(c for c in self.children(u) if self.known[c])
        cands.discard(i)
        if not cands:
            return []
        arr = sorted(cands)
        picks = [arr[k] for k in rng.permutation(len(arr))[:tries].tolist()]
        return [c for c in picks if self.o.relation_index(i, c) == "cousin"]

    # -------------------------------------------------------------- record parts
    def docs(self, concepts: list[int], grade: int | None = None) -> dict[int, int]:
        out: dict[int, int] = {}
        for ci in concepts:
            for d in self.c.docs_of(ci).tolist():
                g = int(self.grade[d]) if grade is None else grade
                if g > out.get(d, 0):
                    out[d] = g
        return out

    def gold_dict(self, docs: dict[int, int]) -> dict[str, int]:
        return {self.c.ids[d]: g for d, g in sorted(docs.items(), key=lambda kv: (-kv[1], kv[0]))}

    def add(
        self,
        kind: str,
        tkey: str,
        slots: dict[str, str],
        concepts: dict[str, int | None],
        *,
        gold: list[int] | None,
        docs: dict[int, int],
        answerable: bool,
        extra: dict[str, Any] | None = None,
        filters: list[dict[str, Any]] | None = None,
        nearest: int | None = None,
        more_sources: Sequence[int] = (),
        session: str | None = None,
        slices: dict[str, str] | None = None,
    ) -> None:
        o = self.o
        text, spans = fill(TEMPLATES[tkey], {"noun": self.cfg.noun, **slots})
        mentions = []
        for slot, ci in concepts.items():
            s, e = spans[slot]
            m: dict[str, Any] = {"start": s, "end": e, "id": o.ids[ci] if ci is not None else None}
            if ci is None and nearest is not None:
                m["nearest"] = o.ids[nearest]
            mentions.append(m)
        mentions.sort(key=lambda m: m["start"])
        rec: dict[str, Any] = {
            "id": f"{self.cfg.id_prefix}{len(self.records) + 1:06d}",
            "query": text,
            "slices": {"intent": self.intents[kind], "case_kind": kind, **(slices or {})},
        }
        if mentions:
            rec["mentions"] = {"gold": mentions}
        if gold is not None:
            rec["labels"] = {"gold": [o.ids[g] for g in gold]}
        ret: dict[str, Any] = {"gold": self.gold_dict(docs)}
        if filters:
            ret["gold_filters"] = filters
        rec["retrieval"] = ret
        if docs:
            first = min(docs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
            t = self.c.types[first]
            if t is not None:
                rec["slices"]["doc_type"] = t
        ref: dict[str, Any] = {"answerable": answerable}
        if answerable and gold and len(gold) == 1 and o.definitions[gold[0]]:
            ref["answer"] = clean_text(o.definitions[gold[0]])
        rec["reference"] = ref
        src_docs = sorted(set(docs) | set(more_sources))
        sources = sorted({self.c.sources[d] for d in src_docs})
        if session is None:
            sess = sorted({s for s in (self.c.sessions[d] for d in src_docs) if s is not None})
            session = sess[0] if sess else None
        ts: dict[str, Any] = {
            "kind": kind,
            "template": TEMPLATES[tkey],
            "concepts": {k: (o.ids[v] if v is not None else None) for k, v in concepts.items()},
            "sources": sources,
        }
        if session is not None:
            ts["session"] = session
        ts.update(extra or {})
        rec["testset"] = ts
        self.records.append(rec)

    def label(self, i: int) -> str:
        return self.o.labels[i]


def _draw(rng: np.random.Generator, pool: np.ndarray) -> list[int]:
    return pool[rng.permutation(len(pool))].tolist() if len(pool) else []


def _kind_label_lookup(b: _Builder, rng, n: int) -> None:
    for i in _draw(rng, b.pool(b.known))[:n]:
        b.add(
            "label_lookup",
            "label_lookup",
            {"label": b.label(i)},
            {"label": i},
            gold=[i],
            docs=b.docs([i]),
            answerable=True,
        )


def _kind_synonym_lookup(b: _Builder, rng, n: int) -> None:
    o = b.o
    has_syn = np.fromiter(
        (any(s and s.lower() != (o.labels[i] or "").lower() for s in o.synonyms[i]) for i in range(b.n)),
        dtype=bool,
        count=b.n,
    )
    for i in _draw(rng, b.pool(b.known & has_syn))[:n]:
        syns = [s for s in o.synonyms[i] if s and s.lower() != o.labels[i].lower()]
        syn = syns[int(rng.integers(len(syns)))]
        b.add(
            "synonym_lookup",
            "synonym_lookup",
            {"synonym": syn},
            {"synonym": i},
            gold=[i],
            docs=b.docs([i]),
            answerable=True,
            extra={"synonym": syn},
        )


def _kind_definition_lookup(b: _Builder, rng, n: int) -> None:
    o = b.o
    has_def = np.fromiter((bool(d) for d in o.definitions), dtype=bool, count=b.n)
    done = 0
    for i in _draw(rng, b.pool(b.known & has_def)):
        if done >= n:
            break
        desc = describe(o.definitions[i], o.labels[i], b.cfg.noun)
        if len(desc) < 8:
            continue
        b.add(
            "definition_lookup",
            "definition_lookup",
            {"description": desc},
            {},
            gold=[i],
            docs=b.docs([i]),
            answerable=True,
            extra={"concepts": {"gold": o.ids[i]}},
        )
        done += 1


def _kind_sibling_contrast(b: _Builder, rng, n: int) -> None:
    for i in _draw(rng, b.pool(b.known & b.has_sibling))[:n]:
        sibs = b.siblings(i)
        s = sibs[int(rng.integers(len(sibs)))]
        docs = b.docs([s], grade=b.cfg.partner_grade)
        docs.update(b.docs([i]))
        b.add(
            "sibling_contrast",
            "sibling_contrast",
            {"label": b.label(i), "partner": b.label(s)},
            {"label": i, "partner": s},
            gold=[i],
            docs=docs,
            answerable=True,
            extra={"partner": b.o.ids[s], "relation": "sibling"},
        )


def _kind_generalisation(b: _Builder, rng, n: int) -> None:
    for i in _draw(rng, b.pool(b.known & b.has_known_parent))[:n]:
        ps = [p for p in b.parents(i) if b.known[p]]
        b.add(
            "generalisation",
            "generalisation",
            {"label": b.label(i)},
            {"label": i},
            gold=ps,
            docs=b.docs(ps),
            answerable=True,
            extra={"relation": "parent"},
        )


def _kind_specialisation(b: _Builder, rng, n: int) -> None:
    for i in _draw(rng, b.pool(b.known & (b.n_known_children >= 1)))[:n]:
        cs = [c for c in b.children(i) if b.known[c]]
        b.add(
            "specialisation",
            "specialisation",
            {"label": b.label(i)},
            {"label": i},
            gold=cs,
            docs=b.docs(cs),
            answerable=True,
            extra={"relation": "child"},
        )


def _kind_counterfactual(b: _Builder, rng, n: int) -> None:
    """Pairs: the original case and the same template with the concept swapped for a sibling or a
    cousin (alternating preference); both share a session so a split keeps them together."""
    made = 0
    pair = 0
    for i in _draw(rng, b.pool(b.known)):
        if made >= n:
            break
        want_cousin = pair % 2 == 1
        cands = b.cousins(i, rng) if want_cousin else b.siblings(i)
        rel = "cousin" if want_cousin else "sibling"
        if not cands:
            cands, rel = (b.siblings(i), "sibling") if want_cousin else (b.cousins(i, rng), "cousin")
        if not cands:
            continue
        s = cands[int(rng.integers(len(cands)))]
        pair += 1
        session = f"counterfactual-{pair:05d}"
        oid = f"{b.cfg.id_prefix}{len(b.records) + 1:06d}"
        b.add(
            "counterfactual",
            "counterfactual",
            {"label": b.label(i)},
            {"label": i},
            gold=[i],
            docs=b.docs([i]),
            answerable=True,
            session=session,
            extra={"role": "original", "pair": session},
        )
        made += 1
        if made >= n:
            break
        b.add(
            "counterfactual",
            "counterfactual",
            {"label": b.label(s)},
            {"label": s},
            gold=[s],
            docs=b.docs([s]),
            answerable=True,
            session=session,
            extra={
                "role": "swapped",
                "pair": session,
                "swapped_from": b.o.ids[i],
                "swap_relation": rel,
                "original": oid,
            },
        )
        made += 1


def _kind_distractor(b: _Builder, rng, n: int) -> None:
    done = 0
    for i in _draw(rng, b.pool(b.known)):
        if done >= n:
            break
        near, rel = b.siblings(i), "sibling"
        if not near:
            near, rel = b.cousins(i, rng), "cousin"
        if not near:
            continue
        s = near[int(rng.integers(len(near)))]
        gold = b.docs([i])
        distract = [d for d in b.c.docs_of(s).tolist() if d not in gold]
        if not distract:
            continue
        b.add(
            "distractor",
            "distractor",
            {"label": b.label(i)},
            {"label": i},
            gold=[i],
            docs=gold,
            answerable=True,
            more_sources=distract,
            extra={"near_miss": b.o.ids[s], "relation": rel, "distractors": [b.c.ids[d] for d in distract]},
        )
        done += 1


def _kind_negation(
    b: _Builder,
    rng,
    n: int,
    *,
    kind: str = "negation",
    tkey: str = "negation",
    slices: dict[str, str] | None = None,
) -> None:
    done = 0
    for i in _draw(rng, b.pool(b.known & b.has_sibling & b.has_usable_parent)):
        if done >= n:
            break
        ps = [p for p in b.parents(i) if b.usable[p] and b.siblings(i, p)]
        if not ps:
            continue
        p = ps[int(rng.integers(len(ps)))]
        sibs = b.siblings(i, p)
        filters = [
            {"field": b.cfg.category_field, "op": "within", "value": b.o.ids[p]},
            {"field": b.cfg.category_field, "op": "not_in", "value": [b.o.ids[i]]},
        ]
        b.add(
            kind,
            tkey,
            {"label": b.label(i), "parent": b.label(p)},
            {"parent": p, "label": i},
            gold=sibs,
            docs=b.docs(sibs),
            answerable=True,
            filters=filters,
            slices=slices,
            extra={"excluded": b.o.ids[i], "parent": b.o.ids[p], "relation": "sibling"},
        )
        done += 1


def _kind_quantifier(b: _Builder, rng, n: int) -> None:
    """A third each: "except" (the siblings), "only" (documents about the concept alone), "all"
    (every known descendant)."""
    n_except, n_only = (n + 2) // 3, (n + 1) // 3
    n_all = n - n_except - n_only
    _kind_negation(
        b, rng, n_except, kind="quantifier", tkey="quantifier:except", slices={"quantifier": "except"}
    )
    c = b.c
    # documents about exactly one concept
    per_doc = np.bincount(c.docs, minlength=len(c))
    done = 0
    for i in _draw(rng, b.pool(b.known)):
        if done >= n_only:
            break
        only = [d for d in c.docs_of(i).tolist() if per_doc[d] == 1]
        if not only:
            continue
        docs = {d: int(b.grade[d]) for d in only}
        b.add(
            "quantifier",
            "quantifier:only",
            {"label": b.label(i)},
            {"label": i},
            gold=[i],
            docs=docs,
            answerable=True,
            filters=[{"field": c_field(b), "op": "eq", "value": b.o.ids[i]}],
            slices={"quantifier": "only"},
            more_sources=[d for d in c.docs_of(i).tolist() if d not in docs],
        )
        done += 1
    done = 0
    for i in _draw(rng, b.pool(b.known & (b.n_known_children >= 1))):
        if done >= n_all:
            break
        desc = [int(d) for d in b.o.descendant_indices(i, include_self=False).tolist() if b.known[d]]
        if not desc or len(desc) > 200:
            continue
        b.add(
            "quantifier",
            "quantifier:all",
            {"label": b.label(i)},
            {"label": i},
            gold=desc,
            docs=b.docs(desc),
            answerable=True,
            filters=[{"field": c_field(b), "op": "within", "value": b.o.ids[i]}],
            slices={"quantifier": "all"},
            extra={"relation": "descendant"},
        )
        done += 1


def c_field(b: _Builder) -> str:
    return b.cfg.category_field


def _kind_out_of_scope(b: _Builder, rng, n: int) -> None:
    """Half: concepts in the ontology without any document (the corpus cannot answer); the rest:
    off-topic questions (more undocumented concepts once the off-topic list is used up; all
    off-topic when every concept is documented)."""
    undocumented = _draw(rng, b.pool(b.usable & (b.c.n_docs() == 0)))
    topics = list(b.cfg.off_topic if b.cfg.off_topic is not None else OFF_TOPIC)
    n_topics = min(len(topics), n - min(n // 2, len(undocumented)))
    for i in undocumented[: n - n_topics]:
        b.add(
            "out_of_scope",
            "out_of_scope",
            {"label": b.label(i)},
            {"label": i},
            gold=[i],
            docs={},
            answerable=False,
            extra={"reason": "no document in the corpus"},
        )
    order = rng.permutation(len(topics)).tolist()
    for k in range(n_topics):
        q = topics[order[k]]
        rec_id = f"{b.cfg.id_prefix}{len(b.records) + 1:06d}"
        b.records.append(
            {
                "id": rec_id,
                "query": q,
                "slices": {"intent": b.intents["out_of_scope"], "case_kind": "out_of_scope"},
                "retrieval": {"gold": {}},
                "reference": {"answerable": False},
                "testset": {
                    "kind": "out_of_scope",
                    "template": None,
                    "concepts": {},
                    "sources": [],
                    "reason": "off-topic",
                },
            }
        )


def _kind_multi_hop(b: _Builder, rng, n: int) -> None:
    for i in _draw(rng, b.pool(b.known & b.has_known_parent))[:n]:
        ps = [p for p in b.parents(i) if b.known[p]]
        p = ps[int(rng.integers(len(ps)))]
        di, dp = b.docs([i]), b.docs([p])
        hop1 = min(di.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        hop2 = min((kv for kv in dp.items() if kv[0] not in di), key=lambda kv: (-kv[1], kv[0]), default=None)
        if hop2 is None:
            continue
        docs = {hop1: di[hop1], hop2[0]: hop2[1]}
        b.add(
            "multi_hop",
            "multi_hop",
            {"label": b.label(i)},
            {"label": i},
            gold=[p],
            docs=docs,
            answerable=True,
            extra={"hops": [b.c.ids[hop1], b.c.ids[hop2[0]]], "via": b.o.ids[i], "relation": "parent"},
        )


def _kind_nil_probe(b: _Builder, rng, n: int, held: list[int], nearest: dict[int, int | None]) -> None:
    for i in held[:n] if n else held:
        src = b.c.docs_of(i).tolist()
        b.add(
            "nil_probe",
            "nil_probe",
            {"label": b.label(i)},
            {"label": None},
            gold=None,
            docs={},
            answerable=False,
            nearest=nearest[i],
            more_sources=src,
            extra={
                "held_out": b.o.ids[i],
                "concepts": {"label": None},
                "nearest": b.o.ids[nearest[i]] if nearest[i] is not None else None,
                "held_out_documents": [b.c.ids[d] for d in src],
            },
        )


_KINDS: dict[str, Callable[..., None]] = {
    "label_lookup": _kind_label_lookup,
    "synonym_lookup": _kind_synonym_lookup,
    "definition_lookup": _kind_definition_lookup,
    "sibling_contrast": _kind_sibling_contrast,
    "generalisation": _kind_generalisation,
    "specialisation": _kind_specialisation,
    "counterfactual": _kind_counterfactual,
    "distractor": _kind_distractor,
    "negation": _kind_negation,
    "quantifier": _kind_quantifier,
    "out_of_scope": _kind_out_of_scope,
    "multi_hop": _kind_multi_hop,
}


def choose_held_out(b: _Builder, rng: np.random.Generator, n: int) -> list[int]:
    """``n`` documented leaves with a real parent (seeded), sorted by index."""
    is_leaf = np.diff(b.child_ptr) == 0
    pool = b.pool(b.usable & b.documented & is_leaf & b.has_usable_parent)
    if n <= 0 or not len(pool):
        return []
    return sorted(pool[rng.choice(len(pool), size=min(n, len(pool)), replace=False)].tolist())


def build_testset(
    ontology: Any, corpus: TestsetCorpus, config: TestsetConfig | None = None, *, paraphraser: Any = None
) -> BuildResult:
    """Generate the test cases (module docstring). ``paraphraser``: a
    :class:`~kg_rageval.testset.paraphrase.Paraphraser` (default: from ``config.paraphrase``)."""
    cfg = config or TestsetConfig()
    b = _Builder(ontology, corpus, cfg)
    kind_no = {k: n for n, k in enumerate(KINDS)}
    if cfg.held_out is not None:
        held = []
        for cid in cfg.held_out:
            i = ontology.id_index.get(cid)
            if i is None:
                raise InputError(f"held_out: {cid!r} is not in the ontology")
            held.append(i)
        held = sorted(set(held))
    else:
        b.set_held_out([])
        held = choose_held_out(
            b, np.random.default_rng([cfg.seed, kind_no["nil_probe"]]), cfg.counts["nil_probe"]
        )
    b.set_held_out(held)
    copy = without_leaves(ontology, [ontology.ids[i] for i in held])
    nearest = {i: nearest_kept(ontology, i) for i in held}
    produced: dict[str, int] = {}
    for kind in KINDS:
        n = cfg.counts[kind] if kind != "nil_probe" or cfg.held_out is None else len(held)
        before = len(b.records)
        if kind == "nil_probe":
            _kind_nil_probe(b, None, n, held, nearest)
        elif n > 0:
            _KINDS[kind](b, np.random.default_rng([cfg.seed, kind_no[kind]]), n)
        produced[kind] = len(b.records) - before
    requested = dict(cfg.counts)
    if cfg.held_out is not None:
        requested["nil_probe"] = len(held)
    result = BuildResult(
        b.records,
        [ontology.ids[i] for i in held],
        {ontology.ids[i]: (ontology.ids[v] if v is not None else None) for i, v in nearest.items()},
        copy,
        requested,
        produced,
    )
    para = paraphraser
    if para is None and cfg.paraphrase is not None:
        from kg_rageval.testset.paraphrase import make_paraphraser

        para = make_paraphraser(cfg.paraphrase)
    if para is not None:
        result.paraphrase = para.apply(result.records)
    return result
