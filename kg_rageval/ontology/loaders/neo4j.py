"""Load an ontology from a graph database over Bolt (Neo4j, ArcadeDB, Memgraph, ...).

``load_neo4j(uri, mapping=...)`` reads the concept nodes and the hierarchy relationships with
two read-only Cypher queries through the official ``neo4j`` driver:

* ``MATCH (n:`Label`) RETURN n.`id` AS id, n.`label` AS p0, ...`` — one row per concept;
* ``MATCH (c:`Label`)-[:`REL`]->(p:`Label`) RETURN c.`id` AS child, p.`id` AS parent`` —
  one row per hierarchy edge (``<-`` when ``direction="parent_to_child"``, e.g. SKOS
  ``narrower``).

Labels, relationship types and property names cannot be Cypher parameters, so they are checked
against ``^[A-Za-z_][A-Za-z0-9_]*$`` and backtick-quoted; every value travels as a parameter.
:class:`GraphMapping` says which label, properties and relationship hold the hierarchy;
:data:`PRESETS` covers neosemantics (n10s) imports of OWL and SKOS.

Conventions: a property holding a list (n10s keeps multi-valued properties as lists) gives the
label from its first string and the remaining strings become synonyms; a node without the id
property is skipped and counted (``nodes_without_id``); an edge to a node without the concept
label is not part of the hierarchy (it is not matched); ``deprecated_property`` truthy marks a
node deprecated. Credentials come from ``auth=`` or the environment variables
``KG_RAGEVAL_NEO4J_USER`` / ``KG_RAGEVAL_NEO4J_PASSWORD`` and are never printed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.ontology.builder import OntologyBuilder
from kg_rageval.ontology.model import Ontology

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""What a label, relationship type or property name may look like (they cannot be parameters)."""

ENV_URI = "KG_RAGEVAL_NEO4J_URI"
ENV_USER = "KG_RAGEVAL_NEO4J_USER"
ENV_PASSWORD = "KG_RAGEVAL_NEO4J_PASSWORD"
ENV_DATABASE = "KG_RAGEVAL_NEO4J_DATABASE"

DIRECTIONS = ("child_to_parent", "parent_to_child")


def quote_identifier(name: str, what: str = "identifier") -> str:
    """``name`` backtick-quoted for Cypher after checking it against :data:`IDENTIFIER`;
    anything else raises :class:`ConfigError` (no escaping games: refuse, don't repair)."""
    if not isinstance(name, str) or not IDENTIFIER.match(name):
        raise ConfigError(
            f"invalid {what} {name!r}: Cypher labels, relationship types and property names "
            f"must match {IDENTIFIER.pattern}"
        )
    return f"`{name}`"


