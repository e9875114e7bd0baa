"""A streamed audit (the records file read once in chunks, fed to every family and to the
audit-level accumulations: :mod:`kg_rageval.audit.stream`) equals the held audit (every record
in one list): ``report.json`` (every section, timings aside), the other reports, the errors
(file, line, field, and which error comes first), at tiny chunk sizes, on the bundled demo
(with its baseline) and on generated ATT&CK records (``benchmarks/bench_audit.py``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from audit_stream_helpers import (  # noqa: F401 (shared with other tests)
    ROOT,
    STREAMABLE,
    _audit,
    _files,
    _report,
    _vehicle_records,
    _vehicles_config,
    _write,
)
from report_helpers import without_timings  # tests/ is on sys.path

from kg_rageval.audit.config import config_from_mapping, load_config
from kg_rageval.base.errors import KgRagevalError
from kg_rageval.scoring import REGISTRY, BoundScorer

pytestmark = pytest.mark.slow  # whole audits streamed and held, over the demo and generated ATT&CK (~40 s)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from kg_rageval.demo import build_demo

    out = tmp_path_factory.mktemp("astream_demo")
    build_demo(out, bootstrap=50, progress=False)
    return out


def _demo_config(demo: Path, families=STREAMABLE):
    cfg = load_config(demo / "audit.yaml")
    cfg.families = {f: dict(cfg.families.get(f) or {}) for f in families}
    return cfg


@pytest.fixture()
def streams(monkeypatch):
    """Counts the streamed passes and the family calls."""
    from kg_rageval.scoring import bound

    n = {"streams": 0, "calls": 0}
    orig_stream, orig_call = bound.stream_families, BoundScorer._call

    def stream(*a, **k):
        n["streams"] += 1
        return orig_stream(*a, **k)

    def call(self, records, ontology):
        n["calls"] += 1
        return orig_call(self, records, ontology)

    monkeypatch.setattr(bound, "stream_families", stream)
    import kg_rageval.scoring as contract

    monkeypatch.setattr(contract, "stream_families", stream)
    monkeypatch.setattr(BoundScorer, "_call", call)
    return n


# ---------------------------------------------------------------------- equality
def test_streamed_demo_audit_equals_held(demo, tmp_path, streams):
    """The demo with its baseline (paired deltas, per-query regressions), slices, node gates,
    coverage branches and filter exclusions: identical reports at every chunk size."""
    held = _audit(_demo_config(demo), 0, tmp_path / "held")
    assert held.chunk_size is None and streams["streams"] == 0
    ref, files = _report(tmp_path / "held"), _files(tmp_path / "held")
    recs = [json.loads(line) for line in (demo / "records.jsonl").read_text().splitlines()]
    base = [json.loads(line) for line in (demo / "baseline.jsonl").read_text().splitlines()]
    assert (
        ref["summary"]["records"] == 396
        and ref["failing_records"]
        and ref["exclusions"]["gold_documents"] > 0
    )
    assert ref["baseline"]["pairing"] and ref["coverage"]["n_cells"] > 0
    for size in (3, 7, 64, 10_000):
        streams["calls"] = 0
        res = _audit(_demo_config(demo), size, tmp_path / f"s{size}")
        assert res.chunk_size == size
        assert _report(tmp_path / f"s{size}") == ref, size
        assert _files(tmp_path / f"s{size}") == files, size
        # a call per chunk and family on the chunks with its section (one more where a chunk
        # without evidence joins the next), the candidate's and the baseline's (streamed too)
        chunks = [rs[i : i + size] for rs in (recs, base) for i in range(0, len(rs), size)]
        with_section = sum(any(REGISTRY[f].has_section(r) for r in ch) for ch in chunks for f in STREAMABLE)
        assert with_section <= streams["calls"] <= with_section + len(chunks) // 20 + 2, size
    assert streams["streams"] == 8  # the candidate's and the baseline's records, at each size


def test_every_family_streams_when_declared_streamable(demo, tmp_path, monkeypatch):
    """With every family declared streamable (as conformance, generation and provenance are
    becoming), the full demo audit streams and its report.json equals the held one; today's
    declarations hold the records (a family that is not streamable keeps the held path)."""
    cfg = load_config(demo / "audit.yaml")
    held = _audit(cfg, 0, tmp_path / "held")
    ref = _report(tmp_path / "held")
    res = _audit(load_config(demo / "audit.yaml"), 5, tmp_path / "declared")
    all_streamable = all(REGISTRY[f].streamable for f in cfg.families)
    assert (res.chunk_size == 5) == all_streamable
    assert _report(tmp_path / "declared") == ref
    if all_streamable:
        assert _files(tmp_path / "declared") == _files(tmp_path / "held")  # prov.ttl included
    for name in cfg.families:
        monkeypatch.setitem(REGISTRY, name, dataclasses.replace(REGISTRY[name], streamable=True))
    res = _audit(load_config(demo / "audit.yaml"), 5, tmp_path / "forced")
    assert res.chunk_size == 5 and held.chunk_size is None
    assert _report(tmp_path / "forced") == ref


@pytest.fixture(scope="module")
def attack(generated_attack):
    """The session's 2,000 generated ATT&CK records (tests/conftest.py) and a config for them."""
    out, onto_path = generated_attack
    mapping = {
        "name": "stream",
        "ontology": str(onto_path),
        "records": "records.jsonl",
        "corpus": "corpus.jsonl",
        "spec": "spec.yaml",
        "families": {f: {} for f in STREAMABLE},
        "gates": [
            "hierarchy.hierarchical_f1 >= 0.8",
            "ci_low(retrieval.recall@10) >= 0.8",
            "retrieval.filter_false_exclusion_rate <= 0.02",
            "linking.linking_macro_f1 >= 0.8",
        ],
        "slice_gates": {"intent=lookup": ["retrieval.mrr >= 0.5"]},
        "node_gates": {"TA0006": ["hierarchy.hierarchical_f1 >= 0.7"]},
        "missing_runs": {"budget": 0.05},
        "bootstrap": {"n_resamples": 100, "seed": 0},
    }
    return out, mapping


