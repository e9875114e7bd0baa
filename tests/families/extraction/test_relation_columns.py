"""The extraction family's column path (relations of TACRED's shape, no ontology) against the
record loop: the same evaluation (rows in order, every stat with its dtype, keys, unscored
entries, meta, metrics and macro averages), hand-worked counts on a small case, and every
other shape (several triples, tags, a malformed field) left to the record loop, which raises
its one-line error (issue #33)."""

from __future__ import annotations

import copy
import json
import random

import numpy as np
import pytest

import kg_rageval.families.extraction.score as score_mod
from kg_rageval.base.errors import InputError
from kg_rageval.families.extraction import score_extraction
from kg_rageval.records.relation_sets import read_tacred

RELS = ("org:founded_by", "per:title", "org:members", "no_relation", "NA")


def _triple(rng: random.Random, rel: str, span: int) -> dict:
    t = {"subject": f"{span}:{span}", "relation": rel, "object": f"{span + 1}:{span + 2}"}
    if rng.random() < 0.7:
        t["subject_type"], t["object_type"] = "ORG", rng.choice(["PER", None])
    return t


def _records(n: int = 500, seed: int = 5) -> list[dict]:
    """Every branch of the rows: both negative, one side negative, the same relation with the
    same or another span, two relations in either order, no prediction (unscored), an empty
    prediction or gold list, no section, a null section, slices, gold nodes and labels."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        g = rng.choice(RELS)
        span = rng.randrange(3)
        rec: dict = {"id": f"s{i}" if i % 50 else i}  # an integer id too
        rels: dict = {"gold": [] if rng.random() < 0.05 else [_triple(rng, g, span)]}
        u = rng.random()
        if u < 0.1:
            pass  # no prediction: unscored
        elif u < 0.15:
            rels["pred"] = []
        elif u < 0.18:
            rels["pred"] = None
        else:
            rels["pred"] = [_triple(rng, g if rng.random() < 0.5 else rng.choice(RELS), rng.randrange(3))]
        sec: dict = {"relations": rels}
        if rng.random() < 0.8:
            sec["tokens"] = ["w"] * 5
        rec["extraction"] = sec
        v = rng.random()
        if v < 0.03:
            del rec["extraction"]
        elif v < 0.05:
            rec["extraction"] = None
        if rng.random() < 0.3:
            rec["slices"] = {"domain": rng.choice(["news", "web"]), "year": rng.choice([2020, None])}
        if rng.random() < 0.2:
            rec["gold_node"] = rng.choice(["ex:A", "ex:B"])
        elif rng.random() < 0.2:
            rec["labels"] = {"gold": ["ex:C"]}
        out.append(rec)
    return out


def _loop(records, **kw):
    saved = score_mod._relation_columns
    score_mod._relation_columns = lambda *a: None
    try:
        return score_extraction(None, records, **kw)
    finally:
        score_mod._relation_columns = saved


def _same(a, b) -> None:
    assert a.record_ids.tolist() == b.record_ids.tolist()
    assert list(a.stats) == list(b.stats)
    for k in a.stats:
        x, y = np.asarray(a.stats[k]), np.asarray(b.stats[k])
        assert x.dtype == y.dtype and np.array_equal(x, y), k
    assert list(a.keys) == list(b.keys)
    for k in a.keys:
        va, vb = np.asarray(a.keys[k]).tolist(), np.asarray(b.keys[k]).tolist()
        assert va == vb and list(map(type, va)) == list(map(type, vb)), k
    assert a.unscored == b.unscored
    assert a.meta == b.meta
    da, db = (e.to_dict(breakdowns=sorted(a.keys)) for e in (a, b))
    assert json.dumps(da, sort_keys=True) == json.dumps(db, sort_keys=True)


def test_columns_equal_the_record_loop():
    recs = _records()
    got = score_extraction(None, recs)
    assert score_mod._relation_columns(recs, frozenset(score_mod.NEGATIVE_LABELS), dict(got.meta)) is not None
    _same(got, _loop(recs))
    _same(
        score_extraction(None, recs, negative_labels=["per:title"]),
        _loop(recs, negative_labels=["per:title"]),
    )


def test_columns_by_hand():
    def rec(i, g, p, sp="0:0"):
        rels = {"gold": [{"subject": "0:0", "relation": g, "object": "1:1"}]}
        if p is not None:
            rels["pred"] = [{"subject": sp, "relation": p, "object": "1:1"}]
        return {"id": f"r{i}", "extraction": {"relations": rels}}

    recs = [
        rec(0, "per:title", "per:title"),  # tp
        rec(1, "per:title", "per:title", "2:2"),  # same relation, other span: no tp
        rec(2, "per:title", "org:members"),  # two rows, the prediction's first
        rec(3, "no_relation", "no_relation"),  # one row of zeros
        rec(4, "org:members", None),  # no prediction: unscored
    ]
    ev = score_extraction(None, recs)
    assert ev.record_ids.tolist() == ["r0", "r1", "r2", "r2", "r3"]
    assert ev.keys["slice:relation_type"].tolist() == [
        "per:title",
        "per:title",
        "org:members",
        "per:title",
        None,
    ]
    assert ev.stats["re_gold"].tolist() == [1, 1, 0, 1, 0]
    assert ev.stats["re_pred"].tolist() == [1, 1, 1, 0, 0]
    assert ev.stats["re_tp"].tolist() == [1, 0, 0, 0, 0]
    assert [u["record_id"] for u in ev.unscored] == ["r4"]
    v = {k: m.value for k, m in ev.metrics().items()}
    assert v["re_precision"] == pytest.approx(1 / 3) and v["re_recall"] == pytest.approx(1 / 3)
    _same(ev, _loop(recs))


def test_tacred_reader_columns(tmp_path):
    rng = random.Random(2)
    gold, pred = [], {}
    for i in range(300):
        g = rng.choice(RELS[:4])
        gold.append(
            {
                "id": f"t{i}",
                "relation": g,
                "token": ["w"] * 6,
                "subj_start": 0,
                "subj_end": rng.randrange(2),
                "obj_start": 3,
                "obj_end": 4,
                "subj_type": rng.choice(["ORG", "", None]),
                "obj_type": "PER",
            }
        )
        if i % 10:
            pred[f"t{i}"] = g if rng.random() < 0.5 else rng.choice(RELS[:4])
    gp, pp = tmp_path / "g.json", tmp_path / "p.json"
    gp.write_text(json.dumps(gold))
    pp.write_text(json.dumps(pred))
    recs = read_tacred(gp, pp)
    _same(score_extraction(None, recs), _loop(recs))


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r["extraction"]["relations"]["gold"].append(dict(r["extraction"]["relations"]["gold"][0])),
        lambda r: r["extraction"].update(gold_tags=["O"], pred_tags=["O"], tokens=["w"]),
        lambda r: r["extraction"]["relations"]["gold"][0].update(relation=""),
        lambda r: r["extraction"]["relations"]["gold"][0].update(subject=3),
        lambda r: r["extraction"]["relations"]["gold"][0].update(colour="red"),
        lambda r: r["extraction"]["relations"].update(gold=None),
        lambda r: r["extraction"].update(tokens=["w", 1]),
        lambda r: r["extraction"].update(relations=None),
        lambda r: r.update(slices={"relation_type": "x"}),
    ],
)
def test_other_shapes_are_the_record_loop(change):
    recs = _records(60, seed=9)
    k = next(i for i, r in enumerate(recs) if r.get("extraction") and r["extraction"]["relations"]["gold"])
    bad = copy.deepcopy(recs)
    change(bad[k])
    assert score_mod._relation_columns(bad, frozenset(score_mod.NEGATIVE_LABELS), {}) is None
    try:
        want = _loop(bad)
    except InputError as e:
        with pytest.raises(InputError) as got:
            score_extraction(None, bad)
        assert str(got.value) == str(e)
    else:
        _same(score_extraction(None, bad), want)
