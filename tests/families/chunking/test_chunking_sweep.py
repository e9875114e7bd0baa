"""``kg-rageval chunking sweep``: Recall@2 per chunk size and overlap worked by hand, the
bootstrap CI, the plateau size rule, the run-spec syntax and bad input (exit 2).

Qrels: q1 {d1}, q2 {d2}, q3 {d3}, q4 {d4, d5}, q5 judged but nothing relevant (left out).
R@2 per query (q1..q4):
  size 512 overlap 0:  1, 1, 1, 0.5   -> 0.875 (the best)
  size 256 overlap 0:  1, 1, 0, 1     -> 0.75
  size 256 overlap 64: 1, 0, 0, 0.5   -> 0.375 (size 256 keeps its best overlap, 0.75)
  size 128 overlap 0:  1, 0, 0, 1     -> 0.5 (q3 missing from the run: 0; d1 twice: once)
The best's 95% CI, 4 queries: a resample's mean is 1 - j/8 with j ~ Bin(4, 1/4) the draws
of q4; P(j = 4) = 0.4 % < 2.5 % < P(j >= 3) = 5.1 %, so the lower end is 1 - 3/8 = 0.625.
Plateau: the smallest size with recall >= 0.625 is 256 (128's 0.5 is below)."""

from __future__ import annotations

import json

import pytest

from kg_rageval.base.errors import ConfigError
from kg_rageval.cli.main import main
from kg_rageval.families.chunking.sweep import RunSpec, parse_run_spec, sweep_files

QRELS = "q1 0 d1 1\nq2 0 d2 1\nq3 0 d3 1\nq4 0 d4 1\nq4 0 d5 2\nq5 0 d1 0\n"
RUNS = {
    (512, 0): {
        "q1": ["d1", "x"],
        "q2": ["d2", "x"],
        "q3": ["d3", "x"],
        "q4": ["d4", "x", "d5"],
        "q5": ["d1"],
    },
    (256, 0): {"q1": ["d1"], "q2": ["d2"], "q3": ["x", "y", "d3"], "q4": ["d4", "d5"]},
    (256, 64): {"q1": ["d1"], "q2": ["x", "y", "d2"], "q3": ["x", "y"], "q4": ["d4"]},
    (128, 0): {"q1": ["d1", "d1", "d9"], "q2": ["x"], "q4": ["d4", "d5"]},
}


def _files(tmp_path):
    q = tmp_path / "qrels.txt"
    q.write_text(QRELS)
    specs = []
    for (size, ov), run in RUNS.items():
        p = tmp_path / f"run_{size}_{ov}.trec"
        lines = [f"{qid} Q0 {d} {r + 1} {10 - r} t" for qid, docs in run.items() for r, d in enumerate(docs)]
        p.write_text("\n".join(lines) + "\n")
        specs.append(f"size={size},overlap={ov}:{p}")
    return str(q), specs


def test_sweep_by_hand(tmp_path):
    q, specs = _files(tmp_path)
    res = sweep_files(q, [parse_run_spec(s) for s in specs], k=2, n_resamples=2000, seed=0)
    got = {(p.size, p.overlap): p.recall for p in res.points}
    assert got == {(128, 0): 0.5, (256, 0): 0.75, (256, 64): 0.375, (512, 0): 0.875}
    assert [(p.size, p.overlap) for p in res.points] == [(128, 0), (256, 0), (256, 64), (512, 0)]
    assert all(p.n == 4 for p in res.points)  # q5 has no relevant document
    assert {(p.size, p.n_missing_run) for p in res.points if p.n_missing_run} == {(128, 1)}
    assert (res.best.size, res.best.overlap) == (512, 0)
    assert res.best.ci[0] == pytest.approx(0.625)
    assert res.by_size == {128: 0.5, 256: 0.75, 512: 0.875}
    assert res.plateau_size == 256
    for p in res.points:
        assert p.ci[0] <= p.recall <= p.ci[1]


def test_run_spec_syntax():
    assert parse_run_spec("size=256,overlap=32:a/b.trec") == RunSpec(256, 32, "a/b.trec")
    assert parse_run_spec("size=64:c:/x.trec") == RunSpec(64, 0, "c:/x.trec")
    for bad in (
        "run.trec",
        "overlap=3:r",
        "size=x:r",
        "size=8,overlap=8:r",
        "size=8,depth=1:r",
        "size=1,size=2:r",
    ):
        with pytest.raises(ConfigError, match="--run"):
            parse_run_spec(bad)


def test_cli_json_and_text(tmp_path):
    q, specs = _files(tmp_path)
    args = ["chunking", "sweep", "--qrels", q, "-k", "2", "--ci", "2000"]
    for s in specs:
        args += ["--run", s]
    from click.testing import CliRunner

    from kg_rageval.cli.main import cli

    res = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert res.exit_code == 0, res.output
    p = json.loads(res.output)
    assert p["command"] == "chunking sweep" and p["measure"] == "R@2"
    assert p["plateau_size"] == 256 and p["best"] == {"size": 512, "overlap": 0, "recall": 0.875}
    res = CliRunner().invoke(cli, args)
    assert "plateau size: 256" in res.output and "best: size=512, overlap=0" in res.output


def test_cli_bad_input_exit_2(tmp_path, capsys):
    q, specs = _files(tmp_path)
    assert main(["chunking", "sweep", "--qrels", q, "--run", "size=0:" + specs[0].split(":", 1)[1]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "size > 0" in err and "Traceback" not in err
    assert main(["chunking", "sweep", "--qrels", q, "--run", specs[0], "--run", specs[0]]) == 2
    assert "given twice" in capsys.readouterr().err
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 notanumber t\n")
    assert main(["chunking", "sweep", "--qrels", q, "--run", f"size=8:{bad}"]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "line 1" in err and "score" in err


def test_recall_equals_ir_measures(tmp_path):
    """The sweep's recall is ir_measures' R@2 (pytrec_eval) averaged over the queries with a
    relevant document, a query absent from the run counting 0."""
    ir_measures = pytest.importorskip("ir_measures", reason="ir_measures is the dev reference for R@k")
    q, specs = _files(tmp_path)
    res = sweep_files(q, [parse_run_spec(s) for s in specs], k=2, n_resamples=50)
    qrels = list(ir_measures.read_trec_qrels(q))
    answerable = sorted({x.query_id for x in qrels if x.relevance > 0})
    for p in res.points:
        run = list(ir_measures.read_trec_run(p.run))
        per = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.R @ 2], qrels, run)}
        assert p.recall == pytest.approx(sum(per.get(qid, 0.0) for qid in answerable) / len(answerable))
