"""``kg_rageval.results.forms`` against the loop it replaces: every metric of every audited family on
many rows of summed stats equals ``finalize`` row by row; bootstrap replicates and paired
deltas equal a ``finalize`` per resample over the same weights (bit for bit); failure drivers
and per-node roll-ups equal the finalized full roll-up."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kg_rageval.results.bootstrap import bootstrap_weights
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.forms import metric_forms, metric_values, replicate_values
from kg_rageval.results.metric import Metric, named, ratio

AUDIT = Path(__file__).resolve().parents[2] / "fixtures" / "audit"


@pytest.fixture(scope="module")
def audit_result():
    from kg_rageval.audit.config import load_config
    from kg_rageval.audit.runner import run_audit

    return run_audit(load_config(AUDIT / "real.yaml"), progress=False)


def _evaluations(res):
    for fam, run in res.families.items():
        for ev in run.evaluations:
            if len(ev):
                yield fam, ev


def _matrix(ev):
    ids, per = ev.per_record_stats()
    names = list(per)
    return ids, names, np.stack([per[k] for k in names], axis=1)


def _loop_replicates(ev, n_resamples, seed):
    """The previous implementation: one finalize per resample."""
    ids, names, mat = _matrix(ev)
    out = {m: np.full(n_resamples, np.nan) for m in ev.metrics()}
    for lo, w in bootstrap_weights(len(ids), n_resamples, seed):
        for j, row in enumerate((w @ mat).tolist()):
            res = ev.family.finalize(dict(zip(names, row)))
            for m in out:
                if res[m].value is not None:
                    out[m][lo + j] = res[m].value
    return out


def test_metric_values_equal_finalize_per_row(audit_result):
    n_forms = 0
    for fam, ev in _evaluations(audit_result):
        _, names, mat = _matrix(ev)
        metrics = list(ev.metrics())
        got = metric_values(ev.family.finalize, names, mat, metrics)
        forms = metric_forms(ev.family.finalize, names, metrics, mat[:3])
        n_forms += sum(f is not None for m, f in forms.items() if m in metrics)
        for j in range(len(mat)):
            res = ev.family.finalize(dict(zip(names, mat[j].tolist())))
            for m in metrics:
                v, d = got[m][0][j], got[m][1][j]
                if res[m].value is None:
                    assert np.isnan(v), (fam, m, j)
                else:
                    assert v == pytest.approx(res[m].value, rel=1e-12, abs=1e-12), (fam, m, j)
                if res[m].denominator is not None and res[m].value is not None:
                    assert d == pytest.approx(res[m].denominator), (fam, m, j)
    assert n_forms > 50  # most metrics are vectorised, not finalized row by row


def test_bootstrap_replicates_equal_the_loop_bit_for_bit(audit_result):
    for fam, ev in _evaluations(audit_result):
        want = _loop_replicates(ev, 200, 7)
        got = ev.bootstrap_replicates(n_resamples=200, seed=7)
        for m in want:
            assert np.array_equal(want[m], got[m], equal_nan=True), (fam, m)


class Gated(Family):
    """Precision defined only with >= 12 predictions (not a ratio form), an F1, a count."""

    name = "gated"
    stats = ("tp", "n_pred", "n_gold")

    def finalize(self, s):
        p = ratio("precision", s["tp"], s["n_pred"], missing="no predictions")
        if s["n_pred"] < 12:
            p = Metric("precision", None, missing="fewer than 12 predictions")
        r = ratio("recall", s["tp"], s["n_gold"], missing="no gold")
        f = 0.0 if not (p.value or r.value) else None
        return named(
            p,
            r,
            Metric(
                "f1",
                None
                if p.value is None
                else (f if f is not None else 2 * p.value * r.value / (p.value + r.value)),
            ),
            Metric("tp", s["tp"]),
        )


def test_non_ratio_metrics_fall_back_to_finalize():
    rng = np.random.default_rng(3)
    n = 10  # about 10 predictions per resample: precision is missing in a part of them
    stats = {"tp": rng.integers(0, 2, n), "n_pred": rng.integers(0, 3, n), "n_gold": np.ones(n)}
    ev = Evaluation(Gated(), [f"r{i}" for i in range(n)], stats)
    _, names, mat = _matrix(ev)
    forms = metric_forms(ev.family.finalize, names, ["precision", "recall", "f1", "tp"], mat[:3])
    assert forms["precision"] is None and forms["f1"] is None  # thresholded: no form
    assert forms["recall"].kind == "ratio" and forms["tp"].kind == "linear"
    want = _loop_replicates(ev, 300, 1)
    got = ev.bootstrap_replicates(n_resamples=300, seed=1)
    for m in want:
        assert np.array_equal(want[m], got[m], equal_nan=True), m
    assert np.isnan(got["precision"]).any() and not np.isnan(got["precision"]).all()


def test_paired_replicates_use_the_same_draws(audit_result):
    ev = audit_result.families["hierarchy"].evaluations[0]
    _, names, mat = _matrix(ev)
    other = mat[::-1].copy()
    wanted = ["hierarchical_f1", "exact_accuracy"]
    a, b = replicate_values(ev.family.finalize, names, [mat, other], wanted, 100, 2, bootstrap_weights)
    alone = replicate_values(ev.family.finalize, names, [other], wanted, 100, 2, bootstrap_weights)[0]
    ref = ev.bootstrap_replicates(n_resamples=100, seed=2, metrics=["hierarchical_f1", "exact_accuracy"])
    for m in ("hierarchical_f1", "exact_accuracy"):
        assert np.array_equal(a[m], ref[m], equal_nan=True)
        assert np.array_equal(b[m], alone[m], equal_nan=True)


def test_failure_drivers_and_node_rollups_equal_the_finalized_rollup(audit_result):
    from kg_rageval.audit.pernode import node_metric, node_rollups

    onto = audit_result.ontology
    checked = 0
    for _fam, ev in _evaluations(audit_result):
        if "gold_node" not in ev.keys:
            continue
        full = ev.rollup(onto)
        for metric in list(ev.metrics())[:12]:
            kept, n_rows, values, den = node_metric(ev, onto, metric)
            assert [onto.ids[i] for i in kept.tolist()] == list(full)
            for j, nid in enumerate(full):
                m = full[nid]["metrics"][metric]
                assert n_rows[j] == full[nid]["n"]
                if m.value is None:
                    assert np.isnan(values[j])
                else:
                    assert values[j] == m.value  # the same floats
                    checked += 1
    assert checked > 100
    nodes = node_rollups(audit_result.families, onto)
    for fam, ev in _evaluations(audit_result):
        if "gold_node" not in ev.keys:
            continue
        for nid, row in ev.rollup(onto).items():
            for m, val in row["metrics"].items():
                assert nodes[nid]["metrics"][f"{fam}.{m}"] == val.value


class Acc(Family):
    name = "acc_family"
    stats = ("a", "b")

    def finalize(self, s):
        return named(ratio("acc", s["a"], s["b"], missing="no rows"), Metric("a", s["a"]))


class Drifting(Family):
    """A ratio on every probe (the total, single records, basis vectors), not on resamples
    whose ratio is above the total's: its form passes the probes and fails the first block."""

    name = "drifting"
    stats = ("a", "b")

    def __init__(self, t):
        self.t = t

    def finalize(self, s):
        v = ratio("acc", s["a"], s["b"], missing="no rows")
        if s["b"] > 10 and v.value is not None and v.value > self.t:
            v = Metric("acc", v.value + 1e-3, v.numerator, v.denominator)
        return named(v)


