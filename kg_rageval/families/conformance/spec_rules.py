"""The schema spec's rules and its plain values, without pydantic (issue #33: a tiny
``score conformance`` paid about 0.08 s CPU to import pydantic and build the spec models).

The ``*_fault`` functions are the spec's rules: each returns the message of what breaks it, or
``None``; the pydantic models' validators (:mod:`.spec_model`) raise those messages, and
:func:`plain_spec` accepts only specs that pass them all. :func:`plain_spec` reads a plainly
valid spec — only the spec's keys, each value of the exact type its field declares — into a
:class:`PlainSpec` holding the values the models would hold; anything else returns ``None``
and is validated by the models (:func:`kg_rageval.families.conformance.spec.spec_of`), whose
error message is the one reported."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

FIELD_KINDS = ("node", "list", "triples", "string", "number", "integer", "boolean")
"""Kinds of output field: one node id, a list of node ids, subject/predicate/object triples,
or a plain JSON scalar that carries no ontology id."""

NODE_KINDS = ("node", "list")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_TITLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# ---------------------------------------------------------------------- the rules
def as_list(v: Any) -> Any:
    """A selector given as one string (or integer) is a one-item list."""
    if v is None or isinstance(v, list):
        return v
    if isinstance(v, (str, int)):
        return [str(v)]
    return v


def selector_fault(v: list[Any] | None) -> str | None:
    if v is not None and (not v or any(not isinstance(x, str) or not x for x in v)):
        return "must be a non-empty string or a non-empty list of non-empty strings"
    return None


def predicates_fault(v: Any) -> str | None:
    if isinstance(v, str) and v != "ontology":
        return f"must be 'ontology' (the ontology's properties) or a list of predicate ids, not {v!r}"
    return None


def kind_fault(v: Any) -> str | None:
    if isinstance(v, str) and v not in FIELD_KINDS:
        return f"unknown kind {v!r}; one of {', '.join(FIELD_KINDS)}"
    return None


def field_fault(f: Any) -> str | None:
    """What makes one field's settings inconsistent (``None``: nothing); ``f`` a ``FieldSpec``
    model or a :class:`PlainField` (this module imports no model)."""
    has_sel = any(x is not None for x in (f.within, f.node_type, f.ids))
    if f.kind == "triples":
        if has_sel:
            return "a triples field takes 'subject'/'object' selectors, not within/node_type/ids"
        if f.predicates is None:
            return "a triples field needs 'predicates': 'ontology' or a list of predicate ids"
        if isinstance(f.predicates, list) and (
            not f.predicates or any(not isinstance(p, str) or not p for p in f.predicates)
        ):
            return "'predicates' must be 'ontology' or a non-empty list of strings"
    elif f.subject is not None or f.object is not None or f.predicates is not None:
        return f"'subject', 'object' and 'predicates' belong to triples fields, not kind {f.kind!r}"
    if f.kind not in NODE_KINDS and has_sel:
        return f"node selectors (within/node_type/ids) need kind 'node' or 'list', not {f.kind!r}"
    if f.kind not in ("list", "triples") and (
        f.min_items is not None or f.max_items is not None or f.unique_items
    ):
        return "min_items/max_items/unique_items apply to 'list' and 'triples' fields"
    if f.min_items is not None and f.max_items is not None and f.min_items > f.max_items:
        return f"min_items ({f.min_items}) is greater than max_items ({f.max_items})"
    return None


def title_fault(v: str) -> str | None:
    if not _TITLE.match(v):
        return f"title {v!r} must be a Python identifier (it names the pydantic model)"
    return None


def names_fault(v: Mapping[str, Any]) -> str | None:
    if not v:
        return "at least one output field is needed"
    bad = [k for k in v if not _NAME.match(k)]
    if bad:
        return f"field names must match {_NAME.pattern}: {', '.join(map(repr, bad))}"
    return None


def pattern_fault(v: str | None) -> str | None:
    if v is not None:
        try:
            re.compile(v)
        except re.error as exc:
            return f"not a valid regular expression: {exc}"
    return None


def required_fault(required: list[str], fields: Mapping[str, Any]) -> str | None:
    unknown = [r for r in required if r not in fields]
    if unknown:
        return (
            f"'required' names fields that are not declared: {', '.join(map(repr, unknown))}; "
            f"declared: {', '.join(fields)}"
        )
    return None


# ---------------------------------------------------------------------- shared methods
class SelectorMethods:
    """What a node selector answers, pydantic model or plain (``within``, ``node_type``,
    ``ids``: lists of strings or ``None``)."""

    __slots__ = ()
    if TYPE_CHECKING:  # pragma: no cover
        within: list[str] | None
        node_type: list[str] | None
        ids: list[str] | None

    def describe(self) -> dict[str, list[str]]:
        return {
            k: v for k, v in (("within", self.within), ("node_type", self.node_type), ("ids", self.ids)) if v
        }


class SpecMethods:
    """What a whole spec answers, pydantic model or plain."""

    __slots__ = ()
    if TYPE_CHECKING:  # pragma: no cover
        fields: Mapping[str, Any]  # FieldSpec models or PlainField
        required: list[str]
        allow_deprecated: bool
        allow_revoked: bool

    @property
    def required_fields(self) -> list[str]:
        """Required field names in declaration order (``required:`` list or per-field flag)."""
        req = set(self.required)
        return [k for k, f in self.fields.items() if f.required or k in req]

    def allows(self, field: Any, status: str) -> bool:
        """Whether ``status`` ("deprecated"/"revoked") ids are admitted in ``field``."""
        if status == "deprecated":
            return self.allow_deprecated if field.allow_deprecated is None else field.allow_deprecated
        if status == "revoked":
            return self.allow_revoked if field.allow_revoked is None else field.allow_revoked
        return True


# ---------------------------------------------------------------------- plain spec
_Sel = TypeVar("_Sel", bound="PlainSelector")


@dataclass(slots=True)
class PlainSelector(SelectorMethods):
    """A :class:`NodeSelector`'s values, read without pydantic (:func:`plain_spec`)."""

    within: list[str] | None = None
    node_type: list[str] | None = None
    ids: list[str] | None = None

    def model_copy(self: _Sel, *, update: Mapping[str, Any] | None = None) -> _Sel:
        """A copy with the ``update`` values (unvalidated, as pydantic's ``model_copy``)."""
        return replace(self, **(update or {}))


