"""The records path of the hierarchy family against a per-record reference.

``score_hierarchy`` collects ids into flat arrays and scores every row at once; this file
recomputes each record on its own, straight from the definitions in ``docs/hierarchy.md``
(Python sets of ancestors, ``Ontology.relation_index``, the line-by-line NLTK Wu-Palmer and
BFS path length of ``hierarchy_reference.py``), and requires the *same* Evaluation: record
ids, unscored reasons, every stats column, keys and details, value for value.
"""

from __future__ import annotations

import numpy as np
import pytest
from hierarchy_reference import aug, nltk_wup, shortest_path_distance

from kg_rageval.base.errors import InputError, UnknownIdError
from kg_rageval.families.hierarchy import ERROR_CATEGORIES, score_hierarchy
from kg_rageval.families.hierarchy.kernels import (
    common_ancestor_counts,
    pair_measures,
    path_length,
    relation_codes,
    wu_palmer,
)
from kg_rageval.ontology import ACTIVE, OntologyBuilder
from kg_rageval.records import slice_text


def status_dag(n: int, *, seed: int, roots: int = 1):
    """Random polyhierarchy (1-3 parents per node) with some deprecated nodes (half of them
    with a replacement) and some revoked ones."""
    rng = np.random.default_rng(seed)
    b = OntologyBuilder(f"dag{seed}")
    ids = [f"n{(k * 7919) % (n * 3):05d}_{k}" for k in range(n)]
    for k, i in enumerate(ids):
        r = rng.random()
        if k >= roots and r < 0.06:
            b.add_node(i, status="deprecated", replaced_by=ids[int(rng.integers(0, n))] if r < 0.03 else None)
        elif k >= roots and r < 0.09:
            b.add_node(i, status="revoked")
        else:
            b.add_node(i)
    for k in range(roots, n):
        parents = {int(rng.integers(0, k))}
        while rng.random() < 0.5 and len(parents) < 3:
            parents.add(int(rng.integers(max(0, k - 30), k)))
        for p in parents:
            b.add_edge(ids[k], ids[p])
    return b.build()


def random_records(o, n: int, *, seed: int, malformed: bool = True) -> list[dict]:
    """Single pairs mostly (near and far), NIL on either side, several ids a side (with
    repeats), unknown ids, the string form, and (``malformed``) unscorable records and odd
    slices."""
    rng = np.random.default_rng(seed)
    ids = list(o.ids)[1:] if o.virtual_root else list(o.ids)
    unknown = [f"zz-unknown-{k}" for k in range(5)]

    def pick():
        return (
            unknown[int(rng.integers(0, 5))] if rng.random() < 0.08 else ids[int(rng.integers(0, len(ids)))]
        )

    out = []
    for k in range(n):
        kind = rng.random()
        g = pick()
        if kind < 0.55:
            gold, pred = [g], [pick()]
        elif kind < 0.65:  # near miss: a parent or the node itself
            gi = o.index(g) if g in o._index else 1
            par = o.parent_indices(gi)
            p = o.ids[int(par[0])] if len(par) and rng.random() < 0.7 else g
            gold, pred = [g], [p]
        elif kind < 0.72:
            gold, pred = [g], []
        elif kind < 0.78:
            gold, pred = ([] if rng.random() < 0.5 else None), [g]
        elif kind < 0.8:
            gold, pred = [], []
        elif kind < 0.93:
            gold = [pick() for _ in range(int(rng.integers(1, 4)))]
            pred = [pick() for _ in range(int(rng.integers(0, 4)))] + gold[:1]
        else:
            gold, pred = g, pick()  # the string form
        rec = {"id": f"r{k}", "labels": {"gold": gold, "pred": pred}}
        if rng.random() < 0.8:
            rec["slices"] = {"lang": ["nl", "en"][k % 2]}
            if rng.random() < 0.3:
                rec["slices"]["level"] = int(rng.integers(0, 3))
        if malformed:
            r = rng.random()
            if r < 0.02:
                rec.pop("labels")
            elif r < 0.03:
                rec["labels"].pop("pred")
            elif r < 0.04:
                rec["slices"] = {"odd": ["a", 1]}
            elif r < 0.05:
                rec["slices"] = "not a dict"
        out.append(rec)
    return out


