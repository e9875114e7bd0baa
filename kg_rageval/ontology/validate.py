"""SHACL validation of a compiled ontology (``kg-rageval ontology validate``).

The compiled :class:`~kg_rageval.ontology.Ontology` is rendered to an RDF graph (see
:func:`ontology_to_graph`), so that every source format — RDF/OWL, SKOS, OBO, STIX, edge
tables — is checked by the same shapes, and the graph is validated with pySHACL against the
bundled ``shapes/ontology.ttl`` (or shapes you pass).

Rendering:

* every node except the virtual root: ``a owl:Class``, ``rdfs:label`` (when it has one),
  ``skos:altLabel`` per synonym, ``skos:definition``, ``rdfs:subClassOf`` per parent (edges to
  the virtual root are left out), ``kgr:status "active"|"deprecated"|"revoked"``,
  ``owl:deprecated true`` for deprecated *and* revoked nodes, ``dcterms:isReplacedBy`` and
  ``kgr:nodeType``;
* every property: ``a owl:ObjectProperty`` with its ``rdfs:domain`` / ``rdfs:range``;
* node IRIs: an id that is already an IRI stays one; a CURIE whose prefix is in
  ``Ontology.prefixes`` is expanded; any other id becomes ``urn:kgr:id:<percent-encoded id>``.
  Reports show the ids again, not these IRIs;
* self-subclass statements, which compiling drops, are rendered back from the loader's
  warnings so the ``NoSelfSubclass`` shape can report them.

Severities follow SHACL: ``Violation`` always fails; ``Warning`` fails unless
``allow_warnings`` (as pySHACL's ``--allow-warnings``); ``Info`` never fails.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from kg_rageval.base.errors import InputError
from kg_rageval.ontology.model import DEPRECATED, REVOKED, STATUS_NAMES, Ontology

KGR = "https://w3id.org/kg-rageval/ns#"
ID_NS = "urn:kgr:id:"
SHAPES_FILE = "ontology.ttl"
_SELF_LOOP = re.compile(r"^('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\") is declared its own parent$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_KNOWN = {
    "http://www.w3.org/2000/01/rdf-schema#": "rdfs:",
    "http://www.w3.org/2002/07/owl#": "owl:",
    "http://www.w3.org/2004/02/skos/core#": "skos:",
    "http://purl.org/dc/terms/": "dcterms:",
    "http://www.w3.org/ns/shacl#": "sh:",
    "https://w3id.org/kg-rageval/shapes#": "kgrs:",
    KGR: "kgr:",
}


def bundled_shapes() -> Path:
    """Path of the bundled ``ontology.ttl`` shapes, located by :mod:`kg_rageval.base.resources`
    (``kg_rageval/data/shapes/``, else the repository's ``shapes/`` next to the package);
    raises :class:`InputError` when it is missing."""
    from kg_rageval.base.errors import KgRagevalError
    from kg_rageval.base.resources import shape

    try:
        return shape(SHAPES_FILE)
    except KgRagevalError as exc:
        raise InputError(
            f"the bundled SHACL shapes are missing ({exc}); pass shapes=PATH "
            "(CLI: --shapes PATH) or reinstall kg-rageval"
        ) from None


@dataclass(frozen=True)
class ValidationResult:
    """One SHACL result: ``severity`` (Violation/Warning/Info), ``focus`` (the ontology id),
    ``path`` (compact property), ``message``, ``value`` and the ``shape`` that produced it."""

    severity: str
    focus: str
    path: str | None
    message: str
    value: str | None = None
    shape: str | None = None

    def to_dict(self) -> dict:
        return {
            "severity": self.severity,
            "focus": self.focus,
            "path": self.path,
            "message": self.message,
            "value": self.value,
            "shape": self.shape,
        }


@dataclass
class ValidationReport:
    """The outcome of :func:`validate_ontology`; results sorted by severity, focus, path."""

    source: str
    shapes: str
    results: list[ValidationResult] = field(default_factory=list)
    nodes: int = 0
    triples: int = 0

    def counts(self) -> dict[str, int]:
        out = {"Violation": 0, "Warning": 0, "Info": 0}
        for r in self.results:
            out[r.severity] = out.get(r.severity, 0) + 1
        return out

    def passes(self, allow_warnings: bool = False) -> bool:
        """False on any Violation; on any Warning too unless ``allow_warnings``."""
        c = self.counts()
        return c["Violation"] == 0 and (allow_warnings or c["Warning"] == 0)

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "shapes": self.shapes,
            "conforms": not self.results,
            "passes": self.passes(),
            "passes_allowing_warnings": self.passes(allow_warnings=True),
            "counts": self.counts(),
            "nodes": self.nodes,
            "triples": self.triples,
            "results": [r.to_dict() for r in self.results],
        }

    def verdict(self, fail_on_warnings: bool = False) -> str:
        """The one-line verdict, worded as the exit code decides: ``"conforms"`` (no results),
        ``"conforms, with N warning(s)"`` (warnings or info only: exit 0), ``"fails on N
        warning(s) (--fail-on-warnings)"``, or ``"does not conform"`` (a violation: exit 1).
        ``to_dict()["conforms"]`` keeps SHACL's meaning (no result of any severity)."""
        c = self.counts()
        if c["Violation"]:
            return "does not conform"
        if c["Warning"] and fail_on_warnings:
            return f"fails on {c['Warning']} warning(s) (--fail-on-warnings)"
        notes = [f"{c['Warning']} warning(s)"] * bool(c["Warning"]) + [f"{c['Info']} info"] * bool(c["Info"])
        return "conforms" + (f", with {' and '.join(notes)}" if notes else "")

    def to_text(self, limit: int = 200, *, fail_on_warnings: bool = False) -> str:
        c = self.counts()
        head = (
            f"{self.source}: {self.verdict(fail_on_warnings)} "
            f"({c['Violation']} violation(s), {c['Warning']} warning(s), {c['Info']} info) "
            f"— shapes {self.shapes}"
        )
        lines = [head]
        for r in self.results[:limit]:
            extra = f" [{r.path}]" if r.path else ""
            value = f" (value: {r.value})" if r.value and r.value != r.focus else ""
            lines.append(f"  {r.severity:<9} {r.focus}{extra}: {r.message}{value}")
        if len(self.results) > limit:
            lines.append(f"  ... and {len(self.results) - limit} more (use --format json for all)")
        return "\n".join(lines)


def _iri_of(ontology: Ontology):
    prefixes = ontology.prefixes

    def iri(node_id: str) -> str:
        m = _SCHEME.match(node_id)
        if m:
            prefix = node_id[: m.end() - 1]
            if prefix in prefixes:
                return prefixes[prefix] + node_id[m.end() :]
            if "://" in node_id or prefix.lower() in ("urn", "mailto", "file", "tag"):
                return node_id
        return ID_NS + quote(node_id, safe="")

    return iri


def self_loops(ontology: Ontology) -> list[str]:
    """Ids the loader declared their own parent (recovered from the builder's warnings)."""
    out = []
    for w in ontology.warnings:
        m = _SELF_LOOP.match(w)
        if m:
            try:
                out.append(ast.literal_eval(m.group(1)))
            except (ValueError, SyntaxError):
                continue
    return out


def ontology_to_graph(ontology: Ontology):
    """Render ``ontology`` as an rdflib ``Graph`` (see the module docstring); also returns the
    IRI → id map used to report ids."""
    from rdflib import Graph, Literal, URIRef
    from rdflib.namespace import DCTERMS, OWL, RDF, RDFS, SKOS

    g = Graph(bind_namespaces="core")
    g.bind("skos", SKOS)
    g.bind("dcterms", DCTERMS)
    g.bind("kgr", KGR)
    iri = _iri_of(ontology)
    skip = 0 if ontology.virtual_root else -1
    placed = set(ontology.placed_under_root)  # their link to the root is the compiler's, not the source's
    refs = [URIRef(iri(i)) for i in ontology.ids]
    back = {str(r): i for r, i in zip(refs, ontology.ids)}
    status_p, type_p = URIRef(KGR + "status"), URIRef(KGR + "nodeType")
    true = Literal(True)
    for k, node in enumerate(refs):
        if k == skip:
            continue
        g.add((node, RDF.type, OWL.Class))
        label = ontology.labels[k]
        if label is not None:
            g.add((node, RDFS.label, Literal(label)))
        for s in ontology.synonyms[k]:
            g.add((node, SKOS.altLabel, Literal(s)))
        if ontology.definitions[k] is not None:
            g.add((node, SKOS.definition, Literal(ontology.definitions[k])))
        st = int(ontology.status[k])
        g.add((node, status_p, Literal(STATUS_NAMES[st])))
        if st in (DEPRECATED, REVOKED):
            g.add((node, OWL.deprecated, true))
        rep = int(ontology.replaced_by[k])
        if rep >= 0:
            g.add((node, DCTERMS.isReplacedBy, refs[rep]))
        if ontology.node_types[k]:
            g.add((node, type_p, Literal(ontology.node_types[k])))
        if ontology.ids[k] in placed:
            continue
        for p in ontology.parent_indices(k):
            if int(p) != skip:
                g.add((node, RDFS.subClassOf, refs[int(p)]))
    for node_id in self_loops(ontology):
        if node_id in ontology:
            r = refs[ontology.index(node_id)]
            g.add((r, RDFS.subClassOf, r))
    for prop in ontology.properties:
        pr = URIRef(iri(prop.id))
        back.setdefault(str(pr), prop.id)
        g.add((pr, RDF.type, OWL.ObjectProperty))
        if prop.label:
            g.add((pr, RDFS.label, Literal(prop.label)))
        # kinds (STIX types of the knowledge graph) are no classes: only node ids are rendered
        for d in prop.domain:
            if d in ontology:
                g.add((pr, RDFS.domain, URIRef(iri(d))))
        for rg in prop.range:
            if rg in ontology:
                g.add((pr, RDFS.range, URIRef(iri(rg))))
    return g, back


def _short(term, back: dict[str, str]) -> str | None:
    if term is None:
        return None
    s = str(term)
    if s in back:
        return back[s]
    for ns, pre in _KNOWN.items():
        if s.startswith(ns):
            return pre + s[len(ns) :]
    return s


def load_shapes(path: str | Path):
    """Parse a SHACL shapes file (any RDF syntax rdflib reads, the format from the extension,
    Turtle when it does not tell); a missing or unparsable file raises :class:`InputError`.
    Used for ontology validation and by :mod:`kg_rageval.families.conformance.shacl`."""
    from rdflib import Graph
    from rdflib.util import guess_format

    p = Path(path)
    if not p.is_file():
        raise InputError("no such shapes file", source=str(p))
    g = Graph()
    try:
        g.parse(p, format=guess_format(str(p)) or "turtle")
    except Exception as exc:
        raise InputError(f"cannot parse the SHACL shapes: {exc}", source=str(p)) from None
    return g


def validate_ontology(ontology: Ontology, shapes: str | Path | None = None) -> ValidationReport:
    """Validate ``ontology`` against SHACL ``shapes`` (default: :func:`bundled_shapes`)."""
    from pyshacl import validate
    from rdflib.namespace import SH

    shapes_path = Path(shapes) if shapes is not None else bundled_shapes()
    sg = load_shapes(shapes_path)
    data, back = ontology_to_graph(ontology)
    _, results_graph, _ = validate(
        data,
        shacl_graph=sg,
        inference="none",
        advanced=True,
        allow_warnings=True,
        allow_infos=True,
    )
    results: list[ValidationResult] = []
    for r in results_graph.subjects(SH.resultSeverity, None):
        sev = _short(results_graph.value(r, SH.resultSeverity), {})
        sev = sev.split(":", 1)[1] if sev and sev.startswith("sh:") else str(sev)
        msgs = [str(m) for m in results_graph.objects(r, SH.resultMessage)]
        value = results_graph.value(r, SH.value)
        shape = results_graph.value(r, SH.sourceShape)
        component = results_graph.value(r, SH.sourceConstraintComponent)
        results.append(
            ValidationResult(
                severity=sev,
                focus=_short(results_graph.value(r, SH.focusNode), back) or "?",
                path=_short(results_graph.value(r, SH.resultPath), back),
                message=msgs[0] if msgs else (_short(component, {}) or "constraint failed"),
                value=_short(value, back),
                shape=_short(shape, {})
                if shape is not None and not _is_bnode(shape)
                else _short(component, {}),
            )
        )
    order = {"Violation": 0, "Warning": 1, "Info": 2}
    results.sort(key=lambda x: (order.get(x.severity, 3), x.focus, x.path or "", x.message, x.value or ""))
    return ValidationReport(
        source=ontology.source,
        shapes=str(shapes_path),
        results=results,
        nodes=len(ontology) - (1 if ontology.virtual_root else 0),
        triples=len(data),
    )


def _is_bnode(term) -> bool:
    from rdflib import BNode

    return isinstance(term, BNode)
