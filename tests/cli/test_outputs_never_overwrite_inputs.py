"""No command writes over one of its own inputs: the same path, a symlink or a hard link to an
input is refused with exit 2 before anything is written, and the input keeps every byte."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kg_rageval.base.errors import ConfigError
from kg_rageval.base.outputs import refuse_overwrite, same_file
from kg_rageval.base.resources import bundled_ontology
from kg_rageval.cli.main import main

QUALITY = Path(__file__).resolve().parents[2] / "fixtures" / "quality"


def _copy(src: Path, dst: Path) -> tuple[Path, bytes]:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst, dst.read_bytes()


def test_same_file_sees_paths_symlinks_and_hard_links(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text("x\n")
    os.link(a, tmp_path / "hard.jsonl")
    os.symlink(a, tmp_path / "soft.jsonl")
    assert same_file(a, tmp_path / "sub" / ".." / "a.jsonl")
    assert same_file(a, tmp_path / "hard.jsonl") and same_file(tmp_path / "soft.jsonl", a)
    assert not same_file(a, tmp_path / "b.jsonl")  # b does not exist: not the same
    with pytest.raises(ConfigError, match=r"--out .*hard\.jsonl is the same file as the input -d .*a\.jsonl"):
        refuse_overwrite({"--out": tmp_path / "hard.jsonl"}, {"-d": a})
    with pytest.raises(ConfigError, match="are the same file"):
        refuse_overwrite({"--out": a, "--report": tmp_path / "soft.jsonl"}, {"-d": None})
    refuse_overwrite({"--out": tmp_path / "new.jsonl", "--report": None}, {"-d": a, "--ontology": None})


def test_testset_split_refuses_to_write_over_its_records(tmp_path, capsys):
    rec, before = _copy(QUALITY / "records.jsonl", tmp_path / "sets" / "release.jsonl")
    assert main(["testset", "split", "--records", str(rec), "--out", str(tmp_path / "sets")]) == 2
    assert "is the same file as the input --records" in capsys.readouterr().err
    assert rec.read_bytes() == before and sorted(p.name for p in (tmp_path / "sets").iterdir()) == [
        "release.jsonl"
    ]


def test_testset_build_refuses_to_write_over_its_corpus(tmp_path, capsys):
    corpus, before = _copy(QUALITY / "records.jsonl", tmp_path / "ts" / "records.jsonl")
    assert (
        main(
            [
                "testset",
                "build",
                "-O",
                str(bundled_ontology("doid-cancer-slim.obo")),
                "--corpus",
                str(corpus),
                "--out",
                str(tmp_path / "ts"),
            ]
        )
        == 2
    )
    assert "is the same file as the input --corpus" in capsys.readouterr().err
    assert corpus.read_bytes() == before


def test_ontology_compile_and_link_refuse_their_input(tmp_path, capsys):
    onto, before = _copy(QUALITY / "vehicles.csv", tmp_path / "v.csv")
    assert main(["ontology", "compile", str(onto), "-o", str(onto)]) == 2
    assert "--output" in capsys.readouterr().err and onto.read_bytes() == before
    text = tmp_path / "t.txt"
    text.write_text("a sedan\n")
    os.link(text, tmp_path / "t-link.txt")
    assert main(["link", "-O", str(onto), "--text", str(text), "-o", str(tmp_path / "t-link.txt")]) == 2
    assert "is the same file as the input TEXT" in capsys.readouterr().err and text.read_text() == "a sedan\n"


@pytest.mark.parametrize("family", ["judges", "system"])
def test_score_write_records_refuses_the_data_file(tmp_path, capsys, family):
    data, before = _copy(QUALITY / "records.jsonl", tmp_path / "r.jsonl")
    os.symlink(data, tmp_path / "r-link.jsonl")
    assert main(["score", family, "-d", str(data), "--write-records", str(tmp_path / "r-link.jsonl")]) == 2
    assert "is the same file as the input --data" in capsys.readouterr().err
    assert data.read_bytes() == before


def test_write_records_is_atomic_and_leaves_a_hard_link_intact(tmp_path):
    from kg_rageval.records import write_records

    a = tmp_path / "a.jsonl"
    a.write_text('{"id": "old"}\n')
    os.link(a, tmp_path / "b.jsonl")
    write_records(a, [{"id": "new"}])
    assert a.read_text() == '{"id": "new"}\n' and (tmp_path / "b.jsonl").read_text() == '{"id": "old"}\n'
    with pytest.raises(TypeError):
        write_records(a, [{"id": object()}])  # fails half-way: the old file stays whole
    assert a.read_text() == '{"id": "new"}\n' and sorted(p.name for p in tmp_path.iterdir()) == [
        "a.jsonl",
        "b.jsonl",
    ]
