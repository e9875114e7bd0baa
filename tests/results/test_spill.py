"""Result columns spilled to a temporary file (``kg_rageval.results.colstore``): a streamed evaluation
past ``spill_rows`` rows keeps its numeric columns on disk and reads them back bit for bit, so
every number, row and report equals the in-memory path."""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path

import numpy as np
import pytest
from audit_stream_helpers import _report
from family_demo import family_inputs
from stream_helpers import _assert_same, _provenance_runs, demo  # noqa: F401 (demo: a fixture)

from kg_rageval.base.errors import KgRagevalError
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.colstore import ColumnStore, SpilledArray
from kg_rageval.results.columns import CodedColumn
from kg_rageval.results.concatenation import Concatenation
from kg_rageval.results.evaluation import Evaluation, concat_evaluations, take_rows
from kg_rageval.results.family import Family
from kg_rageval.results.metric import ratio
from kg_rageval.results.record_stats import RecordStats
from kg_rageval.scoring import REGISTRY, get_scorer


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def test_a_spilled_array_reads_back_its_bytes():
    store = ColumnStore()
    given = [
        np.array([True, False, True]),
        np.arange(300, dtype=np.uint16),
        np.array([-7, 0, 5], np.int8),
        np.array([0.1, -0.0, np.nan, np.inf, 2.0**-1074]),
        np.zeros(0),
        np.arange(5, dtype=np.int64),
    ]
    handles = [store.put(a) for a in given]
    assert store.size == sum(a.nbytes for a in given)
    for a, h in zip(given, handles):
        got = h.read()
        assert isinstance(h, SpilledArray) and len(h) == len(a) and h.nbytes == a.nbytes
        assert got.dtype == a.dtype and _bits(got) == _bits(a)  # -0.0 and NaN by their bits
        assert _bits(np.asarray(h)) == _bits(a)
        back = pickle.loads(pickle.dumps(h))  # a handle pickles as the array it holds (Dask)
        assert type(back) is np.ndarray and _bits(back) == _bits(a)
    h = handles[1]
    assert h[10:13].tolist() == [10, 11, 12] and h[[299, 3, 7]].tolist() == [299, 3, 7]
    assert h[-1] == 299 and type(h[0]) is np.uint16 and h[np.arange(300) % 100 == 0].tolist() == [0, 100, 200]
    assert h[::100].tolist() == [0, 100, 200] and h[np.array([], np.int64)].tolist() == []
    with pytest.raises(IndexError):
        h[[0, 300]]
    with pytest.raises(ValueError, match="numeric"):
        store.put(np.array(["a"], dtype=object))


def test_the_store_is_an_unnamed_file_in_the_temporary_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    store = ColumnStore()
    fd = store.fileno()
    assert os.fstat(fd).st_nlink == 0  # no name on disk: removed when closed or at exit
    if os.path.exists(f"/proc/self/fd/{fd}"):
        assert os.readlink(f"/proc/self/fd/{fd}").startswith(str(tmp_path))
    assert list(tmp_path.iterdir()) == []
    store.close()


class Toy(Family):
    name, version, stats = "toy_spill", "1", ("tp", "n_pred", "frac")

    def finalize(self, s):
        return {
            "precision": ratio("precision", s["tp"], s["n_pred"], missing="no predictions"),
            "frac": ratio("frac", s["frac"], s["n_pred"], missing="no predictions"),
        }


class Reordered(Toy):
    """A family whose ``complete`` puts the rows in another order (as reproducibility does)."""

    name = "toy_spill_reordered"

    def complete(self, ev):
        take_rows(ev, np.argsort(ev.stats["frac"], kind="stable"))


def _parts(family: Family, seed: int = 0) -> list[Evaluation]:
    """Five partitions whose columns store differently from one to the next: counts that fit
    one byte, then two; a fraction; a -0.0; a stat and a key only some partitions have; coded
    texts, numbers with a NaN key, dicts (an object column, kept in memory)."""
    rng = np.random.default_rng(seed)
    parts = []
    for k in range(5):
        rows = []
        for i in range(7):
            r = {
                "record_id": f"r{k}{i:02d}",
                "tp": int(rng.integers(0, 3 if k < 3 else 400)),
                "n_pred": 400,
                "slice:intent": str(rng.choice(["lookup", "compare"])),
                "gold_node": float(i % 3) if i else float("nan"),
                "why": str(rng.choice(["ok", "miss"])),
                "problem": {"k": int(i % 2)},
            }
            if k != 2:
                r["frac"] = float(rng.random()) if k != 1 else -0.0
            if k >= 3:
                r["slice:late"] = "x" if i % 2 else None
            rows.append(r)
        keys = ["slice:intent", "gold_node"] + (["slice:late"] if k >= 3 else [])
        parts.append(build_evaluation(family, rows, keys=keys, details=["why", "problem"]))
    return parts


def _concatenated(parts: list[Evaluation], spill_rows: int) -> tuple[Evaluation, Concatenation]:
    c = Concatenation(spill_rows=spill_rows)
    for p in parts:
        c.add(p)
    return c.result(), c


