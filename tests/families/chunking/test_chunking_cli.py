"""``kg-rageval score chunking``: the JSON envelope, per-class breakdown, -O ancestry check,
bad input exit 2 with one line naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kg_rageval.cli.main import cli, main

ROOT = Path(__file__).resolve().parents[3]
DOCS = str(ROOT / "fixtures" / "chunking" / "docs.jsonl")
ONTO = str(ROOT / "ontologies" / "doid-cancer-slim.obo")


def test_score_chunking_json():
    res = CliRunner().invoke(cli, ["score", "chunking", "--data", DOCS, "-O", ONTO, "--format", "json"])
    assert res.exit_code == 0, res.output
    p = json.loads(res.output)
    assert p["command"] == "score chunking" and p["family"] == "chunking"
    assert p["metrics"]["chunking.traceability"]["value"] == 4 / 7
    assert p["metrics"]["chunking.ancestry_rate"]["value"] == 4 / 5
    assert p["metrics"]["chunking.structure_cut_rate"]["value"] == 2 / 4
    assert p["metrics"]["chunking.coherence"]["value"] is None
    bd = p["breakdowns"]["slice:doc_class"]
    assert bd["manual"]["metrics"]["chunking.traceability"]["value"] == 3 / 5
    assert bd["scan"]["metrics"]["chunking.structure_cut_rate"]["value"] == 1.0
    assert p["counts"]["records"] == 5 and p["counts"]["scored_records"] == 3


def test_without_ontology_the_text_says_shape_only():
    res = CliRunner().invoke(cli, ["score", "chunking", "--data", DOCS])
    assert res.exit_code == 0, res.output
    assert "ancestry checked for shape only" in res.output
    assert "1.0000  5/5" in res.output  # ancestry_rate


def test_bad_record_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    ok = {"id": "a", "chunking": {"doc_id": "d", "chunks": [{"id": "c", "start": 0, "end": 3}]}}
    wrong = {"id": "b", "chunking": {"doc_id": "d", "chunks": [{"id": "c", "start": 4, "end": 3}]}}
    bad.write_text(json.dumps(ok) + "\n" + json.dumps(wrong) + "\n")
    assert main(["score", "chunking", "--data", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(bad) in err
    assert "record 'b' (line 2), field chunking.chunks[0].end" in err and "Traceback" not in err


def test_unknown_category_with_ontology_exit_2(tmp_path, capsys):
    bad = tmp_path / "cat.jsonl"
    rec = {"id": "a", "chunking": {"doc_id": "d", "category": "DOID:0000000", "chunks": []}}
    bad.write_text(json.dumps(rec) + "\n")
    assert main(["score", "chunking", "--data", str(bad), "-O", ONTO]) == 2
    err = capsys.readouterr().err
    assert "line 1" in err and "field chunking.category" in err and "not an id of the ontology" in err
