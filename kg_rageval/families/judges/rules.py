"""The rubric verdicts' semantic checks and a validator of plainly valid verdicts, without
pydantic (a tiny ``score judges`` paid about 0.1 s CPU to import it and build the models).

The checks are those the verdict models of :mod:`kg_rageval.families.judges.contracts` run
(their validators call these functions, so both read one rule). :func:`plain_verdict` accepts
only output the models certainly accept — a JSON object whose keys are the rubric's fields,
each of the exact JSON type of its field (a string, ``null``, a boolean, a number in range,
a list of strings), passing every check — and gives its status and label; anything else
(bad JSON, a missing or unknown field, a value pydantic would coerce or reject) returns
``None``, and the caller validates with the model, whose error message is the one reported."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from kg_rageval.families.judges.labels import RUBRIC_LABELS, SCORED, UNSCORABLE, UNSCORABLE_VERDICT


def json_object(raw: Any) -> tuple[Any, str | None]:
    """Judge output as a Python object: a mapping passes through; text is parsed as the
    outermost ``{...}`` it holds (prose around it and a Markdown code fence are tolerated).
    Returns ``(object, None)`` or ``(None, reason)``; never raises."""
    if not isinstance(raw, str):
        return raw, None
    text = raw.strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None, "judge output holds no JSON object"
    try:
        return json.loads(text[start : end + 1]), None
    except json.JSONDecodeError as exc:
        return None, f"judge output is not valid JSON: {exc.msg}"
    except (RecursionError, ValueError) as exc:  # nested too deeply; an over-long integer
        return None, f"judge output is not valid JSON: {type(exc).__name__}"


_WS = re.compile(r"\s+")


def norm(text: str) -> str:
    """Whitespace runs as one space, stripped, case-folded (the evidence-quote comparison)."""
    return _WS.sub(" ", text).strip().casefold()


def unscorable_fault(verdict: str, rationale: str | None) -> str | None:
    if verdict == UNSCORABLE_VERDICT and not (rationale or "").strip():
        return "an 'unscorable' verdict needs a rationale saying why"
    return None


def citation_fault(
    verdict: str, claim: str, citation: str | None, evidence: str | None, context: Any
) -> str | None:
    if not claim.strip():
        return "claim is empty"
    ctx = context if isinstance(context, Mapping) else {}
    if verdict in ("supported", "partially_supported"):
        if not (evidence or "").strip():
            return f"a {verdict!r} verdict must quote its evidence"
        passage = ctx.get("passage")
        if isinstance(passage, str) and norm(evidence or "") not in norm(passage):
            return "evidence is not a quote from the cited passage"
    want = ctx.get("citation")
    if want is not None and citation is not None and citation != want:
        return f"citation {citation!r} is not the passage judged ({want!r})"
    return None


def refusal_fault(verdict: str, answerable: bool | None, refused: bool | None) -> str | None:
    if verdict == UNSCORABLE_VERDICT:
        return None
    if answerable is None or refused is None:
        return "a verdict needs both 'answerable' and 'refused'"
    right = refused == (not answerable)
    if (verdict == "correct") != right:
        return f"verdict {verdict!r} contradicts answerable={answerable} and refused={refused}"
    return None


def answer_fault(
    verdict: str, score: float | None, missing_facts: list[str], wrong_facts: list[str]
) -> str | None:
    if verdict == UNSCORABLE_VERDICT:
        return None
    for name, facts in (("missing_facts", missing_facts), ("wrong_facts", wrong_facts)):
        if any(not f.strip() for f in facts):
            return f"{name} contains an empty fact"
    faults = bool(missing_facts or wrong_facts)
    if verdict == "correct" and faults:
        return "a 'correct' verdict lists missing or wrong facts"
    if verdict != "correct" and not faults:
        return f"a {verdict!r} verdict must name a missing or wrong fact"
    s = score
    if s is not None:
        ok = {"correct": s == 1.0, "partially_correct": 0.0 < s < 1.0, "incorrect": s < 1.0}
        if not ok[verdict]:
            return f"score {s} contradicts verdict {verdict!r}"
    return None


def _str(v: Any) -> bool:
    return type(v) is str


def _opt_str(v: Any) -> bool:
    return v is None or type(v) is str


def _opt_bool(v: Any) -> bool:
    return v is None or type(v) is bool


def _opt_unit(v: Any) -> bool:  # a float field with ge=0, le=1 (an int is taken as its float)
    return v is None or (type(v) in (int, float) and math.isfinite(v) and 0.0 <= v <= 1.0)


def _strs(v: Any) -> bool:
    return type(v) is list and all(type(x) is str for x in v)


_FIELDS: dict[str, dict[str, Any]] = {
    "pairwise": {"confidence": _opt_unit},
    "citation_support": {"claim": _str, "citation": _opt_str, "evidence": _opt_str},
    "refusal": {"answerable": _opt_bool, "refused": _opt_bool},
    "answer_correctness": {"score": _opt_unit, "missing_facts": _strs, "wrong_facts": _strs},
    "nugget_support": {"nugget": _opt_str},
}
_REQUIRED = {"citation_support": ("verdict", "claim")}


def plain_verdict(rubric: str, raw: Any, context: Any = None) -> tuple[str, str | None] | None:
    """``(status, label)`` of judge output the rubric's model certainly accepts (see the
    module docstring), else ``None`` (validate with the model)."""
    fields = _FIELDS.get(rubric)
    if fields is None:
        return None
    obj, err = json_object(raw)
    if err is not None or type(obj) is not dict:
        return None
    for name in _REQUIRED.get(rubric, ("verdict",)):
        if name not in obj:
            return None
    verdict = obj["verdict"]
    if type(verdict) is not str or (
        verdict != UNSCORABLE_VERDICT and verdict not in RUBRIC_LABELS[rubric].LABELS
    ):
        return None
    for k, v in obj.items():
        if k == "verdict":
            continue
        check = _opt_str if k == "rationale" else fields.get(k)
        if check is None or not check(v):
            return None
    if unscorable_fault(verdict, obj.get("rationale")) is not None:
        return None
    get = obj.get
    if rubric == "citation_support":
        fault = citation_fault(verdict, obj["claim"], get("citation"), get("evidence"), dict(context or {}))
    elif rubric == "refusal":
        fault = refusal_fault(verdict, get("answerable"), get("refused"))
    elif rubric == "answer_correctness":
        s = get("score")
        fault = answer_fault(
            verdict, None if s is None else float(s), get("missing_facts", []), get("wrong_facts", [])
        )
    else:
        fault = None
    if fault is not None:
        return None
    return (UNSCORABLE, None) if verdict == UNSCORABLE_VERDICT else (SCORED, verdict)