def _same_storage(got: Evaluation, want: Evaluation) -> None:
    for group in ("stats", "keys", "details"):
        g, w = getattr(got, group), getattr(want, group)
        assert list(g) == list(w)
        for name in w:
            x, y = g.raw(name), w.raw(name)
            assert type(x) is type(y), (group, name)
            if isinstance(y, CodedColumn):
                assert x.codes.dtype == y.codes.dtype and _bits(x.codes) == _bits(y.codes), name
                assert (x.values is None) == (y.values is None) and x.fresh == y.fresh
                if y.values is not None:
                    assert list(map(repr, x.values)) == list(map(repr, y.values))
            elif y.dtype == object:
                assert x.tolist() == y.tolist()
            else:
                assert x.dtype == y.dtype and _bits(x) == _bits(y), (group, name)


@pytest.mark.parametrize("family", [Toy(), Reordered()], ids=["toy", "complete_reorders"])
@pytest.mark.parametrize("spill_rows", [1, 10, 27, 34])
def test_a_spilled_concatenation_equals_the_in_memory_one(family, spill_rows):
    parts = _parts(family)
    want, _ = _concatenated(parts, 0)
    got, c = _concatenated(parts, spill_rows)
    assert not want.stats.store and c.spilled == (spill_rows < 35)
    if spill_rows < 35:
        assert got.stats.store is not None and got.stats.spilled_nbytes > 0
        assert all(got.stats.is_spilled(k) for k in got.stats)
        assert got.keys.is_spilled("slice:intent") and not got.details.is_spilled("problem")
        assert got.stats.nbytes == 0 and got.stats.spilled_nbytes == want.stats.nbytes
    assert want.stats.raw("frac").dtype == np.float64 and want.stats.raw("tp").dtype == np.uint16
    _same_storage(got, want)
    assert got.to_dict(rows=True, breakdowns=["slice:intent", "gold_node", "slice:late"]) == want.to_dict(
        rows=True, breakdowns=["slice:intent", "gold_node", "slice:late"]
    )
    assert repr(got.rows(limit=4)) == repr(want.rows(limit=4))  # a NaN key: compared by its text
    mask = np.arange(len(want)) % 3 == 0
    assert got.totals(mask) == want.totals(mask)
    assert got.subset(mask).to_dict(rows=True) == want.subset(mask).to_dict(rows=True)
    assert got.merge(got).to_dict(rows=True) == want.merge(want).to_dict(rows=True)
    assert concat_evaluations([got, want]).to_dict(rows=True) == concat_evaluations([want, want]).to_dict(
        rows=True
    )
    assert got.bootstrap(n_resamples=40, seed=3) == want.bootstrap(n_resamples=40, seed=3)
    ids, per = want.per_record_stats()
    ids2, per2 = got.per_record_stats()
    assert ids.tolist() == ids2.tolist() and all(_bits(per[k]) == _bits(per2[k]) for k in per)
    view = got.record_stats()  # the cached view keeps its summed columns in the same file
    for k in got.stats:
        assert _bits(view.column(k)) == _bits(per[k]) and _bits(view.column(k)) == _bits(per[k])
    assert _bits(view.probe_rows()) == _bits(want.record_stats().probe_rows())
    assert _bits(RecordStats(got, np.flatnonzero(mask)).matrix()) == _bits(
        RecordStats(want, np.flatnonzero(mask)).matrix()
    )
    rows = np.array([3, 4, 9])
    for group in ("stats", "keys", "details"):
        for k in getattr(want, group):
            x, y = getattr(got, group).take(k, rows), getattr(want, group).raw(k)[rows]
            assert np.asarray(x).tolist() == np.asarray(y).tolist()
    back = pickle.loads(pickle.dumps(got))  # Dask: a spilled evaluation travels as its arrays
    assert back.stats.store is None and back.stats.spilled_nbytes == 0
    _same_storage(back, want)
    assert back.to_dict(rows=True) == want.to_dict(rows=True)


def test_a_column_assigned_to_a_spilled_evaluation_goes_to_its_file():
    got, _ = _concatenated(_parts(Toy()), 1)
    before, tp = got.stats.store.size, got.stats["tp"]
    got.stats["tp"] = tp + 1
    assert got.stats.is_spilled("tp") and got.stats.store.size > before
    assert got.stats.raw("tp").dtype == np.uint16 and got.stats["tp"].tolist() == (tp + 1).tolist()
    copy = Evaluation(got.family, got.record_ids, got.stats, got.keys, got.details)  # stays on disk
    assert copy.stats.is_spilled("tp") and copy.to_dict(rows=True) == got.to_dict(rows=True)


def test_one_partition_is_never_spilled():
    part = _parts(Toy())[0]
    got, c = _concatenated([part], 1)
    assert got is part and not c.spilled and got.stats.store is None


