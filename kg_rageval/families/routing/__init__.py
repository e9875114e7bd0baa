"""The routing family: intent classification, routing to ontology nodes with hierarchy-aware
credit, adaptive retrieval modes (``docs/routing.md``)."""

from kg_rageval.families.routing.score import MODES, RoutingFamily, class_report, score_routing

__all__ = ["MODES", "RoutingFamily", "class_report", "score_routing"]
