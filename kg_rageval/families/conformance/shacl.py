"""Outputs rendered as RDF and validated against SHACL shapes (pySHACL).

For teams that write output contracts as SHACL instead of JSON Schema. Each record's
``answer.output`` object becomes one node ``<urn:kg-rageval:record:<id>>`` of type
``kgro:Output`` (``kgro:`` = ``urn:kg-rageval:output#``):

* a field holding ontology ids → ``kgro:<field>`` links to the id's IRI (the id itself when it
  is an IRI, its CURIE expansion with the ontology's prefixes, else
  ``urn:kg-rageval:node:<percent-encoded id>``); a list gives one link per item;
* a triples field → one blank node per triple with ``kgro:subject``/``kgro:object`` (IRIs) and
  ``kgro:predicate`` (a plain string literal);
* any other value → a typed literal (``xsd:string``, ``xsd:integer``, ``xsd:double``,
  ``xsd:boolean``); a value of the wrong shape (a number where an id belongs) stays a literal,
  so ``sh:nodeKind sh:IRI`` catches it.

Every *known* id is described from the ontology so shapes can test it: ``kgro:nodeType``,
``kgro:status`` (``"active"``, ``"deprecated"``, ``"revoked"``), ``rdfs:label``,
``kgro:replacedBy`` and ``rdfs:subClassOf`` edges over its whole ancestor subgraph (the virtual
root left out), so a shape can require ``[sh:zeroOrMorePath rdfs:subClassOf]`` to reach a class.
Unknown ids get no description. Which fields hold ids comes from the spec when one is given,
else every string value is a literal.

A string that is not JSON, or JSON that is not an object, cannot be rendered: the output counts
as not conforming, with the reason, and no RDF is made for it. See ``shapes/output-attack.ttl``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kg_rageval.families.conformance.metrics import (
    MISSING_OUTPUT,
    output_expectation,
    parse_output,
    record_gold_node,
    unscored_output,
)
from kg_rageval.ontology.model import STATUS_NAMES, Ontology
from kg_rageval.ontology.validate import load_shapes
from kg_rageval.records.slices import record_slices
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, named, ratio

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.families.conformance.spec import AnySpec

KGRO = "urn:kg-rageval:output#"
RECORD_BASE = "urn:kg-rageval:record:"
NODE_BASE = "urn:kg-rageval:node:"


class ShaclFamily(Family):
    """``shacl_conformance`` = conforming outputs / outputs; ``violations_per_output`` =
    validation results (any severity) / outputs."""

    name = "conformance_shacl"
    version = "1"
    stats = ("outputs", "conforming", "violations", "unrenderable")

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        miss = "no records with answer.output"
        return named(
            ratio("shacl_conformance", s["conforming"], s["outputs"], missing=miss),
            ratio("violations_per_output", s["violations"], s["outputs"], missing=miss),
            ratio("unrenderable_rate", s["unrenderable"], s["outputs"], missing=miss),
        )


SHACL_FAMILY = ShaclFamily()


def node_iri(ontology: Ontology | None, node_id: str) -> str:
    """The IRI an id is rendered as (see the module docstring)."""
    if "://" in node_id or node_id.startswith("urn:"):
        return node_id
    if ontology is not None:
        exp = ontology.expand_curie(node_id)
        if exp != node_id and "://" in exp:
            return exp
    return NODE_BASE + quote(node_id, safe="")


def record_iri(record_id: Any) -> str:
    return RECORD_BASE + quote(str(record_id), safe="")


def _id_fields(spec: AnySpec | None) -> tuple[set[str], set[str]]:
    if spec is None:
        return set(), set()
    nodes = {k for k, f in spec.fields.items() if f.kind in ("node", "list")}
    triples = {k for k, f in spec.fields.items() if f.kind == "triples"}
    return nodes, triples


def render_outputs(
    ontology: Ontology,
    outputs: Iterable[tuple[Any, Mapping[str, Any]]],
    spec: AnySpec | None = None,
):
    """An ``rdflib.Graph`` of ``(record id, output object)`` pairs; see the module docstring."""
    from rdflib import BNode, Graph, Literal, Namespace, URIRef
    from rdflib.namespace import RDF, RDFS

    K = Namespace(KGRO)
    g = Graph()
    g.bind("kgro", K)
    node_fields, triple_fields = _id_fields(spec)
    seen: set[str] = set()
    idx = ontology.id_index

    def describe(i: int) -> None:
        for a in ontology.ancestor_indices(i).tolist():
            nid = ontology.ids[a]
            if nid in seen or (ontology.virtual_root and a == 0):
                continue
            seen.add(nid)
            ref = URIRef(node_iri(ontology, nid))
            if ontology.node_types[a]:
                g.add((ref, K.nodeType, Literal(ontology.node_types[a])))
            g.add((ref, K.status, Literal(STATUS_NAMES[int(ontology.status[a])])))
            g.add((ref, K.id, Literal(nid)))
            if ontology.labels[a]:
                g.add((ref, RDFS.label, Literal(ontology.labels[a])))
            rep = int(ontology.replaced_by[a])
            if rep >= 0:
                g.add((ref, K.replacedBy, URIRef(node_iri(ontology, ontology.ids[rep]))))
            for p in ontology.parent_indices(a).tolist():
                if not (ontology.virtual_root and p == 0):
                    g.add((ref, RDFS.subClassOf, URIRef(node_iri(ontology, ontology.ids[p]))))

    def ident(v: Any):
        if isinstance(v, str):
            if v in idx:
                describe(idx[v])
            return URIRef(node_iri(ontology, v))
        return _literal(v)

    def _literal(v: Any):
        if isinstance(v, (dict, list)) or v is None:
            import json

            return Literal(json.dumps(v))
        return Literal(v)

    for rid, obj in outputs:
        out = URIRef(record_iri(rid))
        g.add((out, RDF.type, K.Output))
        for key, value in obj.items():
            prop = K[quote(str(key), safe="")]
            values = value if isinstance(value, list) else [value]
            if key in triple_fields and isinstance(value, list):
                for t in value:
                    if not isinstance(t, dict):
                        g.add((out, prop, _literal(t)))
                        continue
                    b = BNode()
                    g.add((out, prop, b))
                    for slot in ("subject", "object"):
                        if slot in t:
                            g.add((b, K[slot], ident(t[slot])))
                    if "predicate" in t:
                        g.add((b, K.predicate, _literal(t["predicate"])))
                    for extra in set(t) - {"subject", "predicate", "object"}:
                        g.add((b, K[quote(str(extra), safe="")], _literal(t[extra])))
            elif key in node_fields:
                for v in values:
                    g.add((out, prop, ident(v)))
            else:
                for v in values:
                    g.add((out, prop, _literal(v)))
    return g


def score_shacl(
    ontology: Ontology,
    records: Iterable[Mapping[str, Any]],
    shapes: Any,
    spec: AnySpec | None = None,
) -> Evaluation:
    """Validate every ``answer.output`` against ``shapes`` (a path or an ``rdflib.Graph``) with
    pySHACL (no inference) in one run, and map each validation result back to its record
    (results whose focus node is a triple node go to the triple's output). Per-row details list
    the results: path, value, message, constraint component, severity. Keys: ``gold_node``
    (:func:`~kg_rageval.families.conformance.metrics.record_gold_node`, the reference's first node field
    read through ``spec``) and ``slice:<name>``, as for :func:`score_conformance`."""
    import pyshacl
    from rdflib import BNode, URIRef
    from rdflib.namespace import RDF, SH

    shapes_graph = load_shapes(shapes) if isinstance(shapes, (str, Path)) else shapes
    rows: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    unscored: list[dict[str, str]] = []
    renderable: list[tuple[Any, dict]] = []
    first_node = (
        next((n for n, f in spec.fields.items() if f.kind == "node"), None) if spec is not None else None
    )
    slice_names: set[str] = set()
    for r in records:
        rid = str(r.get("id"))
        answer = r.get("answer")
        why = output_expectation(r)
        if why is not None or not isinstance(answer, Mapping):
            unscored.append(unscored_output(rid, why or MISSING_OUTPUT))
            continue
        obj, problem = parse_output(answer["output"])
        row: dict[str, Any] = {
            "record_id": rid,
            "outputs": 1.0,
            "conforming": 1.0,
            "violations": 0.0,
            "unrenderable": 0.0,
            "results": [],
        }
        ref = r.get("reference")
        ref_out, _ = parse_output(ref.get("output")) if isinstance(ref, Mapping) else (None, None)
        ref_node = ref_out.get(first_node) if isinstance(ref_out, dict) and first_node else None
        row["gold_node"] = record_gold_node(r, ontology, ref_node if isinstance(ref_node, str) else None)
        sl = record_slices(r)  # the one slice normalisation ({"tier": 0} is "0")
        row.update(sl)
        slice_names.update(sl)
        if problem is not None or not isinstance(obj, dict):
            row.update(conforming=0.0, unrenderable=1.0)
            row["results"] = [{"message": problem or f"the output is a {type(obj).__name__}, not an object"}]
        else:
            renderable.append((rid, obj))
        rows[rid] = row
        order.append(rid)
    data = render_outputs(ontology, renderable, spec)
    if renderable:
        _conforms, report, _text = pyshacl.validate(
            data, shacl_graph=shapes_graph, inference="none", advanced=True, allow_warnings=False
        )
        owner: dict[Any, str] = {URIRef(record_iri(rid)): rid for rid, _ in renderable}
        for out, _p, o in data.triples((None, None, None)):
            if out in owner and isinstance(o, BNode):
                owner[o] = owner[out]
        for res in report.subjects(RDF.type, SH.ValidationResult):
            focus = report.value(res, SH.focusNode)
            focus_rid = owner.get(focus)
            if focus_rid is None:
                continue
            row = rows[focus_rid]
            row["violations"] += 1
            row["conforming"] = 0.0
            if len(row["results"]) < 20:
                row["results"].append(
                    {
                        "path": _n3(report.value(res, SH.resultPath), report),
                        "value": _n3(report.value(res, SH.value), report),
                        "message": str(report.value(res, SH.resultMessage) or ""),
                        "constraint": _n3(report.value(res, SH.sourceConstraintComponent), report),
                        "severity": _n3(report.value(res, SH.resultSeverity), report),
                    }
                )
    out_rows = []
    for rid in order:
        row = rows[rid]
        row["results"] = row["results"] or None
        out_rows.append(row)
    return build_evaluation(
        SHACL_FAMILY,
        out_rows,
        keys=["gold_node", *sorted(slice_names)],
        details=["results"],
        unscored=unscored,
    )


def _n3(term: Any, graph: Any) -> str | None:
    if term is None:
        return None
    try:
        return term.n3(graph.namespace_manager)
    except Exception:  # a path expression node
        return str(term)
