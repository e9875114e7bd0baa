"""Reader of the conformance family's output specification (``(path, ontology, options)``,
the one loader signature of :class:`kg_rageval.scoring.Input`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping


def spec(path: str | Path, ontology: Any, options: Mapping[str, Any]) -> Any:
    from kg_rageval.families.conformance.spec import load_spec

    return load_spec(path)
