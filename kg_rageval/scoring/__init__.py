"""One scoring contract for every metric family (see ``docs/architecture.md``).

* :class:`Scorer` — a family's declaration; ``scorer.score(ontology, records, **params)``
  returns one :class:`~kg_rageval.results.evaluation_set.EvaluationSet`;
* :class:`Input` — an extra input file with its reader (corpus, spec, judgments);
* :data:`REGISTRY`, :func:`get_scorer`, :func:`register` — the one family registry;
  :func:`load_entry_points` / :func:`load_family` add families from outside
  (``docs/plugins.md``) and :func:`declare` states a family's properties
  (:mod:`.properties`, the table the common tests read);
* :func:`resolve_metric` — the one resolver of metric names (:class:`MetricName`);
* :class:`BoundScorer`, :func:`stream_families` — the engine that binds and streams families.

The vocabulary a declaration is written in (:class:`Param`, :class:`MetricSpec`,
:class:`MetricName`) comes from :mod:`kg_rageval.contract` and is re-exported here, so a plugin
family needs one import. Everything here imports only the standard library at import time;
NumPy and the families load when a family scores.
"""

from kg_rageval.contract import (
    MetricName,
    MetricSpec,
    Param,
    did_you_mean,
    ir_alias,
    parse_scope,
    validate_options,
)
from kg_rageval.scoring.bound import BoundScorer
from kg_rageval.scoring.plugins import ENTRY_POINT_GROUP, load_entry_points, load_family
from kg_rageval.scoring.properties import PROPERTIES, declare
from kg_rageval.scoring.registry import (
    PLUGIN_ERRORS,
    REGISTRY,
    family_of_member,
    get_scorer,
    register,
    score,
    unregister,
)
from kg_rageval.scoring.resolve import all_metric_names, resolve_metric
from kg_rageval.scoring.scorer import FamilyUnavailable, Input, Scorer
from kg_rageval.scoring.stream import FamilyStream, StreamFallback, stream_families

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGIN_ERRORS",
    "PROPERTIES",
    "declare",
    "load_entry_points",
    "load_family",
    "BoundScorer",
    "FamilyStream",
    "FamilyUnavailable",
    "Input",
    "MetricName",
    "MetricSpec",
    "Param",
    "REGISTRY",
    "Scorer",
    "all_metric_names",
    "did_you_mean",
    "family_of_member",
    "get_scorer",
    "ir_alias",
    "parse_scope",
    "StreamFallback",
    "register",
    "resolve_metric",
    "score",
    "stream_families",
    "unregister",
    "validate_options",
]
