"""``monitor ingest`` on a Dask cluster (kg_rageval.monitor.partitioned): a LocalCluster of two
worker processes writes the store the in-process ingest writes (sums, concept counts, raw
latencies, embedding sample, windows table), for byte ranges of one file and for two files,
and a bad record in a later partition raises the in-process error (file, global line, field)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("duckdb", reason="the window store needs the monitor extra (duckdb)")
pytest.importorskip("distributed", reason="the Dask path needs the dask extra")

from kg_rageval.base.errors import InputError
from kg_rageval.monitor import partitioned
from kg_rageval.monitor.store import WindowStore, ingest
from kg_rageval.ontology import load_ontology

CHUNK = 40


@pytest.fixture(scope="module")
def onto(fixtures_dir):
    return load_ontology(fixtures_dir / "hierarchy" / "vehicles.obo")


@pytest.fixture(scope="module")
def client():
    from kg_rageval.integrations.dask import local_client

    c = local_client(n_workers=2, threads_per_worker=1, processes=True)
    yield c
    cluster = c.cluster
    c.close()
    cluster.close()


def _traffic(onto, n, start=0):
    """``n`` records over several daily windows; dyadic latencies and costs, so every float sum
    is exact whatever the order of addition and the stores compare equal."""
    ids = sorted(onto.ids)
    out = []
    for i in range(start, start + n):
        r: dict = {"id": f"q{i}", "timestamp": 1793577600 + 3607 * i}
        k = i % 5
        if k < 3:
            r["labels"] = {"predicted": [ids[(i * 7) % len(ids)]]}
        elif k == 3:
            r["labels"] = {"predicted": [f"NOPE:{i % 4}"]}
        r["intent"] = ["lookup", "howto", ""][i % 3]
        if i % 2:
            r["slices"] = {"lang": ["nl", "en"][i % 4 // 2]}
        r["feedback"] = {
            "thumbs": [None, "up", "down"][i % 3],
            **({"regenerated": i % 7 == 0} if i % 3 else {}),
        }
        if i % 4 == 1:
            r["answer"] = {"refused": i % 8 == 1}
        if i % 9 == 0:
            r["review"] = {"faithful": i % 18 == 0}
        if i % 6:
            r["system"] = {"latency_ms": {"total": 100 + (i % 37) * 0.25}, "cost_usd": (i % 11) * 0.125}
        if i % 3 == 0:
            r["embedding"] = [((i * 13) % 17) / 16, ((i * 5) % 7) / 8, 1.0]
            r["embedding_model"] = "m@1"
        out.append(r)
    return out


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _dump(path):
    with WindowStore(path, read_only=True) as st:
        con = st.con
        got = {
            t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
            for t in ("sums", "concepts", "latency", "embeddings")
        }
        got["windows"] = con.execute(
            "SELECT win, windowing, rows, source, first_ts, last_ts FROM windows ORDER BY win"
        ).fetchall()
    return got


def _ingest(path, traffic, onto, **kw):
    with WindowStore(path) as st:
        return ingest(st, traffic, onto, engine="python", chunk_rows=CHUNK, reservoir=2, **kw)


def test_two_workers_write_the_in_process_store(tmp_path, onto, client):
    data = _write(tmp_path / "traffic.jsonl", _traffic(onto, 600))
    here = _ingest(tmp_path / "here.duckdb", data, onto)
    there = _ingest(tmp_path / "there.duckdb", data, onto, client=client, partitions=4)
    assert partitioned.LAST_STATS["partitions"] == 4
    assert sum(partitioned.LAST_STATS["records"]) == 600
    assert here == there and len(here.windows) >= 20
    a, b = _dump(tmp_path / "here.duckdb"), _dump(tmp_path / "there.duckdb")
    assert a == b
    # the shapes were exercised: several windows, slices, unknown ids, latencies, a cut sample
    assert len(a["windows"]) == len(here.windows) and sum(r[2] for r in a["windows"]) == 600
    assert len(a["latency"]) == 500 and any(r[3] == "lang=nl" for r in a["sums"])
    assert 0 < len(a["embeddings"]) < 200


def test_two_files_merge_as_one_input(tmp_path, onto, client):
    recs = _traffic(onto, 500)
    f1 = _write(tmp_path / "a.jsonl", recs[:230])
    f2 = _write(tmp_path / "b.jsonl", recs[230:])
    one = _write(tmp_path / "all.jsonl", recs)
    _ingest(tmp_path / "here.duckdb", [f1, f2], onto)
    _ingest(tmp_path / "there.duckdb", [f1, f2], onto, client=client, partitions=2)
    assert partitioned.LAST_STATS["records"] == [230, 270]  # one partition per file
    _ingest(tmp_path / "one.duckdb", one, onto)
    a, b, c = (_dump(tmp_path / f"{n}.duckdb") for n in ("here", "there", "one"))
    assert a == b
    assert a["windows"][0][3] == f"{f1}, {f2}"
    # the same rows in one file: every table but the source column is the same
    assert {k: v for k, v in a.items() if k != "windows"} == {k: v for k, v in c.items() if k != "windows"}
    assert [w[:3] + w[4:] for w in a["windows"]] == [w[:3] + w[4:] for w in c["windows"]]


@pytest.mark.parametrize(
    ("bad", "field"),
    [({"feedback": {"thumbs": "meh"}}, "feedback.thumbs"), ({"id": "q3"}, "duplicate record id")],
)
def test_a_bad_record_in_the_second_partition_raises_the_in_process_error(tmp_path, onto, client, bad, field):
    recs = _traffic(onto, 400)
    recs[321] = {**recs[321], **bad}
    data = _write(tmp_path / "bad.jsonl", recs)
    msgs = []
    for name, kw in (("here", {}), ("there", {"client": client, "partitions": 2})):
        with pytest.raises(InputError) as err:
            _ingest(tmp_path / f"{name}.duckdb", data, onto, **kw)
        msgs.append(str(err.value))
        with WindowStore(tmp_path / f"{name}.duckdb", read_only=True) as st:
            assert st.windows() == []  # nothing written
    assert msgs[0] == msgs[1]
    assert "bad.jsonl" in msgs[0] and "line 322" in msgs[0] and field in msgs[0]


def test_cli_dask_workers(tmp_path, onto, fixtures_dir, capsys):
    from kg_rageval.cli.main import main

    data = _write(tmp_path / "t.jsonl", _traffic(onto, 200))
    obo = str(fixtures_dir / "hierarchy" / "vehicles.obo")
    out = []
    partitioned.LAST_STATS.clear()
    for name, extra in (("here", []), ("there", ["--dask-workers", "1", "--dask-partitions", "2"])):
        argv = ["monitor", "ingest", str(data), "--store", str(tmp_path / f"{name}.duckdb"), "-O", obo]
        assert main([*argv, "--engine", "python", "--reservoir", "2", "--format", "json", *extra]) == 0
        out.append(json.loads(capsys.readouterr().out)["windows"])
    assert out[0] == out[1] and sum(out[0].values()) == 200
    assert partitioned.LAST_STATS["records"] == [200]  # on the worker (one chunk: one partition)
    assert _dump(tmp_path / "here.duckdb") == _dump(tmp_path / "there.duckdb")
    argv = ["monitor", "ingest", str(data), "--store", str(tmp_path / "x.duckdb"), "-O", obo]
    assert main([*argv, "--dask-workers", "1", "--dask-scheduler", "tcp://127.0.0.1:1"]) == 2
    assert "not both" in capsys.readouterr().err
