"""The shared result framework (kg_rageval.results.evaluation), with values worked by hand.

The toy family is precision/recall/F1 from ``tp``, ``n_pred``, ``n_gold``. The data set ROWS
(5 rows, 4 records; record r1 has two rows):

    record  tp n_pred n_gold  slice:intent  gold_node       why
    r1       1   1      1     "lookup"      sedan           "ok"
    r1       0   1      1     "lookup"      amphibious_car  None
    r2       2   3      2     "compare"     submarine       "partial"
    r3       0   0      1     None          None            None
    r4       1   2      3     "None" (str)  spaceship (unknown id)

Totals tp=4, n_pred=7, n_gold=8: P = 4/7, R = 1/2, F1 = 2·(4/7)·(1/2)/(4/7+1/2) = 8/15.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kg_rageval.base.errors import InputError, MissingEvidence
from kg_rageval.results.bootstrap import bootstrap_weights
from kg_rageval.results.builders import build_evaluation, empty_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, harmonic, mean_of, ratio


class PR(Family):
    name = "toy_pr"
    version = "1"
    stats = ("tp", "n_pred", "n_gold")

    def finalize(self, s):
        p = ratio("precision", s["tp"], s["n_pred"], missing="no predictions")
        r = ratio("recall", s["tp"], s["n_gold"], missing="no gold items")
        return {"precision": p, "recall": r, "f1": harmonic("f1", p, r)}


class OtherFamily(PR):
    name = "other"


ROWS = [
    {
        "record_id": "r1",
        "tp": 1,
        "n_pred": 1,
        "n_gold": 1,
        "slice:intent": "lookup",
        "gold_node": "sedan",
        "why": "ok",
    },
    {
        "record_id": "r1",
        "tp": 0,
        "n_pred": 1,
        "n_gold": 1,
        "slice:intent": "lookup",
        "gold_node": "amphibious_car",
    },
    {
        "record_id": "r2",
        "tp": 2,
        "n_pred": 3,
        "n_gold": 2,
        "slice:intent": "compare",
        "gold_node": "submarine",
        "why": "partial",
    },
    {"record_id": "r3", "tp": 0, "n_pred": 0, "n_gold": 1, "slice:intent": None, "gold_node": None},
    {"record_id": "r4", "tp": 1, "n_pred": 2, "n_gold": 3, "slice:intent": "None", "gold_node": "spaceship"},
]
KEYS = ["slice:intent", "gold_node"]


def toy(rows=ROWS, keys=KEYS, details=("why",)) -> Evaluation:
    return build_evaluation(PR(), rows, keys=keys, details=details)


def values(metrics: dict[str, Metric]) -> dict[str, float | None]:
    return {k: m.value for k, m in metrics.items()}


# ---------------------------------------------------------------------- Metric / ratio / harmonic
def test_ratio_empty_denominator_is_missing_never_zero_or_one():
    m = ratio("precision", 0, 0, missing="no predictions")
    assert m.value is None and m.is_missing
    assert m.missing == "no predictions"
    assert (m.numerator, m.denominator) == (0.0, 0.0)
    with pytest.raises(MissingEvidence, match="precision: no predictions"):
        m.require()
    # a non-zero numerator over an empty denominator is still missing, not inf
    assert ratio("p", 5, 0, missing="x").value is None


def test_ratio_value_and_require():
    m = ratio("precision", 3, 4, missing="unused")
    assert m.value == 0.75 and m.require() == 0.75
    assert (m.numerator, m.denominator, m.missing) == (3.0, 4.0, None)
    assert m.to_dict() == {"name": "precision", "value": 0.75, "numerator": 3.0, "denominator": 4.0}
    assert mean_of("mrr", 1.5, 3, missing="no queries").value == 0.5
    assert mean_of("mrr", 0, 0, missing="no queries").missing == "no queries"


@pytest.mark.parametrize("num,den", [(math.nan, 1), (1, math.inf), (np.float64("nan"), 0)])
def test_ratio_rejects_non_finite(num, den):
    with pytest.raises(ValueError, match="non-finite"):
        ratio("p", num, den, missing="x")


def test_harmonic_cases():
    half, one, zero = Metric("p", 0.5), Metric("r", 1.0), Metric("x", 0.0)
    assert harmonic("f1", half, one).value == pytest.approx(2 / 3)  # 2·.5·1/1.5
    assert harmonic("f1", zero, Metric("y", 0.0)).value == 0.0  # P + R = 0: measured 0
    assert harmonic("f1", zero, one).value == 0.0
    p_missing = ratio("precision", 0, 0, missing="no predictions")
    r_missing = ratio("recall", 0, 0, missing="no gold items")
    f = harmonic("f1", p_missing, one)
    assert f.value is None and f.missing == "no predictions"
    f = harmonic("f1", half, r_missing)
    assert f.value is None and f.missing == "no gold items"
    # a missing input without a reason still gives a reason
    f = harmonic("f1", Metric("precision", None), one)
    assert f.value is None and "precision" in f.missing
    with pytest.raises(MissingEvidence):
        f.require()


def test_metric_to_dict_refuses_nan():
    with pytest.raises(ValueError, match="non-finite"):
        Metric("m", math.nan).to_dict()
    with pytest.raises(ValueError, match="non-finite"):
        Metric("m", 0.5, ci=(0.1, math.inf)).to_dict()
    d = Metric("m", np.float64(0.5), ci=(0.25, 0.75)).to_dict()
    assert d == {"name": "m", "value": 0.5, "ci": [0.25, 0.75]}
    assert type(d["value"]) is float


# ---------------------------------------------------------------------- totals
def test_totals_and_metrics_by_hand():
    ev = toy()
    assert len(ev) == 5 and ev.n_records == 4
    assert ev.totals() == {"tp": 4.0, "n_pred": 7.0, "n_gold": 8.0}
    m = ev.metrics()
    assert m["precision"].value == pytest.approx(4 / 7)
    assert m["recall"].value == 0.5
    assert m["f1"].value == pytest.approx(8 / 15)
    mask = np.array([True, True, False, False, False])
    assert ev.totals(mask) == {"tp": 1.0, "n_pred": 2.0, "n_gold": 2.0}


def test_empty_evaluation_reports_missing():
    ev = empty_evaluation(PR(), keys={"k": []})
    assert len(ev) == 0 and ev.n_records == 0
    m = ev.metrics()
    assert values(m) == {"precision": None, "recall": None, "f1": None}
    assert m["recall"].missing == "no gold items"
    assert ev.bootstrap(n_resamples=10) == {"precision": None, "recall": None, "f1": None}
    assert ev.rows() == [] and ev.breakdown("k") == {}
    json.dumps(ev.to_dict(), allow_nan=False)


def test_construction_validates_columns():
    with pytest.raises(ValueError, match="'tp' has 1 rows, expected 2"):
        Evaluation(PR(), ["a", "b"], {"tp": [1], "n_pred": [1, 1], "n_gold": [1, 1]})
    with pytest.raises(ValueError, match=r"missing stats columns \['n_gold'\]"):
        Evaluation(PR(), ["a"], {"tp": [1], "n_pred": [1]})
    with pytest.raises(ValueError, match="'n_pred' has the non-finite value nan at row 1 .*'b'"):
        Evaluation(PR(), ["a", "b"], {"tp": [1, 1], "n_pred": [1, math.nan], "n_gold": [1, 1]})
    with pytest.raises(ValueError, match="1-D"):
        Evaluation(PR(), ["a"], {"tp": [[1, 2]], "n_pred": [1], "n_gold": [1]})


def test_construction_normalises_without_mutating_the_input():
    stats = {"tp": [1, 0], "n_pred": [1, 1], "n_gold": [True, True]}
    details = {"pred_ids": [["x", "y"], ["z", "w"]], "score": [0.5, 0.25]}
    ev = Evaluation(PR(), ("a", "b"), stats, keys={"k": ["u", "v"]}, details=details)
    assert isinstance(stats["tp"], list) and isinstance(details["pred_ids"], list)
    assert ev.stats["n_gold"].dtype == float and ev.record_ids.dtype == "U1"  # texts: one unicode buffer
    assert ev.record_ids.tolist() == ["a", "b"] and type(ev.record_ids.tolist()[0]) is str
    # list cells stay single cells (not a 2-D array)
    assert ev.details["pred_ids"].shape == (2,) and ev.details["pred_ids"][1] == ["z", "w"]
    assert ev.details["score"].dtype.kind == "f" and ev.keys["k"].dtype == object
    assert ev.rows()[1] == {
        "record_id": "b",
        "k": "v",
        "pred_ids": ["z", "w"],
        "score": 0.25,
        "tp": 0.0,
        "n_pred": 1.0,
        "n_gold": 1.0,
    }


def test_build_evaluation_errors_name_the_row():
    with pytest.raises(InputError, match="row 1 has no 'record_id'"):
        build_evaluation(PR(), [{"record_id": "a"}, {"tp": 1}])
    with pytest.raises(InputError, match=r"row 0 \(record 'a'\): stat 'tp' is 'many'"):
        build_evaluation(PR(), [{"record_id": "a", "tp": "many"}])
    with pytest.raises(InputError, match="finite"):
        build_evaluation(PR(), [{"record_id": "a", "tp": math.inf}])
    with pytest.raises(InputError, match=r"row 1 \(record 'b'\): stat 'tp' is None"):
        build_evaluation(PR(), [{"record_id": "a", "tp": 1}, {"record_id": "b", "tp": None}])


def test_build_evaluation_stat_columns_as_float_of_each_value():
    """Plain numbers take the one-pass conversion, other numeric values float() each: same columns."""
    import fractions

    rows = [
        {"record_id": "a", "tp": True, "n_pred": 2**60 + 1, "n_gold": 0.1},
        {"record_id": "b", "tp": 3, "n_pred": "2.5", "n_gold": fractions.Fraction(1, 3)},
        {"record_id": "c"},
    ]
    ev = build_evaluation(PR(), rows)
    for s in ("tp", "n_pred", "n_gold"):
        assert ev.stats[s].tolist() == [float(r.get(s, 0.0)) for r in rows], s


def test_whole_number_stats_are_stored_compactly_and_read_as_given():
    """Counts and 0/1 flags are held in 1-4 byte integers and read back as the float64 columns
    given; fractions, ``-0.0`` and values beyond 32 bits stay float64; bool stays bool."""
    import pickle

    from kg_rageval.results.columns import Columns, compact_stat

    given = {"tp": [1.0, 0.0, 1.0], "n_pred": [300.0, 2.0, 70000.0], "n_gold": [-3.0, 0.0, 5.0]}
    ev = Evaluation(PR(), ["a", "b", "c"], given)
    stored = {k: ev.stats.raw(k).dtype for k in ev.stats}
    assert stored == {"tp": np.uint8, "n_pred": np.uint32, "n_gold": np.int8}
    assert ev.stats.nbytes == 3 * (1 + 4 + 1)
    for k, v in given.items():
        assert ev.stats[k].dtype == np.float64 and ev.stats[k].tolist() == v
        assert dict(ev.stats.items())[k].tolist() == v
    assert ev.totals() == {"tp": 2.0, "n_pred": 70302.0, "n_gold": 2.0}
    assert ev.rows()[2] == {"record_id": "c", "tp": 1.0, "n_pred": 70000.0, "n_gold": 5.0}
    assert all(type(ev.rows()[0][k]) is float for k in given)
    for col, dtype in (
        ([0.5, 1.0], np.float64),
        ([-0.0, 1.0], np.float64),
        ([0.0, 2.0**32], np.float64),
        ([-1.0, -0.0], np.float64),
        ([0.0, 65535.0], np.uint16),
        ([-40000.0, 1.0], np.int32),
    ):
        arr = np.asarray(col)
        small = compact_stat(arr)
        assert small.dtype == dtype, col
        assert (
            np.array_equal(small.astype(float), arr)
            and np.signbit(small.astype(float)).tolist() == np.signbit(arr).tolist()
        )
    flags = Evaluation(PR(), ["a", "b"], {"tp": np.array([True, False]), "n_pred": [1, 1], "n_gold": [1, 1]})
    assert flags.stats["tp"].dtype == bool
    # masks, concatenation (with float pieces), row selection and pickling keep the values
    sub = ev.subset(np.array([True, False, True]))
    assert sub.stats.raw("tp").dtype == np.uint8 and sub.stats["n_pred"].tolist() == [300.0, 70000.0]
    frac = Evaluation(PR(), ["d"], {"tp": [0.5], "n_pred": [1.0], "n_gold": [1.0]})
    both = ev.merge(frac)
    assert both.stats["tp"].tolist() == [1.0, 0.0, 1.0, 0.5] and both.stats.raw("tp").dtype == np.float64
    assert both.stats.raw("n_pred").dtype == np.uint32 and both.stats["n_pred"].tolist()[-1] == 1.0
    back = pickle.loads(pickle.dumps(ev))
    assert isinstance(back.stats, Columns) and back.stats.raw("n_gold").dtype == np.int8
    assert back.rows() == ev.rows()
    col = ev.stats["tp"]
    col[0] = 9.0  # a read is a copy: the stored column is unchanged
    assert ev.stats["tp"].tolist() == [1.0, 0.0, 1.0]


def test_object_key_and_detail_columns_are_coded_and_read_as_given():
    """Few distinct scalars are stored as codes into one object each, a column of one number
    type as its NumPy array; every read gives the values of the same type and sign (1, 1.0 and
    True, 0.0 and -0.0 stay apart), rows and JSON unchanged; lists and mostly distinct texts
    are left as they are."""
    import pickle

    from kg_rageval.results.columns import CodedColumn, compact_object

    n = 16
    given = {
        "slice:intent": ["lookup", None, "lookup", "compare"] * 4,
        "mixed": [1, 1.0, True, "1", None, 0.0, -0.0, 1] * 2,
        "wup": [0.25, 0.5, 0.25, 0.25, 0.5, 0.25, -0.0, 0.0] * 2,
        "conf": [0.1 * i for i in range(n)],
        "offset": [10**6 + i % 2 for i in range(n)],
        "big": [2**70] + [1] * (n - 1),
        "lists": [["a"], ["a"], None, ["b"]] * 4,
        "ids": [f"x{i}" for i in range(n)],
    }
    cols = {k: np.array(v, dtype=object) for k, v in given.items()}
    stored = {k: compact_object(c) for k, c in cols.items()}
    kinds = {
        k: (
            type(v).__name__,
            None
            if not isinstance(v, CodedColumn)
            else (v.codes.dtype.name, None if v.values is None else len(v.values)),
        )
        for k, v in stored.items()
    }
    assert kinds == {
        "slice:intent": ("CodedColumn", ("uint8", 3)),
        "mixed": ("CodedColumn", ("uint8", 7)),
        "wup": ("CodedColumn", ("uint8", 4)),
        "conf": ("CodedColumn", ("float64", None)),
        "offset": ("CodedColumn", ("uint8", 2)),
        "big": ("ndarray", None),
        "lists": ("ndarray", None),
        "ids": ("ndarray", None),
    }
    for k, v in stored.items():
        back = v.array() if isinstance(v, CodedColumn) else v
        assert back.dtype == object and [(type(x), repr(x)) for x in back.tolist()] == [
            (type(x), repr(x)) for x in given[k]
        ], k
    ev = Evaluation(
        PR(),
        [f"r{i}" for i in range(n)],
        {"tp": [1] * n, "n_pred": [1] * n, "n_gold": [1] * n},
        keys={"slice:intent": cols["slice:intent"]},
        details={k: v for k, v in cols.items() if k != "slice:intent"},
    )
    assert isinstance(ev.keys.raw("slice:intent"), CodedColumn)
    assert ev.details["mixed"].tolist() == given["mixed"]
    assert [type(x) for x in ev.details["mixed"].tolist()] == [
        int,
        float,
        bool,
        str,
        type(None),
        float,
        float,
        int,
    ] * 2
    rows = ev.to_dict()["rows"]
    assert json.dumps([r["mixed"] for r in rows[:8]]) == '[1, 1.0, true, "1", null, 0.0, -0.0, 1]'
    assert [r["wup"] for r in rows] == given["wup"] and json.dumps(rows[6]["wup"]) == "-0.0"
    assert ev.breakdown("slice:intent")["lookup"]["n"] == 8
    sub = ev.subset(np.arange(n) % 2 == 0)
    assert (
        isinstance(sub.details.raw("offset"), CodedColumn) and sub.details["offset"].tolist() == [10**6] * 8
    )
    assert ev.merge(sub).details["wup"].tolist() == given["wup"] + given["wup"][::2]
    back = pickle.loads(pickle.dumps(ev))
    assert back.rows() == ev.rows() and isinstance(back.keys.raw("slice:intent"), CodedColumn)
    assert ev.details.raw("offset")[1] == 10**6 + 1 and ev.details.raw("conf")[2] == 0.1 * 2


# ---------------------------------------------------------------------- breakdown
def test_breakdown_by_slice_with_none_and_the_string_none():
    bd = toy().breakdown("slice:intent")
    # groups ordered by text, None last; the string "None" is its own group
    assert list(bd) == ["None", "compare", "lookup", None]
    assert {k: g["n"] for k, g in bd.items()} == {"None": 1, "compare": 1, "lookup": 2, None: 1}
    assert values(bd["compare"]["metrics"]) == {
        "precision": pytest.approx(2 / 3),
        "recall": 1.0,
        "f1": pytest.approx(0.8),
    }
    assert values(bd["lookup"]["metrics"]) == {"precision": 0.5, "recall": 0.5, "f1": 0.5}
    assert values(bd["None"]["metrics"])["recall"] == pytest.approx(1 / 3)
    none = bd[None]["metrics"]  # tp 0 / n_pred 0 / n_gold 1
    assert none["precision"].value is None and none["precision"].missing == "no predictions"
    assert none["recall"].value == 0.0 and none["f1"].value is None


def test_breakdown_numeric_keys_and_nan_as_none():
    ev = Evaluation(
        PR(),
        ["a", "b", "c", "d"],
        {"tp": [1, 0, 1, 1], "n_pred": [1, 1, 1, 2], "n_gold": [1, 1, 2, 2]},
        keys={"k": [2.0, math.nan, 1.0, 2.0], "mixed": [1, "1", None, math.nan]},
    )
    bd = ev.breakdown("k")
    assert list(bd) == [1.0, 2.0, None]
    assert [g["n"] for g in bd.values()] == [1, 2, 1]
    assert bd[2.0]["metrics"]["precision"].value == pytest.approx(2 / 3)
    mixed = ev.breakdown("mixed")
    assert [g["n"] for g in mixed.values()] == [1, 1, 2]  # 1, "1", then None + NaN together
    assert list(mixed)[:2] == [1, "1"] and type(list(mixed)[1]) is str
    top = Evaluation(
        PR(), ["a", "b", "c"], {s: [1, 1, 1] for s in PR.stats}, keys={"k": [10, 2, "x"], "n": [10, 2, 1]}
    )
    assert list(top.breakdown("k")) == [2, 10, "x"]  # numbers in numeric order, then text
    assert list(top.breakdown("n")) == [1, 2, 10]
    assert list(mixed)[2] is None
    d = json.loads(json.dumps(ev.to_dict(breakdowns=["mixed"]), allow_nan=False))
    assert set(d["breakdowns"]["mixed"]) == {"1 (int)", "1 (str)", "None"}
    assert [r["k"] for r in d["rows"]] == [2.0, None, 1.0, 2.0]  # a NaN key is a missing key
    assert [r["mixed"] for r in d["rows"]] == [1, "1", None, None]
    assert set(toy().to_dict(breakdowns=["slice:intent"])["breakdowns"]["slice:intent"]) == {
        "None (str)",
        "compare",
        "lookup",
        "None",
    }
    with pytest.raises(KeyError, match="no breakdown key 'nope'"):
        ev.breakdown("nope")


# ---------------------------------------------------------------------- rollup
def test_rollup_multi_parent_counts_once_per_ancestor(vehicles):
    ev = toy()
    roll = ev.rollup(vehicles)
    assert ev.meta["rollup_skipped"] == 2  # None and the unknown "spaceship"
    assert list(roll) == [i for i in vehicles.ids if i in roll]  # topological order
    n = {k: g["n"] for k, g in roll.items()}
    # sedan, amphibious_car, submarine; amphibious_car under car AND boat, once under vehicle
    assert n == {"vehicle": 3, "car": 2, "boat": 2, "sedan": 1, "submarine": 1, "amphibious_car": 1}
    assert values(roll["vehicle"]["metrics"]) == {
        "precision": pytest.approx(3 / 5),
        "recall": 0.75,
        "f1": pytest.approx(2 / 3),
    }
    assert values(roll["car"]["metrics"]) == {"precision": 0.5, "recall": 0.5, "f1": 0.5}
    assert values(roll["boat"]["metrics"]) == {
        "precision": 0.5,
        "recall": pytest.approx(2 / 3),
        "f1": pytest.approx(4 / 7),
    }
    assert values(roll["amphibious_car"]["metrics"]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert {k: g["depth"] for k, g in roll.items()} == {
        "vehicle": 0,
        "car": 1,
        "boat": 1,
        "sedan": 2,
        "submarine": 2,
        "amphibious_car": 2,
    }
    assert "hatchback" not in roll
    assert set(ev.rollup(vehicles, min_rows=2)) == {"vehicle", "car", "boat"}
    assert set(ev.rollup(vehicles, max_depth=1)) == {"vehicle", "car", "boat"}


def test_rollup_matches_brute_force(vehicles):
    rng = np.random.default_rng(7)
    ids = list(vehicles.ids) + [None, "nowhere", 3]
    col = [ids[i] for i in rng.integers(0, len(ids), 60)]
    stats = {"tp": rng.integers(0, 3, 60), "n_pred": rng.integers(2, 4, 60), "n_gold": np.full(60, 3)}
    ev = Evaluation(PR(), [f"r{i}" for i in range(60)], stats, keys={"gold_node": col})
    roll = ev.rollup(vehicles)
    known = [i for i, c in enumerate(col) if isinstance(c, str) and c in vehicles]
    assert ev.meta["rollup_skipped"] == 60 - len(known)
    for node in vehicles.ids:
        inside = [i for i in known if node in vehicles.ancestors(col[i], include_self=True)]
        if not inside:
            assert node not in roll
            continue
        assert roll[node]["n"] == len(inside)
        tp = sum(stats["tp"][i] for i in inside)
        npred = sum(stats["n_pred"][i] for i in inside)
        assert roll[node]["metrics"]["precision"].value == pytest.approx(tp / npred)


def test_rollup_unknown_key(vehicles):
    with pytest.raises(KeyError, match="no key column 'gold'"):
        toy().rollup(vehicles, "gold")


# ---------------------------------------------------------------------- merge
def test_merge_of_partitions_equals_the_single_evaluation(vehicles):
    left_rows, right_rows = ROWS[:2] + ROWS[3:4], ROWS[2:3] + ROWS[4:]
    # key and detail columns present on one side only
    left = build_evaluation(
        PR(),
        left_rows,
        keys=["slice:intent"],
        details=["why"],
        unscored=[{"record_id": "r9", "reason": "no answer"}],
        meta={"run": 1},
    )
    right = build_evaluation(PR(), right_rows, keys=["gold_node"], meta={"run": 2, "side": "b"})
    # the single evaluation of the same rows, without the columns each side lacks
    drop = [{**r, "gold_node": None} for r in left_rows] + [
        {**r, "slice:intent": None, "why": None} for r in right_rows
    ]
    single = build_evaluation(PR(), drop, keys=KEYS, details=["why"])
    merged = left.merge(right)
    assert merged.totals() == single.totals() == {"tp": 4.0, "n_pred": 7.0, "n_gold": 8.0}
    assert values(merged.metrics()) == values(single.metrics())
    assert merged.rows() == single.rows()
    assert merged.rows()[2] == {
        "record_id": "r3",
        "slice:intent": None,
        "gold_node": None,
        "why": None,
        "tp": 0.0,
        "n_pred": 0.0,
        "n_gold": 1.0,
    }
    assert merged.unscored == [{"record_id": "r9", "reason": "no answer"}]
    assert merged.meta == {"run": 1, "side": "b"}
    assert merged.n_records == 4
    bd_m, bd_s = merged.breakdown("slice:intent"), single.breakdown("slice:intent")
    assert list(bd_m) == list(bd_s)
    assert all(values(bd_m[k]["metrics"]) == values(bd_s[k]["metrics"]) for k in bd_s)
    assert {k: g["n"] for k, g in merged.rollup(vehicles).items()} == {
        "vehicle": 1,
        "boat": 1,
        "submarine": 1,
    }
    assert merged.meta["rollup_skipped"] == 4
    assert merged.bootstrap(n_resamples=50, seed=1) == single.bootstrap(n_resamples=50, seed=1)
    # with every column on both sides, the merge is the single evaluation, rollup included
    full = build_evaluation(PR(), left_rows, keys=KEYS, details=["why"]).merge(
        build_evaluation(PR(), right_rows, keys=KEYS, details=["why"])
    )
    whole = build_evaluation(PR(), left_rows + right_rows, keys=KEYS, details=["why"])
    assert full.rows() == whole.rows()
    assert {k: (g["n"], values(g["metrics"])) for k, g in full.rollup(vehicles).items()} == {
        k: (g["n"], values(g["metrics"])) for k, g in whole.rollup(vehicles).items()
    }


def test_merge_numeric_keys_extra_stats_and_family_check():
    a = Evaluation(
        PR(),
        ["a"],
        {"tp": [1], "n_pred": [1], "n_gold": [1], "extra": [2]},
        keys={"k": [1]},
        meta={"rollup_skipped": 4},
    )
    b = Evaluation(PR(), ["b"], {"tp": [0], "n_pred": [1], "n_gold": [1]}, keys={"k": [2]})
    m = a.merge(b)
    assert m.keys["k"].tolist() == [1, 2] and m.keys["k"].dtype.kind == "i"
    assert m.stats["extra"].tolist() == [2.0, 0.0]
    assert "rollup_skipped" not in m.meta
    with pytest.raises(ValueError, match="different families"):
        a.merge(build_evaluation(OtherFamily(), [{"record_id": "x"}]))


# ---------------------------------------------------------------------- output
def test_rows_and_to_dict_are_json_safe():
    ev = toy()
    rows = ev.rows()
    assert rows[0] == {
        "record_id": "r1",
        "slice:intent": "lookup",
        "gold_node": "sedan",
        "why": "ok",
        "tp": 1.0,
        "n_pred": 1.0,
        "n_gold": 1.0,
    }
    assert ev.rows(limit=2) == rows[:2] and ev.rows(limit=0) == []
    ev.unscored.append({"record_id": "r5", "reason": "no answer"})
    d = ev.to_dict(breakdowns=["slice:intent", "gold_node"])
    text = json.dumps(d, allow_nan=False)
    back = json.loads(text)
    assert back["metrics"]["precision"] == {
        "name": "precision",
        "value": 4 / 7,
        "numerator": 4.0,
        "denominator": 7.0,
    }
    assert back["n_rows"] == 5 and back["n_records"] == 4
    assert back["unscored"] == {"no answer": 1}
    assert back["sums"] == {"tp": 4.0, "n_pred": 7.0, "n_gold": 8.0}
    assert back["breakdowns"]["slice:intent"]["None"]["metrics"]["precision"] == {
        "name": "precision",
        "value": None,
        "numerator": 0.0,
        "denominator": 0.0,
        "missing": "no predictions",
    }
    assert back["rows"] == rows
    assert back["unscored_records"] == [{"record_id": "r5", "reason": "no answer"}]
    assert "rows" not in ev.to_dict(rows=False)


def test_to_dict_raises_on_nan_or_inf_anywhere():
    base = dict(family=PR(), record_ids=["a", "b"], stats={"tp": [1, 1], "n_pred": [1, 2], "n_gold": [1, 1]})
    with pytest.raises(ValueError, match="'score', row 1"):
        Evaluation(**base, details={"score": [0.5, math.nan]}).to_dict()
    with pytest.raises(ValueError, match="non-finite"):
        Evaluation(**base, details={"obj": ["x", math.inf]}).to_dict()
    with pytest.raises(ValueError, match="meta"):
        Evaluation(**base, meta={"thr": math.nan}).to_dict()
    # numpy values and arrays in cells and meta come out as plain JSON values
    ev = Evaluation(
        **base, details={"vec": [np.arange(2), (1, 2)]}, meta={"n": np.int64(3), "ids": ("x", "y")}
    )
    d = json.loads(json.dumps(ev.to_dict(), allow_nan=False))
    assert [r["vec"] for r in d["rows"]] == [[0, 1], [1, 2]]
    assert d["meta"] == {"n": 3, "ids": ["x", "y"]}


def test_per_record_stats_and_subset():
    ids, per = toy().per_record_stats()
    assert ids.tolist() == ["r1", "r2", "r3", "r4"]
    assert per["tp"].tolist() == [1.0, 2.0, 0.0, 1.0]
    assert per["n_pred"].tolist() == [2.0, 3.0, 0.0, 2.0]
    # ids are compared as text: 1 and "1" are one record
    ev = Evaluation(PR(), [1, "1", "b"], {"tp": [1, 1, 0], "n_pred": [1, 1, 1], "n_gold": [1, 1, 1]})
    assert ev.n_records == 2 and ev.per_record_stats()[1]["tp"].tolist() == [2.0, 0.0]
    sub = toy().subset(np.array([False, False, True, False, True]))
    assert sub.record_ids.tolist() == ["r2", "r4"] and sub.totals()["tp"] == 3.0
    with pytest.raises(ValueError, match="boolean mask"):
        toy().subset(np.array([1, 0]))


# ---------------------------------------------------------------------- bootstrap
def records_ev(correct: list[int], rows_per_record: int = 1, *, one_record_per_row=False) -> Evaluation:
    """One record per entry of ``correct``; each record has ``rows_per_record`` identical rows
    (tp = correct, n_pred = n_gold = 1)."""
    rid, tp = [], []
    for i, c in enumerate(correct):
        for j in range(rows_per_record):
            rid.append(f"r{i}.{j}" if one_record_per_row else f"r{i}")
            tp.append(c)
    n = len(rid)
    return Evaluation(PR(), rid, {"tp": tp, "n_pred": np.ones(n), "n_gold": np.ones(n)})


def test_bootstrap_is_deterministic_and_contains_the_estimate():
    rng = np.random.default_rng(3)
    ev = records_ev(rng.integers(0, 2, 40).tolist())
    a = ev.bootstrap(n_resamples=300, seed=11)
    assert a == ev.bootstrap(n_resamples=300, seed=11)
    assert a != ev.bootstrap(n_resamples=300, seed=12)
    p = ev.metrics()["precision"].value
    lo, hi = a["precision"]
    assert lo < p < hi and 0 <= lo and hi <= 1
    # shuffling the rows does not change the draws (records are ordered by id)
    perm = rng.permutation(len(ev))
    shuffled = Evaluation(PR(), ev.record_ids[perm], {k: v[perm] for k, v in ev.stats.items()})
    assert shuffled.bootstrap(n_resamples=300, seed=11) == a
    assert set(ev.bootstrap(n_resamples=50, metrics=["f1"])) == {"f1"}


def test_bootstrap_resamples_records_not_rows():
    # two records of two rows each: r0 all correct, r1 all wrong. Drawing records gives
    # precision 0, 1/2 or 1 only; drawing rows would also give 1/4 and 3/4.
    ev = records_ev([1, 0], rows_per_record=2)
    reps = ev.bootstrap_replicates(n_resamples=400, seed=0)["precision"]
    assert set(np.unique(reps).tolist()) == {0.0, 0.5, 1.0}
    rows = records_ev([1, 0], rows_per_record=2, one_record_per_row=True)
    assert {0.25, 0.75} <= set(rows.bootstrap_replicates(n_resamples=400, seed=0)["precision"].tolist())
    # 20 records x 10 identical rows: the record-level interval has the width of 20
    # observations (±1.96·√(.25/20) ≈ ±0.22), not of 200 rows (≈ ±0.07)
    wide = records_ev([1] * 10 + [0] * 10, rows_per_record=10).bootstrap(n_resamples=1000)
    narrow = records_ev([1] * 10 + [0] * 10, rows_per_record=10, one_record_per_row=True).bootstrap(
        n_resamples=1000
    )
    w = wide["precision"][1] - wide["precision"][0]
    assert 0.3 < w < 0.6
    assert narrow["precision"][1] - narrow["precision"][0] < 0.2


@pytest.mark.parametrize("n, n_resamples", [(1, 3), (2, 5), (7, 9), (1001, 4), (200_001, 23)])
def test_bootstrap_weights_are_the_int64_draws_bit_for_bit(n, n_resamples):
    # reference: the same scheme written out independently with numpy's default (int64)
    # index draws, resample by resample within the same blocks (one integers() call a block)
    from kg_rageval.results import bootstrap as E

    rng = np.random.default_rng(11)
    chunk = E.bootstrap_block(n, n_resamples)
    ref = []
    for lo in range(0, n_resamples, chunk):
        draws = rng.integers(0, n, size=(min(chunk, n_resamples - lo), n))
        for row in draws:  # small n: count each record by hand; large n: numpy's bincount
            ref.append(
                [float(np.count_nonzero(row == i)) for i in range(n)]
                if n < 50
                else np.bincount(row, minlength=n).astype(float)
            )
    got = np.vstack([w for _, w in E.bootstrap_weights(n, n_resamples, 11)])
    assert got.shape == (n_resamples, n)
    assert np.array_equal(got, np.asarray(ref, dtype=float).reshape(n_resamples, n))


@pytest.mark.parametrize("block", [1, 7, 3, 23])
def test_bootstrap_weights_do_not_depend_on_the_block_size(monkeypatch, block):
    # the draws are one sequential stream of integers(): blocks of 1, 7, 3 or every resample
    # give the weights of the default block (all 23 here), bit for bit, so the block size is only
    # a memory and speed setting; odd n, several blocks, a last block cut short
    from kg_rageval.results import bootstrap as E

    n, n_resamples = 1001, 23
    want = np.vstack([w for _, w in E.bootstrap_weights(n, n_resamples, 5)])
    assert E.bootstrap_block(n, n_resamples) == 23
    monkeypatch.setattr(E, "_BOOTSTRAP_CELLS", block * n)
    monkeypatch.setattr(E, "_BOOTSTRAP_MIN_BLOCK", 1)
    blocks = list(E.bootstrap_weights(n, n_resamples, 5))
    assert [lo for lo, _ in blocks] == list(range(0, n_resamples, block))
    assert np.array_equal(np.vstack([w for _, w in blocks]), want)


def test_bootstrap_block_sizes():
    # 2,000,000 weights a block, but at least 8 resamples while that stays within 8,000,000
    from kg_rageval.results.bootstrap import bootstrap_block

    assert [
        bootstrap_block(n, 1000)
        for n in (0, 1, 1000, 100_000, 250_000, 1_000_000, 2_000_000, 8_000_000, 10**8)
    ] == [1000, 1000, 1000, 20, 8, 8, 4, 1, 1]
    assert bootstrap_block(100_000, 5) == 5 and bootstrap_block(10**8, 5) == 1


def test_bootstrap_weights_have_multinomial_marginals():
    # each resample is multinomial(n, 1/n): rows sum to n; a record's count has mean 1 and
    # variance (n-1)/n. 2000 resamples x 500 records = 1e6 counts: the standard error of the
    # mean is ~0.001 and of the variance ~0.0015 (fourth central moment of Binomial(n, 1/n) ~ 4)
    n, b = 500, 2000
    w = np.vstack([w for _, w in bootstrap_weights(n, b, 7)])
    assert (w.sum(axis=1) == n).all() and (w >= 0).all()
    assert abs(w.mean() - 1.0) < 0.005
    assert abs(w.var() - (n - 1) / n) < 0.01
    # the covariance between two records' counts is -1/n (multinomial), not 0
    c = np.cov(w[:, 0], w[:, 1])[0, 1]
    assert abs(c + 1 / n) < 0.05


class Thresholded(PR):
    """Precision, reported only with at least ``need`` predictions."""

    name = "thresholded"
    need = 12.0

    def finalize(self, s):
        out = super().finalize(s)
        if s["n_pred"] < self.need:
            out["precision"] = Metric("precision", None, missing=f"fewer than {self.need} predictions")
        return out


def test_bootstrap_metric_missing_in_most_resamples_is_none():
    # 10 records, 5 with 2 predictions, 5 with none: a resample has >= 12 predictions when it
    # draws >= 6 of the first kind, P(Bin(10, 1/2) >= 6) = 386/1024 ≈ 0.377: missing in ~62 %.
    fam = Thresholded()
    stats = {"tp": [1] * 5 + [0] * 5, "n_pred": [2] * 5 + [0] * 5, "n_gold": [1] * 10}
    ev = Evaluation(fam, [f"r{i}" for i in range(10)], stats)
    reps = ev.bootstrap_replicates(n_resamples=1000, seed=5)
    assert 0.55 < np.isnan(reps["precision"]).mean() < 0.69
    assert not np.isnan(reps["recall"]).any()
    ci = ev.bootstrap(n_resamples=1000, seed=5)
    assert ci["precision"] is None and ci["recall"] is not None
    fam.need = 8.0  # now P(Bin >= 4) ≈ 0.83: an interval over the defined resamples
    ev8 = Evaluation(fam, [f"r{i}" for i in range(10)], stats)
    lo, hi = ev8.bootstrap(n_resamples=1000, seed=5)["precision"]
    assert lo <= 0.5 <= hi


def test_bootstrap_validates_its_arguments():
    ev = toy()
    with pytest.raises(InputError, match="n_resamples"):
        ev.bootstrap(n_resamples=0)
    with pytest.raises(InputError, match="level"):
        ev.bootstrap(level=1.5)
    with pytest.raises(InputError, match=r"unknown metric\(s\) \['prec'\]"):
        ev.bootstrap(metrics=["prec"])


# ---------------------------------------------------------------------- properties
hyp = pytest.importorskip("hypothesis", reason="hypothesis is not installed")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_row = st.fixed_dictionaries(
    {
        "record_id": st.sampled_from(["a", "b", "c", "d", "e"]),
        "tp": st.integers(0, 3),
        "n_pred": st.integers(0, 4),
        "n_gold": st.integers(0, 4),
        "slice:s": st.sampled_from([None, "x", "y", "None", 1]),
        "gold_node": st.sampled_from([None, "vehicle", "car", "boat", "amphibious_car", "sedan", "zz"]),
    }
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_row, max_size=25), st.integers(0, 25))
def test_property_breakdown_adds_up_and_merge_is_concatenation(rows, cut):
    ev = build_evaluation(PR(), rows, keys=["slice:s", "gold_node"])
    bd = ev.breakdown("slice:s")
    assert sum(g["n"] for g in bd.values()) == len(rows)
    tot = dict.fromkeys(PR.stats, 0.0)  # each group's sums, recovered from its metrics
    for g in bd.values():
        tot["tp"] += g["metrics"]["precision"].numerator
        tot["n_pred"] += g["metrics"]["precision"].denominator
        tot["n_gold"] += g["metrics"]["recall"].denominator
    assert tot == ev.totals()
    left = build_evaluation(PR(), rows[:cut], keys=["slice:s"])
    right = build_evaluation(PR(), rows[cut:], keys=["gold_node"])
    merged = left.merge(right)
    assert merged.totals() == ev.totals()
    expected = [{**r, "gold_node": None} for r in rows[:cut]] + [{**r, "slice:s": None} for r in rows[cut:]]
    assert merged.rows() == build_evaluation(PR(), expected, keys=["slice:s", "gold_node"]).rows()
    json.dumps(merged.to_dict(breakdowns=["slice:s", "gold_node"]), allow_nan=False)


@settings(max_examples=40, deadline=None)
@given(st.lists(_row, max_size=25), st.randoms(use_true_random=False))
def test_property_rollup_and_bootstrap_ignore_row_order(vehicles, rows, rnd):
    ev = build_evaluation(PR(), rows, keys=["gold_node"])
    shuffled_rows = list(rows)
    rnd.shuffle(shuffled_rows)
    sh = build_evaluation(PR(), shuffled_rows, keys=["gold_node"])
    r1, r2 = ev.rollup(vehicles), sh.rollup(vehicles)
    assert {k: (g["n"], values(g["metrics"])) for k, g in r1.items()} == {
        k: (g["n"], values(g["metrics"])) for k, g in r2.items()
    }
    known = sum(1 for r in rows if r["gold_node"] in vehicles)
    assert ev.meta["rollup_skipped"] == len(rows) - known
    if known:
        assert r1["vehicle"]["n"] == known
    assert ev.bootstrap(n_resamples=30, seed=2) == sh.bootstrap(n_resamples=30, seed=2)


def test_compact_object_samples_a_long_column_before_coding_it() -> None:
    """Past SAMPLE_ROWS rows a column is sampled first: mostly distinct ids are left as they
    are (a number column as its NumPy array) without hashing every row; few distinct texts are
    still coded; every read gives the given values, types included."""
    from kg_rageval.results import columns
    from kg_rageval.results.columns import SAMPLE_ROWS, CodedColumn, compact_object

    n = 3 * SAMPLE_ROWS
    ids = np.array([f"q{i}" for i in range(n)], dtype=object)
    assert compact_object(ids) is ids
    conf = np.array([i / 7 for i in range(n)], dtype=object)
    coded = compact_object(conf)
    assert isinstance(coded, CodedColumn) and coded.values is None and coded.codes.dtype == np.float64
    assert coded.array().tolist() == conf.tolist()
    intents = np.array(["lookup", "compare", None] * SAMPLE_ROWS, dtype=object)
    small = compact_object(intents)
    assert isinstance(small, CodedColumn) and len(small.values) == 3 and small.codes.dtype == np.uint8
    assert small.array().tolist() == intents.tolist()
    # the sample (every 3rd row: all distinct) hides that the whole column has few values:
    # it stays uncoded, and reads the same
    tricky = np.array([f"u{i}" if i % 3 == 0 else "same" for i in range(n)], dtype=object)
    assert compact_object(tricky) is tricky
    assert columns._mostly_distinct([["a"], "b"]) and not columns._mostly_distinct(["a", "a", "b", "a"])
