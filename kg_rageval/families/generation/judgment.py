"""The faithfulness judgment contract: extract → verify → aggregate.

A judge (human, NLI model, LLM or the deterministic ontology verifier) returns one
:class:`Judgment` per answer:

* ``claims`` — the atomic claims extracted from the answer (distinct, non-empty strings);
* ``supported`` / ``unsupported`` — a **complete, disjoint partition** of ``claims``: every
  extracted claim is in exactly one of the two lists, and nothing else is;
* ``failure_mode`` — why the answer is not fully faithful (free text; the judges in this package
  use ``"unsupported_claim"``, ``"unlinked_concept"`` or ``"contradiction"``), ``None`` when
  every claim is supported;
* ``rationale`` — the judge's explanation (shown, never scored).

Faithfulness of one answer = ``len(supported) / len(claims)``. An answer with no extracted
claims has **no** score (status ``no_claims``); judge output that is not valid JSON or breaks
the contract has status ``invalid_judgment`` and never becomes a score.

Where judgments come from (see ``docs/generation.md``): a judgments JSONL file with one line
``{"id": <record id>, "judgment": <object or raw judge text>}`` per record (it takes precedence),
else the record's ``answer.judgment`` (same two forms).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kg_rageval.base.errors import InputError
from kg_rageval.families.judges.contracts import json_object, validation_message
from kg_rageval.records import iter_objects

SCORED, NO_CLAIMS, INVALID = "scored", "no_claims", "invalid_judgment"


class Judgment(BaseModel):
    """A validated faithfulness judgment (see the module docstring for the contract)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    claims: list[str] = Field(description="Atomic claims extracted from the answer.")
    supported: list[str] = Field(description="Claims the context supports.")
    unsupported: list[str] = Field(description="Claims the context does not support.")
    failure_mode: str | None = Field(
        default=None, description="Why the answer is not fully faithful; null when it is."
    )
    rationale: str | None = Field(default=None, description="The judge's explanation.")

    @model_validator(mode="after")
    def _partition(self) -> Judgment:
        sets = []
        for name in ("claims", "supported", "unsupported"):
            items = getattr(self, name)
            if not all(map(str.strip, items)):
                raise ValueError(f"{name} contains an empty claim")
            distinct = set(items)
            if len(distinct) != len(items):
                dup = sorted({c for c in items if items.count(c) > 1})
                raise ValueError(f"{name} repeats claim(s) {dup!r}; claims must be distinct")
            sets.append(distinct)
        claims, sup, uns = sets
        if not sup & uns and sup | uns == claims:  # a complete, disjoint partition
            return self
        both = sorted(sup & uns)
        if both:
            raise ValueError(f"claim(s) {both!r} are both supported and unsupported")
        extra = sorted((sup | uns) - claims)
        if extra:
            raise ValueError(f"claim(s) {extra!r} are judged but were not extracted")
        left = sorted(claims - sup - uns)
        if left:
            raise ValueError(f"claim(s) {left!r} were extracted but not judged")
        return self

    @property
    def n_claims(self) -> int:
        return len(self.claims)

    @property
    def n_supported(self) -> int:
        return len(self.supported)

    @property
    def status(self) -> str:
        return NO_CLAIMS if not self.claims else SCORED

    @property
    def faithfulness(self) -> float | None:
        """``supported / claims``; ``None`` for an answer with no claims (never 1.0)."""
        if not self.claims:
            return None
        return len(self.supported) / len(self.claims)


@dataclass(frozen=True)
class JudgmentOutcome:
    """A judgment as read: either a valid :class:`Judgment` or the reason it is invalid."""

    judgment: Judgment | None
    error: str | None = None

    @property
    def status(self) -> str:
        return INVALID if self.judgment is None else self.judgment.status


def parse_judgment(raw: Any) -> JudgmentOutcome:
    """Validate judge output: a mapping, a :class:`Judgment`, or raw text holding one JSON
    object (surrounding prose and a Markdown code fence are tolerated: the outermost
    ``{...}`` is parsed). Never raises on bad judge output; returns the reason instead."""
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


def load_judgments(path: str | Path) -> dict[str, Any]:
    """Raw judgments keyed by record id from a JSONL file of ``{"id", "judgment"}`` lines.

    The file's shape is checked here (object lines, a string ``id``, a ``judgment`` field, no
    duplicate ids) and raises :class:`InputError`; the judgment itself is validated later by
    :func:`parse_judgment`, so a bad judgment counts as ``invalid_judgment`` instead of
    aborting the run."""
    out: dict[str, Any] = {}
    for lineno, rid, obj in iter_objects(path, what="judgment"):
        if "judgment" not in obj:
            raise InputError(
                "field 'judgment' is missing (an object following the judgment contract, or the "
                "judge's raw text)",
                source=str(path),
                location=f"line {lineno}",
            )
        out[rid] = obj["judgment"]
    return out
