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

The public spec classes (:class:`NodeSelector`, :class:`FieldSpec`, :class:`SchemaSpec`) are
pydantic models (:mod:`.spec_model`), imported when first named. The scorers read a spec with
:func:`read_spec` / :func:`spec_of`: a plainly valid spec (:func:`plain_spec`: only the spec's
keys, each value of the exact type its field declares, passing every rule) becomes a
:class:`PlainSpec` holding the values the models would hold, without importing pydantic (a tiny
``score conformance`` paid about 0.08 s CPU for it); anything else is validated by the models,
whose error message is the one reported. The rules are the ``*_fault`` functions of
:mod:`.spec_rules`, which the models' validators call too.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from kg_rageval.base.errors import ConfigError
from kg_rageval.families.conformance.spec_rules import (
    FIELD_KINDS,
    NODE_KINDS,
    PlainField,
    PlainSelector,
    PlainSpec,
    plain_spec,
)

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.families.conformance.spec_model import FieldSpec, NodeSelector, SchemaSpec

__all__ = [
    "FIELD_KINDS",
    "NODE_KINDS",
    "AnySpec",
    "FieldSpec",
    "NodeSelector",
    "PlainField",
    "PlainSelector",
    "PlainSpec",
    "SchemaSpec",
    "as_model",
    "is_spec",
    "load_spec",
    "parse_spec",
    "plain_spec",
    "read_spec",
    "spec_of",
]

_MODEL = "kg_rageval.families.conformance.spec_model"
_LAZY = ("NodeSelector", "FieldSpec", "SchemaSpec")


def __getattr__(name: str) -> Any:
    """The pydantic spec models (:mod:`.spec_model`), imported when first named."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_MODEL), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


AnySpec = Union["SchemaSpec", PlainSpec]
"""A spec as the scorers read it: the pydantic model or its plain values."""


def is_spec(obj: Any) -> bool:
    """Whether ``obj`` is a spec (:class:`PlainSpec` or the pydantic :class:`SchemaSpec`),
    without importing pydantic (no model instance exists before its module is imported)."""
    if isinstance(obj, PlainSpec):
        return True
    model = sys.modules.get(_MODEL)
    return model is not None and isinstance(obj, model.SchemaSpec)


def as_model(spec: AnySpec) -> SchemaSpec:
    """The public pydantic :class:`SchemaSpec` of either kind of spec (a plain one validated by
    the models, its source kept)."""
    if not isinstance(spec, PlainSpec):
        return spec
    data = asdict(spec)
    source = data.pop("source")
    return parse_spec(data, source=source)


# ---------------------------------------------------------------------- reading
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
    """Validate an already-parsed spec mapping with the pydantic models; every problem is
    named in one ConfigError."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"a schema spec must be a mapping, found {type(data).__name__}", source=source)
    from pydantic import ValidationError

    from kg_rageval.families.conformance.spec_model import SchemaSpec

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


def spec_of(data: Any, *, source: str = "<memory>") -> AnySpec:
    """The spec ``data`` as the scorers read it: a :class:`PlainSpec` when it is plainly
    valid (:func:`plain_spec`), else :func:`parse_spec`'s model (or its ConfigError)."""
    plain = plain_spec(data, source=source)
    return plain if plain is not None else parse_spec(data, source=source)


def _read(path: str | Path) -> Any:
    from kg_rageval.records import read_structured

    return read_structured(path, what="schema spec")[0]


def load_spec(path: str | Path) -> SchemaSpec:
    """Read and validate a spec file (``.yaml``/``.yml``, ``.json`` or ``.toml``; see
    :func:`kg_rageval.records.read_structured` for the file errors) into the pydantic model."""
    return parse_spec(_read(path), source=str(path))


def read_spec(path: str | Path) -> AnySpec:
    """A spec file as the scorers read it (:func:`spec_of`): the same file errors and
    validation errors as :func:`load_spec`, and without pydantic for a plainly valid spec."""
    return spec_of(_read(path), source=str(path))
