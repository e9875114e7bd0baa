"""Reader of the generation family's judgments file (``(path, ontology, options)``, the one
loader signature of :class:`kg_rageval.scoring.Input`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def judgments(path: str | Path, ontology: Any, options: Mapping[str, Any]) -> Any:
    from kg_rageval.families.generation.judgment import load_judgments

    return load_judgments(path)
