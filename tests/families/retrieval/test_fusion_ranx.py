"""``fuse`` (RRF, wsum/convex, CombSUM/MNZ/MAX/ANZ × min-max/z-score/sum/none) equal to ranx's
``fuse`` on realistic runs, the seed's RRF example exactly, and the ``kg-rageval fuse`` CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.cli.main import main
from kg_rageval.families.retrieval.fusion import fuse, fuse_query, normalise

DENSE = ["d3", "d7", "d1", "d4", "d2", "d9", "d10"]
SPARSE = ["d2", "d3", "d8", "d1", "d11", "d4", "d6"]


def _runs(seed=7, nq=50, nd=100, pool=150):
    rng = np.random.default_rng(seed)

    def one(shift, scale):
        return {
            f"q{i}": {f"d{j}": float(rng.normal(shift, scale)) for j in rng.choice(pool, nd, replace=False)}
            for i in range(nq)
        }

    return [one(0.0, 1.0), one(3.0, 0.2), one(10.0, 5.0)]


RANX = {"rrf": "rrf", "wsum": "wsum", "combsum": "sum", "combmnz": "mnz", "combmax": "max", "combanz": "anz"}


@pytest.mark.parametrize("method", sorted(RANX))
@pytest.mark.parametrize("norm", ["min-max", "zmuv", "sum", None])
def test_fuse_equals_ranx_fuse(method, norm):
    ranx = pytest.importorskip("ranx", reason="ranx is the reference of fuse")
    runs = _runs()
    params = {"k": 60} if method == "rrf" else {"weights": [0.2, 0.5, 0.3]} if method == "wsum" else {}
    ref = ranx.fuse([ranx.Run(r) for r in runs], norm=norm, method=RANX[method], params=params).to_dict()
    got = fuse(runs, method, norm=norm, k=60, weights=params.get("weights"))
    assert set(got) == set(ref)
    n = 0
    for q in ref:
        assert set(got[q]) == set(ref[q])
        for d, v in ref[q].items():
            assert got[q][d] == pytest.approx(v, abs=1e-12, rel=0)
            n += 1
    assert n > 50 * 100  # the union of three 100-doc lists from a pool of 150


def test_seed_rrf_example_exactly():
    ranked = [{d: float(len(r) - i) for i, d in enumerate(r)} for r in (DENSE, SPARSE)]
    f = fuse_query(ranked, "rrf", k=60)
    assert round(f["d3"], 5) == 0.03252 and round(f["d2"], 5) == 0.03178 and round(f["d1"], 5) == 0.03150
    assert f["d3"] == 1 / 61 + 1 / 62 and f["d2"] == 1 / 65 + 1 / 61 and f["d1"] == 1 / 63 + 1 / 64
    assert f["d8"] == 1 / 63  # in one lane only: nothing from the other
    assert sorted(f, key=lambda d: -f[d])[:3] == ["d3", "d2", "d1"]


def test_normalisations_by_hand_and_ranx_conventions():
    assert normalise({"a": 2.0, "b": 4.0, "c": 3.0}) == {"a": 0.0, "b": 1.0, "c": 0.5}
    assert normalise({"a": 5.0, "b": 5.0}) == {"a": 0.0, "b": 0.0}  # ranx: spread floored at 1e-9
    assert normalise({"a": 1.0, "b": 3.0}, "zscore") == {"a": -1.0, "b": 1.0}
    # sum: (s - min) / (Σs - n·min) = (s - 1) / (6 - 3)
    assert normalise({"a": 1.0, "b": 2.0, "c": 3.0}, "sum") == {"a": 0.0, "b": 1 / 3, "c": 2 / 3}
    lanes = [{"a": 2.0, "b": 4.0}, {"b": 10.0, "c": 20.0}]
    # min-max: lane 1 a 0, b 1; lane 2 b 0, c 1
    assert fuse_query(lanes, "combsum") == {"a": 0.0, "b": 1.0, "c": 1.0}
    assert fuse_query(lanes, "combmnz") == {"a": 0.0, "b": 2.0, "c": 1.0}
    assert fuse_query(lanes, "combanz") == {"a": 0.0, "b": 0.5, "c": 1.0}
    assert fuse_query(lanes, "combmax") == {"a": 0.0, "b": 1.0, "c": 1.0}
    assert fuse_query(lanes, "convex", weights=(0.25, 0.75)) == {"a": 0.0, "b": 0.25, "c": 0.75}
    with pytest.raises(InputError, match="one weight per run"):
        fuse_query(lanes, "wsum", weights=(1.0,))
    with pytest.raises(InputError, match="normalisation must be one of"):
        normalise({"a": 1.0}, "l2")
    with pytest.raises(InputError, match="at least two runs"):
        fuse([{"q": {"a": 1.0}}])


def test_a_query_missing_from_one_run_is_fused_from_the_others():
    got = fuse([{"q1": {"a": 1.0}, "q2": {"b": 1.0}}, {"q1": {"a": 2.0}}], "rrf", k=1)
    assert got == {"q1": {"a": 1.0}, "q2": {"b": 0.5}}


def _write_trec(path, run, tag):
    with open(path, "w") as fh:
        for q, docs in run.items():
            for r, (d, s) in enumerate(sorted(docs.items(), key=lambda kv: -kv[1]), 1):
                fh.write(f"{q} Q0 {d} {r} {s!r} {tag}\n")


def _read_trec(path):
    out: dict = {}
    for ln in open(path):
        q, _, d, _, s, _ = ln.split()
        out.setdefault(q, {})[d] = float(s)
    return out


def test_cli_fuse_seed_example_and_refusals(tmp_path, capsys):
    a, b, out = tmp_path / "dense.trec", tmp_path / "sparse.trec", tmp_path / "fused.trec"
    _write_trec(a, {"q": {d: float(7 - i) for i, d in enumerate(DENSE)}}, "dense")
    _write_trec(b, {"q": {d: float(7 - i) for i, d in enumerate(SPARSE)}}, "sparse")
    assert main(["fuse", "--run", str(a), "--run", str(b), "-o", str(out), "--format", "json"]) == 0
    lines = out.read_text().splitlines()
    assert [ln.split()[2] for ln in lines[:3]] == ["d3", "d2", "d1"]
    assert [round(float(ln.split()[4]), 5) for ln in lines[:3]] == [0.03252, 0.03178, 0.03150]
    assert json.loads(capsys.readouterr().out)["n_queries"] == 1
    assert main(["fuse", "--run", str(a), "--run", str(b), "-o", str(a)]) == 2
    assert "same file as the input --run" in capsys.readouterr().err
    assert a.read_text().startswith("q Q0 d3 1 7.0 dense")
    assert main(["fuse", "--run", str(a), "--run", str(b), "-o", str(out), "--method", "convex"]) == 2
    assert "convex needs --alpha, or --qrels" in capsys.readouterr().err


def test_cli_convex_alpha_sweep_equals_ranx_and_picks_the_best(tmp_path, capsys):
    ranx = pytest.importorskip("ranx", reason="ranx is the reference of fuse")
    runs = _runs(seed=3, nq=30, nd=40, pool=60)[:2]
    rng = np.random.default_rng(4)
    qrels = {q: {f"d{j}": int(rng.integers(1, 3)) for j in rng.choice(60, 5, replace=False)} for q in runs[0]}
    pa, pb, pq, out = (tmp_path / n for n in ("a.trec", "b.trec", "qrels.txt", "f.trec"))
    _write_trec(pa, runs[0], "a")
    _write_trec(pb, runs[1], "b")
    pq.write_text("".join(f"{q} 0 {d} {g}\n" for q, gs in qrels.items() for d, g in gs.items()))
    args = ["fuse", "--run", str(pa), "--run", str(pb), "--method", "convex", "--qrels", str(pq)]
    assert main([*args, "-o", str(out), "--format", "json"]) == 0
    p = json.loads(capsys.readouterr().out)
    vals = {r["alpha"]: r["value"] for r in p["sweep"]["alphas"]}
    assert len(vals) == 11 and p["alpha"] == p["sweep"]["best"]["alpha"]
    assert p["sweep"]["best"]["value"] == max(vals.values())
    # the α → nDCG@10 table equals ranx's evaluate on ranx's wsum fusion for every α
    for al, v in vals.items():
        fr = ranx.fuse(
            [ranx.Run(r) for r in runs], norm="min-max", method="wsum", params={"weights": [al, 1 - al]}
        )
        assert v == pytest.approx(ranx.evaluate(ranx.Qrels(qrels), fr, "ndcg@10"), abs=1e-9)
    # the written run is the fusion at the chosen α
    ref = fuse(runs, "convex", weights=(p["alpha"], 1 - p["alpha"]))
    got = _read_trec(out)
    assert all(got[q][d] == pytest.approx(ref[q][d], abs=1e-12) for q in ref for d in ref[q])
    assert p["scores"]["fused"]["value"] == pytest.approx(p["sweep"]["best"]["value"])
    # text: the α chosen on the scored queries is said to make the fused score optimistic
    assert main([*args, "-o", str(tmp_path / "g.trec")]) == 0
    text = capsys.readouterr().out
    assert "the fused score below is optimistic" in text
    assert main([*args, "--alpha", "0.5", "-o", str(tmp_path / "h.trec")]) == 0
    assert "optimistic" not in capsys.readouterr().out  # a fixed α was not chosen here
