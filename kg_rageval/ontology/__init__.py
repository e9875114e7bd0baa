"""The ontology model: load once, compile to an immutable index, let every metric use it."""

from .builder import OntologyBuilder
from .resolver import NOT_IN_ONTOLOGY, IdOptions, IdResolver, Resolution
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
    "IdOptions",
    "IdResolver",
    "NOT_IN_ONTOLOGY",
    "Resolution",
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
