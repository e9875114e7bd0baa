"""The streamed audit with its families' chunk calls made on a Dask cluster
(``run_audit(client=...)``, ``kg_rageval.scoring.stream_families(..., client=)``) equals the
in-process audit: ``report.json`` (timings aside) and the other reports, on the bundled demo,
on 2,000 generated ATT&CK records (``benchmarks/bench_audit.py``) and where chunks lack a
family's section or its evidence; a call that raises on a worker is made again in-process."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_stream_helpers import (
    STREAMABLE,
    _audit,
    _files,
    _report,
    _vehicle_records,
    _vehicles_config,
    _write,
)

from kg_rageval.audit.config import config_from_mapping, load_config

pytest.importorskip("distributed")
pytestmark = pytest.mark.slow  # a LocalCluster of two worker processes


@pytest.fixture()
def client(dask_client):
    return dask_client  # the session's LocalCluster (tests/conftest.py)


def _on(client, config, size, out: Path):
    from kg_rageval.audit.reports import write_reports

    config.chunk_size = size
    res = run_audit_client(config, client)
    write_reports(res, out)
    return res


def run_audit_client(config, client):
    from kg_rageval.audit.runner import run_audit

    return run_audit(config, progress=False, client=client)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from kg_rageval.demo import build_demo

    out = tmp_path_factory.mktemp("adask_demo")
    build_demo(out, bootstrap=50, progress=False)
    return out


def _demo_config(demo: Path):
    cfg = load_config(demo / "audit.yaml")
    cfg.families = {f: dict(cfg.families.get(f) or {}) for f in STREAMABLE}
    return cfg


def test_demo_audit_on_cluster_equals_in_process(client, demo, tmp_path, family_calls):
    for size in (7, 64):
        family_calls["calls"] = 0
        _audit(_demo_config(demo), size, tmp_path / f"l{size}")
        ref, files, in_process = (
            _report(tmp_path / f"l{size}"),
            _files(tmp_path / f"l{size}"),
            family_calls["calls"],
        )
        assert ref["summary"]["records"] == 396
        family_calls["calls"] = 0
        res = _on(client, _demo_config(demo), size, tmp_path / f"d{size}")
        assert res.chunk_size == size
        assert _report(tmp_path / f"d{size}") == ref, size
        assert _files(tmp_path / f"d{size}") == files, size
        # the candidate's and the baseline's chunks went to the workers, but the few that join
        # a chunk without evidence
        assert family_calls["calls"] <= in_process // 4, (size, in_process, family_calls)


def test_worker_errors_are_scored_in_process(client, demo, tmp_path, family_calls, monkeypatch):
    """Every worker call "raises" (returns nothing): each chunk is scored here instead, the same
    report."""
    from kg_rageval.scoring import stream

    _audit(_demo_config(demo), 50, tmp_path / "local")
    monkeypatch.setattr(stream, "_score_chunk", lambda bound, ontology, records: None)
    family_calls["calls"] = 0
    _on(client, _demo_config(demo), 50, tmp_path / "failed")
    assert _report(tmp_path / "failed") == _report(tmp_path / "local")
    assert family_calls["calls"] >= 3 * (396 // 50)


@pytest.fixture(scope="module")
def attack(generated_attack):
    """The session's 2,000 generated ATT&CK records (tests/conftest.py) and a config for them."""
    out, onto_path = generated_attack
    mapping = {
        "name": "dask",
        "ontology": str(onto_path),
        "records": "records.jsonl",
        "corpus": "corpus.jsonl",
        "spec": "spec.yaml",
        "families": {f: {} for f in STREAMABLE},
        "gates": [
            "hierarchy.hierarchical_f1 >= 0.8",
            "ci_low(retrieval.recall@10) >= 0.8",
            "linking.linking_macro_f1 >= 0.8",
        ],
        "slice_gates": {"intent=lookup": ["retrieval.mrr >= 0.5"]},
        "node_gates": {"TA0006": ["hierarchy.hierarchical_f1 >= 0.7"]},
        "bootstrap": {"n_resamples": 100, "seed": 0},
    }
    return out, mapping


def test_generated_audit_on_cluster_equals_in_process(client, attack, tmp_path, family_calls):
    out, mapping = attack
    _audit(config_from_mapping(mapping, base_dir=out), 300, tmp_path / "local")
    ref = _report(tmp_path / "local")
    assert ref["summary"]["records"] == 2000
    family_calls["calls"] = 0
    res = _on(client, config_from_mapping(mapping, base_dir=out), 300, tmp_path / "dask")
    assert res.chunk_size == 300 and family_calls["calls"] == 0  # every call on the workers
    assert _report(tmp_path / "dask") == ref
    assert _files(tmp_path / "dask") == _files(tmp_path / "local")


def test_chunks_without_the_section_or_evidence(client, tmp_path, family_calls):
    """The first 25 records have no labels (those chunks are not submitted and join the first
    one with the section, scored here); relations has no section anywhere."""
    _write(tmp_path / "records.jsonl", _vehicle_records(60, labels_from=25))
    mapping = _vehicles_config(tmp_path)
    _audit(config_from_mapping(mapping, base_dir=tmp_path), 0, tmp_path / "held")
    ref = _report(tmp_path / "held")
    assert ref["families"]["relations"]["status"] == "no_evidence"
    for size in (4, 30):
        family_calls["calls"] = 0
        _on(client, config_from_mapping(mapping, base_dir=tmp_path), size, tmp_path / f"s{size}")
        assert _report(tmp_path / f"s{size}") == ref, size
        assert family_calls["calls"] == (1 if 25 // size else 0), size  # the joined batch only


def test_cli_dask_options(client, tmp_path, cli):
    """``--dask-scheduler ADDRESS`` (this module's cluster) and ``--dask-workers N`` (a local
    cluster started for the run) give the in-process JSON report; both at once, or without
    streaming chunks to send, are plain runs or clear errors."""
    import json

    import yaml

    _write(tmp_path / "records.jsonl", _vehicle_records(60, labels_from=5))
    mapping = {**_vehicles_config(tmp_path), "chunk_size": 8}
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(yaml.safe_dump(mapping))
    base = ["audit", "-c", str(cfg), "-q", "--format", "json"]

    def report(extra):
        code, out, err = cli(base + extra)
        assert code in (0, 1), err
        from report_helpers import without_timings

        return without_timings({k: v for k, v in json.loads(out).items() if k not in ("written", "manifest")})

    ref = report([])
    assert ref["summary"]["records"] == 60
    assert report(["--dask-scheduler", client.scheduler.address]) == ref
    assert report(["--dask-workers", "1"]) == ref
    code, _, err = cli(base + ["--dask-workers", "1", "--dask-scheduler", client.scheduler.address])
    assert code == 2 and "not both" in err
    code, _, err = cli(base + ["--dask-workers", "0"])
    assert code == 2 and "dask-workers" in err


def test_full_demo_audit_on_cluster(client, demo, tmp_path):
    """Every family of the demo (conformance, generation and provenance too, when streamable):
    report.json and the other reports, prov.ttl included, as in-process."""
    res = _audit(load_config(demo / "audit.yaml"), 100, tmp_path / "local")
    on = _on(client, load_config(demo / "audit.yaml"), 100, tmp_path / "dask")
    assert on.chunk_size == res.chunk_size == 100  # every family streamable: streamed
    assert _report(tmp_path / "dask") == _report(tmp_path / "local")
    assert _files(tmp_path / "dask") == _files(tmp_path / "local")