def test_streamed_attack_audit_equals_held(attack, tmp_path):
    out, mapping = attack
    _audit(config_from_mapping(mapping, base_dir=out), 0, tmp_path / "held")
    ref = _report(tmp_path / "held")
    assert ref["summary"]["records"] == 2000 and any(f["records"] for f in ref["failing_records"])
    for size in (97, 1000):
        res = _audit(config_from_mapping(mapping, base_dir=out), size, tmp_path / f"s{size}")
        assert res.chunk_size == size
        assert _report(tmp_path / f"s{size}") == ref, size
        assert _files(tmp_path / f"s{size}") == _files(tmp_path / "held")


def test_failing_records_are_read_again_by_line(attack, tmp_path, monkeypatch):
    """A streamed audit lists the records driving a failure from the file (by line number):
    the entries carry the record's query, gold and prediction as the held audit shows them."""
    import kg_rageval.records as records_mod

    out, mapping = attack
    mapping = {**mapping, "gates": ["hierarchy.hierarchical_f1 >= 0.99"], "slice_gates": {}, "node_gates": {}}
    read = []
    orig = records_mod.read_records_at

    def spy(path, lines):
        lines = list(lines)
        read.append(lines)
        return orig(path, lines)

    monkeypatch.setattr(records_mod, "read_records_at", spy)
    held = _audit(config_from_mapping(mapping, base_dir=out), 0)
    got = _audit(config_from_mapping(mapping, base_dir=out), 128)
    assert held.failing == got.failing
    entries = got.failing[0]["records"]
    assert len(entries) == 10 and all(e["query"] and e["gold"] and e["prediction"] for e in entries)
    assert len(read) == 1 and len(read[0]) == 10  # only the records shown were parsed again


# ---------------------------------------------------------------------- records without evidence


