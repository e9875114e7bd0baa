"""Ontology diff, id mapping, record re-basing and the stability view on small hand-built
releases whose every change is worked out by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kg_rageval.drift import CHANGE_KINDS, build_mapping, diff_ontologies
from kg_rageval.drift.rebase import rebase_file, rebase_records
from kg_rageval.ontology import OntologyBuilder


def _build(nodes, edges, aliases=(), version=None, warnings=()):
    b = OntologyBuilder("mem")
    for spec in nodes:
        nid, label, *rest = spec
        opts = rest[0] if rest else {}
        b.add_node(nid, label=label, **opts)
    for c, p in edges:
        b.add_edge(c, p)
    for a, t in aliases:
        b.add_alias(a, t)
    for w in warnings:
        b.warn("test", w)
    b.version = version
    return b.build()


@pytest.fixture(scope="module")
def releases():
    """OLD:                       NEW:
    root ─┬─ A ─┬─ a1              root ─┬─ A ─┬─ a1 ("A one", synonyms changed)
          │     ├─ a2                    │     ├─ a2 (deprecated → a1)
          │     └─ a3                    │     ├─ b2 (moved from B)
          └─ B ─┬─ b1                    │     └─ a4 (added)
                ├─ b2                    └─ B ─┬─ b1 (revoked → b3)
                ├─ b3                          ├─ b3
                └─ b4                          └─ b5 (added; b4 is its alt_id: merged)
    a3 removed without trace; alias x1 → a1 in OLD only (alias_removed); y1 → b3 new alias.
    """
    old = _build(
        [
            ("root", "Root"),
            ("A", "A"),
            ("B", "B"),
            ("a1", "a one", {"synonyms": ["first a", "uno"]}),
            ("a2", "a two"),
            ("a3", "a three"),
            ("b1", "b one"),
            ("b2", "b two"),
            ("b3", "b three"),
            ("b4", "b four"),
        ],
        [
            ("A", "root"),
            ("B", "root"),
            ("a1", "A"),
            ("a2", "A"),
            ("a3", "A"),
            ("b1", "B"),
            ("b2", "B"),
            ("b3", "B"),
            ("b4", "B"),
        ],
        aliases=[("x1", "a1")],
        version="2024-01",
    )
    new = _build(
        [
            ("root", "Root"),
            ("A", "A"),
            ("B", "B"),
            ("a1", "A one", {"synonyms": ["uno", "un"]}),
            ("a2", "a two", {"status": "deprecated", "replaced_by": "a1"}),
            ("a4", "a four"),
            ("b1", "b one", {"status": "revoked", "replaced_by": "b3"}),
            ("b2", "b two"),
            ("b3", "b three"),
            ("b5", "b five"),
        ],
        [
            ("A", "root"),
            ("B", "root"),
            ("a1", "A"),
            ("a2", "A"),
            ("a4", "A"),
            ("b2", "A"),
            ("b1", "B"),
            ("b3", "B"),
            ("b5", "B"),
        ],
        aliases=[("b4", "b5"), ("y1", "b3")],
        version="2025-01",
    )
    return old, new


def test_diff_every_kind(releases):
    old, new = releases
    d = diff_ontologies(old, new)
    ids = {k: sorted(e["id"] for e in d.entries(k)) for k in CHANGE_KINDS}
    assert ids == {
        "added": ["a4", "b5"],
        "removed": ["a3"],
        "merged": ["b4"],
        "deprecated": ["a2"],
        "revoked": ["b1"],
        "reactivated": [],
        "replacement_changed": [],
        "moved": ["b2"],
        "relabelled": ["a1"],
        "synonyms_changed": ["a1"],
        "alias_added": ["y1"],
        "alias_removed": ["x1"],
    }
    assert d.counts()["added"] == 2 and d.n_common == 8
    (dep,) = d.entries("deprecated")
    assert (dep["old_status"], dep["status"], dep["replaced_by"]) == ("active", "deprecated", "a1")
    (mv,) = d.entries("moved")
    assert (mv["old_parents"], mv["new_parents"]) == (["B"], ["A"])
    (syn,) = d.entries("synonyms_changed")
    assert (syn["added"], syn["removed"]) == (["un"], ["first a"])
    (m,) = d.entries("merged")
    assert m["into"] == "b5"
    by = d.by_branch()
    assert by["added"] == {"A": 1, "B": 1}
    assert by["moved"] == {"A": 1, "B": 1}  # counted under the branch of both releases
    assert by["removed"] == {"A": 1} and by["merged"] == {"B": 1}
    # stable: same place/status/labels and no changed node above. root, A and B are unchanged
    # but the root's and A's rows... A itself is stable; a1 relabelled; b3 stable; b2 moved
    assert sorted(d.stable_ids()) == ["A", "B", "b3", "root"]
    # subtree-stable (for `within` filters): nothing changed below either; only the leaf b3
    assert sorted(d.stable_ids(subtree=True)) == ["b3"]
    p = d.to_dict(limit=1)
    assert p["old"]["version"] == "2024-01" and p["new"]["version"] == "2025-01"
    assert p["old"]["content_hash"] == old.content_hash and p["new"]["content_hash"] == new.content_hash
    assert p["truncated"] == {"added": 1} and p["stable_nodes"] == 4
    json.dumps(p)


def test_diff_identical_and_virtual_root(vehicles):
    d = diff_ontologies(vehicles, vehicles)
    assert not d.changed and d.to_dict()["identical"]
    assert int(d.stable_new.sum()) == len(vehicles)
    # a second root appears: the virtual root is no change, the first root does not "move"
    b = OntologyBuilder("two roots")
    for n in vehicles.ids:
        b.add_node(n, label=vehicles.label(n))
    for c, p in vehicles.edges():
        b.add_edge(c, p)
    b.add_node("plane", label="Plane")
    two = b.build()
    assert two.virtual_root
    d2 = diff_ontologies(vehicles, two)
    assert {k: v for k, v in d2.counts().items() if v} == {"added": 1}
    assert d2.entries("added")[0]["parents"] == []


def test_mapping_chains_cycles_forks():
    old = _build(
        [
            ("r", "R"),
            ("p", "P"),
            ("q", "Q"),
            ("s", "S"),
            ("t", "T"),
            ("u", "U"),
            ("f", "F"),
            ("g", "G"),
            ("w", "W"),
            ("gone", "Gone"),
        ],
        [(x, "r") for x in "pqstufgw"] + [("gone", "r")],
        aliases=[("oldalt", "s")],
    )
    new = _build(
        [
            ("r", "R"),
            ("p", "P", {"status": "deprecated", "replaced_by": "q"}),  # p → q → s (transitive)
            ("q", "Q", {"status": "deprecated", "replaced_by": "s"}),
            ("s", "S"),
            ("t", "T", {"status": "deprecated", "replaced_by": "u"}),  # t → u → t: a cycle
            ("u", "U", {"status": "deprecated", "replaced_by": "t"}),
            ("f", "F", {"status": "revoked"}),  # revoked by g and s: a fork (loader warning)
            ("g", "G", {"status": "deprecated"}),  # retired: no replacement
            ("w", "W", {"status": "deprecated", "replaced_by": "g"}),  # w → g, retired
            ("h", "H"),
        ],
        [(x, "r") for x in "pqstufghw"],
        aliases=[("z", "h")],
        warnings=["'f' is revoked by g, s; using g"],
    )
    m = build_mapping(old, new)
    r = {x: m.resolve(x) for x in ("p", "q", "s", "t", "f", "g", "gone", "oldalt", "z", "nope")}
    assert (r["p"].to, r["p"].outcome, r["p"].path) == ("s", "replaced", ("p", "q", "s"))
    assert (r["q"].to, r["q"].outcome) == ("s", "replaced")
    assert r["s"].outcome == "same"
    assert (r["t"].outcome, r["t"].to, r["t"].path) == ("cycle", "t", ("t", "u", "t"))
    assert (r["f"].outcome, r["f"].to) == ("fork", "f")
    assert (r["g"].outcome, r["g"].to) == ("retired", "g")
    assert (r["gone"].outcome, r["gone"].to) == ("removed", "gone")
    assert (r["oldalt"].outcome, r["oldalt"].to) == ("merged", "s")  # OLD alias → s, active in NEW
    assert (r["z"].outcome, r["z"].to) == ("merged", "h")
    assert r["nope"].outcome == "unknown"
    w = m.resolve("w")
    assert (w.outcome, w.to, w.path) == ("retired", "g", ("w", "g"))
    out: list[dict] = []
    rebase_records([(1, "q", {"id": "q", "labels": {"gold": ["w"], "pred": ["p"]}})], m, out.append)
    assert out[0]["labels"] == {"gold": ["g"], "pred": ["s"]}
    assert out[0]["rebase"]["flags"] == [
        {"field": "labels.gold[0]", "id": "w", "kind": "retired", "side": "gold", "to": "g"}
    ]
    assert out[0]["rebase"]["changes"] == [
        {"field": "labels.pred[0]", "from": "p", "to": "s", "kind": "replaced"}
    ]
    assert all(r[x].flagged for x in ("t", "f", "g", "gone", "nope")) and not r["p"].flagged


def test_shadowed_alias_is_a_merge():
    """HPO: an obsolete term without replaced_by that another term lists as alt_id (the node
    wins when compiling, the alias is named in a warning) is merged into that term."""
    b = OntologyBuilder("hpo-like")
    b.add_node("HP:1", label="root")
    b.add_node("HP:2", label="kept")
    b.add_node("HP:3", label="obsolete", status="deprecated")
    b.add_edge("HP:2", "HP:1")
    b.add_edge("HP:3", "HP:1")
    b.add_alias("HP:3", "HP:2")
    new = b.build(conflicts="keep-first")
    assert new.status_of("HP:3") == "deprecated" and new.n_aliases == 0
    old = _build([("HP:1", "root"), ("HP:3", "obsolete")], [("HP:3", "HP:1")])
    r = build_mapping(old, new).resolve("HP:3")
    assert (r.to, r.outcome) == ("HP:2", "merged")
    assert build_mapping(old, new).notes() == []
    # a loader that named fewer conflicts than it counted: the mapping says what it cannot see
    from dataclasses import replace

    blind = replace(new, warnings=())
    assert build_mapping(old, blind).resolve("HP:3").outcome == "retired"
    assert "alias conflicts but names only 0" in build_mapping(old, blind).notes()[0]


def test_rebase_records_fields_and_flags(releases):
    old, new = releases
    m = build_mapping(old, new)
    rec = {
        "id": "q1",
        "custom": {"keep": ["a2"]},
        "labels": {"gold": ["a2", "a1"], "pred": "b1"},
        "mentions": {
            "gold": [{"start": 0, "end": 1, "id": "b4", "nearest": "x1", "extra": 1}],
            "pred": [{"start": 0, "end": 1, "id": None}, {"start": 2, "end": 3, "id": "b1"}],
        },
        "retrieval": {
            "filters": [{"field": "category", "op": "within", "value": ["b1", "free text"]}],
            "gold_node": "a2",
        },
        "answer": {"text": "a2 is fine", "output": {"technique": "b1", "note": "a2 b1"}, "concepts": ["b4"]},
        "reference": {"concepts": ["a2"], "output": {"technique": "b3"}},
        "gold_node": "b2",
        "relations": {
            "gold": [["a2", "treats", "kg:entity-1"]],
            "answers": ["b4", "kg:entity-2"],
            "claims": [{"subject": "b1", "predicate": "p", "object": "x"}],
            "node": "a2",
        },
    }
    out: list[dict] = []
    rep = rebase_records(
        [
            (1, "q1", rec),
            (2, "q2", {"id": "q2", "labels": {"gold": ["a3"], "pred": ["a1"]}}),
            (3, "q3", {"id": "q3", "labels": {"gold": ["b3"], "pred": ["b3"]}}),
        ],
        m,
        out.append,
    )
    r1, r2, r3 = out
    assert r1["labels"] == {"gold": ["a1"], "pred": "b3"}  # a2 → a1 collapses with a1
    assert r1["mentions"]["gold"][0] == {"start": 0, "end": 1, "id": "b5", "nearest": "a1", "extra": 1}
    assert [x["id"] for x in r1["mentions"]["pred"]] == [None, "b3"]
    assert r1["retrieval"]["filters"][0]["value"] == ["b3", "free text"]
    assert r1["retrieval"]["gold_node"] == "a1"
    assert r1["answer"] == {
        "text": "a2 is fine",
        "output": {"technique": "b3", "note": "a2 b1"},
        "concepts": ["b5"],
    }
    assert r1["reference"] == {"concepts": ["a1"], "output": {"technique": "b3"}}
    assert r1["custom"] == {"keep": ["a2"]} and r1["gold_node"] == "b2"  # b2 moved: same id, reported
    assert r1["relations"] == {
        "gold": [["a1", "treats", "kg:entity-1"]],
        "answers": ["b5", "kg:entity-2"],
        "claims": [{"subject": "b3", "predicate": "p", "object": "x"}],
        "node": "a1",
    }
    assert r1["rebase"]["status"] == "rebased" and r1["rebase"]["to"] == new.content_hash
    kinds = {c["field"]: c["kind"] for c in r1["rebase"]["changes"]}
    assert kinds["labels.gold[0]"] == "replaced" and kinds["labels.gold[1]"] == "collapsed"
    assert kinds["mentions.gold[0].id"] == "merged" and kinds["mentions.gold[0].nearest"] == "merged"
    # a3 was removed: flagged, kept, never dropped
    assert r2["labels"]["gold"] == ["a3"] and r2["rebase"]["status"] == "flagged"
    assert r2["rebase"]["flags"] == [
        {"field": "labels.gold[0]", "id": "a3", "kind": "removed", "side": "gold"}
    ]
    assert "rebase" not in r3
    d = rep.to_dict()
    assert (d["records"], d["records_rebased"], d["records_flagged"], d["records_unchanged"]) == (3, 1, 1, 1)
    assert d["flagged_records"] == ["q2"]
    g = d["gold_ids"]
    assert g["a2"]["outcome"] == "replaced" and g["a2"]["records"] == ["q1"] and g["a2"]["occurrences"] == 5
    assert (
        g["b2"]["outcome"] == "moved" and g["a3"]["outcome"] == "removed" and g["b4"]["outcome"] == "merged"
    )
    assert d["pred_ids"]["b1"]["occurrences"] == 5


def test_rebase_file_cli_and_previous(tmp_path, releases):
    from kg_rageval.cli.main import main
    from kg_rageval.ontology.cache import save_compiled

    old, new = releases
    po, pn = save_compiled(old, tmp_path / "old.kgro"), save_compiled(new, tmp_path / "new.kgro")
    data = tmp_path / "r.jsonl"
    data.write_text(
        json.dumps({"id": 7, "labels": {"gold": "a2", "pred": []}, "rebase": {"old": True}})
        + "\n\n"
        + json.dumps({"id": "x", "labels": {"gold": ["a3"], "pred": ["a1"]}})
        + "\n"
    )
    out = tmp_path / "o.jsonl"
    assert (
        main(
            [
                "records",
                "rebase",
                "--from",
                str(po),
                "--to",
                str(pn),
                "--data",
                str(data),
                "--out",
                str(out),
                "--format",
                "json",
            ]
        )
        == 0
    )
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["id"] == 7 and lines[0]["labels"]["gold"] == "a1"
    assert lines[0]["rebase"]["previous"] == {"old": True}
    report = json.loads((tmp_path / "o.jsonl.rebase.json").read_text())
    from kg_rageval.audit.manifest import file_hash

    assert report["output"]["hash"] == file_hash(out) and report["to"]["content_hash"] == new.content_hash
    assert (
        main(
            [
                "records",
                "rebase",
                "--from",
                str(po),
                "--to",
                str(pn),
                "--data",
                str(data),
                "--out",
                str(tmp_path / "o2.jsonl"),
                "--strict",
            ]
        )
        == 1
    )
    assert (
        main(
            ["records", "rebase", "--from", str(po), "--to", str(pn), "--data", str(data), "--out", str(data)]
        )
        == 2
    )
    gz = tmp_path / "o.jsonl.gz"  # gzip in and out
    import gzip

    gz_in = tmp_path / "r.jsonl.gz"
    gz_in.write_bytes(gzip.compress(data.read_bytes()))
    assert (
        main(
            ["records", "rebase", "--from", str(po), "--to", str(pn), "--data", str(gz_in), "--out", str(gz)]
        )
        == 0
    )
    assert [json.loads(x) for x in gzip.decompress(gz.read_bytes()).decode().splitlines()] == lines
    assert main(["ontology", "diff", str(po), str(pn), "--exit-code"]) == 1
    assert main(["ontology", "diff", str(po), str(po), "--exit-code"]) == 0


def test_stability_same_predictions(releases, capsys):
    """Same predictions under both releases: b2 moved from B to A, so a prediction of b3 for
    gold b2 (siblings under OLD) shares no branch under NEW."""
    from kg_rageval.drift.stability import stability

    old, new = releases
    recs = [
        {"id": "1", "labels": {"gold": ["b2"], "pred": ["b3"]}},
        {"id": "2", "labels": {"gold": ["a1"], "pred": ["a1"]}},
        {"id": "3", "labels": {"gold": ["a3"], "pred": ["a1"]}},  # a3 removed: left out of both
    ]
    res = stability(old, new, recs)
    assert (res["records"], res["scored_both"], res["flagged"]) == (3, 2, 1)
    rows = {b["branch"]: b for b in res["branches"]}
    # OLD: record 1 under B: gold aug {B, b2}, pred {B, b3} -> hP = hR = 1/2
    # NEW: record 1 under A: gold aug {A, b2}, pred {B, b3} -> 0
    assert rows["B"]["metrics"]["hierarchical_f1"] == {
        "old": 0.5,
        "new": None,
        "delta": None,
        "missing": rows["B"]["metrics"]["hierarchical_f1"]["missing"],
    }
    assert rows["B"]["rows"] == {"old": 1, "new": 0}
    assert rows["B"]["changes"] == {"moved": 1, "merged": 1, "revoked": 1, "added": 1, "alias_added": 1}
    assert rows["B"]["changed_nodes"] == 5
    assert rows["A"]["rows"] == {"old": 1, "new": 2}
    assert rows["A"]["metrics"]["hierarchical_precision"]["old"] == 1.0
    assert rows["A"]["metrics"]["hierarchical_precision"]["new"] == pytest.approx(2 / 4)
    tot = res["total"]["hierarchical_precision"]
    assert (tot["old"], tot["new"]) == (pytest.approx(3 / 4), pytest.approx(2 / 4))


def test_match_ids_numpy():
    from kg_rageval.drift.diff import match_ids

    a = np.asarray(["c", "a", "zz", "b"])
    b = np.asarray(["b", "c", "a"])
    assert match_ids(a, b).tolist() == [1, 2, -1, 0]
    assert match_ids(np.asarray([], dtype=str), b).tolist() == []
    assert match_ids(a, np.asarray([], dtype=str)).tolist() == [-1] * 4


def test_stability_lists_changed_branches_without_rows(releases):
    from kg_rageval.drift.stability import stability

    old, new = releases
    res = stability(old, new, [{"id": "2", "labels": {"gold": ["a1"], "pred": ["a1"]}}])
    rows = {b["branch"]: b for b in res["branches"]}
    assert set(rows) == {"A", "B"}
    assert rows["B"]["rows"] == {"old": 0, "new": 0} and rows["B"]["changed_nodes"] == 5
    assert rows["B"]["metrics"]["hierarchical_f1"]["delta"] is None
    assert rows["A"]["metrics"]["hierarchical_f1"] == {"old": 1.0, "new": 1.0, "delta": 0.0}


def test_toy_fixture_releases(fixtures_dir):
    """fixtures/drift (docs/drift.md's example): HP:4 obsoleted (replaced by HP:8, no is_a any
    more: placed under the root, which is no parent), HP:7 merged into HP:6, HP:3 moved."""
    from kg_rageval.ontology import load_ontology

    old = load_ontology(fixtures_dir / "drift" / "old.obo")
    new = load_ontology(fixtures_dir / "drift" / "new.obo")
    assert (old.version, new.version) == ("toy/releases/2024-01-15", "toy/releases/2025-01-16")
    d = diff_ontologies(old, new)
    assert {k: v for k, v in d.counts().items() if v} == {
        "added": 3,
        "merged": 1,
        "deprecated": 1,
        "moved": 2,
        "relabelled": 1,
        "synonyms_changed": 1,
    }
    moved = {e["id"]: (e["old_parents"], e["new_parents"]) for e in d.entries("moved")}
    assert moved == {"HP:3": (["HP:2"], ["HP:10"]), "HP:4": (["HP:2"], [])}
    assert d.by_branch()["moved"] == {"HP:2": 2} and d.by_branch()["deprecated"] == {"HP:2": 1}
    m = build_mapping(old, new)
    assert [(m.resolve(x).outcome, m.resolve(x).to) for x in ("HP:4", "HP:7", "HP:3")] == [
        ("replaced", "HP:8"),
        ("merged", "HP:6"),
        ("same", "HP:3"),
    ]
    # a full-IRI spelling is written as the id (through the shared lookup), then mapped
    out: list[dict] = []
    iri = "http://purl.obolibrary.org/obo/HP_"
    rebase_records(
        [(1, "x", {"id": "x", "labels": {"gold": [iri + "3", iri + "4"], "pred": [iri + "99"]}})],
        m,
        out.append,
    )
    assert out[0]["labels"] == {"gold": ["HP:3", "HP:8"], "pred": [iri + "99"]}
    kinds = [(c["kind"], c["to"]) for c in out[0]["rebase"]["changes"]]
    assert kinds == [("respelled", "HP:3"), ("replaced", "HP:8")]
    assert out[0]["rebase"]["flags"][0]["kind"] == "unknown"


def test_rebase_refuses_every_output_that_is_one_of_its_inputs(tmp_path, releases, capsys):
    """Hard link of -d as -o (the input was truncated to 0 bytes), --report equal to -d or to
    --out, -o equal to the --to ontology: all exit 2 before anything is written."""
    import os

    from kg_rageval.cli.main import main
    from kg_rageval.ontology.cache import save_compiled

    old, new = releases
    po, pn = save_compiled(old, tmp_path / "old.kgro"), save_compiled(new, tmp_path / "new.kgro")
    data = tmp_path / "r.jsonl"
    data.write_text(json.dumps({"id": "x", "labels": {"gold": ["a2"], "pred": ["a1"]}}) + "\n")
    before, onto_before = data.read_bytes(), pn.read_bytes()
    os.link(data, tmp_path / "hard.jsonl")
    base = ["records", "rebase", "--from", str(po), "--to", str(pn), "--data", str(data)]
    cases = [
        (["--out", str(tmp_path / "hard.jsonl")], "--out .* is the same file as the input --data"),
        (["--out", str(tmp_path / "o.jsonl"), "--report", str(data)], "--report .* the input --data"),
        (["--out", str(tmp_path / "o.jsonl"), "--report", str(tmp_path / "o.jsonl")], "are the same file"),
        (["--out", str(pn)], "--out .* is the same file as the input --to"),
    ]
    import re

    for extra, message in cases:
        assert main(base + extra) == 2, extra
        assert re.search(message, capsys.readouterr().err), extra
    assert data.read_bytes() == before and pn.read_bytes() == onto_before
    assert not (tmp_path / "o.jsonl").exists()
    with pytest.raises(Exception, match="is the same file as the input --data"):  # the library refuses too
        rebase_file(old, new, data, tmp_path / "hard.jsonl")
    assert data.read_bytes() == before
