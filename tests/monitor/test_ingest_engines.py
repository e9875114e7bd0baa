"""The two ingest paths of the window store (kg_rageval.monitor.store): DuckDB's own JSON
reader (``engine="sql"``) and the record-by-record reader (``engine="python"``) write the same
tables on the same traffic; a record the SQL path does not take (an embedding, a judgment, an
integer id, a bad field) sends the whole file to the record-by-record path, whose error names
the file, line and field."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("duckdb", reason="the window store needs the monitor extra (duckdb)")

from kg_rageval.base.errors import InputError
from kg_rageval.monitor.staging import _sql_stage
from kg_rageval.monitor.store import WindowStore, ingest
from kg_rageval.monitor.traffic import Windowing
from kg_rageval.ontology import IdResolver, load_ontology

GOOD = {"claims": ["a"], "supported": ["a"], "unsupported": []}


@pytest.fixture(scope="module")
def onto(fixtures_dir):
    return load_ontology(fixtures_dir / "hierarchy" / "vehicles.obo")


def _plain(onto):
    """Records of every shape the SQL path takes."""
    ids = sorted(onto.ids)
    out = []
    for i in range(400):
        r: dict = {"id": f"r{i}"}
        r["timestamp"] = (
            1793577600 + 977 * i
            if i % 3 == 0
            else f"2026-11-0{2 + i % 5}T{i % 24:02d}:{i % 60:02d}:0{i % 10}{'.25' if i % 4 else ''}"
            + ("Z" if i % 2 else "+05:30")
        )
        k = i % 7
        if k == 0:
            r["labels"] = {"predicted": [ids[i % len(ids)]]}
        elif k == 1:
            r["labels"] = {"predicted": ids[i % len(ids)]}
        elif k == 2:
            r["labels"] = {"predicted": ["NOPE:1", ids[(i + 1) % len(ids)], "NOPE:2"]}
        elif k == 3:
            r["labels"] = {"predicted": [f"NOPE:{i % 3}"]}
        elif k == 4:
            r["labels"] = {"predicted": []}
        elif k == 5:
            r["labels"] = {"predicted": ""}
        if i % 5:
            r["intent"] = ["lookup", "howto", "", 3][i % 4]
        if i % 3:
            r["slices"] = {"lang": ["nl", "en"][i % 2], "a.b": "x", **({"device": "phone"} if i % 4 else {})}
        elif i % 9 == 0:
            r["slices"] = {}
        fb = {}
        if i % 4:
            fb["thumbs"] = [None, "up", "down"][i % 3]
        if i % 6:
            fb["regenerated"] = i % 5 == 0
        if fb or i % 8 == 0:
            r["feedback"] = fb if fb else None
        if i % 5 == 1:
            r["answer"] = {"refused": i % 10 == 1, "text": "t"}
        if i % 11 == 0:
            r["review"] = {"faithful": i % 22 == 0}
        lat: object = [123.5 + i, {"total": 50 + i * 0.25}, {"total": -1}, True, {"retrieval": 3}, None][
            i % 6
        ]
        sysd = {"latency_ms": lat}
        if i % 4:
            sysd["cost_usd"] = [0.001 * (i % 13), -0.5, 2][i % 3]
        if i % 13:
            r["system"] = sysd
        if i % 17 == 0:
            r["confidence"] = (i % 10) / 10
        if i % 19 == 0:
            r["release"] = "v2"
        out.append(r)
    return out


def _dump(path):
    with WindowStore(path, read_only=True) as st:
        con = st.con
        got = {}
        for t, order in (("sums", "ALL"), ("concepts", "ALL"), ("latency", "ALL"), ("embeddings", "ALL")):
            got[t] = con.execute(f"SELECT * FROM {t} ORDER BY {order}").fetchall()
        got["windows"] = con.execute(
            "SELECT win, windowing, rows, source, first_ts, last_ts FROM windows ORDER BY win"
        ).fetchall()
    return got


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _both(tmp_path, onto, data, **kw):
    out = {}
    for engine in ("python", "sql"):
        store = tmp_path / f"{engine}.duckdb"
        store.unlink(missing_ok=True)
        with WindowStore(store) as st:
            ingest(st, data, onto, engine=engine, **kw)
        out[engine] = _dump(store)
    return out


def test_sql_path_takes_the_plain_file_and_writes_the_same_tables(tmp_path, onto):
    import duckdb

    from kg_rageval.audit.config import CoverageConfig
    from kg_rageval.audit.pernode import make_branch_of

    data = _write(tmp_path / "plain.jsonl", _plain(onto))
    con = duckdb.connect()
    branch_of = make_branch_of(onto, CoverageConfig())
    assert _sql_stage(con, data, Windowing.parse("1d"), IdResolver(onto).node_id, branch_of)
    out = _both(tmp_path, onto, data)
    py, sql = out["python"], out["sql"]
    assert py["windows"] == sql["windows"] and len(py["windows"]) >= 5
    assert py["concepts"] == sql["concepts"] and py["latency"] == sql["latency"]
    # the sums: counts equal, float sums equal up to the order of summation
    assert len(py["sums"]) == len(sql["sums"])
    for a, b in zip(py["sums"], sql["sums"], strict=True):
        assert a[:4] == b[:4]
        assert a[4:] == pytest.approx(b[4:], rel=1e-12, abs=1e-15)
    # the shapes were exercised: unknown ids, NIL, slices, carried fields, review
    with WindowStore(tmp_path / "sql.duckdb", read_only=True) as st:
        t = st.sums(st.windows(), by=())[0]
    assert t["n"] == 400 and t["unknown"] > 0 and t["nil"] > 0
    assert 0 < t["regen_n"] < t["n"] and 0 < t["refusal_n"] < t["n"] and t["reviewed_n"] > 0
    assert 0 < t["latency_n"] < t["n"] and 0 < t["cost_n"] < t["n"]


@pytest.mark.parametrize(
    "extra",
    [
        {"embedding": [0.1, 0.2], "embedding_model": "m@1"},
        {"answer": {"judgment": GOOD}},
        {"timestamp": "2026-11-02 10:00:00+00:00"},  # a space: the record-by-record reader's own parse
        {"slices": {"n": 3}},  # a number as a slice value: its JSON spelling
        {"id": 7},
    ],
)
def test_other_shapes_go_record_by_record_with_the_same_tables(tmp_path, onto, extra):
    recs = _plain(onto)[:50]
    recs[10] = {**recs[10], **extra}
    data = _write(tmp_path / "odd.jsonl", recs)
    out = _both(tmp_path, onto, data)
    assert out["python"] == out["sql"]


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"timestamp": "2026-11-02T10:00:00"}, "timestamp"),  # no zone
        ({"feedback": {"thumbs": "meh"}}, "feedback.thumbs"),
        ({"confidence": 1.5}, "confidence"),
        ({"labels": {"predicted": [1]}}, "labels.predicted"),
        ({"release": 3}, "release"),
        ({"system": {"latency_ms": float("nan")}}, "system.latency_ms"),  # json.dumps writes NaN
        ({"system": {"cost_usd": float("inf")}}, "system.cost_usd"),
    ],
)
def test_bad_records_get_the_record_by_record_error(tmp_path, onto, extra, field):
    recs = _plain(onto)[:50]
    recs[20] = {**recs[20], **extra}
    data = _write(tmp_path / "bad.jsonl", recs)
    msgs = []
    for engine in ("python", "sql"):
        with WindowStore(tmp_path / f"{engine}.duckdb") as st:
            with pytest.raises(InputError) as err:
                ingest(st, data, onto, engine=engine)
            assert st.windows() == []  # nothing written
        msgs.append(str(err.value))
    assert msgs[0] == msgs[1]
    assert "line 21" in msgs[0] and field in msgs[0] and "bad.jsonl" in msgs[0]


def test_duplicate_ids_and_not_json(tmp_path, onto):
    recs = _plain(onto)[:30]
    recs[5]["id"] = recs[2]["id"]
    data = _write(tmp_path / "dup.jsonl", recs)
    with WindowStore(tmp_path / "s.duckdb") as st, pytest.raises(InputError, match="duplicate record id"):
        ingest(st, data, onto, engine="sql")
    data = _write(tmp_path / "arr.jsonl", _plain(onto)[:30])
    data.write_text(data.read_text() + "[1, 2]\n")
    with WindowStore(tmp_path / "s2.duckdb") as st, pytest.raises(InputError, match="line 31"):
        ingest(st, data, onto, engine="sql")


def test_cli_engine_option(tmp_path, onto, fixtures_dir):
    from kg_rageval.cli.main import main

    data = _write(tmp_path / "plain.jsonl", _plain(onto)[:100])
    got = []
    for engine in ("sql", "python"):
        store = tmp_path / f"cli-{engine}.duckdb"
        argv = [
            "monitor",
            "ingest",
            str(data),
            "--store",
            str(store),
            "-O",
            str(fixtures_dir / "hierarchy" / "vehicles.obo"),
        ]
        assert main([*argv, "--engine", engine]) == 0
        got.append(_dump(store))
    assert got[0]["concepts"] == got[1]["concepts"] and got[0]["windows"][0][2:3] == got[1]["windows"][0][2:3]
    assert (
        main(
            [
                "monitor",
                "ingest",
                str(data),
                "--store",
                str(tmp_path / "x.duckdb"),
                "-O",
                "x",
                "--engine",
                "duck",
            ]
        )
        == 2
    )
