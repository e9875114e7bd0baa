"""The chunking family: hand-worked traceability, metadata preservation (ancestry as an
ontology path), structure cut rate, exact roll-ups per class and branch, unscored codes and
one-line input errors.

Figures on fixtures/chunking/docs.jsonl, worked by hand (chunk by chunk, see the file):
man-1 (3 chunks): traceable 2 (d1#2 names d9), parent_section 2, parent_doc 3, ancestry 2
(d1#2's [DOID:162, DOID:3910] skips DOID:1324..3908), all three 2; table [100,300) split at
its own boundary 200: not cut; list [400,500) crossed by 450: cut.
man-2 (2 chunks): traceable 1 (d2#1 has no source), parent_section 2, parent_doc 1 (d2#1
names d1), ancestry 2 (a leading virtual root id is skipped), all three 1; section [0,100)
held whole by d2#0 despite d2#1 starting at 80: not cut.
scan-1 (2 chunks, no category): traceable 1 (d3#0's section is empty), parent 2 / 2, no
ancestry denominator; table [0,50) crossed by 30: cut.
scan-2: no chunks (missing_prediction); other (handwriting): no section (no_section)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.families.chunking import is_cut, score_chunking, traceable
from kg_rageval.ontology import load_ontology
from kg_rageval.records import read_records
from kg_rageval.records.chunking import Chunk, Source, Unit

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "fixtures" / "chunking" / "docs.jsonl"
ONTO = ROOT / "ontologies" / "doid-cancer-slim.obo"


@pytest.fixture(scope="module")
def onto():
    return load_ontology(ONTO)


def _chunk(start, end, **kw):
    return Chunk(kw.get("id", f"c{start}"), None, start, end, kw.get("source"), None, None, None)


def test_structure_cut_definition_by_hand():
    chunks = [_chunk(0, 200), _chunk(200, 450), _chunk(450, 600)]
    assert not is_cut(Unit("table", 100, 300, (200,)), chunks)  # split at its own row boundary
    assert is_cut(Unit("table", 100, 300), chunks)  # the same split, no declared boundary
    assert is_cut(Unit("list", 400, 500), chunks)  # 450 inside
    assert not is_cut(Unit("list", 210, 440), chunks)  # inside one chunk
    assert not is_cut(Unit("list", 200, 450), chunks)  # boundaries at its ends: s < b < e fails
    # overlap: one chunk holding the unit whole is enough, whatever else starts inside it
    assert not is_cut(Unit("numbered_section", 0, 100), [_chunk(0, 120), _chunk(80, 200)])
    # a unit no chunk touches is lost, not cut
    assert not is_cut(Unit("table", 700, 800), chunks)


def test_traceable_by_hand():
    ok = [Source("d", 1, None), Source("d", "iv", None), Source("d", 0, None), Source("d", None, "2.1")]
    bad = [Source("x", 1, None), Source(None, 1, None), Source("d", None, " "), Source("d", "", None)]
    for s in ok:
        assert traceable(_chunk(0, 1, source=s), "d"), s
    for s in bad + [None]:
        assert not traceable(_chunk(0, 1, source=s), "d"), s


def test_fixture_totals_with_ontology(onto):
    ev = score_chunking(onto, read_records(DOCS))
    m = ev.metrics()
    assert (m["traceability"].numerator, m["traceability"].denominator) == (4, 7)
    assert m["parent_section_rate"].value == pytest.approx(6 / 7)
    assert m["parent_doc_rate"].value == pytest.approx(6 / 7)
    assert (m["ancestry_rate"].numerator, m["ancestry_rate"].denominator) == (4, 5)
    assert (m["metadata_preservation"].numerator, m["metadata_preservation"].denominator) == (3, 5)
    assert (m["structure_cut_rate"].numerator, m["structure_cut_rate"].denominator) == (2, 4)
    assert m["coherence"].value is None and "coherence: true" in m["coherence"].missing
    # a gate's min_rows counts documents, not chunks
    assert m["traceability"].rows == 3 and m["metadata_preservation"].rows == 2
    assert m["structure_cut_rate"].rows == 3
    codes = {u["record_id"]: u["code"] for u in ev.unscored}
    assert codes == {"scan-2": "missing_prediction", "other": "no_section"}


def test_without_ontology_only_the_shape_of_ancestry(onto):
    """Without -O d1#2's [DOID:162, DOID:3910] ends at the category and passes; with it, it is
    not a path of the ontology."""
    m = score_chunking(None, read_records(DOCS)).metrics()
    assert (m["ancestry_rate"].numerator, m["ancestry_rate"].denominator) == (5, 5)
    assert m["metadata_preservation"].value == pytest.approx(3 / 5)  # d1#2 lacks parent_section anyway


def test_per_class_and_branch_rollups(onto):
    ev = score_chunking(onto, read_records(DOCS))
    by = {k: v["metrics"] for k, v in ev.breakdown("slice:doc_class").items()}
    assert by["manual"]["traceability"].value == pytest.approx(3 / 5)
    assert by["scan"]["traceability"].value == pytest.approx(1 / 2)
    assert by["manual"]["structure_cut_rate"].value == pytest.approx(1 / 3)
    assert by["scan"]["structure_cut_rate"].value == 1.0
    assert by["scan"]["ancestry_rate"].value is None  # no category: missing, never 0 or 1
    nodes = {k: v["metrics"] for k, v in ev.rollup(onto).items()}
    assert nodes["DOID:162"]["traceability"].value == pytest.approx(3 / 5)  # man-1 + man-2
    assert nodes["DOID:1324"]["ancestry_rate"].value == pytest.approx(2 / 3)  # man-1 only
    assert nodes["DOID:1612"]["metadata_preservation"].value == pytest.approx(1 / 2)


def test_dag_path_any_root_path_counts(onto):
    node = next(i for i in onto.ids if len(onto.parents(i)) > 1)

    def path_to(n):
        out = [n]
        while onto.parents(out[0]) and onto.parents(out[0])[0] != onto.root_id:
            out.insert(0, onto.parents(out[0])[0])
        return out

    paths = []
    for p in onto.parents(node):
        paths.append(path_to(p) + [node])
    rec = {
        "id": "dag",
        "chunking": {
            "doc_id": "d",
            "category": node,
            "chunks": [
                {"id": f"c{i}", "start": i, "end": i + 1, "ancestry": a}
                for i, a in enumerate([*paths, [node], paths[0][::-1]])
            ],
        },
    }
    m = score_chunking(onto, [rec]).metrics()
    assert (m["ancestry_rate"].numerator, m["ancestry_rate"].denominator) == (len(paths), len(paths) + 2)


def _write(tmp_path, recs):
    p = tmp_path / "c.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return p


GOOD = {"id": "a", "chunking": {"doc_id": "d", "chunks": [{"id": "c", "start": 0, "end": 5}]}}


@pytest.mark.parametrize(
    "section,field,text",
    [
        ({"doc_id": "d", "chunks": [{"id": "c", "start": 5, "end": 5}]}, "chunking.chunks[0].end", "greater"),
        (
            {"doc_id": "d", "chunks": [{"id": "c", "start": "0", "end": 5}]},
            "chunking.chunks[0].start",
            "integer",
        ),
        ({"chunks": []}, "chunking.doc_id", "required"),
        (
            {"doc_id": "d", "structure": [{"kind": "figure", "start": 0, "end": 1}]},
            "chunking.structure[0].kind",
            "figure",
        ),
        (
            {"doc_id": "d", "structure": [{"kind": "table", "start": 0, "end": 9, "boundaries": [9]}]},
            "chunking.structure[0].boundaries[0]",
            "strictly inside",
        ),
        (
            {"doc_id": "d", "chunks": [{"id": "c", "start": 0, "end": 1, "page": 1}]},
            "chunking.chunks[0].page",
            "unknown",
        ),
        (
            {"doc_id": "d", "chunks": [{"id": "c", "start": 0, "end": 1, "source": {"page": True}}]},
            "chunking.chunks[0].source.page",
            "integer",
        ),
        ({"doc_id": "d", "category": "DOID:nope"}, "chunking.category", "not an id of the ontology"),
    ],
)
def test_bad_input_one_line_naming_file_line_field(tmp_path, onto, section, field, text):
    p = _write(tmp_path, [GOOD, {"id": "b", "chunking": section}])
    with pytest.raises(InputError) as e:
        score_chunking(onto, read_records(p))
    msg = str(e.value)
    assert "\n" not in msg and str(p) in msg and "line 2" in msg and f"field {field}" in msg and text in msg


def test_unknown_category_is_only_checked_with_an_ontology():
    rec = {
        "id": "a",
        "chunking": {
            "doc_id": "d",
            "category": "X:1",
            "chunks": [{"id": "c", "start": 0, "end": 1, "ancestry": ["X:0", "X:1"]}],
        },
    }
    m = score_chunking(None, [rec]).metrics()
    assert m["ancestry_rate"].value == 1.0


def test_the_records_own_gold_node_wins_over_the_category(onto):
    """The one gold-node rule (docs/records.md): the category is only the family's fallback."""
    sec = {"doc_id": "d", "category": "DOID:1612", "chunks": [{"id": "c", "start": 0, "end": 1}]}
    ev = score_chunking(
        onto, [{"id": "a", "gold_node": "DOID:3910", "chunking": sec}, {"id": "b", "chunking": sec}]
    )
    assert ev.keys["gold_node"].tolist() == ["DOID:3910", "DOID:1612"]
