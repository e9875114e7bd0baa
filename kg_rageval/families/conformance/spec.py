"""The user's output-schema spec: which output field holds which kind of ontology node.

A spec is a small YAML, JSON or TOML file (see ``docs/conformance.md``)::

    title: AttackAnswer
    fields:
      technique: {within: attack-pattern, node_type: technique, required: true}
      tactic:    {node_type: tactic, required: true}
      mitigations: {kind: list, within: course-of-action, max_items: 5}
      relations:
        kind: triples
        predicates: ontology          # the ontology's properties, or a list of ids
        subject: {within: [intrusion-set, software]}
        object: {within: [attack-pattern, software]}
      confidence: {kind: number}
    allow_deprecated: false           # deprecated ids are excluded by default
    allow_revoked: false              # revoked ids are excluded by default
    enum_threshold: 10000             # above this, a pattern + lookup replaces the enum

Node selectors (``within``, ``node_type``, ``ids``) intersect: a field admits the nodes that
satisfy every selector it gives. ``within: X`` admits ``X`` and its descendants (the same
convention as a retrieval category filter ``within X``). A field with no selector admits every
ontology node (the virtual root never). Selectors name node ids, compact CURIEs or
unambiguous labels (resolved with :meth:`Ontology.resolve`).

:func:`load_spec` validates with pydantic and raises :class:`~kg_rageval.base.errors.ConfigError`
naming the file and the field path (``fields.technique.within``) of every problem at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kg_rageval.base.errors import ConfigError

FIELD_KINDS = ("node", "list", "triples", "string", "number", "integer", "boolean")
"""Kinds of output field: one node id, a list of node ids, subject/predicate/object triples,
or a plain JSON scalar that carries no ontology id."""

NODE_KINDS = ("node", "list")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


def _as_list(v: Any) -> Any:
    if v is None or isinstance(v, list):
        return v
    if isinstance(v, (str, int)):
        return [str(v)]
    return v


class NodeSelector(BaseModel):
    """Which ontology nodes a value may name: the intersection of the selectors given."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    within: list[str] | None = Field(
        default=None, description="node ids (or labels): each node and its descendants; several = union"
    )
    node_type: list[str] | None = Field(default=None, description="node types (several = union)")
    ids: list[str] | None = Field(default=None, description="an explicit list of node ids")

    @field_validator("within", "node_type", "ids", mode="before")
    @classmethod
    def _norm(cls, v: Any) -> Any:
        return _as_list(v)

    @field_validator("within", "node_type", "ids")
    @classmethod
    def _non_empty(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and (not v or any(not isinstance(x, str) or not x for x in v)):
            raise ValueError("must be a non-empty string or a non-empty list of non-empty strings")
        return v

    def describe(self) -> dict[str, list[str]]:
        return {
            k: v for k, v in (("within", self.within), ("node_type", self.node_type), ("ids", self.ids)) if v
        }


class FieldSpec(NodeSelector):
    """One output field. Node selectors apply to ``node`` and ``list`` fields; ``triples``
    fields take ``subject``/``object`` selectors and a ``predicates`` vocabulary."""

    kind: Literal["node", "list", "triples", "string", "number", "integer", "boolean"] = "node"
    required: bool = False
    description: str | None = None
    min_items: int | None = Field(default=None, ge=0)
    max_items: int | None = Field(default=None, ge=0)
    unique_items: bool = False
    subject: NodeSelector | None = None
    object: NodeSelector | None = None
    predicates: Literal["ontology"] | list[str] | None = None
    allow_deprecated: bool | None = None
    allow_revoked: bool | None = None

    @field_validator("predicates", mode="before")
    @classmethod
    def _predicates(cls, v: Any) -> Any:
        if isinstance(v, str) and v != "ontology":
            raise ValueError(
                f"must be 'ontology' (the ontology's properties) or a list of predicate ids, not {v!r}"
            )
        return v

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, v: Any) -> Any:
        if isinstance(v, str) and v not in FIELD_KINDS:
            raise ValueError(f"unknown kind {v!r}; one of {', '.join(FIELD_KINDS)}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> FieldSpec:
        has_sel = any(x is not None for x in (self.within, self.node_type, self.ids))
        if self.kind == "triples":
            if has_sel:
                raise ValueError(
                    "a triples field takes 'subject'/'object' selectors, not within/node_type/ids"
                )
            if self.predicates is None:
                raise ValueError("a triples field needs 'predicates': 'ontology' or a list of predicate ids")
            if isinstance(self.predicates, list) and (
                not self.predicates or any(not isinstance(p, str) or not p for p in self.predicates)
            ):
                raise ValueError("'predicates' must be 'ontology' or a non-empty list of strings")
        else:
            if self.subject is not None or self.object is not None or self.predicates is not None:
                raise ValueError(
                    f"'subject', 'object' and 'predicates' belong to triples fields, not kind {self.kind!r}"
                )
        if self.kind not in NODE_KINDS and has_sel:
            raise ValueError(
                f"node selectors (within/node_type/ids) need kind 'node' or 'list', not {self.kind!r}"
            )
        if self.kind not in ("list", "triples") and (
            self.min_items is not None or self.max_items is not None or self.unique_items
        ):
            raise ValueError("min_items/max_items/unique_items apply to 'list' and 'triples' fields")
        if self.min_items is not None and self.max_items is not None and self.min_items > self.max_items:
            raise ValueError(f"min_items ({self.min_items}) is greater than max_items ({self.max_items})")
        return self


class SchemaSpec(BaseModel):
    """The whole spec; see the module docstring."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    title: str = "Output"
    description: str | None = None
    fields: dict[str, FieldSpec]
    required: list[str] = Field(default_factory=list)
    allow_deprecated: bool = False
    allow_revoked: bool = False
    additional_properties: bool = False
    enum_threshold: int = Field(default=10_000, ge=1)
    id_pattern: str | None = None
    source: str = Field(default="<memory>", exclude=True)

    @field_validator("title")
    @classmethod
    def _title(cls, v: str) -> str:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", v):
            raise ValueError(f"title {v!r} must be a Python identifier (it names the pydantic model)")
        return v

    @field_validator("fields")
    @classmethod
    def _fields(cls, v: dict[str, FieldSpec]) -> dict[str, FieldSpec]:
        if not v:
            raise ValueError("at least one output field is needed")
        bad = [k for k in v if not _NAME.match(k)]
        if bad:
            raise ValueError(f"field names must match {_NAME.pattern}: {', '.join(map(repr, bad))}")
        return v

    @field_validator("id_pattern")
    @classmethod
    def _pattern(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return v

    @model_validator(mode="after")
    def _required_known(self) -> SchemaSpec:
        unknown = [r for r in self.required if r not in self.fields]
        if unknown:
            raise ValueError(
                f"'required' names fields that are not declared: {', '.join(map(repr, unknown))}; "
                f"declared: {', '.join(self.fields)}"
            )
        return self

    @property
    def required_fields(self) -> list[str]:
        """Required field names in declaration order (``required:`` list or per-field flag)."""
        req = set(self.required)
        return [k for k, f in self.fields.items() if f.required or k in req]

    def allows(self, field: FieldSpec, status: str) -> bool:
        """Whether ``status`` ("deprecated"/"revoked") ids are admitted in ``field``."""
        if status == "deprecated":
            return self.allow_deprecated if field.allow_deprecated is None else field.allow_deprecated
        if status == "revoked":
            return self.allow_revoked if field.allow_revoked is None else field.allow_revoked
        return True


def _loc(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for p in loc:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        elif str(p).startswith(("function-", "literal[", "list[", "str")):
            continue  # pydantic's union-branch tags
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts) or "(top level)"


def parse_spec(data: Any, *, source: str = "<memory>") -> SchemaSpec:
    """Validate an already-parsed spec mapping; every problem is named in one ConfigError."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"a schema spec must be a mapping, found {type(data).__name__}", source=source)
    try:
        spec = SchemaSpec.model_validate(dict(data))
    except ValidationError as exc:
        msgs = []
        for err in exc.errors():
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown key (not part of the spec format)"
            msgs.append(f"field {_loc(err['loc'])}: {msg}")
        # pydantic reports each union branch; keep each distinct message once
        msgs = list(dict.fromkeys(msgs))
        raise ConfigError("invalid schema spec: " + "; ".join(msgs), source=source) from None
    spec.source = source
    return spec


def load_spec(path: str | Path) -> SchemaSpec:
    """Read and validate a spec file (``.yaml``/``.yml``, ``.json`` or ``.toml``; see
    :func:`kg_rageval.records.read_structured` for the file errors)."""
    from kg_rageval.records import read_structured

    data, _ = read_structured(path, what="schema spec")
    return parse_spec(data, source=str(path))