def reference(o, records, *, include_root: bool, on_status: str):
    """The Evaluation columns, one record at a time."""
    excl = o.virtual_root or not include_root
    rids, unscored, rows = [], [], []
    for rec in records:
        labels = rec.get("labels")
        if labels is None:
            unscored.append(
                {"record_id": str(rec.get("id")), "reason": "no labels section", "code": "no_section"}
            )
            continue
        lists = {}
        for side in ("gold", "pred"):
            v = labels.get(side, "<absent>")
            v = [] if v is None else [v] if isinstance(v, str) and v != "<absent>" else v
            lists[side] = None if v == "<absent>" else list(dict.fromkeys(v))
        missing_run = 0.0
        if lists["gold"] is None:
            unscored.append(
                {"record_id": str(rec.get("id")), "reason": "labels.gold is absent", "code": "no_gold"}
            )
            continue
        if lists["pred"] is None:  # gold but no prediction: scored as the empty prediction
            if not lists["gold"]:
                unscored.append(
                    {
                        "record_id": str(rec.get("id")),
                        "code": "missing_prediction",
                        "reason": "labels.pred is absent (NIL gold: not scored as a NIL prediction)",
                    }
                )
                continue
            lists["pred"], missing_run = [], 1.0
        row = {"pred_inactive": 0.0, "gold_inactive": 0.0, "n_missing_run": missing_run}
        sides = {}
        for side, names in lists.items():
            known, unk = [], []
            for name in names:
                i = o._index.get(name)
                if i is None:
                    unk.append(name)
                    continue
                if o.status[i] != ACTIVE:
                    rep = int(o.replaced_by[i])
                    if on_status == "replace" and rep >= 0:
                        i = rep
                    else:
                        row[f"{side}_inactive"] = 1.0
                if i not in known:
                    known.append(i)
            sides[side] = (known, unk)
        (gk, gu), (pk, pu) = sides["gold"], sides["pred"]
        T = aug(o, gk, include_root=not excl) | set(gu)
        P = aug(o, pk, include_root=not excl) | set(pu)
        inter = len(T & P)
        single = len(gk) == 1 and not gu and len(pk) == 1 and not pu
        exact = set(gk) == set(pk) and set(gu) == set(pu)
        if exact:
            rel = "exact"
        elif gu or pu:
            rel = "not_in_ontology"
        elif row["pred_inactive"]:
            rel = "inactive"
        elif (gk or gu) and not (pk or pu):
            rel = "nil_pred"
        elif (pk or pu) and not (gk or gu):
            rel = "nil_gold"
        elif not single:
            rel = "multi"
        else:
            rel = o.relation_index(gk[0], pk[0])
        wup = None
        if single:
            wup = 1.0 if gk[0] == pk[0] else nltk_wup(o, gk[0], pk[0])
        dist = shortest_path_distance(o, gk[0], pk[0]) if single and gk[0] != pk[0] else None
        row.update(
            items=1.0,
            inter=float(inter),
            n_pred_aug=float(len(P)),
            n_gold_aug=float(len(T)),
            hp_sum=inter / len(P) if P else 0.0,
            hp_n=float(bool(P)),
            hr_sum=inter / len(T) if T else 0.0,
            hr_n=float(bool(T)),
            hf_sum=2 * inter / (len(P) + len(T)) if (P or T) else 0.0,
            hf_n=float(bool(P or T)),
            exact=float(exact),
            wup_sum=wup or 0.0,
            wup_n=float(wup is not None),
            errors=float(not exact),
            dist_sum=float(dist or 0),
            dist_n=float(dist is not None),
        )
        for c in ERROR_CATEGORIES:
            row[f"err_{c}"] = float(rel == c)

        def one(known, unk):
            names = [o.ids[i] for i in known] + unk
            return names[0] if len(names) == 1 else ("|".join(names) if names else None)

        sl = rec.get("slices")
        row["_keys"] = {"gold_node": o.ids[gk[0]] if len(gk) == 1 and not gu else None}
        row["_slices"] = sl if isinstance(sl, dict) else {}
        row["_details"] = {"relation": rel, "gold": one(gk, gu), "pred_node": one(pk, pu), "wup": wup}
        rids.append(str(rec["id"]))
        rows.append(row)
    return rids, unscored, rows


