"""The pydantic model of the faithfulness judgment contract (:class:`Judgment`; the contract
is stated in :mod:`kg_rageval.families.generation.judgment`, which exports it).

Imported only where a :class:`Judgment` is built or a judgment breaks the contract (its
error message is pydantic's): scoring well-formed recorded judgments checks them without
pydantic (:func:`kg_rageval.families.generation.judgment.parse_judgment`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kg_rageval.families.generation.judgment_check import NO_CLAIMS, SCORED, partition_error


class Judgment(BaseModel):
    """A validated faithfulness judgment (see :mod:`kg_rageval.families.generation.judgment`
    for the contract)."""

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
        err = partition_error(self.claims, self.supported, self.unsupported)
        if err is not None:
            raise ValueError(err)
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
