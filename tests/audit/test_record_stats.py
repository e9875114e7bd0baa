"""The audit stages' per-record stats view (:class:`kg_rageval.results.record_stats.RecordStats`) against
the stacked matrix of every stat it replaces: the same per-record sums, probe rows, bootstrap
intervals, per-record metric values, failing records and failure drivers, bit for bit — on
rows one per record in id order (no row index kept), on several rows per record out of order,
on a gate's scope of rows, and on the bundled audit fixture."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kg_rageval.results.evaluation import Evaluation, bootstrap_many
from kg_rageval.results.family import Family
from kg_rageval.results.forms import _sample_rows, metric_values
from kg_rageval.results.metric import Metric, named, ratio
from kg_rageval.results.record_stats import RecordStats, sequential_sum

AUDIT = Path(__file__).resolve().parents[2] / "fixtures" / "audit"


class Mix(Family):
    """Ratios of one stat, of two stats summed (``a + b``), of a difference (``a - c``) and of
    three stats (the stacked-matrix fallback), and a count."""

    name = "mix"
    stats = ("a", "b", "c", "n", "flag")

    def finalize(self, s):
        return named(
            ratio("ra", s["a"], s["n"], missing="no rows"),
            ratio("rab", s["a"], s["a"] + s["b"], missing="no a or b"),
            ratio("rdiff", s["a"] - s["c"], s["n"], missing="no rows"),
            ratio("r3", s["a"], s["a"] + s["b"] + 0.5 * s["c"], missing="none"),
            Metric("flags", s["flag"]),
        )


def _mix(n_rows: int, ids, seed: int = 0) -> Evaluation:
    rng = np.random.default_rng(seed)
    stats = {
        "a": rng.random(n_rows) * rng.integers(0, 2, n_rows),
        "b": rng.random(n_rows) / 3,
        "c": -rng.random(n_rows),
        "n": np.ones(n_rows),
        "flag": rng.random(n_rows) < 0.3,
    }
    return Evaluation(Mix(), list(ids), stats)


def _matrix(ev: Evaluation):
    ids, per = ev.per_record_stats()
    names = list(per)
    return ids, names, np.stack([per[k] for k in names], axis=1)


def _cases():
    yield "one row per record, in order", _mix(400, [f"r{i:04d}" for i in range(400)])
    rng = np.random.default_rng(5)
    yield "rows per record out of order", _mix(900, [f"r{int(i)}" for i in rng.integers(0, 300, 900)], 1)
    yield "integer ids sorted as text", _mix(120, list(range(120)), 2)


@pytest.mark.parametrize("case", list(range(3)))
def test_view_equals_per_record_stats(case):
    label, ev = list(_cases())[case]
    ids, names, mat = _matrix(ev)
    view = ev.record_stats()
    assert view is ev.record_stats()  # cached on the evaluation
    assert len(view) == len(ids) and view.names == names
    assert view.ids().tolist() == ids.tolist(), label
    for j, k in enumerate(names):
        assert np.array_equal(view.column(k), mat[:, j]), (label, k)
    assert np.array_equal(view.matrix(), mat)
    assert np.array_equal(view.probe_rows(), _sample_rows(mat)), label
    assert np.array_equal(view.rows_at([0, 7, len(ids) - 1]), mat[[0, 7, len(ids) - 1]])
    for j in (0, len(ids) // 2, len(ids) - 1):
        rows = view.record_rows(j)
        assert set(ev.record_ids[rows].astype(str)) == {ids[j]}
        assert len(rows) == int((ev.record_ids.astype(str) == ids[j]).sum())
    w = np.random.default_rng(0).integers(0, 3, len(ids)).astype(float)
    assert np.allclose(view.resampled(w), w @ mat, rtol=1e-12)
    ev.drop_record_stats()
    assert ev.record_stats() is not view


@pytest.mark.parametrize("case", list(range(3)))
def test_scoped_view_equals_the_subset(case):
    label, ev = list(_cases())[case]
    mask = np.random.default_rng(9).random(len(ev)) < 0.4
    sub_ids, names, sub_mat = _matrix(ev.subset(mask))
    view = RecordStats(ev, np.flatnonzero(mask))
    assert view.ids().tolist() == sub_ids.tolist(), label
    assert np.array_equal(view.matrix(), sub_mat)
    assert np.array_equal(view.probe_rows(), _sample_rows(sub_mat))
    rows = view.record_rows(len(view) - 1)
    assert mask[rows].all() and set(ev.record_ids[rows].astype(str)) == {sub_ids[-1]}


@pytest.mark.parametrize("case", list(range(3)))
def test_metric_values_and_bootstrap_on_the_view_are_the_matrix_bits(case):
    label, ev = list(_cases())[case]
    ids, names, mat = _matrix(ev)
    metrics = list(ev.metrics())
    want = metric_values(ev.family.finalize, names, mat, metrics)
    got = metric_values(ev.family.finalize, names, ev.record_stats(), metrics)
    for m in metrics:
        assert np.array_equal(want[m][0], got[m][0], equal_nan=True), (label, m)
        assert np.array_equal(want[m][1], got[m][1], equal_nan=True), (label, m)
    old = bootstrap_many([(ev, None, ev.per_record_stats())], n_resamples=200, seed=3)[0]
    new = bootstrap_many([(ev, None)], n_resamples=200, seed=3)[0]
    assert old == new and all(v is not None for v in new.values()), label
    # the view reads the stats its forms need, not every stat (the three-stat ratio stacks)
    ev.drop_record_stats()
    view = ev.record_stats()
    assert view.keep and not RecordStats(ev).keep
    metric_values(ev.family.finalize, names, view, ["ra", "rdiff"])
    assert set(view._cols) <= {"a", "c", "n"}


def test_sequential_sum_is_the_stacked_column_sum():
    rng = np.random.default_rng(2)
    cols = [rng.random(200_003) * 10.0**e for e in (-3, 0, 5)]
    assert [sequential_sum(c) for c in cols] == np.stack(cols, axis=1).sum(axis=0).tolist()
    assert sequential_sum(np.zeros(0)) == 0.0


def test_evaluation_pickles_without_its_view():
    import pickle

    _, ev = next(_cases())
    ev.record_stats().column("a")
    back = pickle.loads(pickle.dumps(ev))
    assert "_record_stats" not in back.__dict__ and back.totals() == ev.totals()


@pytest.mark.slow
def test_audit_fixture_failing_records_and_intervals_equal_the_stacked_path():
    """The bundled audit: every failing gate's per-record values from the view equal those
    of the stacked matrix, its listed records are the worst by deficit, and the bootstrap
    intervals equal those from ``per_record_stats`` (no view left on the evaluations)."""
    from kg_rageval.audit.config import load_config
    from kg_rageval.audit.failing import per_record_values
    from kg_rageval.audit.runner import run_audit

    res = run_audit(load_config(AUDIT / "real.yaml"), progress=False)
    for run in res.families.values():
        for ev in run.evaluations:
            assert "_record_stats" not in ev.__dict__
            if not len(ev):
                continue
            ids, names, mat = _matrix(ev)
            for m in ev.metrics():
                a = per_record_values(ev.family.finalize, m, names, mat)
                b = per_record_values(ev.family.finalize, m, names, ev.record_stats())
                assert (a[0] is None) == (b[0] is None), m
                if a[0] is not None:
                    assert np.array_equal(a[0], b[0], equal_nan=True) and np.array_equal(a[1], b[1]), m
            old = bootstrap_many([(ev, None, ev.per_record_stats())], n_resamples=50, seed=1)[0]
            assert bootstrap_many([(ev, None)], n_resamples=50, seed=1)[0] == old
            ev.drop_record_stats()
    listed = [
        f
        for f in res.failing
        if f["records"]
        and f["records"][0].get("deficit") is not None
        and f["metric"]
        and not f["metric"].startswith("delta:")
    ]
    assert listed
    for f in listed:
        d = [e["deficit"] for e in f["records"]]
        assert d == sorted(d, reverse=True)


def test_rollup_sums_leave_out_negative_nodes_as_a_mask_does():
    from kg_rageval.ontology import load_ontology
    from kg_rageval.results.rollup import rollup_sums

    onto = load_ontology(
        Path(__file__).resolve().parents[2] / "ontologies" / "enterprise-attack-18.1.json.gz"
    )
    rng = np.random.default_rng(4)
    n = 5000
    node = rng.integers(0, len(onto), n)
    node[rng.random(n) < 0.2] = -1
    cols = [rng.random(n) * 7, rng.random(n) < 0.5]
    keep = np.ones(len(onto), dtype=bool)
    ok = node >= 0
    want = rollup_sums(onto, node[ok], [c[ok] for c in cols], keep)
    got = rollup_sums(onto, node, cols, keep)
    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])
    empty = rollup_sums(onto, np.full(4, -1), [np.ones(4)], keep)
    assert empty[0].size == 0 and empty[1].shape == (0, 2)


def test_two_term_projections_are_the_matrix_product_bits():
    from kg_rageval.results.forms import Projection, metric_forms

    _, ev = list(_cases())[1]
    ev.stats["a"][:5] = -0.0
    _, names, mat = _matrix(ev)
    metrics = list(ev.metrics())
    forms = metric_forms(ev.family.finalize, names, metrics, _sample_rows(mat))
    proj = Projection(forms, metrics)
    assert any(len(np.flatnonzero(v)) == 2 for v in proj.vectors)  # a + b and a - c
    stats = [ev.stats[k] for k in names]
    for got, want in zip(proj.columns_of(stats), proj.columns(np.stack(stats, axis=1))):
        assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
    assert np.array_equal(proj.matrix_of(ev.record_stats(), names), proj.matrix(mat))


def test_worst_first_is_the_sorted_head():
    from kg_rageval.audit.failing import worst_first

    rng = np.random.default_rng(8)
    n = 3000
    deficit = rng.integers(0, 4, n) / 4.0  # many ties: the ids decide
    ids = np.asarray([f"r{int(i):05d}" for i in rng.permutation(n)])
    driving = np.flatnonzero(deficit > 0)
    for limit in (1, 7, 50, n):
        want = sorted(driving.tolist(), key=lambda j: (-deficit[j], ids[j]))[:limit]
        assert worst_first(deficit, driving, ids.__getitem__, limit) == want


def test_a_bootstrap_call_alone_keeps_no_view_on_the_evaluation():
    _, ev = list(_cases())[1]
    ev.drop_record_stats()
    got = ev.bootstrap(n_resamples=100, seed=4)
    assert "_record_stats" not in ev.__dict__
    view = ev.record_stats()  # the audit's shared view keeps what a stage reads
    assert bootstrap_many([(ev, None, view)], n_resamples=100, seed=4)[0] == got
    assert view._cols and set(view._cols) <= set(ev.family.stats)


def test_assert_gates_leaves_no_view_on_the_callers_evaluation():
    from kg_rageval.pytest_plugin import GateFailure, assert_gates

    _, ev = next(iter(_cases()))
    with pytest.raises(GateFailure, match=r"ci_low 0\.\d+ .*violates >= 0\.99"):
        assert_gates(ev, ["ci_low(ra) >= 0.99"])
    assert "_record_stats" not in ev.__dict__
