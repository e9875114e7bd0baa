"""Production records read into rows and windows (kg_rageval.monitor.traffic)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.monitor.traffic import NIL_BRANCH, UNKNOWN_BRANCH, Windowing, iter_traffic
from kg_rageval.ontology import load_ontology


@pytest.fixture(scope="module")
def onto(fixtures_dir):
    return load_ontology(fixtures_dir / "hierarchy" / "vehicles.obo")


def _write(tmp_path, rows):
    p = tmp_path / "traffic.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_windows_align_to_utc_days_and_releases():
    day = Windowing.parse("1d")
    ts = datetime(2026, 11, 2, 23, 59, tzinfo=timezone.utc)
    assert day.key(ts, None) == "2026-11-02T00:00:00Z"
    assert Windowing.parse("6h").key(ts, None) == "2026-11-02T18:00:00Z"
    assert Windowing.parse("release").key(ts, "r7") == "r7"
    with pytest.raises(ConfigError, match="expected N followed by"):
        Windowing.parse("0d")


def test_rows_carry_branch_nil_and_unknown(onto, tmp_path):
    leaf = next(n for n in onto.ids if onto.depth(n) >= 2)
    top = onto.ancestors(leaf)
    p = _write(
        tmp_path,
        [
            {"id": "a", "timestamp": "2026-11-02T10:00:00+01:00", "labels": {"predicted": [leaf]}},
            {"id": "b", "timestamp": 1793613600, "labels": {"predicted": []}},
            {"id": "c", "timestamp": "2026-11-03T00:00:00Z", "labels": {"predicted": "NOPE:1"}},
        ],
    )
    rows = [r for chunk in iter_traffic(p, onto) for r in chunk]
    a, b, c = rows
    assert a.timestamp == datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)
    assert a.window == "2026-11-02T00:00:00Z"
    assert a.branch in top and onto.depth(a.branch) == 1
    assert (b.branch, b.is_nil) == (NIL_BRANCH, True)
    assert (c.branch, c.unknown_concepts, c.window) == (UNKNOWN_BRANCH, ("NOPE:1",), "2026-11-03T00:00:00Z")


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"id": "x", "timestamp": "2026-11-02T10:00:00"}, "timestamp"),
        ({"id": "x"}, "timestamp"),
        ({"id": "x", "timestamp": "2026-11-02T10:00:00Z", "embedding": [0.1, 0.2]}, "embedding_model"),
        ({"id": "x", "timestamp": "2026-11-02T10:00:00Z", "feedback": {"thumbs": "meh"}}, "feedback.thumbs"),
        ({"id": "x", "timestamp": "2026-11-02T10:00:00Z", "confidence": 1.5}, "confidence"),
    ],
)
def test_bad_fields_name_file_line_and_field(onto, tmp_path, record, field):
    p = _write(tmp_path, [record])
    with pytest.raises(InputError) as err:
        list(iter_traffic(p, onto))
    assert (
        "traffic.jsonl" in str(err.value)
        and "line 1" in str(err.value)
        and f"field {field}" in str(err.value)
    )


def test_the_monitor_group_has_every_command(cli):
    code, out, _ = cli(["monitor", "--help"])
    assert code == 0
    for name in ("ingest", "drift", "windows", "calibrate", "embedding", "alerts", "sample", "shadow"):
        assert f"  {name} " in out