@dataclass(slots=True)
class PlainField(PlainSelector):
    """A :class:`FieldSpec`'s values, read without pydantic (:func:`plain_spec`)."""

    kind: str = "node"
    required: bool = False
    description: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    unique_items: bool = False
    subject: PlainSelector | None = None
    object: PlainSelector | None = None
    predicates: str | list[str] | None = None
    allow_deprecated: bool | None = None
    allow_revoked: bool | None = None


@dataclass(slots=True, kw_only=True)
class PlainSpec(SpecMethods):
    """A :class:`SchemaSpec`'s values, read without pydantic (:func:`plain_spec`): the same
    attributes and methods (:func:`~kg_rageval.families.conformance.spec.as_model` gives the
    pydantic model)."""

    title: str = "Output"
    description: str | None = None
    fields: dict[str, PlainField]
    required: list[str] = field(default_factory=list)
    allow_deprecated: bool = False
    allow_revoked: bool = False
    additional_properties: bool = False
    enum_threshold: int = 10_000
    id_pattern: str | None = None
    source: str = "<memory>"


_SELECTOR_KEYS = ("within", "node_type", "ids")
_FIELD_KEYS = frozenset(PlainField.__dataclass_fields__)
_SPEC_KEYS = frozenset(PlainSpec.__dataclass_fields__) - {"source"}
_FIELD_BOOLS = ("required", "unique_items")
_FIELD_OPT_BOOLS = ("allow_deprecated", "allow_revoked")
_FIELD_OPT_INTS = ("min_items", "max_items")
_SPEC_BOOLS = ("allow_deprecated", "allow_revoked", "additional_properties")


def _strings(v: Any) -> TypeGuard[list[str]]:
    return type(v) is list and all(type(x) is str for x in v)


def _opt(v: Any, tp: type) -> bool:
    return v is None or type(v) is tp


