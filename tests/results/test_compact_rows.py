"""compact_rows (issue #33): the stored column of a selection of a text column coded once is
the one compact_object stores for those rows (same kind, codes, dtype and values)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kg_rageval.results.columns import CodedColumn, _object_column, compact_object, compact_rows, text_codes


def same(a, b):
    assert type(a) is type(b)
    if isinstance(a, CodedColumn):
        assert a.codes.dtype == b.codes.dtype and np.array_equal(a.codes, b.codes)
        assert a.values.tolist() == b.values.tolist() and a.fresh == b.fresh
    else:
        assert a.dtype == b.dtype == object and a.tolist() == b.tolist()


def column(n, distinct, seed, none=0.1):
    rng = random.Random(seed)
    vals = [None if rng.random() < none else f"v{rng.randrange(distinct)}" for _ in range(n)]
    return _object_column(vals)


@pytest.mark.parametrize(
    "n, distinct", [(0, 1), (1, 1), (2, 1), (3, 2), (50, 3), (50, 40), (9000, 20), (9000, 9000), (70000, 300)]
)
@pytest.mark.parametrize("pick", ["all", "half", "few", "one", "tail"])
def test_same_stored_column_as_compact_object(n, distinct, pick):
    col = column(n, distinct, seed=n + distinct)
    codes, values = text_codes(col)
    assert values.tolist() == list(dict.fromkeys(col.tolist()))
    assert values[codes].tolist() == col.tolist()
    rng = np.random.default_rng(n)
    at = {
        "all": np.arange(n),
        "half": np.flatnonzero(rng.random(n) < 0.5),
        "few": np.flatnonzero(rng.random(n) < 0.01),
        "one": np.arange(min(n, 1)),
        "tail": np.arange(n // 3, n),
    }[pick]
    same(compact_rows(codes, values, at), compact_object(col[at]))


def test_more_than_256_and_65536_values():
    col = _object_column([f"id{i // 2}" for i in range(140000)])  # 70,000 values, each twice
    codes, values = text_codes(col)
    for at in (np.arange(140000), np.arange(600), np.arange(0, 140000, 3)):
        same(compact_rows(codes, values, at), compact_object(col[at]))


def test_not_a_text_column():
    assert text_codes(_object_column(["a", 1, None])) is None
    assert text_codes(_object_column([["a"], "b"])) is None
