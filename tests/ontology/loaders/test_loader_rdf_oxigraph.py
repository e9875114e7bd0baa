"""RDF/XML, Turtle and N-Triples through pyoxigraph give the ontology rdflib's parse gives.

Each file is loaded three ways and the compiled ontologies must be identical — every field of
the ``Ontology`` and of its knowledge graph (content hash, ids, parents, labels, synonyms,
definitions, prefixes, status, replacements, aliases, properties, instances, triples,
version, diagnostics, warnings in order) — or all three loads must raise the same error:

* ``store``: the fast path, pyoxigraph's triples walked as plain strings, no rdflib ``Graph``;
* ``graph``: pyoxigraph's triples turned into an rdflib ``Graph`` (``_oxigraph_store`` off);
* ``rdflib``: rdflib's own parser (both off) — the reference.

The safety checks run before any parser (XXE, entity expansion: the same UnsafeInputError);
the files the fast path must leave to rdflib (imports followed, HermiT, JSON-LD) still load.
"""

from __future__ import annotations

import dataclasses
import random
import warnings
from pathlib import Path

import numpy as np
import pytest

from kg_rageval.base.errors import KgRagevalError
from kg_rageval.ontology import load_ontology
from kg_rageval.ontology.loaders import rdf

pytest.importorskip("pyoxigraph")
ROOT = Path(__file__).resolve().parents[3]


def _freeze(x):
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.tolist())
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return tuple((f.name, _freeze(getattr(x, f.name))) for f in dataclasses.fields(x))
    if isinstance(x, dict):
        return tuple((k, _freeze(v)) for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    return x


def _snap(path, **kw):
    try:
        o = load_ontology(path, **kw)
    except KgRagevalError as exc:
        return ("error", type(exc).__name__, str(exc))
    fields = tuple((f.name, _freeze(getattr(o, f.name))) for f in dataclasses.fields(o) if f.name != "source")
    return ("ok", o.content_hash, fields)


def _three(path, monkeypatch, **kw):
    """(snapshot, whether the fast store did the work); asserts the three loads are equal."""
    used = []
    real = rdf._oxigraph_store

    def spy(*a, **k):
        got = real(*a, **k)
        used.append(got is not None)
        return got

    with monkeypatch.context() as m:
        m.setattr(rdf, "_oxigraph_store", spy)
        fast = _snap(path, **kw)
    with monkeypatch.context() as m:
        m.setattr(rdf, "_oxigraph_store", lambda *a, **k: None)
        via_graph = _snap(path, **kw)
        m.setattr(rdf, "_parse_oxigraph", lambda *a, **k: False)
        slow = _snap(path, **kw)
    assert via_graph == slow
    assert fast == slow
    return fast, used


RDF_FIXTURES = [
    "aliases.ttl",
    "animals.nt",
    "animals.rdf",
    "animals.ttl",
    "bad_syntax.ttl",
    "bad_triples.nt",
    "bad_xml.rdf",
    "billion_laughs.rdf",
    "clean.ttl",
    "conflicting_labels.ttl",
    "cycle.ttl",
    "dangling.ttl",
    "deprecated_warning.ttl",
    "empty.ttl",
    "imports_main.ttl",
    "parameter_entity.owl",
    "skos.ttl",
    "xxe.rdf",
    "hermit.owl",
    "invalid_shapes.ttl",
    "kg_individuals.owl",
    "imports_base.ttl",
    "animals.jsonld",
]


@pytest.mark.parametrize("name", RDF_FIXTURES)
def test_fixture_same_as_rdflib(name, fixtures_dir, monkeypatch):
    out, used = _three(fixtures_dir / "ontology" / name, monkeypatch)
    if name in ("animals.rdf", "animals.ttl", "animals.nt", "kg_individuals.owl", "skos.ttl"):
        assert out[0] == "ok" and used == [True]  # the fast path did the work
    if name in ("xxe.rdf", "billion_laughs.rdf", "parameter_entity.owl"):
        assert out[0] == "error" and out[1] == "UnsafeInputError" and used == []  # refused before parsing
    if name in ("bad_syntax.ttl", "bad_xml.rdf", "bad_triples.nt"):
        assert out[0] == "error" and used == [False]  # rdflib's message, as before
    if name == "animals.jsonld":
        assert out[0] == "ok" and used == [False]  # JSON-LD: rdflib only


@pytest.mark.parametrize("kw", [{"follow_imports": True}, {"follow_imports": False}])
def test_imports_followed_only_by_rdflib(kw, fixtures_dir, monkeypatch):
    out, used = _three(fixtures_dir / "ontology" / "imports_main.ttl", monkeypatch, **kw)
    assert out[0] == "ok"
    assert used == [True]  # parsed once by pyoxigraph; with imports to follow, rdflib's graph reads them
    diags = dict(out[2])["diagnostics"]
    assert ("owl_imports_followed" in dict(diags)) == kw["follow_imports"]


@pytest.mark.parametrize(
    "kw",
    [
        {"dangling": "drop"},
        {"dangling": "error"},
        {"conflicts": "keep-first"},
        {"lang": "fr"},
        {"strict": True},
    ],
)
def test_options_same_as_rdflib(kw, fixtures_dir, monkeypatch):
    for name in ("dangling.ttl", "conflicting_labels.ttl", "aliases.ttl", "skos.ttl"):
        _three(fixtures_dir / "ontology" / name, monkeypatch, **kw)


def test_bundled_turtle(monkeypatch):
    out, used = _three(ROOT / "ontologies" / "hcrt.ttl", monkeypatch)
    assert out[0] == "ok" and used == [True]


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["doid/DO_AGR_slim.owl", "doid/DO_cancer_slim.owl", "skos/hcrt.ttl"])
def test_shared_data(name, shared_data, monkeypatch):
    path = shared_data / name
    if not path.exists():
        pytest.skip(f"{path} is absent")
    out, used = _three(path, monkeypatch)
    assert out[0] == "ok" and used == [True] and len(dict(out[2])["ids"]) > 20


