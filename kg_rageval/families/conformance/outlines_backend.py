"""Hand the derived constraints to a constrained decoder, and export them for other backends.

* :func:`output_type` — the Outlines output type (``outlines.types.JsonSchema``) of a derived
  schema: pass it to ``outlines.Generator(model, output_type)`` or ``model(prompt, output_type)``.
* :func:`to_regex` — the regular expression ``outlines_core`` compiles the schema to. A
  conforming output *serialised in the schema's property order* (the order a constrained
  decoder produces; :func:`canonical_json`) matches it; non-conforming outputs do not.
* :func:`build_index` / :func:`accepts` — an ``outlines_core.Index`` over a token vocabulary
  and a walk of a token sequence through it (tests use a tiny hand-made vocabulary; no model
  is downloaded).
* :func:`export_schema` / :func:`openai_response_format` — the JSON Schema as a file, or
  wrapped as an OpenAI-style ``response_format`` for other structured-output backends.

Lookup vocabularies (fields above ``enum_threshold``) reach the decoder as their id
*pattern* only: the decoder guarantees the id shape, and membership is checked afterwards by
:func:`~kg_rageval.families.conformance.score_conformance` (or the pydantic model). The vendor keywords
``x-kg-rageval-*`` are ignored by decoders and other JSON-Schema consumers.

Outlines and outlines_core are imported lazily, inside the functions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import ConfigError
from kg_rageval.families.conformance.schema import DerivedSchema


def _outlines(module: str, what: str) -> Any:
    """``module`` of the outlines extra, or a :class:`ConfigError` naming the extra to install
    (a core install has neither outlines nor outlines_core)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pkg = module.split(".")[0]
        raise ConfigError(f"{what} needs {pkg}: pip install 'kg-rageval[outlines]'") from exc


def _schema(schema: DerivedSchema | Mapping[str, Any]) -> dict[str, Any]:
    return dict(schema.json_schema if isinstance(schema, DerivedSchema) else schema)


def decoder_schema(schema: DerivedSchema | Mapping[str, Any]) -> dict[str, Any]:
    """The schema as handed to a decoder: the ``$schema`` and ``x-kg-rageval-*`` keywords
    removed (everything else unchanged)."""

    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: clean(v) for k, v in node.items() if not (k.startswith("x-kg-rageval") or k == "$schema")
            }
        if isinstance(node, list):
            return [clean(v) for v in node]
        return node

    return clean(_schema(schema))


def to_regex(schema: DerivedSchema | Mapping[str, Any], *, whitespace_pattern: str | None = None) -> str:
    """The regex ``outlines_core.json_schema.build_regex_from_schema`` builds for the schema.

    Whitespace between tokens follows ``whitespace_pattern`` (outlines' default: at most one
    space). Properties appear in schema order; optional properties may be left out."""
    build_regex_from_schema = _outlines(
        "outlines_core.json_schema", "the decoder regex (to_regex)"
    ).build_regex_from_schema
    return build_regex_from_schema(json.dumps(decoder_schema(schema)), whitespace_pattern)


def output_type(schema: DerivedSchema | Mapping[str, Any], *, whitespace_pattern: str | None = None):
    """The Outlines output type (``outlines.types.JsonSchema``) for the schema."""
    JsonSchema = _outlines("outlines.types", "the Outlines output type").JsonSchema
    return JsonSchema(decoder_schema(schema), whitespace_pattern=whitespace_pattern)


def canonical_json(output: Mapping[str, Any], schema: DerivedSchema | Mapping[str, Any]) -> str:
    """``output`` serialised compactly with its keys in the schema's property order (nested
    triple objects too; unknown keys last), the form a constrained decoder emits."""
    s = _schema(schema)

    def order(value: Any, sub: Mapping[str, Any]) -> Any:
        if isinstance(value, dict):
            props = sub.get("properties", {}) if isinstance(sub, Mapping) else {}
            keys = [k for k in props if k in value] + [k for k in value if k not in props]
            return {k: order(value[k], props.get(k, {})) for k in keys}
        if isinstance(value, list):
            items = sub.get("items", {}) if isinstance(sub, Mapping) else {}
            return [order(v, items) for v in value]
        return value

    return json.dumps(order(output, s), separators=(",", ":"), ensure_ascii=False)


def build_index(
    schema: DerivedSchema | Mapping[str, Any],
    vocabulary: Mapping[str, Iterable[int]],
    *,
    eos_token_id: int,
    whitespace_pattern: str | None = None,
):
    """An ``outlines_core.Index`` of the schema's regex over ``vocabulary`` (token string →
    token ids). The EOS id must not appear in ``vocabulary``."""
    core = _outlines("outlines_core", "the decoder index (build_index)")
    Index, Vocabulary = core.Index, core.Vocabulary
    vocab = Vocabulary(eos_token_id, {k: list(v) for k, v in vocabulary.items()})
    return Index(to_regex(schema, whitespace_pattern=whitespace_pattern), vocab)


def accepts(index: Any, token_ids: Iterable[int]) -> bool:
    """Whether the token sequence is allowed step by step by ``index`` and ends in a final
    state (a complete output)."""
    state = index.get_initial_state()
    for t in token_ids:
        nxt = index.get_next_state(state, t)
        if nxt is None:
            return False
        state = nxt
    return bool(index.is_final_state(state))


def export_schema(
    schema: DerivedSchema | Mapping[str, Any], path: str | Path, *, flavor: str = "json-schema"
) -> Path:
    """Write the schema: ``flavor="json-schema"`` (the full draft 2020-12 schema, vendor
    keywords kept), ``"decoder"`` (:func:`decoder_schema`) or ``"openai"``
    (:func:`openai_response_format`)."""
    if flavor == "json-schema":
        payload = _schema(schema)
    elif flavor == "decoder":
        payload = decoder_schema(schema)
    elif flavor == "openai":
        payload = openai_response_format(schema)
    else:
        raise ConfigError(f"flavor must be 'json-schema', 'decoder' or 'openai', not {flavor!r}")
    p = Path(path)
    p.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return p


def openai_response_format(schema: DerivedSchema | Mapping[str, Any]) -> dict[str, Any]:
    """``{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}``. ``strict`` is
    true only when every property is required (strict mode requires that)."""
    s = decoder_schema(schema)
    name = str(s.get("title") or "Output")
    strict = set(s.get("required", [])) == set(s.get("properties", {}))
    return {"type": "json_schema", "json_schema": {"name": name, "schema": s, "strict": strict}}