@dataclass(frozen=True)
class GraphMapping:
    """Where the ontology lives in the graph.

    ``node_label``: label of concept nodes; ``id_property``: their unique id;
    ``label_properties``: tried in order, the first non-empty value is the label;
    ``synonym_properties``, ``definition_property``, ``deprecated_property``,
    ``replaced_by_property`` (a property holding the replacement's id), ``type_property``;
    ``relationships``: hierarchy relationship type(s); ``direction``: ``"child_to_parent"``
    when the relationship points from the narrower to the broader concept
    (``(child)-[:SCO]->(parent)``, ``skos:broader``), ``"parent_to_child"`` otherwise
    (``skos:narrower``). ``relation_types``: relationship types read as relation triples of
    the knowledge graph (``(s)-[:USES]->(o)`` → ``(s, "USES", o)``, between any nodes holding
    ``id_property``); an end that is not a concept node becomes an instance whose kind is its
    first label. Empty (the default): no triples are read.
    """

    node_label: str = "Class"
    id_property: str = "uri"
    label_properties: tuple[str, ...] = ("rdfs__label", "label", "name")
    synonym_properties: tuple[str, ...] = ()
    definition_property: str | None = None
    deprecated_property: str | None = None
    replaced_by_property: str | None = None
    type_property: str | None = None
    relationships: tuple[str, ...] = ("SCO",)
    direction: str = "child_to_parent"
    relation_types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for f in ("label_properties", "synonym_properties", "relationships", "relation_types"):
            v = getattr(self, f)
            if isinstance(v, str):
                object.__setattr__(self, f, (v,))
            else:
                object.__setattr__(self, f, tuple(v))
        if not self.relationships:
            raise ConfigError("GraphMapping.relationships: name at least one relationship type")
        if self.direction not in DIRECTIONS:
            raise ConfigError(
                f"GraphMapping.direction must be one of {', '.join(DIRECTIONS)}, not {self.direction!r}"
            )
        self.validate()

    def validate(self) -> None:
        """Raise :class:`ConfigError` for any name that is not a plain Cypher identifier."""
        quote_identifier(self.node_label, "node label")
        quote_identifier(self.id_property, "id property")
        for p in self.label_properties + self.synonym_properties:
            quote_identifier(p, "property")
        for opt in (
            self.definition_property,
            self.deprecated_property,
            self.replaced_by_property,
            self.type_property,
        ):
            if opt is not None:
                quote_identifier(opt, "property")
        for r in self.relationships + self.relation_types:
            quote_identifier(r, "relationship type")

    # ------------------------------------------------------------------ queries
    def node_columns(self) -> list[tuple[str, str]]:
        """(column alias, property) pairs returned by :meth:`node_query`."""
        cols = [(f"l{k}", p) for k, p in enumerate(self.label_properties)]
        cols += [(f"s{k}", p) for k, p in enumerate(self.synonym_properties)]
        for alias, p in (
            ("definition", self.definition_property),
            ("deprecated", self.deprecated_property),
            ("replaced_by", self.replaced_by_property),
            ("node_type", self.type_property),
        ):
            if p is not None:
                cols.append((alias, p))
        return cols

    def node_query(self) -> str:
        label = quote_identifier(self.node_label)
        rets = [f"n.{quote_identifier(self.id_property)} AS id"]
        rets += [f"n.{quote_identifier(p)} AS {alias}" for alias, p in self.node_columns()]
        return f"MATCH (n:{label}) RETURN " + ", ".join(rets)

    def edge_query(self) -> str:
        label = quote_identifier(self.node_label)
        rels = "|".join(quote_identifier(r) for r in self.relationships)
        key = quote_identifier(self.id_property)
        arrow = f"-[:{rels}]->" if self.direction == "child_to_parent" else f"<-[:{rels}]-"
        return f"MATCH (c:{label}){arrow}(p:{label}) RETURN c.{key} AS child, p.{key} AS parent"

    def triple_query(self) -> str | None:
        """The query of the relation triples (``None`` without ``relation_types``)."""
        if not self.relation_types:
            return None
        rels = "|".join(quote_identifier(r) for r in self.relation_types)
        key = quote_identifier(self.id_property)
        return (
            f"MATCH (s)-[r:{rels}]->(o) WHERE s.{key} IS NOT NULL AND o.{key} IS NOT NULL "
            f"RETURN s.{key} AS subject, labels(s)[0] AS subject_kind, type(r) AS predicate, "
            f"o.{key} AS object, labels(o)[0] AS object_kind"
        )


