"""score_hierarchy: hand-worked metrics, NIL cases, unknown/status options, breakdowns, and
agreement with HiClass's hierarchical metrics on a generated tree."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kg_rageval.base.errors import InputError, MissingEvidence, UnknownIdError
from kg_rageval.families.hierarchy import (
    ERROR_CATEGORIES,
    HierarchyFamily,
    confused_pairs,
    relation_counts,
    score_hierarchy,
)
from kg_rageval.ontology import OntologyBuilder, load_ontology


def rec(i, gold, pred, **kw):
    return {"id": str(i), "labels": {"gold": gold, "pred": pred}, **kw}


@pytest.fixture(scope="module")
def fixture_onto(fixtures_dir):
    return load_ontology(fixtures_dir / "hierarchy" / "vehicles.obo")


def test_hand_worked_vehicle_records(vehicles):
    records = [
        rec(1, ["hatchback"], ["sedan"], slices={"intent": "a"}),
        rec(2, ["hatchback"], ["submarine"], slices={"intent": "a"}),
        rec(3, ["hatchback"], [], slices={"intent": "b"}),
        rec(4, [], ["car"]),
        rec(5, ["sedan"], ["sedan"]),
        rec(6, ["sedan", "boat"], ["sedan"]),
        rec(7, [], []),
        {"id": "8"},
        {"id": "9", "labels": {"gold": ["car"]}},
    ]
    ev = score_hierarchy(vehicles, records)
    m = {k: v.value for k, v in ev.metrics().items()}
    # augmented sets without the root: inter 1+0+0+0+2+2, |P̂| 2+2+0+1+2+2, |T̂| 2+2+2+0+2+3;
    # record 9 has gold but no prediction: scored as an empty prediction (|T̂| + 1, a miss)
    assert m["hierarchical_precision"] == pytest.approx(5 / 9)
    assert m["hierarchical_recall"] == pytest.approx(5 / 12)
    assert m["hierarchical_f1"] == pytest.approx(2 * (5 / 9) * (5 / 12) / (5 / 9 + 5 / 12))
    assert m["missing_run_rate"] == pytest.approx(1 / 8)
    # macro: hP over items with a prediction (1, 2, 4, 5, 6): (1/2 + 0 + 0 + 1 + 1) / 5
    assert m["macro_hierarchical_precision"] == pytest.approx(2.5 / 5)
    # hR over items with gold (1, 2, 3, 5, 6, 9): (1/2 + 0 + 0 + 1 + 2/3 + 0) / 6
    assert m["macro_hierarchical_recall"] == pytest.approx((0.5 + 1 + 2 / 3) / 6)
    # hF1 = 2·inter/(|P̂|+|T̂|) over items 1-6 and 9 (item 7 is NIL = NIL: no denominator)
    assert m["macro_hierarchical_f1"] == pytest.approx((0.5 + 0 + 0 + 0 + 1 + 0.8 + 0) / 7)
    assert m["exact_accuracy"] == pytest.approx(2 / 8)  # items 5 and 7 (NIL = NIL)
    assert m["wu_palmer"] == pytest.approx((2 / 3 + 1 / 3 + 1) / 3)
    assert m["errors"] == 6
    assert m["mean_error_distance"] == pytest.approx((2 + 4) / 2)
    counts = relation_counts(ev)
    assert counts == {"exact": 2, "sibling": 1, "cousin": 1, "nil_pred": 2, "nil_gold": 1, "multi": 1}
    assert m["error_rate_sibling"] == pytest.approx(1 / 6) and m["error_count_nil_pred"] == 2
    assert ev.unscored == [{"record_id": "8", "reason": "no labels section", "code": "no_section"}]
    # per-row keys and details
    rows = {r["record_id"]: r for r in ev.rows()}
    assert rows["1"]["gold_node"] == "hatchback" and rows["1"]["relation"] == "sibling"
    assert rows["1"]["pred_node"] == "sedan" and rows["1"]["wup"] == pytest.approx(2 / 3)
    assert rows["1"]["slice:intent"] == "a" and rows["5"]["slice:intent"] is None
    assert rows["6"]["gold_node"] is None and rows["6"]["relation"] == "multi"
    by_slice = ev.breakdown("slice:intent")
    assert by_slice["a"]["metrics"]["hierarchical_precision"].value == pytest.approx(1 / 4)
    assert by_slice["b"]["metrics"]["hierarchical_precision"].value is None  # NIL prediction only
    roll = ev.rollup(vehicles)
    assert rows["9"]["missing_run"] is True and rows["1"]["missing_run"] is False
    assert roll["car"]["n"] == 5 and roll["vehicle"]["n"] == 5  # rows 1, 2, 3, 5, 9
    assert "boat" not in roll  # no row has a single gold node under boat
    assert roll["hatchback"]["metrics"]["hierarchical_recall"].value == pytest.approx(1 / 6)
    pairs = confused_pairs(ev)
    assert {"gold": "hatchback", "pred": "sedan", "relation": "sibling", "count": 1} in pairs
    assert {"gold": "car", "pred": None, "relation": "nil_pred", "count": 1} in pairs  # row 9: missing run
    assert len(pairs) == 6
    json.dumps(ev.to_dict(breakdowns=["slice:intent"]), allow_nan=False)


def test_include_root_and_lca_variants(vehicles):
    records = [rec(1, ["hatchback"], ["sedan"]), rec(2, ["hatchback"], ["submarine"])]
    with_root = score_hierarchy(vehicles, records, include_root=True).metrics()
    assert with_root["hierarchical_precision"].value == pytest.approx(3 / 6)  # (2 + 1) / (3 + 3)
    lca = score_hierarchy(vehicles, records, lca_bounded=True).metrics()
    assert lca["hierarchical_precision"].value == pytest.approx(1 / 4)
    assert score_hierarchy(vehicles, records).meta["include_root"] is False


def test_confused_pairs_are_ranked(vehicles):
    records = [rec(i, ["hatchback"], ["sedan"]) for i in range(3)]
    records += [rec(10 + i, ["sedan"], ["car"]) for i in range(2)] + [rec(20, ["boat"], ["boat"])]
    pairs = confused_pairs(score_hierarchy(vehicles, records), top=2)
    assert pairs == [
        {"gold": "hatchback", "pred": "sedan", "relation": "sibling", "count": 3},
        {"gold": "sedan", "pred": "car", "relation": "parent", "count": 2},
    ]


def test_empty_input_raises(vehicles):
    with pytest.raises(InputError, match="no records"):
        score_hierarchy(vehicles, [])
    with pytest.raises(MissingEvidence, match="labels section"):
        score_hierarchy(vehicles, [{"id": "1"}, {"id": "2", "query": "x"}])
    # all NIL predictions: hP is missing evidence, not 0 or 1
    m = score_hierarchy(vehicles, [rec(1, ["car"], [])]).metrics()
    assert m["hierarchical_precision"].value is None and m["hierarchical_precision"].missing
    assert m["hierarchical_recall"].value == 0.0
    assert m["wu_palmer"].value is None
    # no errors: rates are missing, not 0
    m = score_hierarchy(vehicles, [rec(1, ["car"], ["car"])]).metrics()
    assert m["error_rate_parent"].value is None and m["errors"].value == 0


def test_malformed_labels_raise(vehicles):
    with pytest.raises(InputError, match=r"record '1'.*labels.pred"):
        score_hierarchy(vehicles, [rec(1, ["car"], [3])])
    with pytest.raises(InputError, match="on_unknown"):
        score_hierarchy(vehicles, [rec(1, ["car"], ["car"])], on_unknown="ignore")


def test_unknown_ids(vehicles):
    records = [rec(1, ["sedan"], ["spaceship"]), rec(2, ["rocket"], ["car"])]
    # default: a gold id the ontology lacks is an input error; a predicted one is counted
    with pytest.raises(UnknownIdError) as err:
        score_hierarchy(vehicles, records)
    assert (
        err.value.ids == ["rocket"] and "record '2'" in str(err.value) and "on_unknown_gold" in str(err.value)
    )
    pred_only = score_hierarchy(vehicles, records[:1]).metrics()
    assert pred_only["error_count_not_in_ontology"].value == 1
    with pytest.raises(UnknownIdError) as err:
        score_hierarchy(vehicles, records, on_unknown="error")
    assert err.value.ids == ["rocket", "spaceship"] and "record '1'" in str(err.value)
    ev = score_hierarchy(vehicles, records, on_unknown_gold="count")
    m = ev.metrics()
    # an unknown id is an isolated concept: {spaceship} and {rocket} add 1 to |P̂| and |T̂|
    assert m["hierarchical_precision"].value == pytest.approx(0 / (1 + 1))
    assert m["hierarchical_recall"].value == pytest.approx(0 / (2 + 1))
    assert m["error_count_not_in_ontology"].value == 2 and m["wu_palmer"].value is None
    same = score_hierarchy(vehicles, [rec(1, ["rocket"], ["rocket"])], on_unknown_gold="count")
    assert same.metrics()["exact_accuracy"].value == 1.0


def _status_ontology():
    b = OntologyBuilder("status")
    b.add_node("root")
    b.add_node("a")
    b.add_node("b")
    b.add_node("old", status="deprecated", replaced_by="a")
    b.add_node("gone", status="revoked")
    for c in ("a", "b", "old", "gone"):
        b.add_edge(c, "root")
    return b.build()


def test_status_options():
    o = _status_ontology()
    records = [rec(1, ["a"], ["old"]), rec(2, ["a"], ["gone"]), rec(3, ["b"], ["b"])]
    with pytest.raises(InputError, match=r"'old' is deprecated \(replaced by 'a'\).*'gone' is revoked"):
        score_hierarchy(o, records, on_status="error")
    # default: inactive predicted ids are flagged and scored where they stand
    counted = score_hierarchy(o, records)
    assert relation_counts(counted) == {"exact": 1, "inactive": 2}
    assert counted.totals()["pred_inactive"] == 2
    replaced = score_hierarchy(o, records, on_status="replace")
    assert relation_counts(replaced) == {"exact": 2, "inactive": 1}  # 'gone' has no replacement
    assert replaced.meta["replaced_ids"] == 1
    # an inactive gold id is an input error unless asked otherwise
    gold_old = [rec(1, ["old"], ["a"])]
    with pytest.raises(InputError, match=r"'old' is deprecated.*on_status_gold"):
        score_hierarchy(o, gold_old)
    assert relation_counts(score_hierarchy(o, gold_old, on_status_gold="replace")) == {"exact": 1}


def test_family_declares_every_category():
    fam = HierarchyFamily()
    for c in ERROR_CATEGORIES:
        assert f"err_{c}" in fam.stats
    metrics = fam.finalize(dict.fromkeys(fam.stats, 0.0))
    assert metrics["hierarchical_f1"].value is None and metrics["exact_accuracy"].value is None


def test_merge_and_bootstrap(vehicles):
    a = score_hierarchy(vehicles, [rec(1, ["hatchback"], ["sedan"])])
    b = score_hierarchy(vehicles, [rec(2, ["sedan"], ["sedan"])])
    both = a.merge(b)
    assert both.metrics()["hierarchical_precision"].value == pytest.approx(3 / 4)
    ci = both.bootstrap(n_resamples=50, metrics=["hierarchical_f1"])
    # a resample is {a, a} (F1 1/2), {a, b} (3/4) or {b, b} (1); 50 draws reach both ends
    assert ci["hierarchical_f1"] == (pytest.approx(0.5), pytest.approx(1.0))


# ------------------------------------------------------------------------ HiClass reference
def _tree(levels=(4, 3, 3, 2), seed=0):
    """A 4-level tree with labels unique across levels; HiClass paths start at level 1."""
    b = OntologyBuilder("tree")
    paths = {}
    frontier = [("", [])]
    for depth, fan in enumerate(levels):
        nxt = []
        for parent, path in frontier:
            for k in range(fan):
                node = f"L{depth}{parent.replace('L', '_')}_{k}"
                b.add_node(node)
                if parent:
                    b.add_edge(node, parent)
                paths[node] = path + [node]
                nxt.append((node, path + [node]))
        frontier = nxt
    return b.build(), paths


# HiClass warns for every sample whose P and R are both 0; its macro f1 fails when
# zero_division is passed explicitly (HiClass 5.x), so the default "warn" is used there.
@pytest.mark.filterwarnings("ignore:F-score is ill-defined")
def test_matches_hiclass_on_a_tree():
    metrics = pytest.importorskip("hiclass.metrics")
    onto, paths = _tree()
    assert onto.virtual_root  # four top classes: the virtual root never counts, as in HiClass
    rng = np.random.default_rng(7)
    nodes = list(paths)
    gold = [nodes[i] for i in rng.integers(0, len(nodes), 400)]
    pred = [nodes[i] for i in rng.integers(0, len(nodes), 400)]
    for k in range(0, 400, 3):  # near misses: the parent of the gold node
        if len(paths[gold[k]]) > 1:
            pred[k] = paths[gold[k]][-2]
    for k in range(1, 400, 5):
        pred[k] = gold[k]
    width = max(len(p) for p in paths.values())
    # HiClass pitfall: y_true and y_pred must be padded ("") to the same number of levels
    pad = lambda p: p + [""] * (width - len(p))  # noqa: E731
    y_true = np.array([pad(paths[g]) for g in gold])
    y_pred = np.array([pad(paths[p]) for p in pred])
    ev = score_hierarchy(onto, [rec(i, [g], [p]) for i, (g, p) in enumerate(zip(gold, pred))])
    m = ev.metrics()
    assert m["hierarchical_precision"].value == pytest.approx(metrics.precision(y_true, y_pred), abs=1e-12)
    assert m["hierarchical_recall"].value == pytest.approx(metrics.recall(y_true, y_pred), abs=1e-12)
    assert m["hierarchical_f1"].value == pytest.approx(
        metrics.f1(y_true, y_pred, zero_division=0.0), abs=1e-12
    )
    # HiClass's "macro" is the per-sample mean: our macro_* (every sample has both sides)
    assert m["macro_hierarchical_precision"].value == pytest.approx(
        metrics.precision(y_true, y_pred, average="macro"), abs=1e-12
    )
    assert m["macro_hierarchical_recall"].value == pytest.approx(
        metrics.recall(y_true, y_pred, average="macro"), abs=1e-12
    )
    assert m["macro_hierarchical_f1"].value == pytest.approx(
        metrics.f1(y_true, y_pred, average="macro"), abs=1e-12
    )
    assert 0.2 < m["hierarchical_f1"].value < 0.9  # a non-trivial sample
