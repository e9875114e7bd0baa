"""The DuckDB window store (kg_rageval.monitor.store): sums, re-ingest, schema version."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("duckdb", reason="the window store needs the monitor extra (duckdb)")

from kg_rageval.base.errors import InputError
from kg_rageval.monitor.store import WindowStore, ingest
from kg_rageval.monitor.traffic import NIL_BRANCH
from kg_rageval.ontology import load_ontology


@pytest.fixture(scope="module")
def onto(fixtures_dir):
    return load_ontology(fixtures_dir / "hierarchy" / "vehicles.obo")


def _traffic(tmp_path, onto, name="t.jsonl"):
    leaves = sorted(n for n in onto.ids if onto.depth(n) >= 2)
    a, b = leaves[0], leaves[-1]
    rows = [
        {
            "id": "1",
            "timestamp": "2026-11-02T01:00:00Z",
            "labels": {"predicted": [a]},
            "intent": "x",
            "slices": {"lang": "nl"},
            "feedback": {"thumbs": "down", "regenerated": True},
            "system": {"latency_ms": {"total": 100}, "cost_usd": 0.5},
            "embedding": [0.0, 1.0],
            "embedding_model": "m@1",
        },
        {
            "id": "2",
            "timestamp": "2026-11-02T02:00:00Z",
            "labels": {"predicted": [a]},
            "intent": "x",
            "feedback": {"thumbs": "up"},
            "system": {"latency_ms": {"total": 300}},
            "answer": {"refused": True},
            "embedding": [1.0, 1.0],
            "embedding_model": "m@1",
        },
        {
            "id": "3",
            "timestamp": "2026-11-02T03:00:00Z",
            "labels": {"predicted": []},
            "intent": "y",
            "system": {"latency_ms": {"total": 200}, "cost_usd": 0.25},
        },
        {"id": "4", "timestamp": "2026-11-03T03:00:00Z", "labels": {"predicted": [b]}, "intent": "y"},
        {"id": "5", "timestamp": "2026-11-03T04:00:00Z", "labels": {"predicted": "NOPE:1"}},
    ]
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p, a, b


def test_sums_concepts_latency_and_reservoir(tmp_path, onto):
    p, a, b = _traffic(tmp_path, onto)
    with WindowStore(tmp_path / "s.duckdb") as st:
        summary = ingest(st, p, onto, window="1d")
        assert summary.windows == {"2026-11-02T00:00:00Z": 3, "2026-11-03T00:00:00Z": 2}
        d1 = "2026-11-02T00:00:00Z"
        tot = st.sums([d1], by=())[0]
        assert (tot["n"], tot["nil"], tot["thumbs_down"], tot["thumbs_up"]) == (3, 1, 1, 1)
        assert (tot["regenerated"], tot["refused"], tot["latency_n"], tot["latency_sum"]) == (1, 1, 3, 600.0)
        assert (tot["cost_n"], tot["cost_sum"]) == (2, 0.75)
        by_slice = {r["slice"]: r["n"] for r in st.sums([d1], by=("slice",))}
        assert by_slice == {"(all)": 3, "lang=nl": 1}
        # merge of two windows
        both = st.sums(st.windows(), by=())[0]
        assert (both["n"], both["nil"], both["unknown"]) == (5, 1, 1)
        branch_a = onto.ancestors(a)
        counts = st.branch_counts(d1)
        assert counts[NIL_BRANCH] == 1 and sum(counts.values()) == 3
        assert next(k for k in counts if k != NIL_BRANCH) in branch_a
        assert sum(n for (_, c), n in st.concept_counts(d1).items() if c == a) == 2
        # exact quantile of 100, 300, 200: median 200, p95 = 200 + 0.9*100
        q = st.latency_quantiles([d1], (0.5, 0.95))
        assert q[0.5] == 200.0 and q[0.95] == pytest.approx(290.0)
        emb, model = st.embeddings(d1)
        assert model == "m@1" and emb.shape == (2, 2)
        assert sorted(map(tuple, emb.tolist())) == [(0.0, 1.0), (1.0, 1.0)]


def test_reingest_refused_or_replaced_never_double_counted(tmp_path, onto):
    p, _, _ = _traffic(tmp_path, onto)
    path = tmp_path / "s.duckdb"
    with WindowStore(path) as st:
        ingest(st, p, onto)
        with pytest.raises(InputError, match="already in the store"):
            ingest(st, p, onto)
        assert st.sums(st.windows(), by=())[0]["n"] == 5  # the refused ingest left nothing
        s = ingest(st, p, onto, replace=True)
        assert s.replaced == ("2026-11-02T00:00:00Z", "2026-11-03T00:00:00Z")
        assert st.sums(st.windows(), by=())[0]["n"] == 5


def test_reservoir_is_bounded_seeded_and_order_free(tmp_path, onto):
    leaf = sorted(n for n in onto.ids if onto.depth(n) >= 2)[0]
    rng = np.random.default_rng(1)
    rows = [
        {
            "id": f"r{i}",
            "timestamp": "2026-11-02T01:00:00Z",
            "labels": {"predicted": [leaf]},
            "embedding": rng.normal(size=3).tolist(),
            "embedding_model": "m@1",
        }
        for i in range(50)
    ]
    p1, p2 = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    p1.write_text("".join(json.dumps(r) + "\n" for r in rows))
    p2.write_text("".join(json.dumps(r) + "\n" for r in reversed(rows)))
    got = []
    for i, p in enumerate((p1, p2)):
        with WindowStore(tmp_path / f"s{i}.duckdb") as st:
            ingest(st, p, onto, reservoir=10, seed=3)
            got.append(st.embeddings("2026-11-02T00:00:00Z")[0])
    assert got[0].shape == (10, 3)
    np.testing.assert_array_equal(got[0], got[1])


def test_newer_schema_is_a_clear_error(tmp_path, onto):
    import duckdb

    path = tmp_path / "s.duckdb"
    WindowStore(path).close()
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(InputError, match="newer kg-rageval .*schema 99"):
        WindowStore(path)
    other = tmp_path / "o.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE t (x INT)")
    con.close()
    with pytest.raises(InputError, match="not a window store"):
        WindowStore(other)
