"""The optimised audit against the implementation it replaced, on the bundled demo (with its
baseline: paired deltas) and on generated ATT&CK records (benchmarks/bench_audit.py): failure
drivers, per-node roll-ups, paired delta intervals and per-query deltas, bootstrap intervals
of every metric. The references below are the previous code (one ``finalize`` per node, per
resample, per record), kept here to compare with."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from kg_rageval.results.bootstrap import bootstrap_weights, percentile_interval

pytestmark = pytest.mark.slow  # whole audits against the previous code's results (~9 s)


ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- the previous implementations
def ref_drivers(results, index, ontology, config):
    from kg_rageval.audit.gates import finite_or_none
    from kg_rageval.audit.pernode import branch_impact

    out = []
    for r in results:
        g = r.gate
        if r.status != "fail" or g.scope is not None or g.metric.startswith("delta:") or g.op == "==":
            continue
        owner, _ = index.owner(g.metric)
        if owner is None or "gold_node" not in owner.ev.keys:
            continue
        total = index.totals.get((id(owner.ev), owner.metric))
        if total is None or finite_or_none(total.value) is None:
            continue
        gv = float(total.value)
        ev = owner.ev
        for nid, row in ev.rollup(ontology).items():
            if nid == ontology.root_id:
                continue
            m = row["metrics"].get(owner.metric)
            if m is None or finite_or_none(m.value) is None or g.compare(m.value):
                continue
            weight = float(m.denominator) if m.denominator else float(row["n"])
            imp = branch_impact(float(m.value), weight, gv, g.threshold, g.op)
            if imp["impact"] <= 1e-12:
                continue
            total_w = float(total.denominator) if total.denominator else float(len(ev))
            total_def = branch_impact(gv, total_w, gv, g.threshold, g.op)["deficit"]
            out.append(
                {
                    "gate": str(g),
                    "node": nid,
                    "label": ontology.label(nid),
                    "depth": row["depth"],
                    "n": row["n"],
                    "value": m.value,
                    "status": "fail",
                    "weight": weight,
                    "shortfall": abs(m.value - g.threshold),
                    "deficit": imp["deficit"],
                    "deficit_share": imp["deficit"] / total_def if total_def else None,
                    "size_share": weight / total_w if total_w else None,
                    "impact": imp["impact"],
                    "thin": row["n"] < config.coverage.thin,
                }
            )
    out.sort(key=lambda e: (-e["impact"], -e["depth"], e["node"]))
    return out[: max(config.report.top_branches * 5, 50)]


def ref_nodes(runs, ontology, only):
    from kg_rageval.audit.gates import finite_or_none

    nodes = {}
    for fam, run in runs.items():
        for ev in run.evaluations:
            if "gold_node" not in ev.keys:
                continue
            for nid, g in ev.rollup(ontology).items():
                if only is not None and nid not in only:
                    continue
                d = nodes.setdefault(
                    nid, {"label": ontology.label(nid), "depth": g["depth"], "n": {}, "metrics": {}}
                )
                d["n"][fam] = max(d["n"].get(fam, 0), g["n"])
                for m, val in g["metrics"].items():
                    d["metrics"][f"{fam}.{m}"] = finite_or_none(val.value)
    return dict(sorted(nodes.items(), key=lambda kv: (kv[1]["depth"], kv[0])))


def ref_paired(ev, bev, n_resamples, level, seed):
    """Paired delta intervals and per-record deltas, one finalize per resample and record."""
    ids_c, st_c = ev.per_record_stats()
    ids_b, st_b = bev.per_record_stats()
    common, ic, ib = np.intersect1d(ids_c, ids_b, return_indices=True)
    names = list(st_c)
    mc = np.stack([st_c[k][ic] for k in names], axis=1)
    mb = np.stack([st_b[k][ib] for k in names], axis=1)
    fin = ev.family.finalize
    tc = fin(dict(zip(names, mc.sum(0).tolist())))
    samples = {m: np.full(n_resamples, np.nan) for m in tc}
    for lo, w in bootstrap_weights(len(common), n_resamples, seed):
        for j, (rowc, rowb) in enumerate(zip((w @ mc).tolist(), (w @ mb).tolist())):
            rc, rb = fin(dict(zip(names, rowc))), fin(dict(zip(names, rowb)))
            for m in tc:
                if rc[m].value is not None and rb.get(m) is not None and rb[m].value is not None:
                    samples[m][lo + j] = rc[m].value - rb[m].value
    cis = {m: percentile_interval(s, n_resamples, level) for m, s in samples.items()}
    rows = {m: [] for m in tc}
    for j, rid in enumerate(common.tolist()):
        fc, fb = fin(dict(zip(names, mc[j].tolist()))), fin(dict(zip(names, mb[j].tolist())))
        for m in tc:
            c1, b1 = fc.get(m), fb.get(m)
            if c1 is None or b1 is None or c1.value is None or b1.value is None or c1.value == b1.value:
                continue
            rows[m].append(
                {"record_id": rid, "candidate": c1.value, "baseline": b1.value, "delta": c1.value - b1.value}
            )
    for m in rows:
        rows[m].sort(key=lambda r: (r["delta"], r["record_id"]))
        rows[m] = rows[m][:50]
    return cis, rows


def _compare(res):
    from kg_rageval.audit.evidence import MetricIndex
    from kg_rageval.audit.pernode import shown_nodes

    cfg = res.config
    index = MetricIndex(res.families)
    assert res.drivers == ref_drivers(res.gate_results, index, res.ontology, cfg)
    only = None if cfg.report.node_rollup == "all" else shown_nodes(cfg, res.ontology, res.drivers)
    assert res.nodes == ref_nodes(res.families, res.ontology, only)


# ---------------------------------------------------------------- the bundled demo (with a baseline)
@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from kg_rageval.audit.config import load_config
    from kg_rageval.audit.runner import run_audit
    from kg_rageval.demo import build_demo

    out = tmp_path_factory.mktemp("demo")
    build_demo(out, seed=0, bootstrap=200)
    return run_audit(load_config(out / "audit.yaml"), progress=False)


def test_demo_drivers_and_nodes_equal_the_previous_code(demo):
    assert demo.drivers and demo.nodes
    _compare(demo)


def test_demo_paired_deltas_equal_the_previous_code(demo):
    b = demo.config.bootstrap
    base = demo.baseline
    assert base is not None and base["deltas"]
    # the baseline run's evaluations: re-run the families on the baseline records
    from kg_rageval.audit.family_runs import run_families
    from kg_rageval.audit.inputs import load_inputs
    from kg_rageval.records import read_records

    inputs = load_inputs(demo.config)
    brecs = read_records(demo.config.path(demo.config.baseline.records))
    bruns = run_families(demo.config, {**inputs, "records": brecs}, brecs, progress=False)
    checked = 0
    for fam, run in demo.families.items():
        if run.result is None or bruns[fam].result is None:
            continue
        if len(run.result) != 1:
            continue
        ev, bev = run.evaluations[0], bruns[fam].evaluations[0]
        cis, rows = ref_paired(ev, bev, b.n_resamples, b.level, b.seed)
        for m, ci in cis.items():
            got = base["deltas"].get(f"delta:{fam}.{m}")
            if got is None or got.get("value") is None:
                continue
            if got.get("ci") is not None:
                assert got["ci"] == pytest.approx(list(ci), rel=1e-12, abs=1e-12), (fam, m)
                checked += 1
        for key, listed in base["worst_queries"].items():
            if key.split(".", 1)[0] == fam:
                assert listed == rows[key.split(".", 1)[1]], key
    assert checked >= 5


# ---------------------------------------------------------------- generated ATT&CK records
@pytest.mark.slow
def test_generated_audit_equals_the_previous_code(tmp_path):
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_audit import generate
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.runner import run_audit
    from kg_rageval.ontology import load_ontology

    onto_path = ROOT / "ontologies" / "enterprise-attack-18.1.json.gz"
    generate(load_ontology(onto_path), 1500, 3, tmp_path)
    cfg = config_from_mapping(
        {
            "name": "eq",
            "ontology": str(onto_path),
            "records": "records.jsonl",
            "corpus": "corpus.jsonl",
            "spec": "spec.yaml",
            "families": {
                f: {}
                for f in ("hierarchy", "linking", "retrieval", "conformance", "generation", "provenance")
            },
            "gates": [
                "hierarchy.hierarchical_f1 >= 0.9",
                "ci_low(retrieval.recall@10) >= 0.8",
                "ci_low(generation.faithfulness) >= 0.95",
                "linking.linking_macro_f1 >= 0.8",
                "provenance.citation_completeness >= 0.9",
                "retrieval.mrr >= 0.9",
            ],
            "bootstrap": {"n_resamples": 300, "seed": 4, "always": True},
            "report": {"node_rollup": "all"},
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    assert res.drivers
    _compare(res)
    # every metric's interval (bootstrap.always) equals the per-resample loop's
    for fam, run in res.families.items():
        for ev in run.evaluations:
            ids, per = ev.per_record_stats()
            names = list(per)
            mat = np.stack([per[k] for k in names], axis=1)
            reps = {m: np.full(300, np.nan) for m in ev.metrics()}
            for lo, w in bootstrap_weights(len(ids), 300, 4):
                with threadpool_limits(1, user_api="blas"):  # as every resampled sum is computed
                    sums = w @ mat
                for j, row in enumerate(sums.tolist()):
                    r = ev.family.finalize(dict(zip(names, row)))
                    for m in reps:
                        if r[m].value is not None:
                            reps[m][lo + j] = r[m].value
            want = {m: percentile_interval(s, 300, 0.95) for m, s in reps.items()}
            assert ev.bootstrap(n_resamples=300, seed=4) == want, fam
