"""The memory-saving storage behind ``score linking`` on large files (docs/performance.md,
"Streaming records through the families"): streamed columns joined once from their pieces, one
object per distinct value in the linking columns, the hierarchy tables kept once. Each gives the
values (and dtypes, and output text) of the straightforward storage."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from kg_rageval.results.concatenation import _Column
from kg_rageval.results.evaluation import _concat_column

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


def _joined(pieces: list[np.ndarray]) -> np.ndarray:
    col = _Column(pieces[0])
    for p in pieces[1:]:
        col.append(p)
    return col.array()


def test_column_pieces_fold_like_pairwise_merges():
    """Numeric pieces promote; from the first object piece on the column is objects, the numeric
    prefix converted after its promotion (ints that met a float come out as floats), later
    numeric pieces as their own Python type."""
    cases = [
        [np.array([True, False]), np.array([3], np.int8)],
        [np.array([1, 2]), np.array([0.5])],
        [np.array([True]), np.array([2.5, 1.0])],
        [np.array([1, 2]), np.array([0.5]), np.array(["x", None], object), np.array([7])],
        [np.array(["a"], object), np.array([True, False])],
    ]
    for pieces in cases:
        got, want = _joined(pieces), _concat_column(pieces)
        assert got.dtype == want.dtype
        assert [(type(v), v) for v in got.tolist()] == [(type(v), v) for v in want.tolist()]
    mixed = _joined(cases[3])
    assert [type(v) for v in mixed.tolist()] == [float, float, float, str, type(None), int]


def test_column_copies_views_and_holds_no_spare():
    big = np.arange(1000)
    col = _Column(big[:3])
    col.append(np.arange(5))
    assert col.pieces[0].base is None  # a view would keep all 1,000 values alive
    assert col.size == 8
    out = col.array()
    assert out.tolist() == [0, 1, 2, 0, 1, 2, 3, 4] and out.dtype == np.int64
    assert col.pieces == [] and out.size == 8


def test_shared_values_keep_type_and_sign():
    from kg_rageval.families.linking.evaluate import _shared

    texts = [json.loads('"split-a"'), json.loads('"split-a"'), None, json.loads('"b"')]
    assert texts[0] is not texts[1]
    out = _shared(texts)
    assert out == texts and out[0] is out[1]
    floats = [float("0.25"), float("0.25"), None, 0.5]
    assert floats[0] is not floats[1]
    out = _shared(floats)
    assert out == floats and out[0] is out[1]
    # -0.0 equals 0.0 and 1 equals 1.0: such lists stay as they are (the output text differs)
    signed = [0.0, -0.0, 0.0]
    assert [math.copysign(1.0, v) for v in _shared(signed)] == [1.0, -1.0, 1.0]
    mixed = [1, 1.0, "1"]
    assert [type(v) for v in _shared(mixed)] == [int, float, str]


def test_linking_columns_share_objects_and_equal_the_plain_values(tmp_path):
    """Slice texts, mention types, scores and large offsets are one object per distinct value
    in a chunk's columns; the values and the JSON rows are those of the records."""
    from kg_rageval.families.linking.evaluate import score_linking
    from kg_rageval.ontology import load_ontology
    from kg_rageval.records import read_records

    o = load_ontology(FIXTURES / "linking/vehicles.tsv")
    ids = [i for i in o.ids if i != o.ids[0]][:3]
    lines = []
    for r in range(6):
        gold = [
            {"start": 1000 + 20 * j, "end": 1010 + 20 * j, "id": ids[j], "type": "vehicle"} for j in range(2)
        ]
        pred = [
            {"start": 1000 + 20 * j, "end": 1010 + 20 * j, "id": ids[(j + r) % 3], "score": 0.75}
            for j in range(2)
        ]
        pred.append({"start": 1500, "end": 1504, "id": None, "score": -0.0 if r == 5 else 0.125})
        lines.append(
            json.dumps(
                {
                    "id": f"r{r}",
                    "mentions": {"gold": gold, "pred": pred},
                    "slices": {"split": "train" if r % 2 else "test"},
                }
            )
        )
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(lines) + "\n")
    recs = read_records(path)
    ev = score_linking(o, recs)
    sl = ev.keys["slice:split"].tolist()
    assert sl == ["test"] * 3 + ["train"] * 3 + ["test"] * 3 + ["train"] * 3 + ["test"] * 3 + ["train"] * 3
    assert sl[0] is sl[6] and sl[3] is sl[9]
    mt = [v for v in ev.keys["mention_type"].tolist() if v is not None]
    assert len(mt) == 12 and all(v is mt[0] for v in mt)
    gs, ps = ev.details["gold_start"].tolist(), ev.details["pred_start"].tolist()
    assert gs[:3] == [1000, 1020, None] and ps[:3] == [1000, 1020, 1500]
    assert gs[0] is gs[3] and ps[0] is ps[3]  # one int object per distinct offset
    assert ev.details.raw("gold_start").codes.dtype == np.uint8  # stored as codes into them
    scores = score_linking(o, recs[:5]).details["pred_score"].tolist()
    assert scores[:3] == [0.75, 0.75, 0.125] and scores[0] is scores[1]
    scores = ev.details["pred_score"].tolist()  # with a -0.0: not shared, each value as read
    assert scores[:3] == [0.75, 0.75, 0.125] and math.copysign(1.0, scores[-1]) == -1.0
    rows = ev.to_dict()["rows"]
    assert json.dumps(rows[-1]["pred_score"]) == "-0.0" and rows[0]["gold_start"] == 1000


