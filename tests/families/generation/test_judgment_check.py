"""The judgment check without pydantic (issue #33): ``parse_judgment`` gives the outcome the
pydantic model gives (the reference: ``Judgment.model_validate`` and its error message) on
every kind of payload, and scoring well-formed judgments does not import pydantic."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import pytest
from pydantic import ValidationError

from kg_rageval.families.generation.judgment import Judgment, JudgmentOutcome, parse_judgment
from kg_rageval.families.judges.contracts import json_object, validation_message

ROOT = Path(__file__).resolve().parents[3]


def reference(raw):
    """The pydantic-only parse (the code before issue #33)."""
    if isinstance(raw, Judgment):
        return JudgmentOutcome(raw)
    raw, err = json_object(raw)
    if err:
        return JudgmentOutcome(None, err)
    if not isinstance(raw, dict):
        return JudgmentOutcome(None, f"judgment must be an object, found {type(raw).__name__}")
    try:
        return JudgmentOutcome(Judgment.model_validate(raw))
    except ValidationError as exc:
        return JudgmentOutcome(None, f"judgment breaks the contract: {validation_message(exc, 'judgment')}")


def J(claims, supported, unsupported, **more):
    return {"claims": claims, "supported": supported, "unsupported": unsupported, **more}


PAYLOADS = [
    J(["a", "b"], ["a"], ["b"]),
    J(["a", "b"], ["a"], ["b"], failure_mode="unsupported_claim", rationale="why"),
    J(["a"], ["a"], [], failure_mode=None, rationale=None),
    J([], [], []),
    J(["b", "a"], ["a", "b"], []),
    J(["a", "b"], ["a", "b"], ["b"]),  # both
    J(["a", "b"], ["a"], []),  # not judged
    J(["a"], ["a", "z"], []),  # not extracted
    J(["a", "a"], ["a"], []),  # repeats
    J(["a"], ["a", "a"], []),
    J(["a", " "], ["a"], [" "]),  # empty claim
    J(["a"], ["a"], [""]),
    J(["a"], ["a"], [], score=1),  # extra key
    J(["a"], ["a"], [], score=1, other=None),
    {"claims": ["a"], "supported": ["a"]},  # missing
    {},
    J(["a", 1], ["a"], [1]),  # not a string
    J("a", "a", []),  # not a list
    J(None, [], []),
    J(["a"], ["a"], [], failure_mode=3),
    J(["a"], ["a"], [], rationale=["x"]),
    J(("a",), ("a",), ()),  # tuples
    J([True], [True], []),
    OrderedDict(J(["a"], ["a"], [])),  # a dict subclass
    OrderedDict(J(["a"], ["a", "b"], [])),
    '{"claims": ["x"], "supported": ["x"], "unsupported": []}',
    '```json\n{"claims": ["x", "y"], "supported": ["x"], "unsupported": ["y"]}\n```',
    '{"claims": ["x"], "supported": [], "unsupported": []}',
    '{"claims": [}',
    "I refuse to judge",
    ["x"],
    3,
    None,
    Judgment(claims=["a"], supported=[], unsupported=["a"]),
]


@pytest.mark.parametrize("raw", PAYLOADS, ids=range(len(PAYLOADS)))
def test_same_outcome_as_the_model(raw):
    got, want = parse_judgment(raw), reference(raw)
    assert got == want
    assert (got.status, got.error, got.valid) == (want.status, want.error, want.judgment is not None)
    j = want.judgment
    assert (got.n_claims, got.n_supported, got.failure_mode, got.faithfulness) == (
        (0, 0, None, None) if j is None else (j.n_claims, j.n_supported, j.failure_mode, j.faithfulness)
    )
    if j is not None:
        assert isinstance(got.judgment, Judgment) and got.judgment == j


def test_checked_outcome_keeps_its_own_lists():
    raw = J(["a", "b"], ["a"], ["b"])
    out = parse_judgment(raw)
    raw["claims"].append("c")
    raw["supported"].clear()
    assert (out.n_claims, out.n_supported, out.faithfulness) == (2, 1, 0.5)
    assert out.judgment == Judgment(claims=["a", "b"], supported=["a"], unsupported=["b"])


def test_error_messages():
    assert parse_judgment(J(["a", "a"], ["a"], [])).error == (
        "judgment breaks the contract: judgment: Value error, claims repeats claim(s) ['a']; "
        "claims must be distinct"
    )
    assert parse_judgment(J(["a"], ["a"], [], x=1)).error == (
        "judgment breaks the contract: x: Extra inputs are not permitted"
    )
    assert parse_judgment(J(["a", 1], ["a"], [1])).error == (
        "judgment breaks the contract: claims.1: Input should be a valid string; "
        "unsupported.0: Input should be a valid string"
    )


_PROBE = """
import json, sys
from kg_rageval.families.generation import score_faithfulness
recs = [{"id": "a", "answer": {"text": "t", "judgment": {"claims": ["x", "y"], "supported": ["x"],
         "unsupported": ["y"]}}},
        {"id": "b", "answer": {"text": "t", "judgment": {"claims": [], "supported": [], "unsupported": []}}}]
ev = score_faithfulness(recs)
print(json.dumps({"pydantic": "pydantic" in sys.modules, "sum": ev.stats["faithfulness_sum"].tolist(),
                  "status": ev.details["status"].tolist()}))
"""


def test_well_formed_judgments_score_without_pydantic():
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=True,
        timeout=120,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"pydantic": False, "sum": [0.5, 0.0], "status": ["scored", "no_claims"]}