def test_leading_records_without_the_section_and_a_family_without_evidence(tmp_path, streams):
    """The first 25 records have no ``labels``: the hierarchy family is not called on the chunks
    without its section, which are read again and scored with the first chunk that has it (its
    ``no_section`` unscored entries as the held call lists them); the relations family, whose
    section no record has, is never called (``no_evidence``)."""
    _write(tmp_path / "records.jsonl", _vehicle_records(60, labels_from=25))
    mapping = _vehicles_config(tmp_path)
    _audit(config_from_mapping(mapping, base_dir=tmp_path), 0, tmp_path / "held")
    ref = _report(tmp_path / "held")
    assert ref["families"]["relations"]["status"] == "no_evidence"
    assert ref["families"]["hierarchy"]["with_section"] == 35
    for size in (4, 10, 30):
        streams["calls"] = 0
        res = _audit(config_from_mapping(mapping, base_dir=tmp_path), size, tmp_path / f"s{size}")
        assert res.chunk_size == size
        assert _report(tmp_path / f"s{size}") == ref, size
        assert streams["calls"] == -(-60 // size) - 25 // size, size  # hierarchy only, from its first chunk


def test_no_record_with_any_section(tmp_path):
    _write(tmp_path / "records.jsonl", _vehicle_records(12, labels_from=99))
    mapping = {**_vehicles_config(tmp_path), "gates": ["hierarchy.hierarchical_f1 >= 0.9"]}
    held = _audit(config_from_mapping(mapping, base_dir=tmp_path), 0, tmp_path / "held")
    got = _audit(config_from_mapping(mapping, base_dir=tmp_path), 5, tmp_path / "s5")
    assert got.chunk_size == 5 and held.n_records == got.n_records == 12
    assert _report(tmp_path / "s5") == _report(tmp_path / "held")
    assert _report(tmp_path / "s5")["families"]["hierarchy"]["status"] == "no_evidence"


# ---------------------------------------------------------------------- errors
def _error(mapping: dict, base: Path, size: int) -> str:
    with pytest.raises(KgRagevalError) as got:
        _audit(config_from_mapping(mapping, base_dir=base), size)
    return f"{type(got.value).__name__}: {got.value}"


@pytest.mark.parametrize(
    "case",
    [
        "bad_json",
        "duplicate_id",
        "unknown_gold",
        "bad_labels",
        "bad_json_and_bad_gate",
        "unknown_gold_and_bad_gate",
        "no_corpus",
    ],
)
def test_errors_are_the_held_audit_errors(case, tmp_path):
    """The same error, naming the same file, line and field, as the held audit raises — also
    which one comes first when there are several (records, then gates, then families)."""
    recs = _vehicle_records(40)
    lines = [json.dumps(r) for r in recs]
    mapping = _vehicles_config(tmp_path)
    if case.startswith("bad_json"):
        lines[33] = '{"id": "r033", "labels": {"gold": ["sedan"]'
    if case == "duplicate_id":
        lines[37] = json.dumps({**recs[37], "id": "r002"})
    if case.startswith("unknown_gold"):
        lines[31] = json.dumps({**recs[31], "labels": {"gold": ["spaceship"], "pred": ["sedan"]}})
    if case == "bad_labels":
        lines[29] = json.dumps({**recs[29], "labels": {"gold": "sedan", "pred": 7}})
    if case.endswith("bad_gate"):
        mapping["gates"] = ["hierarchy.hierarchical_f1[slice:intent=c] >= 0.5"]
    if case == "no_corpus":
        mapping["corpus"] = "nowhere.jsonl"
        lines[33] = "not json"
    (tmp_path / "records.jsonl").write_text("\n".join(lines) + "\n")
    held = _error(mapping, tmp_path, 0)
    assert "records.jsonl" in held or "gate" in held
    for size in (4, 16):
        assert _error(mapping, tmp_path, size) == held, (case, size)


def test_an_error_in_a_family_falls_back_to_the_held_audit(tmp_path, monkeypatch):
    """A family that raises a bug on a chunk is reported as the held audit reports it (status
    ``error`` with the whole-file traceback), the audit holding its records."""
    _write(tmp_path / "records.jsonl", _vehicle_records(30))
    mapping = _vehicles_config(tmp_path)
    import importlib

    module, _, fn = REGISTRY["hierarchy"].target.partition(":")
    mod = importlib.import_module(module)
    real = getattr(mod, fn)

    def flaky(ontology, records, **kw):
        if any(r["id"] == "r020" for r in records):
            raise RuntimeError(f"boom on {len(records)} records")
        return real(ontology, records, **kw)

    monkeypatch.setattr(mod, fn, flaky)
    held = _audit(config_from_mapping(mapping, base_dir=tmp_path), 0)
    got = _audit(config_from_mapping(mapping, base_dir=tmp_path), 8)
    assert held.families["hierarchy"].status == got.families["hierarchy"].status == "error"
    assert got.families["hierarchy"].reason == held.families["hierarchy"].reason
    assert "boom on 30 records" in got.families["hierarchy"].reason
    assert got.chunk_size is None  # fell back: held


# ---------------------------------------------------------------------- the CLI and the config
def test_cli_chunk_size(demo, tmp_path, cli):
    cfg = tmp_path / "audit.yaml"
    text = (demo / "audit.yaml").read_text()
    for name in ("conformance", "generation", "provenance"):
        text = text.replace(f"  {name}: {{}}\n", "")
    text = "\n".join(
        line
        for line in text.splitlines()
        if not line.startswith(("- conformance", "- generation", "- provenance"))
    )
    cfg.write_text(
        text.replace("records: records.jsonl", f"records: {demo / 'records.jsonl'}")
        .replace("ontology: doid-cancer-slim.obo", f"ontology: {demo / 'doid-cancer-slim.obo'}")
        .replace("corpus: corpus.jsonl", f"corpus: {demo / 'corpus.jsonl'}")
        .replace("spec: schema.yaml", f"spec: {demo / 'schema.yaml'}")
        .replace("records: baseline.jsonl", f"records: {demo / 'baseline.jsonl'}")
        .replace("- run-manifest.json", f"- {demo / 'run-manifest.json'}")
    )
    outs = {}
    for size in ("0", "11"):
        code, out, err = cli(
            [
                "audit",
                "-c",
                str(cfg),
                "-q",
                "--format",
                "json",
                "--chunk-size",
                size,
                "-o",
                str(tmp_path / f"out{size}"),
            ]
        )
        assert code in (0, 1), err
        outs[size] = without_timings(
            {k: v for k, v in json.loads(out).items() if k not in ("written", "manifest")}
        )
    assert outs["0"] == outs["11"]
    code, _, err = cli(["audit", "-c", str(cfg), "-q", "--chunk-size", "-1"])
    assert code == 2 and "chunk-size" in err


def test_config_chunk_size_is_checked(tmp_path):
    from kg_rageval.base.errors import ConfigError

    mapping = {**_vehicles_config(tmp_path), "chunk_size": -3}
    with pytest.raises(ConfigError, match="chunk_size"):
        config_from_mapping(mapping, base_dir=tmp_path)


def test_read_records_at(tmp_path):
    from kg_rageval.records import read_records, read_records_at

    _write(tmp_path / "r.jsonl", _vehicle_records(9))
    text = (tmp_path / "r.jsonl").read_text().replace("\n", "\n\n", 2)  # blank lines keep their numbers
    (tmp_path / "r.jsonl").write_text(text)
    whole = {r["_line"]: r for r in read_records(tmp_path / "r.jsonl")}
    got = read_records_at(tmp_path / "r.jsonl", [11, 3, 5])
    assert sorted(got) == [3, 5, 11] and all(got[k] == whole[k] for k in got)
    assert got[11]["id"] == "r008"


def test_positive_records_equal_the_per_record_sums():
    """The missing-run count's records from the nonzero rows only = from every record's sums."""
    import numpy as np

    from kg_rageval.audit.missing_runs import _positive_records
    from kg_rageval.results.evaluation import Evaluation
    from kg_rageval.results.family import Family

    class F(Family):
        name = "f"

        def finalize(self, sums):
            return {}

    rng = np.random.default_rng(3)
    ids = np.array([f"r{i}" for i in rng.integers(0, 300, 2000)], dtype=object)
    for values in (
        rng.integers(0, 2, 2000) * (rng.random(2000) < 0.1),
        rng.random(2000) < 0.05,
        np.where(rng.random(2000) < 0.2, rng.normal(size=2000), 0.0),
        np.zeros(2000),
    ):
        ev = Evaluation(family=F(), record_ids=ids, stats={"n_missing_run": values})
        rid, per = ev.per_record_stats()
        assert _positive_records(ev, "n_missing_run") == rid[per["n_missing_run"] > 0].tolist()
