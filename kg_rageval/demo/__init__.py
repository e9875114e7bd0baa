"""The demo that ``kg-rageval audit --demo`` runs: a real baseline KG-RAG system over the bundled
Disease Ontology cancer slim (CC0), evaluated end to end. ``--demo attack`` runs the same
system over the bundled MITRE ATT&CK Enterprise bundle instead.

:func:`build_demo` loads the ontology, builds the corpus from its definitions and synonyms,
generates labelled queries with hard cases, runs the system (:mod:`kg_rageval.demo.system`) on
every query and writes into ``out_dir``:

* the ontology file — a copy of the bundled one (the audit is self-contained);
* ``corpus.jsonl`` — the indexed documents with categories and entitlement fields;
* ``records.jsonl`` — one evaluation record per query (mentions, labels, retrieval, answer,
  reference);
* ``schema.yaml`` — the structured-output spec for the conformance family;
* ``run-manifest.json`` — the run manifest of the system's run (:func:`demo_run_manifest`:
  model = the demo system at this kg-rageval version, its decoding settings, the seed, the
  corpus and ontology hashes), so the audit's PROV-O trail records the run it audits;
* ``audit.yaml`` — the audit config with the demo's gates.

Everything is seeded: the same seed writes byte-identical files.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.base.resources import bundled_ontology
from kg_rageval.records import write_records


@dataclass(frozen=True)
class DemoProfile:
    """One bundled ontology with the demo system's wording, output schema and gates."""

    name: str
    ontology: str
    title: str
    noun: str
    output_field: str
    schema: str
    gates: tuple[str, ...]
    slice_gates: dict[str, list[str]] = field(default_factory=dict)
    node_gates: dict[str, list[str]] = field(default_factory=dict)
    coverage: dict[str, Any] = field(default_factory=dict)


_COMMON_GATES = (
    "hierarchy.hierarchical_f1 >= 0.8",
    "linking.linking_macro_f1 >= 0.85",
    "linking.strong_nil_match_recall >= 0.5",
    "retrieval.recall@10 >= 0.85",
    "retrieval.mrr >= 0.6",
    "ci_low(retrieval.ndcg@10) >= 0.6",
    "retrieval.filter_false_exclusion_rate <= 0.02",
    "conformance.schema_validity >= 0.99",
    "generation.faithfulness >= 0.85",
    "generation.refusal_recall >= 0.5",
    "provenance.citation_completeness >= 0.95",
)
"""Family-qualified so that two families producing the same metric name never make a gate
ambiguous. The baseline is expected to fail some of them (unsupported templated claims, NIL
concepts linked to their head noun): the demo shows what a failing audit looks like."""

PROFILES: dict[str, DemoProfile] = {
    "doid": DemoProfile(
        name="doid",
        ontology="doid-cancer-slim.obo",
        title="demo: Disease Ontology cancer slim baseline",
        noun="disease",
        output_field="disease",
        schema="title: DiseaseAnswer\nfields:\n  disease: {kind: node, required: true}\n  parent: {kind: node}\n",
        gates=_COMMON_GATES,
        slice_gates={
            "intent=description": ["retrieval.recall@10 >= 0.5"],
            "intent=label_lookup": ["retrieval.mrr >= 0.8"],
        },
        node_gates={
            "DOID:2531": ["hierarchy.hierarchical_f1 >= 0.7"],
            "DOID:3119": ["retrieval.recall@10 >= 0.8"],
        },
        coverage={
            "branches": [
                "DOID:2531",
                "DOID:3119",
                "DOID:120",
                "DOID:1319",
                "DOID:3070",
                "DOID:263",
                "DOID:1115",
                "DOID:1612",
                "DOID:1324",
            ],
            "thin": 3,
        },
    ),
    "attack": DemoProfile(
        name="attack",
        ontology="enterprise-attack-18.1.json.gz",
        title="demo: MITRE ATT&CK Enterprise 18.1 baseline",
        noun="technique",
        output_field="technique",
        schema=(
            "title: AttackAnswer\nfields:\n"
            "  technique: {kind: node, node_type: [technique, sub-technique], required: true}\n"
            "  parent: {kind: node, node_type: [tactic, technique]}\n"
        ),
        gates=_COMMON_GATES,
        slice_gates={
            "intent=description": ["retrieval.recall@10 >= 0.5"],
            "intent=label_lookup": ["retrieval.mrr >= 0.8"],
        },
        node_gates={"TA0006": ["hierarchy.hierarchical_f1 >= 0.7"], "TA0005": ["retrieval.recall@10 >= 0.8"]},
        coverage={"branch_depth": 1, "thin": 3},
    ),
}
DEMO_ONTOLOGY = PROFILES["doid"].ontology
DEMO_GATES = list(_COMMON_GATES)


