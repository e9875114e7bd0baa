"""The two triple views the RDF loader's walk reads: pyoxigraph's parse as plain Python
strings (no rdflib), and an rdflib ``Graph``.

The walk (:func:`kg_rageval.ontology.loaders.rdf.walk`) asks a view for a handful of pattern
queries — ``objects(s, p)``, ``subjects(p, o)``, ``subject_objects(p)``, ``value(s, p)``,
``has(s, p, o)`` — and for the kind of a term (``is_iri`` / ``is_bnode`` / ``is_literal``).
:class:`TripleStore` answers them in the order rdflib's in-memory store does for the same
triples added in the same order (``subject_objects(p)`` grouped by object in first-seen order,
then subjects; ``objects(s, p)`` in first-seen order; duplicate triples kept once), so the
walk makes the same builder calls — and the same warnings, in the same order — as over the
rdflib ``Graph`` the slow path builds from the same parse.

Terms of a :class:`TripleStore`: an IRI is a plain ``str``; a blank node a :class:`BNode`
(a ``str`` subclass; pyoxigraph's blank-node ids never contain ``:``, so they never equal an
IRI); a literal a :class:`Lit` (its lexical form as a ``str``, with ``language`` and
``datatype``; equal only to a literal with the same form, language and datatype, like
rdflib's ``Literal``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_STRING = XSD + "string"
XSD_BOOLEAN = XSD + "boolean"
RDF_XMLLITERAL = "http://www.w3.org/1999/02/22-rdf-syntax-ns#XMLLiteral"

#: rdflib's ``Graph(bind_namespaces="core")`` bindings, in its order.
CORE_BINDINGS = (
    ("owl", "http://www.w3.org/2002/07/owl#"),
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("rdfs", "http://www.w3.org/2000/01/rdf-schema#"),
    ("xsd", "http://www.w3.org/2001/XMLSchema#"),
    ("xml", "http://www.w3.org/XML/1998/namespace"),
)


_NONE: dict = {}


class BNode(str):
    """A blank node of a :class:`TripleStore` (its pyoxigraph id)."""

    __slots__ = ()


class Lit(str):
    """A literal of a :class:`TripleStore`: ``str(lit)`` is its lexical form; ``language`` is
    ``None`` or the (lower-cased) tag; ``datatype`` ``None`` for a plain literal (a
    language-tagged one or ``xsd:string``, as rdflib's parsers make them) or the IRI."""

    __slots__ = ("datatype", "language")
    language: str | None
    datatype: str | None

    def __new__(cls, value: str, language: str | None = None, datatype: str | None = None) -> Lit:
        self = super().__new__(cls, value)
        self.language = language
        self.datatype = datatype
        return self

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is Lit
            and str.__eq__(self, other)  # type: ignore[return-value]
            and self.language == other.language
            and self.datatype == other.datatype
        )

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__  # equal literals have equal text; an IRI of the same text is unequal


def literal_is_true(lit: Any) -> bool:
    """``owl:deprecated``'s test, as the rdflib walk makes it (``Literal.toPython()`` then
    ``"true"``/``"1"``): for a plain literal its stripped, lower-cased form; for
    ``xsd:boolean`` rdflib's lexical mapping (``"true"``/``"1"``, case-insensitive, unstripped);
    any other datatype is handed to rdflib itself (rare)."""
    if lit.datatype is None:
        return str(lit).strip().lower() in ("true", "1")
    if lit.datatype == XSD_BOOLEAN:
        return str(lit).lower() in ("true", "1")
    from rdflib import Literal, URIRef

    try:
        value = Literal(str(lit), datatype=URIRef(lit.datatype)).toPython()
    except Exception:
        value = str(lit)
    return value is True or str(value).strip().lower() in ("true", "1")


class NotPlain(Exception):
    """The parse holds something only rdflib reads as the loader expects (an XML literal)."""


