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

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable
from urllib.parse import quote

from ..errors import ConfigError
from ..generation.fields import answer_text, flag, section
from ..records import Record
from .depth import cited_ids

if TYPE_CHECKING:  # pragma: no cover
    import rdflib

    from .corpus import Corpus

KGR = "https://w3id.org/kg-rageval#"


def _q(s: Any) -> str:
    return quote(str(s), safe="")


def export_prov(
    records: Iterable[Record],
    *,
    manifest: dict[str, Any] | None = None,
    corpus: "Corpus | None" = None,
) -> "rdflib.Graph":
    """Build the PROV-O graph of one run (see the module docstring)."""
    from rdflib import RDF, XSD, Graph, Literal, Namespace, URIRef
    from rdflib.namespace import PROV

    kgr = Namespace(KGR)
    g = Graph()
    g.bind("prov", PROV)
    g.bind("kgr", kgr)
    m = manifest or {}
    run_id = m.get("run_id") or "run"
    run = URIRef(f"urn:kg-rageval:run:{_q(run_id)}")
    g.add((run, RDF.type, PROV.Activity))
    g.add((run, RDF.type, kgr.ModelRun))
    model = m.get("model") if isinstance(m.get("model"), dict) else {}
    if model.get("name") or model.get("version"):
        agent = URIRef(f"urn:kg-rageval:model:{_q(model.get('name', ''))}:{_q(model.get('version', ''))}")
        g.add((agent, RDF.type, PROV.SoftwareAgent))
        g.add((run, PROV.wasAssociatedWith, agent))
        if isinstance(model.get("name"), str) and model["name"]:
            g.add((agent, kgr.modelName, Literal(model["name"], datatype=XSD.string)))
        if isinstance(model.get("version"), str) and model["version"]:
            g.add((agent, kgr.modelVersion, Literal(model["version"], datatype=XSD.string)))
    if isinstance(m.get("decoding"), dict) and m["decoding"]:
        g.add((run, kgr.decodingConfig, Literal(json.dumps(m["decoding"], sort_keys=True), datatype=XSD.string)))
    if isinstance(m.get("seed"), int) and not isinstance(m.get("seed"), bool):
        g.add((run, kgr.seed, Literal(m["seed"], datatype=XSD.integer)))
    for key, prop in (("corpus_hash", kgr.corpusHash), ("ontology_hash", kgr.ontologyHash), ("runtime", kgr.runtime)):
        if isinstance(m.get(key), str) and m[key]:
            g.add((run, prop, Literal(m[key], datatype=XSD.string)))
    if isinstance(m.get("started_at"), str) and m["started_at"]:
        g.add((run, PROV.startedAtTime, Literal(m["started_at"], datatype=XSD.dateTime)))

    docs: dict[str, URIRef] = {}
    for r in records:
        if section(r, "answer") is None:
            continue
        refused = flag(r, "answer", "refused") is True
        ans = URIRef(f"urn:kg-rageval:answer:{_q(run_id)}:{_q(r['id'])}")
        g.add((ans, RDF.type, PROV.Entity))
        g.add((ans, RDF.type, kgr.Refusal if refused else kgr.Answer))
        g.add((ans, kgr.recordId, Literal(r["id"], datatype=XSD.string)))
        text = answer_text(r)
        if text is not None:
            g.add((ans, PROV.value, Literal(text)))
        g.add((ans, PROV.wasGeneratedBy, run))
        for c in cited_ids(r):
            doc = docs.get(c)
            if doc is None:
                doc = docs[c] = URIRef(f"urn:kg-rageval:doc:{_q(c)}")
                g.add((doc, RDF.type, PROV.Entity))
                g.add((doc, RDF.type, kgr.Document))
                g.add((doc, kgr.documentId, Literal(c, datatype=XSD.string)))
                sid = corpus.source_id(c) if corpus is not None else None
                if isinstance(sid, str) and sid:
                    g.add((doc, kgr.sourceId, Literal(sid, datatype=XSD.string)))
                g.add((run, PROV.used, doc))
            g.add((ans, PROV.wasDerivedFrom, doc))
    return g


def validate_prov(graph: "rdflib.Graph", *, shapes: str | Path | None = None) -> dict[str, Any]:
    """Validate a trail against the SHACL shape: ``{"conforms", "violations", "messages",
    "report", "focus_nodes"}`` (``messages``: up to 50 ``focus node: message`` strings;
    ``focus_nodes``: the IRIs of every node with a violation)."""
    import pyshacl
    from rdflib import Graph, Namespace
    from rdflib.namespace import RDF

    if shapes is None:
        from ..resources import shape

        shapes = shape("provenance.ttl")
    path = Path(shapes)
    if not path.is_file():
        raise ConfigError(f"SHACL shapes file {str(path)!r} not found")
    sg = Graph().parse(path, format="turtle")
    conforms, report_graph, report_text = pyshacl.validate(graph, shacl_graph=sg, inference="none",
                                                           advanced=False, allow_warnings=False)
    sh = Namespace("http://www.w3.org/ns/shacl#")
    msgs = []
    results = list(report_graph.subjects(RDF.type, sh.ValidationResult))
    for res in results[:50]:
        focus = report_graph.value(res, sh.focusNode)
        msg = report_graph.value(res, sh.resultMessage)
        pathv = report_graph.value(res, sh.resultPath)
        msgs.append(f"{focus}: {pathv}: {msg}")
    focus = sorted({str(report_graph.value(res, sh.focusNode)) for res in results})
    return {"conforms": bool(conforms), "violations": len(results), "messages": sorted(msgs), "report": report_text,
            "focus_nodes": focus}
