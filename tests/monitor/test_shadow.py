"""Shadow evaluation (kg_rageval.monitor.shadow): paired, per branch, with compare's statistics."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from kg_rageval.families.retrieval.compare import paired_compare
from kg_rageval.monitor.shadow import compare_shadow
from kg_rageval.monitor.traffic import TrafficRow

T0 = datetime(2026, 11, 2, tzinfo=timezone.utc)


def rows(lat, branches, prefix="q"):
    return [
        TrafficRow(f"{prefix}{i}", T0, "w", b, ("X",), record={"system": {"latency_ms": {"total": v}}})
        for i, (v, b) in enumerate(zip(lat, branches))
    ]


def test_paired_per_branch_equals_paired_compare_and_counts_unpaired():
    rng = np.random.default_rng(0)
    a = rng.normal(500, 50, 80)
    b = a + np.where(np.arange(80) < 40, 30.0, 0.0) + rng.normal(0, 5, 80)
    br = ["B1"] * 40 + ["B2"] * 40
    prod = rows(a, br)
    cand = rows(b, br) + rows([1.0], ["B1"], prefix="extra")
    res = compare_shadow(prod, cand, metrics=["latency_ms"], n_resamples=500, n_permutations=2000)
    assert (res["n_paired"], res["only_candidate"], res["only_production"]) == (80, 1, 0)
    g = res["metrics"]["latency_ms"]["groups"]
    ids = [f"q{i}" for i in range(40)]
    ref = paired_compare(
        dict(zip(ids, a[:40])),
        dict(zip(ids, b[:40])),
        metric="latency_ms",
        n_resamples=500,
        n_permutations=2000,
    )
    assert g["B1"]["mean_delta"] == pytest.approx(ref.mean_delta)
    assert g["B1"]["ci"] == pytest.approx(list(ref.ci)) and g["B1"]["p_value"] == ref.p_value
    assert g["B1"]["p_holm"] == pytest.approx(min(1.0, 2 * min(g["B1"]["p_value"], g["B2"]["p_value"])))
    assert g["B1"]["ci"][0] > 20 and g["B2"]["ci"][0] < 0 < g["B2"]["ci"][1]


def test_small_branch_is_insufficient_evidence():
    res = compare_shadow(rows([1.0] * 10, ["B1"] * 10), rows([2.0] * 10, ["B1"] * 10), metrics=["latency_ms"])
    assert res["metrics"]["latency_ms"]["groups"]["B1"]["status"] == "insufficient evidence"


def test_cli_shadow(tmp_path, fixtures_dir):
    import json

    from click.testing import CliRunner

    from kg_rageval.cli.monitor_review import review_group

    def write(name, lat):
        p = tmp_path / name
        p.write_text(
            "".join(
                json.dumps({"id": f"q{i}", "timestamp": 1793613600, "system": {"latency_ms": {"total": v}}})
                + "\n"
                for i, v in enumerate(lat)
            )
        )
        return str(p)

    onto = str(fixtures_dir / "hierarchy" / "vehicles.obo")
    a, b = write("a.jsonl", range(40)), write("b.jsonl", [v + 10 for v in range(40)])
    r = CliRunner().invoke(
        review_group, ["shadow", "-d", a, "--candidate", b, "-O", onto, "--format", "json"]
    )
    assert r.exit_code == 0, r.output
    g = json.loads(r.output)["metrics"]["latency_ms"]["groups"]["(all)"]
    assert g["mean_delta"] == pytest.approx(10.0) and g["wins"] == 40
