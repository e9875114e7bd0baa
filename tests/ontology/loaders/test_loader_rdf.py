"""RDF/OWL/SKOS loader: every syntax, the mapping rules, bad input, real files."""

from __future__ import annotations

import shutil

import pytest

from kg_rageval.base.errors import HierarchyCycleError, InputError, OntologyError
from kg_rageval.ontology import VIRTUAL_ROOT_ID, load_ontology
from kg_rageval.ontology.loaders.rdf import load_owl, load_rdf, rdf_syntax

EX = "http://example.org/animals#"


@pytest.fixture(scope="module")
def onto_dir(fixtures_dir):
    return fixtures_dir / "ontology"


@pytest.fixture(scope="module")
def animals(onto_dir):
    return load_ontology(onto_dir / "animals.ttl")


def _expanded_edges(o):
    return {(o.expand_curie(c), o.expand_curie(p)) for c, p in o.edges() if p != VIRTUAL_ROOT_ID}


@pytest.mark.parametrize("name", ["animals.ttl", "animals.rdf", "animals.nt", "animals.jsonld"])
def test_every_syntax_gives_the_same_ontology(onto_dir, animals, name):
    o = load_ontology(onto_dir / name)
    assert len(o) == len(animals) == 13  # 12 classes + virtual root
    assert _expanded_edges(o) == _expanded_edges(animals)
    assert {o.expand_curie(i) for i in o.ids} == {animals.expand_curie(i) for i in animals.ids}
    assert o.diagnostics == animals.diagnostics
    if name != "animals.nt":  # N-Triples has no prefixes: ids stay IRIs (OBO PURLs aside)
        assert o.content_hash == animals.content_hash


def test_ntriples_keeps_iris_but_compacts_obo_purls(onto_dir):
    o = load_ontology(onto_dir / "animals.nt")
    assert EX + "Bat" in o and "UBERON:0001062" in o
    assert o.prefixes == {"UBERON": "http://purl.obolibrary.org/obo/UBERON_"}


def test_hierarchy_rules(animals):
    o = animals
    # owl:Thing is not a node; Animal (subClassOf owl:Thing) is a root among four
    assert "owl:Thing" not in o and not any(i.endswith("#Thing") for i in o.ids)
    assert o.virtual_root and sorted(o.real_roots) == sorted(
        ["ex:Animal", "ex:FlyingThing", "ex:Hair", "UBERON:0001062"]
    )
    # the restriction and the union superclass are skipped and counted
    assert o.parents("ex:Mammal") == ["ex:Animal"]
    assert o.parents("ex:FlyingThing") == [VIRTUAL_ROOT_ID]
    assert o.diagnostics == {
        "owl_imports_not_followed": 1,
        "skipped_restrictions": 1,
        "skipped_anonymous_superclasses": 1,
        "owl_thing_parents_dropped": 1,
    }
    assert o.ancestors("ex:Bat") == [VIRTUAL_ROOT_ID, "ex:Animal", "ex:Mammal"]
    assert o.depth("ex:Bat") == 3  # virtual root 0, Animal 1, Mammal 2


def test_labels_synonyms_definitions(animals):
    o = animals
    k = o.index
    assert o.label("ex:Animal") == "animal"  # @en preferred over @de
    assert o.synonyms[k("ex:Animal")] == ("Tier",)  # the other language becomes a synonym
    assert o.label("ex:Bird") == "bird"  # no language: used when no @en exists
    assert set(o.synonyms[k("ex:Bird")]) == {"avian", "fowl"}  # oboInOwl exact + related
    assert set(o.synonyms[k("ex:Bat")]) == {"Fledermaus", "flying mammal", "fruit bat"}
    assert o.synonyms[k("ex:Mammal")] == ("mammalian",)  # skos:altLabel
    assert o.definitions[k("ex:Animal")] == "A living organism that feeds on organic matter."
    assert o.definitions[k("ex:Bird")] == "A feathered animal."  # skos:definition
    assert o.node_types[k("ex:Bat")] == "class"


def test_deprecation_and_replacement(animals):
    o = animals
    assert o.status_of("ex:Pterodactyl") == "deprecated"
    assert o.replacement("ex:Pterodactyl") == "ex:Pterosaur"  # IAO:0100001
    assert o.status_of("ex:Feather") == "deprecated"  # "true"^^xsd:boolean
    assert o.replacement("ex:Feather") == "ex:Plume"  # dcterms:isReplacedBy
    assert o.status_of("ex:Plume") == "active"


def test_properties_and_prefixes(animals):
    (prop,) = animals.properties
    assert (prop.id, prop.label, prop.domain, prop.range) == (
        "ex:hasPart",
        "has part",
        ("ex:Animal",),
        ("UBERON:0001062",),
    )
    assert animals.prefixes == {"UBERON": "http://purl.obolibrary.org/obo/UBERON_", "ex": EX}
    assert animals.expand_curie("UBERON:0001062") == "http://purl.obolibrary.org/obo/UBERON_0001062"


