"""Loading never reaches the network and never expands entity bombs."""

from __future__ import annotations

import json
import socket
import urllib.request

import pytest

from kg_rageval.base.errors import UnsafeInputError
from kg_rageval.ontology import load_ontology
from kg_rageval.ontology.loaders.safety import MAX_ENTITY_VALUE, check_jsonld, check_xml


@pytest.fixture(scope="module")
def onto_dir(fixtures_dir):
    return fixtures_dir / "ontology"


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection or URL fails the test."""
    calls: list[str] = []

    def refuse(*args, **kwargs):
        calls.append(repr(args[:2]))
        raise AssertionError(f"network access attempted: {args[:2]!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    return calls


def test_billion_laughs_refused(onto_dir):
    with pytest.raises(UnsafeInputError, match=r"line 4: entity &lol1; references another entity"):
        load_ontology(onto_dir / "billion_laughs.rdf")


def test_external_entity_refused(onto_dir):
    with pytest.raises(UnsafeInputError) as err:
        load_ontology(onto_dir / "xxe.rdf")
    assert "line 4" in str(err.value) and "file:///etc/passwd" in str(err.value)
    assert "external entity &secret;" in str(err.value)


def test_parameter_entity_and_external_dtd_refused(onto_dir, tmp_path):
    with pytest.raises(UnsafeInputError, match="parameter entity %remote;"):
        load_ontology(onto_dir / "parameter_entity.owl")
    dtd = tmp_path / "dtd.rdf"
    dtd.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF SYSTEM "http://example.org/rdf.dtd">\n'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/>\n'
    )
    with pytest.raises(UnsafeInputError, match="line 2: the document type names an external DTD"):
        load_ontology(dtd)


def test_quadratic_blowup_refused(tmp_path):
    big = tmp_path / "big.rdf"
    big.write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY a "{"x" * (MAX_ENTITY_VALUE + 1)}">]>\n<r/>\n'
    )
    with pytest.raises(UnsafeInputError, match="characters long"):
        check_xml(big)


def test_protege_internal_entities_allowed(onto_dir):
    assert check_xml(onto_dir / "animals.rdf") == {"xml_entities": 4}
    o = load_ontology(onto_dir / "animals.rdf")
    assert o.label("ex:Hair") == "hair"  # its IRI is written with &ex;Hair
    assert check_xml(onto_dir / "bad_xml.rdf") == {}  # no DOCTYPE at all


def test_remote_jsonld_context_refused(onto_dir, tmp_path, no_network):
    with pytest.raises(UnsafeInputError, match="remote JSON-LD context /@context = 'https://schema.org/'"):
        load_ontology(onto_dir / "remote_context.jsonld")
    nested = tmp_path / "nested.jsonld"
    nested.write_text(
        json.dumps(
            {
                "@context": {
                    "ex": "http://example.org/",
                    "scoped": {"@id": "ex:s", "@context": ["http://evil.example/ctx"]},
                },
                "@id": "ex:a",
            }
        )
    )
    with pytest.raises(UnsafeInputError, match="/@context/scoped/@context"):
        check_jsonld(nested)
    assert not no_network


def test_loading_never_touches_the_network(onto_dir, no_network):
    # animals.* and hermit.owl declare owl:imports of http IRIs
    for name in ("animals.ttl", "animals.rdf", "animals.jsonld", "hermit.owl", "imports_main.ttl"):
        o = load_ontology(onto_dir / name)
        assert o.diagnostics.get("owl_imports_not_followed") == 1, name
    assert not no_network


def test_doctype_after_long_comment_and_odd_declarations(tmp_path):
    f = tmp_path / "late.rdf"
    f.write_text(
        '<?xml version="1.0"?>\n<!-- '
        + "c" * 100
        + ' -->\n<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<r/>\n'
    )
    with pytest.raises(UnsafeInputError, match="line 3: external entity &x;"):
        check_xml(f)
    f.write_text('<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY\tx\n"ok"> <!ENTITYy "bad">]>\n<r/>\n')
    with pytest.raises(UnsafeInputError, match="could not be read"):
        check_xml(f)
    f.write_text('<?xml version="1.0"?>\n<r><!-- <!DOCTYPE in a comment after the root --></r>\n')
    assert check_xml(f) == {}
    f.write_text("<?xml version='1.0'?>\n<!-- never closed " + "x" * 64)
    with pytest.raises(UnsafeInputError, match="does not end"):
        check_xml(f)
