"""Benchmark of the hierarchy kernels on the 350,000-concept synthetic DAG.

    .venv/bin/python benchmarks/bench_hierarchy.py [--nodes 350000] [--pairs 1000000]

Times, on 1,000,000 (gold, pred) pairs (half random, a quarter parent-of-gold, a quarter
sibling-of-gold): hierarchical counts (hP/hR/hF1), Wu-Palmer and relation codes; the one-off
closure tables; the obvious networkx implementations (``nx.ancestors`` per pair; Wu-Palmer with
``nx.shortest_path_length``; relations from parent sets) measured on a subsample and scaled;
HiClass's ``precision``/``recall`` on a tree of the same size (subsample, scaled) against our
kernel on that tree. Peak memory of each kernel call is measured with ``tracemalloc`` in a
second, untimed pass. All ratios come from the same run. Runs in well under two minutes.

The records path: ``--records`` (default 1,000,000) record dicts ``{"id", "labels": {"gold":
[id], "pred": [id]}, "slices": {"split": ...}}`` built from the same pairs go through
``score_hierarchy`` (id lookup, status checks, every kernel, the ``Evaluation`` columns);
best of ``--records-repeat`` calls. ``--records 0`` skips it.

Also timed (issue #33): the LCA-bounded counts (``lca_bounded=True``) of the same pairs, and the
counts of ``--sets`` items (default 300,000) with 0–5 random gold and 0–5 random predicted
nodes each (the generation family's concept sets), with a digest of each result so that two
trees can be compared. ``--kernels-only`` skips the records path, networkx and HiClass.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.synthetic import build_ontology
from kg_rageval.families.hierarchy import (
    hierarchical_counts,
    relation_codes,
    score_hierarchy,
    wu_palmer,
)
from kg_rageval.families.hierarchy.closure import closure


def pairs_for(o, n_pairs: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = len(o)
    g = rng.integers(1, n, n_pairs)
    p = rng.integers(1, n, n_pairs)
    q = n_pairs // 4
    parent = o.parent_idx[o.parent_ptr[g]]  # first parent of each gold node
    p[:q] = parent[:q]
    cptr, cidx = o.child_ptr_idx
    par = parent[q : 2 * q]
    nkids = cptr[par + 1] - cptr[par]
    p[q : 2 * q] = cidx[cptr[par] + (rng.random(q) * nkids).astype(np.int64)]
    return g.astype(np.int64), p.astype(np.int64)


def make_records(o, g: np.ndarray, p: np.ndarray) -> list[dict]:
    """One record per pair, single gold and predicted id, a two-valued slice."""
    ids = o.ids
    return [
        {"id": f"r{i}", "labels": {"gold": [ids[a]], "pred": [ids[b]]}, "slices": {"split": "ab"[i & 1]}}
        for i, (a, b) in enumerate(zip(g.tolist(), p.tolist()))
    ]


def timed(fn, *args, **kw):
    t = time.perf_counter()
    out = fn(*args, **kw)
    return time.perf_counter() - t, out


def best_of(repeat: int, fn, *args, **kw):
    """Fastest wall time of ``repeat`` calls (the machine is shared: the minimum is the least
    disturbed run), the CPU time of that call, and the result."""
    best = None
    for _ in range(repeat):
        c = time.process_time()
        t, out = timed(fn, *args, **kw)
        c = time.process_time() - c
        if best is None or t < best[0]:
            best = (t, c, out)
    return best


def peak_mib(fn, *args, **kw) -> float:
    tracemalloc.start()
    fn(*args, **kw)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


# ------------------------------------------------------------------ obvious networkx versions
def nx_counts(G, o, g, p):
    import networkx as nx

    ids = o.ids
    out = []
    for a, b in zip(g.tolist(), p.tolist()):
        A = nx.ancestors(G, ids[a]) | {ids[a]}
        B = nx.ancestors(G, ids[b]) | {ids[b]}
        A.discard(ids[0])
        B.discard(ids[0])
        out.append((len(A & B), len(B), len(A)))
    return out


def nx_wup(G, Gup, o, g, p):
    import networkx as nx

    ids, depth_min, depth_max = o.ids, o.depth_min, o.depth_max
    idx = o._index
    out = []
    for a, b in zip(g.tolist(), p.tolist()):
        common = (nx.ancestors(G, ids[a]) | {ids[a]}) & (nx.ancestors(G, ids[b]) | {ids[b]})
        s = max(common, key=lambda c: (depth_min[idx[c]], [-ord(ch) for ch in c]))
        d = int(depth_max[idx[s]]) + 1
        la = nx.shortest_path_length(Gup, ids[a], s)
        lb = nx.shortest_path_length(Gup, ids[b], s)
        out.append(2 * d / (la + lb + 2 * d))
    return out


def nx_relations(G, Gup, o, g, p):
    import networkx as nx

    ids = o.ids
    out = []
    for a, b in zip(g.tolist(), p.tolist()):
        ga, pb = ids[a], ids[b]
        pa, pp = set(Gup.successors(ga)), set(Gup.successors(pb))
        if ga == pb:
            out.append("exact")
        elif pb in pa:
            out.append("parent")
        elif pb in nx.ancestors(G, ga):
            out.append("ancestor")
        elif ga in pp:
            out.append("child")
        elif ga in nx.ancestors(G, pb):
            out.append("descendant")
        elif pa & pp:
            out.append("sibling")
        elif {x for q in pa for x in Gup.successors(q)} & {x for q in pp for x in Gup.successors(q)}:
            out.append("cousin")
        else:
            out.append("unrelated")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=350_000)
    ap.add_argument("--pairs", type=int, default=1_000_000)
    ap.add_argument("--nx-pairs", type=int, default=2_000)
    ap.add_argument("--hiclass-pairs", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3, help="timed calls per kernel (best kept)")
    ap.add_argument(
        "--records", type=int, default=1_000_000, help="records through score_hierarchy (0 = skip)"
    )
    ap.add_argument("--records-repeat", type=int, default=2)
    ap.add_argument("--sets", type=int, default=300_000, help="items of the set counts (0 = skip)")
    ap.add_argument("--kernels-only", action="store_true", help="skip the records, networkx and HiClass")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    import networkx as nx

    T0 = time.perf_counter()
    res: dict = {"nodes": args.nodes, "pairs": args.pairs}
    t, o = timed(build_ontology, args.nodes)
    res["build_ontology_s"] = round(t, 2)
    res["closure_s"], cl = timed(closure, o)
    res["closure_matrix_mib"] = round(cl.matrix.nbytes / 2**20, 1) if cl.matrix is not None else None
    res["mean_ancestors"] = round(float(cl.lens.mean()), 1)
    g, p = pairs_for(o, args.pairs)

    res["counts_s"], res["counts_cpu_s"], counts = best_of(args.repeat, hierarchical_counts, o, g, p)
    res["wup_s"], res["wup_cpu_s"], w = best_of(args.repeat, wu_palmer, o, g, p)
    res["codes_s"], res["codes_cpu_s"], codes = best_of(args.repeat, relation_codes, o, g, p)
    res["relation_mix"] = np.bincount(codes, minlength=8).tolist()
    res["micro_hP"] = round(float(counts[0].sum() / counts[1].sum()), 4)
    res["mean_wup"] = round(float(w.mean()), 4)
    res["lca_counts_s"], res["lca_counts_cpu_s"], lca = best_of(
        args.repeat, hierarchical_counts, o, g, p, lca_bounded=True
    )
    res["lca_counts_digest"] = _digest(lca)
    if args.sets:
        gs_sets, ps_sets = sets_for(o, args.sets)
        res["set_counts_s"], res["set_counts_cpu_s"], sc = best_of(
            args.repeat, hierarchical_counts, o, gs_sets, ps_sets
        )
        res["set_counts_digest"] = _digest(sc)
        del gs_sets, ps_sets, sc
    if args.kernels_only:
        args.records = 0

    # the records path: score_hierarchy over record dicts
    if args.records:
        rg, rp = pairs_for(o, args.records, seed=2)
        res["records_build_s"], records = timed(make_records, o, rg, rp)
        res["records"] = len(records)
        res["records_s"], res["records_cpu_s"], ev = best_of(args.records_repeat, score_hierarchy, o, records)
        m = ev.metrics()
        res["records_hF1"] = round(m["hierarchical_f1"].value, 4)
        res["records_wup"] = round(m["wu_palmer"].value, 4)
        res["records_per_s"] = round(len(records) / res["records_s"])
        del records, ev

    if args.kernels_only:
        return _report(res, T0, args.json)
    # networkx, on a subsample (scaled to the full pair count)
    G = nx.DiGraph()
    G.add_edges_from((par, child) for child, par in o.edges())  # parent -> child
    Gup = G.reverse(copy=False)
    k = args.nx_pairs
    sub = slice(0, args.pairs, max(1, args.pairs // k))
    gs, ps = g[sub][:k], p[sub][:k]
    t, ref = timed(nx_counts, G, o, gs, ps)
    res["nx_counts_s_scaled"] = t * args.pairs / gs.size
    ours = hierarchical_counts(o, gs, ps)
    res["nx_counts_agree"] = [tuple(map(int, x)) for x in zip(*ours)] == ref
    t, _ = timed(nx_wup, G, Gup, o, gs[: k // 4], ps[: k // 4])
    res["nx_wup_s_scaled"] = t * args.pairs / (k // 4)
    t, rel = timed(nx_relations, G, Gup, o, gs, ps)
    res["nx_codes_s_scaled"] = t * args.pairs / gs.size
    from kg_rageval.ontology import RELATIONS

    res["nx_codes_agree"] = [RELATIONS[c] for c in relation_codes(o, gs, ps)] == rel
    del G, Gup

    # HiClass on a tree of the same size
    try:
        import hiclass.metrics as hm
    except ImportError:  # pragma: no cover
        hm = None
    if hm is not None:
        tree = build_ontology(args.nodes, extra_parent_p=0.0)
        tg, tp = pairs_for(tree, args.pairs, seed=1)
        closure(tree)
        res["tree_counts_s"], _, tc = best_of(args.repeat, hierarchical_counts, tree, tg, tp)
        kh = args.hiclass_pairs
        hs = slice(0, kh)
        width = int(tree.depth_max.max())
        ids = tree.ids

        def path(i):
            row = [ids[a] for a in tree.ancestor_indices(i)[1:]]  # the single root left out
            return row + [""] * (width - len(row))

        t0 = time.perf_counter()
        y_true = np.array([path(i) for i in tg[hs].tolist()])
        y_pred = np.array([path(i) for i in tp[hs].tolist()])
        t_prep = time.perf_counter() - t0
        t, hp = timed(hm.precision, y_true, y_pred)
        t2, hr = timed(hm.recall, y_true, y_pred)
        res["hiclass_s_scaled"] = (t + t2) * args.pairs / kh
        res["hiclass_prep_s_scaled"] = t_prep * args.pairs / kh
        inter, npred, ngold = (x[hs] for x in tc)
        res["hiclass_agree"] = bool(
            abs(hp - inter.sum() / npred.sum()) < 1e-12 and abs(hr - inter.sum() / ngold.sum()) < 1e-12
        )

    # peak memory of each kernel call (second pass, untimed)
    res["peak_mib"] = {
        "counts": round(peak_mib(hierarchical_counts, o, g, p), 1),
        "wup": round(peak_mib(wu_palmer, o, g, p), 1),
        "codes": round(peak_mib(relation_codes, o, g, p), 1),
    }
    res["max_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    for key in ("counts", "wup", "codes"):
        res[f"speedup_vs_nx_{key}"] = round(res[f"nx_{key}_s_scaled"] / res[f"{key}_s"], 1)
    if "hiclass_s_scaled" in res:
        res["speedup_vs_hiclass"] = round(res["hiclass_s_scaled"] / res["tree_counts_s"], 1)
    return _report(res, T0, args.json)


def _report(res: dict, t0: float, as_json: bool) -> int:
    res["wall_s"] = time.perf_counter() - t0
    res["process_cpu_s"] = time.process_time()
    res = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in res.items()}
    if as_json:
        print(json.dumps(res, indent=2))
    else:
        for k, v in res.items():
            print(f"{k:28s} {v}")
    return 0


def sets_for(o, n_items: int, seed: int = 3) -> tuple[list[list[int]], list[list[int]]]:
    """``n_items`` gold and predicted sets of 0–5 random non-root nodes each."""
    rng = np.random.default_rng(seed)
    n = len(o.ids)

    def draw() -> list[list[int]]:
        sizes = rng.integers(0, 6, size=n_items)
        flat = rng.integers(1, n, size=int(sizes.sum())).tolist()
        out, at = [], 0
        for k in sizes.tolist():
            out.append(flat[at : at + k])
            at += k
        return out

    return draw(), draw()


def _digest(arrays) -> str:
    """A short digest of a kernel's result arrays (equal results, equal digests)."""
    import hashlib

    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


if __name__ == "__main__":
    sys.exit(main())
