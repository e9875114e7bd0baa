"""The pydantic models of the schema spec (:class:`NodeSelector`, :class:`FieldSpec`,
:class:`SchemaSpec`; the public API, see :mod:`kg_rageval.families.conformance.spec`).

Imported when first named: a plainly valid spec is read without pydantic
(:func:`kg_rageval.families.conformance.spec.plain_spec`, the same values); these models
validate everything else, and their error messages are the ones reported. Every rule is a
function of :mod:`.spec_rules` that both paths call."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kg_rageval.families.conformance.spec_rules import (
    SelectorMethods,
    SpecMethods,
    as_list,
    field_fault,
    kind_fault,
    names_fault,
    pattern_fault,
    predicates_fault,
    required_fault,
    selector_fault,
    title_fault,
)


def _raise(fault: str | None) -> None:
    if fault is not None:
        raise ValueError(fault)


class NodeSelector(SelectorMethods, BaseModel):
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
        return as_list(v)

    @field_validator("within", "node_type", "ids")
    @classmethod
    def _non_empty(cls, v: list[str] | None) -> list[str] | None:
        _raise(selector_fault(v))
        return v


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
        _raise(predicates_fault(v))
        return v

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, v: Any) -> Any:
        _raise(kind_fault(v))
        return v

    @model_validator(mode="after")
    def _consistent(self) -> FieldSpec:
        _raise(field_fault(self))
        return self


class SchemaSpec(SpecMethods, BaseModel):
    """The whole spec; see :mod:`kg_rageval.families.conformance.spec`."""

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
        _raise(title_fault(v))
        return v

    @field_validator("fields")
    @classmethod
    def _fields(cls, v: dict[str, FieldSpec]) -> dict[str, FieldSpec]:
        _raise(names_fault(v))
        return v

    @field_validator("id_pattern")
    @classmethod
    def _pattern(cls, v: str | None) -> str | None:
        _raise(pattern_fault(v))
        return v

    @model_validator(mode="after")
    def _required_known(self) -> SchemaSpec:
        _raise(required_fault(self.required, self.fields))
        return self
