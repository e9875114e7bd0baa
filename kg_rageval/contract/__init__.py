"""The contract's vocabulary: what every metric family declares, in one place (see
``docs/architecture.md``).

* :class:`Param` — a declared family option (name, type, default, choices, help);
* :class:`MetricSpec` — a declared metric template with its direction and formula;
* :class:`MetricName` — a number's canonical name, parsed and printed one way;
* :mod:`.measures` — the retrieval measure names (ir_measures, trec_eval) and the one alias
  table from every spelling to its canonical metric name;
* :mod:`.gates` — the one gate expression grammar (``ci_low(retrieval.mrr) >= 0.5``);
* the id-resolution options every family that reads ontology ids shares (:mod:`.ids`).

This floor sits below the ontology: it imports only :mod:`kg_rageval.base` and the standard
library. The families' declarations, the registry and the engine that calls them live one
floor up, in :mod:`kg_rageval.scoring`.
"""

from kg_rageval.contract.metrics import MetricSpec, ir_alias
from kg_rageval.contract.names import MetricName, parse_scope
from kg_rageval.contract.params import Param, did_you_mean, validate_options

__all__ = [
    "MetricName",
    "MetricSpec",
    "Param",
    "did_you_mean",
    "ir_alias",
    "parse_scope",
    "validate_options",
]