class TripleStore:
    """pyoxigraph's triples indexed by subject and by predicate, as plain Python terms."""

    def __init__(self, quads: Any, bindings: list[tuple[str, str]]):
        import pyoxigraph as ox

        named, blank = ox.NamedNode, ox.BlankNode
        terms: dict[Any, Any] = {}
        spo: dict[Any, dict[Any, dict[Any, None]]] = {}
        pos: dict[Any, dict[Any, dict[Any, None]]] = {}

        def term(t: Any) -> Any:
            if type(t) is named:
                return t.value
            if type(t) is blank:
                return BNode(t.value)
            if t.language:
                return Lit(t.value, t.language, None)
            dt = t.datatype.value
            if dt == XSD_STRING:
                return Lit(t.value, None, None)
            if dt == RDF_XMLLITERAL:
                raise NotPlain
            return Lit(t.value, None, dt)

        get = terms.get
        preds: dict[Any, str] = {}
        pred = preds.get
        added: dict[Any, list[tuple[Any, Any]]] = {}  # predicate -> new (s, o) in parse order
        for q in quads:
            s, p, o = q.subject, q.predicate, q.object
            ts = get(s)
            if ts is None:
                ts = terms[s] = term(s)
            tp = pred(p)
            if tp is None:
                tp = preds[p] = p.value
                added.setdefault(tp, [])
            to = get(o)
            if to is None:
                to = terms[o] = term(o)
            by_p = spo.get(ts)
            if by_p is None:
                spo[ts] = {tp: {to: None}}
            else:
                objs = by_p.get(tp)
                if objs is None:
                    by_p[tp] = {to: None}
                elif to in objs:
                    continue
                else:
                    objs[to] = None
            added[tp].append((ts, to))
        self._spo = spo
        self._added = added
        self._pos = pos
        self._bindings = bindings

    # -------------------------------------------------------------- kinds of terms
    @staticmethod
    def iri(value: str) -> str:
        return value

    @staticmethod
    def is_iri(t: Any) -> bool:
        return type(t) is str

    @staticmethod
    def is_bnode(t: Any) -> bool:
        return type(t) is BNode

    @staticmethod
    def is_literal(t: Any) -> bool:
        return type(t) is Lit

    is_true = staticmethod(literal_is_true)

    # -------------------------------------------------------------- patterns
    def namespaces(self) -> list[tuple[str, str]]:
        return list(self._bindings)

    def has_predicate(self, p: str) -> bool:
        return p in self._added

    def _by_object(self, p: Any) -> dict[Any, dict[Any, None]]:
        """Object -> subjects of ``p`` (rdflib's ``pos`` index), built on first use."""
        by_o = self._pos.get(p)
        if by_o is None:
            by_o = self._pos[p] = {}
            for s, o in self._added.get(p, ()):
                subs = by_o.get(o)
                if subs is None:
                    by_o[o] = {s: None}
                else:
                    subs[s] = None
        return by_o

    def objects(self, s: Any, p: Any) -> Iterator[Any]:
        return iter(self._spo.get(s, _NONE).get(p, ()))

    def po(self, s: Any) -> Mapping[Any, Iterable[Any]]:
        """Predicate → objects of ``s`` (read-only)."""
        return self._spo.get(s, _NONE)

    def all_objects(self, p: Any) -> Iterator[Any]:
        for o, subs in self._by_object(p).items():
            for _ in subs:
                yield o

    def subjects(self, p: Any, o: Any = None) -> Iterator[Any]:
        if o is None:
            return (s for s, _ in self.subject_objects(p))
        return iter(self._by_object(p).get(o, ()))

    def subject_objects(self, p: Any) -> Iterator[tuple[Any, Any]]:
        for o, subs in self._by_object(p).items():
            for s in subs:
                yield s, o

    def value(self, s: Any, p: Any) -> Any:
        return next(iter(self._spo.get(s, {}).get(p, ())), None)

    def has(self, s: Any, p: Any, o: Any) -> bool:
        return o in self._spo.get(s, {}).get(p, ())


