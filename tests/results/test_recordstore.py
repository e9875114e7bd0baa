"""Per-record results stored without a Python object per record (:mod:`kg_rageval.results.recordstore`):
record ids as one unicode array, unscored entries as columns, conformance's problems pickled
into one buffer — read back exactly as the objects they replace, and an audit whose results are
stored so equals, report for report and row for row, the one that keeps the objects."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from audit_stream_helpers import _audit, _files, _report

from kg_rageval.results import columns as columns_mod
from kg_rageval.results import concatenation as concatenation_mod
from kg_rageval.results import evaluation as evaluation_mod
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.columns import CodedColumn, _object_column
from kg_rageval.results.concatenation import Concatenation
from kg_rageval.results.evaluation import Evaluation, concat_evaluations
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric
from kg_rageval.results.recordstore import PackedValues, UnscoredRecords, text_column


class PR(Family):
    name, version, stats = "toy_pr", "1", ("tp", "n_pred")

    def finalize(self, s):
        return {"tp": Metric("tp", s["tp"])}


# ------------------------------------------------------------------ text columns
def test_text_column_holds_texts_in_one_buffer_and_reads_them_back():
    ids = ["q1", "q10", "é-ü", "", "q1"]
    col = text_column(ids)
    assert col.dtype == np.dtype("U3") and col.nbytes == 5 * 12
    assert col.tolist() == ids and {type(v) for v in col.tolist()} == {str}
    assert text_column(np.asarray(ids, dtype=object)).tolist() == ids
    assert text_column([]).shape == (0,)


@pytest.mark.parametrize(
    "values",
    [
        ["a", 1],  # not all texts
        ["a", None],
        ["ab\0", "cd"],  # a trailing NUL: a fixed-width array would drop it
        ["x" * 400] + ["y"] * 10,  # one long text: 1,600 bytes a row against ~57 as objects
    ],
)
def test_text_column_declines_what_it_cannot_hold_exactly_or_compactly(values):
    assert text_column(values) is None


def test_record_ids_of_texts_are_a_unicode_array_others_stay_objects():
    ev = Evaluation(PR(), ["q2", "q1"], {"tp": [1, 0], "n_pred": [1, 1]})
    assert ev.record_ids.dtype.kind == "U" and ev.record_ids.tolist() == ["q2", "q1"]
    assert ev.n_records == 2 and ev.per_record_stats()[0].tolist() == ["q1", "q2"]
    ints = Evaluation(PR(), [3, 4], {"tp": [1, 0], "n_pred": [1, 1]})
    assert ints.record_ids.dtype == object and ints.record_ids.tolist() == [3, 4]
    assert ints.to_dict()["rows"][0]["record_id"] == 3  # an int id stays an int in the JSON
    # mixed partitions: texts and ints concatenate to objects, in order, with their types
    both = concat_evaluations([ev, ints])
    assert both.record_ids.dtype == object and both.record_ids.tolist() == ["q2", "q1", 3, 4]


def test_joined_chunks_with_one_long_id_fall_back_to_objects():
    """Each chunk's ids fit a unicode array, but joined, one chunk's long ids would widen every
    row: the joined ids (and unscored ids) are objects again, the same values."""
    long = [f"{'x' * 49}{i}" for i in range(3)]  # 50 characters: 200 bytes a row, ~107 as objects
    parts = [
        Evaluation(
            PR(),
            ids,
            {"tp": [1] * len(ids), "n_pred": [1] * len(ids)},
            unscored=[{"record_id": i, "reason": "r"} for i in ids],
        )
        for ids in ([f"r{i}" for i in range(200)], long)
    ]
    assert [p.record_ids.dtype.kind for p in parts] == ["U", "U"]
    cat = Concatenation()
    for p in parts:
        cat.add(p)
    got = cat.result()
    want = [f"r{i}" for i in range(200)] + long
    assert got.record_ids.dtype == object and got.record_ids.tolist() == want
    assert [u["record_id"] for u in got.unscored] == want
    assert got.unscored._cols["record_id"].dtype == object
    assert concat_evaluations(parts).record_ids.dtype == object


def test_a_bad_stat_names_the_record_as_text():
    with pytest.raises(ValueError, match=r"\(record 'q2'\)"):
        Evaluation(PR(), ["q1", "q2"], {"tp": [1, float("nan")], "n_pred": [1, 1]})


def test_streamed_record_ids_join_as_one_unicode_array():
    parts = [
        Evaluation(
            PR(),
            [f"r{i}" for i in range(k, k + 3)],
            {"tp": [1, 0, 1], "n_pred": [1, 1, 1]},
            unscored=[{"record_id": f"u{k}", "reason": "no answer"}],
        )
        for k in (0, 3, 6)
    ]
    cat = Concatenation()
    for p in parts:
        cat.add(p)
    got = cat.result()
    assert got.record_ids.dtype == np.dtype("U2") and got.record_ids.tolist() == [f"r{i}" for i in range(9)]
    assert isinstance(got.unscored, UnscoredRecords)
    assert got.unscored == [{"record_id": f"u{k}", "reason": "no answer"} for k in (0, 3, 6)]
    assert got.to_dict(rows=True) == concat_evaluations(parts).to_dict(rows=True)


# ------------------------------------------------------------------ unscored entries
ENTRIES = [
    {"record_id": "a", "reason": "no answer", "code": "no_section"},
    {"record_id": "b", "code": "missing_prediction", "reason": "no predictions"},  # another key order
    {"record_id": 7, "reason": "no answer", "code": "no_section"},
    {"record_id": "d", "reason": "missing in repeat", "code": "missing_prediction", "repeat": 1},
    {"record_id": "e", "reason": "missing in repeat", "code": "missing_prediction", "repeat": True},
    {"record_id": "f", "reason": "no system section"},
    {"record_id": "g", "reason": None, "code": "x", "repeat": 2.5},
]


def test_unscored_entries_read_back_as_the_dicts_given():
    u = UnscoredRecords(ENTRIES)
    assert u == ENTRIES and list(u) == ENTRIES and len(u) == 7
    assert [list(e) for e in u] == [list(e) for e in ENTRIES]  # key order kept per entry
    assert [type(e.get("repeat")) for e in u] == [type(e.get("repeat")) for e in ENTRIES]  # 1, True, 2.5
    assert type(u[0]["record_id"]) is str and u[2]["record_id"] == 7 and u[-1] == ENTRIES[-1]
    assert u[1:3] == ENTRIES[1:3]
    with pytest.raises(IndexError):
        u[7]
    u[0]["reason"] = "changed"  # a read is a fresh dict
    assert u[0]["reason"] == "no answer"
    assert u.counts("reason") == {
        "no answer": 2,
        "no predictions": 1,
        "missing in repeat": 2,
        "no system section": 1,
        None: 1,
    }
    # 1 and True are one key of a dict, as counting the dicts would make them
    assert u.counts("repeat") == {1: 2, 2.5: 1} and u.all_have("reason") and not u.all_have("code")
    assert pickle.loads(pickle.dumps(u)) == ENTRIES
    assert UnscoredRecords([]) == [] and not UnscoredRecords([])


def test_unscored_entries_change_as_a_list_does():
    u, ref = UnscoredRecords(ENTRIES), [dict(e) for e in ENTRIES]
    for op in (
        lambda x: x.append({"record_id": "h", "reason": "late"}),
        lambda x: x.extend([{"record_id": "i", "reason": "later"}]),
        lambda x: x.insert(1, {"reason": "first", "record_id": "j"}),
        lambda x: x.__delitem__(2),
        lambda x: x.__setitem__(0, {"record_id": "k", "reason": "set"}),
        lambda x: x.sort(key=lambda e: str(e.get("repeat", 0))),
    ):
        op(u)
        op(ref)
        assert u == ref
    assert u.tolist() == ref


def test_unscored_joined_equals_the_concatenated_lists():
    parts = [ENTRIES[:2], ENTRIES[2:3], [], ENTRIES[3:]]
    joined = UnscoredRecords.joined([UnscoredRecords(p) for p in parts])
    assert joined == ENTRIES
    ids = [[{"record_id": f"r{i}", "reason": "no answer"} for i in range(k, k + 50)] for k in (0, 50)]
    joined = UnscoredRecords.joined([UnscoredRecords(p) for p in ids])
    assert joined == ids[0] + ids[1] and joined._cols["record_id"].dtype.kind == "U"
    assert (
        joined.nbytes == 100 * 12 + 100 + 100
    )  # ids "U3" (4 bytes a character), key order and reason 1 byte


def test_evaluation_unscored_counts_and_json_are_the_lists():
    ev = build_evaluation(PR(), [{"record_id": "a", "tp": 1, "n_pred": 1}], unscored=ENTRIES[:3])
    assert ev.unscored_counts == {"no answer": 2, "no predictions": 1}
    d = ev.to_dict(rows=True)
    assert d["unscored_records"] == ENTRIES[:3] and d["unscored"] == {"no answer": 2, "no predictions": 1}
    assert json.loads(json.dumps(d, allow_nan=False))["unscored_records"] == ENTRIES[:3]


# ------------------------------------------------------------------ packed values
def test_packed_values_read_as_the_object_array():
    vals = [{"failures": [{"kind": "type", "path": "a"}]}, None, {"confusions": [], "t": (1, 2.0, True)}]
    p = PackedValues.of(vals)
    assert len(p) == 3 and p.tolist() == vals and p[2] == vals[2] and p[-1] == vals[2]
    arr = p[np.asarray([2, 0, 2])]
    assert arr.dtype == object and arr.tolist() == [vals[2], vals[0], vals[2]] and arr[0] is arr[2]
    with pytest.raises(IndexError):
        p[3]
    joined = PackedValues.joined([p, PackedValues.of(["x"])])
    assert joined.tolist() == vals + ["x"]
    col = CodedColumn(np.asarray([0, 1, 0, 2], np.uint8), p, fresh=True)
    rows = col.array()
    assert (
        rows.tolist() == [vals[0], None, vals[0], vals[2]] and rows[0] is not rows[2]
    )  # each row its own dict
    assert col[np.asarray([True, False, False, True])].tolist() == [vals[0], vals[2]]
    assert pickle.loads(pickle.dumps(col)).tolist() == col.tolist()


def test_streamed_packed_columns_join_without_unpacking():
    vals = [PackedValues.of([{"a": i}, {"b": [i]}]) for i in range(3)]
    parts = [
        Evaluation(
            PR(),
            [f"r{k}{j}" for j in range(2)],
            {"tp": [1, 0], "n_pred": [1, 1]},
            details={"problems": CodedColumn(np.asarray([1, 0], np.uint8), v, fresh=True)},
        )
        for k, v in enumerate(vals)
    ]
    cat = Concatenation()
    for p in parts:
        cat.add(p)
    got = cat.result()
    raw = got.details.raw("problems")
    assert isinstance(raw, CodedColumn) and isinstance(raw.values, PackedValues) and len(raw.values) == 6
    assert got.details["problems"].tolist() == [
        {"b": [0]},
        {"a": 0},
        {"b": [1]},
        {"a": 1},
        {"b": [2]},
        {"a": 2},
    ]
    assert got.to_dict(rows=True) == concat_evaluations(parts).to_dict(rows=True)


# ------------------------------------------------------------------ the audit, objects kept or not
class _Plain(list):
    """Today's unscored storage: a list of the dicts."""

    @classmethod
    def joined(cls, parts):
        return cls(u for p in parts for u in p)

    def all_have(self, field):
        return False


