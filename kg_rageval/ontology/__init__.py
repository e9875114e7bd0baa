"""The ontology model: load once, compile to an immutable index, let every metric use it."""

from kg_rageval.contract.ids import INACTIVE, NOT_IN_ONTOLOGY
from kg_rageval.ontology.builder import OntologyBuilder
from kg_rageval.ontology.loaders import available_formats, load_ontology, register_loader
from kg_rageval.ontology.model import (
    ACTIVE,
    DEPRECATED,
    RELATIONS,
    REVOKED,
    STATUS_NAMES,
    VIRTUAL_ROOT_ID,
    Ontology,
    Property,
)
from kg_rageval.ontology.resolver import IdOptions, IdResolver, Resolution

__all__ = [
    "ACTIVE",
    "DEPRECATED",
    "IdOptions",
    "IdResolver",
    "INACTIVE",
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
