"""The PROV-O trail as plain triples: one builder for the rdflib graph, the Turtle text and the
compiled shape check.

:func:`build_trail` turns records + manifest + corpus into a :class:`Trail` (subject →
predicate → ordered set of objects; IRIs are ``str``, literals ``(lexical, datatype IRI or
None)``). :func:`~kg_rageval.families.provenance.prov.export_prov` builds its rdflib graph from it,
:func:`trail_turtle` writes it as Turtle without rdflib, and :func:`check_trail` decides the
bundled shape ``shapes/provenance.ttl`` on it directly — the same verdicts, violation count,
focus nodes and messages as pySHACL on the exported graph (``tests/families/provenance/test_provenance.py``
compares them on conforming and broken trails), at a few microseconds per answer instead of
pySHACL's milliseconds. :func:`~kg_rageval.families.provenance.prov.validate_prov` stays the
general validator (any shapes file).

The compiled check implements exactly the constraints of the bundled shape (``SHAPES``:
``sh:targetClass``, ``sh:hasValue``, ``sh:minCount``, ``sh:maxCount``, ``sh:datatype``,
``sh:class``, ``sh:minLength`` and ``sh:not [sh:pattern]``); a test checks that table against
the parsed ``.ttl``, so editing the shape without the table fails. Messages: the property
shape's ``sh:message`` where it has one, else pySHACL's default text. Only the first 50
messages (sorted) are kept, as :func:`validate_prov` does; with more than 50 violations
pySHACL's pick of 50 depends on its traversal order, ours is the 50 smallest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kg_rageval.records import Record
from kg_rageval.records.fields import answer_text, flag, section

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.families.provenance.corpus import Corpus

KGR = "https://w3id.org/kg-rageval#"
PROV = "http://www.w3.org/ns/prov#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
XSD = "http://www.w3.org/2001/XMLSchema#"
PREFIXES = {"prov": PROV, "kgr": KGR, "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#", "xsd": XSD}

Term = Any  # str (IRI) | tuple[str, str | None] (literal: lexical form, datatype IRI)


_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]*")


def _q(s: Any) -> str:
    """``quote(str(s), safe="")``; a string of unreserved characters only (which ``quote``
    leaves as it is) is returned without the call."""
    s = str(s)
    return s if _UNRESERVED.fullmatch(s) else quote(s, safe="")


def _lexical(v: Any) -> str:
    """rdflib's lexical form of a Python value given a datatype (bools as ``true``/``false``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


Preds = dict[str, dict[Term, None]]


@dataclass
class Trail:
    """Triples by subject: ``{subject: {predicate: {object: None}}}`` (insertion-ordered sets,
    so a repeated triple is stored once, as in an RDF graph).

    The run, its agent and the documents are in ``subjects``; each answer is one compact row
    in ``answers`` (its predicates are built when it is read: :meth:`items`), so a trail of
    100,000 answers holds 100,000 small tuples, not 600,000 dict entries. An answer IRI that
    comes twice (two records with one id) is merged into ``subjects``, as a graph merges it."""

    subjects: dict[str, Preds] = field(default_factory=dict)
    answers: list[tuple[Any, list[str]]] = field(default_factory=list)
    """``(record id, [answer IRI, cited document IRIs...])`` per record with an answer."""
    rows: list[tuple[str, str, str, str | None] | None] = field(default_factory=list)
    """Compact answers: ``(IRI, type IRI, record id lexical form, text or None)``; the cited
    documents are the IRIs after the first in the same position of ``answers``; ``None`` for
    an answer merged into ``subjects``."""
    run: str = ""
    answer_prefix: str = ""
    doc_prefix: str = "urn:kg-rageval:doc:"
    _row_of: dict[str, int] = field(default_factory=dict, repr=False)

    def add(self, s: str, p: str, o: Term) -> None:
        self.subjects.setdefault(s, {}).setdefault(p, {})[o] = None

    def add_answer(
        self, rid: Any, iri: str, kind: str, lexical: str, text: str | None, docs: list[str]
    ) -> None:
        own = [iri, *docs]
        self.answers.append((rid, own))
        if iri in self._row_of or iri in self.subjects:  # the same answer node again: merge
            k = self._row_of.pop(iri, None)
            if k is not None:
                self._merge(k)
            self.rows.append(None)
            for p, objs in self._answer_preds(iri, kind, lexical, text, docs).items():
                for o in objs:
                    self.add(iri, p, o)
            return
        self._row_of[iri] = len(self.rows)
        self.rows.append((iri, kind, lexical, text))

    def _merge(self, k: int) -> None:
        row = self.rows[k]
        assert row is not None
        for p, objs in self._answer_preds(*row, self.answers[k][1][1:]).items():
            for o in objs:
                self.add(row[0], p, o)
        self.rows[k] = None

    def _answer_preds(self, iri: str, kind: str, lexical: str, text: str | None, docs: list[str]) -> Preds:
        preds: Preds = {
            RDF_TYPE: {PROV + "Entity": None, kind: None},
            KGR + "recordId": {(lexical, XSD + "string"): None},
        }
        if text is not None:
            preds[PROV + "value"] = {(text, None): None}
        preds[PROV + "wasGeneratedBy"] = {self.run: None}
        if docs:
            preds[PROV + "wasDerivedFrom"] = dict.fromkeys(docs)
        return preds

    def items(self) -> Iterable[tuple[str, Preds]]:
        """``(subject, predicates)`` of every subject: the others, then the answers."""
        yield from self.subjects.items()
        for row, (_, own) in zip(self.rows, self.answers):
            if row is not None:
                yield row[0], self._answer_preds(*row, own[1:])

    def __len__(self) -> int:
        """The number of triples: those of ``subjects`` plus, per compact answer, its two
        types, record id, run, value (when it has text) and distinct cited documents (the
        count of :meth:`_answer_preds`, without building them)."""
        n = sum(len(objs) for preds in self.subjects.values() for objs in preds.values())
        for row, (_, own) in zip(self.rows, self.answers):
            if row is not None:
                n += 4 + (row[3] is not None) + len(set(own[1:]))
        return n

    def triples(self) -> Iterable[tuple[str, str, Term]]:
        for s, preds in self.items():
            for p, objs in preds.items():
                for o in objs:
                    yield s, p, o


