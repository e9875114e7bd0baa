"""The memoised provenance members and exclusion attribution against the plain computation.

* Inside :func:`~kg_rageval.families.provenance.citations.memo_claims` (as :func:`score_provenance` runs
  them) citations, depth and the PROV-O trail read each record's citations once; outside it
  every call reads the record. Both must give the same rows, metrics and trail.
* :func:`~kg_rageval.audit.pernode.exclusion_attribution` memoises filter and entitlement
  verdicts per (document, filter/principal); the reference below is the previous per-record
  loop, kept here to compare with, on generated ATT&CK records with added ``eq``/``in``/``ne``
  filters, list-valued and metadata entitlements and unhashable filter values."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from report_helpers import without_timings  # tests/ is on sys.path

from kg_rageval.records import read_records

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "fixtures" / "generation"
ONTO = ROOT / "ontologies" / "enterprise-attack-18.1.json.gz"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_audit import generate
    from kg_rageval.ontology import load_ontology

    tmp = tmp_path_factory.mktemp("gen")
    onto = load_ontology(ONTO)
    generate(onto, 600, 5, tmp)
    return onto, read_records(tmp / "records.jsonl"), read_records(tmp / "corpus.jsonl"), tmp


def _same_eval(a, b):
    assert a.rows() == b.rows()
    assert a.metrics() == b.metrics()
    assert a.unscored == b.unscored


@pytest.mark.parametrize("which", ["generated", "fixture"])
def test_memoised_provenance_equals_plain_reads(generated, which):
    from kg_rageval.families.provenance import read_corpus, score_citations, score_depth, score_provenance
    from kg_rageval.families.provenance.audit_trail import score_trail

    if which == "generated":
        _, records, _, tmp = generated
        corpus = read_corpus(tmp / "corpus.jsonl")
    else:
        records, corpus = read_records(FIX / "prov_records.jsonl"), read_corpus(FIX / "corpus.jsonl")
    memo = score_provenance(None, records, corpus=corpus, trail=True)
    _same_eval(memo["citations"], score_citations(records))  # outside memo_claims: plain reads
    _same_eval(memo["provenance_depth"], score_depth(records, corpus))
    plain_trail = score_trail(records, corpus=corpus)
    _same_eval(memo["prov_trail"], plain_trail)
    assert memo["prov_trail"].meta == plain_trail.meta
    assert memo["citations"].metrics()["citation_completeness"].denominator > 0


def ref_exclusions(records, corpus, ontology, branch_of):
    """The previous exclusion attribution (one verdict per record, gold document and filter)."""
    from kg_rageval.audit.pernode import _entitlement_excluded, _keeps, _run_ids, gold_node_of

    docs = {str(d["id"]): d for d in corpus}
    by_field, by_branch, ent, n_gold, inc, ex = {}, {}, 0, 0, 0, []
    for r in records:
        ret = r.get("retrieval")
        if not isinstance(ret, dict):
            continue
        gold = ret.get("gold")
        retrieved = _run_ids(ret.get("run"))
        for gid in list(gold) if isinstance(gold, (dict, list)) else []:
            doc = docs.get(str(gid))
            if doc is None:
                continue
            n_gold += 1
            if _entitlement_excluded(doc, ret.get("principal") or {}):
                ent += 1
                continue
            for f in ret.get("filters") or []:
                if isinstance(f, dict) and not _keeps(doc, f, ontology):
                    if str(gid) in retrieved:
                        inc += 1
                        if len(ex) < 20:
                            ex.append([str(r.get("id")), str(gid)])
                        break
                    by_field[str(f.get("field"))] = by_field.get(str(f.get("field")), 0) + 1
                    br = branch_of(gold_node_of(r))
                    by_branch[br] = by_branch.get(br, 0) + 1
                    break
    return {
        "gold_documents": n_gold,
        "excluded_by_filter": dict(sorted(by_field.items(), key=lambda kv: -kv[1])),
        "excluded_by_branch": dict(sorted(by_branch.items(), key=lambda kv: -kv[1])),
        "excluded_by_entitlement": ent,
        "inconsistent_filter_log": inc,
        "inconsistent_examples": ex,
    }


def test_memoised_exclusions_equal_the_previous_code(generated):
    from kg_rageval.audit.config import CoverageConfig
    from kg_rageval.audit.pernode import exclusion_attribution, make_branch_of

    onto, records, corpus, _ = generated
    rng = np.random.default_rng(1)
    corpus = json.loads(json.dumps(corpus))
    for k, d in enumerate(corpus):  # list-valued and metadata entitlements, a second field
        if k % 7 == 0:
            d["metadata"] = {"region": ["eu", "us"] if k % 2 else "eu"}
        d["lang"] = "nl" if k % 3 == 0 else "en"
    records = json.loads(json.dumps(records))
    extra = [
        {"field": "lang", "op": "eq", "value": "en"},
        {"field": "lang", "op": "in", "value": ["nl", "de"]},
        {"field": "type", "op": "ne", "value": "proc"},
        {"field": "type", "op": "==", "value": "desc"},
        {"field": "category", "op": "within", "value": "TA0006"},
        "not a filter",
        {"field": "lang", "op": "in", "value": [{"odd": 1}, "en"]},
    ]
    for r in records:
        ret = r["retrieval"]
        u = rng.random()
        if u < 0.5:
            ret["filters"] = list(ret["filters"]) + [extra[int(rng.integers(len(extra)))]]
        if rng.random() < 0.3:
            ret["principal"] = {"tenant": ret["principal"]["tenant"], "region": ["eu"] if u < 0.2 else "us"}
    for cfg in (CoverageConfig(), CoverageConfig(branch_depth=2)):
        branch_of = make_branch_of(onto, cfg)
        got = exclusion_attribution({}, records, corpus, onto, branch_of=branch_of)
        assert got == ref_exclusions(records, corpus, onto, branch_of)
        assert got["excluded_by_filter"] and got["excluded_by_entitlement"] > 0


@pytest.mark.slow
def test_audit_freezes_its_inputs_only_while_it_runs(generated):
    """The loaded inputs are out of the garbage collector's reach while the audit runs and back
    after it; a caller's own :func:`gc.freeze` is left alone; the report is the same."""
    import gc

    from kg_rageval.audit import runner
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.report_json import dumps, report_dict

    _, _, _, tmp = generated
    cfg = config_from_mapping(
        {
            "name": "gc",
            "ontology": str(ONTO),
            "records": "records.jsonl",
            "corpus": "corpus.jsonl",
            "spec": "spec.yaml",
            "families": {f: {} for f in ("hierarchy", "retrieval", "provenance")},
            "gates": ["hierarchy.hierarchical_f1 >= 0.9", "provenance.citation_completeness >= 0.9"],
        },
        base_dir=tmp,
    )
    cfg.chunk_size = 0  # the records held (a streamed audit holds none: its inputs are frozen, below)
    seen = []
    real = runner.run_families

    def spy(*a, **k):
        seen.append(gc.get_freeze_count())
        return real(*a, **k)

    runner.run_families = spy
    try:
        assert gc.get_freeze_count() == 0
        a = runner.run_audit(cfg, progress=False)
        assert seen[-1] > 0 and gc.get_freeze_count() == 0  # frozen while the families ran, then released
        gc.freeze()
        before = gc.get_freeze_count()
        try:
            b = runner.run_audit(cfg, progress=False)
            assert (
                gc.get_freeze_count() > before // 2
            )  # the caller's freeze: not undone (a frozen object may die)
        finally:
            gc.unfreeze()
    finally:
        runner.run_families = real
    assert dumps(without_timings(report_dict(a))) == dumps(without_timings(report_dict(b)))
    # streamed: the ontology and corpus are frozen while the chunks go through the families
    import kg_rageval.scoring as contract

    real_stream = contract.stream_families

    def stream_spy(*a, **k):
        seen.append(gc.get_freeze_count())
        return real_stream(*a, **k)

    contract.stream_families = stream_spy
    try:
        cfg.chunk_size = None
        c = runner.run_audit(cfg, progress=False)
        assert c.chunk_size is not None and seen[-1] > 0 and gc.get_freeze_count() == 0
    finally:
        contract.stream_families = real_stream
    assert dumps(without_timings(report_dict(c))) == dumps(without_timings(report_dict(a)))
