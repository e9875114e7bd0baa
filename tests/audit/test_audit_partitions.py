"""The streamed audit partitioned over a Dask cluster (:mod:`kg_rageval.audit.partitions`):
the plan's byte ranges hold exactly the in-process chunks, the partitions' record indexes merge
to the whole file's, and ``run_audit(client=)`` gives the in-process reports byte for byte
(report.json without its seconds, report.md, prov.ttl) on the demo and on generated ATT&CK
records with every family — or, where partitions cannot be exact, the chunk-by-chunk path's
(a ``.gz`` file, a blank line the plan counted, a duplicate id across partitions, a reading
error in a later partition: the same error as in-process)."""

from __future__ import annotations

import gzip
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from audit_stream_helpers import _audit, _files, _report, _vehicle_records, _vehicles_config, _write

from kg_rageval.audit.config import config_from_mapping, load_config
from kg_rageval.audit.partitions import Span, plan_partitions
from kg_rageval.base.errors import InputError
from kg_rageval.records import iter_record_chunks

EVERY_FAMILY = ("hierarchy", "linking", "retrieval", "conformance", "generation", "provenance")


def _lines_file(path: Path) -> None:
    """10 records on 13 lines: blank lines 3, 7 (spaces) and 13 (the last)."""
    rows = []
    for i in range(10):
        rows.append(json.dumps({"id": f"r{i}"}))
        if i == 1:
            rows.append("")
        if i == 4:
            rows.append("   ")
    path.write_text("\n".join(rows) + "\n\n")


def test_plan_holds_the_in_process_chunks(tmp_path):
    p = tmp_path / "r.jsonl"
    _lines_file(p)
    spans = plan_partitions(p, 3, 2)
    assert spans is not None
    # 4 chunks (3, 3, 3, 1 records) in 2 partitions of 2 chunks; the second starts at r6, line 9
    assert [(s.lines, s.first_chunk, s.n_chunks, s.n_records) for s in spans] == [(0, 0, 2, 6), (8, 2, 2, 4)]
    assert spans[0].start == 0 and spans[0].end == spans[1].start and spans[1].end == p.stat().st_size
    whole = [[(r["id"], r["_line"]) for r in ch] for ch in iter_record_chunks(p, 3)]
    parts = [
        [(r["id"], r["_line"]) for r in ch]
        for s in spans
        for ch in iter_record_chunks(p, 3, span=s.read_span)
    ]
    assert parts == whole
    assert whole[2] == [("r6", 9), ("r7", 10), ("r8", 11)]
    # more partitions than chunks: one chunk each
    assert [s.n_records for s in plan_partitions(p, 3, 9) or []] == [3, 3, 3, 1]
    assert [s.n_chunks for s in plan_partitions(p, 4, 2) or []] == [2, 1]  # 3 chunks: round(1.5) = 2


def _reference_plan(path: Path, size: int) -> tuple[list[tuple[int, int]], int, int]:
    """The chunks' (byte offset, lines before) of the first record, records and bytes, by the
    reader's rule line by line (a record is a line ``bytes.strip()`` leaves non-empty)."""
    starts, n, pos = [], 0, 0
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh):
            if line.strip():
                if n % size == 0:
                    starts.append((pos, lineno))
                n += 1
            pos += len(line)
    return starts, n, pos


@pytest.mark.parametrize("block", [1, 2, 7, 64, 1 << 20])
def test_plan_blocks_count_records_as_the_reader(tmp_path, monkeypatch, block):
    """The plan's NumPy pass over blocks of whole lines finds the chunk starts the line-by-line
    rule finds, on files with blank lines, whitespace-only lines (space, tab, CR, VT, FF),
    records with leading spaces and with or without a last newline, at any block size."""
    import random

    from kg_rageval.audit import partitions

    monkeypatch.setattr(partitions, "PLAN_BLOCK", block)
    rnd = random.Random(block)
    for trial in range(60):
        rows = []
        for i in range(rnd.randint(2, 40)):
            u = rnd.random()
            if u < 0.15:
                rows.append(rnd.choice(["", " ", "\t", "\r", " \r", "\x0b", "\x0c "]))
            else:
                rows.append((" " if u < 0.25 else "") + json.dumps({"id": f"r{i}"}))
        p = tmp_path / f"t{trial}.jsonl"
        p.write_bytes(("\n".join(rows) + rnd.choice(["", "\n", "\n\n", " ", "\r\n"])).encode())
        for size in (1, 2, 3):
            starts, n, end = _reference_plan(p, size)
            spans = plan_partitions(p, size, 50)
            if len(starts) < 2:
                assert spans is None
                continue
            assert spans is not None  # one chunk a partition: every chunk start is a span's
            assert [(s.start, s.lines) for s in spans] == starts
            assert [s.end for s in spans] == [s[0] for s in starts[1:]] + [end]
            assert sum(s.n_records for s in spans) == n