def build_trail(
    records: Iterable[Record], *, manifest: Mapping[str, Any] | None = None, corpus: Corpus | None = None
) -> Trail:
    """The trail of one run (the graph of :mod:`kg_rageval.families.provenance.prov`'s docstring)."""
    from kg_rageval.families.provenance.citations import answer_columns, cited_ids

    m = dict(manifest or {})
    run_id = m.get("run_id") or "run"
    run = f"urn:kg-rageval:run:{_q(run_id)}"
    t = Trail(run=run, answer_prefix=f"urn:kg-rageval:answer:{_q(run_id)}:")
    add = t.add
    add(run, RDF_TYPE, PROV + "Activity")
    add(run, RDF_TYPE, KGR + "ModelRun")
    model: dict[str, Any] = m["model"] if isinstance(m.get("model"), dict) else {}
    if model.get("name") or model.get("version"):
        agent = f"urn:kg-rageval:model:{_q(model.get('name', ''))}:{_q(model.get('version', ''))}"
        add(agent, RDF_TYPE, PROV + "SoftwareAgent")
        add(run, PROV + "wasAssociatedWith", agent)
        if isinstance(model.get("name"), str) and model["name"]:
            add(agent, KGR + "modelName", (model["name"], XSD + "string"))
        if isinstance(model.get("version"), str) and model["version"]:
            add(agent, KGR + "modelVersion", (model["version"], XSD + "string"))
    if isinstance(m.get("decoding"), dict) and m["decoding"]:
        add(run, KGR + "decodingConfig", (json.dumps(m["decoding"], sort_keys=True), XSD + "string"))
    if isinstance(m.get("seed"), int) and not isinstance(m.get("seed"), bool):
        add(run, KGR + "seed", (str(m["seed"]), XSD + "integer"))
    for key, prop in (
        ("corpus_hash", "corpusHash"),
        ("ontology_hash", "ontologyHash"),
        ("runtime", "runtime"),
    ):
        if isinstance(m.get(key), str) and m[key]:
            add(run, KGR + prop, (m[key], XSD + "string"))
    if isinstance(m.get("started_at"), str) and m["started_at"]:
        add(run, PROV + "startedAtTime", (m["started_at"], XSD + "dateTime"))

    seen_docs: dict[str, str] = {}
    ans_pre = t.answer_prefix
    refusal, answer = KGR + "Refusal", KGR + "Answer"
    records = records if type(records) is list else list(records)
    cols = answer_columns(records)
    for k, r in enumerate(records):
        if cols is not None:  # the chunk's columns (the same values as the readers below)
            if not cols.present[k]:
                continue
            kind = refusal if cols.refused[k] is True else answer
            text, cited = cols.texts[k], cols.cited[k]
        else:
            if section(r, "answer") is None:
                continue
            kind = refusal if flag(r, "answer", "refused") is True else answer
            text, cited = answer_text(r), None
        ans = ans_pre + _q(r["id"])
        if cited is None:
            cited = cited_ids(r)
        docs: list[str] = []
        for c in cited:
            doc = seen_docs.get(c)
            if doc is not None:
                docs.append(doc)
                continue
            doc = seen_docs[c] = t.doc_prefix + _q(c)  # one IRI object per document
            docs.append(doc)
            add(doc, RDF_TYPE, PROV + "Entity")
            add(doc, RDF_TYPE, KGR + "Document")
            add(doc, KGR + "documentId", (_lexical(c), XSD + "string"))
            sid = corpus.source_id(c) if corpus is not None else None
            if isinstance(sid, str) and sid:
                add(doc, KGR + "sourceId", (sid, XSD + "string"))
            add(run, PROV + "used", doc)
        t.add_answer(r["id"], ans, kind, _lexical(r["id"]), text, docs)
    return t


