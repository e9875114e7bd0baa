"""System-level metrics: latency quantiles per stage, cost, tokens and cache hits
(:mod:`.score`), trace import from OpenTelemetry / OpenInference (:mod:`.otlp`) and context
construction (:mod:`.context`). See ``docs/system.md``."""

from kg_rageval.families.system.context import ContextFamily, score_context
from kg_rageval.families.system.otlp import import_otlp, read_spans, records_from_spans
from kg_rageval.families.system.quantiles import QUANTILES, QuantileEvaluation, RowFamily, weighted_quantile
from kg_rageval.families.system.score import STAGES, SystemFamily, score_system, system_values

__all__ = [
    "ContextFamily",
    "QUANTILES",
    "import_otlp",
    "read_spans",
    "records_from_spans",
    "QuantileEvaluation",
    "RowFamily",
    "STAGES",
    "SystemFamily",
    "score_context",
    "score_system",
    "system_values",
    "weighted_quantile",
]
