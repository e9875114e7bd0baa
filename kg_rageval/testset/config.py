"""The test-set configuration (``testset.toml``), one validated model for build, plan, split
and check. Unknown keys are errors (a typo never falls back to a default silently).

```toml
seed = 0
noun = "concept"                 # "Which <noun> is ..."
require_type = "definition"      # optional: only concepts with a document of this type
[counts]                         # cases per kind (see kg_rageval.testset.kinds.KINDS)
label_lookup = 100
[intents]                        # kind -> intent slice value (defaults: kinds.DEFAULT_INTENTS)
[grades]                         # document type -> relevance grade (others: default_grade)
definition = 2
[paraphrase]                     # optional generator (docs/testset.md)
callable = "my_pkg.para:rewrite"
[split]
proportions = {development = 0.4, calibration = 0.2, release = 0.3, monitoring = 0.1}
[plan]
p = 0.8
half_width = 0.055
[check]
threshold = 0.8
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kg_rageval.base.errors import ConfigError
from kg_rageval.testset.kinds import DEFAULT_COUNTS, KINDS

SETS = ("development", "calibration", "release", "monitoring")
"""The four separate sets of ``kg-rageval testset split``."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _only(keys: Any, allowed: tuple[str, ...], what: str) -> None:
    """Raise (pydantic reports it with the key path) when ``keys`` holds a name not in ``allowed``."""
    unknown = sorted(set(keys) - set(allowed))
    if unknown:
        raise ValueError(f"unknown {what}(s) {', '.join(unknown)}; known: {', '.join(allowed)}")


class ParaphraseConfig(_Strict):
    """An optional paraphrase generator: a Python callable ``module:function`` called as
    ``fn(text, *, seed, kind, prompt, model) -> str``, or an OpenAI-compatible endpoint
    (``endpoint`` = base URL; ``api_key_env`` names the environment variable holding the key)."""

    callable: str | None = None
    endpoint: str | None = None
    model: str | None = None
    prompt: str = (
        "Rewrite the question in different words. Keep every named concept verbatim. "
        "Answer with the question only."
    )
    seed: int = 0
    temperature: float = 0.0
    timeout_s: float = Field(30.0, gt=0)
    api_key_env: str | None = None
    kinds: list[str] | None = None
    """Only paraphrase cases of these kinds (``None``: every kind)."""


class SplitConfig(_Strict):
    proportions: dict[str, float] = Field(
        default_factory=lambda: {"development": 0.4, "calibration": 0.2, "release": 0.3, "monitoring": 0.1}
    )
    seed: int | None = None

    @field_validator("proportions")
    @classmethod
    def _props(cls, v: dict[str, float]) -> dict[str, float]:
        _only(v, SETS, "set")
        if any(x < 0 for x in v.values()) or sum(v.values()) <= 0:
            raise ValueError("proportions must be >= 0 with a positive sum")
        return {k: float(v.get(k, 0.0)) for k in SETS}


class PlanConfig(_Strict):
    p: float = Field(0.8, gt=0, lt=1)
    """Assumed metric value (a proportion such as recall@10 or accuracy) for the sample sizes."""
    half_width: float = Field(0.055, gt=0, lt=1)
    """Target half-width of the 95 % normal interval per branch/slice."""
    delta: float = Field(0.05, gt=0, lt=1)
    """Minimum paired difference between two systems to detect."""
    alpha: float = Field(0.05, gt=0, lt=1)
    power: float = Field(0.8, gt=0, lt=1)
    rho: float = Field(0.5, ge=-1, lt=1)
    """Assumed correlation of the two systems' per-query outcomes (paired design)."""
    level: float = Field(0.95, gt=0, lt=1)
    thin: int = Field(5, ge=1)
    branch_depth: int = Field(1, ge=1)
    branches: list[str] | None = None
    slices: list[str] = Field(default_factory=lambda: ["intent", "case_kind"])