class _Objects:
    """Today's problems storage: the dicts in an object array."""

    of = staticmethod(_object_column)


def _results(res) -> dict[str, str]:
    return {
        f"{fam}.{m}": json.dumps(ev.to_dict(rows=True), sort_keys=True, allow_nan=False)
        for fam, run in res.families.items()
        for m, ev in (run.result or {}).items()
    }


@pytest.fixture(scope="module")
def every_family(generated_attack):
    out, onto_path = generated_attack
    return out, {
        "name": "recordstore",
        "ontology": str(onto_path),
        "records": "records.jsonl",
        "corpus": "corpus.jsonl",
        "spec": "spec.yaml",
        "families": {
            f: {} for f in ("hierarchy", "linking", "retrieval", "conformance", "generation", "provenance")
        },
        "gates": [
            "hierarchy.hierarchical_f1 >= 0.8",
            "ci_low(generation.faithfulness) >= 0.8",
            "conformance.schema_validity >= 0.99",
            "provenance.citation_completeness >= 0.9",
        ],
        "missing_runs": {"budget": 0.05},
        "bootstrap": {"n_resamples": 50, "seed": 0},
    }


@pytest.mark.slow
@pytest.mark.parametrize("spill_rows", [None, 500])
def test_audit_with_compact_results_equals_the_one_with_objects(
    every_family, tmp_path, monkeypatch, spill_rows
):
    """Every report (``report.json`` timings aside, ``report.md``, ``prov.ttl``) and every
    evaluation's ``to_dict(rows=True)`` of a streamed six-family audit are the same whether the
    record ids, unscored entries and problems are stored compactly or as Python objects (with
    the result columns in memory, and spilled to a temporary file past 500 rows)."""
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.families.conformance import metrics as conf

    out, mapping = every_family
    if spill_rows is not None:
        mapping = {**mapping, "spill_rows": spill_rows}
    compact = _audit(config_from_mapping(mapping, base_dir=out), 300, tmp_path / "compact")
    assert compact.chunk_size == 300
    ev = compact.families["generation"].result["unseen_concepts"]
    assert ev.record_ids.dtype.kind == "U" and isinstance(ev.unscored, UnscoredRecords)
    problems = compact.families["conformance"].result.single.details.raw("problems")
    assert isinstance(problems.values, PackedValues)
    assert compact.families["conformance"].result.single.details.is_spilled("problems") == (
        spill_rows is not None
    )
    with monkeypatch.context() as m:
        m.setattr(columns_mod, "text_column", lambda values: None)
        for mod in (evaluation_mod, concatenation_mod):
            m.setattr(mod, "UnscoredRecords", _Plain)
        m.setattr(conf, "PackedValues", _Objects)
        objects = _audit(config_from_mapping(mapping, base_dir=out), 300, tmp_path / "objects")
        ev = objects.families["generation"].result["unseen_concepts"]
        assert ev.record_ids.dtype == object and type(ev.unscored) is _Plain
        want = _results(objects)
    assert _results(compact) == want
    assert _report(tmp_path / "compact") == _report(tmp_path / "objects")
    assert _files(tmp_path / "compact") == _files(tmp_path / "objects")
    assert (tmp_path / "compact" / "prov.ttl").read_bytes() == (
        tmp_path / "objects" / "prov.ttl"
    ).read_bytes()
