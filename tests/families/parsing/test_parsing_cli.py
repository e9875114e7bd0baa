"""``kg-rageval score parsing``: the JSON envelope, per-class breakdown, bad input exit 2."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kg_rageval.cli.main import cli, main

SEED_REF = "Mars has two moons, Phobos and Deimos."
SEED_HYP = "Mars has two m00ns, Phobos and Deirnos."


def _write(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(path)


def test_score_parsing_json(tmp_path):
    data = _write(
        tmp_path / "p.jsonl",
        [
            {
                "id": "a",
                "slices": {"doc_class": "scan"},
                "parsing": {"reference": SEED_REF, "extracted": SEED_HYP},
            },
            {
                "id": "b",
                "slices": {"doc_class": "invoice"},
                "parsing": {"reference": "total 12", "extracted": "total 12"},
            },
            {"id": "c", "slices": {"doc_class": "invoice"}, "parsing": {"reference": "", "extracted": "x"}},
        ],
    )
    res = CliRunner().invoke(cli, ["score", "parsing", "--data", data, "--format", "json"])
    assert res.exit_code == 0, res.output
    p = json.loads(res.output)
    assert p["command"] == "score parsing"
    assert p["metrics"]["parsing.cer"]["value"] == 4 / 46  # (4 + 0) / (38 + 8)
    bd = p["breakdowns"]["slice:doc_class"]
    assert bd["scan"]["metrics"]["parsing.cer"]["value"] == 4 / 38
    assert bd["invoice"]["metrics"]["parsing.cer"]["value"] == 0.0
    assert p["counts"]["records"] == 3
    assert p["unscored"] == {"empty reference text: no characters to score against": 1}


def test_score_parsing_bad_record_exit_2(tmp_path, capsys):
    data = _write(tmp_path / "bad.jsonl", [{"id": "a", "parsing": {"reference": 1, "extracted": "x"}}])
    assert main(["score", "parsing", "--data", data]) == 2
    err = capsys.readouterr().err
    assert "record 'a' (line 1), field parsing.reference" in err and "Traceback" not in err
