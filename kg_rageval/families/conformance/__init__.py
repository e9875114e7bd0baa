"""Constrained-generation conformance: ontology-derived output schemas and conformance metrics.

* :mod:`.spec` — the user's schema spec (which output field holds which kind of node);
* :mod:`.schema` — JSON Schema (draft 2020-12) and pydantic model derived from ontology + spec;
* :mod:`.outlines_backend` — the constraints for a constrained decoder (Outlines) and export;
* :mod:`.fastcheck` — the derived schema compiled to fast checking closures;
* :mod:`.metrics` — schema validity, vocabulary, status, domain/range and semantic conformance;
* :mod:`.shacl` — the same outputs rendered as RDF and validated against SHACL shapes.

See ``docs/conformance.md``.
"""

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
from kg_rageval.families.conformance.spec import FieldSpec, NodeSelector, SchemaSpec, load_spec, parse_spec

__all__ = [
    "FAILURE_KINDS",
    "ConformanceFamily",
    "DerivedSchema",
    "FieldSpec",
    "NodeSelector",
    "SchemaSpec",
    "Vocabulary",
    "build_pydantic_model",
    "check_schema",
    "derive_id_pattern",
    "derive_schema",
    "load_spec",
    "parse_spec",
    "score_conformance",
]