# --------------------------------------------------------------------------- the audit
SIX = ("hierarchy", "linking", "retrieval", "conformance", "generation", "provenance")


def _run(out: Path, base: Path, onto_path: Path, spill_rows: int | None):
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.reports import write_reports
    from kg_rageval.audit.runner import run_audit

    mapping = {
        "name": "spill",
        "ontology": str(onto_path),
        "records": "records.jsonl",
        "corpus": "corpus.jsonl",
        "spec": "spec.yaml",
        "families": {f: {} for f in SIX},
        "chunk_size": 300,
        "gates": [
            "hierarchy.hierarchical_f1 >= 0.8",
            "ci_low(retrieval.recall@10) >= 0.8",
            "conformance.schema_validity >= 0.99",
            "ci_low(generation.faithfulness) >= 0.8",
            "linking.linking_macro_f1 >= 0.8",
            "provenance.citation_completeness >= 0.9",
        ],
        "slice_gates": {"intent=lookup": ["retrieval.mrr >= 0.5"]},
        "node_gates": {"TA0006": ["hierarchy.hierarchical_f1 >= 0.7"]},
        "missing_runs": {"budget": 0.05},
        "bootstrap": {"n_resamples": 100, "seed": 0},
    }
    if spill_rows is not None:
        mapping["spill_rows"] = spill_rows
    res = run_audit(config_from_mapping(mapping, base_dir=base), progress=False)
    write_reports(res, out)
    return res


@pytest.mark.slow
def test_a_spilled_audit_equals_the_in_memory_audit(generated_attack, tmp_path):
    base, onto_path = generated_attack
    held = _run(tmp_path / "memory", base, onto_path, 0)
    spilled = _run(tmp_path / "spilled", base, onto_path, 1)
    assert held.chunk_size == spilled.chunk_size == 300
    evs = [ev for run in spilled.families.values() for ev in run.evaluations]
    assert not any(ev.stats.store for run in held.families.values() for ev in run.evaluations)
    assert sum(ev.stats.store is not None for ev in evs) >= 10  # every family's large evaluations
    assert _report(tmp_path / "memory") == _report(tmp_path / "spilled")  # timings aside
    for name in ("report.md", "prov.ttl"):
        assert (tmp_path / "memory" / name).read_bytes() == (tmp_path / "spilled" / name).read_bytes(), name
    for fam, run in held.families.items():
        for a, b in zip(run.evaluations, spilled.families[fam].evaluations):
            assert a.to_dict(rows=True) == b.to_dict(rows=True), (fam, a.family.name)


def test_config_spill_rows(tmp_path):
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.base.errors import ConfigError

    base = {"name": "x", "ontology": "o.json", "records": "r.jsonl", "families": ["hierarchy"]}
    assert config_from_mapping(base, base_dir=tmp_path).spill_rows is None
    cfg = config_from_mapping({**base, "spill_rows": 0}, base_dir=tmp_path)
    assert cfg.spill_rows == 0
    # where the results are kept changes no number: not part of an in-memory config's hash
    assert cfg.content_hash == config_from_mapping(base, base_dir=tmp_path).content_hash
    with pytest.raises((ConfigError, ValueError)):
        config_from_mapping({**base, "spill_rows": -1}, base_dir=tmp_path)


# --------------------------------------------------------------------------- every family
@pytest.fixture()
def spill_everything(monkeypatch):
    """Every streamed evaluation of two chunks or more spills (the default ``spill_rows``: 1)."""
    import kg_rageval.results.concatenation as concatenation

    monkeypatch.setattr(concatenation, "SPILL_ROWS", 1)


def _spilled_members(result) -> int:
    return sum(ev.stats.store is not None for ev in result.values())


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_family_streamed_and_spilled_equals_the_whole_call(name, demo, spill_everything):
    bound = get_scorer(name).bind(demo["ontology"], **family_inputs(name, demo))
    try:
        whole = bound.score_whole(demo["path"])
    except KgRagevalError:  # no evidence in the demo: test_streaming checks the error
        return
    got = bound(demo["path"], chunk_size=7)
    _assert_same(got, whole)
    if get_scorer(name).streamable and any(len(ev) for ev in got.values()):  # rows to spill
        assert _spilled_members(got) >= 1, name


def test_reproducibility_reordered_in_its_file(demo, tmp_path, spill_everything):
    """Provenance with repeats: reproducibility's ``complete`` puts the rows in repeat order
    (``take_rows``) on the spilled result, in its file."""
    bound = get_scorer("provenance").bind(
        demo["ontology"], corpus=demo["inputs"]["corpus"], **_provenance_runs(demo, tmp_path)
    )
    whole = bound.score_whole(demo["path"])
    got = bound(demo["path"], chunk_size=3)
    rep = got["reproducibility"]
    assert rep.stats.store is not None and all(rep.stats.is_spilled(k) for k in rep.stats)
    _assert_same(got, whole)
    assert str(got["prov_trail"].meta["turtle"]) == str(whole["prov_trail"].meta["turtle"])
