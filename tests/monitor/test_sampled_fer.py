"""Sampled FER (kg_rageval.monitor.fer), `monitor fer` and the FER guardrail of `monitor alerts`:
hand-worked weighted estimates, checked against statsmodels."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner

from kg_rageval.base.errors import ConfigError
from kg_rageval.monitor import alerts as al
from kg_rageval.monitor import fer as fe
from kg_rageval.monitor.review import NO_RANDOM_WARNING, Item
from kg_rageval.monitor.traffic import Windowing

W = "2026-11-02T00:00:00Z"


def obs(i, excluded, eligible=True, branch="B"):
    return fe.FerObservation(f"q{i}", W, branch, eligible, excluded)


def item(i, strata, probs):
    import math

    return Item(f"q{i}", W, "B", strata, probs, 1 - math.prod(1 - p for p in probs.values()))


def test_weighted_estimate_by_hand_and_against_statsmodels():
    from statsmodels.stats.proportion import proportion_confint
    from statsmodels.stats.weightstats import DescrStatsW

    # 4 random-stratum items (pi 0.25, weight 4), one excluded; 2 thumbs-down items
    # (pi = 1 - 0.75 * (2/3) = 0.5, weight 2), both excluded; one reviewed item not eligible
    cell = [(obs(i, i == 0), item(i, ["random"], {"random": 0.25})) for i in range(4)]
    cell += [(obs(i, True), item(i, ["thumbs_down"], {"random": 0.25, "thumbs_down": 1 / 3})) for i in (4, 5)]
    cell += [(obs(6, False, eligible=False), item(6, ["random"], {"random": 0.25}))]
    r = fe.cell_estimate(cell, min_rows=1)
    assert (r["n_reviewed"], r["n_eligible"], r["n_excluded"], r["n_not_eligible"]) == (7, 6, 3, 1)
    w = r["weighted"]
    # (4*1 + 2*2) / (4*4 + 2*2) = 8 / 20; Kish n = 20^2 / (4*16 + 2*4) = 400 / 72
    assert w["estimate"] == pytest.approx(0.4) and w["n_effective"] == pytest.approx(400 / 72)
    ds = DescrStatsW([1, 0, 0, 0, 1, 1], weights=[4, 4, 4, 4, 2, 2])
    assert w["estimate"] == pytest.approx(ds.mean)
    assert w["ci"] == pytest.approx(list(proportion_confint(0.4 * 400 / 72, 400 / 72, method="wilson")))
    assert "random, thumbs_down" in w["from"]
    rnd = r["random_stratum"]
    assert (rnd["n"], rnd["excluded"], rnd["estimate"]) == (4, 1, 0.25)
    assert rnd["ci"] == pytest.approx(list(proportion_confint(1, 4, method="wilson")))
    assert r["by_stratum"]["thumbs_down"]["estimate"] == 1.0
    assert "not a population estimate" in r["by_stratum"]["thumbs_down"]["from"]
    # equal weights: the weighted interval is the plain Wilson interval
    eq = fe.cell_estimate(cell[:4], min_rows=1)["weighted"]
    assert eq["ci"] == pytest.approx(list(proportion_confint(1, 4, method="wilson")))


def test_insufficient_and_no_random_stratum():
    cell = [(obs(i, False), item(i, ["random"], {"random": 0.25})) for i in range(5)]
    r = fe.cell_estimate(cell, min_rows=30)
    assert r["weighted"]["status"] == fe.INSUFFICIENT and r["weighted"]["estimate"] is None
    assert r["random_stratum"]["status"] == fe.INSUFFICIENT and r["random_stratum"]["ci"] is None
    no_rnd = [(obs(i, True), item(i, ["thumbs_down"], {"thumbs_down": 0.5})) for i in range(5)]
    r = fe.cell_estimate(no_rnd, min_rows=1)
    assert r["weighted"]["status"] == fe.INSUFFICIENT and r["weighted"]["reason"] == NO_RANDOM_WARNING
    assert r["warnings"] == [NO_RANDOM_WARNING]
    assert r["random_stratum"]["n"] == 0


@pytest.fixture
def reviewed(tmp_path, fixtures_dir):
    """The retrieval family's seed example (q1, q3 falsely excluded; q2, q4 not) as reviewed
    production records; q5 is reviewed but not in the queue."""
    src = [
        json.loads(x)
        for x in (fixtures_dir / "retrieval" / "seed_filter_records.jsonl").read_text().splitlines()
    ]
    concept = {"q1": "VH:sedan", "q2": "VH:sedan", "q3": "VH:submarine", "q4": "VH:submarine"}
    recs = []
    for r in src:
        recs.append({**r, "timestamp": "2026-11-02T10:00:00Z", "labels": {"predicted": [concept[r["id"]]]}})
    recs.append({**recs[-1], "id": "q5"})
    data = tmp_path / "reviewed.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in recs))
    queue = tmp_path / "queue.jsonl"
    items = [
        ("q1", ["random"], {"random": 0.5}, 0.5),
        ("q2", ["random"], {"random": 0.5}, 0.5),
        ("q3", ["thumbs_down"], {"random": 0.5, "thumbs_down": 0.5}, 0.75),
        ("q4", ["random"], {"random": 0.5}, 0.5),
    ]
    queue.write_text(
        "".join(
            json.dumps({"id": i, "window": W, "branch": "", "strata": s, "stratum_probabilities": p,
                        "inclusion_probability": pi}) + "\n"
            for i, s, p, pi in items
        )
    )  # fmt: skip
    corpus = tmp_path / "corpus.jsonl"
    shutil.copy(fixtures_dir / "retrieval" / "seed_filter_corpus.jsonl", corpus)
    return data, queue, corpus, fixtures_dir / "hierarchy" / "vehicles.obo"


def test_cli_fer_per_branch(reviewed):
    from kg_rageval.cli.monitor_review import review_group

    data, queue, corpus, onto = reviewed
    argv = ["fer", "-d", str(data), "-O", str(onto), "--queue", str(queue), "--corpus", str(corpus)]
    r = CliRunner().invoke(review_group, [*argv, "--min-rows", "1", "--format", "json"])
    assert r.exit_code == 0, r.output
    p = json.loads(r.output)
    assert p["not_in_queue"] == 1 and p["not_in_queue_ids"] == ["q5"]
    cells = {x["branch"]: x for x in p["results"]}
    assert set(cells) == {"(all)", "VH:car", "VH:boat"}
    # (all): (2 + 4/3) / (2 + 2 + 4/3 + 2) = 5/11; car: 2/4; boat: (4/3) / (4/3 + 2) = 0.4
    assert cells["(all)"]["weighted"]["estimate"] == pytest.approx(5 / 11)
    assert cells["VH:car"]["weighted"]["estimate"] == pytest.approx(0.5)
    assert cells["VH:boat"]["weighted"]["estimate"] == pytest.approx(0.4)
    assert cells["(all)"]["random_stratum"]["estimate"] == pytest.approx(1 / 3)
    assert cells["(all)"]["n_excluded"] == 2 and cells["(all)"]["n_eligible"] == 4
    text = CliRunner().invoke(review_group, [*argv, "--min-rows", "1"])
    assert text.exit_code == 0 and "weighted n=4 0.4545" in text.output
    # the default min_rows (30): insufficient evidence, never a rate
    p = json.loads(CliRunner().invoke(review_group, [*argv, "--format", "json"]).output)
    assert {x["weighted"]["status"] for x in p["results"]} == {fe.INSUFFICIENT}


def test_fer_alert(reviewed, tmp_path):
    from kg_rageval.cli.monitor_review import review_group

    data, queue, corpus, onto = reviewed
    cfg = tmp_path / "alerts.yaml"
    cfg.write_text("min_rows: 1\nfilter_false_exclusion_rate: {max: 0.02}\n")
    argv = ["alerts", "-d", str(data), "-O", str(onto), "-c", str(cfg), "--format", "json"]
    r = CliRunner().invoke(review_group, [*argv, "--queue", str(queue), "--corpus", str(corpus)])
    assert r.exit_code == 1, r.output
    res = {x["branch"]: x for x in json.loads(r.output)["results"]}
    a = res["(all)"]
    assert a["check"] == "filter_false_exclusion_rate" and a["status"] == "alert"
    assert a["evidence"]["estimate"] == pytest.approx(5 / 11) and a["evidence"]["n"] == 4
    assert a["evidence"]["ci"][0] > 0.02 and "weighted by 1/inclusion_probability" in a["from"]
    assert a["triage"].startswith("likely drift")
    # without queue and corpus the check cannot run: an input error, not silence
    r = CliRunner().invoke(review_group, argv)
    assert r.exit_code == 2 and "needs reviewed records" in r.output
    with pytest.raises(ConfigError):
        al.evaluate(
            [],
            al.config_from_mapping({"filter_false_exclusion_rate": {"max": 0.1}}),
            windowing=Windowing.parse("1d"),
        )


def test_queue_errors_name_the_line(tmp_path):
    from kg_rageval.base.errors import InputError

    q = tmp_path / "q.jsonl"
    q.write_text(
        json.dumps({"id": "a", "strata": ["random"], "stratum_probabilities": {}, "inclusion_probability": 0})
        + "\n"
    )
    with pytest.raises(InputError, match=r"line 1.*inclusion_probability"):
        fe.load_queue(q)


def test_weighted_fer_unbiased_over_seeded_repeats():
    import numpy as np

    from kg_rageval.monitor.review import Design, draw
    from kg_rageval.monitor.traffic import TrafficRow

    # thumbs-down queries are falsely excluded far more often (0.4 against 0.05)
    rng = np.random.default_rng(7)
    t0 = datetime(2026, 11, 2, tzinfo=timezone.utc)
    rows, excl = [], {}
    for i in range(8000):
        down = bool(rng.uniform() < 0.1)
        rows.append(TrafficRow(f"q{i}", t0, W, "B", ("X",), feedback={"thumbs": "down" if down else None}))
        excl[f"q{i}"] = bool(rng.uniform() < (0.4 if down else 0.05))
    truth = sum(excl.values()) / len(excl)
    weighted, naive = [], []
    for seed in range(20):
        s = draw(rows, Design(rate=0.02, thumbs_down_rate=0.5, seed=seed))
        cell = [(fe.FerObservation(it.record_id, W, "B", True, excl[it.record_id]), it) for it in s.items]
        r = fe.cell_estimate(cell, min_rows=1)
        weighted.append(r["weighted"]["estimate"])
        naive.append(r["n_excluded"] / r["n_eligible"])
    se = np.std(weighted, ddof=1) / np.sqrt(len(weighted))
    assert abs(np.mean(weighted) - truth) < 3 * se  # truth about 0.085
    assert np.mean(naive) > truth + 0.15  # the oversampled thumbs-down stratum dominates