class CheckConfig(_Strict):
    threshold: float = Field(0.8, gt=0, le=1)
    """Estimated Jaccard similarity (character shingles) at which two queries are near-duplicates."""
    num_perm: int = Field(128, ge=16, le=1024)
    shingle: int = Field(5, ge=1, le=20)
    max_pairs: int = Field(10_000, ge=1)
    """Most near-duplicate pairs listed (all are counted)."""


class TestsetConfig(_Strict):
    """The whole configuration; defaults build a 500-case set."""

    seed: int = 0
    noun: str = "concept"
    require_type: str | None = None
    counts: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_COUNTS))
    intents: dict[str, str] = Field(default_factory=dict)
    grades: dict[str, int] = Field(default_factory=lambda: {"definition": 2})
    default_grade: int = Field(1, ge=1)
    partner_grade: int = Field(1, ge=1)
    """Grade of the second concept's documents in sibling-contrast queries."""
    held_out: list[str] | None = None
    """Explicit NIL probe concepts (leaves); else ``counts.nil_probe`` leaves are drawn."""
    type_field: str = "type"
    category_field: str = "categories"
    unknown_categories: Literal["error", "ignore"] = "error"
    id_prefix: str = "ts-"
    off_topic: list[str] | None = None
    """Questions with no answer in any corpus of this domain (``None``: a built-in list)."""
    paraphrase: ParaphraseConfig | None = None
    split: SplitConfig = Field(default_factory=SplitConfig)
    plan: PlanConfig = Field(default_factory=PlanConfig)
    check: CheckConfig = Field(default_factory=CheckConfig)

    @field_validator("counts")
    @classmethod
    def _counts(cls, v: dict[str, int]) -> dict[str, int]:
        _only(v, KINDS, "case kind")
        if any(int(x) < 0 for x in v.values()):
            raise ValueError("counts must be >= 0")
        return {k: int(v.get(k, 0)) for k in KINDS}

    @field_validator("intents")
    @classmethod
    def _intents(cls, v: dict[str, str]) -> dict[str, str]:
        _only(v, KINDS, "case kind")
        return v

    def scaled(self, total: int) -> TestsetConfig:
        """The same config with the counts scaled proportionally to ``total`` cases."""
        s = sum(self.counts.values())
        if s <= 0:
            raise ConfigError("counts are all 0: nothing to scale")
        raw = {k: c * total / s for k, c in self.counts.items()}
        counts = {k: int(x) for k, x in raw.items()}
        rest = total - sum(counts.values())
        for k in sorted(raw, key=lambda k: -(raw[k] - counts[k]))[:rest]:
            counts[k] += 1
        return self.model_copy(update={"counts": counts})

    def policy(self) -> dict[str, Any]:
        """The configuration as JSON data (hashed into the test-set manifest as the policy)."""
        return self.model_dump(mode="json")


def with_overrides(model: BaseModel, **over: Any) -> Any:
    """``model`` with the non-``None`` overrides applied and validated (a bad value is a
    :class:`ConfigError` naming the key)."""
    data = {**model.model_dump(), **{k: v for k, v in over.items() if v is not None}}
    try:
        return type(model).model_validate(data)
    except ValidationError as exc:
        errs = "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(errs) from None


def load_testset_config(path: str | Path | None = None, **overrides: Any) -> TestsetConfig:
    """Read ``testset.toml`` (also ``.yaml``/``.json``; ``None``: the defaults); errors name the
    file and key."""
    data: dict[str, Any] = {}
    source = "<defaults>"
    if path is not None:
        from kg_rageval.records import read_structured

        source = str(path)
        parsed, _ = read_structured(path, what="test-set config")
        if parsed is not None and not isinstance(parsed, dict):
            raise ConfigError("the test-set config must be a table of settings", source=source)
        data = dict(parsed or {})
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return TestsetConfig.model_validate(data)
    except ValidationError as exc:
        errs = "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{source}: {errs}") from None
