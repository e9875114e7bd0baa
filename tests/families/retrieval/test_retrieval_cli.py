"""``kg-rageval score retrieval``: text and JSON output on the fixture files."""

from __future__ import annotations

import json

from kg_rageval.cli.main import main


def _run(capsys, *args):
    code = main(["score", "retrieval", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_json_seed_metrics(fixtures_dir, capsys):
    d = fixtures_dir / "retrieval"
    code, out, _ = _run(
        capsys,
        "--ontology",
        str(d / "attack-mini.tsv"),
        "--data",
        str(d / "seed_metrics.jsonl"),
        "--k",
        "5",
        "--format",
        "json",
    )
    assert code == 0
    p = json.loads(out)
    assert round(p["metrics"]["retrieval.recall@5"]["value"], 3) == 0.750
    assert round(p["metrics"]["retrieval.ndcg@5"]["value"], 3) == 0.627
    assert p["metrics"]["retrieval.filter_false_exclusion_rate"]["value"] is None


def test_cli_records_measure_selects_and_refuses(fixtures_dir, capsys):
    """``-m`` with ``--data`` selects the measures (it was ignored: every default metric was
    printed and ``R@3`` was absent); a measure records cannot give is refused, named, exit 2."""
    d = fixtures_dir / "retrieval"
    base = ["--ontology", str(d / "attack-mini.tsv"), "--data", str(d / "seed_metrics.jsonl")]
    code, out, _ = _run(capsys, *base, "-m", "R@3,RR", "-m", "AP", "--format", "json")
    assert code == 0
    p = json.loads(out)
    # by hand: R@3 = (1 + 1/2 + 1 + 0)/4; RR = (1/2 + 1 + 1 + 0)/4; AP = (1/2 + (1 + 2/4)/2 + 1 + 0)/4
    assert {k: v["value"] for k, v in p["metrics"].items()} == {
        "retrieval.recall@3": 0.625,
        "retrieval.mrr": 0.625,
        "retrieval.map": 0.5625,
    }
    assert p["measures"] == ["retrieval.recall@3", "retrieval.mrr", "retrieval.map"]
    code, out, _ = _run(capsys, *base, "-m", "ndcg_cut_5")
    assert code == 0 and "ndcg@5" in out and "recall@10" not in out and "0.627" in out
    code, out, err = _run(capsys, *base, "-m", "nDCG@5,ERR@10,P(rel=2)@5")
    assert code == 2 and out == ""
    assert "ERR@10, P(rel=2)@5: not computed from records" in err and "--qrels/--run" in err
    code, _, err = _run(capsys, *base, "-m", "nDGC@5")
    assert code == 2 and "nDGC" in err


def test_cli_corpus_diagnosis_and_rollup(fixtures_dir, capsys):
    d = fixtures_dir / "retrieval"
    args = [
        "--ontology",
        str(d / "attack-mini.tsv"),
        "--data",
        str(d / "category_records.jsonl"),
        "--corpus",
        str(d / "category_corpus.jsonl"),
    ]
    code, out, _ = _run(capsys, *args, "--format", "json")
    assert code == 0
    p = json.loads(out)
    assert p["metrics"]["retrieval.filter_false_exclusion_rate"]["value"] == 0.5
    assert p["rollup"]["T1562"]["metrics"]["retrieval.filter_false_exclusion_rate"]["value"] == 1.0
    assert p["breakdowns"]["slice:intent"]["lookup"]["n"] == 4
    assert p["category_diagnosis"]["sentences"][0].startswith(
        "67% of false exclusions (2/3) come from sibling"
    )
    code, out, _ = _run(capsys, *args)
    assert code == 0 and "filter_false_exclusion_rate" in out and "under T1562 (Impair Defenses)" in out


def test_cli_bad_input_exit_2(fixtures_dir, tmp_path, capsys):
    d = fixtures_dir / "retrieval"
    bad = tmp_path / "r.jsonl"
    bad.write_text('{"id": "x", "retrieval": {"gold": ["a"], "run": ["b", "b"]}}\n')
    code, _, err = _run(capsys, "--ontology", str(d / "attack-mini.tsv"), "--data", str(bad))
    assert code == 2 and "'b' more than once" in err
    code, out, _ = _run(
        capsys, "--ontology", str(d / "attack-mini.tsv"), "--data", str(bad), "--dedupe", "--format", "json"
    )
    assert code == 0 and json.loads(out)["metrics"]["retrieval.n_duplicates_removed"]["value"] == 1


def test_cli_rollup_bounded_equals_full_on_kept_nodes(fixtures_dir, capsys):
    """``--rollup-depth`` keeps the nodes down to that depth (plus ``--rollup-node``), each with
    the same numbers as the full roll-up (``--rollup-depth`` large enough for every node)."""
    d = fixtures_dir / "retrieval"
    args = [
        "--ontology",
        str(d / "attack-mini.tsv"),
        "--data",
        str(d / "category_records.jsonl"),
        "--corpus",
        str(d / "category_corpus.jsonl"),
        "--format",
        "json",
    ]
    full = json.loads(_run(capsys, *args, "--rollup-depth", "99")[1])["rollup"]
    deep = {n: g for n, g in full.items() if g["depth"] >= 1}
    assert deep and len(full) > len(deep)
    top = json.loads(_run(capsys, *args, "--rollup-depth", "0")[1])
    assert top["rollup_depth"] == 0
    assert set(top["rollup"]) == {n for n, g in full.items() if g["depth"] == 0}
    assert all(top["rollup"][n] == full[n] for n in top["rollup"])
    node = next(iter(deep))
    both = json.loads(_run(capsys, *args, "--rollup-depth", "0", "--rollup-node", node)[1])["rollup"]
    assert set(both) == set(top["rollup"]) | {node} and both[node] == full[node]
    code, _, err = _run(capsys, *args, "--rollup-node", "NOPE")
    assert code == 2 and "NOPE" in err


def test_cli_streams_records_and_counts_every_record(fixtures_dir, tmp_path, capsys):
    """``--data`` is scored in chunks; the output equals the one-chunk output and the record
    count includes the record without a retrieval section (unscored)."""
    d = fixtures_dir / "retrieval"
    data = tmp_path / "r.jsonl"
    data.write_text((d / "seed_metrics.jsonl").read_text() + '{"id": "no-retrieval", "query": "q"}\n')
    outs = []
    for size in ("1", "2", "65536"):
        code, out, _ = _run(
            capsys,
            "--ontology",
            str(d / "attack-mini.tsv"),
            "--data",
            str(data),
            "--k",
            "5",
            "--chunk-size",
            size,
            "--rows",
            "--format",
            "json",
        )
        assert code == 0
        outs.append(json.loads(out))
    assert outs[0] == outs[1] == outs[2]
    assert outs[0]["counts"]["records"] == 5 and outs[0]["counts"]["unscored"] == 1
    assert round(outs[0]["metrics"]["retrieval.recall@5"]["value"], 3) == 0.750