def assert_same(ev, expected):
    rids, unscored, rows = expected
    assert ev.record_ids.tolist() == rids
    assert ev.unscored == unscored
    assert set(ev.stats) == {k for k in rows[0] if not k.startswith("_")}
    for k, col in ev.stats.items():
        want = [r[k] for r in rows]
        assert col.tolist() == want, k  # exact, value for value
    names = sorted({n for r in rows for n in r["_slices"]})
    assert set(ev.keys) == {"gold_node"} | {f"slice:{n}" for n in names}
    assert ev.keys["gold_node"].tolist() == [r["_keys"]["gold_node"] for r in rows]
    for n in names:
        want = []
        for r in rows:
            v = r["_slices"].get(n)
            want.append(slice_text(v))  # the one slice normalisation of every family
        assert ev.keys[f"slice:{n}"].tolist() == want, n
    for k in ("relation", "gold", "pred_node", "wup"):
        assert ev.details[k].tolist() == [r["_details"][k] for r in rows], k
    assert all(type(v) is float for v in ev.details["wup"].tolist() if v is not None)


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed, roots, include_root, on_status",
    [(1, 1, False, "count"), (2, 2, False, "replace"), (3, 1, True, "count")],
)
def test_records_path_equals_per_record_reference(seed, roots, include_root, on_status):
    o = status_dag(150, seed=seed, roots=roots)
    records = random_records(o, 2000, seed=seed)
    status = {"count": "flag", "replace": "replace"}[on_status]  # the same policy on both sides
    ev = score_hierarchy(
        o,
        records,
        include_root=include_root,
        on_unknown="count",
        on_unknown_gold="count",
        on_status=status,
        on_status_gold=status,
    )
    expected = reference(o, records, include_root=include_root, on_status=on_status)
    # the record set really exercises every branch
    rel = ev.details["relation"].tolist()
    for c in ("exact", "not_in_ontology", "nil_pred", "nil_gold", "multi", "inactive", "parent", "unrelated"):
        assert rel.count(c) > 0, c
    assert len(ev.unscored) > 10
    assert_same(ev, expected)


def test_bulk_path_equals_reference():
    """Only well-formed list records: the bulk (``map``-based) collection path."""
    o = status_dag(150, seed=4, roots=2)
    records = [
        r
        for r in random_records(o, 2000, seed=4, malformed=False)
        if isinstance(r["labels"]["gold"], list) and isinstance(r["labels"]["pred"], list)
    ]
    ev = score_hierarchy(
        o, records, on_unknown="count", on_unknown_gold="count", on_status="flag", on_status_gold="flag"
    )
    assert_same(ev, reference(o, records, include_root=False, on_status="count"))


def test_pair_measures_equal_the_separate_kernels():
    o = status_dag(400, seed=5, roots=2)
    rng = np.random.default_rng(5)
    a = rng.integers(0, len(o), 3000)
    b = rng.integers(0, len(o), 3000)
    b[:500] = a[:500]
    common, codes, wup, path = pair_measures(o, a, b, lcs="max_depth", identical="one")
    assert common.tolist() == common_ancestor_counts(o, a, b).tolist()
    assert codes.tolist() == relation_codes(o, a, b).tolist()
    assert wup.tolist() == wu_palmer(o, a, b, lcs="max_depth", identical="one").tolist()
    assert path.tolist() == path_length(o, a, b).tolist()
    # and against the line-by-line references on a sample
    for x, y, c, w, d in list(zip(a.tolist(), b.tolist(), common, wup, path))[:300:7]:
        assert c == len(set(o.ancestor_indices(x).tolist()) & set(o.ancestor_indices(y).tolist()))
        assert d == shortest_path_distance(o, x, y)
        assert w == (1.0 if x == y else nltk_wup(o, x, y, use_min_depth=False))


def test_first_problem_is_reported_in_record_order():
    o = status_dag(60, seed=6)
    good = {"id": "ok", "labels": {"gold": [o.ids[3]], "pred": [o.ids[4]]}}
    # a pred-side unknown in record 'b' comes before the gold-side one in record 'c'
    records = [
        good,
        {"id": "b", "labels": {"gold": [o.ids[5]], "pred": ["zz1"]}},
        {"id": "c", "labels": {"gold": ["zz0"], "pred": ["zz1"]}},
    ]
    with pytest.raises(UnknownIdError) as err:
        score_hierarchy(o, records, on_unknown="error")
    assert err.value.ids == ["zz0", "zz1"]
    assert "record 'b', field labels.pred[0] and 2 more places" in str(err.value)
    # a malformed record after a record with only a NIL string form: the same message as the
    # per-record reader gives
    bad = [
        good,
        {"id": "n", "labels": {"gold": None, "pred": []}},
        {"id": "x", "labels": {"gold": [o.ids[3], 7], "pred": []}},
    ]
    with pytest.raises(InputError, match=r"record 'x'.*labels\.gold.*\[.*, 7\]"):
        score_hierarchy(o, bad)
    bad[1] = {"id": "y", "labels": ["not", "an", "object"]}
    with pytest.raises(InputError, match=r"record 'y'.*field labels: expected an object"):
        score_hierarchy(o, bad)