def test_nothing_to_partition(tmp_path):
    p = tmp_path / "r.jsonl"
    _lines_file(p)
    assert plan_partitions(p, 10, 4) is None  # one chunk
    assert plan_partitions(p, 3, 1) is None
    gz = tmp_path / "r.jsonl.gz"
    gz.write_bytes(gzip.compress(p.read_bytes()))
    assert plan_partitions(gz, 3, 4) is None  # no byte ranges in a gzip stream
    (tmp_path / "e.jsonl").write_text("")
    assert plan_partitions(tmp_path / "e.jsonl", 3, 4) is None
    assert Span(5, 9, 2, 0, 1, 1).read_span == (5, 9, 2)


@pytest.fixture(scope="module")
def attack(generated_attack):
    """The session's 2,000 generated ATT&CK records and a config with every deterministic family."""
    out, onto_path = generated_attack
    mapping = {
        "name": "partitions",
        "ontology": str(onto_path),
        "records": "records.jsonl",
        "corpus": "corpus.jsonl",
        "spec": "spec.yaml",
        "families": {f: {} for f in EVERY_FAMILY},
        "gates": [
            "hierarchy.hierarchical_f1 >= 0.8",
            "ci_low(retrieval.recall@10) >= 0.8",
            "linking.linking_macro_f1 >= 0.8",
            "ci_low(generation.faithfulness) >= 0.8",
            "provenance.citation_completeness >= 0.9",
            "retrieval.filter_false_exclusion_rate <= 0.02",
        ],
        "slice_gates": {"intent=lookup": ["retrieval.mrr >= 0.5"]},
        "node_gates": {"TA0006": ["hierarchy.hierarchical_f1 >= 0.7"]},
        "bootstrap": {"n_resamples": 100, "seed": 0},
    }
    return out, mapping


def test_partition_indexes_merge_to_the_whole_file(attack):
    """Three partitions' :class:`StreamedRecords`, detached and pickled as a worker sends them,
    absorbed in order: the ids, lines, sections, slices, coverage and exclusions of one pass."""
    from kg_rageval.audit.family_runs import configured_families
    from kg_rageval.audit.inputs import load_inputs
    from kg_rageval.audit.stream import StreamedRecords

    out, mapping = attack
    cfg = config_from_mapping(mapping, base_dir=out)
    inputs = load_inputs(cfg, records=False)
    onto, corpus, names, path = (
        inputs["ontology"],
        inputs["corpus"],
        configured_families(cfg),
        out / "records.jsonl",
    )

    def index():
        return StreamedRecords(path, 150, names, onto, corpus, cfg)

    whole = index()
    for k, ch in enumerate(iter_record_chunks(path, 150)):
        whole.observe(k, ch)
    spans = plan_partitions(path, 150, 3)
    assert spans is not None and [s.n_chunks for s in spans] == [5, 4, 5]
    merged = index()
    for s in spans:
        part = index()
        for i, ch in enumerate(iter_record_chunks(path, 150, span=s.read_span)):
            part.observe(s.first_chunk + i, ch)
        part.detach()
        merged.absorb(pickle.loads(pickle.dumps(part)))
    assert len(merged) == len(whole) == 2000
    assert merged.id_array().tolist() == whole.id_array().tolist()
    assert merged.n_with_section == whole.n_with_section
    assert all(merged.with_section(f) == whole.with_section(f) for f in names)
    assert merged.slice_values() == whole.slice_values() == {"intent": {"lookup", "mitigation", "detection"}}
    assert merged.coverage(onto, corpus, cfg) == whole.coverage(onto, corpus, cfg)
    got = merged.exclusions({}, onto, corpus, cfg)
    assert got == whole.exclusions({}, onto, corpus, cfg)
    assert got["gold_documents"] == 4000  # two gold documents a record, every one in the corpus
    assert list(merged.records_of({"q001999", "q000000"})) == ["q000000", "q001999"]


@pytest.fixture()
def client(dask_client):
    pytest.importorskip("distributed")
    return dask_client  # the session's LocalCluster of two worker processes (tests/conftest.py)


def _on(client, config, size, out: Path, partitions=None):
    from kg_rageval.audit.reports import write_reports
    from kg_rageval.audit.runner import run_audit

    config.chunk_size = size
    res = run_audit(config, progress=False, client=client, partitions=partitions)
    write_reports(res, out)
    return res


