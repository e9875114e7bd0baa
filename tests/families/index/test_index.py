"""The index family and ``kg-rageval index recall``: figures worked by hand on
fixtures/index/queries.jsonl (k = 3):

* ann_recall@3 = mean(2/3, 2/3, 3/3, 1/3, 0/3) = 8/15 — q1 ids 2 of 3; q2 a repeated id counts
  once (a, b, x); q3 the tie rule (0.3005 <= 0.3 + 1e-3 counts); q4 exact ranks (1, 5, null);
  q6 returned nothing (0); q5 has no ANN ids: a missing run; q7 no section;
* stale_index_rate 1/3 (q1, q2, q3 state it); unsearchable_rate 1/4 (q3); lags 2, 4, 10 s:
  p50 = 4, mean 16/3, p99 missing (3 < 100 lags).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.runner import run_audit
from kg_rageval.base.errors import InputError
from kg_rageval.cli.main import main
from kg_rageval.families.index import min_rows_for, query_hits, score_index
from kg_rageval.families.index.exact import ann_recall, exact_knn, load_matrix
from kg_rageval.records import read_records

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "fixtures" / "index" / "queries.jsonl"
ONTO = ROOT / "ontologies" / "doid-cancer-slim.obo"


def test_record_metrics_worked_by_hand():
    ev = score_index(None, read_records(DATA), k=(3,))
    m = ev.metrics()
    assert m["ann_recall@3"].value == pytest.approx(8 / 15)
    assert m["stale_index_rate"].value == pytest.approx(1 / 3)
    assert m["unsearchable_rate"].value == pytest.approx(1 / 4)
    assert m["freshness_lag_s_p50"].value == pytest.approx(4.0)
    assert m["freshness_lag_s_mean"].value == pytest.approx(16 / 3)
    p99 = m["freshness_lag_s_p99"]
    assert p99.value is None and "at least 100 lags, found 3" in p99.missing
    assert (
        ev.unscored_counts == {"missing_prediction": 1, "no_section": 1}
        or sum(ev.unscored_counts.values()) == 2
    )
    by = ev.breakdown("slice:doc_class")
    assert by["manual"]["metrics"]["ann_recall@3"].value == pytest.approx(4 / 9)
    assert by["scan"]["metrics"]["ann_recall@3"].value == pytest.approx(2 / 3)
    assert by["scan"]["metrics"]["freshness_lag_s_p50"].value is None  # one lag: too few for a median


def test_tie_rule_and_id_rules():
    # an equally close neighbour the exact search ordered after the k-th counts (ann-benchmarks)
    assert query_hits(
        ["a", "z"], 2, exact=["a", "b"], ann_distances=[0.0, 1.0005], exact_distances=[0.0, 1.0]
    ) == (2, 2)
    assert query_hits(
        ["a", "z"], 2, exact=["a", "b"], ann_distances=[0.0, 1.0011], exact_distances=[0.0, 1.0]
    ) == (1, 2)
    assert query_hits(["a", "z"], 2, exact=["a", "b"]) == (1, 2)  # ids only: no tie credit
    assert query_hits(["a", "a", "b"], 2, exact=["a", "b"]) == (1, 2)  # a repeat in the top k is a miss
    assert query_hits(["a"], 5, exact=["a", "b"]) == (1, 2)  # index smaller than k
    assert query_hits(["a", "b"], 2, exact_ranks=[1, 3]) == (1, 2)
    assert (min_rows_for(0.5), min_rows_for(0.99)) == (2, 100)


def test_exact_search_hand_worked_and_blocked():
    v = np.array([[0, 0], [1, 0], [0, 2], [3, 3]], dtype=np.float32)
    q = np.array([[0.9, 0.1]], dtype=np.float32)
    ids, d = exact_knn(v, q, 2, "l2", block=1, query_block=1)
    assert ids.tolist() == [[1, 0]]
    assert d[0] == pytest.approx([np.hypot(0.1, 0.1), np.hypot(0.9, 0.1)])
    ids, d = exact_knn(v, q, 2, "ip")
    assert ids.tolist() == [[3, 1]] and d[0] == pytest.approx([-3.0, -0.9])
    rng = np.random.default_rng(3)
    V, Q = (
        rng.standard_normal((3000, 16)).astype(np.float32),
        rng.standard_normal((50, 16)).astype(np.float32),
    )
    full = ((Q[:, None, :].astype(float) - V[None].astype(float)) ** 2).sum(2)
    ids, _ = exact_knn(V, Q, 10, "l2", block=257, query_block=7)
    assert (ids == np.argsort(full, axis=1)[:, :10]).all()


def test_recall_against_hnswlib_known_answer():
    hnswlib = pytest.importorskip("hnswlib")
    from kg_rageval.families.index.backends import hnswlib_search

    rng = np.random.default_rng(0)
    V, Q = (
        rng.standard_normal((4000, 24)).astype(np.float32),
        rng.standard_normal((100, 24)).astype(np.float32),
    )
    ex_ids, ex_d = exact_knn(V, Q, 10, "l2")
    run = hnswlib_search(V, Q, 10, "l2", m=8, ef_construction=50, ef=10, seed=0)
    # the known answer, worked independently: the full distance matrix in float64, hnswlib's labels
    full = np.sqrt(((Q[:, None, :].astype(float) - V[None].astype(float)) ** 2).sum(2))
    kth = np.sort(full, axis=1)[:, 9]
    run_d = np.take_along_axis(full, run, axis=1)
    known = np.mean((run_d <= kth[:, None] + 1e-3).sum(axis=1) / 10)
    overlap = np.mean([len(set(r) & set(e)) / 10 for r, e in zip(run.tolist(), ex_ids.tolist())])
    res = ann_recall(V, Q, run, 10, "l2", backend="hnswlib", exact=(ex_ids, ex_d))
    assert res.recall == pytest.approx(known, abs=1e-12)
    assert (res.recall, overlap) == (pytest.approx(0.583), pytest.approx(0.581))  # 2 neighbours tie within ε
    assert 0.3 < res.recall < 1.0 and res.ci[0] <= res.recall <= res.ci[1]
    # with a large ef the graph search is (near) exact
    run = hnswlib_search(V, Q, 10, "l2", m=16, ef_construction=200, ef=400, seed=0)
    assert ann_recall(V, Q, run, 10, "l2").recall >= 0.99
    assert hnswlib is not None


def _npy(tmp_path, name, arr):
    p = tmp_path / name
    np.save(p, arr)
    return str(p)


def test_cli_recall_exit_codes_and_bad_input(tmp_path, capsys):
    rng = np.random.default_rng(1)
    v = _npy(tmp_path, "V.npy", rng.standard_normal((500, 8)).astype(np.float32))
    q = _npy(tmp_path, "Q.npy", rng.standard_normal((20, 8)).astype(np.float32))
    assert (
        main(
            [
                "index",
                "recall",
                "--vectors",
                v,
                "--queries",
                q,
                "--k",
                "5",
                "--backend",
                "numpy",
                "--min-recall",
                "0.95",
            ]
        )
        == 0
    )
    res = tmp_path / "ids.txt"
    res.write_text("\n".join("0 1 2 3 4" for _ in range(20)) + "\n")
    capsys.readouterr()
    rc = main(
        [
            "index",
            "recall",
            "--vectors",
            v,
            "--queries",
            q,
            "--k",
            "5",
            "--backend",
            "results",
            "--results",
            str(res),
            "--min-recall",
            "0.95",
            "--format",
            "json",
        ]
    )
    assert rc == 1
    assert '"passed": false' in capsys.readouterr().out
    bad = {
        "shape": _npy(tmp_path, "Qd.npy", np.zeros((3, 7), dtype=np.float32)),
        "nan": _npy(tmp_path, "Qn.npy", np.array([[np.nan] * 8], dtype=np.float32)),
        "dtype": _npy(tmp_path, "Qi.npy", np.zeros((3, 8), dtype=np.int64)),
    }
    for kind, path in bad.items():
        capsys.readouterr()
        assert main(["index", "recall", "--vectors", v, "--queries", path, "--backend", "numpy"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and Path(path).name in err and "queries" in err, (kind, err)
    with pytest.raises(InputError, match="row 0 holds a NaN"):
        load_matrix(bad["nan"], "queries")


def test_index_gates_in_the_audit(tmp_path):
    gates = [
        "index.ann_recall@3 >= 0.95",
        "index.ann_recall@3[slice:doc_class=scan] >= 0.5",
        "index.freshness_lag_s_p50 <= 5",
        "index.freshness_lag_s_p99 <= 60",
        "index.stale_index_rate <= 0.5",
    ]
    cfg = config_from_mapping(
        {
            "ontology": str(ONTO),
            "records": str(DATA),
            "families": {"index": {"k": [3]}},
            "gates": gates,
            "min_rows": 1,
            "missing_runs": {"budgets": {"index": 0.5}},
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    by = {str(r.gate): r for r in res.gate_results}
    g = by["index.ann_recall@3 >= 0.95"]
    assert (g.status, g.observed) == ("fail", pytest.approx(8 / 15))
    assert by["index.ann_recall@3[slice:doc_class=scan] >= 0.5"].status == "pass"
    assert by["index.freshness_lag_s_p50 <= 5"].status == "pass"
    assert by["index.freshness_lag_s_p99 <= 60"].status == "missing"
    assert by["index.stale_index_rate <= 0.5"].status == "pass"
    assert res.exit_code == 1