def test_skos_broader_and_narrower(onto_dir):
    o = load_ontology(onto_dir / "skos.ttl")
    assert not o.virtual_root and o.root_id == "voc:vehicle"
    assert sorted(o.children("voc:vehicle")) == ["voc:bike", "voc:boat", "voc:car"]  # narrower too
    assert o.parents("voc:sedan") == ["voc:car"]
    assert o.n_edges == 4 and "duplicate_edges" not in o.diagnostics  # car stated both ways
    assert o.label("voc:car") == "car"  # en-GB matches lang="en"
    assert o.label("voc:boat") == "Boot"  # only a German label: any language
    assert set(o.synonyms[o.index("voc:car")]) == {"Auto", "automobile"}
    assert o.node_types[o.index("voc:sedan")] == "concept"
    assert load_rdf(onto_dir / "skos.ttl", lang="de").label("voc:car") == "Auto"


def test_syntax_from_extension_no_silent_fallback(onto_dir, tmp_path):
    assert rdf_syntax("a.ttl") == "turtle" and rdf_syntax("a.rdf") == "xml"
    assert rdf_syntax("a.nt") == "nt" and rdf_syntax("a.jsonld") == "json-ld"
    assert rdf_syntax(onto_dir / "hermit.owl") == "turtle"  # .owl sniffed: Turtle
    assert rdf_syntax(onto_dir / "parameter_entity.owl") == "xml"
    with pytest.raises(InputError, match="cannot tell the RDF syntax"):
        rdf_syntax("a.txt")
    with pytest.raises(InputError, match="unknown RDF syntax 'yaml'"):
        rdf_syntax("a.ttl", "yaml")
    owx = tmp_path / "x.owl"
    owx.write_text('<?xml version="1.0"?>\n<Ontology xmlns="http://www.w3.org/2002/07/owl#"/>\n')
    with pytest.raises(InputError, match="OWL/XML"):
        load_owl(owx)
    ofn = tmp_path / "y.owl"
    ofn.write_text("Prefix(:=<http://e/>)\nOntology()\n")
    with pytest.raises(InputError, match="functional syntax"):
        load_owl(ofn)
    renamed = tmp_path / "animals.data"
    shutil.copy(onto_dir / "animals.ttl", renamed)
    assert len(load_rdf(renamed, format="turtle")) == 13


@pytest.mark.parametrize(
    "name,where,expected",
    [
        ("bad_syntax.ttl", "line 6, column 16", "malformed Turtle"),
        ("bad_xml.rdf", "line 5, column 4", "malformed RDF/XML: mismatched tag"),
        ("bad_triples.nt", "line 3", "malformed N-Triples"),
        ("bad.jsonld", "line 4, column 1", "malformed JSON"),
    ],
)
def test_parse_errors_name_file_and_line(onto_dir, name, where, expected):
    with pytest.raises(InputError) as err:
        load_ontology(onto_dir / name)
    msg = str(err.value)
    assert msg.startswith(str(onto_dir / name) + ", " + where + ":"), msg
    assert expected in msg and "expected" in msg.split(":", 2)[-1]


def test_cycle_is_printed(onto_dir):
    with pytest.raises(HierarchyCycleError) as err:
        load_ontology(onto_dir / "cycle.ttl")
    assert err.value.cycle == ["ex:A", "ex:B", "ex:C", "ex:A"]
    assert "ex:A -> ex:B -> ex:C -> ex:A" in str(err.value)


def test_conflicting_labels_error_or_counted(onto_dir):
    with pytest.raises(OntologyError, match="'ex:B' has label 'lung'.*'pulmo'"):
        load_ontology(onto_dir / "conflicting_labels.ttl")
    o = load_ontology(onto_dir / "conflicting_labels.ttl", conflicts="keep-first")
    assert o.label("ex:B") == "lung" and o.diagnostics["conflicting_labels"] == 1


def test_dangling_parents_declare_error_drop(onto_dir):
    path = onto_dir / "dangling.ttl"
    o = load_ontology(path)  # default: declared as a node and counted
    assert "ex:Missing" in o and o.diagnostics["parents_declared_from_edges"] == 1
    assert o.label("ex:Missing") is None
    with pytest.raises(OntologyError, match="1 edge\\(s\\) reference undeclared concepts: 'ex:Missing'"):
        load_ontology(path, dangling="error")
    o = load_ontology(path, dangling="drop")
    assert "ex:Missing" not in o and o.diagnostics == {"dangling_edges_dropped": 1}
    assert o.parents("ex:B") == ["ex:A"]
    with pytest.raises(InputError, match="dangling.*not one of error, drop, declare"):
        load_ontology(path, dangling="ignore")