def test_closure_tables_are_kept_once():
    """The kernels' closure reuses the ontology's ancestor array and keeps the encoded keys in
    one form: the padded matrix when there is one, else the flat keys."""
    from kg_rageval.families.hierarchy import closure as closure_mod
    from kg_rageval.ontology import load_ontology

    o = load_ontology(FIXTURES / "linking/vehicles.tsv")
    cl = closure_mod.closure(o)
    assert cl.anc is o.anc_idx or np.shares_memory(cl.anc, o.anc_idx)
    assert cl.matrix is not None and cl.keys is None
    assert not hasattr(cl, "dist") and not hasattr(cl, "grand")


def test_eighth_unknown_id_keeps_its_name():
    """Opaque (unknown) predicted ids get codes -2, -3, ...; the code of "no mention on this
    side" is none of them (it was -9, so the eighth unknown id came out as ``None``)."""
    from kg_rageval.families.linking.evaluate import score_linking
    from kg_rageval.ontology import load_ontology

    o = load_ontology(FIXTURES / "linking/vehicles.tsv")
    recs = [
        {
            "id": f"r{i}",
            "mentions": {
                "gold": [{"start": 0, "end": 3, "id": o.ids[1]}],
                "pred": [{"start": 0, "end": 3, "id": f"X:{i}"}],
            },
        }
        for i in range(10)
    ]
    recs.append({"id": "r10", "mentions": {"gold": [{"start": 0, "end": 3, "id": o.ids[1]}], "pred": []}})
    ev = score_linking(o, recs)
    assert ev.keys["pred_node"].tolist() == [f"X:{i}" for i in range(10)] + [None]
    assert ev.keys["gold_node"].tolist() == [o.ids[1]] * 11
    assert ev.stats["unknown_ids"].sum() == 10 and ev.meta["unknown_ids"] == sorted(
        f"X:{i}" for i in range(10)
    )


def test_family_chunk_size_is_the_streaming_default(tmp_path, monkeypatch):
    """Without a chunk size the stream reads the family's ``Scorer.chunk_size`` records at a
    time (linking: 32,768); a given one wins; the result is the same."""
    import dataclasses

    from kg_rageval.ontology import load_ontology
    from kg_rageval.scoring import BoundScorer, get_scorer

    assert get_scorer("linking").chunk_size == 32_768
    o = load_ontology(FIXTURES / "linking/vehicles.tsv")
    path = FIXTURES / "linking/records.jsonl"
    sizes: list[int] = []
    orig = BoundScorer._call

    def call(self, records, ontology):
        sizes.append(len(records))
        return orig(self, records, ontology)

    monkeypatch.setattr(BoundScorer, "_call", call)
    sc = dataclasses.replace(get_scorer("linking"), chunk_size=2)
    n = len(path.read_text().splitlines())
    small = sc.score(o, path)
    assert sizes == [2] * (n // 2) + ([n % 2] if n % 2 else [])
    sizes.clear()
    given = sc.score(o, path, chunk_size=3)
    assert sizes == [3] * (n // 3) + ([n % 3] if n % 3 else [])
    whole = get_scorer("linking").score(o, [json.loads(line) for line in path.read_text().splitlines()])
    assert small.single.to_dict() == given.single.to_dict()
    assert small.single.metrics() == whole.single.metrics()
