"""Hierarchy kernels: relation codes, hierarchical counts, Wu-Palmer, path lengths.

Hand-worked values on the vehicles taxonomy (the seed article's Sedan / Hatchback / Submarine
example) and DAG cases; agreement with ``Ontology.relation_index`` and with line-by-line
references (``hierarchy_reference.py``) on random polyhierarchies.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hierarchy_reference import aug, nltk_wup, random_dag, shortest_path_distance

from kg_rageval.base.errors import InputError
from kg_rageval.families.hierarchy import closure as closure_mod
from kg_rageval.families.hierarchy import (
    hierarchical_counts,
    path_length,
    relation_codes,
    relation_names,
    wu_palmer,
)
from kg_rageval.ontology import RELATIONS, OntologyBuilder


def idx(o, *ids):
    return o.indices(list(ids)).astype(np.int64)


# ---------------------------------------------------------------- the seed article's example
def test_sedan_vs_submarine_for_hatchback(vehicles):
    g = idx(vehicles, "hatchback", "hatchback")
    p = idx(vehicles, "sedan", "submarine")
    # root excluded (default): Sedan shares {car} of {car, sedan}; Submarine shares nothing
    inter, n_pred, n_gold = hierarchical_counts(vehicles, g, p)
    assert inter.tolist() == [1, 0] and n_pred.tolist() == [2, 2] and n_gold.tolist() == [2, 2]
    # the article's reading, root included: Sedan shares 2 of 3 nodes, Submarine only the root
    inter, n_pred, n_gold = hierarchical_counts(vehicles, g, p, include_root=True)
    assert inter.tolist() == [2, 1] and n_pred.tolist() == [3, 3]
    # Wu-Palmer: LCS car (depth 2) -> 4/6; LCS vehicle (depth 1) -> 2/6
    assert wu_palmer(vehicles, g, p) == pytest.approx([2 / 3, 1 / 3], abs=1e-15)
    assert relation_names(relation_codes(vehicles, g, p)).tolist() == ["sibling", "cousin"]
    assert path_length(vehicles, g, p).tolist() == [2, 4]


def test_relation_codes_match_ontology_on_every_vehicle_pair(vehicles):
    n = len(vehicles)
    a, b = (np.array(x) for x in zip(*itertools.product(range(n), range(n))))
    codes = relation_codes(vehicles, a, b)
    assert codes.dtype == np.int8
    expected = [vehicles.relation_index(int(x), int(y)) for x, y in zip(a, b)]
    assert [RELATIONS[c] for c in codes] == expected
    # spot checks worked by hand
    o = vehicles
    rel = lambda g, p: RELATIONS[relation_codes(o, idx(o, g), idx(o, p))[0]]  # noqa: E731
    assert rel("sedan", "car") == "parent"
    assert rel("sedan", "vehicle") == "ancestor"
    assert rel("car", "sedan") == "child"
    assert rel("vehicle", "sedan") == "descendant"
    assert rel("submarine", "amphibious_car") == "sibling"  # both under boat
    assert rel("amphibious_car", "submarine") == "sibling"
    assert rel("sedan", "boat") == "unrelated"  # only the root links them, at two levels
    assert rel("sedan", "submarine") == "cousin"


def test_polyhierarchy_augmented_set_is_the_full_closure(vehicles):
    o = vehicles
    # amphibious_car has parents car and boat: its augmented set is {car, boat, amphibious_car}
    inter, n_pred, n_gold = hierarchical_counts(o, idx(o, "submarine"), idx(o, "amphibious_car"))
    assert (inter[0], n_pred[0], n_gold[0]) == (1, 3, 2)  # shared: boat
    # several nodes per item: union of closures; NIL = empty list
    inter, n_pred, n_gold = hierarchical_counts(
        o,
        [[o.index("sedan"), o.index("submarine")], [o.index("car")], []],
        [[o.index("amphibious_car")], [], [o.index("boat")]],
    )
    assert inter.tolist() == [2, 0, 0]  # {car, boat}
    assert n_gold.tolist() == [4, 1, 0] and n_pred.tolist() == [3, 0, 1]


def test_nil_in_single_node_arrays(vehicles):
    o = vehicles
    as_list = hierarchical_counts(o, [o.index("sedan"), -1], [-1, o.index("car")])
    assert [x.tolist() for x in as_list] == [[0, 0], [0, 1], [2, 0]]
    inter, n_pred, n_gold = hierarchical_counts(
        o, np.array([o.index("sedan"), -1]), np.array([-1, o.index("car")])
    )
    assert inter.tolist() == [0, 0] and n_pred.tolist() == [0, 1] and n_gold.tolist() == [2, 0]


def test_lca_bounded_counts(vehicles):
    o = vehicles
    g = idx(o, "hatchback", "hatchback", "sedan", "submarine")
    p = idx(o, "sedan", "submarine", "sedan", "amphibious_car")
    inter, n_pred, n_gold = hierarchical_counts(o, g, p, lca_bounded=True)
    # hatchback/sedan: LCA car -> {hatchback, car} vs {sedan, car}; submarine/amphibious: LCA boat
    assert inter.tolist() == [1, 0, 1, 1]
    assert n_pred.tolist() == [2, 2, 1, 3]  # amphibious: {amphibious_car, car, boat}
    assert n_gold.tolist() == [2, 2, 1, 2]
    inter, n_pred, _ = hierarchical_counts(o, g, p, lca_bounded=True, include_root=True)
    assert inter.tolist() == [1, 1, 1, 1] and n_pred.tolist() == [2, 3, 1, 3]  # root only bounds
    with pytest.raises(InputError, match="one gold and one predicted"):
        hierarchical_counts(o, [[1, 2]], [[3]], lca_bounded=True)


def test_lca_bounded_with_two_lowest_common_ancestors():
    b = OntologyBuilder("two-lcas")
    for i in "r a b x y".split():
        b.add_node(i)
    for c, p in [("a", "r"), ("b", "r"), ("x", "a"), ("x", "b"), ("y", "a"), ("y", "b")]:
        b.add_edge(c, p)
    o = b.build()
    inter, n_pred, n_gold = hierarchical_counts(o, idx(o, "x"), idx(o, "y"), lca_bounded=True)
    assert (inter[0], n_pred[0], n_gold[0]) == (2, 3, 3)  # L = {a, b}
    assert wu_palmer(o, idx(o, "x"), idx(o, "y"))[0] == pytest.approx(4 / 6)


def test_virtual_root_never_counts():
    b = OntologyBuilder("forest")
    for i in "a a1 b b1".split():
        b.add_node(i)
    b.add_edge("a1", "a")
    b.add_edge("b1", "b")
    o = b.build()
    assert o.virtual_root
    g, p = idx(o, "a1", "a1"), idx(o, "b1", "a")
    for include_root in (False, True):
        inter, n_pred, n_gold = hierarchical_counts(o, g, p, include_root=include_root)
        assert inter.tolist() == [0, 1] and n_pred.tolist() == [2, 1] and n_gold.tolist() == [2, 2]
    assert relation_names(relation_codes(o, idx(o, "a"), idx(o, "b"))).tolist() == ["unrelated"]
    assert relation_names(relation_codes(o, idx(o, "a1"), idx(o, "b1"))).tolist() == ["unrelated"]


def test_wu_palmer_nltk_self_oddity_and_options():
    # d has parents r (depth 0) and c (depth 3): depth_min(d) = 1 < depth_min(c) = 3
    b = OntologyBuilder("oddity")
    for i in "r a b c d".split():
        b.add_node(i)
    for c, p in [("a", "r"), ("b", "a"), ("c", "b"), ("d", "r"), ("d", "c")]:
        b.add_edge(c, p)
    o = b.build()
    d = idx(o, "d")
    # NLTK: candidates {r, a, b, c, d} by depth_min -> c (3) beats d (1); depth(c) = 3 + 1,
    # len(d, c) = 1 twice: 8 / (1 + 1 + 8)
    assert wu_palmer(o, d, d)[0] == pytest.approx(0.8, abs=1e-15)
    assert nltk_wup(o, 4, 4) == pytest.approx(0.8)
    assert wu_palmer(o, d, d, identical="one")[0] == 1.0
    assert wu_palmer(o, d, d, lcs="max_depth")[0] == 1.0
    with pytest.raises(InputError, match="lcs must be"):
        wu_palmer(o, d, d, lcs="deepest")


def test_wu_palmer_shortcut_path_length():
    # s is a deep ancestor of a; a also hangs directly under t, the parent of s, so NLTK's
    # shortest_path_distance(a, s) = a->t (1) + s->t (1) = 2 < the upward distance 3
    b = OntologyBuilder("shortcut")
    for i in "r t s u v a q".split():
        b.add_node(i)
    for c, p in [("t", "r"), ("s", "t"), ("u", "s"), ("v", "u"), ("a", "v"), ("a", "t"), ("q", "s")]:
        b.add_edge(c, p)
    o = b.build()
    a, q = o.index("a"), o.index("q")
    assert shortest_path_distance(o, a, o.index("s")) == 2
    got = wu_palmer(o, np.array([a]), np.array([q]))[0]
    assert got == pytest.approx(nltk_wup(o, a, q), abs=1e-15)
    # LCS by depth_min: s (2) vs t (1) -> s, depth 3; len(a, s) = 2, len(q, s) = 1
    assert got == pytest.approx(6 / 9, abs=1e-15)


@pytest.mark.slow
@pytest.mark.parametrize("seed,roots", [(1, 1), (2, 3), (3, 1)])
def test_kernels_match_references_on_random_dags(seed, roots):
    o = random_dag(300, seed=seed, roots=roots)
    rng = np.random.default_rng(seed)
    a = rng.integers(0, len(o), 1500)
    b = rng.integers(0, len(o), 1500)
    # near pairs too: a parent, a grandchild's sibling, the same node
    near = np.array([int(o.parent_indices(int(x))[0]) if x > roots else x for x in a[:300]])
    a = np.concatenate([a, a[:300], a[:50]])
    b = np.concatenate([b, near, a[:50]])
    codes = relation_codes(o, a, b)
    assert [RELATIONS[c] for c in codes] == [o.relation_index(int(x), int(y)) for x, y in zip(a, b)]
    assert set(codes.tolist()) >= {0, 1, 5, 7}
    w = wu_palmer(o, a, b)
    ref = np.array([nltk_wup(o, int(x), int(y)) for x, y in zip(a, b)])
    np.testing.assert_allclose(w, ref, rtol=0, atol=1e-12)
    wmax = wu_palmer(o, a[:400], b[:400], lcs="max_depth")
    ref_max = [nltk_wup(o, int(x), int(y), use_min_depth=False) for x, y in zip(a[:400], b[:400])]
    np.testing.assert_allclose(wmax, ref_max, rtol=0, atol=1e-12)
    pl = path_length(o, a[:400], b[:400])
    assert pl.tolist() == [shortest_path_distance(o, int(x), int(y)) for x, y in zip(a[:400], b[:400])]
    for include_root in (False, True):
        inter, n_pred, n_gold = hierarchical_counts(o, a, b, include_root=include_root)
        for k in range(0, a.size, 7):
            ga, pa = aug(o, [a[k]], include_root=include_root), aug(o, [b[k]], include_root=include_root)
            assert (inter[k], n_pred[k], n_gold[k]) == (len(ga & pa), len(pa), len(ga))
    # the multi-node path agrees with the single-node path
    multi = hierarchical_counts(o, [[int(x)] for x in a], [[int(y)] for y in b])
    single = hierarchical_counts(o, a, b)
    for m, s in zip(multi, single):
        np.testing.assert_array_equal(m, s)


def test_chunked_gather_without_matrix(monkeypatch):
    """The per-chunk CSR gather (used when the padded matrix would be too large) agrees."""
    o1 = random_dag(200, seed=9)
    o2 = random_dag(200, seed=9)
    monkeypatch.setattr(closure_mod, "MAX_MATRIX_CELLS", 0)
    assert closure_mod.closure(o2).matrix is None
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 200, 500), rng.integers(0, 200, 500)
    np.testing.assert_array_equal(relation_codes(o1, a, b), relation_codes(o2, a, b))
    np.testing.assert_array_equal(wu_palmer(o1, a, b), wu_palmer(o2, a, b))
    for x, y in zip(hierarchical_counts(o1, a, b), hierarchical_counts(o2, a, b)):
        np.testing.assert_array_equal(x, y)


def test_input_validation(vehicles):
    o = vehicles
    with pytest.raises(InputError, match="outside"):
        relation_codes(o, np.array([0]), np.array([99]))
    with pytest.raises(InputError, match="differ in length"):
        wu_palmer(o, np.array([0, 1]), np.array([0]))
    with pytest.raises(InputError, match="integer"):
        relation_codes(o, np.array([0.5]), np.array([1.0]))
    assert relation_codes(o, np.array([], dtype=int), np.array([], dtype=int)).size == 0


def _synthetic_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "synthetic.py"
    spec = importlib.util.spec_from_file_location("kgr_bench_synthetic", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_kernels_on_the_benchmark_dag_sample():
    """The SNOMED-shaped synthetic DAG of the benchmark (benchmarks/synthetic.py), small."""
    o = _synthetic_module().build_ontology(6000)
    assert o.multi_parent_count > 1000
    rng = np.random.default_rng(11)
    a = rng.integers(1, len(o), 3000)
    b = rng.integers(1, len(o), 3000)
    b[:1000] = o.parent_idx[o.parent_ptr[a[:1000]]]  # a parent of the gold node
    cptr, cidx = o.child_ptr_idx
    par = b[:500]
    b[1000:1500] = cidx[cptr[par]]  # a child of that parent: sibling or the node itself
    codes = relation_codes(o, a, b)
    assert [RELATIONS[c] for c in codes] == [o.relation_index(int(x), int(y)) for x, y in zip(a, b)]
    assert {RELATIONS[c] for c in codes} >= {"exact", "parent", "sibling", "cousin", "unrelated"}
    k = slice(0, 3000, 6)
    w = wu_palmer(o, a[k], b[k])
    np.testing.assert_allclose(
        w, [nltk_wup(o, int(x), int(y)) for x, y in zip(a[k], b[k])], rtol=0, atol=1e-12
    )
    inter, n_pred, n_gold = hierarchical_counts(o, a[k], b[k])
    for i, (x, y) in enumerate(zip(a[k], b[k])):
        gs, ps = aug(o, [x], include_root=False), aug(o, [y], include_root=False)
        assert (inter[i], n_pred[i], n_gold[i]) == (len(gs & ps), len(ps), len(gs))