def _stats():
    from kg_rageval.audit import partitions

    return partitions.LAST_STATS


def _reset():
    from kg_rageval.audit import partitions

    partitions.LAST_STATS = None


@pytest.mark.slow
def test_demo_audit_partitioned_equals_in_process(client, tmp_path, family_calls):
    """The demo (every family, a streamed baseline): 396 records in 4 partitions."""
    from kg_rageval.demo import build_demo

    demo = tmp_path / "demo"
    build_demo(demo, bootstrap=50, progress=False)
    _audit(load_config(demo / "audit.yaml"), 25, tmp_path / "local")
    family_calls["calls"] = 0
    _reset()
    res = _on(client, load_config(demo / "audit.yaml"), 25, tmp_path / "dask")
    st = _stats()
    assert st is not None and st.records == [100, 100, 100, 96]  # 16 chunks of 25 in 4 byte ranges
    assert res.chunk_size == 25
    assert _report(tmp_path / "dask") == _report(tmp_path / "local")
    assert _files(tmp_path / "dask") == _files(tmp_path / "local")
    assert {"report.md", "prov.ttl"} <= set(_files(tmp_path / "dask"))


@pytest.mark.slow
def test_generated_audit_partitioned_equals_in_process(client, attack, tmp_path, family_calls):
    """2,000 records, every deterministic family, chunks of 128 in 5 partitions: the reports and
    every evaluation's rows in record order, as in-process; no family call made here."""
    out, mapping = attack
    local = _audit(config_from_mapping(mapping, base_dir=out), 128, tmp_path / "local")
    family_calls["calls"] = 0
    _reset()
    res = _on(client, config_from_mapping(mapping, base_dir=out), 128, tmp_path / "dask", partitions=5)
    st = _stats()
    assert st is not None and len(st.records) == 5 and sum(st.records) == 2000
    assert family_calls["calls"] == 0  # every chunk scored on a worker
    assert _report(tmp_path / "dask") == _report(tmp_path / "local")
    assert _files(tmp_path / "dask") == _files(tmp_path / "local")
    for fam in EVERY_FAMILY:
        for a, b in zip(res.families[fam].evaluations, local.families[fam].evaluations, strict=True):
            assert list(a.record_ids) == list(b.record_ids), fam
            assert sorted(a.stats) == sorted(b.stats), fam
            assert all(np.array_equal(a.stats[k], b.stats[k]) for k in a.stats), fam
    ids = list(res.families["hierarchy"].evaluations[0].record_ids)
    assert ids[:2] == ["q000000", "q000001"] and ids[-1] == "q001999" and len(ids) == 2000
    # partitions=0: the chunk-by-chunk path, the same reports
    _reset()
    _on(client, config_from_mapping(mapping, base_dir=out), 128, tmp_path / "chunks", partitions=0)
    assert _stats() is None
    assert _report(tmp_path / "chunks") == _report(tmp_path / "local")


@pytest.mark.slow
def test_gate_bootstraps_on_the_workers_equal_in_process(client, attack, tmp_path, monkeypatch):
    """The bounded gates' bootstraps (recall@10 and faithfulness over the 2,000 records, 300
    resamples in blocks of 7: 43 blocks) with the blocks after the first on the cluster's two
    workers: the in-process intervals and reports byte for byte."""
    from kg_rageval.results import bootstrap, bootstrap_pool

    out, mapping = attack
    mapping = {**mapping, "bootstrap": {"n_resamples": 300, "seed": 5}}
    monkeypatch.setattr(bootstrap, "_BOOTSTRAP_CELLS", 1)
    monkeypatch.setattr(bootstrap, "_BOOTSTRAP_MIN_BLOCK", 7)
    monkeypatch.setattr(bootstrap, "_BOOTSTRAP_MAX_CELLS", 1 << 40)
    local = _audit(config_from_mapping(mapping, base_dir=out), 256, tmp_path / "local")
    pooled: list[bool] = []
    orig = bootstrap_pool.replicate_on_pool

    def spy(*a, **kw):
        pooled.append(orig(*a, **kw))
        return pooled[-1]

    monkeypatch.setattr(bootstrap_pool, "replicate_on_pool", spy)
    res = _on(client, config_from_mapping(mapping, base_dir=out), 256, tmp_path / "dask")
    assert pooled == [True]  # one pass over the weights for both gates, on the workers
    bounded = [k for k, m in res.metrics.items() if m.ci is not None]
    assert bounded and all(res.metrics[k].ci == local.metrics[k].ci for k in bounded)
    assert _report(tmp_path / "dask") == _report(tmp_path / "local")
    assert _files(tmp_path / "dask") == _files(tmp_path / "local")


