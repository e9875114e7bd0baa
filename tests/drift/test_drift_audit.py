"""Audits against a baseline audited on another ontology release: refused unless re-based or
compared on the unchanged nodes (``--baseline-ontology``); the release is in the manifest."""

from __future__ import annotations

import json

import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.runner import run_audit
from kg_rageval.base.errors import ConfigError
from kg_rageval.cli.main import main
from kg_rageval.drift.rebase import rebase_file
from kg_rageval.families.hierarchy import score_hierarchy
from kg_rageval.ontology import OntologyBuilder
from kg_rageval.ontology.cache import save_compiled


def _vehicles(new: bool):
    """OLD: the vehicles taxonomy. NEW: submarine moved from boat to vehicle, plane added."""
    b = OntologyBuilder("vehicles-new" if new else "vehicles-old")
    for n in ("vehicle", "car", "sedan", "hatchback", "boat", "submarine", "amphibious_car") + (
        ("plane",) if new else ()
    ):
        b.add_node(n, label=n.replace("_", " ").title())
    edges = [
        ("car", "vehicle"),
        ("sedan", "car"),
        ("hatchback", "car"),
        ("boat", "vehicle"),
        ("amphibious_car", "car"),
        ("amphibious_car", "boat"),
    ]
    edges += [("submarine", "vehicle"), ("plane", "vehicle")] if new else [("submarine", "boat")]
    for c, p in edges:
        b.add_edge(c, p)
    b.version = "v2" if new else "v1"
    return b.build()


CAND = [
    ("c1", "sedan", "sedan"),
    ("c2", "submarine", "boat"),
    ("c3", "hatchback", "sedan"),
    ("c4", "amphibious_car", "car"),
]
BASE = [
    ("c1", "sedan", "car"),
    ("c2", "submarine", "submarine"),
    ("c3", "hatchback", "hatchback"),
    ("c4", "amphibious_car", "boat"),
]


@pytest.fixture()
def work(tmp_path):
    old, new = _vehicles(False), _vehicles(True)
    save_compiled(old, tmp_path / "old.kgro")
    save_compiled(new, tmp_path / "new.kgro")
    for name, rows in (("cand.jsonl", CAND), ("base.jsonl", BASE)):
        (tmp_path / name).write_text(
            "".join(json.dumps({"id": i, "labels": {"gold": [g], "pred": [p]}}) + "\n" for i, g, p in rows)
        )
    (tmp_path / "base-manifest.json").write_text(
        json.dumps(
            {
                "manifest": {
                    "inputs": {
                        "ontology": {"path": "old.kgro", "content_hash": old.content_hash, "version": "v1"}
                    }
                }
            }
        )
    )
    return tmp_path, old, new


def _cfg(d, **baseline):
    return config_from_mapping(
        {
            "ontology": "new.kgro",
            "records": "cand.jsonl",
            "families": {"hierarchy": {}},
            "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
            "gates": ["hierarchical_f1 >= 0"],
            "baseline": {"records": "base.jsonl", "budgets": {"hierarchical_f1": 1.0}, **baseline},
            "bootstrap": {"n_resamples": 50},
        },
        base_dir=d,
    )


def _f1(onto, rows):
    recs = [{"id": i, "labels": {"gold": [g], "pred": [p]}} for i, g, p in rows]
    return score_hierarchy(onto, recs).metrics()["hierarchical_f1"].value


def test_other_release_is_refused(work):
    d, old, new = work
    with pytest.raises(ConfigError) as exc:
        run_audit(_cfg(d, manifest="base-manifest.json"), progress=False)
    msg = str(exc.value)
    assert old.content_hash in msg and new.content_hash in msg
    assert "records rebase" in msg and "--baseline-ontology" in msg
    code = main(["audit", "--config", str(_write(d, manifest="base-manifest.json")), "--quiet"])
    assert code == 2


def _write(d, **baseline):
    p = d / "audit.json"
    p.write_text(
        json.dumps(
            {
                "ontology": "new.kgro",
                "records": "cand.jsonl",
                "families": {"hierarchy": {}},
                "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
                "gates": ["hierarchical_f1 >= 0"],
                "bootstrap": {"n_resamples": 50},
                "baseline": {"records": "base.jsonl", "budgets": {"hierarchical_f1": 1.0}, **baseline},
            }
        )
    )
    return p


def test_unchanged_nodes_comparison(work):
    d, old, new = work
    res = run_audit(_cfg(d, manifest="base-manifest.json", ontology="old.kgro"), progress=False)
    rel = res.baseline["release"]
    assert rel["mode"] == "unchanged_nodes"
    # c2 (submarine moved) is left out: 1 of 4 records
    assert (rel["excluded_records"], rel["considered_records"], rel["excluded_share"]) == (1, 4, 0.25)
    kept = ("c1", "c3", "c4")
    want = _f1(new, [r for r in CAND if r[0] in kept]) - _f1(old, [r for r in BASE if r[0] in kept])
    assert res.metrics["delta:hierarchy.hierarchical_f1"].value == pytest.approx(want)
    assert res.baseline["deltas"]["delta:hierarchy.hierarchical_f1"]["paired_records"] == 3
    assert res.manifest["inputs"]["ontology"]["version"] == "v2"
    assert res.manifest["inputs"]["baseline_ontology"]["content_hash"] == old.content_hash
    # the CLI flag does the same
    out = d / "out"
    assert (
        main(
            [
                "audit",
                "--config",
                str(_write(d, manifest="base-manifest.json")),
                "--baseline-ontology",
                str(d / "old.kgro"),
                "--out",
                str(out),
                "--quiet",
                "--format",
                "json",
            ]
        )
        == 0
    )
    man = json.loads((out / "manifest.json").read_text())["manifest"]
    md = (out / "report.md").read_text()
    assert (
        "compared on the nodes unchanged between the releases; 1 of 4 baseline records left out (25.0%)" in md
    )
    assert man["inputs"]["ontology"]["content_hash"] == new.content_hash
    assert man["inputs"]["ontology"]["version"] == "v2"