def demo_config(profile: str = "doid", *, bootstrap: int = 500) -> dict[str, Any]:
    """The audit config the demo writes (paths relative to the demo directory)."""
    prof = _profile(profile)
    return {
        "name": prof.title,
        "ontology": prof.ontology,
        "records": "records.jsonl",
        "corpus": "corpus.jsonl",
        "spec": "schema.yaml",
        "families": {
            "hierarchy": {},
            "linking": {},
            "retrieval": {},
            "conformance": {},
            "generation": {},
            "provenance": {"manifests": [RUN_MANIFEST]},
        },
        "gates": list(prof.gates),
        "slice_gates": {k: list(v) for k, v in prof.slice_gates.items()},
        "node_gates": {k: list(v) for k, v in prof.node_gates.items()},
        "missing_runs": {"budget": 0.1},
        "bootstrap": {"n_resamples": bootstrap, "level": 0.95, "seed": 0},
        "baseline": {
            "records": "baseline.jsonl",
            "budgets": {"retrieval.recall@10": 0.02, "retrieval.mrr": 0.02, "hierarchy.hierarchical_f1": 0.0},
        },
        "coverage": dict(prof.coverage),
        "seed": 0,
        "judge": {"faithfulness": "extractive substring judge (kg_rageval.demo.system), deterministic"},
    }


RUN_MANIFEST = "run-manifest.json"
"""The run manifest :func:`build_demo` writes beside the records (the provenance family's
``manifests``)."""


def demo_run_manifest(
    ontology: Any, corpus_path: Path, *, seed: int, profile: str = "doid"
) -> dict[str, Any]:
    """The run manifest of the demo system's run (``docs/provenance.md``, *Run manifest*):
    everything it pins is known here, since the system under audit is kg-rageval's own
    :class:`~kg_rageval.demo.system.DemoSystem` — its name and this kg-rageval version, the
    settings its answers depend on (no sampling: the answer is extractive and deterministic),
    the seed of the run, ``corpus_hash`` (the written corpus file's sha256) and
    ``ontology_hash`` (:attr:`Ontology.content_hash`)."""
    from kg_rageval import __version__
    from kg_rageval.base.hashing import file_hash
    from kg_rageval.demo.system import DemoSystem

    defaults = DemoSystem.__init__.__kwdefaults__ or {}
    return {
        "run_id": f"demo-{_profile(profile).name}-seed-{seed}",
        "model": {
            "name": "kg-rageval demo system (kg_rageval.demo.system.DemoSystem)",
            "version": __version__,
        },
        "decoding": {
            "answer": "extractive: templated lead sentence + first sentence of the top document",
            "sampling": "none (deterministic)",
            "retrieval": "BM25 pre-filtered by entitlements and within parent(linked concept)",
            "k": defaults.get("k"),
            "refuse_below": defaults.get("refuse_below"),
        },
        "seed": seed,
        "corpus_hash": file_hash(corpus_path),
        "ontology_hash": ontology.content_hash,
    }


def _profile(name: str) -> DemoProfile:
    if name not in PROFILES:
        raise InputError(f"unknown demo {name!r}; available: {', '.join(PROFILES)}")
    return PROFILES[name]