class GraphView:
    """An rdflib ``Graph`` behind the same queries as :class:`TripleStore`."""

    def __init__(self, graph: Any):
        from rdflib import BNode as RBNode
        from rdflib import Literal, URIRef

        self.graph = graph
        self._uri, self._bnode, self._lit = URIRef, RBNode, Literal

    def iri(self, value: str) -> Any:
        return self._uri(value)

    def is_iri(self, t: Any) -> bool:
        return isinstance(t, self._uri)

    def is_bnode(self, t: Any) -> bool:
        return isinstance(t, self._bnode)

    def is_literal(self, t: Any) -> bool:
        return isinstance(t, self._lit)

    @staticmethod
    def is_true(lit: Any) -> bool:
        try:
            value = lit.toPython()
        except Exception:
            value = str(lit)
        return value is True or str(value).strip().lower() in ("true", "1")

    def namespaces(self) -> list[tuple[str, str]]:
        return [(prefix, str(ns)) for prefix, ns in self.graph.namespaces()]

    def objects(self, s: Any, p: Any) -> Iterator[Any]:
        return self.graph.objects(s, p)

    def po(self, s: Any) -> Mapping[Any, Iterable[Any]]:
        """Predicate → objects of ``s``, each list in ``objects(s, p)``'s order."""
        out: dict[Any, list[Any]] = {}
        for p, o in self.graph.predicate_objects(s):
            out.setdefault(p, []).append(o)
        return out

    def all_objects(self, p: Any) -> Iterator[Any]:
        return self.graph.objects(None, p)

    def subjects(self, p: Any, o: Any = None) -> Iterator[Any]:
        return self.graph.subjects(p, o)

    def subject_objects(self, p: Any) -> Iterator[tuple[Any, Any]]:
        return self.graph.subject_objects(p)

    def value(self, s: Any, p: Any) -> Any:
        return self.graph.value(s, p)

    def has(self, s: Any, p: Any, o: Any) -> bool:
        return (s, p, o) in self.graph


def rdflib_bindings(
    declared: list[tuple[str | None, str]], *, override: bool
) -> list[tuple[str, str]] | None:
    """The bindings an rdflib ``Graph(bind_namespaces="core")`` holds after
    ``graph.bind(prefix, ns, override=override)`` of each of ``declared`` in order — rdflib
    7's ``NamespaceManager.bind`` and in-memory ``Memory.bind``, step for step (a prefix taken
    by another namespace becomes ``prefix1``, ``prefix2``, ... or ``default1`` for the empty
    one; a namespace bound under another prefix keeps it unless ``override``), so the walk sees
    the prefixes the rdflib path sees. ``None`` for what rdflib would refuse or that this does
    not model (an empty namespace, a prefix with a space): the caller takes the rdflib path."""
    ns_of: dict[str, str] = {}
    prefix_of: dict[str, str] = {}
    for prefix, ns in CORE_BINDINGS:
        ns_of[prefix] = ns
        prefix_of[ns] = prefix

    def coalesce(*args: Any, default: Any = None) -> Any:
        return next((a for a in args if a is not None), default)

    def store_bind(prefix: str, namespace: str) -> None:  # Memory.bind
        bound_namespace = ns_of.get(prefix)
        bound_prefix = coalesce(prefix_of.get(namespace), prefix_of.get(bound_namespace))  # type: ignore[arg-type]
        if override:
            if bound_prefix is not None:
                del ns_of[bound_prefix]
            if bound_namespace is not None:
                del prefix_of[bound_namespace]
            prefix_of[namespace] = prefix
            ns_of[prefix] = namespace
        else:
            prefix_of[coalesce(bound_namespace, namespace)] = coalesce(bound_prefix, default=prefix)
            ns_of[coalesce(bound_prefix, prefix)] = coalesce(bound_namespace, default=namespace)

    try:
        for given, namespace in declared:  # NamespaceManager.bind
            if not namespace or (given is not None and " " in given):
                return None
            prefix = given or ""
            bound_namespace = ns_of.get(prefix)
            if bound_namespace and bound_namespace != namespace:
                base = prefix or "default"
                num = 1
                while True:
                    new_prefix = f"{base}{num}"
                    taken = ns_of.get(new_prefix)
                    if taken and taken == namespace:
                        break
                    if not taken:
                        store_bind(new_prefix, namespace)
                        break
                    num += 1
            else:
                bound_prefix = prefix_of.get(namespace)
                if bound_prefix is None:
                    store_bind(prefix, namespace)
                elif bound_prefix != prefix and (override or bound_prefix.startswith("_")):
                    store_bind(prefix, namespace)
    except KeyError:  # rdflib would raise here too; let it say so
        return None
    return list(ns_of.items())