# ---------------------------------------------------------------------- Turtle
_ESC = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_NEEDS_ESC = re.compile(r'[\\"\n\r\t\b\f]')
_LOCAL = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


_SHORT: dict[str, str] = {}


def _short(iri: str) -> str:
    got = _SHORT.get(iri)
    if got is not None:
        return got
    if iri.startswith("urn:"):  # the trail's own IRIs: never prefixed, not memoised
        return f"<{iri}>"
    out = _prefixed(iri)
    if len(_SHORT) < 10_000:
        _SHORT[iri] = out
    return out


def _prefixed(iri: str) -> str:
    for pre, ns in PREFIXES.items():
        if iri.startswith(ns) and _LOCAL.match(iri[len(ns) :]):
            return f"{pre}:{iri[len(ns) :]}"
    return f"<{iri}>"


def _term(o: Term) -> str:
    if isinstance(o, str):
        return _short(o)
    lex, dt = o
    text = '"' + (_escape(lex) if _NEEDS_ESC.search(lex) else lex) + '"'
    return text if dt is None else f"{text}^^{_short(dt)}"


HEAD = "\n".join(f"@prefix {p}: <{ns}> ." for p, ns in PREFIXES.items()) + "\n\n"
"""The prefix lines and the blank line before the first block."""


def trail_turtle(trail: Trail) -> str:
    """The trail as Turtle (prefixes ``prov:``, ``kgr:``, ``rdf:``, ``xsd:``; one block per
    subject, ``a`` for ``rdf:type``): the same graph as ``export_prov(...).serialize()``.
    Compact answers are written by :func:`answer_blocks` without building their predicates
    (the same text as :func:`_block` on :meth:`Trail._answer_preds`). Layout:
    :data:`HEAD`, then the blocks of ``subjects`` and of the compact answers, one blank line
    between blocks."""
    return HEAD + "\n".join(subject_blocks(trail) + answer_blocks(trail))


def subject_blocks(trail: Trail) -> list[str]:
    """The Turtle blocks of ``trail.subjects`` (the run first), in order."""
    return [_block(s, preds) for s, preds in trail.subjects.items()]


def answer_blocks(trail: Trail) -> list[str]:
    """The Turtle blocks of the compact answers, in order: the text :func:`_block` gives for
    their predicates (types, record id, value, run, documents), written in one loop (the record id and text escaped only when they hold a character to escape;
    the documents are the trail's own ``urn:`` IRIs, which :func:`_short` writes as ``<IRI>``)."""
    sep = " ;\n    "
    types = "a " + _short(PROV + "Entity") + ", "
    rid = sep + _short(KGR + "recordId") + ' "'
    string = '"^^' + _short(XSD + "string")
    value = sep + _short(PROV + "value") + ' "'
    tail = sep + _short(PROV + "wasGeneratedBy") + " " + _term(trail.run)
    derived = tail + sep + _short(PROV + "wasDerivedFrom") + " <"
    heads: dict[str, str] = {}
    search, esc = _NEEDS_ESC.search, _escape
    out: list[str] = []
    append = out.append
    for row, (_, own) in zip(trail.rows, trail.answers):
        if row is None:
            continue
        iri, kind, lexical, text = row
        head = heads.get(kind)
        if head is None:
            head = heads[kind] = types + _short(kind) + rid
        lex = esc(lexical) if search(lexical) else lexical
        if text is None:
            body = ""
        else:
            body = value + (esc(text) if search(text) else text) + '"'
        if len(own) == 1:
            append(f"<{iri}> {head}{lex}{string}{body}{tail} .\n")
        elif len(own) == 2:
            append(f"<{iri}> {head}{lex}{string}{body}{derived}{own[1]}> .\n")
        else:
            append(
                f"<{iri}> {head}{lex}{string}{body}{derived}" + ">, <".join(dict.fromkeys(own[1:])) + "> .\n"
            )
    return out


