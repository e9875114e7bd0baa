"""Constrained-generation conformance: ontology-derived output schemas and conformance metrics.

* :mod:`.spec` — the user's schema spec (which output field holds which kind of node): the
  pydantic models (:mod:`.spec_model`) and the plain reader of plainly valid specs (:mod:`.spec_rules`);
* :mod:`.schema` — JSON Schema (draft 2020-12) and pydantic model derived from ontology + spec;
* :mod:`.outlines_backend` — the constraints for a constrained decoder (Outlines) and export;
* :mod:`.fastcheck` — the derived schema compiled to fast checking closures;
* :mod:`.metrics` — schema validity, vocabulary, status, domain/range and semantic conformance;
* :mod:`.shacl` — the same outputs rendered as RDF and validated against SHACL shapes.

See ``docs/conformance.md``.
"""

from typing import TYPE_CHECKING, Any

from kg_rageval.families.conformance.metrics import (
    FAILURE_KINDS,
    ConformanceFamily,
    check_schema,
    score_conformance,
)
from kg_rageval.families.conformance.schema import (
    DerivedSchema,
    Vocabulary,
    build_pydantic_model,
    derive_id_pattern,
    derive_schema,
)
from kg_rageval.families.conformance.spec import (
    PlainSpec,
    as_model,
    load_spec,
    parse_spec,
    read_spec,
    spec_of,
)

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.families.conformance.spec_model import FieldSpec, NodeSelector, SchemaSpec


def __getattr__(name: str) -> Any:
    """The pydantic spec models, imported when first named (a plainly valid spec is read
    without pydantic: :func:`~kg_rageval.families.conformance.spec.plain_spec`)."""
    if name in ("FieldSpec", "NodeSelector", "SchemaSpec"):
        from kg_rageval.families.conformance import spec_model

        return getattr(spec_model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FAILURE_KINDS",
    "ConformanceFamily",
    "DerivedSchema",
    "FieldSpec",
    "NodeSelector",
    "PlainSpec",
    "SchemaSpec",
    "Vocabulary",
    "as_model",
    "build_pydantic_model",
    "check_schema",
    "derive_id_pattern",
    "derive_schema",
    "load_spec",
    "parse_spec",
    "read_spec",
    "score_conformance",
    "spec_of",
]
