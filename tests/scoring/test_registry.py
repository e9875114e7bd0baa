"""The family registry is one name space: ``register()`` refuses a family whose name or member
name another family uses (issue #27), so an evaluation is always traced back to its family."""

from __future__ import annotations

import pytest

from kg_rageval.base.errors import ConfigError
from kg_rageval.scoring import REGISTRY, Scorer, family_of_member, register, unregister


def _judge_records():
    """Four answer_correctness verdicts of judge j1 with human labels: judge == human on r0,
    r2, r3 and not on r1, so accuracy = 3/4."""
    recs = []
    for i, (j, h) in enumerate(
        [("correct", "correct"), ("correct", "incorrect"), ("incorrect", "incorrect"), ("correct", "correct")]
    ):
        out = {"verdict": j}
        if j == "incorrect":
            out["missing_facts"] = ["x"]
        recs.append(
            {
                "id": f"r{i}",
                "judges": [{"rubric": "answer_correctness", "judge": "j1", "output": out, "human": h}],
            }
        )
    return recs


def test_assert_gates_finds_judge_metrics_on_judge_evaluations():
    """Before: judge and generation both had a member ``calibration``; ``assert_gates`` on the
    judge's evaluations traced ``calibration`` to generation and reported judge.accuracy
    (present, 3/4) as missing evidence."""
    from kg_rageval.families.judges import score_judges
    from kg_rageval.pytest_plugin import check_gates

    evs = list(score_judges(None, _judge_records()).values())
    assert [e.family.name for e in evs] == ["judge_calibration", "position_bias", "agreement"]
    assert (
        family_of_member("judge_calibration") == "judge" and family_of_member("calibration") == "generation"
    )
    results, _ = check_gates(evs, ["judge.accuracy >= 0.5", "judge.false_approval_rate <= 0.2"], min_rows=1)
    assert [(r.status, r.observed) for r in results] == [("pass", 0.75), ("fail", 0.5)]  # FA: 1 of 2 rejected


def test_no_two_registered_families_share_a_name_or_member():
    seen: dict[str, str] = {}
    for name, sc in REGISTRY.items():
        for n in {name, *sc.member_names}:
            assert seen.setdefault(n, name) == name, f"{n!r} used by {seen[n]!r} and {name!r}"


def test_register_refuses_a_used_member_name():
    clash = Scorer("calib_plugin", "kg_rageval.audit.stub:score_stub", ("labels",), members=("calibration",))
    with pytest.raises(
        ConfigError,
        match=r"family 'calib_plugin': 'calibration' is already used by family "
        r"'generation'",
    ):
        register(clash)
    assert "calib_plugin" not in REGISTRY
    named_like_a_member = Scorer("faithfulness", "kg_rageval.audit.stub:score_stub", ("labels",))
    with pytest.raises(ConfigError, match="'faithfulness' is already used by family 'generation'"):
        register(named_like_a_member)
    with pytest.raises(ConfigError, match="needs a kg_rageval.scoring.Scorer, got str"):
        register("hierarchy")  # type: ignore[arg-type]


def test_register_is_idempotent_for_the_same_family_and_replaces_only_when_asked():
    a = Scorer("reg_a", "kg_rageval.audit.stub:score_stub", ("labels",))
    b = Scorer("reg_a", "kg_rageval.audit.stub:other", ("labels",))
    try:
        assert register(a) is REGISTRY["reg_a"]
        assert register(a) is REGISTRY["reg_a"]  # the same declaration again: a no-op
        with pytest.raises(
            ConfigError,
            match=r"family 'reg_a' is already registered "
            r"\(kg_rageval.audit.stub:score_stub\); pass replace=True",
        ):
            register(b)
        assert REGISTRY["reg_a"].target == "kg_rageval.audit.stub:score_stub"
        register(b, replace=True)
        assert REGISTRY["reg_a"].target == "kg_rageval.audit.stub:other"
        with pytest.raises(ConfigError, match="'refusal' is already used by family 'generation'"):
            register(Scorer("reg_a", "x:y", ("labels",), members=("refusal",)), replace=True)
        assert REGISTRY["reg_a"].target == "kg_rageval.audit.stub:other"
    finally:
        unregister("reg_a")
    with pytest.raises(ConfigError, match="family 'hierarchy' is already registered"):
        register(Scorer("hierarchy", "x:y", ("labels",)))