PRESETS: dict[str, GraphMapping] = {
    # n10s.onto.import: :Class nodes with name/label/comment and SCO relationships
    "n10s-onto": GraphMapping(
        node_label="Class",
        id_property="uri",
        label_properties=("label", "name"),
        definition_property="comment",
        relationships=("SCO",),
    ),
    # n10s.rdf.import with handleVocabUris: "SHORTEN" (the default): prefixed names
    "n10s-owl": GraphMapping(
        node_label="owl__Class",
        id_property="uri",
        label_properties=("rdfs__label",),
        synonym_properties=("skos__altLabel", "oboInOwl__hasExactSynonym"),
        definition_property="rdfs__comment",
        deprecated_property="owl__deprecated",
        relationships=("rdfs__subClassOf",),
    ),
    "n10s-skos": GraphMapping(
        node_label="skos__Concept",
        id_property="uri",
        label_properties=("skos__prefLabel", "rdfs__label"),
        synonym_properties=("skos__altLabel",),
        definition_property="skos__definition",
        relationships=("skos__broader",),
    ),
    "n10s-skos-narrower": GraphMapping(
        node_label="skos__Concept",
        id_property="uri",
        label_properties=("skos__prefLabel", "rdfs__label"),
        synonym_properties=("skos__altLabel",),
        definition_property="skos__definition",
        relationships=("skos__narrower",),
        direction="parent_to_child",
    ),
    # handleVocabUris: "IGNORE": local names only
    "n10s-owl-ignore": GraphMapping(
        node_label="Class",
        id_property="uri",
        label_properties=("label",),
        definition_property="comment",
        deprecated_property="deprecated",
        relationships=("subClassOf",),
    ),
    "n10s-skos-ignore": GraphMapping(
        node_label="Concept",
        id_property="uri",
        label_properties=("prefLabel", "label"),
        synonym_properties=("altLabel",),
        definition_property="definition",
        relationships=("broader",),
    ),
}
"""Mappings for the common shapes: neosemantics imports of OWL and SKOS."""


MAPPING_FILE_SUFFIXES = (".yaml", ".yml", ".json", ".toml")


def read_mapping_file(path: str | os.PathLike) -> dict[str, Any]:
    """The fields of a mapping file (YAML, JSON or TOML), e.g.::

        preset: n10s-owl          # optional base: a PRESETS name
        node_label: Disease
        id_property: doid
        label_properties: [name]
        relationships: [IS_A]
        direction: child_to_parent

    Errors (no such file, syntax, not a mapping) are :class:`ConfigError` naming the file."""
    from kg_rageval.records import read_structured

    data, _ = read_structured(os.fspath(path), what="graph mapping")
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"a graph mapping file holds a mapping of fields, not {type(data).__name__}", source=str(path)
        )
    return dict(data)


