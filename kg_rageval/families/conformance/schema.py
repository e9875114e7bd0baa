"""Derive a JSON Schema (draft 2020-12) and an equivalent pydantic model from ontology + spec.

:func:`derive_schema` resolves every field of a :class:`~.spec.SchemaSpec` to the set of
ontology nodes it admits (selectors intersected; deprecated and revoked ids excluded unless the
spec allows them; the virtual root never) and builds:

* ``json_schema`` — an object schema with ``additionalProperties: false`` (unless the spec
  says otherwise), the required fields, one ``enum`` of admitted ids per node field (sorted),
  a closed ``enum`` of predicates for triples fields;
* :meth:`DerivedSchema.pydantic_model` — the same contract as a pydantic model
  (``create_model`` with ``Literal`` types, strict mode, ``extra="forbid"``);
* :meth:`DerivedSchema.validator` — a compiled ``jsonschema`` Draft 2020-12 validator whose
  ``enum`` check is a set lookup (the stock check compares the instance with each member in
  turn: 10,000 comparisons per value for a 10,000-id enum).

**Large vocabularies.** A field that admits more than ``spec.enum_threshold`` ids (default
10,000) gets a *lookup* schema instead of an enum: ``{"type": "string", "pattern": <id shape>,
"x-kg-rageval-vocabulary": <name>}``. The pattern (from ``spec.id_pattern`` or derived from the
ids, see :func:`derive_id_pattern`) is what any JSON-Schema consumer and a constrained decoder
can enforce; membership is enforced by our validator (the ``x-kg-rageval-vocabulary`` keyword)
and by the pydantic model (an after-validator). The schema lists every lookup vocabulary under
``x-kg-rageval-vocabularies`` with its size and selector. Figures: ``docs/performance.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from kg_rageval.base.errors import ConfigError, UnknownIdError
from kg_rageval.families.conformance.keywords import VOCAB_KEYWORD, VOCABS_KEYWORD
from kg_rageval.ontology.model import DEPRECATED, REVOKED, Ontology

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.families.conformance.spec import AnySpec, PlainField, PlainSelector
    from kg_rageval.families.conformance.spec_model import FieldSpec, NodeSelector

DRAFT = "https://json-schema.org/draft/2020-12/schema"
MAX_SHAPES = 32


@dataclass(frozen=True)
class Vocabulary:
    """The ids one slot admits. ``name`` is the field (``technique``) or triple slot
    (``relations.subject``, ``relations.predicate``); ``mode`` is ``enum`` or ``lookup``."""

    name: str
    ids: tuple[str, ...]
    mode: str
    selector: dict[str, Any] = field(default_factory=dict)
    pattern: str | None = None

    @cached_property
    def members(self) -> frozenset[str]:
        return frozenset(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


def derive_id_pattern(ids: Iterable[str], *, max_shapes: int = MAX_SHAPES) -> str:
    """An anchored regex matching every id in ``ids``, from their *shapes*: runs of digits
    become ``[0-9]+`` (``T1003.001`` → ``T[0-9]+\\.[0-9]+``). With more than ``max_shapes``
    shapes, runs of letters become ``[A-Za-z]+`` too; with still more, any non-empty JSON
    string without quotes, backslashes or control characters."""
    ids = list(ids)
    for letters in (False, True):
        shapes: set[str] = set()
        for i in ids:
            s = re.sub(r"[0-9]+", "\x00", i)
            if letters:
                s = re.sub(r"[A-Za-z]+", "\x01", s)
            shapes.add(s)
            if len(shapes) > max_shapes:
                break
        if len(shapes) <= max_shapes:
            alts = sorted(
                {re.escape(s).replace("\x00", "[0-9]+").replace("\x01", "[A-Za-z]+") for s in shapes}
            )
            return "^(" + "|".join(alts) + ")$" if len(alts) > 1 else "^" + alts[0] + "$"
    return '^[^"\\\\\\x00-\\x1f]+$'


def _resolve(ontology: Ontology, value: str, where: str, source: str) -> int:
    try:
        return ontology.index(ontology.resolve(value))
    except UnknownIdError as exc:
        raise ConfigError(f"field {where}: {exc}", source=source) from None


def select_entities(
    ontology: Ontology,
    selector: NodeSelector | PlainSelector | None,
    *,
    allow_deprecated: bool,
    allow_revoked: bool,
    where: str,
    source: str = "<memory>",
) -> tuple[str, ...]:
    """Sorted ids of the nodes *and instances* a triple slot's ``selector`` admits, over an
    ontology with a knowledge graph: ``node_type`` may name node types or instance kinds
    (``intrusion-set``); ``within: C`` admits the nodes under ``C`` and the instances with a
    class under ``C``; ``ids`` may list instance ids; the status rules apply to both."""
    g = ontology.graph
    kinds = {k for k in g.instance_kinds if k}
    node_kinds = {t for t in ontology.node_types if t}
    inst_ids = set(g.instance_ids)
    no_nodes = False
    node_sel = selector
    if selector is not None:
        update: dict[str, Any] = {}
        if selector.node_type:
            unknown = [t for t in selector.node_type if t not in kinds | node_kinds]
            if unknown:
                raise ConfigError(
                    f"field {where}.node_type: unknown node type(s) or instance kind(s) "
                    f"{', '.join(map(repr, unknown))}; the ontology has {', '.join(sorted(node_kinds | kinds))}",
                    source=source,
                )
            update["node_type"] = [t for t in selector.node_type if t in node_kinds] or None
            no_nodes |= update["node_type"] is None
        if selector.ids:
            update["ids"] = [i for i in selector.ids if i not in inst_ids] or None
            no_nodes |= update["ids"] is None
        node_sel = selector.model_copy(update=update)
    nodes: list[str] = []
    if not no_nodes:
        try:
            idx = select_nodes(
                ontology,
                node_sel,
                allow_deprecated=allow_deprecated,
                allow_revoked=allow_revoked,
                where=where,
                source=source,
            )
            nodes = [ontology.ids[i] for i in idx.tolist()]
        except ConfigError as exc:
            if "admit no" not in str(exc):
                raise
    m = g.n_instances
    mask = np.ones(m, dtype=bool)
    if selector is not None:
        if selector.node_type:
            mask &= np.isin(np.asarray([k or "" for k in g.instance_kinds], dtype=object), selector.node_type)
        if selector.within:
            from kg_rageval.ontology.graph import satisfies

            classes = tuple(_resolve(ontology, v, f"{where}.within", source) for v in selector.within)
            mask &= satisfies(
                ontology, np.arange(len(ontology), len(ontology) + m), tuple(ontology.ids[c] for c in classes)
            )
        if selector.ids:
            mask &= np.isin(
                np.asarray(g.instance_ids, dtype=object), [i for i in selector.ids if i in inst_ids]
            )
    st = g.instance_status
    if not allow_deprecated:
        mask &= st != DEPRECATED
    if not allow_revoked:
        mask &= st != REVOKED
    out = tuple(sorted(nodes + [g.instance_ids[k] for k in np.flatnonzero(mask).tolist()]))
    if not out:
        raise ConfigError(
            f"field {where}: the selectors {selector.describe() if selector else {}} admit no "
            f"{'active ' if not (allow_deprecated or allow_revoked) else ''}node or instance",
            source=source,
        )
    return out


def select_nodes(
    ontology: Ontology,
    selector: NodeSelector | PlainSelector | None,
    *,
    allow_deprecated: bool,
    allow_revoked: bool,
    where: str,
    source: str = "<memory>",
) -> np.ndarray:
    """Sorted indices of the nodes ``selector`` admits (see :mod:`.spec` for the rules)."""
    n = len(ontology)
    mask = np.ones(n, dtype=bool)
    if ontology.virtual_root:
        mask[0] = False
    if selector is not None:
        if selector.within:
            under = np.zeros(n, dtype=bool)
            for v in selector.within:
                under[ontology.descendant_indices(_resolve(ontology, v, f"{where}.within", source))] = True
            mask &= under
        if selector.node_type:
            types = np.asarray([t or "" for t in ontology.node_types], dtype=object)
            known = set(types.tolist()) - {""}
            unknown = [t for t in selector.node_type if t not in known]
            if unknown:
                raise ConfigError(
                    f"field {where}.node_type: unknown node type(s) {', '.join(map(repr, unknown))}; "
                    f"the ontology has {', '.join(sorted(known)) or 'no node types'}",
                    source=source,
                )
            mask &= np.isin(types, selector.node_type)
        if selector.ids:
            listed = np.zeros(n, dtype=bool)
            listed[[_resolve(ontology, v, f"{where}.ids", source) for v in selector.ids]] = True
            mask &= listed
    status = np.asarray(ontology.status)
    if not allow_deprecated:
        mask &= status != DEPRECATED
    if not allow_revoked:
        mask &= status != REVOKED
    out = np.flatnonzero(mask).astype(np.int32)
    if out.size == 0:
        raise ConfigError(
            f"field {where}: the selectors {selector.describe() if selector else {}} admit no "
            f"{'active ' if not (allow_deprecated or allow_revoked) else ''}ontology node",
            source=source,
        )
    return out


def _predicates(ontology: Ontology, spec_preds: Any, where: str, source: str) -> tuple[str, ...]:
    if spec_preds == "ontology":
        if not ontology.properties:
            raise ConfigError(
                f"field {where}.predicates: 'ontology' was asked for, but the ontology declares no "
                f"properties; list the predicates instead",
                source=source,
            )
        return tuple(dict.fromkeys(p.id for p in ontology.properties))
    by_label = {(p.label or "").casefold(): p.id for p in ontology.properties if p.label}
    ids = {p.id for p in ontology.properties}
    out = []
    for p in spec_preds:
        out.append(p if p in ids else by_label.get(p.casefold(), p))
    return tuple(dict.fromkeys(out))


@dataclass
class DerivedSchema:
    """Everything derived from one ontology and spec. Build it with :func:`derive_schema`."""

    ontology: Ontology
    spec: AnySpec
    vocabularies: dict[str, Vocabulary]
    json_schema: dict[str, Any]

    # ------------------------------------------------------------------ slots
    def node_slots(self) -> list[tuple[str, str, FieldSpec | PlainField]]:
        """``(path, vocabulary name, field spec)`` for every slot that holds a node id."""
        out = []
        for name, f in self.spec.fields.items():
            if f.kind in ("node", "list"):
                out.append((name, name, f))
            elif f.kind == "triples":
                out.append((f"{name}[].subject", f"{name}.subject", f))
                out.append((f"{name}[].object", f"{name}.object", f))
        return out

    @property
    def lookup_vocabularies(self) -> dict[str, Vocabulary]:
        return {k: v for k, v in self.vocabularies.items() if v.mode == "lookup"}

    def to_json(self, *, indent: int | None = None) -> str:
        return json.dumps(self.json_schema, indent=indent, ensure_ascii=False)

    @property
    def size_bytes(self) -> int:
        """Size of the compact JSON serialisation of the schema."""
        return len(json.dumps(self.json_schema, separators=(",", ":")).encode("utf-8"))

    # ------------------------------------------------------------------ validators
    @cached_property
    def validator(self):
        """A compiled Draft 2020-12 validator: set-based ``enum`` and the vocabulary keyword."""
        from jsonschema import Draft202012Validator, ValidationError, validators
        from jsonschema._keywords import enum as stock_enum

        sets: dict[int, tuple[Any, frozenset[str] | None]] = {}

        def fast_enum(validator, enums, instance, schema):
            hit = sets.get(id(enums))
            if hit is None or hit[0] is not enums:
                members = frozenset(enums) if all(isinstance(e, str) for e in enums) else None
                hit = sets[id(enums)] = (enums, members)
            members = hit[1]
            if members is None:
                yield from stock_enum(validator, enums, instance, schema)
            elif not (isinstance(instance, str) and instance in members):
                yield ValidationError(f"{instance!r} is not one of the {len(enums)} allowed values")

        vocabs = self.vocabularies

        def vocab_keyword(validator, name, instance, schema):
            if isinstance(instance, str) and instance not in vocabs[name].members:
                yield ValidationError(f"{instance!r} is not in vocabulary {name!r} ({len(vocabs[name])} ids)")

        cls = validators.extend(Draft202012Validator, {"enum": fast_enum, VOCAB_KEYWORD: vocab_keyword})
        return cls(self.json_schema)

    @cached_property
    def checker(self):
        """The compiled checker of :mod:`.fastcheck` (``None`` when the schema leaves the
        derived subset, e.g. after hand edits)."""
        from kg_rageval.families.conformance.fastcheck import Unsupported, compile_checker

        try:
            return compile_checker(self.json_schema, self.vocabularies)
        except Unsupported:
            return None

    @cached_property
    def stock_validator(self):
        """The unmodified ``jsonschema`` Draft 2020-12 validator (reference; slow on big enums,
        and blind to lookup vocabularies)."""
        from jsonschema import Draft202012Validator

        return Draft202012Validator(self.json_schema)

    def accepts_fast(self, obj: Any) -> bool:
        """Whether the pydantic model accepts ``obj`` (the fast path of ``engine="pydantic"``)."""
        from pydantic import ValidationError

        try:
            self.pydantic_model().model_validate(obj)
            return True
        except ValidationError:
            return False

    def pydantic_model(self):
        """The spec as a pydantic model class (cached); see :func:`build_pydantic_model`."""
        if "_model" not in self.__dict__:
            self.__dict__["_model"] = build_pydantic_model(self)
        return self.__dict__["_model"]


def _node_schema(vocab: Vocabulary, description: str | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "string"}
    if description:
        s["description"] = description
    if vocab.mode == "enum":
        s["enum"] = list(vocab.ids)
    else:
        s["pattern"] = vocab.pattern
        s[VOCAB_KEYWORD] = vocab.name
    return s


def _array(items: dict[str, Any], f: FieldSpec | PlainField) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "array", "items": items}
    if f.description:
        s["description"] = f.description
    if f.min_items is not None:
        s["minItems"] = f.min_items
    if f.max_items is not None:
        s["maxItems"] = f.max_items
    if f.unique_items:
        s["uniqueItems"] = True
    return s


_SCALARS = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean"}


def derive_schema(ontology: Ontology, spec: AnySpec) -> DerivedSchema:
    """Resolve ``spec`` against ``ontology`` and build the JSON Schema (see module docstring).

    Unknown selector ids, unknown node types, selectors that admit nothing and an empty
    ``predicates: ontology`` raise :class:`~kg_rageval.base.errors.ConfigError` naming the spec
    file and field."""
    vocabs: dict[str, Vocabulary] = {}
    src = spec.source

    def make(
        name: str, f: FieldSpec | PlainField, sel: NodeSelector | PlainSelector | None, entities: bool = False
    ) -> Vocabulary:
        allow_dep, allow_rev = spec.allows(f, "deprecated"), spec.allows(f, "revoked")
        if entities and ontology.graph.n_instances:
            ids = select_entities(
                ontology,
                sel,
                allow_deprecated=allow_dep,
                allow_revoked=allow_rev,
                where=f"fields.{name}",
                source=src,
            )
        else:
            idx = select_nodes(
                ontology,
                sel,
                allow_deprecated=allow_dep,
                allow_revoked=allow_rev,
                where=f"fields.{name}",
                source=src,
            )
            ids = tuple(sorted(ontology.ids[i] for i in idx.tolist()))
        mode = "enum" if len(ids) <= spec.enum_threshold else "lookup"
        pattern = None
        if mode == "lookup":
            pattern = spec.id_pattern or derive_id_pattern(ids)
            rx = re.compile(pattern)
            bad = next((i for i in ids if not rx.search(i)), None)
            if bad is not None:
                raise ConfigError(
                    f"field id_pattern: {pattern!r} does not match the admitted id {bad!r}", source=src
                )
        selector = sel.describe() if sel else {}
        v = Vocabulary(name, ids, mode, selector, pattern)
        vocabs[name] = v
        return v

    props: dict[str, Any] = {}
    for name, f in spec.fields.items():
        if f.kind in ("node", "list"):
            v = make(name, f, f)
            props[name] = _node_schema(v, f.description) if f.kind == "node" else _array(_node_schema(v), f)
        elif f.kind == "triples":
            s = make(f"{name}.subject", f, f.subject, entities=True)
            o = make(f"{name}.object", f, f.object, entities=True)
            preds = _predicates(ontology, f.predicates, f"fields.{name}", src)
            vocabs[f"{name}.predicate"] = Vocabulary(
                f"{name}.predicate", preds, "enum", {"predicates": list(preds)}
            )
            item = {
                "type": "object",
                "properties": {
                    "subject": _node_schema(s),
                    "predicate": {"type": "string", "enum": list(preds)},
                    "object": _node_schema(o),
                },
                "required": ["subject", "predicate", "object"],
                "additionalProperties": False,
            }
            props[name] = _array(item, f)
        else:
            props[name] = {"type": _SCALARS[f.kind]}
            if f.description:
                props[name]["description"] = f.description
    schema: dict[str, Any] = {"$schema": DRAFT, "title": spec.title, "type": "object"}
    if spec.description:
        schema["description"] = spec.description
    schema["properties"] = props
    schema["required"] = spec.required_fields
    schema["additionalProperties"] = spec.additional_properties
    lookups = {k: v for k, v in vocabs.items() if v.mode == "lookup"}
    if lookups:
        schema[VOCABS_KEYWORD] = {
            k: {"size": len(v), "pattern": v.pattern, "selector": v.selector, "ontology": ontology.source}
            for k, v in lookups.items()
        }
    return DerivedSchema(ontology, spec, vocabs, schema)


# ---------------------------------------------------------------------- pydantic
def _pyd_node_type(vocab: Vocabulary):
    from typing import Annotated

    from pydantic import AfterValidator, StringConstraints

    if vocab.mode == "enum":
        return Literal[vocab.ids]  # type: ignore[valid-type]
    members = vocab.members

    def check(v: str) -> str:
        if v not in members:
            raise ValueError(f"{v!r} is not in vocabulary {vocab.name!r} ({len(members)} ids)")
        return v

    return Annotated[str, StringConstraints(pattern=vocab.pattern), AfterValidator(check)]


def _unique(v: list) -> list:
    seen = []
    for x in v:
        key = x.model_dump_json() if hasattr(x, "model_dump_json") else x
        if key in seen:
            raise ValueError("items are not unique")
        seen.append(key)
    return v


def _integral(v: int | float) -> int:
    if isinstance(v, float) and not v.is_integer():
        raise ValueError("not an integer")
    return int(v)


def build_pydantic_model(derived: DerivedSchema):
    """A pydantic model with the same contract as ``derived.json_schema``.

    Strict mode (no coercion: ``"1"`` is not a number, ``1`` is not a string) and
    ``extra="forbid"``. JSON's integer rule is kept: ``2.0`` is an integer, as in JSON Schema.
    An optional field that is absent validates; an explicit ``null`` does not (the JSON
    Schema does not admit ``null`` either)."""
    from typing import Annotated

    from pydantic import (
        AfterValidator,
        ConfigDict,
        Field,
        StrictBool,
        StrictFloat,
        StrictInt,
        StrictStr,
        create_model,
    )

    spec = derived.spec
    config = ConfigDict(
        strict=True,
        extra="allow" if spec.additional_properties else "forbid",
        regex_engine="python-re",
    )
    scalars = {
        "string": StrictStr,
        "number": StrictInt | StrictFloat,
        "integer": Annotated[StrictInt | StrictFloat, AfterValidator(_integral)],
        "boolean": StrictBool,
    }
    required = set(spec.required_fields)
    fields: dict[str, Any] = {}
    for name, f in spec.fields.items():
        if f.kind == "node":
            tp: Any = _pyd_node_type(derived.vocabularies[name])
        elif f.kind == "list":
            tp = list[_pyd_node_type(derived.vocabularies[name])]  # type: ignore[misc]
        elif f.kind == "triples":
            # a Literal over the predicate ids, known only at run time
            pred_tp: Any = Literal[derived.vocabularies[f"{name}.predicate"].ids]  # type: ignore[valid-type]
            triple = create_model(
                f"{spec.title}_{name}_triple",
                __config__=ConfigDict(strict=True, extra="forbid", regex_engine="python-re"),
                subject=(_pyd_node_type(derived.vocabularies[f"{name}.subject"]), ...),
                predicate=(pred_tp, ...),
                object=(_pyd_node_type(derived.vocabularies[f"{name}.object"]), ...),
            )
            tp = list[triple]  # type: ignore[valid-type]
        else:
            tp = scalars[f.kind]
        if f.kind in ("list", "triples") and f.unique_items:
            tp = Annotated[tp, AfterValidator(_unique)]
        kw: dict[str, Any] = {}
        if f.kind in ("list", "triples"):
            if f.min_items is not None:
                kw["min_length"] = f.min_items
            if f.max_items is not None:
                kw["max_length"] = f.max_items
        if f.description:
            kw["description"] = f.description
        default = ... if name in required else None
        fields[name] = (tp, Field(default, **kw))
    return create_model(spec.title, __config__=config, **fields)
