"""Shared test fixtures.

``shared_data`` points at ``../shared/data`` (real ontologies for integration tests); tests
that need it are marked ``shared_data`` and skip with a reason when it is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

try:  # imported once, up front: pytester's in-process runs (tests/plugin/test_pytest_plugin.py) drop
    import pandas  # noqa: F401  modules first imported inside them, and pandas' C extension
except ImportError:  # breaks when imported a second time in one process ("dtype str ...")
    pass

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def _cache_key_home(tmp_path_factory):
    """Compiled caches written by the tests are keyed with a key in a temporary config folder,
    never in the user's ``~/.config`` (``kg_rageval.base.machine_key``)."""
    import os

    old = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("config"))
    yield
    if old is None:
        os.environ.pop("XDG_CONFIG_HOME", None)
    else:
        os.environ["XDG_CONFIG_HOME"] = old


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture()
def stub():
    """The audit's stub family (``kg_rageval.audit.stub``, scores ``labels``) for one test."""
    from kg_rageval.audit.families import FamilySpec, register_family, unregister_family

    register_family(FamilySpec("stub", "kg_rageval.audit.stub:score_stub", ("labels",)))
    yield
    unregister_family("stub")


@pytest.fixture()
def workdir(tmp_path):
    """A copy of ``fixtures/audit`` (vehicles taxonomy, records, configs) to audit in."""
    import shutil

    for f in (FIXTURES / "audit").iterdir():
        shutil.copy(f, tmp_path / f.name)
    return tmp_path


@pytest.fixture()
def cli(capsys):
    """Run ``kg-rageval`` in-process: ``cli(args) -> (exit code, stdout, stderr)``."""
    from kg_rageval.cli.main import main

    def run(args):
        code = main(list(args))
        cap = capsys.readouterr()
        return code, cap.out, cap.err

    return run


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"../shared/data is absent ({SHARED_DATA}); real-ontology tests skipped")
    return SHARED_DATA


@pytest.fixture(scope="session")
def vehicles():
    """The seed article's vehicle taxonomy with one multi-parent node.

    vehicle ─┬─ car ─┬─ sedan
             │       ├─ hatchback
             │       └─ amphibious_car ─┐
             └─ boat ─┬─ submarine      │
                      └─────────────────┘ (amphibious_car has parents car and boat)
    """
    from kg_rageval.ontology import OntologyBuilder

    b = OntologyBuilder("vehicles")
    for node_id, label in [
        ("vehicle", "Vehicle"),
        ("car", "Car"),
        ("sedan", "Sedan"),
        ("hatchback", "Hatchback"),
        ("boat", "Boat"),
        ("submarine", "Submarine"),
        ("amphibious_car", "Amphibious car"),
    ]:
        b.add_node(node_id, label=label)
    for child, parent in [
        ("car", "vehicle"),
        ("sedan", "car"),
        ("hatchback", "car"),
        ("boat", "vehicle"),
        ("submarine", "boat"),
        ("amphibious_car", "car"),
        ("amphibious_car", "boat"),
    ]:
        b.add_edge(child, parent)
    return b.build()


@pytest.fixture(autouse=True)
def _family_registry_restored():
    """Families a test registers (stubs, a pytester conftest run in-process) never leak into
    the next test: the registry is restored after each one."""
    from kg_rageval.scoring.registry import REGISTRY

    saved = dict(REGISTRY)
    yield
    REGISTRY.clear()
    REGISTRY.update(saved)


@pytest.fixture(scope="session")
def dask_client():
    """One ``LocalCluster`` of two one-thread worker processes for the whole session (the
    Dask family and audit tests share it: starting one costs seconds); skipped without the
    ``dask`` extra or where processes cannot be spawned."""
    pytest.importorskip("distributed")
    from kg_rageval.integrations.dask import local_client

    try:
        c = local_client(n_workers=2, threads_per_worker=1)
    except Exception as exc:  # pragma: no cover - sandbox without process spawning
        pytest.skip(f"cannot start a LocalCluster: {exc}")
    yield c
    cluster = c.cluster
    c.close()
    cluster.close()


GENERATED_ATTACK_RECORDS = 2000


@pytest.fixture(scope="session")
def generated_attack(tmp_path_factory):
    """``(folder, ontology path)``: 2,000 generated ATT&CK records with every section, their
    corpus and spec (``benchmarks/bench_audit.py``'s ``generate``, seed 0), made once per
    session for the audit tests that compare two ways of running it."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_audit import generate
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from kg_rageval.ontology import load_ontology

    out = tmp_path_factory.mktemp("generated_attack")
    onto_path = ROOT / "ontologies" / "enterprise-attack-18.1.json.gz"
    generate(load_ontology(onto_path), GENERATED_ATTACK_RECORDS, 0, out)
    return out, onto_path


@pytest.fixture()
def family_calls(monkeypatch):
    """Counts the family calls of every bound scorer made in this process (``n["calls"]``;
    a Dask worker's calls are not counted)."""
    from kg_rageval.scoring import BoundScorer

    n = {"calls": 0}
    orig = BoundScorer._call

    def counted(self, records, ontology):
        n["calls"] += 1
        return orig(self, records, ontology)

    monkeypatch.setattr(BoundScorer, "_call", counted)
    return n


@pytest.fixture()
def held_calls(monkeypatch):
    """Counts the baseline audits that held the baseline's records."""
    from kg_rageval.audit import paired_baseline

    n = {"held": 0}
    orig = paired_baseline._baseline_held

    def counted(*a, **k):
        n["held"] += 1
        return orig(*a, **k)

    monkeypatch.setattr(paired_baseline, "_baseline_held", counted)
    return n