def resolve_mapping(
    mapping: GraphMapping | str | os.PathLike | Mapping[str, Any] | None = None, **overrides: Any
) -> GraphMapping:
    """A :class:`GraphMapping` from an instance, a preset name, a mapping file (``.yaml``,
    ``.yml``, ``.json``, ``.toml``; see :func:`read_mapping_file`) or a dict of its fields —
    a dict or file may name a ``preset`` to start from — with ``overrides`` (field names)
    applied on top. Unknown names raise :class:`ConfigError`."""
    if isinstance(mapping, os.PathLike) or (
        isinstance(mapping, str)
        and mapping not in PRESETS
        and mapping.lower().endswith(MAPPING_FILE_SUFFIXES)
    ):
        mapping = read_mapping_file(mapping)
    if mapping is None:
        base = GraphMapping()
    elif isinstance(mapping, GraphMapping):
        base = mapping
    elif isinstance(mapping, str):
        if mapping not in PRESETS:
            raise ConfigError(
                f"unknown graph mapping preset {mapping!r}; known: {', '.join(PRESETS)} "
                f"(or a mapping file ending in {', '.join(MAPPING_FILE_SUFFIXES)})"
            )
        base = PRESETS[mapping]
    elif isinstance(mapping, Mapping):
        fields_ = dict(mapping)
        preset = fields_.pop("preset", None)
        if preset is not None and (not isinstance(preset, str) or preset not in PRESETS):
            raise ConfigError(f"unknown graph mapping preset {preset!r}; known: {', '.join(PRESETS)}")
        base = PRESETS[preset] if preset is not None else GraphMapping()
        overrides = {**fields_, **overrides}
    else:
        raise ConfigError(
            f"mapping must be a GraphMapping, a preset name or a dict, not {type(mapping).__name__}"
        )
    known = {f.name for f in fields(GraphMapping)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ConfigError(
            f"unknown graph mapping option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return replace(base, **overrides) if overrides else base


# ---------------------------------------------------------------------- connection
def redact_uri(uri: str) -> str:
    """``uri`` without any ``user:password@`` part (safe to print)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "<unparseable uri>"
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return uri


def auth_from_env(auth: Any = None) -> Any:
    """``auth`` when given; else ``(KG_RAGEVAL_NEO4J_USER, KG_RAGEVAL_NEO4J_PASSWORD)`` from the
    environment; ``None`` (no authentication) when neither is set."""
    if auth is not None:
        if isinstance(auth, Mapping):
            user, password = auth.get("user"), auth.get("password")
            if user is None:
                raise ConfigError("auth: give 'user' and 'password'")
            return (user, password or "")
        return auth
    user = os.environ.get(ENV_USER)
    password = os.environ.get(ENV_PASSWORD)
    if user is None and password is None:
        return None
    return (user or "neo4j", password or "")


def redact(text: str) -> str:
    from kg_rageval.base.redact import redact as _redact

    return _redact(text)


def open_driver(uri: str, auth: Any = None):
    """A ``neo4j`` driver for ``uri`` with credentials from :func:`auth_from_env`; connection
    and authentication failures become :class:`InputError` naming the (redacted) uri only."""
    try:
        import neo4j
        from neo4j.exceptions import AuthError, ServiceUnavailable
    except ImportError:  # pragma: no cover - an extra
        raise InputError(
            "the neo4j loader needs the `neo4j` package: pip install 'kg-rageval[neo4j]'"
        ) from None
    shown = redact_uri(uri)
    try:
        parts = urlsplit(uri)
        if parts.username is not None and auth is None:  # user:password@ in the uri: use, never print
            auth = (unquote(parts.username), unquote(parts.password or ""))
    except ValueError:
        parts = None
    try:
        driver = neo4j.GraphDatabase.driver(shown if parts is not None else uri, auth=auth_from_env(auth))
        driver.verify_connectivity()
    except neo4j.exceptions.ConfigurationError as exc:
        raise InputError(f"invalid Bolt uri or driver setting: {redact(str(exc))}", source=shown) from None
    except AuthError:
        raise InputError(
            "authentication failed (check KG_RAGEVAL_NEO4J_USER/PASSWORD)", source=shown
        ) from None
    except ServiceUnavailable as exc:
        raise InputError(f"cannot reach the graph database: {type(exc).__name__}", source=shown) from None
    except ValueError as exc:  # malformed uri
        raise InputError(f"invalid Bolt uri: {redact(str(exc))}", source=shown) from None
    except OSError as exc:
        raise InputError(f"cannot reach the graph database: {type(exc).__name__}", source=shown) from None
    return driver


def run_read(
    driver, query: str, params: Mapping[str, Any] | None = None, *, database: str | None = None
) -> list[dict]:
    """Run a read query and return its records as dicts (``neo4j`` errors become InputError)."""
    from neo4j.exceptions import Neo4jError

    try:
        with driver.session(database=database) as session:
            return session.run(query, dict(params or {})).data()
    except Neo4jError as exc:
        raise InputError(f"query failed: {exc.code}: {exc.message}") from None


# ---------------------------------------------------------------------- loading
def _strings(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str) and v.strip()]
    if isinstance(value, str):
        return [value] if value.strip() else []
    return [str(value)]


def _truthy(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def load_neo4j(
    uri: str,
    *,
    auth: Any = None,
    database: str | None = None,
    mapping: GraphMapping | str | Mapping[str, Any] | None = None,
    driver: Any = None,
    dangling: str = "drop",
    conflicts: str = "keep-first",
    strict: bool = False,
    **overrides: Any,
) -> Ontology:
    """Load and compile the ontology stored in the graph database at ``uri``.

    ``mapping`` is a :class:`GraphMapping`, a :data:`PRESETS` name or a dict of its fields;
    further keyword arguments override single fields (``node_label="Concept"``).
    ``database`` defaults to ``KG_RAGEVAL_NEO4J_DATABASE`` or the server's default.
    ``driver`` reuses an open driver (it is not closed). Edges whose endpoints were not loaded
    are dropped and counted (``dangling="error"`` refuses them); nodes holding different
    labels under one id keep the first (``conflicts="error"`` refuses).
    """
    m = resolve_mapping(mapping, **overrides)
    database = database or os.environ.get(ENV_DATABASE) or None
    own = driver is None
    drv = open_driver(uri, auth) if own else driver
    try:
        nodes = run_read(drv, m.node_query(), database=database)
        edges = run_read(drv, m.edge_query(), database=database)
        tq = m.triple_query()
        triples = run_read(drv, tq, database=database) if tq else []
    finally:
        if own:
            drv.close()
    source = f"{redact_uri(uri)}#{database or 'default'}:{m.node_label}"
    return _compile(
        nodes, edges, m, source, dangling=dangling, conflicts=conflicts, strict=strict, triples=triples
    )


def _compile(
    nodes: Iterable[Mapping[str, Any]],
    edges: Iterable[Mapping[str, Any]],
    m: GraphMapping,
    source: str,
    *,
    dangling: str,
    conflicts: str,
    strict: bool = False,
    triples: Iterable[Mapping[str, Any]] = (),
) -> Ontology:
    b = OntologyBuilder(source)
    label_cols = [f"l{k}" for k in range(len(m.label_properties))]
    syn_cols = [f"s{k}" for k in range(len(m.synonym_properties))]
    for row in nodes:
        node_id = row.get("id")
        if isinstance(node_id, (list, tuple)):
            node_id = node_id[0] if node_id else None
        if node_id is None or (isinstance(node_id, str) and not node_id.strip()):
            b.warn("nodes_without_id", f"a :{m.node_label} node has no {m.id_property!r}")
            continue
        node_id = str(node_id)
        label = None
        synonyms: list[str] = []
        for col in label_cols:
            vals = _strings(row.get(col))
            if vals and label is None:
                label, rest = vals[0], vals[1:]
                synonyms.extend(rest)
            elif vals:
                synonyms.extend(vals)
        for col in syn_cols:
            synonyms.extend(_strings(row.get(col)))
        definition = next(iter(_strings(row.get("definition"))), None)
        replaced = next(iter(_strings(row.get("replaced_by"))), None)
        node_type = next(iter(_strings(row.get("node_type"))), None)
        status = "deprecated" if _truthy(row.get("deprecated")) else "active"
        b.add_node(
            node_id,
            label=label,
            synonyms=synonyms,
            definition=definition,
            status=status,
            replaced_by=replaced,
            node_type=node_type,
            where=f"node {node_id!r}",
        )
    for row in edges:
        child, parent = row.get("child"), row.get("parent")
        if child is None or parent is None:
            b.warn("edges_without_id")
            continue
        b.add_edge(str(child), str(parent), where=f"{m.relationships[0]} edge")
    for row in triples:
        ends: list[str] = []
        for end in ("subject", "object"):
            x = row.get(end)
            if isinstance(x, (list, tuple)):
                x = x[0] if x else None
            if x is not None:
                ends.append(str(x))
        pred = row.get("predicate")
        if len(ends) < 2 or not isinstance(pred, str):
            b.warn("triples_without_id")
            continue
        for node, kind in zip(ends, (row.get("subject_kind"), row.get("object_kind"))):
            if not b.has_node(node):
                b.add_instance(
                    node, kind=kind if isinstance(kind, str) else None, where=f"{pred} relationship"
                )
        b.add_triple(ends[0], pred, ends[1], where=f"{pred} relationship")
    return b.build(dangling=dangling, conflicts=conflicts, strict=strict)
