"""The iterative family: search traces scored end to end under budgets (:mod:`.score`,
``docs/iterative.md``)."""

from kg_rageval.families.iterative.score import OUTCOMES, IterativeFamily, run_under_budget, score_iterative

__all__ = ["OUTCOMES", "IterativeFamily", "run_under_budget", "score_iterative"]