def test_empty_ontology(onto_dir):
    with pytest.raises(OntologyError, match="the ontology is empty"):
        load_ontology(onto_dir / "empty.ttl")


def test_imports_listed_not_followed_unless_asked(onto_dir):
    o = load_ontology(onto_dir / "imports_main.ttl")
    assert o.diagnostics["owl_imports_not_followed"] == 1
    assert any("imports_base.ttl" in w for w in o.warnings)
    assert o.label("ex:Base") is None  # declared from the edge only
    o = load_ontology(onto_dir / "imports_main.ttl", follow_imports=True)
    assert o.label("ex:Base") == "base (from the imported file)"
    assert o.diagnostics == {"owl_imports_followed": 1}


def test_hermit_infers_subclass(onto_dir):
    if shutil.which("java") is None:
        pytest.skip("HermiT needs Java")
    pytest.importorskip("owlready2", reason="reasoner='hermit' needs the owl extra (owlready2)")
    asserted = load_owl(onto_dir / "hermit.owl")
    ex = "http://example.org/hermit#"
    assert asserted.parents(ex + "Mother") == [ex + "Person"]
    assert asserted.parents(ex + "Parent") == [VIRTUAL_ROOT_ID]
    inferred = load_owl(onto_dir / "hermit.owl", reasoner="hermit")
    assert inferred.parents(ex + "Mother") == [ex + "Parent"]  # reduced: Person is implied
    assert inferred.parents(ex + "Parent") == [ex + "Person"]
    assert inferred.ancestors(ex + "Grandmother") == [ex + "Person", ex + "Parent", ex + "Mother"]
    assert inferred.label(ex + "Mother") == "mother"
    assert inferred.diagnostics["owl_imports_not_followed"] == 1  # and never fetched
    with pytest.raises(InputError, match="reasoner must be"):
        load_owl(onto_dir / "hermit.owl", reasoner="pellet")


# ---------------------------------------------------------------- real files
@pytest.mark.shared_data
def test_hcrt_skos(shared_data):
    o = load_ontology(shared_data / "skos" / "hcrt.ttl")
    s = o.summary()
    assert s["nodes"] == 26 and s["n_roots"] == 26 and s["virtual_root"] and s["edges"] == 0
    assert o.prefixes == {"hcrt": "https://w3id.org/kim/hcrt/"}  # vann:preferredNamespacePrefix
    assert o.label("hcrt:application") == "Software Application"
    assert "Softwareanwendung" in o.synonyms[o.index("hcrt:application")]
    assert o.resolve("Audio Recording") == "hcrt:audio"


@pytest.mark.slow
@pytest.mark.shared_data
def test_doid_owl_counts_and_closure_against_sparql(shared_data):
    """Reference check: every ancestor set equals rdflib's SPARQL ``rdfs:subClassOf+``."""
    import rdflib

    path = shared_data / "doid" / "DO_cancer_slim.owl"
    o = load_ontology(path)
    s = o.summary()
    assert (s["nodes"], s["edges"], s["n_roots"], s["multi_parent_nodes"]) == (730, 657, 75, 3)
    assert (s["deprecated"], s["labelled"], s["with_definition"]) == (1, 730, 582)
    assert o.label("DOID:0001816") == "angiosarcoma"
    assert o.synonyms[o.index("DOID:0001816")] == ("hemangiosarcoma",)
    assert o.parents("DOID:0001816") == ["DOID:162"]
    assert o.status_of("DOID:0080191") == "deprecated"
    # replaced by a DOID outside the slim; parentless, childless and obsolete: not a root
    assert o.diagnostics == {"unknown_replacements": 1, "obsolete_terms_placed_under_root": 1}
    assert o.placed_under_root == ("DOID:0080191",) and "DOID:0080191" not in o.real_roots

    g = rdflib.Graph()
    g.parse(path, format="xml")
    rows = g.query(
        "SELECT ?c ?a WHERE { ?c rdfs:subClassOf+ ?a . FILTER(isIRI(?c) && isIRI(?a)) }",
        initNs={"rdfs": rdflib.RDFS},
    )
    ref: dict[str, set[str]] = {}
    prefix = "http://purl.obolibrary.org/obo/DOID_"
    for c, a in rows:
        ref.setdefault("DOID:" + str(c)[len(prefix) :], set()).add("DOID:" + str(a)[len(prefix) :])
    for node in o.ids[1:]:
        assert set(o.ancestors(node)) - {VIRTUAL_ROOT_ID} == ref.get(node, set()), node


def test_syntax_through_the_registry(onto_dir, tmp_path):
    data = tmp_path / "vocab.data"
    shutil.copy(onto_dir / "skos.ttl", data)
    with pytest.raises(InputError, match="cannot tell the ontology format"):
        load_ontology(data)
    assert load_ontology(data, format="rdf", syntax="turtle").root_id == "voc:vehicle"