def _acc_ev(family, n, seed):
    rng = np.random.default_rng(seed)
    return Evaluation(
        family, [f"r{i}" for i in range(n)], {"a": rng.integers(0, 2, n).astype(float), "b": np.ones(n)}
    )


def _counting_weights(monkeypatch):
    import kg_rageval.results.evaluation as evaluation

    calls = []
    orig = evaluation.bootstrap_weights

    def counting(n, n_resamples, seed):
        calls.append(n)
        yield from orig(n, n_resamples, seed)

    monkeypatch.setattr(evaluation, "bootstrap_weights", counting)
    return calls


def test_bootstrap_many_draws_once_per_number_of_records(monkeypatch):
    """Evaluations with the same number of records share one pass over the weights; every
    interval equals the evaluation's own bootstrap (and the per-resample loop) bit for bit; a
    job whose form fails on the first block is computed again alone, without it."""
    from kg_rageval.results.evaluation import bootstrap_many

    e1, e2, e3 = _acc_ev(Acc(), 400, 1), _acc_ev(Acc(), 400, 2), _acc_ev(Acc(), 250, 3)
    base = _acc_ev(Acc(), 400, 4)
    e4 = Evaluation(Drifting(base.metrics()["acc"].value), base.record_ids, base.stats)
    _, names, mat = _matrix(e4)
    assert (
        metric_forms(e4.family.finalize, names, ["acc"], np.vstack([mat.sum(axis=0), mat[:5]]))["acc"]
        is not None
    )
    evs = (e1, e2, e3, e4)
    want = [e.bootstrap(n_resamples=300, seed=3) for e in evs]
    loops = [_loop_replicates(e, 300, 3) for e in evs]
    for e, loop in zip(evs, loops):
        reps = e.bootstrap_replicates(n_resamples=300, seed=3)
        assert all(np.array_equal(reps[m], loop[m], equal_nan=True) for m in loop)
    calls = _counting_weights(monkeypatch)
    got = bootstrap_many([(e1, None), (e2, ["acc"]), (e3, None), (e4, None)], n_resamples=300, seed=3)
    assert got == [want[0], {"acc": want[1]["acc"]}, want[2], want[3]]
    assert sorted(calls) == [250, 400, 400]  # 400: e1, e2 and e4 at once, then e4 alone without its form
    assert bootstrap_many([], n_resamples=10) == []
    with pytest.raises(Exception, match="level"):
        bootstrap_many([(e1, None)], level=1.5)


