"""The bounded, one-pass roll-up (``Evaluation.rollup`` with ``max_depth`` / ``nodes``) equals
the full roll-up on the nodes it keeps, and the full roll-up equals an independent reference:
the transposed ancestor-closure matrix times the per-node sums (scipy.sparse), the algorithm
the roll-up used before it was bounded."""

from __future__ import annotations

import numpy as np
import pytest

from kg_rageval.base.resources import bundled_ontology
from kg_rageval.families.hierarchy import score_hierarchy
from kg_rageval.ontology import load_ontology
from kg_rageval.results import rollup as rollup_mod
from kg_rageval.results.metric import LazyMetrics


@pytest.fixture(scope="module")
def doid():
    return load_ontology(bundled_ontology("doid-cancer-slim.obo"))


@pytest.fixture(scope="module")
def scored(doid):
    rng = np.random.default_rng(11)
    n = len(doid)
    g = rng.integers(1, n, 3000)
    p = rng.integers(1, n, 3000)
    p[:800] = g[:800]  # some exact hits
    ids = doid.ids
    records = [
        {"id": f"r{i}", "labels": {"gold": [ids[a]], "pred": [ids[b]]}}
        for i, (a, b) in enumerate(zip(g.tolist(), p.tolist()))
    ]
    records += [{"id": "bad", "labels": {"gold": ["DOID:nope"], "pred": [ids[1]]}}]
    return score_hierarchy(doid, records[:-1])


def reference_rollup(ev, onto):
    """{node: (n, {stat: sum})} by the closure-matrix product over every node."""
    from scipy import sparse

    node = ev.node_indices(onto)
    ok = node >= 0
    nn = len(onto)
    names = list(ev.stats)
    own = np.stack(
        [np.bincount(node[ok], minlength=nn).astype(float)]
        + [np.bincount(node[ok], weights=ev.stats[k][ok], minlength=nn) for k in names],
        axis=1,
    )
    closure = sparse.csr_matrix((np.ones(len(onto.anc_idx)), onto.anc_idx, onto.anc_ptr), shape=(nn, nn))
    pooled = np.asarray(closure.T @ own)
    return {
        onto.ids[i]: (int(round(pooled[i, 0])), dict(zip(names, pooled[i, 1:].tolist())))
        for i in np.flatnonzero(pooled[:, 0]).tolist()
    }


def values(ms):
    return {k: (m.value, m.numerator, m.denominator, m.missing) for k, m in ms.items()}


def close(a, b):
    """Same metric names, missing reasons and numbers (to 1e-12: sums in another order)."""
    assert a.keys() == b.keys()
    for k in a:
        for x, y in zip(a[k], b[k]):
            assert (x == pytest.approx(y, rel=1e-12, abs=1e-12)) if isinstance(x, float) else x == y, k
    return True


def test_full_rollup_equals_reference(doid, scored):
    roll = scored.rollup(doid)
    ref = reference_rollup(scored, doid)
    assert list(roll) == [i for i in doid.ids if i in ref]  # topological (index) order, same nodes
    fin = scored.family.finalize
    for nid, g in roll.items():
        n, sums = ref[nid]
        assert g["n"] == n
        assert g["depth"] == int(doid.depth_min[doid.index(nid)])
        assert values(g["metrics"]) == values(fin(sums))  # same summation order: same floats
    assert roll[doid.root_id]["n"] == len(scored)


@pytest.mark.parametrize("max_depth", [0, 1, 2, 4])
def test_bounded_rollup_equals_full_on_kept_nodes(doid, scored, max_depth):
    full = scored.rollup(doid)
    bounded = scored.rollup(doid, max_depth=max_depth)
    want = {k: g for k, g in full.items() if g["depth"] <= max_depth}
    assert list(bounded) == list(want)
    for nid, g in bounded.items():
        assert (g["n"], g["depth"]) == (want[nid]["n"], want[nid]["depth"])
        assert values(g["metrics"]) == values(want[nid]["metrics"])


def test_rollup_of_requested_nodes(doid, scored):
    full = scored.rollup(doid, min_rows=5)
    picked = list(full)[::7] + [doid.ids[-1]]
    got = scored.rollup(doid, nodes=picked, min_rows=5)
    want = {k: g for k, g in full.items() if k in set(picked)}
    assert list(got) == list(want) and len(got) >= 3
    for nid, g in got.items():
        assert g["n"] == want[nid]["n"]
        assert values(g["metrics"]) == values(want[nid]["metrics"])
    with pytest.raises(Exception, match="DOID:nope"):
        scored.rollup(doid, nodes=["DOID:nope"])


def test_chunked_rollup_equals_one_chunk(doid, scored, monkeypatch):
    full = scored.rollup(doid)
    monkeypatch.setattr(rollup_mod, "_ROLLUP_CHUNK", 7)
    chunked = scored.rollup(doid)
    assert list(chunked) == list(full)
    for nid, g in chunked.items():  # the same floats: sums are added in one order
        assert g["n"] == full[nid]["n"]
        assert values(g["metrics"]) == values(full[nid]["metrics"])


def test_rollup_metrics_are_finalized_only_when_read(doid, scored, monkeypatch):
    calls = []
    real = scored.family.finalize

    def counting(sums):
        calls.append(1)
        return real(sums)

    monkeypatch.setattr(scored.family, "finalize", counting)
    roll = scored.rollup(doid)
    assert len(roll) > 50 and calls == []
    root = roll[doid.root_id]["metrics"]
    assert isinstance(root, LazyMetrics)
    assert root["hierarchical_f1"].value == pytest.approx(scored.metrics()["hierarchical_f1"].value)
    _ = root["exact_accuracy"], len(root), list(root)
    assert len(calls) == 2  # one for scored.metrics(), one for the root, cached after
    assert close(values(dict(root)), values(scored.metrics()))  # np.sum vs bincount order


def test_confused_pairs_equal_the_full_sort(doid):
    """The top-k selection gives what sorting every pair gave (ties in first-seen order)."""
    from collections import Counter

    from kg_rageval.families.hierarchy import confused_pairs

    rng = np.random.default_rng(5)
    ids = doid.ids
    g = rng.integers(1, 40, 4000)
    p = rng.integers(1, 40, 4000)
    ev = score_hierarchy(
        doid,
        [
            {"id": f"r{i}", "labels": {"gold": [ids[a]], "pred": [ids[b]]}}
            for i, (a, b) in enumerate(zip(g.tolist(), p.tolist()))
        ],
        on_status_gold="flag",
    )

    def full_sort(top):
        rel, gold, pred = (
            ev.details["relation"],
            ev.details.get("gold", ev.keys["gold_node"]),
            ev.details["pred_node"],
        )
        counts = Counter(
            (a, b, r) for a, b, r in zip(gold.tolist(), pred.tolist(), rel.tolist()) if r != "exact"
        )
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0][0]), str(kv[0][1])))
        return [{"gold": a, "pred": b, "relation": r, "count": c} for (a, b, r), c in ranked[:top]]

    for top in (0, 1, 10, 500, 10_000, -3):
        assert confused_pairs(ev, top=top) == full_sort(top)
    assert len(confused_pairs(ev, top=10)) == 10
