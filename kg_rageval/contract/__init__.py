"""One scoring contract for every metric family (see ``docs/architecture.md``).

* :class:`Param` — a declared family option (name, type, default, choices, help);
* :class:`Input` — an extra input file with its reader (corpus, spec, judgments);
* :class:`Scorer` — a family's declaration; ``scorer.score(ontology, records, **params)``
  returns one :class:`~kg_rageval.evaluation.EvaluationSet`;
* :data:`REGISTRY`, :func:`get_scorer`, :func:`register` — the one family registry;
* :class:`MetricName`, :class:`MetricSpec`, :func:`resolve_metric` — canonical metric names.

Everything here imports only the standard library; NumPy and the families load when a
family scores.
"""

from .metrics import IR_MEASURES, MetricSpec, ir_alias
from .resolve import all_metric_names, resolve_metric
from .names import MetricName, parse_scope
from .params import Param, did_you_mean, validate_options
from .registry import REGISTRY, family_of_member, get_scorer, register, score, unregister
from .scorer import BoundScorer, FamilyStream, FamilyUnavailable, Input, Scorer, StreamFallback, stream_families

__all__ = [
    "BoundScorer", "FamilyStream", "FamilyUnavailable", "IR_MEASURES", "Input", "MetricName", "MetricSpec", "Param", "REGISTRY",
    "Scorer", "all_metric_names", "did_you_mean", "family_of_member", "get_scorer", "ir_alias", "parse_scope",
    "StreamFallback", "register", "resolve_metric", "score", "stream_families", "unregister", "validate_options",
]
