"""Readers of the conformance families' inputs: the output specification and the SHACL shapes
(``(path, ontology, options)``, the one loader signature of :class:`kg_rageval.scoring.Input`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def spec(path: str | Path, ontology: Any, options: Mapping[str, Any]) -> Any:
    """The output spec (:func:`~kg_rageval.families.conformance.spec.read_spec`: a plainly
    valid spec is read without pydantic)."""
    from kg_rageval.families.conformance.spec import read_spec

    return read_spec(path)


def shapes(path: str | Path, ontology: Any, options: Mapping[str, Any]) -> Any:
    """The SHACL shapes graph of the ``shacl`` family (a missing or unparsable file: InputError)."""
    from kg_rageval.ontology.validate import load_shapes

    return load_shapes(path)
