"""benchmarks/bench_families.py at a tiny N: every family's numbers equal its reference's on the
same generated data (the driver asserts it before it times anything; nothing here checks a
time). The transcribed references are checked on hand-worked inputs, and the comparison is
shown to catch a difference, so that the equality the driver asserts can fail."""

from __future__ import annotations

import pytest

from benchmarks import bench_families as bf


def _param(b: bf.Bench):
    # ranx compiles its numba kernels on first use (~50 s here); test_fusion_ranx.py checks the
    # same equality on more data
    return pytest.param(b, id=b.name, marks=[pytest.mark.slow] if b.requires == "ranx" else [])


@pytest.mark.parametrize("bench", [_param(b) for b in bf.BENCHES])
def test_numbers_equal_the_reference_at_tiny_n(bench, tmp_path):
    if bench.requires:
        pytest.importorskip(bench.requires, reason=f"{bench.requires} is the reference of {bench.name}")
    r = bf.run_bench(bench, 90, 1, 3, tmp_path)
    assert r["family"] == bench.name and r["n"] == 90
    assert r["ours_s"] >= 0 and r["ref_s"] >= 0


def test_the_data_is_not_trivial():
    """The generated data exercise the metrics (neither all right nor all wrong)."""
    pytest.importorskip("seqeval")
    ner = bf.ours_ner(bf.make_ner(200, 3))
    assert 0.3 < ner["micro"][2] < 0.95 and set(ner["per_type"]) == set(bf.TYPES)
    nug = bf.ref_nuggets(bf.make_nuggets(200, 3))
    assert all(0 < v < 1 for v in nug.values())


def test_tacred_transcription_on_a_hand_worked_case(tmp_path):
    """Key / prediction: (r1, r1) correct, (no, r2) guessed only, (r2, no) gold only, (r1, r2)
    wrong: correct 1, guessed 3, gold 3: P = R = F1 = 1/3."""
    import json

    gold = [
        {
            "id": f"t{i}",
            "relation": g,
            "token": ["a", "b"],
            "subj_start": 0,
            "subj_end": 0,
            "obj_start": 1,
            "obj_end": 1,
        }
        for i, g in enumerate(["r1", "no_relation", "r2", "r1"])
    ]
    (tmp_path / "g.json").write_text(json.dumps(gold))
    (tmp_path / "p.json").write_text(json.dumps({"t0": "r1", "t1": "r2", "t2": "no_relation", "t3": "r2"}))
    d = {"gold": tmp_path / "g.json", "pred": tmp_path / "p.json"}
    assert bf.ref_tacred(d)["micro"] == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    assert bf.ours_tacred(d)["micro"] == pytest.approx((1 / 3, 1 / 3, 1 / 3))


def test_nuggets_transcription_on_a_hand_worked_answer():
    """Vital support, vital partial, okay not: A = 1.5/3, A_strict = 1/3, V = 0.75,
    V_strict = 0.5, W = (1 + 0.5) / 2.5, W_strict = 1 / 2.5."""
    items = [
        {"text": "a", "importance": "vital", "assignment": "support"},
        {"text": "b", "importance": "vital", "assignment": "partial_support"},
        {"text": "c", "importance": "okay", "assignment": "not_support"},
    ]
    d = {"records": [{"id": "x", "nuggets": {"topic_id": "t", "items": items}}]}
    want = {
        "all": 0.5,
        "all_strict": 1 / 3,
        "vital": 0.75,
        "vital_strict": 0.5,
        "weighted": 0.6,
        "weighted_strict": 0.4,
    }
    assert bf.ref_nuggets(d) == pytest.approx(want)
    assert bf.ours_nuggets(d) == pytest.approx(want)


def test_the_comparison_catches_a_difference():
    bf.same({"a": (0.5, None)}, {"a": (0.5, float("nan"))})
    with pytest.raises(AssertionError, match="ours 0.5, reference 0.5001"):
        bf.same({"a": 0.5}, {"a": 0.5001})
    with pytest.raises(AssertionError, match="keys differ"):
        bf.same({"a": 1}, {"b": 1})
    with pytest.raises(AssertionError, match="2 values for 3"):
        bf.same([1, 2], [1, 2, 3])
    with pytest.raises(AssertionError, match="where the reference has nan"):
        bf.same(0.0, float("nan"))
