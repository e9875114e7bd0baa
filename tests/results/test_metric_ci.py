"""Metric.with_ci: an interval that misses its point estimate by rounding only is moved onto it."""

from kg_rageval.results.metric import Metric


def test_rounding_miss_is_moved_onto_the_value():
    v = 0.33333333333333337  # the consistency demo: 20 identical bootstrap replicates
    m = Metric("m", v).with_ci((0.33333333333333265, 0.33333333333333326))
    assert m.ci == (0.33333333333333265, v)
    m = Metric("m", 0.5).with_ci((0.5 + 1e-15, 0.7))
    assert m.ci == (0.5, 0.7)


def test_a_real_miss_is_kept():
    assert Metric("m", 0.5).with_ci((0.6, 0.7)).ci == (0.6, 0.7)
    assert Metric("m", 0.5).with_ci((0.1, 0.4)).ci == (0.1, 0.4)
    assert Metric("m", None, missing="x").with_ci((0.1, 0.4)).ci == (0.1, 0.4)
