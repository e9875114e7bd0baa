"""``kg-rageval import ... --link ONTOLOGY``: the dictionary linker's ids under ``linked`` (linked,
not labelled) and ``slices.linked_branch``, so a family's breakdowns go per branch."""

from __future__ import annotations

import json
from pathlib import Path

from kg_rageval.cli.main import main
from kg_rageval.records import read_records

ROOT = Path(__file__).resolve().parents[2]
VEHICLES = ROOT / "fixtures" / "generation" / "vehicles.csv"


def test_link_attaches_linked_ids_and_a_branch_slice(tmp_path, capsys):
    rows = [
        {
            "id": "q1",
            "user_input": "Is a sedan a car?",
            "retrieved_contexts": ["A hatchback is a car.", "Nothing here."],
            "response": "Yes, a sedan is a car.",
            "reference": "yes",
        },
        {"id": "q2", "user_input": "What floats?", "response": "A boat."},
        {"id": "q3", "user_input": "Hello", "response": "Hi"},
    ]
    src = tmp_path / "r.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "o.jsonl"
    assert (
        main(["import", "ragas", str(src), "-o", str(out), "--link", str(VEHICLES), "--format", "json"]) == 0
    )
    link = json.loads(capsys.readouterr().out)["link"]
    # q1: sedan, car (query) + sedan, car (answer) + hatchback, car (context 1); q2: boat (answer)
    assert link == {
        "ontology": str(VEHICLES),
        "linker": "dictionary",
        "n_linked_queries": 1,
        "n_mentions": 7,
        "n_abstained": 0,
    }
    q1, q2, q3 = read_records(out)
    assert q1["linked"] == {
        "by": "dictionary",
        "ontology": str(VEHICLES),
        "query": ["sedan", "car"],
        "answer": ["sedan", "car"],
        "contexts": [["hatchback", "car"], []],
    }
    assert q1["slices"] == {"linked_branch": "car"}  # sedan's ancestor at depth 1
    assert "labels" not in q1 and "concepts" not in q1["reference"]  # linked, not labelled
    assert q2["linked"]["query"] == [] and q2["linked"]["answer"] == ["boat"] and "slices" not in q2
    assert q3["linked"] == {"by": "dictionary", "ontology": str(VEHICLES), "query": [], "answer": []}
    capsys.readouterr()
    args = ["score", "generation", "--ontology", str(VEHICLES), "-d", str(out), "--format", "json"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    breakdowns = json.loads(printed[printed.index("{") :])["breakdowns"]
    assert breakdowns["slice:linked_branch"]["car"]["n"] >= 1  # the per-branch numbers of day one