def _selector_values(d: Mapping[str, Any]) -> dict[str, list[str] | None] | None:
    out: dict[str, list[str] | None] = {}
    for k in _SELECTOR_KEYS:
        v = d.get(k)
        if type(v) is str:
            v = [v]
        elif _strings(v):
            v = list(v)
        elif v is not None:
            return None
        if selector_fault(v) is not None:
            return None
        out[k] = v
    return out


def _plain_selector(v: Any) -> PlainSelector | bool | None:
    """``None`` for ``None``, a selector for a plainly valid mapping, ``False`` otherwise."""
    if v is None:
        return None
    if type(v) is not dict or not all(type(k) is str and k in _SELECTOR_KEYS for k in v):
        return False
    sel = _selector_values(v)
    return False if sel is None else PlainSelector(**sel)


def _plain_field(d: Any) -> PlainField | None:
    if type(d) is not dict or not all(type(k) is str and k in _FIELD_KEYS for k in d):
        return None
    sel = _selector_values(d)
    kind = d.get("kind", "node")
    preds = d.get("predicates")
    if (
        sel is None
        or type(kind) is not str
        or kind_fault(kind) is not None
        or not _opt(d.get("description"), str)
        or not all(type(d.get(k, False)) is bool for k in _FIELD_BOOLS)
        or not all(_opt(d.get(k), bool) for k in _FIELD_OPT_BOOLS)
        or not all(_opt(d.get(k), int) and (d.get(k) is None or d[k] >= 0) for k in _FIELD_OPT_INTS)
        or not (preds is None or (preds == "ontology" and type(preds) is str) or _strings(preds))
    ):
        return None
    subject, obj = _plain_selector(d.get("subject")), _plain_selector(d.get("object"))
    if subject is False or obj is False:
        return None
    f = PlainField(
        **sel,
        kind=kind,
        required=d.get("required", False),
        description=d.get("description"),
        min_items=d.get("min_items"),
        max_items=d.get("max_items"),
        unique_items=d.get("unique_items", False),
        subject=subject,  # type: ignore[arg-type]
        object=obj,  # type: ignore[arg-type]
        predicates=list(preds) if type(preds) is list else preds,
        allow_deprecated=d.get("allow_deprecated"),
        allow_revoked=d.get("allow_revoked"),
    )
    return None if field_fault(f) is not None else f


def plain_spec(data: Any, *, source: str = "<memory>") -> PlainSpec | None:
    """The spec ``data`` as a :class:`PlainSpec` when it is plainly valid: a mapping of the
    spec's keys only, every value of the exact JSON/YAML type its field declares (a string, a
    list of strings, ``true``/``false``, an integer in range, a mapping of the field keys), and
    every rule passes — so the pydantic models accept it unchanged and hold these values.
    ``None`` for anything else (an unknown key, a value pydantic would coerce or reject): the
    caller validates with the models (:func:`parse_spec`). Never raises."""
    if not isinstance(data, Mapping):
        return None
    d = dict(data)
    fields = d.get("fields")
    if not all(type(k) is str and k in _SPEC_KEYS for k in d) or type(fields) is not dict:
        return None
    title, threshold = d.get("title", "Output"), d.get("enum_threshold", 10_000)
    required, pattern = d.get("required", []), d.get("id_pattern")
    if (
        type(title) is not str
        or title_fault(title) is not None
        or not _opt(d.get("description"), str)
        or not all(type(d.get(k, False)) is bool for k in _SPEC_BOOLS)
        or type(threshold) is not int
        or threshold < 1
        or not _strings(required)
        or not _opt(pattern, str)
        or pattern_fault(pattern) is not None
        or not all(type(k) is str for k in fields)
        or names_fault(fields) is not None
    ):
        return None
    plain: dict[str, PlainField] = {}
    for name, f in fields.items():
        pf = _plain_field(f)
        if pf is None:
            return None
        plain[name] = pf
    if required_fault(required, plain) is not None:
        return None
    return PlainSpec(
        title=title,
        description=d.get("description"),
        fields=plain,
        required=list(required),
        allow_deprecated=d.get("allow_deprecated", False),
        allow_revoked=d.get("allow_revoked", False),
        additional_properties=d.get("additional_properties", False),
        enum_threshold=threshold,
        id_pattern=pattern,
        source=source,
    )
