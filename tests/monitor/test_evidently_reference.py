"""PSI over declared bins against Evidently's own ``psi`` stat test, where the two overlap
(issue #29: "Evidently where its drift tests overlap"). Evidently is not an extra of
kg-rageval (it pulls plotly, pandas, scikit-learn …); the test skips with a reason where it is
absent. Checked with evidently 0.7.23.

Evidently bins a numerical column of more than 20 distinct values on the Sturges edges of the
two windows together and fills an empty bin's share with 1e-4 (what ``binned_divergence``
floors to); given those edges, our PSI is Evidently's. Its ``kl_div`` is KL(reference ‖
current), ours KL(current ‖ reference): the same formula with the windows swapped, which the
second test checks (on bins none of which is empty: Evidently renormalises floored shares)."""

from __future__ import annotations

import numpy as np
import pytest

from kg_rageval.monitor.drift import binned_divergence


def _evidently():
    try:
        import pandas as pd
        from evidently.legacy.calculations.stattests.kl_div import _kl_div
        from evidently.legacy.calculations.stattests.psi import _psi
        from evidently.legacy.core import ColumnType
    except Exception as exc:
        pytest.skip(f"evidently is not importable: {exc}")
    return pd, _psi, _kl_div, ColumnType


CASES = [
    ("no shift", 0.0, 1.0, 2000, 1500),
    ("mean shift", 0.4, 1.0, 2000, 1500),
    ("wider", 0.0, 1.8, 800, 3000),
    ("small windows", 1.0, 0.5, 60, 45),
]


@pytest.mark.parametrize(("name", "shift", "scale", "n_ref", "n_cur"), CASES)
def test_psi_equals_evidentlys_on_its_bins(name, shift, scale, n_ref, n_cur):
    pd, psi, _, column_type = _evidently()
    rng = np.random.default_rng(7)
    ref = rng.normal(0.0, 1.0, n_ref)
    cur = rng.normal(shift, scale, n_cur)
    edges = np.histogram_bin_edges(np.concatenate([ref, cur]), bins="sturges")
    ours = binned_divergence(ref, cur, edges.tolist())
    theirs, _ = psi(pd.Series(ref), pd.Series(cur), column_type.Numerical, 0.1)
    assert ours["psi"] == pytest.approx(float(theirs), rel=1e-12, abs=1e-15), name


def test_kl_is_evidentlys_kl_div_with_the_windows_swapped():
    pd, _, kl_div, column_type = _evidently()
    rng = np.random.default_rng(11)
    ref, cur = rng.uniform(0.0, 1.0, 3000), rng.beta(1.3, 1.0, 2500)
    edges = np.histogram_bin_edges(np.concatenate([ref, cur]), bins="sturges").tolist()
    got = binned_divergence(ref, cur, edges)
    # no empty bin: with one, Evidently (scipy's entropy) renormalises the floored shares and
    # we do not, a difference of the floor's mass
    assert min(got["reference"] + got["current"]) > 1e-4
    ours = got["kl"]
    theirs, _ = kl_div(pd.Series(cur), pd.Series(ref), column_type.Numerical, 0.1)
    assert ours == pytest.approx(float(theirs), rel=1e-12)
    assert ours > 0.01
