"""kg_rageval.base.normal: the stored normal quantiles are scipy's, bit for bit."""

from __future__ import annotations

import pytest

from kg_rageval.base.normal import KNOWN, normal_ppf


def test_stored_quantiles_are_scipys_bit_for_bit():
    norm = pytest.importorskip("scipy.stats").norm
    assert len(KNOWN) == 7
    for q, z in KNOWN.items():
        assert z == float(norm.ppf(q)), q
    # the two spellings of a level's upper quantile meet the same keys
    for level in (0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999):
        assert (1 + level) / 2 in KNOWN and 1 - (1 - level) / 2 in KNOWN


def test_hand_values_and_fallback():
    assert normal_ppf(0.975) == 1.959963984540054
    assert normal_ppf(0.95) == 1.6448536269514722
    pytest.importorskip("scipy")
    assert abs(normal_ppf(0.8) - 0.8416212335729143) < 1e-15  # not stored: scipy computes it
