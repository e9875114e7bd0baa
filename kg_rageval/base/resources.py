"""Where the bundled resources live: SHACL shapes and ontologies.

In a source checkout (and an editable install) they are the repository's top-level
``shapes/`` and ``ontologies/`` folders; ``kg_rageval/data/`` links to them so that a built
wheel carries copies as package data.
"""

from __future__ import annotations

from pathlib import Path

from kg_rageval.base.errors import KgRagevalError

_PACKAGE = Path(__file__).resolve().parents[1]  # kg_rageval/ (this file is kg_rageval/base/)


def _find(name: str) -> Path:
    for candidate in (_PACKAGE / "data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise KgRagevalError(
        f"the bundled {name}/ folder was not found next to the kg_rageval package "
        f"({_PACKAGE}); reinstall kg-rageval or pass the path explicitly"
    )


def shapes_dir() -> Path:
    """Folder of the bundled SHACL shapes."""
    return _find("shapes")


def ontologies_dir() -> Path:
    """Folder of the bundled ontologies (Disease Ontology cancer slim, ATT&CK, a SKOS file)."""
    return _find("ontologies")


def shape(name: str) -> Path:
    """A bundled shapes file by name, e.g. ``shape("ontology.ttl")``."""
    p = shapes_dir() / name
    if not p.is_file():
        raise KgRagevalError(f"no bundled shapes file {name!r} in {shapes_dir()}")
    return p


def bundled_ontology(name: str) -> Path:
    """A bundled ontology file by name, e.g. ``bundled_ontology("doid-cancer-slim.obo")``."""
    p = ontologies_dir() / name
    if not p.is_file():
        raise KgRagevalError(f"no bundled ontology {name!r} in {ontologies_dir()}")
    return p
