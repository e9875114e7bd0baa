"""Review queues (kg_rageval.monitor.review): inclusion probabilities and IPW estimates."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from kg_rageval.monitor import review as rv
from kg_rageval.monitor.traffic import TrafficRow

T0 = datetime(2026, 11, 2, tzinfo=timezone.utc)


def population(n=20000, seed=1):
    rng = np.random.default_rng(seed)
    rows, bad = [], {}
    for i in range(n):
        conf = float(rng.uniform())
        is_bad = bool(rng.uniform() < (0.5 if conf < 0.3 else 0.05))
        thumbs = "down" if rng.uniform() < (0.4 if is_bad else 0.02) else None
        rows.append(TrafficRow(f"q{i}", T0, "w", "B", ("X",), feedback={"thumbs": thumbs}, confidence=conf))
        bad[f"q{i}"] = float(is_bad)
    return rows, bad


def test_combined_probability_and_reproducible():
    d = rv.Design(rate=0.02, low_confidence=0.3, low_confidence_rate=0.5, thumbs_down_rate=0.5)
    r = TrafficRow("x", T0, "w", "B", (), feedback={"thumbs": "down"}, confidence=0.1)
    assert d.probabilities(r) == {"random": 0.02, "low_confidence": 0.5, "thumbs_down": 0.5}
    rows, _ = population(3000)
    a, b = rv.draw(rows, d), rv.draw(list(reversed(rows)), d)
    assert sorted(i.record_id for i in a.items) == sorted(i.record_id for i in b.items)
    both = next(i for i in a.items if {"low_confidence", "thumbs_down"} <= set(i.stratum_probabilities))
    assert both.inclusion_probability == pytest.approx(1 - 0.98 * 0.5 * 0.5)
    assert a.stratum_counts["random"] > 0 and not a.warnings
    assert rv.draw(rows, rv.Design(rate=0.0)).warnings == [rv.NO_RANDOM_WARNING]


def test_ipw_unbiased_naive_biased_over_seeded_repeats():
    rows, bad = population()
    truth = sum(bad.values()) / len(bad)
    ht, hajek, naive = [], [], []
    for seed in range(60):
        s = rv.draw(rows, rv.Design(rate=0.02, seed=seed))
        e = rv.estimates(s, lambda it: bad[it.record_id])
        ht.append(e["horvitz_thompson"]["estimate"])
        hajek.append(e["hajek"]["estimate"])
        naive.append(e["naive_mixed_mean"]["estimate"])
    se = np.std(ht, ddof=1) / np.sqrt(len(ht))
    assert abs(np.mean(ht) - truth) < 3 * se
    assert abs(np.mean(hajek) - truth) < 3 * np.std(hajek, ddof=1) / np.sqrt(len(hajek))
    assert np.mean(naive) > truth + 0.15  # about 0.45 against about 0.185


def test_cli_sample_writes_queue_and_warns_without_random(tmp_path, fixtures_dir):
    import json

    from click.testing import CliRunner

    from kg_rageval.cli.monitor_review import review_group

    data = tmp_path / "t.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {"id": f"q{i}", "timestamp": 1793613600 + i, "confidence": 0.1 if i % 10 == 0 else 0.9}
            )
            + "\n"
            for i in range(500)
        )
    )
    onto = str(fixtures_dir / "hierarchy" / "vehicles.obo")
    out = tmp_path / "queue.jsonl"
    args = ["sample", "-d", str(data), "-O", onto, "-o", str(out), "--seed", "3", "--format", "json"]
    r = CliRunner().invoke(review_group, args)
    assert r.exit_code == 0, r.output
    items = [json.loads(x) for x in out.read_text().splitlines()]
    low = [i for i in items if "low_confidence" in i["stratum_probabilities"]]
    assert low and all(i["inclusion_probability"] == pytest.approx(1 - 0.98 * 0.5) for i in low)
    assert len(low) in range(10, 41)  # 50 eligible at 0.5 (about 25)
    r2 = CliRunner().invoke(review_group, [*args[:-2], "--rate", "0"])
    assert r2.exit_code == 0 and "golden set would only grow from complaints" in r2.output
    r3 = CliRunner().invoke(review_group, ["sample", "-d", str(data), "-O", onto, "-o", str(data)])
    assert r3.exit_code == 2 and "same file" in r3.output