def run_system(
    ontology: Any, *, seed: int = 0, progress: bool = False, profile: str = "doid"
) -> dict[str, Any]:
    """Build the corpus, generate the queries and run the system: records + corpus."""
    from kg_rageval.demo.system import DemoSystem, build_corpus, generate_queries

    prof = _profile(profile)
    rng = np.random.default_rng(seed)
    corpus = build_corpus(ontology, rng)
    queries = generate_queries(ontology, corpus, rng, noun=prof.noun)
    system = DemoSystem(ontology, corpus, output_field=prof.output_field)
    plain = DemoSystem(ontology, corpus, output_field=prof.output_field, use_filters=False)
    doc_type = {d["id"]: d["type"] for d in corpus.docs}
    records = []
    items: Any = enumerate(queries)
    if progress:
        from tqdm import tqdm

        items = tqdm(items, total=len(queries), desc="demo queries", file=sys.stderr, leave=False)
    baseline = []
    # every query linked in one batched call; both systems build the same linker (same
    # ontology, held-out set and options), so the links serve both
    links = system.link_many([q["query"] for q in queries])
    for n, q in items:
        principal = {"tenant": "acme" if rng.random() < 0.85 else "globex"}
        records.append(
            _record(ontology, prof, n, q, system.answer(q["query"], principal, links[n]), principal, doc_type)
        )
        baseline.append(
            _record(ontology, prof, n, q, plain.answer(q["query"], principal, links[n]), principal, doc_type)
        )
    docs = [
        {k: v for k, v in d.items() if not k.startswith("_") and k != "concept"}
        for d in corpus.docs
        if not d.get("_held_out")
    ]
    return {"records": records, "baseline": baseline, "corpus": docs, "held_out": corpus.held_out}


def _record(
    ontology: Any,
    prof: DemoProfile,
    n: int,
    q: dict[str, Any],
    out: dict[str, Any],
    principal: dict[str, str],
    doc_type: dict[str, str],
) -> dict[str, Any]:
    """One evaluation record: the query's labels and the system's outputs."""
    rec: dict[str, Any] = {"id": f"q-{n + 1:04d}", "query": q["query"], "slices": {"intent": q["intent"]}}
    rec["mentions"] = {"gold": q["gold_mentions"], "pred": out["mentions"]} if q["gold_mentions"] else None
    if q["gold_node"] is not None:
        rec["labels"] = {"gold": [q["gold_node"]], "pred": [out["linked"]] if out["linked"] else []}
    rec["retrieval"] = {
        "gold": q["gold_docs"] or {},
        "run": out["run"],
        "filters": out["filters"],
        "principal": principal,
        "contexts": out["contexts"],
    }
    rec["answer"] = out["answer"]
    ref: dict[str, Any] = {"answerable": q["answerable"]}
    if q["gold_node"] is not None:
        gid = q["gold_node"]
        parents = [p for p in ontology.parents(gid) if p != ontology.root_id]
        ref["answer"] = ontology.definitions[ontology.index(gid)] or ""
        ref["output"] = {prof.output_field: gid, **({"parent": parents[0]} if parents else {})}
    rec["reference"] = ref
    if q["gold_docs"]:
        first = next(iter(q["gold_docs"]))
        rec["slices"]["doc_type"] = doc_type.get(first, "definition")
    return {k: v for k, v in rec.items() if v is not None}


def build_demo(
    out_dir: str | Path, *, seed: int = 0, progress: bool = False, bootstrap: int = 500, profile: str = "doid"
) -> dict[str, Any]:
    """Build the demo system's outputs and audit config into ``out_dir`` (see module docstring).
    ``profile``: ``"doid"`` (Disease Ontology cancer slim, the default) or ``"attack"`` (MITRE
    ATT&CK Enterprise)."""
    import yaml

    from kg_rageval.ontology import load_ontology

    prof = _profile(profile)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    src = bundled_ontology(prof.ontology)
    onto_path = out / prof.ontology
    shutil.copyfile(src, onto_path)
    ontology = load_ontology(onto_path)
    built = run_system(ontology, seed=seed, progress=progress, profile=profile)
    for name, rows in (
        ("records", built["records"]),
        ("baseline", built["baseline"]),
        ("corpus", built["corpus"]),
    ):
        write_records(out / f"{name}.jsonl", rows, sort_keys=True)
    (out / "schema.yaml").write_text(prof.schema, encoding="utf-8")
    manifest = demo_run_manifest(ontology, out / "corpus.jsonl", seed=seed, profile=profile)
    (out / RUN_MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    cfg = demo_config(profile, bootstrap=bootstrap)
    (out / "audit.yaml").write_text(
        "# kg-rageval audit config written by `kg-rageval audit --demo` (see docs/audit.md)\n"
        + yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True),
        encoding="utf-8",
    )
    return {
        "config": out / "audit.yaml",
        "n_records": len(built["records"]),
        "n_documents": len(built["corpus"]),
        "held_out": built["held_out"],
        "out": out,
    }
