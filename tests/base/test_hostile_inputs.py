"""Hostile inputs, part 3: bounded input costs and confined loading (issue #18).

Every case returns exit code 2 with a one-line message naming the file and (for limits) the
limit and how to raise it — never exit 3, never a traceback, never a report.
"""

from __future__ import annotations

import gzip
import json
import shutil
import time
from pathlib import Path

import pytest

from kg_rageval.base import limits
from kg_rageval.base.errors import InputError, LimitExceeded, UnsafeInputError
from kg_rageval.ontology import load_ontology
from kg_rageval.records import read_records

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "audit"


def _one_line(err: str) -> None:
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.fixture()
def vehicles(tmp_path):
    shutil.copy(FIX / "vehicles.csv", tmp_path / "vehicles.csv")
    return tmp_path / "vehicles.csv"


# ---------------------------------------------------------------------- gzip
def test_gzip_bomb_records_refused(tmp_path, vehicles, cli):
    p = tmp_path / "r.jsonl.gz"
    p.write_bytes(gzip.compress(b'{"id": "x", "labels": {"gold": ["car"]}}\n' + b" " * (8 << 20), 9))
    assert p.stat().st_size < 20_000
    code, out, err = cli(
        ["--limit", "max_gz_bytes=1MiB", "score", "hierarchy", "-O", str(vehicles), "-d", str(p)]
    )
    assert code == 2 and out == ""
    _one_line(err)
    assert "r.jsonl.gz: the gzip data decompresses to more than 1048576 bytes" in err
    assert "beyond the limit max_gz_bytes = 1048576" in err and "--limit max_gz_bytes=N" in err
    assert limits.get("max_gz_bytes") == 2 << 30  # --limit lasts for that command only


def test_gzip_bomb_stix_refused(tmp_path, capsys):
    p = tmp_path / "bundle.json.gz"
    p.write_bytes(gzip.compress(b'{"type": "bundle", "objects": []' + b" " * (4 << 20) + b"}", 9))
    with limits.limits({"max_gz_bytes": 1 << 20}):
        with pytest.raises(LimitExceeded, match="decompresses to more than 1048576 bytes"):
            load_ontology(p)


def test_a_stix_bomb_is_refused_by_the_in_memory_limit_before_it_is_kept(tmp_path, cli):
    """A gzip read whole into memory stops at max_gz_memory_bytes (default 512 MiB), below
    max_gz_bytes; the output is counted in 16 MiB steps, so what is kept never passes the limit
    by more than a step (measured on a 1 GiB bomb: 611 MB RSS and 2.6 s, was 3.2 GB)."""
    from kg_rageval.base.safe_io import decompress_bounded

    p = tmp_path / "bundle.json.gz"
    body = b'{"type": "bundle", "objects": [' + b" " * (40 << 20) + b"]}"
    p.write_bytes(gzip.compress(body, 9))
    assert limits.get("max_gz_memory_bytes") == 512 << 20 < limits.get("max_gz_bytes")
    code, out, err = cli(["--limit", "max_gz_memory_bytes=8MiB", "ontology", "inspect", str(p)])
    assert code == 2 and out == ""
    _one_line(err)
    assert "bundle.json.gz: the gzip data decompresses to more than 8388608 bytes" in err
    assert "beyond the limit max_gz_memory_bytes = 8388608" in err
    with limits.limits({"max_gz_memory_bytes": 64 << 20, "max_gz_bytes": 1 << 20}):  # the smaller one applies
        with pytest.raises(LimitExceeded, match="beyond the limit max_gz_bytes = 1048576"):
            decompress_bounded(p.read_bytes(), str(p))
    with limits.limits({"max_gz_memory_bytes": 64 << 20}):
        out_bytes = decompress_bounded(gzip.compress(b"ab", 1) + gzip.compress(b"cd", 1), "two members")
        assert bytes(out_bytes) == b"abcd"
        assert bytes(decompress_bounded(p.read_bytes(), str(p))) == body  # 40 MiB: three 16 MiB steps


def test_corrupt_gzip_is_an_input_error(tmp_path):
    p = tmp_path / "bundle.json.gz"
    p.write_bytes(gzip.compress(b'{"type": "bundle"}')[:-6])
    with pytest.raises(InputError, match="corrupt gzip data"):
        load_ontology(p)


