"""The bundled demo as test data for every registered family (shared by tests/scoring/test_contract.py
and tests/scoring/test_streaming.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kg_rageval.scoring import get_scorer


def add_relation_questions(path: Path, onto: Any) -> None:
    """The demo has no relation answers: give each record with a gold concept a list question
    ("which subtypes of <gold>?", answered with the first subtype) so the relations family
    meets the same records as every other family."""
    lines = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        gold = ((rec.get("labels") or {}).get("gold") or [None])[0]
        if gold in onto:
            subtypes = onto.children(gold) or [gold]
            rec["relations"] = {"node": gold, "gold_answers": subtypes, "answers": subtypes[:1]}
        lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n")


def family_inputs(name: str, demo: dict) -> dict:
    """The demo's extra input files (corpus, spec) that family ``name`` declares."""
    return {i.name: demo["inputs"][i.name] for i in get_scorer(name).inputs if i.name in demo["inputs"]}
