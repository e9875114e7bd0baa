"""``text_column``'s trailing-NUL check for few texts (in Python, no ``numpy.strings``: issue
#33, start-up) against the ``numpy.strings.str_len`` check it replaces there."""

from __future__ import annotations

import itertools

import numpy as np

from kg_rageval.results import recordstore
from kg_rageval.results.recordstore import text_column


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == b.dtype and a.tolist() == b.tolist()


def test_few_texts_are_checked_as_str_len_checks_them(monkeypatch):
    parts = ["", "a", "\0", "b\0", "\0c", "d\0e", "ß", "xyz"]
    cases = [list(c) for n in (1, 2, 3) for c in itertools.product(parts, repeat=n)]
    few = [text_column(c) for c in cases]
    assert sum(r is None for r in few) > 50 and sum(r is not None for r in few) > 50
    monkeypatch.setattr(recordstore, "_FEW", -1)  # every length through numpy.strings
    for c, got in zip(cases, few):
        assert _same(got, text_column(c)), c
    assert isinstance(text_column(np.asarray(["a", "b"], dtype=object)), np.ndarray)