def _escape(lex: str) -> str:
    return _NEEDS_ESC.sub(lambda m: _ESC[m.group()], lex)


def _block(s: str, preds: Preds) -> str:
    """One subject's Turtle block."""
    parts = []
    for p, objs in preds.items():
        pred = "a" if p == RDF_TYPE else _short(p)
        parts.append(f"{pred} " + ", ".join(_term(o) for o in objs))
    return f"<{s}> " + " ;\n    ".join(parts) + " .\n"


# ---------------------------------------------------------------------- the compiled shape
_DOC_MSG = "a cited document needs a stable source id in the corpus snapshot, not just a chunk hash"
_HASH_PATTERN = "^(?:(?:sha1|sha256|sha512|md5|blake2b?)[:-])?[0-9a-fA-F]{16,}$"


def _prop(path: str, **c: Any) -> dict[str, Any]:
    return {"path": path, **c}


SHAPES: dict[str, list[dict[str, Any]]] = {
    KGR + "Answer": [
        _prop(RDF_TYPE, hasValue=PROV + "Entity"),
        _prop(KGR + "recordId", minCount=1, maxCount=1, datatype=XSD + "string"),
        _prop(
            PROV + "wasGeneratedBy",
            minCount=1,
            maxCount=1,
            **{"class": KGR + "ModelRun"},
            message="an answer must be generated by exactly one recorded model run",
        ),
        _prop(
            PROV + "wasDerivedFrom",
            minCount=1,
            **{"class": KGR + "Document"},
            message="an answer must derive from at least one cited document",
        ),
    ],
    KGR + "Refusal": [
        _prop(RDF_TYPE, hasValue=PROV + "Entity"),
        _prop(KGR + "recordId", minCount=1, maxCount=1, datatype=XSD + "string"),
        _prop(PROV + "wasGeneratedBy", minCount=1, maxCount=1, **{"class": KGR + "ModelRun"}),
    ],
    KGR + "Document": [
        _prop(RDF_TYPE, hasValue=PROV + "Entity"),
        _prop(KGR + "documentId", minCount=1, maxCount=1, datatype=XSD + "string"),
        _prop(
            KGR + "sourceId",
            minCount=1,
            maxCount=1,
            datatype=XSD + "string",
            minLength=1,
            notPattern=_HASH_PATTERN,
            message=_DOC_MSG,
        ),
    ],
    KGR + "ModelRun": [
        _prop(RDF_TYPE, hasValue=PROV + "Activity"),
        _prop(PROV + "wasAssociatedWith", minCount=1, **{"class": PROV + "SoftwareAgent"}),
        _prop(KGR + "decodingConfig", minCount=1, maxCount=1, datatype=XSD + "string"),
        _prop(KGR + "seed", minCount=1, maxCount=1, datatype=XSD + "integer"),
        _prop(KGR + "corpusHash", minCount=1, maxCount=1, datatype=XSD + "string"),
        _prop(KGR + "ontologyHash", minCount=1, maxCount=1, datatype=XSD + "string"),
        _prop(PROV + "startedAtTime", maxCount=1, datatype=XSD + "dateTime"),
    ],
    PROV + "SoftwareAgent": [
        _prop(KGR + "modelName", minCount=1, maxCount=1, datatype=XSD + "string"),
        _prop(KGR + "modelVersion", minCount=1, maxCount=1, datatype=XSD + "string"),
    ],
}
"""The constraints of ``shapes/provenance.ttl`` by target class (one dict per property shape)."""


def _well_typed(lex: str, dt: str) -> bool:
    """Whether a literal of datatype ``dt`` is well formed, as rdflib (and so pySHACL) decides."""
    if dt == XSD + "string":
        return True
    if dt == XSD + "integer":
        return re.fullmatch(r"[+-]?[0-9]+", lex) is not None
    from rdflib import Literal, URIRef

    return not Literal(lex, datatype=URIRef(dt)).ill_typed


