"""The audit trail as PROV-O RDF, validated with ``shapes/provenance.ttl`` (pySHACL).

Graph (vocabulary ``kgr:`` = ``https://w3id.org/kg-rageval#``)::

    <urn:kg-rageval:answer:RUN:ID>  a prov:Entity, kgr:Answer      (kgr:Refusal when refused)
        kgr:recordId "ID" ; prov:value "answer text" ;
        prov:wasGeneratedBy <urn:kg-rageval:run:RUN> ;
        prov:wasDerivedFrom <urn:kg-rageval:doc:DOC> .               (each cited id)
    <urn:kg-rageval:doc:DOC>  a prov:Entity, kgr:Document ;
        kgr:documentId "DOC" ; kgr:sourceId "stable id" .            (only when the corpus has one)
    <urn:kg-rageval:run:RUN>  a prov:Activity, kgr:ModelRun ;
        prov:wasAssociatedWith <urn:kg-rageval:model:NAME:VERSION> ;
        kgr:decodingConfig "{canonical JSON}" ; kgr:seed 1234 ;
        kgr:corpusHash "sha256:…" ; kgr:ontologyHash "sha256:…" ; kgr:runtime "…" ;
        prov:startedAtTime "…"^^xsd:dateTime ; prov:used <doc>… .
    <urn:kg-rageval:model:NAME:VERSION>  a prov:SoftwareAgent ;
        kgr:modelName "NAME" ; kgr:modelVersion "VERSION" .

The export writes what the inputs say and nothing more: a field the manifest lacks, a cited
document missing from the corpus, a chunk-hash source id, an answer without citations all
leave the trail *non-conforming*, which :func:`validate_prov` reports. Ids are
percent-encoded into the IRIs.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kg_rageval.base.errors import ConfigError
from kg_rageval.records import Record

if TYPE_CHECKING:  # pragma: no cover
    import rdflib

    from kg_rageval.families.provenance.corpus import Corpus

from kg_rageval.families.provenance.trail import KGR


def export_prov(
    records: Iterable[Record],
    *,
    manifest: dict[str, Any] | None = None,
    corpus: Corpus | None = None,
) -> rdflib.Graph:
    """Build the PROV-O graph of one run (see the module docstring): the triples of
    :func:`~kg_rageval.families.provenance.trail.build_trail` as an rdflib graph."""
    from rdflib import Graph, Literal, URIRef
    from rdflib.namespace import PROV

    from kg_rageval.families.provenance.trail import build_trail

    g = Graph()
    g.bind("prov", PROV)
    g.bind("kgr", KGR)
    for s, p, o in build_trail(records, manifest=manifest, corpus=corpus).triples():
        obj = URIRef(o) if isinstance(o, str) else Literal(o[0], datatype=URIRef(o[1]) if o[1] else None)
        g.add((URIRef(s), URIRef(p), obj))
    return g


def validate_prov(graph: rdflib.Graph, *, shapes: str | Path | None = None) -> dict[str, Any]:
    """Validate a trail against the SHACL shape: ``{"conforms", "violations", "messages",
    "report", "focus_nodes"}`` (``messages``: up to 50 ``focus node: message`` strings;
    ``focus_nodes``: the IRIs of every node with a violation)."""
    import pyshacl
    from rdflib import Graph, Namespace
    from rdflib.namespace import RDF

    if shapes is None:
        from kg_rageval.base.resources import shape

        shapes = shape("provenance.ttl")
    path = Path(shapes)
    if not path.is_file():
        raise ConfigError(f"SHACL shapes file {str(path)!r} not found")
    sg = Graph().parse(path, format="turtle")
    conforms, report_graph, report_text = pyshacl.validate(
        graph, shacl_graph=sg, inference="none", advanced=False, allow_warnings=False
    )
    sh = Namespace("http://www.w3.org/ns/shacl#")
    msgs = []
    results = list(report_graph.subjects(RDF.type, sh.ValidationResult))
    for res in results[:50]:
        focus = report_graph.value(res, sh.focusNode)
        msg = report_graph.value(res, sh.resultMessage)
        pathv = report_graph.value(res, sh.resultPath)
        msgs.append(f"{focus}: {pathv}: {msg}")
    focus = sorted({str(report_graph.value(res, sh.focusNode)) for res in results})
    return {
        "conforms": bool(conforms),
        "violations": len(results),
        "messages": sorted(msgs),
        "report": report_text,
        "focus_nodes": focus,
    }
