"""``kg-rageval monitor ingest|drift|windows``: exit codes 0 quiet, 1 alert, 2 input error."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("duckdb", reason="the window store needs the monitor extra (duckdb)")

from kg_rageval.cli.main import main
from kg_rageval.ontology import load_ontology


@pytest.fixture(scope="module")
def onto_path(fixtures_dir):
    return fixtures_dir / "hierarchy" / "vehicles.obo"


def _day(day: int, leaves: list[str], shift: float, seed: int, n: int = 40) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        leaf = leaves[i % 2]
        emb = rng.normal(size=4) + (shift if leaf == leaves[0] else 0.0)
        out.append({
            "id": f"d{day}-{i}", "timestamp": f"2026-11-0{day}T{i % 24:02d}:00:00Z",
            "labels": {"predicted": [leaf]}, "embedding": emb.tolist(), "embedding_model": "enc@1",
        })  # fmt: skip
    return out


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_ingest_drift_exit_codes(tmp_path, onto_path, capsys):
    onto = load_ontology(onto_path)
    tops = sorted(n for n in onto.ids if onto.depth(n) == 1)
    leaves = [next(n for n in onto.ids if onto.depth(n) >= 2 and t in onto.ancestors(n)) for t in tops[:2]]
    traffic = _write(
        tmp_path / "t.jsonl", _day(1, leaves, 0.0, 1) + _day(2, leaves, 0.0, 2) + _day(3, leaves, 2.0, 3)
    )
    store = str(tmp_path / "s.duckdb")
    assert (
        main(["monitor", "ingest", str(traffic), "--store", store, "-O", str(onto_path), "--format", "json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["windows"] == {
        "2026-11-01T00:00:00Z": 40,
        "2026-11-02T00:00:00Z": 40,
        "2026-11-03T00:00:00Z": 40,
    }
    # the same traffic again: refused (exit 2), the store unchanged
    assert main(["monitor", "ingest", str(traffic), "--store", store, "-O", str(onto_path)]) == 2
    assert "already in the store" in capsys.readouterr().err
    base = ["monitor", "drift", "--store", store, "--reference", "2026-11-01T00:00:00Z", "--format", "json"]
    assert main([*base, "--current", "2026-11-02T00:00:00Z"]) == 0
    quiet = json.loads(capsys.readouterr().out)
    assert quiet["alert"] is False and quiet["correction"] == "holm"
    assert main([*base, "--current", "2026-11-03T00:00:00Z"]) == 1
    alert = json.loads(capsys.readouterr().out)
    drifted = [t for t in alert["tests"] if t["drift"]]
    assert [(t["test"], t["branch"]) for t in drifted] == [("mmd", tops[0])]
    assert main([*base, "--rolling"]) == 1
    rolling = json.loads(capsys.readouterr().out)
    assert [w["alert"] for w in rolling["windows"]] == [False, True]
    assert main([*base, "--current", "2026-12-01T00:00:00Z"]) == 2
    assert "no window '2026-12-01T00:00:00Z'" in capsys.readouterr().err
    assert main(["monitor", "drift", "--store", str(tmp_path / "none.duckdb"), "--reference", "x"]) == 2
    assert "no such store" in capsys.readouterr().err


def test_ingest_otlp_traces(tmp_path, onto_path, capsys):
    onto = load_ontology(onto_path)
    leaf = next(n for n in onto.ids if onto.depth(n) >= 2)

    def attr(k, v):
        val = (
            {"stringValue": v}
            if isinstance(v, str)
            else {"arrayValue": {"values": [{"doubleValue": x} for x in v]}}
        )
        return {"key": k, "value": val}

    start = 1793613600 * 10**9  # 2026-11-02T10:00:00Z
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "rag",
         "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 250_000_000),
         "attributes": [attr("openinference.span.kind", "CHAIN"), attr("kg_rageval.concepts", leaf),
                        attr("kg_rageval.intent", "lookup")]},
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b175", "parentSpanId": "eee19b7ec3c1b174",
         "name": "embed", "startTimeUnixNano": str(start + 1), "endTimeUnixNano": str(start + 2),
         "attributes": [attr("openinference.span.kind", "EMBEDDING"), attr("embedding.model_name", "enc@1"),
                        attr("embedding.embeddings.0.embedding.vector", [0.5, 1.5])]},
    ]}]}]}  # fmt: skip
    p = tmp_path / "traces.json"
    p.write_text(json.dumps(doc))
    store = str(tmp_path / "s.duckdb")
    assert (
        main(
            [
                "monitor",
                "ingest",
                str(p),
                "--traces",
                "--store",
                store,
                "-O",
                str(onto_path),
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["windows"] == {"2026-11-02T00:00:00Z": 1}
    from kg_rageval.monitor.store import WindowStore

    with WindowStore(store, read_only=True) as st:
        s = st.sums(st.windows(), by=("intent",))
        assert [(r["intent"], r["n"], r["latency_sum"]) for r in s] == [("lookup", 1, 250.0)]
        emb, model = st.embeddings("2026-11-02T00:00:00Z")
        assert model == "enc@1" and emb.tolist() == [[0.5, 1.5]]


def test_calibrate_and_embedding_commands(tmp_path, capsys):
    argv = ["monitor", "calibrate", "--trials", "20", "--n", "20", "--dim", "2", "--branches", "2",
            "--shift", "1.5", "--permutations", "20", "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["trials"] == 20 and r["power"] >= 0.9 and r["false_alarm_rate"] <= 0.15
    items = [
        {"id": "p1", "kind": "probe", "relevant": ["d1"], "embeddings": {"a": [1, 0], "b": [0, 1]}},
        {"id": "d1", "kind": "document", "embeddings": {"a": [1, 0], "b": [1, 0]}},
        {"id": "d2", "kind": "document", "embeddings": {"a": [0, 1], "b": [0, 1]}},
    ]
    p = _write(tmp_path / "probes.jsonl", items)
    base = ["monitor", "embedding", str(p), "--model-a", "a", "--model-b", "b", "-k", "1", "--format", "json"]
    assert main(base) == 0
    e = json.loads(capsys.readouterr().out)
    assert e["neighbour_stability"] == 0.0 and e["recall@1"] == {"a": 1.0, "b": 0.0}
    assert main([*base, "--min-stability", "0.5"]) == 1
    capsys.readouterr()
    assert main(["monitor", "embedding", str(p), "--model-a", "a", "--model-b", "zz"]) == 2
    assert "model 'zz' not in the probe set" in capsys.readouterr().err


def test_new_concept_drift_against_a_golden_set(tmp_path, onto_path, capsys):
    onto = load_ontology(onto_path)

    def tops(n):
        return {a for a in onto.ancestors(n) if onto.depth(a) == 1}

    # two concepts of one branch only (a DAG node under two branches would split them)
    kids = sorted(n for n in onto.ids if onto.depth(n) == 2 and len(tops(n)) == 1)
    kids = [n for n in kids if tops(n) == tops(kids[0])]
    seen, unseen = kids[0], kids[1]
    golden = _write(tmp_path / "golden.jsonl", [{"id": "g1", "labels": {"gold": [seen]}}])
    ref = [
        {"id": f"r{i}", "timestamp": "2026-11-01T01:00:00Z", "labels": {"predicted": [seen]}}
        for i in range(60)
    ]
    cur = [
        {
            "id": f"c{i}",
            "timestamp": "2026-11-02T01:00:00Z",
            "labels": {"predicted": [unseen if i < 20 else seen]},
        }
        for i in range(60)
    ]
    traffic = _write(tmp_path / "t.jsonl", ref + cur)
    store = str(tmp_path / "s.duckdb")
    assert main(["monitor", "ingest", str(traffic), "--store", store, "-O", str(onto_path)]) == 0
    capsys.readouterr()
    argv = ["monitor", "drift", "--store", store, "--reference", "2026-11-01T00:00:00Z", "--format", "json"]
    assert main([*argv, "--golden", str(golden), "-O", str(onto_path)]) == 1
    r = json.loads(capsys.readouterr().out)
    (t,) = [t for t in r["tests"] if t["test"] == "new_concept"]
    # 0/60 -> 20/60 new: z = (1/3) / sqrt(1/6 * 5/6 * 2/60)
    assert t["details"]["share_current"] == pytest.approx(1 / 3) and t["details"]["share_reference"] == 0
    assert t["statistic"] == pytest.approx((1 / 3) / ((1 / 6) * (5 / 6) * (2 / 60)) ** 0.5)
    assert t["drift"] is True
    # the branch mix is the same branch in both windows: one category, insufficient evidence
    (mix,) = [t for t in r["tests"] if t["test"] == "branch_mix"]
    assert mix["p_value"] is None and mix["reason"].startswith("insufficient evidence")