def _check_property(focus: str, preds: Preds, prop: Mapping[str, Any], trail: Trail) -> list[str]:
    """The messages of the violations of one property shape on one focus node with predicates
    ``preds`` (pySHACL: one per constraint for counts, one per value node for value
    constraints). ``sh:class`` reads the value's types from ``trail.subjects`` (the run, the
    agent and the documents: answers are never the value of a property)."""
    path = prop["path"]
    values = preds.get(path, {})
    own = prop.get("message")
    msgs: list[str] = []

    def shown() -> str:
        return f"<{focus}>->{_short(path)}"

    if "hasValue" in prop and prop["hasValue"] not in values:
        msgs.append(
            own or f"Node {shown()} does not contain a value in the set: ['{_short(prop['hasValue'])}']"
        )
    if "minCount" in prop and len(values) < prop["minCount"]:
        msgs.append(own or f"Less than {prop['minCount']} values on {shown()}")
    if "maxCount" in prop and len(values) > prop["maxCount"]:
        msgs.append(own or f"More than {prop['maxCount']} values on {shown()}")
    for v in values:
        if "datatype" in prop:
            dt = prop["datatype"]
            if not (isinstance(v, tuple) and v[1] == dt and _well_typed(v[0], dt)):
                msgs.append(own or f"Value is not Literal with datatype {_short(dt)}")
        if "class" in prop:
            types = trail.subjects.get(v, {}).get(RDF_TYPE, {}) if isinstance(v, str) else {}
            if prop["class"] not in types:
                msgs.append(own or f"Value does not have class {_short(prop['class'])}")
        text = v if isinstance(v, str) else v[0]
        if "minLength" in prop and len(text) < prop["minLength"]:
            msgs.append(own or f"String length not >= {prop['minLength']}")
        if "notPattern" in prop and re.search(prop["notPattern"], text):
            msgs.append(own or f"Node {_term(v)} conforms to shape")
    return msgs


def check_trail(trail: Trail) -> dict[str, Any]:
    """The bundled shape on the trail: ``{"conforms", "violations", "messages",
    "focus_nodes"}`` as :func:`~kg_rageval.families.provenance.prov.validate_prov` returns them
    (``messages``: ``focus node: path: message``, sorted, at most 50)."""
    found = trail_violations(trail)
    msgs = sorted(f"{f}: {p}: {m}" for f, p, m in found)
    return {
        "conforms": not found,
        "violations": len(found),
        "messages": msgs[:50],
        "focus_nodes": sorted({f for f, _, _ in found}),
    }


def trail_violations(trail: Trail) -> list[tuple[str, str, str]]:
    """Every violation of the bundled shape on the trail: ``(focus node, path, message)``.

    A compact answer (:meth:`Trail.add_answer`) has one record id (an ``xsd:string``), the
    run and its cited documents, so when the run is a ``kgr:ModelRun`` and each document a
    ``kgr:Document`` (as :func:`build_trail` makes them) its only possible violation is an
    answer (not a refusal) citing nothing: that is decided without building its predicates.
    Otherwise, and for every other subject, each property shape is checked
    (:func:`_check_property`)."""
    found: list[tuple[str, str, str]] = []
    for s, preds in trail.subjects.items():
        _check_subject(s, preds, trail, found)
    subjects = trail.subjects
    run_ok = KGR + "ModelRun" in subjects.get(trail.run, {}).get(RDF_TYPE, {})
    answer, document = KGR + "Answer", KGR + "Document"
    typed: dict[str, bool] = {}
    for row, (_, own) in zip(trail.rows, trail.answers):
        if row is None:
            continue
        ok = run_ok
        for d in own[1:] if ok else ():
            t = typed.get(d)
            if t is None:
                t = typed[d] = document in subjects.get(d, {}).get(RDF_TYPE, {})
            if not t:
                ok = False
                break
        if not ok:
            _check_subject(row[0], trail._answer_preds(*row, own[1:]), trail, found)
        elif len(own) == 1 and row[1] == answer:
            found.append((row[0], _DERIVED[0], _DERIVED[1]))
    return found


def _check_subject(s: str, preds: Preds, trail: Trail, found: list[tuple[str, str, str]]) -> None:
    """Append the violations of every shape targeting ``s``'s types to ``found``."""
    types = preds.get(RDF_TYPE, {})
    for cls, props in SHAPES.items():
        if cls not in types:
            continue
        for prop in props:
            for msg in _check_property(s, preds, prop, trail):
                found.append((s, prop["path"], msg))


_DERIVED = next(
    (p["path"], p["message"]) for p in SHAPES[KGR + "Answer"] if p["path"] == PROV + "wasDerivedFrom"
)
"""The path and message of an answer's ``prov:wasDerivedFrom`` count (an answer citing nothing)."""
