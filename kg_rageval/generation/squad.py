"""SQuAD exact match and token F1, copied from the official SQuAD v1.1 evaluation script
(``evaluate-v1.1.py``: ``normalize_answer``, ``f1_score``, ``exact_match_score``,
``metric_max_over_ground_truths``).

Normalisation: lowercase; remove every ``string.punctuation`` character; remove the articles
``a``, ``an``, ``the`` as whole words; collapse whitespace. Token F1 is computed on the
whitespace tokens of the normalised strings with multiset overlap; no overlap gives 0 (also
when both are empty, as in v1.1). With several references the maximum is taken.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Callable, Sequence

_PUNCT = set(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace (SQuAD v1.1)."""

    def remove_articles(text: str) -> str:
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        return "".join(ch for ch in text if ch not in _PUNCT)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def f1_score(prediction: str, ground_truth: str) -> float:
    """Token F1 of the normalised strings (SQuAD v1.1)."""
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def exact_match_score(prediction: str, ground_truth: str) -> float:
    """1.0 when the normalised strings are equal, else 0.0 (SQuAD v1.1)."""
    return float(normalize_answer(prediction) == normalize_answer(ground_truth))


def metric_max_over_ground_truths(
    metric_fn: Callable[[str, str], float], prediction: str, ground_truths: Sequence[str]
) -> float:
    return max(metric_fn(prediction, gt) for gt in ground_truths)
