"""The pydantic-free reading of plainly valid verdicts (issue #33, start-up of ``score judges``:
``kg_rageval.families.judges.rules.plain_verdict``) against the rubric models: on every output
of a generated set — each rubric's fields with values of every JSON type, in and out of range,
with and without the passage and citation context, as objects and as text — whatever it
accepts the model accepts with the same status and label, and it accepts the usual valid
verdicts (so a tiny run does not import pydantic)."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kg_rageval.families.judges.contracts import RUBRICS, parse_verdict
from kg_rageval.families.judges.labels import RUBRIC_LABELS
from kg_rageval.families.judges.rules import plain_verdict

POOL = [
    None,
    True,
    False,
    0,
    1,
    0.0,
    0.5,
    1.0,
    1.5,
    -0.1,
    math.nan,
    math.inf,
    2**70,
    "",
    " ",
    "x",
    "0.5",
    "true",
    [],
    ["x"],
    ["x", " "],
    [1],
    {},
    {"a": 1},
]
FIELDS = {
    "pairwise": ["confidence"],
    "citation_support": ["claim", "citation", "evidence"],
    "refusal": ["answerable", "refused"],
    "answer_correctness": ["score", "missing_facts", "wrong_facts"],
    "nugget_support": ["nugget"],
}
CONTEXTS = [{}, {"passage": "The Quick brown  fox.", "citation": "d1"}]


def _outputs(rubric: str):
    verdicts = [*RUBRIC_LABELS[rubric].LABELS, "unscorable", "nope", 1, None]
    rationales = [None, "because", " ", 3]
    extra = FIELDS[rubric]
    for v, r in itertools.product(verdicts, rationales):
        base = {"verdict": v} if r is None else {"verdict": v, "rationale": r}
        yield base
        for f in extra:
            for x in POOL:
                yield {**base, f: x}
        if len(extra) > 1:  # two fields set together from a few telling values
            few = [None, True, "x", "quick brown fox", "d1", "d2", 1.0, 0.5, [], ["x"]]
            for a, b in itertools.product(few, few):
                yield {**base, extra[0]: a, extra[1]: b}
        yield {**base, "unknown": 1}
    yield {"rationale": "no verdict"}
    yield ["not", "an", "object"]


@pytest.mark.parametrize("rubric", list(RUBRICS))
def test_plain_verdicts_are_the_models_verdicts(rubric):
    accepted = 0
    for out in _outputs(rubric):
        for ctx in CONTEXTS:
            for raw in (out, json.dumps(out, allow_nan=True)):
                plain = plain_verdict(rubric, raw, ctx)
                if plain is None:
                    continue
                accepted += 1
                model = parse_verdict(RUBRICS[rubric], raw, context=ctx)
                assert model.error is None, (out, ctx, model.error)
                assert (model.status, model.label) == plain, (out, ctx)
    assert accepted > 50


def test_usual_valid_verdicts_are_read_without_the_model():
    assert plain_verdict("answer_correctness", {"verdict": "correct"}) == ("scored", "correct")
    assert plain_verdict("answer_correctness", {"verdict": "incorrect", "missing_facts": ["x"]}) == (
        "scored",
        "incorrect",
    )
    assert plain_verdict("pairwise", '```json\n{"verdict": "B", "confidence": 1}\n```') == ("scored", "B")
    assert plain_verdict("refusal", {"verdict": "unscorable", "rationale": "no question"}) == (
        "unscorable",
        None,
    )
    ctx = {"passage": "The Quick  brown fox", "citation": "d1"}
    ok = {"verdict": "supported", "claim": "c", "evidence": "quick brown", "citation": "d1"}
    assert plain_verdict("citation_support", ok, ctx) == ("scored", "supported")
    assert plain_verdict("citation_support", {**ok, "citation": "d2"}, ctx) is None  # the model says why


def test_a_tiny_score_judges_with_an_invalid_verdict_reports_the_models_error(tmp_path):
    """The CLI in a fresh interpreter: the invalid verdict's message is pydantic's."""
    rec = {
        "id": "r1",
        "judges": [
            {"rubric": "pairwise", "judge": "j", "output": {"verdict": "A", "confidence": 2}, "human": "A"},
            {"rubric": "pairwise", "judge": "j", "output": {"verdict": "B"}, "human": "A"},
        ],
    }
    data = tmp_path / "r.jsonl"
    data.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    code = (
        "import sys; from kg_rageval.cli.main import main; sys.argv = ['kg-rageval', 'score', 'judges', '-d', "
        f"{str(data)!r}, '--format', 'json', '--rows']; main()"
    )
    root = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "PYTHONPATH": root}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env)
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    errors = [r.get("error") for r in payload["rows"] if r.get("error")]
    assert errors == [
        "pairwise verdict breaks the contract: confidence: Input should be less than or equal to 1"
    ]
