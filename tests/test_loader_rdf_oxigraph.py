"""RDF/XML, Turtle and N-Triples parsed by pyoxigraph give the ontology rdflib's parse gives.

Each file is loaded twice — with pyoxigraph's parser (extra ``fast``) and with rdflib's
(``_parse_oxigraph`` switched off) — and the compiled ontologies must be identical (content
hash, ids, labels, synonyms, definitions, prefixes, status, replacements, aliases,
diagnostics, warnings), or both loads must raise the same error. The safety checks run before
either parser (XXE, entity expansion: the same UnsafeInputError).
"""

from __future__ import annotations

import pytest

from kg_rageval.errors import KgRagevalError
from kg_rageval.ontology import load_ontology
from kg_rageval.ontology.loaders import rdf

pytest.importorskip("pyoxigraph")


def _snap(path, **kw):
    try:
        o = load_ontology(path, **kw)
    except KgRagevalError as exc:
        return ("error", type(exc).__name__, str(exc))
    return ("ok", o.content_hash, o.ids, o.labels, o.synonyms, o.definitions, o.prefixes,
            o.status.tolist(), o.replaced_by.tolist(), o.alias_ids, o.alias_targets.tolist(),
            o.diagnostics, o.warnings)


def _both(path, monkeypatch, **kw):
    used = []
    real = rdf._parse_oxigraph

    def spy(*a, **k):
        used.append(real(*a, **k))
        return used[-1]

    monkeypatch.setattr(rdf, "_parse_oxigraph", spy)
    fast = _snap(path, **kw)
    monkeypatch.setattr(rdf, "_parse_oxigraph", lambda *a, **k: False)
    slow = _snap(path, **kw)
    assert fast == slow
    return fast, used


RDF_FIXTURES = ["aliases.ttl", "animals.nt", "animals.rdf", "animals.ttl", "bad_syntax.ttl",
                "bad_triples.nt", "bad_xml.rdf", "billion_laughs.rdf", "clean.ttl",
                "conflicting_labels.ttl", "cycle.ttl", "dangling.ttl", "deprecated_warning.ttl",
                "empty.ttl", "imports_main.ttl", "parameter_entity.owl", "skos.ttl", "xxe.rdf"]


@pytest.mark.parametrize("name", RDF_FIXTURES)
def test_fixture_same_as_rdflib(name, fixtures_dir, monkeypatch):
    out, used = _both(fixtures_dir / "ontology" / name, monkeypatch)
    if name in ("animals.rdf", "animals.ttl", "animals.nt"):
        assert out[0] == "ok" and used == [True]  # the fast parser did the work
    if name in ("xxe.rdf", "billion_laughs.rdf", "parameter_entity.owl"):
        assert out[0] == "error" and out[1] == "UnsafeInputError" and used == []  # refused before parsing


def test_bundled_turtle(monkeypatch):
    from pathlib import Path

    out, used = _both(Path(__file__).resolve().parents[1] / "ontologies" / "hcrt.ttl", monkeypatch)
    assert out[0] == "ok" and used == [True]


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["DO_AGR_slim.owl", "DO_cancer_slim.owl"])
def test_disease_ontology_slims(name, shared_data, monkeypatch):
    path = shared_data / "doid" / name
    if not path.exists():
        pytest.skip(f"{path} is absent")
    out, used = _both(path, monkeypatch)
    assert out[0] == "ok" and used == [True] and len(out[2]) > 20