# ---------------------------------------------------------------- generated ontologies
def _generated_turtle(n: int, seed: int) -> str:
    """A Turtle ontology with what the walk reads: classes and SKOS concepts, several parents,
    owl:Thing parents, blank-node restrictions and anonymous superclasses, labels in several
    languages (and conflicting-free duplicates), synonyms, definitions, deprecated terms with
    replacements, alternative ids, OBO namespaces, object properties with domain/range (one
    anonymous), individuals with assertions (one to an undeclared end), an undeclared parent,
    a literal superclass, a version, duplicate triples."""
    rng = random.Random(seed)
    out = [
        "@prefix ex: <http://example.org/onto#> .",
        "@prefix owl: <http://www.w3.org/2002/07/owl#> .",
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .",
        "@prefix skos: <http://www.w3.org/2004/02/skos/core#> .",
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .",
        "@prefix obo: <http://purl.obolibrary.org/obo/> .",
        "@prefix oio: <http://www.geneontology.org/formats/oboInOwl#> .",
        "@prefix dcterms: <http://purl.org/dc/terms/> .",
        '<http://example.org/onto> a owl:Ontology ; owl:versionInfo "2026-12-01" .',
        'ex:partOf a owl:ObjectProperty ; rdfs:label "part of"@en ; rdfs:domain ex:C0 ; '
        "rdfs:range ex:C1 , [ a owl:Class ] .",
        "ex:near a owl:ObjectProperty, owl:FunctionalProperty .",
        'ex:C0 a owl:Class ; rdfs:label "root" ; rdfs:subClassOf owl:Thing .',
    ]
    for i in range(1, n):
        cls = "owl:Class" if i % 5 else "skos:Concept"
        lines = [f"ex:C{i} a {cls}"]
        parents = sorted({rng.randrange(i) for _ in range(1 + (i % 3 == 0) + (i % 7 == 0))})
        rel = "rdfs:subClassOf" if cls == "owl:Class" else "skos:broader"
        lines += [f"{rel} ex:C{p}" for p in parents]
        if i % 4 == 0:
            lines.append(f'rdfs:label "concept {i}"@en , "begrip {i}"@nl , "concept {i}"@en-GB')
        elif i % 4 == 1:
            lines.append(f'skos:prefLabel "C {i}" ; rdfs:label "label {i}"@fr')
        elif i % 4 == 2:
            lines.append(f'rdfs:label "  spaced {i} "@EN')
        if i % 3 == 0:
            lines.append(f'skos:altLabel "alt {i}"@en , "alt {i}"@de ; oio:hasExactSynonym "exact {i}"')
        if i % 6 == 0:
            lines.append(f'obo:IAO_0000115 "definition {i}"@en ; skos:definition "def {i}"')
        if i % 11 == 0:
            lines.append(f'owl:deprecated "true"^^xsd:boolean ; obo:IAO_0100001 ex:C{i - 1}')
        if i % 13 == 0:
            lines.append('owl:deprecated true ; dcterms:isReplacedBy "ex:C1"')
        if i % 17 == 0:
            lines.append('owl:deprecated "1"^^xsd:integer')
        if i % 9 == 0:
            lines.append(
                "rdfs:subClassOf [ a owl:Restriction ; owl:onProperty ex:partOf ; "
                f"owl:someValuesFrom ex:C{rng.randrange(i)} ]"
            )
        if i % 19 == 0:
            lines.append("rdfs:subClassOf [ owl:unionOf ( ex:C1 ex:C2 ) ]")
        if i % 10 == 0:
            lines.append(f'oio:hasAlternativeId "EX:{i}" ; oio:hasOBONamespace "ns_{i % 3}"')
        if i % 23 == 0:
            lines.append(f"rdfs:subClassOf ex:Undeclared{i}")
        if i % 29 == 0:
            lines.append("rdfs:subClassOf owl:Thing")
        out.append(" ;\n    ".join(lines) + " .")
        if i % 31 == 0:
            out.append(f"ex:C{i} rdfs:subClassOf ex:C0 .")  # stated twice: one edge
            out.append(f"ex:C{parents[0]} skos:narrower ex:C{i} .")
    out.append('ex:C3 rdfs:subClassOf "not a class" .')
    for k in range(max(3, n // 20)):
        out.append(f'ex:i{k} a owl:NamedIndividual , ex:C{rng.randrange(n)} ; rdfs:label "thing {k}" .')
        out.append(f"ex:i{k} ex:partOf ex:i{rng.randrange(k + 1)} .")
    out.append("ex:i0 ex:partOf ex:nowhere .")
    out.append("[ a owl:Class ; rdfs:subClassOf ex:C1 ] .")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    from rdflib import Graph

    d = tmp_path_factory.mktemp("gen")
    ttl = d / "gen.ttl"
    ttl.write_text(_generated_turtle(400, seed=7), encoding="utf-8")
    g = Graph().parse(ttl, format="turtle")
    (d / "gen.rdf").write_bytes(g.serialize(format="xml", encoding="utf-8"))
    with warnings.catch_warnings():  # pretty-xml drops the owl:unionOf list (both parsers see the same)
        warnings.simplefilter("ignore", UserWarning)
        (d / "gen_pretty.owl").write_bytes(g.serialize(format="pretty-xml", encoding="utf-8"))
    (d / "gen.nt").write_bytes(g.serialize(format="nt", encoding="utf-8"))
    return d


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gen.ttl", "gen.rdf", "gen_pretty.owl", "gen.nt"])
@pytest.mark.parametrize("kw", [{}, {"lang": "nl"}, {"dangling": "drop"}, {"conflicts": "keep-first"}])
def test_generated_same_as_rdflib(name, kw, generated, monkeypatch):
    out, used = _three(generated / name, monkeypatch, **kw)
    assert used == [True]
    if kw.get("conflicts") == "keep-first" or kw.get("lang") == "nl":
        assert out[0] == "ok"
        d = dict(out[2])
        diags = dict(d["diagnostics"])
        for kind in (
            "skipped_restrictions",
            "skipped_anonymous_superclasses",
            "owl_thing_parents_dropped",
            "invalid_subclass_objects",
            "skipped_anonymous_classes",
        ):
            assert diags.get(kind, 0) > 0, kind
        assert len(d["ids"]) >= 400 and d["version"] == "2026-12-01"
        assert dict(d["graph"])["instance_ids"]


def test_generated_counts_by_hand(tmp_path, monkeypatch):
    """The fast path's counts on a small file, worked by hand."""
    ttl = tmp_path / "small.ttl"
    ttl.write_text(
        "@prefix ex: <http://example.org/x#> .\n"
        "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        'ex:A a owl:Class ; rdfs:label "A"@en , "Aa"@fr .\n'
        "ex:B rdfs:subClassOf ex:A , [ a owl:Restriction ; owl:onProperty ex:p ; owl:someValuesFrom ex:A ] ;\n"
        "     owl:deprecated true .\n"
        "ex:C rdfs:subClassOf ex:A , ex:B , ex:D .\n",
        encoding="utf-8",
    )
    out, used = _three(ttl, monkeypatch)
    assert used == [True]
    o = load_ontology(ttl)
    assert sorted(o.ids) == ["ex:A", "ex:B", "ex:C", "ex:D", "kgr:virtual-root"]  # ex:D a second root
    assert o.label("ex:A") == "A" and o.synonyms[o.index("ex:A")] == ("Aa",)
    assert sorted(o.parents("ex:C")) == ["ex:A", "ex:B", "ex:D"]
    assert o.status_of("ex:B") == "deprecated"
    assert o.diagnostics["skipped_restrictions"] == 1
    assert o.diagnostics["parents_declared_from_edges"] == 1


@pytest.mark.parametrize("override", [True, False])
def test_bindings_as_rdflib_binds_them(override):
    """``rdflib_bindings`` replays rdflib's ``Graph.bind``: random declaration lists that reuse
    prefixes, namespaces, the empty prefix and the core ones give rdflib's bindings."""
    from rdflib import Graph

    from kg_rageval.ontology.loaders._triples import rdflib_bindings

    rng = random.Random(3)
    prefixes = [None, "", "ex", "ex1", "owl", "rdf", "default1", "_x", "a"]
    spaces = [
        "http://example.org/a#",
        "http://example.org/b#",
        "http://www.w3.org/2002/07/owl#",
        "http://www.w3.org/2000/01/rdf-schema#",
        "http://example.org/c/",
    ]
    for _ in range(400):
        declared = [(rng.choice(prefixes), rng.choice(spaces)) for _ in range(rng.randrange(1, 7))]
        g = Graph(bind_namespaces="core")
        for prefix, ns in declared:
            g.bind(prefix, ns, override=override)
        want = sorted((p, str(n)) for p, n in g.namespaces())
        assert sorted(rdflib_bindings(declared, override=override)) == want, declared


def test_xml_literal_left_to_rdflib(tmp_path, monkeypatch):
    """An rdf:XMLLiteral (rdflib parses its markup) sends the file down the rdflib path."""
    owl = tmp_path / "xmllit.rdf"
    owl.write_text(
        '<?xml version="1.0"?>\n'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
        'xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#" xmlns:owl="http://www.w3.org/2002/07/owl#" '
        'xmlns="http://example.org/x#" xmlns:x="http://example.org/x#">\n'
        '  <owl:Class rdf:about="http://example.org/x#A"><rdfs:label>A</rdfs:label>'
        '<rdfs:comment rdf:parseType="Literal"><b>bold</b></rdfs:comment></owl:Class>\n'
        '  <owl:Class rdf:about="http://example.org/x#B"><rdfs:subClassOf rdf:resource="http://example.org/x#A"/>'
        "</owl:Class>\n</rdf:RDF>\n",
        encoding="utf-8",
    )
    out, used = _three(owl, monkeypatch)
    assert out[0] == "ok" and used == [False]
    # xmlns="…#" bound first keeps the namespace on the empty prefix (rdflib, override=False),
    # which ids never use: the IRIs stay whole, on every path
    assert dict(out[2])["ids"] == ("http://example.org/x#A", "http://example.org/x#B")
