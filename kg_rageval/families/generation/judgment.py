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

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kg_rageval.base.errors import InputError
from kg_rageval.families.generation.judgment_check import INVALID, NO_CLAIMS, SCORED, partition_error
from kg_rageval.records import iter_objects

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.families.generation.judgment_model import Judgment


_MODEL = "kg_rageval.families.generation.judgment_model"
_FIELDS = frozenset(("claims", "supported", "unsupported", "failure_mode", "rationale"))
_LISTS = ("claims", "supported", "unsupported")


def __getattr__(name: str) -> Any:
    """:class:`Judgment` (the pydantic model, :mod:`.judgment_model`) imported when first
    named: scoring well-formed judgments never imports pydantic."""
    if name == "Judgment":
        from kg_rageval.families.generation.judgment_model import Judgment

        return Judgment
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class JudgmentOutcome:
    """A judgment as read: either a valid :class:`Judgment` or the reason it is invalid.

    ``JudgmentOutcome(judgment, error=None)``. A judgment :func:`parse_judgment` checked
    without pydantic keeps its fields, and its :class:`Judgment` is built (validated by the
    model) the first time :attr:`judgment` is read; :attr:`n_claims`, :attr:`n_supported`,
    :attr:`failure_mode` and :attr:`faithfulness` read the fields without building it."""

    __slots__ = ("_fields", "_judgment", "error")

    def __init__(self, judgment: Judgment | None = None, error: str | None = None):
        self._judgment = judgment
        self._fields: dict[str, Any] | None = None
        self.error = error

    @classmethod
    def _checked(cls, fields: dict[str, Any]) -> JudgmentOutcome:
        out = cls()
        out._fields = fields
        return out

    @property
    def judgment(self) -> Judgment | None:
        if self._judgment is None and self._fields is not None:
            from kg_rageval.families.generation.judgment_model import Judgment

            self._judgment = Judgment.model_validate(self._fields)
        return self._judgment

    def _get(self, name: str) -> Any:
        if self._fields is not None:
            return self._fields.get(name)
        return None if self._judgment is None else getattr(self._judgment, name)

    @property
    def valid(self) -> bool:
        """Whether the judgment is valid (:attr:`judgment` is not ``None``)."""
        return self._fields is not None or self._judgment is not None

    @property
    def status(self) -> str:
        if not self.valid:
            return INVALID
        return NO_CLAIMS if not self._get("claims") else SCORED

    @property
    def n_claims(self) -> int:
        """The valid judgment's number of claims (0 when invalid)."""
        return len(self._get("claims") or ())

    @property
    def n_supported(self) -> int:
        """The valid judgment's number of supported claims (0 when invalid)."""
        return len(self._get("supported") or ())

    @property
    def failure_mode(self) -> str | None:
        return self._get("failure_mode")

    @property
    def faithfulness(self) -> float | None:
        """``supported / claims`` of a valid judgment; ``None`` for no claims or invalid."""
        claims = self._get("claims")
        if not claims:
            return None
        return len(self._get("supported")) / len(claims)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JudgmentOutcome):
            return NotImplemented
        return (self.judgment, self.error) == (other.judgment, other.error)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"JudgmentOutcome(judgment={self.judgment!r}, error={self.error!r})"


def _well_formed(raw: dict[str, Any]) -> bool:
    """Whether a judgment object has the contract's keys and plain types (lists of texts;
    texts or ``None``), so that pydantic's type checks would pass it unchanged."""
    if not raw.keys() <= _FIELDS:
        return False
    for name in _LISTS:
        v = raw.get(name)
        if type(v) is not list or not set(map(type, v)) <= {str}:
            return False
    for name in ("failure_mode", "rationale"):
        v = raw.get(name)
        if v is not None and type(v) is not str:
            return False
    return True


def parse_judgment(raw: Any) -> JudgmentOutcome:
    """Validate judge output: a mapping, a :class:`Judgment`, or raw text holding one JSON
    object (surrounding prose and a Markdown code fence are tolerated: the outermost
    ``{...}`` is parsed). Never raises on bad judge output; returns the reason instead.

    A mapping with the contract's keys and plain types that passes the partition check is
    valid without building the pydantic model; anything else is validated by
    :class:`Judgment`, whose errors are the reason."""
    if type(raw) is dict and _well_formed(raw):
        if partition_error(raw["claims"], raw["supported"], raw["unsupported"]) is None:
            return JudgmentOutcome._checked({k: list(v) if type(v) is list else v for k, v in raw.items()})
    model = sys.modules.get(_MODEL)  # a Judgment exists only once its module is imported
    if model is not None and isinstance(raw, model.Judgment):
        return JudgmentOutcome(raw)
    from kg_rageval.families.judges.contracts import json_object, validation_message

    raw, err = json_object(raw)
    if err:
        return JudgmentOutcome(None, err)
    if not isinstance(raw, dict):
        return JudgmentOutcome(None, f"judgment must be an object, found {type(raw).__name__}")
    from pydantic import ValidationError

    from kg_rageval.families.generation.judgment_model import Judgment

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
