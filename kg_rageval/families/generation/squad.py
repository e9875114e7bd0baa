"""SQuAD exact match and token F1, as in the official SQuAD v1.1 evaluation script
(``evaluate-v1.1.py``: ``normalize_answer``, ``f1_score``, ``exact_match_score``,
``metric_max_over_ground_truths``).

Normalisation: lowercase; remove every ``string.punctuation`` character; remove the articles
``a``, ``an``, ``the`` as whole words; collapse whitespace. Token F1 is computed on the
whitespace tokens of the normalised strings with multiset overlap; no overlap gives 0 (also
when both are empty, as in v1.1). With several references the maximum is taken.

The script's steps are kept, only made cheaper (same results, tested against a verbatim copy):
punctuation is deleted by one ``str.translate`` table, the article pattern is compiled once,
and :class:`SquadScorer` normalises each distinct string once per scoring call and skips the
multiset count when the token lists are equal (F1 = 1) or one is empty (F1 = 0); the overlap
is summed from two ``Counter`` lookups instead of ``Counter & Counter``.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

_PUNCT = set(string.punctuation)
_DELETE_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace (SQuAD v1.1)."""
    return " ".join(_ARTICLES.sub(" ", s.lower().translate(_DELETE_PUNCT)).split())


def _token_f1(prediction_tokens: Sequence[str], ground_truth_tokens: Sequence[str]) -> float:
    """SQuAD v1.1 token F1 of two token lists (``2PR / (P + R)`` on the multiset overlap)."""
    if not prediction_tokens or not ground_truth_tokens:
        return 0.0
    if prediction_tokens == ground_truth_tokens:
        return 1.0
    gold = Counter(ground_truth_tokens)
    num_same = 0  # multiset overlap: sum of min(count in prediction, count in gold)
    for tok, k in Counter(prediction_tokens).items():
        m = gold.get(tok)
        if m:
            num_same += k if k < m else m
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def f1_score(prediction: str, ground_truth: str) -> float:
    """Token F1 of the normalised strings (SQuAD v1.1)."""
    return _token_f1(normalize_answer(prediction).split(), normalize_answer(ground_truth).split())


def exact_match_score(prediction: str, ground_truth: str) -> float:
    """1.0 when the normalised strings are equal, else 0.0 (SQuAD v1.1)."""
    return float(normalize_answer(prediction) == normalize_answer(ground_truth))


def metric_max_over_ground_truths(
    metric_fn: Callable[[str, str], float], prediction: str, ground_truths: Sequence[str]
) -> float:
    return max(metric_fn(prediction, gt) for gt in ground_truths)


class SquadScorer:
    """Exact match and token F1 of many (prediction, references) pairs, each distinct string
    normalised once: a cache of at most ``max_size`` strings (emptied when full, so memory stays
    bounded on millions of distinct answers; the scores never depend on it). Make one per
    scoring call."""

    def __init__(self, max_size: int = 1 << 16) -> None:
        self._tokens: dict[str, list[str]] = {}
        self._scores: dict[tuple[str, tuple[str, ...]], tuple[float, float]] = {}
        self.max_size = max_size

    def tokens(self, s: str) -> list[str]:
        """The whitespace tokens of ``normalize_answer(s)`` (``" ".join`` of them is the
        normalised string)."""
        got = self._tokens.get(s)
        if got is None:
            if len(self._tokens) >= self.max_size:
                self._tokens.clear()
            got = self._tokens[s] = normalize_answer(s).split()
        return got

    def exact_match(self, prediction: str, ground_truths: Sequence[str]) -> float:
        """Max exact match over the references."""
        p = self.tokens(prediction)
        return float(any(p == self.tokens(gt) for gt in ground_truths))

    def scores(self, prediction: str, ground_truths: Sequence[str]) -> tuple[float, float]:
        """``(max exact match, max token F1)`` over the references; each distinct
        (prediction, references) pair is scored once (a bounded cache like the tokens')."""
        key = (prediction, tuple(ground_truths))
        got = self._scores.get(key)
        if got is None:
            p = self.tokens(prediction)
            refs = [self.tokens(gt) for gt in ground_truths]
            got = float(any(p == r for r in refs)), max(_token_f1(p, r) for r in refs)
            if len(self._scores) >= self.max_size:
                self._scores.clear()
            self._scores[key] = got
        return got
