"""Why a record was not scored: structured reason codes shared by every family.

An unscored record is ``{"record_id": id, "reason": <text>, "code": <Reason>}``. The
``reason`` text is for people (it stays as each family words it); ``code`` is one of the
:class:`Reason` values, for programs — the audit's missing-run budget and completeness checks
read it instead of matching text. :func:`unscored` builds the entry, and is the only place
that does (``tests/records/test_unscored.py`` checks that no module builds one by hand): it
refuses an entry without a code or with a code that is not a :class:`Reason`.
"""

from __future__ import annotations

from enum import Enum
from typing import Any


class Reason(str, Enum):
    """Reason codes of unscored records (``str`` values, so they serialise as text)."""

    NO_SECTION = "no_section"
    """The record has no section for this family: not applicable, not missing."""
    NO_GOLD = "no_gold"
    """The section has no gold / reference to score against: not applicable."""
    MISSING_PREDICTION = "missing_prediction"
    """Gold is present but the system produced nothing (a missing run)."""
    TIMEOUT = "timeout"
    """The system timed out on this record (a missing run)."""
    INVALID_OUTPUT = "invalid_output"
    """The system or judge output could not be parsed (a missing run)."""
    NOT_APPLICABLE = "not_applicable"
    """The metric does not apply (e.g. an unanswerable question for answer correctness)."""
    MISSING_INPUT = "missing_input"
    """An input the metric needs is absent from the record (a context, a confidence)."""
    MISSING_SECTION = "missing_section"
    """The record lacks the section of a family that is in the audit and whose section every
    record must carry (:attr:`~kg_rageval.scoring.Scorer.section_required`: system, judge,
    context, relations): a missing run, so that no gate is decided on the records that have it."""


MISSING_RUN_CODES = frozenset(
    {Reason.MISSING_PREDICTION, Reason.TIMEOUT, Reason.INVALID_OUTPUT, Reason.MISSING_SECTION}
)
"""The codes that count against the audit's missing-run budget."""


def absent_answer_code(record: Any) -> Reason:
    """The code of a record whose answer (or its text/output) is absent: ``not_applicable``
    when the answer is a refusal (``answer.refused: true`` — the system answered by
    abstaining: the refusal metrics score it, it is never a missing run), else a missing
    prediction when the record has an ``answer`` or a ``reference`` section (there was
    something to answer), else ``no_section`` (the record is not about answers at all: a
    retrieval-only record in a mixed file)."""
    get = getattr(record, "get", None)
    if get is None:
        return Reason.NO_SECTION
    ans = get("answer")
    if isinstance(ans, dict) and ans.get("refused") is True:
        return Reason.NOT_APPLICABLE
    if ans is not None or get("reference") is not None:
        return Reason.MISSING_PREDICTION
    return Reason.NO_SECTION


def unscored(record_id: Any, reason: str, code: Reason | str) -> dict[str, str]:
    """One unscored entry: ``{"record_id": str(record_id), "reason": reason, "code": code}``.

    ``code`` is a :class:`Reason` (or its text value, ``"no_gold"``); a missing (``None``) or
    unknown code raises :class:`ValueError` naming the known codes, and so does an empty
    ``reason`` text — every unscored record says why, in words and as a code."""
    if isinstance(code, Reason):
        value = code.value
    elif isinstance(code, str) and code in _VALUES:
        value = code
    else:
        raise ValueError(
            f"unscored record {record_id!r}: reason code {code!r} is not a Reason "
            f"(one of {', '.join(sorted(_VALUES))})"
        )
    if not isinstance(reason, str) or not reason:
        raise ValueError(
            f"unscored record {record_id!r}: the reason text must be a non-empty string, not {reason!r}"
        )
    return {"record_id": str(record_id), "reason": reason, "code": value}


_VALUES = frozenset(r.value for r in Reason)
