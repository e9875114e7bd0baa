"""The column path of the edge-table loader equals the row path (today's reference).

Every table is loaded twice — ``load_table`` (column path: C tokenizer, factorised ids, bulk
builder) and ``load_table_rows`` (one row at a time) — and the compiled ontologies must be
identical: ids in the same order, labels, edges, closure, diagnostics, warnings and content
hash; or both must raise the same error (file and line named). Once with pandas as the
reader and once with the stdlib ``csv`` reader.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from kg_rageval.base.errors import KgRagevalError
from kg_rageval.ontology.builder import OntologyBuilder
from kg_rageval.ontology.loaders import table
from kg_rageval.ontology.loaders.table import load_table, load_table_rows


@pytest.fixture(params=["pandas", "stdlib"])
def reader(request, monkeypatch):
    if request.param == "pandas":
        pytest.importorskip("pandas")
        monkeypatch.setattr(table, "_PANDAS_MIN_BYTES", 0)  # pandas for the tiny tables too
    else:
        monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    return request.param


def test_small_table_is_read_without_pandas(tmp_path, monkeypatch):
    """Below ``_PANDAS_MIN_BYTES`` the column path uses the stdlib reader (no pandas import,
    a tiny command stays fast); at or above it, pandas (when installed)."""
    small = tmp_path / "small.tsv"
    small.write_text("child\tparent\na\t\nb\ta\n")
    assert table._PANDAS_MIN_BYTES == 1 << 20
    assert table._pandas(small) is None
    monkeypatch.setattr(table, "_PANDAS_MIN_BYTES", small.stat().st_size)
    pd = pytest.importorskip("pandas")
    assert table._pandas(small) is pd


def _outcome(fn, path, **kw):
    try:
        o = fn(path, **kw)
    except KgRagevalError as exc:
        return ("error", type(exc).__name__, str(exc))
    return (
        "ok",
        o.content_hash,
        o.ids,
        o.labels,
        o.parent_ptr.tolist(),
        o.parent_idx.tolist(),
        o.anc_idx.tolist(),
        o.depth_min.tolist(),
        o.virtual_root,
        o.diagnostics,
        o.warnings,
    )


def _same(path, **kw):
    fast, rows = _outcome(load_table, path, **kw), _outcome(load_table_rows, path, **kw)
    assert fast == rows
    return fast


TABLES = {
    "plain.tsv": "child\tparent\tlabel\nb\ta\tBee\nc\ta\tSee\nc\tb\t\nd\tc\tDee\n",
    "no_header.csv": "b,a\nc,b,cee\n",
    "comments_blanks.csv": "# made by hand, v1\n\nb,a,Bee\n   ,  \n  # indented comment\nc , b , cee \nx\n",
    "header_is_data.csv": "id,parent\nparent,root\n",
    "header_forced.csv": "x,y\nb,a\n",
    "self_loop_dupes.csv": "b,a\nb,a\nc,c\nc,b\n",
    "roots.csv": "a,\nb,\nc,a\nd,b\n",
    "parent_first.csv": "c,b\nb,a\nd,a,Dee\nb,,Bee\n",
    "quoted.csv": 'child,parent,label\n"a,1",r,"Comma, inside"\n"b""q",a,x\n',
    "four_columns.csv": "b,a\nc,b,cee,extra\n",
    "empty_child.csv": "a,\n,b\n",
    "conflict.csv": "b,a,One\nb,a,Two\n",
    "lone_delimiter.tsv": 'b\ta\n"c\td"\n',
    "control.csv": "b,a\nc\x01,b\n",
    "bidi.csv": "b,a\nc\u202e,b\n",
    "bom.csv": "\ufeffchild,parent\nb,a\n",
    "cycle.csv": "a,b\nb,c\nc,a\nd,\n",
    "only_header.csv": "child,parent\n",
    "empty.csv": "",
    "hash_in_id.csv": "http://x.org/o#b,http://x.org/o#a\n#c,a\n",
    "crlf.csv": "b,a,Bee\r\nc,b\r\n",
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_column_path_equals_row_path(name, tmp_path, reader):
    f = tmp_path / name
    f.write_bytes(TABLES[name].encode("utf-8"))
    _same(f, header=True) if name == "header_forced.csv" else _same(f)
    for kw in ({"dangling": "error"}, {"dangling": "drop"}, {"conflicts": "keep-first"}):
        _same(f, **kw)


def test_real_values_of_a_small_table(tmp_path, reader):
    f = tmp_path / "t.csv"
    f.write_text(TABLES["parent_first.csv"])
    o = load_table(f)
    assert list(o.ids) == ["a", "b", "d", "c"] and o.label("b") == "Bee" and o.label("d") == "Dee"
    assert o.parents("c") == ["b"] and o.diagnostics == {"parents_declared_from_edges": 1}


def test_fixtures(fixtures_dir, reader):
    for f in sorted((fixtures_dir / "ontology").glob("*.?sv")) + [
        fixtures_dir / "retrieval" / "attack-mini.tsv"
    ]:
        _same(f)


def test_synthetic_dag(tmp_path, reader):
    from benchmarks.synthetic import write_edge_table

    f = tmp_path / "dag.tsv"
    write_edge_table(str(f), 3000)
    out = _same(f)
    assert out[0] == "ok" and len(out[2]) == 3000


def test_lone_cell_with_the_delimiter_is_an_input_error(tmp_path):
    f = tmp_path / "t.tsv"
    f.write_text('b\ta\n"c\td"\n')
    with pytest.raises(KgRagevalError, match=r"t.tsv, line 2: expected 2 or 3 columns .* found 1 holding"):
        load_table(f)


def test_bulk_builder_checks():
    b = OntologyBuilder("m")
    pos = b.add_nodes_bulk(["a", "b", "c"], ["A", None, ""])
    assert pos.tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="already declared"):
        b.add_nodes_bulk(["d", "a"])
    with pytest.raises(ValueError, match="distinct"):
        OntologyBuilder().add_nodes_bulk(["x", "x"])
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        b.add_edges_bulk(np.array([1]), np.array([3]))
    b.add_edges_bulk(np.array([1, 2, 2]), np.array([0, 1, 2]))
    b.add_edge("c", "a")
    o = b.build()
    assert o.parents("c") == ["a", "b"] and o.label("a") == "A" and o.label("b") is None
    assert o.diagnostics == {"self_loops_dropped": 1} and b.n_edges == 4
    with pytest.raises(KgRagevalError, match="control character"):
        OntologyBuilder("m").add_nodes_bulk(["ok", "bad\x00"])


def test_with_a_triples_table(fixtures_dir, reader):
    d = next(p.parent for p in fixtures_dir.rglob("kg_triples.csv"))
    out = _same(d / "kg_catalogue.csv", triples=str(d / "kg_triples.csv"))
    assert out[0] == "ok"
