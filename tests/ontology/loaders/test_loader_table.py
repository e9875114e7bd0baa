"""Edge tables (CSV/TSV): header detection, ids with dots/colons/slashes, labels, errors."""

from __future__ import annotations

import pytest

from kg_rageval.base.errors import InputError, OntologyError
from kg_rageval.ontology import VIRTUAL_ROOT_ID, load_ontology
from kg_rageval.ontology.loaders.table import load_table


@pytest.fixture(scope="module")
def onto_dir(fixtures_dir):
    return fixtures_dir / "ontology"


def test_csv_with_header_labels_and_odd_ids(onto_dir):
    o = load_ontology(onto_dir / "edges.csv")
    assert o.root_id == "ICD10:C30-C39" and not o.virtual_root
    assert o.parents("ICD10:C34.1") == ["ICD10:C34", "http://x.org/a/b"]
    assert o.label("http://x.org/a/b") == "Slash, comma"  # quoted comma
    assert o.label("ICD10:C34") == "Lung"
    assert "child" not in o and o.diagnostics == {}
    assert o.depth("ICD10:C34.1", kind="max") == 3 and o.depth("ICD10:C34.1") == 2


def test_tsv_without_header_and_comments(onto_dir):
    o = load_ontology(onto_dir / "edges.tsv")
    assert list(o.ids) == ["a", "b", "c"]
    assert o.parents("c") == ["a", "b"] and o.label("c") == "cee"
    assert o.diagnostics == {"parents_declared_from_edges": 1}  # 'a' only appears as a parent
    with pytest.raises(OntologyError, match="2 edge\\(s\\) reference undeclared concepts: 'a' \\(line 2\\)"):
        load_ontology(onto_dir / "edges.tsv", dangling="error")


def test_header_names_used_as_ids_are_data(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("id,parent\nparent,root\n")
    o = load_table(f)
    assert sorted(o.ids) == ["id", "parent", "root"] and o.ancestors("id") == ["root", "parent"]
    assert VIRTUAL_ROOT_ID not in o


def test_bad_rows(onto_dir, tmp_path):
    with pytest.raises(InputError, match=r"bad_columns.csv, line 2: expected 2 or 3 columns"):
        load_ontology(onto_dir / "bad_columns.csv")
    f = tmp_path / "e.csv"
    f.write_text("a,\n,b\n")
    with pytest.raises(InputError, match="line 2, column 1: empty child id"):
        load_table(f)
    f.write_text("child,parent\n")
    with pytest.raises(OntologyError, match="empty"):
        load_table(f)
