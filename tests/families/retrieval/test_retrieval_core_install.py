"""The core install (no numba, no pandas) reads TREC files and scores them exactly like the
fast paths. Before, a run read without numba had its documents coded into a vocabulary that was
then thrown away: ``score retrieval --qrels/--run`` crashed (IndexError) on the project's own
trec_eval fixture and ``compare`` crashed too — CI only ever tested the full install."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg_rageval.cli.main import main
from kg_rageval.families.retrieval import _kernels
from kg_rageval.families.retrieval import runs as runs_mod
from kg_rageval.families.retrieval.trec import load_qrels, load_run

TREC = Path(__file__).resolve().parents[3] / "fixtures" / "trec_eval"


@pytest.fixture()
def core_install(monkeypatch):
    """What ``pip install -e .`` gives: the compiled reader and pandas' hash table absent."""
    monkeypatch.setattr(_kernels, "HAVE_NUMBA", False)
    monkeypatch.setattr(runs_mod, "factorize", lambda ids: None)


def _read(run_name: str):
    q = load_qrels(TREC / "qrels.test")
    return q, load_run(TREC / run_name, vocab=None)


@pytest.mark.parametrize("run_name", ["results.test", "results.trunc", "results.comment.test.gz"])
def test_a_run_read_without_numba_keeps_its_documents(core_install, run_name):
    _, run = _read(run_name)
    assert len(run.vocab) == len(set(run.vocab.strings)) > 0
    assert int(run.docs.max()) < len(run.vocab)  # every code names a document of the vocabulary
    first = run.qids[0]
    lines = [ln.split() for ln in (TREC / "results.test").read_text().splitlines() if ln.strip()]
    if run_name == "results.test":
        assert run.qids == sorted({ln[0] for ln in lines}, key=[ln[0] for ln in lines].index)
        assert {run.vocab.strings[int(d)] for d in run.docs[run.ptr[0] : run.ptr[1]]} == {
            ln[2] for ln in lines if ln[0] == first
        }


def _cli_json(capsys, *args: str) -> dict:
    assert main([*args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _strip_seconds(x):
    if isinstance(x, dict):
        return {k: _strip_seconds(v) for k, v in x.items() if k not in ("seconds", "timings")}
    if isinstance(x, list):
        return [_strip_seconds(v) for v in x]
    return x


def test_score_retrieval_and_compare_equal_the_fast_paths(capsys, monkeypatch):
    score = ["score", "retrieval", "--qrels", str(TREC / "qrels.test"), "--run", str(TREC / "results.test")]
    cmp = [
        "compare",
        "--qrels",
        str(TREC / "qrels.test"),
        "--run",
        str(TREC / "results.test"),
        "--run",
        str(TREC / "results.trunc"),
    ]
    fast = [_cli_json(capsys, *score), _cli_json(capsys, *cmp)]
    monkeypatch.setattr(_kernels, "HAVE_NUMBA", False)
    monkeypatch.setattr(runs_mod, "factorize", lambda ids: None)
    core = [_cli_json(capsys, *score), _cli_json(capsys, *cmp)]
    assert _strip_seconds(core) == _strip_seconds(fast)
    values = core[0]["runs"][0][
        "values"
    ]  # trec_eval's own output for this pair (fixtures/trec_eval/out.test)
    assert (round(values["AP"], 4), round(values["RR"], 4), round(values["P@10"], 4)) == (0.1785, 0.4064, 0.3)
    assert values["NumRet"] == 1500 and values["NumRel"] == 561 and values["NumRelRet"] == 131
