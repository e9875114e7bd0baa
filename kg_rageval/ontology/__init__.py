"""The ontology model: load once, compile to an immutable index, let every metric use it."""

from .builder import OntologyBuilder
from .loaders import available_formats, load_ontology, register_loader
from .model import (
    ACTIVE,
    DEPRECATED,
    RELATIONS,
    REVOKED,
    STATUS_NAMES,
    VIRTUAL_ROOT_ID,
    Ontology,
    Property,
)

__all__ = [
    "ACTIVE",
    "DEPRECATED",
    "RELATIONS",
    "REVOKED",
    "STATUS_NAMES",
    "VIRTUAL_ROOT_ID",
    "Ontology",
    "OntologyBuilder",
    "Property",
    "available_formats",
    "load_ontology",
    "register_loader",
]
