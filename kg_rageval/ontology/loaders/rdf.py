"""RDF, RDFS, OWL and SKOS ontologies in any syntax rdflib reads.

What becomes what:

* **Nodes**: named subjects typed ``owl:Class``, ``rdfs:Class`` or ``skos:Concept`` (node type
  ``"class"`` or ``"concept"``), plus named subjects of ``rdfs:subClassOf`` /
  ``skos:broader``. ``owl:Thing`` and ``owl:Nothing`` are never nodes: ``X subClassOf
  owl:Thing`` makes ``X`` a root. Anonymous classes (blank nodes) are skipped and counted.
* **Edges**: ``rdfs:subClassOf`` between named classes; ``skos:broader`` (child → parent) and
  ``skos:narrower`` (parent → child), merged so a pair stated both ways is one edge.
  Restrictions (``owl:Restriction``) and other anonymous class expressions as superclasses are
  skipped and counted (``skipped_restrictions``, ``skipped_anonymous_superclasses``).
* **Parents that are never declared** (``dangling``): ``"declare"`` (default) makes them nodes,
  counted as ``parents_declared_from_edges`` (RDFS semantics: the object of ``subClassOf`` is a
  class); ``"error"`` refuses them; ``"drop"`` drops those edges, counted.
* **Labels**: ``skos:prefLabel`` then ``rdfs:label``; the preferred language ``lang`` (``en``
  also matches ``en-GB``) wins, then a literal without language, then any other (ties by
  value). Two different values in the winning slot (e.g. two ``@en`` labels) are a *label
  conflict*: an error unless ``conflicts="keep-first"``. All other labels become synonyms, as
  do ``skos:altLabel`` and the oboInOwl ``hasExactSynonym``/``hasRelatedSynonym``/
  ``hasBroadSynonym``/``hasNarrowSynonym``.
* **Node type**: ``oboInOwl:hasOBONamespace`` where given (as the OBO loader's ``namespace``),
  else ``"class"`` / ``"concept"``.
* **Definitions**: ``IAO:0000115`` and ``skos:definition`` (same language preference).
* **Status**: ``owl:deprecated true`` → deprecated; ``IAO:0100001`` (term replaced by) or
  ``dcterms:isReplacedBy`` names the replacement.
* **Aliases**: ``oboInOwl:hasAlternativeId`` (a literal CURIE such as ``"DOID:267"``, or an
  IRI, compacted) makes an alternative id of the node
  (:meth:`~kg_rageval.ontology.Ontology.canonical`), like the OBO ``alt_id``.
* **Object properties**: ``owl:ObjectProperty`` (and ``rdf:Property`` with a domain or range)
  with their named ``rdfs:domain`` / ``rdfs:range`` become :class:`~kg_rageval.ontology.Property`.
* **Ids**: IRIs are compacted to CURIEs with the file's own namespace bindings (and a
  ``vann:preferredNamespacePrefix``/``Uri`` pair when the vocabulary declares one); the longest
  matching namespace wins; the empty prefix is not used. OBO PURLs
  (``http://purl.obolibrary.org/obo/DOID_162``) become ``DOID:162``. The prefixes used are kept
  in ``Ontology.prefixes`` so ``expand_curie`` gives the IRI back. IRIs no prefix matches stay
  whole.

Safety: XML is checked by :mod:`.safety` before parsing (external entities and entity bombs are
refused), JSON-LD with a remote ``@context`` is refused, and ``owl:imports`` are counted and
listed (``owl_imports_not_followed``) but followed only with ``follow_imports=True``.

Parsers: with pyoxigraph installed (extra ``fast``), RDF/XML, Turtle and N-Triples are parsed by
it and :func:`walk` reads its triples as plain strings (:mod:`._triples`, no rdflib graph);
everything else — other syntaxes, a parse error (rdflib's message), an XML literal,
``follow_imports=True`` with imports present, ``reasoner="hermit"`` — goes through an rdflib
``Graph`` and the same :func:`walk`, so both give the same ontology.

The syntax comes from the extension (``.ttl`` Turtle, ``.nt`` N-Triples, ``.n3``, ``.rdf``/
``.xml`` RDF/XML, ``.jsonld`` JSON-LD, ``.trig``, ``.nq``); ``.owl`` files are RDF/XML or
Turtle, told apart by their first non-blank character. Anything else needs ``format=``; there is
no silent fallback. OWL/XML and OWL functional syntax are not RDF and are refused with a hint.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError, OntologyError, UnsafeInputError
from kg_rageval.ontology.builder import OntologyBuilder
from kg_rageval.ontology.loaders import safety
from kg_rageval.ontology.model import Ontology, Property

_EXT_FORMATS = {
    ".ttl": "turtle",
    ".turtle": "turtle",
    ".nt": "nt",
    ".ntriples": "nt",
    ".n3": "n3",
    ".rdf": "xml",
    ".xml": "xml",
    ".jsonld": "json-ld",
    ".json-ld": "json-ld",
    ".trig": "trig",
    ".nq": "nquads",
    ".trix": "trix",
}
_FORMAT_ALIASES = {
    "turtle": "turtle",
    "ttl": "turtle",
    "nt": "nt",
    "ntriples": "nt",
    "n-triples": "nt",
    "nt11": "nt",
    "n3": "n3",
    "xml": "xml",
    "rdfxml": "xml",
    "rdf/xml": "xml",
    "application/rdf+xml": "xml",
    "json-ld": "json-ld",
    "jsonld": "json-ld",
    "trig": "trig",
    "nquads": "nquads",
    "nq": "nquads",
    "trix": "trix",
    "skos": None,  # the registry alias: detect the syntax from the extension
    "rdf": None,
    "owl": None,
}
_SYNTAX_NAMES = {
    "turtle": "Turtle",
    "nt": "N-Triples",
    "n3": "Notation3",
    "xml": "RDF/XML",
    "json-ld": "JSON-LD",
    "trig": "TriG",
    "nquads": "N-Quads",
    "trix": "TriX",
}

OBO_PURL = "http://purl.obolibrary.org/obo/"
_OBO_LOCAL = re.compile(r"^([A-Za-z][A-Za-z0-9]*)_([A-Za-z0-9][A-Za-z0-9_.\-]*)$")
_BAD_PREFIXES = {"", "http", "https", "urn", "file", "ftp", "mailto"}

# ------------------------------------------------------------------ vocabulary IRIs
_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_RDFS = "http://www.w3.org/2000/01/rdf-schema#"
_OWL = "http://www.w3.org/2002/07/owl#"
_SKOS = "http://www.w3.org/2004/02/skos/core#"
_OIO = "http://www.geneontology.org/formats/oboInOwl#"
_DCT = "http://purl.org/dc/terms/"
_VANN = "http://purl.org/vocab/vann/"
IAO_DEFINITION = OBO_PURL + "IAO_0000115"
IAO_REPLACED_BY = OBO_PURL + "IAO_0100001"
_SYNONYM_PREDICATES = (
    _SKOS + "altLabel",
    _OIO + "hasExactSynonym",
    _OIO + "hasRelatedSynonym",
    _OIO + "hasBroadSynonym",
    _OIO + "hasNarrowSynonym",
)


def rdf_syntax(path: str | Path, format: str | None = None) -> str:
    """The rdflib parser name for ``path``: from ``format`` or the extension (see module doc)."""
    p = Path(path)
    if format is not None:
        key = format.lower()
        if key not in _FORMAT_ALIASES:
            raise InputError(
                f"unknown RDF syntax {format!r}; known: "
                f"{', '.join(sorted(k for k, v in _FORMAT_ALIASES.items() if v))}",
                source=str(p),
            )
        alias = _FORMAT_ALIASES[key]
        if alias:
            return alias
    suffix = p.suffix.lower()
    if suffix in _EXT_FORMATS:
        return _EXT_FORMATS[suffix]
    if suffix in (".owl", ".owx", ".ofn", ".omn"):
        return _sniff_owl(p)
    raise InputError(
        f"cannot tell the RDF syntax from the extension {suffix or '(none)'!r}; pass format= one "
        f"of {', '.join(sorted(_SYNTAX_NAMES))}",
        source=str(p),
    )


def _sniff_owl(p: Path) -> str:
    head = safety.read_head(p, 4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    text = head.decode("utf-8", errors="replace")
    if text.startswith("<"):
        if re.search(r"<(owl:)?Ontology\b[^>]*xmlns=\"http://www\.w3\.org/2002/07/owl#\"", text) or (
            "<rdf:RDF" not in text and re.search(r"<(owl:)?Ontology\b", text)
        ):
            raise InputError(
                "this is OWL/XML, not an RDF syntax rdflib reads; convert it to RDF/XML or "
                "Turtle (e.g. `robot convert`), or load it with reasoner='hermit'",
                source=str(p),
            )
        return "xml"
    if text.startswith(("@prefix", "@base", "PREFIX", "prefix", "BASE", "#", "<http")):
        return "turtle"
    if re.match(r"(Prefix|Ontology)\(", text):
        raise InputError(
            "this is OWL functional syntax, not RDF; convert it to RDF/XML or Turtle (e.g. `robot convert`)",
            source=str(p),
        )
    raise InputError(
        "cannot tell the syntax of this .owl file from its first bytes (expected RDF/XML "
        "starting with '<' or Turtle starting with @prefix); pass format=",
        source=str(p),
    )


# ------------------------------------------------------------------ parsing
def parse_graph(path: str | Path, syntax: str, *, data: bytes | None = None, source: str | None = None):
    """Parse one RDF document into an rdflib ``Graph`` after the safety checks.

    Errors name the file, the line (where the parser gives one) and what was expected.
    """
    from rdflib import Graph

    p = Path(path)
    src = source or str(p)
    data = _read_checked(p, syntax, data, src)
    g = Graph(bind_namespaces="core")
    public_id = p.resolve().as_uri() if source is None else source
    if syntax in _OXIGRAPH_FORMATS and _parse_oxigraph(g, data, syntax, public_id):
        return g
    try:
        with warnings.catch_warnings():  # rdflib's JSON-LD parser uses its own deprecated API
            warnings.simplefilter("ignore", DeprecationWarning)
            g.parse(data=data, format=syntax, publicID=public_id)
    except UnsafeInputError:
        raise
    except Exception as exc:
        raise _parse_error(exc, src, syntax, data) from None
    return g


def _read_checked(p: Path, syntax: str, data: bytes | None, src: str) -> bytes:
    """The bytes of the document, after the safety checks of its syntax (XXE and entity
    expansion for XML, remote contexts for JSON-LD), whichever parser reads it."""
    if data is None:
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", source=src) from None
    if syntax in ("xml", "trix"):
        safety.check_xml(src, data)
    elif syntax == "json-ld":
        safety.check_jsonld(src, data)
    return data


def _oxigraph_store(p: Path, syntax: str):
    """pyoxigraph's parse of ``p`` as a :class:`._triples.TripleStore` (no rdflib), after the
    same safety checks as :func:`parse_graph`; ``None`` sends the file down the rdflib path
    exactly as before: pyoxigraph absent, a syntax pyoxigraph does not read here (N3, JSON-LD,
    TriG, N-Quads, TriX), a parse error (the message is rdflib's), an XML literal, or prefix
    declarations rdflib would refuse (an empty namespace, a prefix with a space)."""
    if syntax not in _OXIGRAPH_FORMATS:
        return None
    try:
        import pyoxigraph as ox
    except ImportError:
        return None
    from kg_rageval.ontology.loaders._triples import NotPlain, TripleStore, rdflib_bindings

    data = _read_checked(p, syntax, None, str(p))
    try:
        parser = ox.parse(
            data, format=getattr(ox.RdfFormat, _OXIGRAPH_FORMATS[syntax]), base_iri=p.resolve().as_uri()
        )
        quads = list(parser)
    except (SyntaxError, ValueError, OSError):
        return None
    if syntax == "xml":
        declared = _xml_namespaces(data)
        if declared is None:
            return None
    else:
        declared = list((parser.prefixes or {}).items())
    bindings = rdflib_bindings(declared, override=syntax != "xml")
    if bindings is None:
        return None
    try:
        return TripleStore(quads, bindings)
    except NotPlain:
        return None


def _xml_namespaces(data: bytes) -> list[tuple[str | None, str]] | None:
    """The ``xmlns`` declarations of an RDF/XML document in document order, read by expat as
    rdflib's SAX handler sees them; ``None`` when expat refuses the document."""
    import xml.parsers.expat

    declared: list[tuple[str | None, str]] = []
    reader = xml.parsers.expat.ParserCreate(namespace_separator=" ")
    reader.StartNamespaceDeclHandler = lambda prefix, uri: declared.append((prefix, uri))
    try:
        reader.Parse(data, True)
    except xml.parsers.expat.ExpatError:
        return None
    return declared


_OXIGRAPH_FORMATS = {"xml": "RDF_XML", "turtle": "TURTLE", "nt": "N_TRIPLES"}
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_RDF_XMLLITERAL = "http://www.w3.org/1999/02/22-rdf-syntax-ns#XMLLiteral"


def _parse_oxigraph(g, data: bytes, syntax: str, base: str) -> bool:
    """Fill ``g`` with pyoxigraph's parse of ``data`` (extra ``fast``: a Rust parser, several
    times faster than rdflib's); ``False`` leaves it to rdflib — pyoxigraph absent, a parse
    error (so the message is rdflib's, as before), or an XML literal (rdflib parses its
    markup). The safety checks have run before. Triples become the same rdflib terms rdflib's
    own parser makes (a plain literal has no datatype), and the document's prefixes are bound
    as rdflib binds them: RDF/XML ``xmlns`` declarations in document order with
    ``override=False`` (read by expat, as rdflib's SAX handler sees them), Turtle ``@prefix``
    declarations after the triples."""
    try:
        import pyoxigraph as ox
    except ImportError:
        return False
    from rdflib import BNode, Literal, URIRef

    try:
        parser = ox.parse(data, format=getattr(ox.RdfFormat, _OXIGRAPH_FORMATS[syntax]), base_iri=base)
        quads = list(parser)
    except (SyntaxError, ValueError, OSError):
        return False
    nodes: dict = {}

    def term(t):
        got = nodes.get(t)
        if got is None:
            if isinstance(t, ox.NamedNode):
                got = URIRef(t.value)
            elif isinstance(t, ox.BlankNode):
                got = BNode(t.value)
            elif t.language:
                got = Literal(t.value, lang=t.language)
            elif t.datatype.value == _XSD_STRING:
                got = Literal(t.value)
            elif t.datatype.value == _RDF_XMLLITERAL:
                raise _NotPlain
            else:
                got = Literal(t.value, datatype=URIRef(t.datatype.value))
            nodes[t] = got
        return got

    try:
        triples = [(term(q.subject), term(q.predicate), term(q.object), g) for q in quads]
    except _NotPlain:
        return False
    if syntax == "xml":
        declared = _xml_namespaces(data)
        if declared is None:
            return False
        for prefix, uri in declared:
            g.bind(prefix, uri or "", override=False)
        g.addN(triples)
    else:
        g.addN(triples)
        for prefix, uri in (parser.prefixes or {}).items():
            g.bind(prefix, uri)
    return True


class _NotPlain(Exception):
    """A term pyoxigraph's parse does not map onto rdflib's one-to-one (an XML literal)."""


def _parse_error(exc: Exception, src: str, syntax: str, data: bytes) -> InputError:
    name = _SYNTAX_NAMES.get(syntax, syntax)
    location = None
    message = str(exc) or type(exc).__name__
    get_line = getattr(exc, "getLineNumber", None)
    if callable(get_line):  # xml.sax.SAXParseException
        sax: Any = exc  # duck-typed: any parser error with the SAX accessors
        location = f"line {get_line()}, column {sax.getColumnNumber()}"
        message = sax.getMessage()
    elif type(exc).__name__ == "BadSyntax":  # rdflib notation3 (Turtle, N3, TriG)
        args = exc.args
        if len(args) >= 5 and isinstance(args[2], str) and isinstance(args[3], int):
            text, pos = args[2], args[3]
            line = text.count("\n", 0, pos) + 1
            col = pos - (text.rfind("\n", 0, pos) + 1) + 1
            location = f"line {line}, column {col}"
            message = str(args[4])
    elif getattr(exc, "lineno", None):  # json.JSONDecodeError
        located: Any = exc  # duck-typed: any parser error with a line number
        location = f"line {located.lineno}, column {getattr(exc, 'colno', '?')}"
        message = getattr(exc, "msg", message)
    elif syntax in ("nt", "nquads"):
        bad_line = _first_bad_ntriples_line(data, syntax)
        if bad_line:
            location = f"line {bad_line}"
    message = _without_content(message, data)
    return InputError(f"malformed {name}: {message}; expected valid {name}", source=src, location=location)


_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|<[^<>\n]*>")


def _without_content(message: str, data: bytes) -> str:
    """A parser message with every quoted fragment that occurs in the file replaced by
    ``'…'``: the content of a file that failed to parse (which may be ``/etc/passwd`` reached
    through an import) is never printed back."""
    message = message.splitlines()[0] if message else message

    def scrub(m: re.Match) -> str:
        inner = m.group(0)[1:-1]
        return "'…'" if len(inner) > 2 and inner.encode("utf-8", "replace") in data else m.group(0)

    message = _QUOTED.sub(scrub, message)

    def unquoted(token: str) -> str:  # e.g. N-Triples' "Invalid line: <the line>"
        core = token.strip(";,.")
        risky = len(core) >= 12 or (len(core) >= 6 and not core.isalpha())
        return "…" if risky and core.encode("utf-8", "replace") in data else token

    return " ".join(unquoted(t) for t in message.split(" "))[:300]


def _first_bad_ntriples_line(data: bytes, syntax: str) -> int | None:
    from rdflib import Graph

    for k, raw in enumerate(data.splitlines(), start=1):
        s = raw.strip()
        if not s or s.startswith(b"#"):
            continue
        try:
            Graph().parse(data=raw + b"\n", format=syntax)
        except Exception:
            return k
    return None


# ------------------------------------------------------------------ compaction
class _Compactor:
    """IRI → CURIE with the graph's bindings; remembers the prefixes it used."""

    def __init__(self, bindings: Iterable[tuple[str, str]]):
        self._ns = sorted(
            ((ns, prefix) for prefix, ns in bindings if prefix not in _BAD_PREFIXES and ns),
            key=lambda t: (-len(t[0]), t[1]),
        )
        self.used: dict[str, str] = {}
        self._cache: dict[str, str] = {}
        self._curie_iri: dict[str, str] = {}

    def __call__(self, iri: str) -> str:
        hit = self._cache.get(iri)
        if hit is not None:
            return hit
        out = iri
        if iri.startswith(OBO_PURL):
            m = _OBO_LOCAL.match(iri[len(OBO_PURL) :])
            if m:
                out = self._use(f"{m.group(1)}:{m.group(2)}", m.group(1), OBO_PURL + m.group(1) + "_", iri)
        if out == iri:
            for ns, prefix in self._ns:
                if iri.startswith(ns) and len(iri) > len(ns):
                    local = iri[len(ns) :]
                    if not any(c.isspace() for c in local):
                        out = self._use(f"{prefix}:{local}", prefix, ns, iri)
                        break
        self._cache[iri] = out
        return out

    def _use(self, curie: str, prefix: str, ns: str, iri: str) -> str:
        if self.used.get(prefix, ns) != ns or self._curie_iri.get(curie, iri) != iri:
            return iri  # a prefix already bound elsewhere: keep the IRI rather than collide
        self.used[prefix] = ns
        self._curie_iri[curie] = iri
        return curie


# ------------------------------------------------------------------ loading
def load_rdf(
    path: str | Path,
    *,
    format: str | None = None,
    follow_imports: bool = False,
    allow_network: bool = False,
    import_paths: Any = (),
    dangling: str = "declare",
    conflicts: str = "error",
    lang: str = "en",
    reasoner: str = "none",
    syntax: str | None = None,
    strict: bool = False,
) -> Ontology:
    """Load an RDF/RDFS/OWL/SKOS ontology (see the module docstring for the mapping).

    Parameters
    ----------
    format:
        rdflib syntax name or alias (``turtle``, ``xml``, ``nt``, ``json-ld``, ...); ``None``
        takes it from the extension.
    follow_imports:
        Parse ``owl:imports`` too (local ``file:`` IRIs and paths relative to the file, each
        checked like the main file). Off by default. Confined: a local import must lie under
        the ontology's folder or one of ``import_paths``; an ``http(s)`` import is refused
        unless ``allow_network=True`` (CLI ``--allow-network``).
    allow_network:
        Let ``follow_imports`` fetch ``http(s)`` imports (never otherwise).
    import_paths:
        More folders (besides the ontology's own) that local imports may come from.
    dangling:
        ``"declare"`` | ``"error"`` | ``"drop"`` for parents that are never declared.
    conflicts:
        ``"error"`` | ``"keep-first"`` for two different preferred labels of one node.
    strict:
        Refuse the upstream data errors that otherwise load as counted warnings (an
        alternative id that is a class of its own or names two classes, several
        replacements; see :meth:`OntologyBuilder.build`).
    lang:
        Preferred label language.
    reasoner:
        ``"none"`` or ``"hermit"`` (see :func:`load_owl`).
    syntax:
        Same as ``format``, under the name that reaches the loader through
        ``load_ontology(path, format="rdf", syntax="turtle")`` (whose own ``format`` picks
        the loader).
    """
    p = Path(path)
    rdf_format = rdf_syntax(p, syntax or format)
    if reasoner == "none":
        store = _oxigraph_store(p, rdf_format)
        if store is not None and not (follow_imports and store.has_predicate(_OWL + "imports")):
            return walk(
                store,
                source=str(p),
                dangling=dangling,
                conflicts=conflicts,
                lang=lang,
                base_dir=p.resolve().parent,
                strict=strict,
            )
    graph = parse_graph(p, rdf_format)
    return graph_to_ontology(
        graph,
        source=str(p),
        follow_imports=follow_imports,
        allow_network=allow_network,
        import_paths=import_paths,
        dangling=dangling,
        conflicts=conflicts,
        lang=lang,
        reasoner=reasoner,
        base_dir=p.resolve().parent,
        strict=strict,
    )


def load_owl(
    path: str | Path,
    *,
    reasoner: str = "none",
    format: str | None = None,
    follow_imports: bool = False,
    allow_network: bool = False,
    import_paths: Any = (),
    dangling: str = "declare",
    conflicts: str = "error",
    lang: str = "en",
    syntax: str | None = None,
    strict: bool = False,
) -> Ontology:
    """Load an OWL ontology (RDF/XML or Turtle).

    ``reasoner="none"`` (default) reads the asserted hierarchy with rdflib, exactly as
    :func:`load_rdf`. ``reasoner="hermit"`` classifies the ontology with owlready2 + HermiT
    (needs Java) and uses the *inferred* direct superclasses between named classes as the
    class hierarchy (transitively reduced: only direct superclasses, as a reasoner's taxonomy),
    e.g. ``A ≡ B and C`` makes ``A`` a subclass of ``B`` and ``C``; named classes
    HermiT finds equivalent keep only the asserted edges between each other (an inferred
    two-way edge would be a cycle), counted as ``equivalent_classes``. Labels, definitions,
    status and SKOS edges still come from the RDF. ``owl:imports`` are stripped before the
    graph reaches owlready2 (which would otherwise fetch them) unless ``follow_imports=True``,
    in which case this loader resolves them itself first.
    """
    if reasoner not in ("none", "hermit"):
        raise InputError(f"reasoner must be 'none' or 'hermit', not {reasoner!r}", source=str(path))
    return load_rdf(
        path,
        format=syntax or format,
        follow_imports=follow_imports,
        allow_network=allow_network,
        import_paths=import_paths,
        dangling=dangling,
        conflicts=conflicts,
        lang=lang,
        reasoner=reasoner,
        strict=strict,
    )


def _lang_rank(lit: Any, lang: str) -> int:
    language = (lit.language or "").lower()
    if language and (language == lang or language.startswith(lang + "-")):
        return 0
    return 1 if not language else 2


def _pick(cands: list[tuple[int, Any]], lang: str) -> tuple[list[str], list[str]]:
    """``cands``: (predicate rank, literal). Returns (winners, others) as strings; winners are
    the distinct values in the best (language tier, predicate) slot."""
    scored = sorted(
        ((_lang_rank(lit, lang), prank, str(lit).strip(), lit.language or "") for prank, lit in cands),
    )
    scored = [s for s in scored if s[2]]
    if not scored:
        return [], []
    best = scored[0][:2]
    winners = list(dict.fromkeys(s[2] for s in scored if s[:2] == best))
    others = list(dict.fromkeys(s[2] for s in scored if s[:2] != best))
    return winners, others


def graph_to_ontology(graph, **options: Any) -> Ontology:
    """Compile an rdflib ``Graph`` (see the module docstring); ``options`` are those of
    :func:`walk` (``source`` required)."""
    from kg_rageval.ontology.loaders._triples import GraphView

    return walk(GraphView(graph), **options)


def walk(
    graph,
    *,
    source: str,
    follow_imports: bool = False,
    allow_network: bool = False,
    import_paths: Any = (),
    dangling: str = "declare",
    conflicts: str = "error",
    lang: str = "en",
    reasoner: str = "none",
    base_dir: Path | None = None,
    strict: bool = False,
) -> Ontology:
    """Compile the triples of a view (:mod:`._triples`: pyoxigraph's parse as plain strings,
    or an rdflib ``Graph``); the one walk both parsers' results go through. Following
    ``owl:imports`` and ``reasoner="hermit"`` need the rdflib view."""
    U = graph.iri
    is_iri, is_bnode, is_literal = graph.is_iri, graph.is_bnode, graph.is_literal

    if dangling not in ("declare", "error", "drop"):
        raise InputError(f"dangling must be 'declare', 'error' or 'drop', not {dangling!r}", source=source)
    if reasoner not in ("none", "hermit"):
        raise InputError(f"reasoner must be 'none' or 'hermit', not {reasoner!r}", source=source)
    lang = lang.lower()
    imports = sorted({str(o) for o in graph.all_objects(U(_OWL + "imports"))})
    diagnostics_pre: list[tuple[str, str | None, int]] = []
    if imports and follow_imports:
        followed = _follow_imports(
            graph.graph, imports, source, base_dir, allow_network=allow_network, import_paths=import_paths
        )
        diagnostics_pre.append(("owl_imports_followed", None, followed))
    elif imports:
        for iri in imports:
            diagnostics_pre.append(
                (
                    "owl_imports_not_followed",
                    f"owl:imports <{iri}> not followed (pass follow_imports=True)",
                    1,
                )
            )

    bindings = list(graph.namespaces())
    for subj in graph.subjects(U(_VANN + "preferredNamespacePrefix")):
        prefix = graph.value(subj, U(_VANN + "preferredNamespacePrefix"))
        uri = graph.value(subj, U(_VANN + "preferredNamespaceUri"))
        if prefix is not None and uri is not None:
            bindings.append((str(prefix), str(uri)))
    compact = _Compactor(bindings)
    b = OntologyBuilder(source)
    for kind, message, count in diagnostics_pre:
        b.warn(kind, message, count=count)

    skip = {U(_OWL + "Thing"), U(_OWL + "Nothing")}
    node_type: dict[Any, str] = {}
    anonymous = 0
    for type_iri, tname in (
        (_OWL + "Class", "class"),
        (_RDFS + "Class", "class"),
        (_SKOS + "Concept", "concept"),
    ):
        for s in graph.subjects(U(_RDF + "type"), U(type_iri)):
            if is_iri(s):
                if s not in skip:
                    node_type.setdefault(s, tname)
            else:
                anonymous += 1
    if anonymous:
        b.warn("skipped_anonymous_classes", count=anonymous)

    edges: dict[tuple[Any, Any], None] = {}
    counts = {
        "skipped_restrictions": 0,
        "skipped_anonymous_superclasses": 0,
        "skipped_anonymous_subclasses": 0,
    }
    restriction = U(_OWL + "Restriction")
    rdf_type = U(_RDF + "type")
    thing_parents = 0
    for s, o in graph.subject_objects(U(_RDFS + "subClassOf")):
        if not is_iri(s):
            counts["skipped_anonymous_subclasses"] += 1
        elif is_bnode(o):
            if graph.has(o, rdf_type, restriction):
                counts["skipped_restrictions"] += 1
            else:
                counts["skipped_anonymous_superclasses"] += 1
        elif is_literal(o):
            b.warn("invalid_subclass_objects", f"<{s}> rdfs:subClassOf a literal {str(o)[:60]!r}")
        elif s in skip:
            continue
        elif o in skip:
            thing_parents += o == U(_OWL + "Thing")
            node_type.setdefault(s, "class")
        else:
            node_type.setdefault(s, "class")
            edges[(s, o)] = None
    for s, o in graph.subject_objects(U(_SKOS + "broader")):
        if is_iri(s) and is_iri(o):
            node_type.setdefault(s, "concept")
            edges[(s, o)] = None
        else:
            b.warn("skipped_anonymous_skos_links")
    for s, o in graph.subject_objects(U(_SKOS + "narrower")):
        if is_iri(s) and is_iri(o):
            node_type.setdefault(o, "concept")
            edges[(o, s)] = None
        else:
            b.warn("skipped_anonymous_skos_links")
    for kind, n in counts.items():
        if n:
            b.warn(kind, count=n)
    if thing_parents:
        b.warn("owl_thing_parents_dropped", count=thing_parents)

    if reasoner == "hermit":
        class_edges, equivalent = _hermit_edges(graph.graph, source, set(node_type), edges)
        skos_edges = {
            e: None
            for e in edges
            if not (node_type.get(e[0]) == "class" and graph.has(e[0], U(_RDFS + "subClassOf"), e[1]))
        }
        asserted_class = len(edges) - len(skos_edges)
        edges = dict(skos_edges)
        edges.update(dict.fromkeys(class_edges))
        b.warn("hermit_inferred_edges", count=len(class_edges))  # direct (reduced) edges
        b.warn("asserted_class_edges_replaced", count=asserted_class)
        if equivalent:
            b.warn("equivalent_classes", count=equivalent)

    # ---------------------------------------------------------------- node annotations
    pref, label_p, defn = U(_SKOS + "prefLabel"), U(_RDFS + "label"), U(_SKOS + "definition")
    iao_def = U(IAO_DEFINITION)
    deprecated_p = U(_OWL + "deprecated")
    repl_ps = (U(IAO_REPLACED_BY), U(_DCT + "isReplacedBy"))
    syn_ps = tuple(U(x) for x in _SYNONYM_PREDICATES)
    obo_ns_p = U(_OIO + "hasOBONamespace")
    alt_id_p = U(_OIO + "hasAlternativeId")
    non_literal_labels = 0
    nodes_sorted = sorted(node_type, key=str)

    def literals_of(po, preds):
        nonlocal non_literal_labels
        out = []
        for rank, pr in enumerate(preds):
            for o in po.get(pr, ()):
                if is_literal(o):
                    out.append((rank, o))
                else:
                    non_literal_labels += 1
        return out

    def literals(s, preds):
        return literals_of(graph.po(s), preds)

    for s in nodes_sorted:
        nid = compact(str(s))
        po = graph.po(s)  # predicate -> objects of s, each in the order objects(s, p) gives
        winners, others = _pick(literals_of(po, (pref, label_p)), lang)
        syns = [str(o).strip() for _, o in literals_of(po, syn_ps)]
        defs, _ = _pick(literals_of(po, (iao_def, defn)), lang)
        status = "active"
        obo_ns = next((str(o) for o in po.get(obo_ns_p, ()) if is_literal(o)), None)
        if any(graph.is_true(o) for o in po.get(deprecated_p, ()) if is_literal(o)):
            status = "deprecated"
        # every stated replacement: several different ones are flagged by the builder
        replaced = sorted(
            {compact(str(o)) if is_iri(o) else str(o).strip() for rp in repl_ps for o in po.get(rp, ())}
            - {""}
        )
        b.add_node(
            nid,
            label=winners[0] if winners else None,
            synonyms=[x for x in others + syns if x],
            definition=defs[0] if defs else None,
            status=status,
            replaced_by=replaced,
            node_type=obo_ns or node_type[s],
            where=f"<{s}>",
        )
        for extra in winners[1:]:
            b.add_node(nid, label=extra, where=f"<{s}>")  # recorded as a label conflict
        for o in po.get(alt_id_p, ()):
            alt = compact(str(o)) if is_iri(o) else str(o).strip()
            if alt:
                b.add_alias(alt, nid, where=f"<{s}>")
    if non_literal_labels:
        b.warn("non_literal_labels_skipped", count=non_literal_labels)

    # ---------------------------------------------------------------- edges
    declared = set(node_type)
    for s, o in edges:
        if o not in declared and dangling == "declare":
            declared.add(o)
            b.add_node(compact(str(o)), where=f"<{o}>")
            b.warn("parents_declared_from_edges", f"parent <{o}> of <{s}> is not declared; added as a node")
        b.add_edge(compact(str(s)), compact(str(o)), where=f"<{s}>")

    # ---------------------------------------------------------------- properties
    props: dict[Any, str] = {}
    for s in graph.subjects(rdf_type, U(_OWL + "ObjectProperty")):
        if is_iri(s):
            props[s] = "object"
    for s in graph.subjects(rdf_type, U(_RDF + "Property")):
        if is_iri(s) and (
            graph.value(s, U(_RDFS + "domain")) is not None or graph.value(s, U(_RDFS + "range")) is not None
        ):
            props.setdefault(s, "rdf")
    skipped_prop_refs = 0
    for s in sorted(props, key=str):
        dom: list[str] = []
        rng: list[str] = []
        for pred, bucket in ((U(_RDFS + "domain"), dom), (U(_RDFS + "range"), rng)):
            for o in graph.objects(s, pred):
                if is_iri(o):
                    bucket.append(compact(str(o)))
                else:
                    skipped_prop_refs += 1
        winners, _ = _pick(literals(s, (pref, label_p)), lang)
        b.add_property(
            Property(
                id=compact(str(s)),
                label=winners[0] if winners else None,
                domain=tuple(sorted(dom)),
                range=tuple(sorted(rng)),
                max_cardinality=1 if graph.has(s, rdf_type, U(_OWL + "FunctionalProperty")) else None,
            )
        )
    if skipped_prop_refs:
        b.warn("skipped_anonymous_domain_range", count=skipped_prop_refs)
    _individuals(graph, b, compact, declared, props, dangling, lang, literals)

    b.prefixes = dict(sorted(compact.used.items()))
    for onto_node in sorted(graph.subjects(rdf_type, U(_OWL + "Ontology")), key=str):
        ver = graph.value(onto_node, U(_OWL + "versionInfo")) or graph.value(
            onto_node, U(_OWL + "versionIRI")
        )
        if ver is not None:
            b.version = str(ver).strip() or None
            break
    builder_dangling = "drop" if dangling == "drop" else "error"
    if not declared:
        raise OntologyError(
            "the ontology is empty: no owl:Class, rdfs:Class or skos:Concept and no "
            "rdfs:subClassOf / skos:broader / skos:narrower statements were found",
            source=source,
        )
    return b.build(dangling=builder_dangling, conflicts=conflicts, strict=strict)


# ------------------------------------------------------------------ individuals
def _individuals(graph, b, compact, classes: set, props: dict, dangling: str, lang: str, literals) -> None:
    """Named individuals and object-property assertions (``docs/ontology.md``, "Instances and
    relations"): an individual is a named subject typed ``owl:NamedIndividual`` or typed by a
    class of the hierarchy (kind ``individual``; its classes are its ``rdf:type`` objects that
    are nodes); an assertion ``s p o`` of a declared object property between named entities is
    a triple. An end that is neither a node nor an individual follows ``dangling``:
    ``"declare"`` makes it an untyped individual (counted ``individuals_declared_from_triples``),
    ``"drop"`` drops the triple (counted), ``"error"`` refuses the file."""
    URIRef, is_iri = graph.iri, graph.is_iri
    rdf_type = URIRef(_RDF + "type")
    named = URIRef(_OWL + "NamedIndividual")
    inds: dict[Any, list] = {}
    for s, o in graph.subject_objects(rdf_type):
        if not is_iri(s) or s in classes or s in props:
            continue
        if o == named:
            inds.setdefault(s, [])
        elif o in classes:
            inds.setdefault(s, []).append(o)
    pref, label_p = URIRef(_SKOS + "prefLabel"), URIRef(_RDFS + "label")
    for s in sorted(inds, key=str):
        winners, _ = _pick(literals(s, (pref, label_p)), lang)
        b.add_instance(
            compact(str(s)),
            label=winners[0] if winners else None,
            kind="individual",
            types=sorted(compact(str(c)) for c in inds[s]),
            where=f"<{s}>",
        )
    entities = classes | set(inds)
    from_triples: set = set()
    dropped = 0
    for prop in sorted(props, key=str):
        pid = compact(str(prop))
        for s, o in graph.subject_objects(prop):
            if not (is_iri(s) and is_iri(o)):
                b.warn("skipped_anonymous_assertions")
                continue
            missing = [x for x in (s, o) if x not in entities]
            if missing and dangling == "drop":
                dropped += 1
                continue
            if missing and dangling == "declare":
                for x in missing:
                    entities.add(x)
                    from_triples.add(x)
                    b.add_instance(compact(str(x)), kind="individual", where=f"<{x}>")
            b.add_triple(compact(str(s)), pid, compact(str(o)), where=f"<{s}>")
    if dropped:
        b.warn("dangling_triples_dropped", count=dropped)
    if from_triples:
        b.warn("individuals_declared_from_triples", count=len(from_triples))


# ------------------------------------------------------------------ imports
def _follow_imports(
    graph,
    imports: list[str],
    source: str,
    base_dir: Path | None,
    *,
    allow_network: bool = False,
    import_paths: Any = (),
) -> int:
    """Parse ``owl:imports`` (transitively) into ``graph``; returns how many were read."""
    from rdflib import URIRef

    roots = [Path(base_dir or Path.cwd()).resolve()]
    if isinstance(import_paths, (str, Path)):
        import_paths = [import_paths]
    roots += [Path(x).expanduser().resolve() for x in import_paths or ()]
    seen: set[str] = set()
    todo = list(imports)
    while todo:
        iri = todo.pop(0)
        if iri in seen:
            continue
        seen.add(iri)
        data, name = _fetch_import(iri, source, base_dir, allow_network=allow_network, roots=roots)
        syntax = _syntax_of_import(name, data, source)
        sub = parse_graph(Path(name), syntax, data=data, source=name)
        for t in sub:
            graph.add(t)
        for o in sub.objects(None, URIRef(_OWL + "imports")):
            if str(o) not in seen:
                todo.append(str(o))
    return len(seen)


def _fetch_import(
    iri: str,
    source: str,
    base_dir: Path | None,
    *,
    allow_network: bool = False,
    roots: list[Path] | None = None,
) -> tuple[bytes, str]:
    """The bytes of one import, confined: ``http(s)`` only with ``allow_network``; a local
    file only under one of ``roots`` (symbolic links resolved first)."""
    from urllib.parse import unquote, urlparse

    from kg_rageval.base import limits

    parsed = urlparse(iri)
    if parsed.scheme in ("http", "https"):
        if not allow_network:
            raise UnsafeInputError(
                f"owl:imports <{iri}> is a URL: following it would reach the network; "
                "pass allow_network=True (CLI: --allow-network) to fetch it",
                source=source,
            )
        import urllib.request

        cap = limits.get("max_gz_bytes")
        try:
            with urllib.request.urlopen(iri, timeout=30) as resp:
                body = resp.read(cap + 1)
        except OSError as exc:
            raise InputError(f"cannot fetch owl:imports <{iri}>: {exc}", source=source) from None
        limits.check(
            "max_gz_bytes", len(body), f"owl:imports <{iri}> is larger than {cap} bytes", source=source
        )
        return body, iri
    if parsed.scheme == "file":
        local = Path(unquote(parsed.path))
    elif parsed.scheme == "":
        local = (base_dir or Path.cwd()) / iri
    else:
        raise InputError(f"cannot follow owl:imports <{iri}>: unsupported scheme", source=source)
    real = local.resolve()
    allowed = roots or [Path(base_dir or Path.cwd()).resolve()]
    if not any(real == r or r in real.parents for r in allowed):
        raise UnsafeInputError(
            f"owl:imports <{iri}> points outside the ontology's folder ({allowed[0]}); imports are read "
            "only from there or from the folders given as import_paths",
            source=source,
        )
    try:
        return real.read_bytes(), str(real)
    except OSError as exc:
        raise InputError(f"cannot read owl:imports <{iri}>: {exc.strerror}", source=source) from None


def _syntax_of_import(name: str, data: bytes, source: str) -> str:
    suffix = Path(name.split("?")[0]).suffix.lower()
    if suffix in _EXT_FORMATS:
        return _EXT_FORMATS[suffix]
    text = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if text == b"<":
        return "xml"
    if text == b"{" or text == b"[":
        return "json-ld"
    return "turtle"


# ------------------------------------------------------------------ reasoning
def _hermit_edges(graph, source: str, named: set, asserted: dict) -> tuple[list[tuple[Any, Any]], int]:
    """Direct named superclasses inferred by HermiT, as (child, parent) rdflib IRIs."""
    import io

    from rdflib import Graph, URIRef

    try:
        import owlready2
    except ImportError:
        raise InputError(
            "reasoner='hermit' needs owlready2: pip install 'kg-rageval[owl]'", source=source
        ) from None
    clean = Graph()
    imports = URIRef(_OWL + "imports")
    for t in graph:
        if t[1] != imports:
            clean.add(t)
    data = clean.serialize(format="nt", encoding="utf-8")
    world = owlready2.World()
    try:
        onto = world.get_ontology("http://kg-rageval.invalid/reasoned.owl").load(
            fileobj=io.BytesIO(data), format="ntriples"
        )
        with onto:
            owlready2.sync_reasoner_hermit(world, infer_property_values=False, debug=0)
    except owlready2.OwlReadyInconsistentOntologyError:
        raise OntologyError("HermiT: the ontology is inconsistent", source=source) from None
    except FileNotFoundError as exc:
        raise InputError(f"reasoner='hermit' needs Java on PATH ({exc})", source=source) from None
    except Exception as exc:
        raise OntologyError(f"HermiT failed: {str(exc).strip()[:500]}", source=source) from None
    thing, nothing = owlready2.Thing, owlready2.Nothing
    out: list[tuple[Any, Any]] = []
    equivalent = 0
    for cls in world.classes():
        child = URIRef(cls.iri)
        if cls is nothing:
            continue
        equivs = {e for e in cls.equivalent_to if isinstance(e, owlready2.ThingClass)}
        equivalent += len(equivs)
        for parent in cls.is_a:
            if not isinstance(parent, owlready2.ThingClass) or parent in (thing, nothing):
                continue
            pi = URIRef(parent.iri)
            if parent in equivs and (child, pi) not in asserted:
                continue
            out.append((child, pi))
    return _transitive_reduction(out), equivalent // 2


def _transitive_reduction(edges: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Keep direct superclasses only: owlready2 keeps asserted parents beside inferred ones
    (``Mother ⊑ Person`` stays after ``Mother ⊑ Parent ⊑ Person`` is inferred)."""
    import networkx as nx

    g = nx.DiGraph(edges)
    if not nx.is_directed_acyclic_graph(g):
        return edges  # the builder reports the cycle
    kept = set(nx.transitive_reduction(g).edges())
    return [e for e in dict.fromkeys(edges) if e in kept]