def test_rebased_baseline_is_accepted(work):
    d, old, new = work
    rebase_file(old, new, d / "base.jsonl", d / "rebased.jsonl")
    res = run_audit(_cfg(d, manifest="base-manifest.json", records="rebased.jsonl"), progress=False)
    rel = res.baseline["release"]
    assert rel["mode"] == "rebased" and rel["excluded_records"] == 0
    want = _f1(new, CAND) - _f1(new, BASE)
    assert res.metrics["delta:hierarchy.hierarchical_f1"].value == pytest.approx(want)
    # a re-based file edited afterwards no longer matches its report: refused
    p = d / "rebased.jsonl"
    p.write_text(p.read_text().replace('"pred": ["car"]', '"pred": ["sedan"]'))
    with pytest.raises(ConfigError):
        run_audit(_cfg(d, manifest="base-manifest.json", records="rebased.jsonl"), progress=False)


def test_same_release_and_undeclared(work):
    d, old, new = work
    res = run_audit(_cfg(d), progress=False)
    assert res.baseline["release"]["mode"] == "same" and res.baseline["release"]["notes"]
    res = run_audit(_cfg(d, ontology="new.kgro"), progress=False)
    assert res.baseline["release"]["mode"] == "same" and not res.baseline["release"]["notes"]
    with pytest.raises(ConfigError, match="not the release the baseline manifest names"):
        run_audit(_cfg(d, manifest="base-manifest.json", ontology="new.kgro"), progress=False)
    with pytest.raises(ConfigError, match="needs a baseline section"):
        from kg_rageval.audit.baseline import set_baseline_ontology

        set_baseline_ontology(
            config_from_mapping({"ontology": "new.kgro", "records": "cand.jsonl"}, base_dir=d), "old.kgro"
        )


def _release_runs(d, size, **baseline):
    cfg = _cfg(d, **baseline)
    cfg.chunk_size = size
    try:
        res = run_audit(cfg, progress=False)
    except ConfigError as exc:
        return str(exc)
    return {
        "baseline": res.baseline,
        "metrics": {k: m.to_dict() for k, m in sorted(res.metrics.items())},
        "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
        "gates": [(str(g.gate), g.status, g.observed, g.reason) for g in res.gate_results],
    }


@pytest.mark.parametrize("how", ["unchanged", "rebased", "flagged", "same", "refused", "marks"])
def test_release_check_streamed_equals_held(work, held_calls, how):
    """The baseline streamed (its records read in chunks through the release check and the
    families) decides the release as the held baseline does: the same mode, kept records,
    deltas and gates — or the same refusal."""
    d, old, new = work
    baseline = {
        "unchanged": {"manifest": "base-manifest.json", "ontology": "old.kgro"},
        "same": {},
        "refused": {"manifest": "base-manifest.json"},
    }.get(how, {})
    if how in ("rebased", "flagged"):
        rebase_file(old, new, d / "base.jsonl", d / "rebased.jsonl")
        baseline = {"manifest": "base-manifest.json", "records": "rebased.jsonl"}
        if how == "flagged":  # the re-base report flags c3: left out of the pairing
            rp = d / "rebased.jsonl.rebase.json"
            rep = json.loads(rp.read_text())
            rep["flagged_records"] = ["c3", 7]
            rp.write_text(json.dumps(rep))
    if how == "marks":  # re-base marks to two releases: refused
        lines = (d / "base.jsonl").read_text().splitlines()
        marked = [json.loads(x) for x in lines]
        marked[0]["rebase"], marked[3]["rebase"] = {"to": "sha256:a"}, {"to": "sha256:b"}
        (d / "base.jsonl").write_text("".join(json.dumps(r) + "\n" for r in marked))
    held = _release_runs(d, 0, **baseline)
    assert held_calls["held"] == 1
    for size in (1, 3):
        held_calls["held"] = 0
        assert _release_runs(d, size, **baseline) == held, size
        assert held_calls["held"] == (1 if isinstance(held, str) else 0), size  # a refusal is the held one's
    if isinstance(held, str):
        assert ("several ontology releases" if how == "marks" else "records rebase") in held
        return
    rel = held["baseline"]["release"]
    want = {
        "unchanged": ("unchanged_nodes", 1, 4),
        "rebased": ("rebased", 0, 4),
        "flagged": ("rebased", 1, 4),
        "same": ("same", 0, 0),
    }[how]  # the same release: nothing to consider
    assert (rel["mode"], rel["excluded_records"], rel["considered_records"]) == want
    paired = held["baseline"]["deltas"]["delta:hierarchy.hierarchical_f1"]["paired_records"]
    assert paired == 4 - want[1]
