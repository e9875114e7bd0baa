"""A streamed baseline (the baseline's records read once in chunks through the families, like
the audited records; :func:`kg_rageval.audit.paired_baseline._baseline_streamed`) equals the held one
(``read_records`` + :func:`~kg_rageval.audit.family_runs.run_families`): pairing, deltas and their
paired intervals, per-query deltas, gates, every report — on generated ATT&CK records
(``benchmarks/bench_audit.py``'s ``generate`` and ``perturb``) whose two files do not hold the
same ids."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from report_helpers import without_timings  # tests/ is on sys.path

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.reports import write_reports
from kg_rageval.audit.runner import run_audit
from kg_rageval.families.hierarchy import score_hierarchy
from kg_rageval.ontology import load_ontology

pytestmark = pytest.mark.slow  # baseline audits streamed and held over generated ATT&CK (~17 s)


ROOT = Path(__file__).resolve().parents[2]
FAMILIES = ("hierarchy", "linking", "retrieval", "conformance", "generation", "provenance")
ONLY_BASELINE = {"q000003", "q000500", "q001999"}  # the candidate lacks them
ONLY_CANDIDATE = {"q000010", "q001234"}  # the baseline lacks them


@pytest.fixture(scope="module")
def data(generated_attack, tmp_path_factory):
    """The session's 2,000 generated records as the candidate (but 3 of them) and their perturbed
    copy as the baseline (but 2 others)."""
    src, onto_path = generated_attack
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_audit import perturb
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    d = tmp_path_factory.mktemp("baseline_stream")
    assert perturb(src / "records.jsonl", d / "perturbed.jsonl", seed=1) > 400
    for name, source, left_out in (
        ("cand.jsonl", src / "records.jsonl", ONLY_BASELINE),
        ("base.jsonl", d / "perturbed.jsonl", ONLY_CANDIDATE),
    ):
        lines = [ln for ln in source.read_text().splitlines() if json.loads(ln)["id"] not in left_out]
        (d / name).write_text("\n".join(lines) + "\n")
    for name in ("corpus.jsonl", "spec.yaml"):
        (d / name).write_bytes((src / name).read_bytes())
    return d, onto_path


def _mapping(d: Path, onto_path: Path, families=FAMILIES, **baseline) -> dict:
    return {
        "name": "baseline-stream",
        "ontology": str(onto_path),
        "records": "cand.jsonl",
        "corpus": "corpus.jsonl",
        "spec": "spec.yaml",
        "families": {f: {} for f in families},
        "gates": ["hierarchy.hierarchical_f1 >= 0.8", "ci_low(delta:linking.linking_macro_f1) >= -0.01"],
        "baseline": {
            "records": "base.jsonl",
            "max_dropped": 3,
            "use": "ci_low",
            "budgets": {"hierarchy.hierarchical_f1": 0.05, "retrieval.mrr": 0.05},
            **baseline,
        },
        "bootstrap": {"n_resamples": 100, "seed": 0},
    }


def _run(d: Path, mapping: dict, size: int, out: Path, spill_rows: int | None = None):
    cfg = config_from_mapping(mapping, base_dir=d)
    cfg.chunk_size = size
    if spill_rows is not None:
        cfg.spill_rows = spill_rows
    res = run_audit(cfg, progress=False)
    write_reports(res, out)
    files = {
        p.name: p.read_bytes()
        for p in sorted(out.iterdir())
        if p.name not in ("report.json", "manifest.json", "junit.xml", "report.html")
    }
    return res, without_timings(json.loads((out / "report.json").read_text())), files


def test_streamed_baseline_equals_held(data, tmp_path, held_calls):
    d, onto_path = data
    mapping = _mapping(d, onto_path)
    res, ref, files = _run(d, mapping, 0, tmp_path / "held")
    assert res.chunk_size is None and held_calls["held"] == 1
    bl = ref["baseline"]
    # the numbers the comparison reports, worked out apart from the audit
    assert bl["n_records"] == 1998
    assert bl["dropped_records"] == {"n": 3, "ids": sorted(ONLY_BASELINE)}
    pairing = bl["pairing"]["hierarchy"]
    assert (pairing["paired_records"], pairing["records_either"]) == (1995, 2000)
    assert pairing["candidate_only"] == {"n": 2, "ids": sorted(ONLY_CANDIDATE)}
    assert pairing["baseline_only"] == {"n": 3, "ids": sorted(ONLY_BASELINE)}
    onto = load_ontology(onto_path)
    both = [
        [
            r
            for r in map(json.loads, (d / f).read_text().splitlines())
            if r["id"] not in ONLY_BASELINE | ONLY_CANDIDATE
        ]
        for f in ("cand.jsonl", "base.jsonl")
    ]
    f1 = [score_hierarchy(onto, rs).metrics()["hierarchical_f1"].value for rs in both]
    delta = bl["deltas"]["delta:hierarchy.hierarchical_f1"]
    assert delta["value"] == pytest.approx(f1[0] - f1[1], abs=1e-12) and delta["value"] > 0.1
    assert delta["paired_records"] == 1995 and delta["ci"][0] < delta["value"] < delta["ci"][1]
    worst = bl["worst_queries"]["retrieval.mrr"]
    assert len(worst) == 50 and worst[0]["delta"] < 0
    assert all(w["delta"] == pytest.approx(w["candidate"] - w["baseline"]) for w in worst)
    gates = {g["gate"]: g["status"] for g in ref["gates"]}
    assert gates["ci_low(delta:hierarchy.hierarchical_f1) >= -0.05"] == "pass"
    assert "ci_low(delta:linking.linking_macro_f1) >= -0.01" in gates
    for size in (
        333,
    ):  # more sizes: tests/audit/test_audit_stream.py (the demo's baseline at 3, 7, 64, 10,000)
        held_calls["held"] = 0
        res, got, got_files = _run(d, mapping, size, tmp_path / f"s{size}")
        assert res.chunk_size == size and held_calls["held"] == 0, size  # the baseline streamed too
        assert got == ref, size
        assert got_files == files, size  # report.md, prov.ttl (the audited run's trail only)
    # both runs' result columns spilled to their temporary files (past 500 rows): the same report
    from kg_rageval.audit import paired_baseline
    from kg_rageval.results import colstore

    held_calls["held"] = 0
    stores: list[object] = []
    init = colstore.ColumnStore.__init__

    def counted(self, *a, **k):
        stores.append(self)
        init(self, *a, **k)

    streamed = paired_baseline._baseline_streamed
    before_baseline: list[int] = []

    def baseline_streamed(*a, **k):
        before_baseline.append(len(stores))
        return streamed(*a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(colstore.ColumnStore, "__init__", counted)
        mp.setattr(paired_baseline, "_baseline_streamed", baseline_streamed)
        res, got, got_files = _run(d, mapping, 333, tmp_path / "spilled", spill_rows=500)
    assert held_calls["held"] == 0 and got == ref and got_files == files
    # the audited run's evaluations spilled, and then the baseline's (a pieces file and a
    # result file per evaluation: at least two per family of the six)
    assert before_baseline[0] >= 12 and len(stores) - before_baseline[0] >= 12


def test_unsound_pairing_is_missing_evidence_streamed_and_held(data, tmp_path, held_calls):
    """The candidate lacks 3 baseline records and ``max_dropped`` is 0: every delta is missing
    evidence naming them, held and streamed alike."""
    d, onto_path = data
    mapping = _mapping(d, onto_path, ("hierarchy", "linking", "retrieval"), max_dropped=0)
    _, ref, _ = _run(d, mapping, 0, tmp_path / "held")
    reason = ref["baseline"]["pairing"]["retrieval"]["missing"]
    assert reason.startswith(
        "the candidate's records lack 3 record(s) of the baseline ('q000003', 'q000500', "
        "'q001999'; baseline.max_dropped = 0)"
    )
    assert ref["baseline"]["deltas"]["delta:retrieval.mrr"]["value"] is None
    assert {g["status"] for g in ref["gates"] if "delta:" in g["gate"]} == {"missing"}
    held_calls["held"] = 0
    _, got, _ = _run(d, mapping, 500, tmp_path / "s500")
    assert held_calls["held"] == 0 and got == ref


def test_baseline_reading_errors_are_the_held_ones(data, tmp_path):
    """A bad line and a duplicate id in the baseline's file: the held reader's error (file, line)."""
    from kg_rageval.base.errors import InputError

    d, onto_path = data
    lines = (d / "base.jsonl").read_text().splitlines()
    for name, bad in (
        ("badjson.jsonl", lines[:1500] + ["{not json"] + lines[1500:]),
        ("dup.jsonl", lines[:1700] + [lines[3]] + lines[1700:]),
    ):
        (tmp_path / name).write_text("\n".join(bad) + "\n")
        msgs = []
        for size in (0, 256):
            mapping = _mapping(d, onto_path, ("hierarchy", "linking"), records=str(tmp_path / name))
            cfg = config_from_mapping(mapping, base_dir=d)
            cfg.chunk_size = size
            with pytest.raises(InputError) as exc:
                run_audit(cfg, progress=False)
            msgs.append(str(exc.value))
        assert msgs[0] == msgs[1] and name in msgs[0], msgs
        assert ("1501" if name == "badjson.jsonl" else "1701") in msgs[0], msgs


@pytest.mark.parametrize("seed", range(6))
def test_paired_ids_equal_numpys_set_routines(seed):
    """PairedIds gives what intersect1d / union1d / setdiff1d give for distinct ids in any
    order (sorted or not, disjoint, one side empty, one side inside the other)."""
    from kg_rageval.audit.paired_baseline import PairedIds

    rng = np.random.default_rng(seed)
    pool = np.array([f"q{i:05d}" for i in rng.permutation(5000)])
    n_c, n_b = [(0, 40), (40, 0), (300, 300), (1000, 200), (50, 3000), (2500, 2500)][seed]
    ids_c = pool[:n_c] if seed != 4 else pool[1000:1050]
    ids_b = pool[n_c // 2 : n_c // 2 + n_b] if seed != 3 else np.sort(pool[4800:5000])
    if seed == 2:
        ids_c = np.sort(ids_c)
    pair = PairedIds(ids_c, ids_b)
    common, ic, ib = np.intersect1d(ids_c, ids_b, return_indices=True)
    assert (
        np.array_equal(pair.common, common)
        and np.array_equal(pair.at_c, ic)
        and np.array_equal(pair.at_b, ib)
    )
    assert pair.n_either == len(np.union1d(ids_c, ids_b))
    for k in (0, 1, 20, 10_000):
        assert pair.only_c(k) == np.setdiff1d(ids_c, common)[:k].tolist()
        assert pair.only_b(k) == np.setdiff1d(ids_b, common)[:k].tolist()
    assert len(common) == {0: 0, 1: 0, 2: 150, 3: 0, 4: 50, 5: 1250}[seed]


def test_baseline_manifest_larger_than_the_limit_is_refused(tmp_path):
    from kg_rageval.audit.baseline import _manifest_release
    from kg_rageval.base.errors import LimitExceeded
    from kg_rageval.base.limits import limits

    man = tmp_path / "baseline-manifest.json"
    man.write_text(
        json.dumps({"inputs": {"ontology": {"content_hash": "sha256:ab", "path": "o"}}})
    )  # 68 bytes
    assert _manifest_release(man, "audit.yaml")["content_hash"] == "sha256:ab"
    with (
        limits({"max_doc_bytes": 67}),
        pytest.raises(LimitExceeded, match=r"baseline-manifest\.json.*the baseline manifest is 68 bytes"),
    ):
        _manifest_release(man, "audit.yaml")


def test_baseline_shares_the_audited_rows_of_its_equal_lines(data, tmp_path):
    """The baseline's stream scores only its records whose line differs from the audited
    record's with that id (:class:`~kg_rageval.audit.paired_baseline._Reuse`; here the files
    do not even hold the same ids at the same positions), and every family's per-record stats
    are those of scoring all of them, bit for bit — the PROV-O trail member (the audited run's
    only) left out."""
    from kg_rageval.audit import paired_baseline
    from kg_rageval.scoring import stream as scoring_stream

    d, onto_path = data
    cand_lines = {json.loads(ln)["id"]: ln for ln in (d / "cand.jsonl").read_text().splitlines()}
    base_lines = (d / "base.jsonl").read_text().splitlines()
    differ = [ln for ln in base_lines if cand_lines.get(json.loads(ln)["id"]) != ln]
    assert 400 < len(differ) < 1000 and len(base_lines) == 1998  # worked out apart from the audit
    mapping = _mapping(d, onto_path, families=(*FAMILIES[:-1], "provenance"))
    mapping["families"]["provenance"] = {"trail": True}
    # a baseline line equal to the audited line at its position stands in unparsed (_Reuse.known)
    cand_order = (d / "cand.jsonl").read_text().splitlines()
    at_position = sum(1 for a, b in zip(cand_order, base_lines) if a == b)
    assert 200 < at_position < len(base_lines) - len(differ)  # some equal lines elsewhere
    scored: dict[str, int] = {}
    got: list[tuple] = []
    stood_in: list[int] = []
    streamed = paired_baseline._baseline_streamed
    call = scoring_stream.FamilyStream._call
    known = paired_baseline._Reuse.known

    def counting_known(self, bound):
        fn = known(self, bound)
        assert fn is not None

        def hit(i, digest):
            rec = fn(i, digest)
            stood_in.append(rec is not None)
            return rec

        return hit

    def counting(self, records):
        scored[self.name] = scored.get(self.name, 0) + len(records)
        return call(self, records)

    def stats(got):  # each family's members and their per-record stats, as the pairing makes them
        out = {}
        for fam, run in got[1].items():
            result = run.result if run.shared is None else run.shared.result(fam, run.result, 500)
            out[fam] = {m: ev.per_record_stats() for m, ev in result.items()}
        return got[2], out

    def both(config, inputs, cand, bpath, client, runs=None):
        scored.clear()
        shared = streamed(config, inputs, cand, bpath, client, runs)
        counts = dict(scored)
        plain = streamed(config, inputs, cand, bpath, client, None)
        got.append((stats(shared), stats(plain), counts))
        return shared

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(paired_baseline, "_baseline_streamed", both)
        mp.setattr(scoring_stream.FamilyStream, "_call", counting)
        mp.setattr(paired_baseline._Reuse, "known", counting_known)
        res, _, _ = _run(d, mapping, 333, tmp_path / "shared")
    assert len(stood_in) == len(base_lines) and sum(stood_in) == at_position
    ((ids_s, shared), (ids_p, plain), counts) = got[0]
    # every family scored the differing records only (all of them carry every section)
    assert counts == dict.fromkeys(FAMILIES, len(differ)), counts
    assert "prov_trail" in res.families["provenance"].result
    assert np.array_equal(ids_s, ids_p) and len(ids_s) == 1998  # the baseline's ids, in file order
    assert list(shared) == list(plain) == list(FAMILIES)
    for fam in FAMILIES:
        a, b = shared[fam], plain[fam]
        assert list(a) == list(b) and "prov_trail" not in a, fam
        for member in a:
            (ids_a, st_a), (ids_b, st_b) = a[member], b[member]
            assert np.array_equal(ids_a, ids_b) and list(st_a) == list(st_b), (fam, member)
            for k in st_a:
                assert st_a[k].tobytes() == st_b[k].tobytes(), (fam, member, k)


def test_paired_bootstraps_share_one_pass_of_weights(data, tmp_path):
    """The paired evaluations with a delta gate (hierarchy, linking, retrieval here) are
    bootstrapped in one pass over the weight blocks when their stats fit in
    ``SHARED_BOOTSTRAP_BYTES`` (the weights drawn once), one pass each when they do not: the
    reports are the same, byte for byte."""
    from kg_rageval.audit import paired_baseline
    from kg_rageval.results import forms

    d, onto_path = data
    mapping = _mapping(d, onto_path)
    passes: list[list[int]] = []
    jobs = forms.replicate_jobs

    def counting(batch, *a, **k):
        passes[-1].append(len(batch))
        return jobs(batch, *a, **k)

    got = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(forms, "replicate_jobs", counting)
        for cap in (2**40, 0):
            mp.setattr(paired_baseline, "SHARED_BOOTSTRAP_BYTES", cap)
            passes.append([])
            _, report, files = _run(d, mapping, 500, tmp_path / f"cap{cap}")
            got.append((report, files))
    assert passes == [[3], [1, 1, 1]]  # one pass for the three, then one each
    assert got[0] == got[1]
    assert set(got[0][0]["baseline"]["deltas"]) >= {
        "delta:hierarchy.hierarchical_f1",
        "delta:linking.linking_macro_f1",
        "delta:retrieval.mrr",
    }
