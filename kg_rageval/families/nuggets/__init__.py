"""The nuggets family: TREC 2024 RAG Track nugget scores of answers (All, Vital, Weighted,
strict and not), ontology nuggets and judge agreement (:mod:`.score`, ``docs/nuggets.md``);
the TREC RAG nugget and assignment files (:mod:`.inputs`)."""

from kg_rageval.families.nuggets.score import NuggetsFamily, answer_scores, score_nuggets

__all__ = ["NuggetsFamily", "answer_scores", "score_nuggets"]