def _vehicles(tmp_path: Path, records: list[dict], name: str = "records.jsonl") -> dict:
    _write(tmp_path / name, records)
    return {**_vehicles_config(tmp_path), "records": name}


@pytest.mark.slow
def test_where_partitions_cannot_be_exact(client, tmp_path):
    """A line the plan counts but the reader skips (U+00A0 only: blank to ``str.strip``), a
    ``.gz`` file: the chunk-by-chunk path, the in-process report."""
    recs = _vehicle_records(40, labels_from=3)
    mapping = _vehicles(tmp_path, recs)
    text = (tmp_path / "records.jsonl").read_text().splitlines(keepends=True)
    text.insert(5, "\u00a0\n")
    (tmp_path / "nbsp.jsonl").write_text("".join(text))
    (tmp_path / "records.jsonl.gz").write_bytes(gzip.compress((tmp_path / "records.jsonl").read_bytes()))
    ref = _audit(config_from_mapping(mapping, base_dir=tmp_path), 6, tmp_path / "held")
    assert ref.n_records == 40
    for name in ("nbsp.jsonl", "records.jsonl.gz", "records.jsonl"):
        _reset()
        _on(
            client,
            config_from_mapping({**mapping, "records": name}, base_dir=tmp_path),
            6,
            tmp_path / f"o-{name}",
        )
        assert (_stats() is not None) == (name == "records.jsonl"), name
        got = _report(tmp_path / f"o-{name}")
        want = _report(tmp_path / "held")
        for r in (got, want):
            r.pop("manifest", None)
            r["summary"].pop("records_file", None)
        assert got["gates"] == want["gates"] and got["metrics"] == want["metrics"], name


@pytest.mark.slow
def test_errors_in_a_later_partition_are_the_in_process_errors(client, tmp_path):
    """A duplicate id across partitions and a malformed line in the last one raise the
    in-process InputError (file and line)."""
    recs = _vehicle_records(40, labels_from=0)
    recs[35]["id"] = recs[2]["id"]
    mapping = _vehicles(tmp_path, recs, "dup.jsonl")
    with pytest.raises(InputError) as local:
        _audit(config_from_mapping(mapping, base_dir=tmp_path), 6)
    with pytest.raises(InputError) as dask:
        _on(client, config_from_mapping(mapping, base_dir=tmp_path), 6, tmp_path / "d")
    assert str(dask.value) == str(local.value)
    assert "duplicate record id 'r002' (first on line 3)" in str(local.value) and "line 36" in str(
        local.value
    )
    lines = "".join(json.dumps(r) + "\n" for r in _vehicle_records(40))
    (tmp_path / "bad.jsonl").write_text(lines + '{"id": "r99", \n')
    mapping = {**mapping, "records": "bad.jsonl"}
    with pytest.raises(InputError) as local:
        _audit(config_from_mapping(mapping, base_dir=tmp_path), 6)
    with pytest.raises(InputError) as dask:
        _on(client, config_from_mapping(mapping, base_dir=tmp_path), 6, tmp_path / "b")
    assert str(dask.value) == str(local.value) and "line 41" in str(local.value)


@pytest.mark.slow
def test_cli_dask_partitions(client, tmp_path, cli):
    """``--dask-partitions P`` (3 byte ranges; 0: chunk by chunk) gives the in-process JSON report."""
    import yaml
    from report_helpers import without_timings

    mapping = {**_vehicles(tmp_path, _vehicle_records(60, labels_from=5)), "chunk_size": 8}
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(yaml.safe_dump(mapping))
    base = ["audit", "-c", str(cfg), "-q", "--format", "json"]

    def report(extra):
        code, out, err = cli(base + extra)
        assert code in (0, 1), err
        return without_timings({k: v for k, v in json.loads(out).items() if k not in ("written", "manifest")})

    ref = report([])
    assert ref["summary"]["records"] == 60
    _reset()
    assert report(["--dask-scheduler", client.scheduler.address, "--dask-partitions", "3"]) == ref
    st = _stats()
    assert st is not None and st.records == [24, 16, 20]  # 8 chunks of 8 (the last 4): 3, 2, 3 chunks
    _reset()
    assert report(["--dask-scheduler", client.scheduler.address, "--dask-partitions", "0"]) == ref
    assert _stats() is None
    code, _, err = cli(base + ["--dask-partitions", "-1"])
    assert code == 2 and "dask-partitions" in err
