"""Loader registry: one entry per format, imported only when used.

``load_ontology(path)`` picks the format from the file name (``.ttl``, ``.owl``, ``.obo``,
``.json``/``.json.gz`` STIX bundles, ``.csv``/``.tsv`` edge tables, ``.kgro`` compiled
caches, ...). An unknown extension is an error that lists the known formats — never a silent
fallback. Third-party loaders join through the ``kg_rageval.loaders`` entry-point group or
:func:`register_loader`.

No loader reaches the network: ``owl:imports`` are not followed (``follow_imports=True``
asks for it where a loader supports it) and XML external entities are refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.base.imports import import_target


@dataclass(frozen=True)
class LoaderSpec:
    name: str
    target: str  # "module:function"
    extensions: tuple[str, ...]
    description: str

    def load(self) -> Callable[..., Any]:
        return import_target(self.target)


_REGISTRY: dict[str, LoaderSpec] = {}
_ALIASES: dict[str, str] = {}


def register_loader(
    name: str,
    target: str,
    *,
    extensions: tuple[str, ...] = (),
    description: str = "",
    aliases: tuple[str, ...] = (),
) -> None:
    """Register a loader ``target`` ("module:function(path, **options) -> Ontology")."""
    _REGISTRY[name] = LoaderSpec(name, target, tuple(extensions), description)
    for a in aliases:
        _ALIASES[a] = name


_P = "kg_rageval.ontology.loaders."
register_loader(
    "rdf",
    _P + "rdf:load_rdf",
    extensions=(".ttl", ".nt", ".n3", ".rdf", ".xml", ".jsonld", ".trig", ".nq", ".owx"),
    description="RDF in any syntax rdflib reads: RDFS/OWL subClassOf and SKOS broader/narrower",
    aliases=("turtle", "ttl", "xml", "rdfxml", "nt", "ntriples", "json-ld", "jsonld", "skos"),
)
register_loader(
    "owl",
    _P + "rdf:load_owl",
    extensions=(".owl",),
    description="OWL (RDF/XML, Turtle, ...) read with rdflib; reasoner='hermit' infers with owlready2",
)
register_loader("obo", _P + "obo:load_obo", extensions=(".obo",), description="OBO 1.4 flat files")
register_loader(
    "stix",
    _P + "stix:load_stix",
    extensions=(".json", ".json.gz"),
    description="STIX 2.x bundles (MITRE ATT&CK): tactics, techniques, sub-techniques",
    aliases=("attack",),
)
register_loader(
    "table",
    _P + "table:load_table",
    extensions=(".csv", ".tsv", ".tab"),
    description="edge tables: child, parent[, label] per line (header optional)",
    aliases=("csv", "tsv"),
)
register_loader(
    "neo4j",
    _P + "neo4j:load_neo4j",
    extensions=(),
    description="a graph database over Bolt (Neo4j, ArcadeDB, ...): load_ontology(uri, format='neo4j')",
    aliases=("bolt", "cypher"),
)
register_loader(
    "compiled",
    "kg_rageval.ontology.cache:load_compiled",
    extensions=(".kgro",),
    description="a compiled cache written by `kg-rageval ontology compile`",
    aliases=("kgro",),
)


def _entry_points() -> None:
    from importlib.metadata import entry_points

    for ep in entry_points(group="kg_rageval.loaders"):
        if ep.name not in _REGISTRY:
            register_loader(ep.name, ep.value, description=f"plugin {ep.value}")


def available_formats() -> dict[str, LoaderSpec]:
    """Registered loaders by name (built-ins and entry points)."""
    _entry_points()
    return dict(sorted(_REGISTRY.items()))


def detect_format(path: str | Path) -> str:
    name = str(path).lower()
    if name.startswith(("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")):
        return "neo4j"
    best: tuple[int, str] | None = None
    for spec in _REGISTRY.values():
        for ext in spec.extensions:
            if name.endswith(ext) and (best is None or len(ext) > best[0]):
                best = (len(ext), spec.name)
    if best is None:
        known = ", ".join(sorted({e for s in _REGISTRY.values() for e in s.extensions}))
        raise InputError(
            f"cannot tell the ontology format from the file name; pass format= (CLI: --ontology-format) one of "
            f"{', '.join(sorted(_REGISTRY))} (known extensions: {known})",
            source=str(path),
        )
    return best[1]


def load_ontology(path: str | Path, format: str | None = None, **options: Any):
    """Load and compile an ontology from ``path``.

    ``format`` is a registered loader name or alias; ``None`` detects it from the extension.
    ``options`` go to the loader (e.g. ``dangling="drop"``, ``reasoner="hermit"``,
    ``strict=True``); ``None`` values are dropped, and an option the loader does not take is an
    :class:`InputError` naming the options it does take (:mod:`.options`).
    """
    from kg_rageval.ontology.loaders.options import check_loader_options

    p = Path(path)
    fmt = format or detect_format(str(path))
    fmt = _ALIASES.get(fmt, fmt)
    if fmt not in _REGISTRY:
        # plugins are reached by name only (they declare no extensions), so the entry-point
        # scan (importlib.metadata, ~30 ms) runs only for a name the built-ins do not know
        _entry_points()
    if fmt not in _REGISTRY:
        raise InputError(
            f"unknown ontology format {fmt!r}; known: {', '.join(sorted(_REGISTRY))}",
            source=str(p),
        )
    if fmt != "neo4j" and not p.exists():
        raise InputError("no such file", source=str(p))
    if fmt != "neo4j":
        from kg_rageval.base.safe_io import refuse_credentials_file

        refuse_credentials_file(p)
    loader = _REGISTRY[fmt].load()
    source = str(path) if fmt != "neo4j" else None  # a URI may carry credentials: not shown
    options = check_loader_options(fmt, loader, options, source=source)
    if fmt == "neo4j":
        return loader(str(path), **options)
    return loader(p, **options)
