"""The declared properties of the metric families: the one table the common tests read.

Every property (:data:`PROPERTIES`) must cover the registry exactly: each registered family
either *has* it (and ``tests/scoring/test_contract.py`` tests it for that) or is *exempt* with
a written reason. A family in neither set fails the tests — so a new family, built in or a
plugin, cannot be forgotten (scikit-learn's "we shouldn't forget any metrics" check).

A property is either derived from the :class:`~kg_rageval.scoring.scorer.Scorer` declaration
(``streamable``, ``reads_ontology_ids``; exemptions still need a reason) or listed here
(:data:`HAS`). A plugin family declares its own with :func:`declare` next to its ``Scorer``
(``docs/plugins.md``). Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kg_rageval.base.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.scoring.scorer import Scorer


def _reads_ids(sc: Scorer) -> bool:
    from kg_rageval.contract.ids import ID_PARAMS

    names = {p.name for p in sc.params}
    return all(p.name in names for p in ID_PARAMS)


@dataclass(frozen=True)
class Property:
    """One declared property: ``meaning`` says what a family with it promises (and what the
    common test checks); ``derived(scorer)`` decides it from the declaration (``None``: listed
    in :data:`HAS`)."""

    name: str
    meaning: str
    derived: Callable[[Scorer], bool] | None = None


PROPERTIES: dict[str, Property] = {
    p.name: p
    for p in (
        Property(
            "streamable",
            "Scorer.streamable: scoring a JSONL path chunk by chunk gives the metrics of "
            "scoring the whole list",
            lambda sc: sc.streamable,
        ),
        Property(
            "reads_ontology_ids",
            "declares the id policy (contract.ids.ID_PARAMS: on_unknown, "
            "on_unknown_gold, on_status, on_status_gold, aliases) and resolves ids through IdResolver",
            _reads_ids,
        ),
        Property(
            "needs_ontology",
            "cannot score without an ontology (exempt: scores the same numbers with ontology=None)",
        ),
        Property(
            "per_node_rollup",
            "keys rows by gold_node on the demo data, so per-node roll-ups and node gates exist",
        ),
        Property(
            "score_command",
            "has its own 'kg-rageval score <command>' whose flags come from the "
            "declaration and whose --format json is the one score envelope",
        ),
    )
}

HAS: dict[str, set[str]] = {
    "needs_ontology": {
        "hierarchy",
        "linking",
        "retrieval",
        "conformance",
        "generation",
        "relations",
        "preference",
        "shacl",
        "rewrite",
        "consistency",
        "routing",
    },
    "per_node_rollup": {
        "hierarchy",
        "linking",
        "retrieval",
        "conformance",
        "generation",
        "provenance",
        "relations",
        "context",
        "rewrite",
        "iterative",
        "parsing",
        "consistency",
        "nuggets",
        "chunking",
        "index",
        "extraction",
        "cleaning",
        "routing",
    },
    "score_command": {
        "hierarchy",
        "linking",
        "retrieval",
        "conformance",
        "generation",
        "provenance",
        "relations",
        "preference",
        "judge",
        "system",
        "parsing",
        "consistency",
        "nuggets",
        "chunking",
        "index",
        "extraction",
        "cleaning",
        "routing",
    },
}
"""The families that have each listed (not derived) property."""

_NOT_STREAMED = "needs every record at once"
_FILES = "its evidence is its input files, not the records"
EXEMPT: dict[str, dict[str, str]] = {
    "streamable": {
        "trec": f"{_FILES} (the qrels and the run are read whole)",
        "shacl": f"{_NOT_STREAMED}: one pySHACL run validates every output",
        "preference": f"{_NOT_STREAMED}: its meta describes the whole hard-vs-soft comparison",
        "judge": f"{_NOT_STREAMED}: the judges are chosen from all records; PPI and kappa pool every item",
        "system": f"{_NOT_STREAMED}: latency and cost quantiles are taken over all records",
        "rewrite": f"{_NOT_STREAMED}: the recall–latency frontier spans all records",
        "index": f"{_NOT_STREAMED}: the freshness-lag quantiles are taken over all records",
        "cleaning": f"{_NOT_STREAMED}: near-duplicate pairs join documents across all records",
    },
    "reads_ontology_ids": {
        "trec": "reads query and document ids of TREC qrels and runs, no ontology id",
        "shacl": "validates the outputs' RDF against SHACL shapes; the ids' vocabulary is the conformance "
        "family's check",
        "provenance": "reads document and source ids of the corpus, no ontology id",
        "judge": "reads judge verdicts and human labels, no ontology id",
        "system": "reads timings, costs, tokens and cache flags, no ontology id",
        "context": "reads chunk ids of the supplied context, no ontology id",
        "iterative": "reads document ids and step costs, no ontology id",
        "rewrite": "reads document ids; HyDE concepts are checked against the ontology (unknown: counted off-topic)",
        "parsing": "reads reference and extracted texts and HTML tables, no ontology id",
        "chunking": "reads one category id per document, checked against the ontology (an unknown "
        "category is an error); chunk and document ids are not ontology ids",
        "index": "reads vector / document ids and timestamps, no ontology id",
        "extraction": "entity types and predicates are tag / relation labels looked up as exact ontology "
        "ids (with type_prefix): gold unknown is an error, predicted unknown a counted fault",
        "cleaning": "reads texts, character spans, language codes and document ids, no ontology id",
    },
    "needs_ontology": {
        "trec": "the ontology is optional: only per-branch figures (query nodes) use it",
        "provenance": "citations and manifests are checked against the corpus, not the ontology",
        "judge": "the ontology is optional: only the per-branch roll-up of score judges uses it",
        "system": "the ontology is optional: only the per-branch roll-up of score system uses it",
        "context": "the ontology is optional: only the per-branch roll-up of score system uses it",
        "iterative": "the ontology is optional: only the per-branch roll-up uses it",
        "parsing": "the ontology is optional: only the per-branch roll-up (-O) uses it",
        "nuggets": "the ontology is optional: only concept nuggets (assigned through the hierarchy) and "
        "the per-branch roll-up use it; a concept nugget without one is an error",
        "index": "the ontology is optional: only the per-branch roll-up (-O) uses it",
        "extraction": "the ontology is optional: with -O entity types are its classes (hierarchy credit, "
        "per-class roll-up) and relations its predicates (domain/range checks)",
        "cleaning": "the ontology is optional: only the per-branch roll-up (-O) uses it",
        "chunking": "the ontology is optional: with -O the chunks' ancestry is checked as a path of "
        "the ontology (without it only its shape: a list ending at the category) and the category "
        "must be an id of it",
    },
    "per_node_rollup": {
        "trec": "rows are the run's queries, keyed by query id (per-branch figures need --query-nodes)",
        "shacl": "rows are outputs validated against shapes; no gold node keys them",
        "preference": "rows are queries compared under two policies; the preference, not a gold node, "
        "keys them",
        "judge": "keys gold_node only when a judged record carries one; the demo has no judges section "
        "(tests/families/judges covers the roll-up)",
        "system": "rows are records' timings and costs, which no gold node keys",
    },
    "score_command": {
        "trec": "reported by 'kg-rageval score retrieval --qrels/--run'",
        "shacl": "reported by 'kg-rageval score conformance --shapes'",
        "context": "reported by 'kg-rageval score system' beside the system family",
        "rewrite": "scored through the audit (families.rewrite), the pytest plugin and the library",
        "iterative": "scored through the audit (families.iterative), the pytest plugin and the library",
    },
}
"""``{property: {family: reason}}``: the families that do not have a property, and why."""

COMMANDS: dict[str, str] = {"judge": "judges"}
"""``kg-rageval score <command>`` of a family whose command is not its name."""


def declare(family: str, *, has: Iterable[str] = (), exempt: Mapping[str, str] | None = None) -> None:
    """Declare the listed properties of ``family`` (a plugin's, next to its ``Scorer``): ``has``
    the properties it has, ``exempt`` ``{property: reason}`` those it does not. A derived
    property needs no ``has``; an unknown property or an empty reason is a :class:`ConfigError`."""
    exempt = dict(exempt or {})
    for prop in [*has, *exempt]:
        if prop not in PROPERTIES:
            raise ConfigError(f"family {family!r}: unknown property {prop!r}; known: {', '.join(PROPERTIES)}")
    for prop, why in exempt.items():
        if not str(why).strip():
            raise ConfigError(f"family {family!r}: exemption from {prop!r} needs a reason")
    for prop in has:
        if PROPERTIES[prop].derived is None:
            HAS.setdefault(prop, set()).add(family)
        EXEMPT.get(prop, {}).pop(family, None)
    for prop, why in exempt.items():
        HAS.get(prop, set()).discard(family)
        EXEMPT.setdefault(prop, {})[family] = str(why)


def has_property(scorer: Scorer, prop: str) -> bool | None:
    """``True``: ``scorer`` has ``prop``; ``False``: it is exempt; ``None``: declared neither way
    (a derived property that holds is had; one that does not needs an exemption)."""
    p = PROPERTIES[prop]
    if p.derived(scorer) if p.derived is not None else scorer.name in HAS.get(prop, ()):
        return True
    return False if scorer.name in EXEMPT.get(prop, {}) else None


def with_property(prop: str, registry: Mapping[str, Scorer] | None = None) -> list[str]:
    """The registered families that have ``prop``, in registry order."""
    from kg_rageval.scoring.registry import REGISTRY

    reg = REGISTRY if registry is None else registry
    return [n for n, sc in reg.items() if has_property(sc, prop)]


def undeclared(registry: Mapping[str, Scorer] | None = None) -> dict[str, list[str]]:
    """``{property: families}`` of registered families that neither have nor are exempt from a
    property (empty when the table covers the registry), plus ``"<property> (has and exempt)"``
    for a family listed both ways."""
    from kg_rageval.scoring.registry import REGISTRY

    reg = REGISTRY if registry is None else registry
    out: dict[str, list[str]] = {}
    for prop in PROPERTIES:
        missing = [n for n, sc in reg.items() if has_property(sc, prop) is None]
        both = [n for n, sc in reg.items() if has_property(sc, prop) and n in EXEMPT.get(prop, {})]
        if missing:
            out[prop] = missing
        if both:
            out[f"{prop} (has and exempt)"] = both
    return out


def command_of(family: str) -> str:
    """The ``kg-rageval score`` subcommand of ``family``."""
    return COMMANDS.get(family, family)


__all__ = [
    "COMMANDS",
    "EXEMPT",
    "HAS",
    "PROPERTIES",
    "Property",
    "command_of",
    "declare",
    "has_property",
    "undeclared",
    "with_property",
]
