"""One unscored constructor: ``records.reasons.unscored`` builds every unscored entry, and it
refuses an entry without a known :class:`Reason` code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kg_rageval.records import Reason, unscored

PACKAGE = Path(__file__).resolve().parents[2] / "kg_rageval"

HAND_BUILT_ALLOWED = {
    "kg_rageval/records/reasons.py": "the constructor itself",
    "kg_rageval/audit/stub.py": "the audit's test double of a family written before reason codes: its code-less "
    "'missing run' entries exercise the missing_runs.reasons fallback",
}


def _hand_built(source: str, where: str) -> list[str]:
    """Dict literals with a ``"record_id"`` key and a ``"reason"`` or ``"code"`` key."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            if "record_id" in keys and keys & {"reason", "code"}:
                out.append(f"{where}:{node.lineno}")
    return out


def test_the_check_sees_a_hand_built_entry():
    src = 'a = {"record_id": r["id"], "reason": "no x"}\nb = {"record_id": 1, "n": 1.0}\nc = {"code": "x", "record_id": 2}\n'
    assert _hand_built(src, "s") == ["s:1", "s:3"]


def test_no_module_builds_an_unscored_entry_by_hand():
    bad = []
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = str(p.relative_to(PACKAGE.parent))
        if rel not in HAND_BUILT_ALLOWED:
            bad += _hand_built(p.read_text(), rel)
    assert not bad, "build unscored entries with kg_rageval.records.reasons.unscored:\n" + "\n".join(bad)


def test_unscored_builds_the_entry():
    assert unscored(7, "no gold", Reason.NO_GOLD) == {
        "record_id": "7",
        "reason": "no gold",
        "code": "no_gold",
    }
    assert unscored("q1", "timed out", "timeout") == {
        "record_id": "q1",
        "reason": "timed out",
        "code": "timeout",
    }


@pytest.mark.parametrize("code", [None, "", "missing", "NO_GOLD", 3, "no gold"])
def test_unscored_refuses_a_missing_or_unknown_code(code):
    with pytest.raises(
        ValueError, match=r"reason code .* is not a Reason \(one of invalid_output, missing_input"
    ):
        unscored("q1", "no gold", code)


@pytest.mark.parametrize("reason", [None, ""])
def test_unscored_refuses_an_empty_reason_text(reason):
    with pytest.raises(ValueError, match="reason text must be a non-empty string"):
        unscored("q1", reason, Reason.NO_GOLD)
