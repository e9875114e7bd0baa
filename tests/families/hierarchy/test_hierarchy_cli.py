"""``kg-rageval score hierarchy`` on the fixture records (fixtures/hierarchy/)."""

from __future__ import annotations

import json

import pytest

from kg_rageval.cli.main import main


@pytest.fixture()
def paths(fixtures_dir):
    d = fixtures_dir / "hierarchy"
    return str(d / "vehicles.obo"), str(d / "records.jsonl"), str(d / "records_issues.jsonl")


def run(capsys, *args):
    code = main(["score", "hierarchy", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_output(capsys, paths):
    onto, records, _ = paths
    code, out, _ = run(capsys, "-O", onto, "-d", records, "--format", "json")
    assert code == 0
    d = json.loads(out)
    m = {k.split(".", 1)[1]: v for k, v in d["metrics"].items()}  # canonical names: hierarchy.<metric>
    assert set(d) >= {"command", "family", "ontology", "counts", "metrics", "unscored", "breakdowns"}
    # q1 sibling (1/2/2), q2 cousin (0/2/2), q3 exact (2/2/2), q4 parent (1/1/2),
    # q5 NIL prediction (0/0/3), q6 NIL gold (0/1/0): inter, |P̂|, |T̂|
    assert m["hierarchical_precision"]["numerator"] == 4 and m["hierarchical_precision"]["denominator"] == 8
    assert m["hierarchical_recall"]["value"] == pytest.approx(4 / 11)
    assert m["exact_accuracy"]["value"] == pytest.approx(1 / 6)
    assert d["relations"] == {
        "exact": 1,
        "parent": 1,
        "sibling": 1,
        "cousin": 1,
        "nil_pred": 1,
        "nil_gold": 1,
    }
    assert d["unscored"] == {"no labels section": 1}
    assert d["branches"]["VH:car"]["n"] == 4  # q1, q2, q3, q5 have gold nodes under car
    assert d["branches"]["VH:hatchback"]["metrics"]["hierarchy.hierarchical_precision"][
        "value"
    ] == pytest.approx(1 / 4)
    assert d["breakdowns"]["slice:intent"]["browse"]["n"] == 3
    assert {"gold": "VH:submarine", "pred": "VH:boat", "relation": "parent", "count": 1} in d[
        "confused_pairs"
    ]
    # the same ontology reference as every other score command
    assert set(d["ontology"]) == {"source", "hash"} and d["ontology"]["hash"].startswith("sha256:")
    assert "rows" not in d
    code, out, _ = run(capsys, "-O", onto, "-d", records, "--format", "json", "--include-root", "--rows")
    d = json.loads(out)
    assert (
        d["metrics"]["hierarchy.hierarchical_precision"]["denominator"] == 8 + 5
    )  # the root in 5 predictions
    assert len(d["rows"]) == 6


def test_text_output(capsys, paths):
    onto, records, _ = paths
    code, out, _ = run(capsys, "-O", onto, "-d", records)
    assert code == 0
    assert "hierarchical_f1" in out and "relations (rate = count / errors)" in out
    assert "VH:hatchback" in out and "sibling" in out


def test_unknown_and_status_options(capsys, paths):
    onto, _, issues = paths
    code, _, err = run(capsys, "-O", onto, "-d", issues, "--on-unknown", "error")
    assert code == 2 and "VH:spaceship" in err and "--on-unknown count" in err
    code, _, err = run(capsys, "-O", onto, "-d", issues, "--on-status", "error")
    assert code == 2 and "VH:saloon" in err and "deprecated" in err
    code, out, _ = run(capsys, "-O", onto, "-d", issues, "--on-status", "replace", "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["relations"] == {"exact": 1, "child": 1, "not_in_ontology": 1}
    # the defaults: a predicted id the ontology lacks is counted, an inactive one flagged
    code, out, _ = run(capsys, "-O", onto, "-d", issues, "--format", "json")
    assert code == 0 and json.loads(out)["relations"] == {"child": 1, "not_in_ontology": 1, "inactive": 1}


def test_records_without_labels_fail(capsys, paths, tmp_path):
    onto, _, _ = paths
    empty = tmp_path / "none.jsonl"
    empty.write_text('{"id": "x", "query": "no labels"}\n')
    code, _, err = run(capsys, "-O", onto, "-d", str(empty))
    assert code != 0 and "labels section" in err


def test_unknown_and_inactive_id_errors_name_the_file(paths, capsys):
    onto, _, issues = paths
    from kg_rageval.cli.main import main

    code = main(["score", "hierarchy", "-O", onto, "-d", issues, "--on-unknown", "error"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(
        f"error: {issues}, record 'r2' (line 2), field labels.pred[0]: unknown ontology id 'VH:spaceship'"
    )
    code = main(["score", "hierarchy", "-O", onto, "-d", issues, "--on-status", "error"])
    err = capsys.readouterr().err
    assert (
        code == 2
        and f"'VH:saloon' is deprecated (replaced by 'VH:sedan') ({issues}, record 'r1' (line 1)" in err
    )


def test_empty_file_and_no_labels_section_name_the_file(paths, capsys, tmp_path):
    onto = paths[0]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["score", "hierarchy", "-O", onto, "-d", str(empty), "--format", "json"]) == 2
    assert capsys.readouterr().err == f"error: {empty}: no records to score\n"
    bare = tmp_path / "bare.jsonl"
    bare.write_text('{"id": "a", "query": "x"}\n{"id": "b"}\n')
    assert main(["score", "hierarchy", "-O", onto, "-d", str(bare)]) == 2
    assert capsys.readouterr().err == (
        f"error: {bare}: none of the 2 records has a labels section with gold and pred lists\n"
    )
