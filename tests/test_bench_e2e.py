"""``benchmarks/bench_e2e.py`` at a tiny size: the data is generated, every selected command
runs through the CLI and exits 0/1, its anchors run, and the Markdown table has one row per
command and anchor (the figures themselves are not checked: docs/performance.md)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import bench_e2e
    finally:
        sys.path.remove(str(ROOT))
    return bench_e2e


def test_slugs_and_selection(bench):
    assert bench.slug("score retrieval (TREC files)") == "score-retrieval-trec-files"
    assert bench.selected("score retrieval (TREC files)", {"score-retrieval"})
    assert bench.selected("score retrieval (TREC files)", {"score"})
    assert not bench.selected("score retrieval (TREC files)", {"score-ret"})  # whole words only
    assert not bench.selected("records rebase", {"score"})


def test_markdown_rows(bench):
    rows = [
        {
            "command": "link",
            "n": 1000,
            "cpu_s": 1.5,
            "peak_mb": 80.4,
            "anchors": [{"anchor": "pyahocorasick", "cpu_s": 0.5, "ratio": 3.0}],
        },
        {
            "command": "audit",
            "n": 1000,
            "cpu_s": 2.0,
            "peak_mb": 100.0,
            "anchors": [
                {"anchor": "json.loads", "cpu_s": 0.25, "ratio": 8.0},
                {"anchor": "orjson.loads", "cpu_s": 0.1, "ratio": 20.0},
            ],
        },
    ]
    lines = bench.markdown(rows, {"n": 1000}).splitlines()
    assert lines[1] == "| command | n | CPU s | peak MB | anchor | anchor CPU s | ratio |"
    assert lines[3] == "| `link` | 1,000 | 1.50 | 80 | pyahocorasick | 0.50 | 3.00× |"
    assert lines[5] == "| 〃 | | | | orjson.loads | 0.10 | 20.00× |"


@pytest.mark.slow
def test_tiny_run(bench, tmp_path):
    out, raw = tmp_path / "table.md", tmp_path / "raw.json"
    only = "metrics,score-hierarchy,link,ontology-compile-edge-table,records-rebase"
    rows = bench.main(
        [
            "--n",
            "30",
            "--nodes",
            "200",
            "--startup-repeat",
            "1",
            "--only",
            only,
            "--out",
            str(out),
            "--json",
            str(raw),
            "--keep",
            str(tmp_path / "data"),
        ]
    )
    names = [r["command"] for r in rows]
    assert names == [
        "metrics",
        "score hierarchy (7 records)",
        "score hierarchy",
        "link",
        "ontology compile (edge table)",
        "records rebase",
    ]
    by = {r["command"]: r for r in rows}
    assert by["score hierarchy"]["n"] == 30 and by["ontology compile (edge table)"]["n"] == 200
    assert all(r["cpu_s"] > 0 and r["peak_mb"] > 0 for r in rows)
    assert [a["anchor"] for a in by["metrics"]["anchors"]] == [
        "python -c pass",
        "import numpy",
        "import numpy, short BLAS spin",
    ]
    if importlib.util.find_spec("ahocorasick"):
        assert by["link"]["anchors"][0]["anchor"] == "pyahocorasick"
    assert all(a["ratio"] > 0 for r in rows for a in r["anchors"])
    table = out.read_text()
    assert table.count("\n") == 3 + sum(max(1, len(r["anchors"])) for r in rows)
    assert json.loads(raw.read_text())["rows"] == rows
    assert (tmp_path / "data" / "records.jsonl").read_text().count("\n") == 30


def test_unknown_selector_is_refused(bench, tmp_path):
    with pytest.raises(SystemExit, match="no command matches"):
        bench.main(["--n", "5", "--nodes", "50", "--only", "nope", "--keep", str(tmp_path)])