def test_gate_metrics_equal_metric_for_gate_with_one_draw_per_number_of_records(monkeypatch):
    from types import SimpleNamespace

    from kg_rageval.audit.evidence import MetricIndex, gate_metrics, metric_for_gate
    from kg_rageval.audit.families import FamilyRun
    from kg_rageval.audit.gates import parse_gate

    runs = {
        "hierarchy": FamilyRun("hierarchy", "ran", evaluations=[_acc_ev(Acc(), 400, 1)]),
        "retrieval": FamilyRun("retrieval", "ran", evaluations=[_acc_ev(Acc(), 400, 2)]),
        "linking": FamilyRun("linking", "ran", evaluations=[_acc_ev(Acc(), 20, 3)]),
    }
    gates = [
        parse_gate(t)
        for t in (
            "ci_low(hierarchy.acc) >= 0.4",
            "ci_high(hierarchy.acc) <= 0.9",
            "ci_low(retrieval.acc) >= 0.45",
            "retrieval.acc >= 0.5",
            "ci_low(linking.acc) >= 0.1",
            "ci_low(retrieval.nope) >= 0.1",
        )
    ]
    boot = SimpleNamespace(n_resamples=300, level=0.95, seed=3, min_units=30, method="auto", methods={})
    index = MetricIndex(runs)
    want_methods: dict = {}
    want = [metric_for_gate(g, index, None, boot, {}, ci_methods=want_methods) for g in gates]
    calls = _counting_weights(monkeypatch)
    methods: dict = {}
    got = gate_metrics(gates, index, None, boot, {}, ci_methods=methods)
    assert got == want and methods == want_methods
    assert calls == [400]  # hierarchy and retrieval (400 records each) from one pass; linking: too few units
    assert got[0].ci is not None and got[0].ci == got[1].ci and got[3].ci is None
    assert "resampling units" in got[4].missing and "no family produced" in got[5].missing


def test_resampled_sums_run_on_one_blas_thread():
    """Every block of resampled sums is computed with numpy's BLAS on one thread, whatever the
    caller's setting: the bits of a sum do not depend on the machine's BLAS threads, and the
    short, wide weight blocks avoid OpenBLAS's slow threaded split of that shape. The values
    are those of the one-thread product ``weights @ stats`` (a metric that is one stat)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from kg_rageval.results.forms import Replicates, replicate_jobs

    rng = np.random.default_rng(2)
    n = 5_000
    mat = np.stack([rng.integers(0, 3, n) / 3.0, rng.integers(1, 4, n).astype(float)], axis=1)
    seen: list[int] = []

    def weights_of(n_rows, n_resamples, seed):
        for lo, w in bootstrap_weights(n_rows, n_resamples, seed):
            seen.extend(
                p["num_threads"]
                for p in threadpool_info()  # numpy's own BLAS (not scipy's)
                if p["user_api"] == "blas" and "numpy" in p["filepath"]
            )
            yield lo, w

    def finalize(s):
        return {"a_sum": Metric("a_sum", s["a"])}

    with threadpool_limits(2, user_api="blas"):
        got = replicate_jobs([Replicates(finalize, ["a", "b"], [mat], ["a_sum"])], 40, 3, weights_of)
    if not seen:
        pytest.skip("numpy's BLAS is not a library threadpoolctl finds under numpy's folder")
    assert set(seen) == {1}
    with threadpool_limits(1, user_api="blas"):
        want = np.concatenate([w @ mat[:, 0] for _, w in bootstrap_weights(n, 40, 3)])
    assert got[0][0]["a_sum"].tobytes() == want.tobytes()