# ---------------------------------------------------------------------- JSON depth, line length
def test_deep_json_record_is_a_limit_error(tmp_path, vehicles, cli):
    p = tmp_path / "r.jsonl"
    p.write_text(
        '{"id": "a", "labels": {"gold": ["car"], "pred": ["car"]}}\n'
        '{"id": "b", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    )
    code, out, err = cli(["score", "hierarchy", "-O", str(vehicles), "-d", str(p)])
    assert code == 2
    _one_line(err)
    assert "r.jsonl, line 2: JSON nested too deeply: beyond the limit max_json_depth = 200" in err


def test_moderately_deep_json_record_is_a_limit_error(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"id": "b", "x": ' + "[" * 300 + "]" * 300 + "}\n")
    with pytest.raises(LimitExceeded, match="line 1: JSON nested too deeply"):
        read_records(p)
    with limits.limits({"max_json_depth": 400}):
        assert read_records(p)[0]["id"] == "b"


def test_overlong_record_line_refused(tmp_path, vehicles, cli):
    p = tmp_path / "r.jsonl"
    p.write_text('{"id": "a"}\n{"id": "b", "text": "' + "x" * 5000 + '"}\n')
    code, out, err = cli(
        ["--limit", "max_line_bytes=4096", "score", "hierarchy", "-O", str(vehicles), "-d", str(p)]
    )
    assert code == 2
    _one_line(err)
    assert "r.jsonl, line 2: a line longer than 4096 bytes: beyond the limit max_line_bytes = 4096" in err


def test_bad_limit_option(cli, vehicles):
    code, out, err = cli(["--limit", "max_nonsense=3", "ontology", "inspect", str(vehicles)])
    assert code == 2 and "unknown limit 'max_nonsense'" in err
    code, out, err = cli(["--limit", "max_gz_bytes=lots", "ontology", "inspect", str(vehicles)])
    assert code == 2 and "expected a positive integer" in err


def test_audit_config_limits(tmp_path, vehicles, cli):
    (tmp_path / "r.jsonl").write_text('{"id": "b", "x": ' + "[" * 50 + "]" * 50 + "}\n")
    cfg = tmp_path / "a.yaml"
    cfg.write_text(
        "ontology: vehicles.csv\nrecords: r.jsonl\ngates: ['x >= 1']\nlimits: {max_json_depth: 20}\n"
    )
    code, out, err = cli(["audit", "-c", str(cfg), "--out", str(tmp_path / "o")])
    assert code == 2
    _one_line(err)
    assert "beyond the limit max_json_depth = 20" in err and not (tmp_path / "o" / "manifest.json").exists()
    cfg.write_text(
        "ontology: vehicles.csv\nrecords: r.jsonl\ngates: ['x >= 1']\nlimits: {max_jsn_depth: 20}\n"
    )
    code, out, err = cli(["audit", "-c", str(cfg)])
    assert code == 2 and "unknown limit 'max_jsn_depth'" in err


# ---------------------------------------------------------------------- XML
LOL = (
    '<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF [\n{ents}]>\n'
    '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
    'xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#">\n{body}</rdf:RDF>\n'
)


def test_xml_bomb_through_character_references_refused(tmp_path, cli):
    ents = (
        '<!ENTITY lol "lol">\n<!ENTITY lol1 "&#38;lol;&#38;lol;&#38;lol;&#38;lol;">\n'
        '<!ENTITY lol2 "&#x26;lol1;&#x26;lol1;&#x26;lol1;&#x26;lol1;">\n'
    )
    p = tmp_path / "bomb.rdf"
    p.write_text(
        LOL.format(
            ents=ents,
            body='<rdf:Description rdf:about="http://x/a"><rdfs:label>&lol2;'
            "</rdfs:label></rdf:Description>\n",
        )
    )
    t0 = time.perf_counter()
    code, out, err = cli(["ontology", "inspect", str(p)])
    assert time.perf_counter() - t0 < 10
    assert code == 2
    _one_line(err)
    assert "entity &lol1; references another entity (&lol;, written with character references)" in err


def test_xml_quadratic_expansion_refused(tmp_path, cli):
    value = "x" * 4000  # within the per-entity limit
    body = "".join(
        f'<rdf:Description rdf:about="http://x/n{i}"><rdfs:label>{"&big;" * 40}</rdfs:label>'
        f"</rdf:Description>\n"
        for i in range(100)
    )
    p = tmp_path / "quad.rdf"
    p.write_text(LOL.format(ents=f'<!ENTITY big "{value}">\n', body=body))
    assert p.stat().st_size < 100_000
    code, out, err = cli(["--limit", "max_xml_expansion=1MiB", "ontology", "inspect", str(p)])
    assert code == 2
    _one_line(err)
    assert "entity references would add 15980000 characters to the document" in err
    assert "beyond the limit max_xml_expansion = 1048576" in err


def test_protege_style_entities_still_load(tmp_path):
    ents = '<!ENTITY owl "http://www.w3.org/2002/07/owl#">\n<!ENTITY ex "http://x/">\n'
    body = (
        '<rdf:Description rdf:about="&ex;a"><rdf:type rdf:resource="&owl;Class"/></rdf:Description>\n'
        '<rdf:Description rdf:about="&ex;b"><rdf:type rdf:resource="&owl;Class"/>'
        '<rdfs:subClassOf rdf:resource="&ex;a"/></rdf:Description>\n'
    )
    p = tmp_path / "ok.rdf"
    p.write_text(LOL.format(ents=ents, body=body))
    onto = load_ontology(p)
    assert onto.parents("http://x/b") == ["http://x/a"]


def test_external_entity_and_remote_context_still_refused(tmp_path):
    p = tmp_path / "xxe.rdf"
    p.write_text(LOL.format(ents='<!ENTITY x SYSTEM "file:///etc/passwd">\n', body=""))
    with pytest.raises(UnsafeInputError, match="external entity &x;"):
        load_ontology(p)
    j = tmp_path / "ctx.jsonld"
    j.write_text(json.dumps({"@context": "http://example.org/ctx.jsonld", "@id": "x"}))
    with pytest.raises(UnsafeInputError, match="remote JSON-LD context"):
        load_ontology(j)


def test_deep_jsonld_is_a_limit_error(tmp_path, cli):
    j = tmp_path / "deep.jsonld"
    j.write_text('{"@graph": ' + "[" * 50_000 + "]" * 50_000 + "}")
    code, out, err = cli(["ontology", "inspect", str(j)])
    assert code == 2
    _one_line(err)
    assert "max_json_depth" in err


# ---------------------------------------------------------------------- follow-imports
def _importing(tmp_path: Path, target: str) -> Path:
    main_ttl = tmp_path / "onto" / "main.ttl"
    main_ttl.parent.mkdir(exist_ok=True)
    main_ttl.write_text(
        "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        f"<http://x/o> a owl:Ontology ; owl:imports <{target}> .\n"
        "<http://x/a> a owl:Class .\n"
    )
    return main_ttl


def test_follow_imports_confined_to_the_ontology_folder(tmp_path, cli):
    secret = tmp_path / "secret.ttl"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\nhunter2 ...\n")
    main_ttl = _importing(tmp_path, secret.as_uri())
    code, out, err = cli(["ontology", "inspect", "--follow-imports", str(main_ttl)])
    assert code == 2
    _one_line(err)
    assert "points outside the ontology's folder" in err and "root:x" not in err
    code, out, err = cli(
        ["ontology", "inspect", "--follow-imports", "--import-path", str(tmp_path), str(main_ttl)]
    )
    assert code == 2  # allowed now, but it does not parse: its content is never printed back
    _one_line(err)
    assert (
        "malformed Turtle" in err and "root:x" not in err and "hunter2" not in err and "/bin/bash" not in err
    )


def test_relative_import_escaping_the_folder_refused(tmp_path):
    (tmp_path / "outside.ttl").write_text("<http://x/b> a <http://www.w3.org/2002/07/owl#Class> .\n")
    main_ttl = _importing(tmp_path, "../outside.ttl")
    with pytest.raises(UnsafeInputError, match="points outside the ontology's folder"):
        load_ontology(main_ttl, follow_imports=True)
    onto = load_ontology(main_ttl, follow_imports=True, import_paths=[str(tmp_path)])
    assert "http://x/b" in onto


def test_symlink_out_of_the_folder_refused(tmp_path):
    (tmp_path / "outside.ttl").write_text("<http://x/b> a <http://www.w3.org/2002/07/owl#Class> .\n")
    main_ttl = _importing(tmp_path, "link.ttl")
    (main_ttl.parent / "link.ttl").symlink_to(tmp_path / "outside.ttl")
    with pytest.raises(UnsafeInputError, match="points outside the ontology's folder"):
        load_ontology(main_ttl, follow_imports=True)


def test_network_imports_need_allow_network(tmp_path, cli, monkeypatch):
    import urllib.request

    def no_network(*a, **k):  # the test fails loudly if anything tries
        raise AssertionError("network reached")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    main_ttl = _importing(tmp_path, "http://example.org/evil.ttl")
    code, out, err = cli(["ontology", "inspect", "--follow-imports", str(main_ttl)])
    assert code == 2
    _one_line(err)
    assert "following it would reach the network; pass allow_network=True (CLI: --allow-network)" in err
    # imports listed, not followed, without --follow-imports
    onto = load_ontology(main_ttl)
    assert onto.diagnostics.get("owl_imports_not_followed") == 1


# ---------------------------------------------------------------------- malformed ontologies
@pytest.mark.parametrize(
    "name,text,message",
    [
        ("cyc.csv", "child,parent\na,\nb,c\nc,b\n", "hierarchy cycle"),
        ("dang.obo", "format-version: 1.2\n\n[Term]\nid: X:1\nname: x\nis_a: X:9\n", "X:9"),
        ("bad.ttl", "@prefix ex: <http://x/> .\nex:a ex:b \n", "malformed Turtle"),
        ("bad.obo", "format-version: 1.2\n\n[Term]\nname: no id\n", "line"),
        ("bad.json", '{"type": "bundle", "objects": [', "malformed JSON"),
    ],
)
def test_malformed_ontologies_one_line_exit_2(tmp_path, cli, name, text, message):
    p = tmp_path / name
    p.write_text(text)
    code, out, err = cli(["ontology", "inspect", str(p)])
    assert code == 2, err
    _one_line(err)
    assert message in err


def test_unknown_loader_option_is_exit_2_not_3(tmp_path, cli):
    shutil.copy(FIX / "vehicles.csv", tmp_path / "vehicles.csv")
    (tmp_path / "records.jsonl").write_text('{"id": "a", "labels": {"gold": ["car"], "pred": ["car"]}}\n')
    cfg = tmp_path / "a.yaml"
    cfg.write_text(
        "ontology: {path: vehicles.csv, options: {nonsense: 1}}\nrecords: records.jsonl\n"
        "gates: ['hierarchy.exact_accuracy >= 1']\n"
    )
    code, out, err = cli(["audit", "-c", str(cfg), "--out", str(tmp_path / "o")])
    assert code == 2
    _one_line(err)
    assert "the table loader does not take 'nonsense'; its options: conflicts, dangling, delimiter" in err
    assert not (tmp_path / "o" / "manifest.json").exists()


@pytest.mark.parametrize("ext", ["nt", "ttl", "rdf", "jsonld", "json", "obo", "nq"])
def test_parse_errors_never_print_the_file_back(tmp_path, cli, ext):
    p = tmp_path / f"passwd.{ext}"
    p.write_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:hunter2-secret:/usr/sbin\n")
    code, out, err = cli(["ontology", "inspect", str(p)])
    assert code == 2
    _one_line(err)
    for fragment in ("root:x", "/bin/bash", "hunter2", "daemon:x"):
        assert fragment not in err, err


def test_attlist_default_expansion_refused(tmp_path, cli):
    ents = '<!ENTITY big "' + "x" * 4000 + '">\n<!ATTLIST rdf:Description rdfs:comment CDATA "&big;">\n'
    body = "".join(f'<rdf:Description rdf:about="http://x/n{i}"/>\n' for i in range(1000))
    p = tmp_path / "attlist.rdf"
    p.write_text(LOL.format(ents=ents, body=body))
    code, out, err = cli(["ontology", "inspect", str(p)])
    assert code == 2
    _one_line(err)
    assert "an <!ATTLIST> default value that references an entity" in err
