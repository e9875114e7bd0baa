"""A compiled checker for the schemas :func:`~.schema.derive_schema` generates.

Derived schemas use a small subset of JSON Schema: objects with ``properties``, ``required``
and boolean ``additionalProperties``; strings with ``enum`` or with ``pattern`` plus the
vocabulary keyword; arrays with ``items``, ``minItems``, ``maxItems``, ``uniqueItems``; the
scalar types. :func:`compile_checker` turns such a schema into nested closures (set lookups,
no keyword dispatch), which is several times faster than ``jsonschema`` and gives the same
verdict and the same failure kinds and paths (tested against ``jsonschema`` on the test
cases and on the benchmark's 100,000 outputs). Any other keyword makes it refuse
(:class:`Unsupported`), and the caller falls back to ``jsonschema``.

Failure kinds follow :mod:`.metrics`: a value of the wrong type gives only ``wrong_type``
(jsonschema also reports the enum, which :func:`~.metrics.check_schema` drops); a string that
fails the id pattern of a lookup slot gives one ``enum_violation``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from kg_rageval.families.conformance.keywords import VOCAB_KEYWORD, VOCABS_KEYWORD

Failure = tuple[str, tuple, str]
Check = Callable[[Any, tuple, list], None]

_META = {"$schema", "title", "description", VOCABS_KEYWORD}


class Unsupported(ValueError):
    """The schema uses a keyword the compiled checker does not implement."""


def _type_ok(t: str) -> Callable[[Any], bool]:
    if t == "string":
        return lambda v: isinstance(v, str)
    if t == "number":
        return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "integer":
        return lambda v: (
            (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
        )
    if t == "boolean":
        return lambda v: isinstance(v, bool)
    if t == "array":
        return lambda v: isinstance(v, list)
    if t == "object":
        return lambda v: isinstance(v, dict)
    if t == "null":
        return lambda v: v is None
    raise Unsupported(f"type {t!r}")


def _compile(schema: Mapping[str, Any], vocabs: Mapping[str, Any]) -> Check:
    keys = set(schema) - _META
    t = schema.get("type")
    if not isinstance(t, str):
        raise Unsupported("a schema without a single 'type'")
    type_ok = _type_ok(t)
    tname = t

    if t == "object":
        unknown = keys - {"type", "properties", "required", "additionalProperties"}
        if unknown:
            raise Unsupported(f"object keywords {sorted(unknown)}")
        props = {k: _compile(v, vocabs) for k, v in schema.get("properties", {}).items()}
        required = list(schema.get("required", []))
        extra_ok = schema.get("additionalProperties", True)
        if not isinstance(extra_ok, bool):
            raise Unsupported("additionalProperties with a schema")

        def check_object(v: Any, path: tuple, out: list) -> None:
            if not isinstance(v, dict):
                out.append(("wrong_type", path, f"{v!r} is not of type 'object'"))
                return
            for r in required:
                if r not in v:
                    out.append(("missing_field", path, f"{r!r} is a required property"))
            for k, sub in props.items():
                if k in v:
                    sub(v[k], path + (k,), out)
            if not extra_ok:
                extra = [k for k in v if k not in props]
                if extra:
                    out.append(("extra_field", path, f"additional properties {', '.join(map(repr, extra))}"))

        return check_object

    if t == "array":
        unknown = keys - {"type", "items", "minItems", "maxItems", "uniqueItems"}
        if unknown:
            raise Unsupported(f"array keywords {sorted(unknown)}")
        items = _compile(schema["items"], vocabs) if "items" in schema else None
        lo, hi, uniq = schema.get("minItems"), schema.get("maxItems"), schema.get("uniqueItems", False)

        def check_array(v: Any, path: tuple, out: list) -> None:
            if not isinstance(v, list):
                out.append(("wrong_type", path, f"{v!r} is not of type 'array'"))
                return
            if lo is not None and len(v) < lo:
                out.append(("other", path, f"fewer than {lo} items"))
            if hi is not None and len(v) > hi:
                out.append(("other", path, f"more than {hi} items"))
            if uniq and not _unique(v):
                out.append(("other", path, "items are not unique"))
            if items is not None:
                for i, x in enumerate(v):
                    items(x, path + (i,), out)

        return check_array

    if t == "string":
        unknown = keys - {"type", "enum", "pattern", VOCAB_KEYWORD}
        if unknown:
            raise Unsupported(f"string keywords {sorted(unknown)}")
        members = None
        if "enum" in schema:
            if not all(isinstance(e, str) for e in schema["enum"]):
                raise Unsupported("a string enum with non-string members")
            members = frozenset(schema["enum"])
        rx = re.compile(schema["pattern"]) if "pattern" in schema else None
        vocab = vocabs[schema[VOCAB_KEYWORD]].members if VOCAB_KEYWORD in schema else None

        def check_string(v: Any, path: tuple, out: list) -> None:
            if not isinstance(v, str):
                out.append(("wrong_type", path, f"{v!r} is not of type 'string'"))
                return
            if members is not None and v not in members:
                out.append(("enum_violation", path, f"{v!r} is not one of the {len(members)} allowed values"))
            elif rx is not None and not rx.search(v):
                out.append(
                    (
                        "enum_violation" if vocab is not None else "other",
                        path,
                        f"{v!r} does not match {rx.pattern!r}",
                    )
                )
            elif vocab is not None and v not in vocab:
                out.append(("enum_violation", path, f"{v!r} is not in vocabulary {schema[VOCAB_KEYWORD]!r}"))

        return check_string

    if keys - {"type"}:
        raise Unsupported(f"{t} keywords {sorted(keys - {'type'})}")

    def check_scalar(v: Any, path: tuple, out: list) -> None:
        if not type_ok(v):
            out.append(("wrong_type", path, f"{v!r} is not of type {tname!r}"))

    return check_scalar


def _unique(v: list) -> bool:
    # JSON equality: 1 and True differ, 1 and 1.0 do not (as in jsonschema)
    seen = []
    for x in v:
        key = (
            (type(x) is bool, x) if not isinstance(x, (dict, list)) else ("c", json.dumps(x, sort_keys=True))
        )
        if key in seen:
            return False
        seen.append(key)
    return True


def compile_checker(
    schema: Mapping[str, Any], vocabularies: Mapping[str, Any]
) -> Callable[[Any], list[Failure]]:
    """``check(instance) -> [(kind, path tuple, message), ...]`` (empty = valid); raises
    :class:`Unsupported` when the schema leaves the derived subset."""
    root = _compile(schema, vocabularies)

    def check(instance: Any) -> list[Failure]:
        out: list[Failure] = []
        root(instance, (), out)
        return out

    return check
