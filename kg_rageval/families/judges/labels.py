"""The judges' names that need no validation model (no pydantic): the statuses of a judge
output and the label set of the nugget-support rubric, read by the nuggets family's
calibration. :mod:`kg_rageval.families.judges.contracts` defines its models from these."""

from __future__ import annotations

from typing import ClassVar

SCORED, UNSCORABLE, INVALID = "scored", "unscorable", "invalid"
UNSCORABLE_VERDICT = "unscorable"


class NuggetSupportLabels:
    """The rubric name, labels and approving label of
    :class:`~kg_rageval.families.judges.contracts.NuggetSupport` (which takes them from here)."""

    RUBRIC: ClassVar[str] = "nugget_support"
    LABELS: ClassVar[tuple[str, ...]] = ("support", "partial_support", "not_support")
    APPROVE: ClassVar[str] = "support"
