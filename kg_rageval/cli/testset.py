"""``kg-rageval testset build|plan|split|check``: ontology-driven test sets (docs/testset.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kg_rageval.cli.common import (
    emit,
    format_option,
    load_ontology_cli,
    ontology_format_option,
    ontology_option,
    table,
)

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="testset.toml (also .yaml/.json); see docs/testset.md.",
)


@click.group()
def testset() -> None:
    """Build, plan, split and check ontology-driven test sets."""


@testset.command()
@ontology_option
@ontology_format_option
@click.option(
    "--corpus",
    "corpus_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Documents JSONL: id, categories (ontology ids), type, source_id, session.",
)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output directory.")
@config_option
@click.option(
    "--n",
    "n_total",
    type=click.IntRange(1),
    default=None,
    help="Scale the configured counts per kind to this many cases in total.",
)
@click.option("--seed", type=int, default=None, help="Override the config's seed.")
@format_option
def build(ontology_path, ontology_format, corpus_path, out_dir, config_path, n_total, seed, fmt) -> None:
    """Generate labelled cases of every kind (lookups, contrasts, counterfactuals, distractors, NIL
    probes, negation/quantifiers, out-of-scope, multi-hop) into OUT/records.jsonl, with the held-out
    ontology copy and the hashed manifest."""
    from kg_rageval.base.outputs import refuse_overwrite
    from kg_rageval.testset import build_testset, load_testset_config, read_testset_corpus
    from kg_rageval.testset.store import BUILD_FILES, write_build

    refuse_overwrite(
        {"--out": [Path(out_dir) / f for f in BUILD_FILES]},
        {"--corpus": corpus_path, "--ontology": ontology_path, "--config": config_path},
    )
    cfg = load_testset_config(config_path, seed=seed)
    if n_total is not None:
        cfg = cfg.scaled(n_total)
    onto = load_ontology_cli(ontology_path, ontology_format)
    corpus = read_testset_corpus(
        corpus_path,
        onto,
        category_field=cfg.category_field,
        type_field=cfg.type_field,
        unknown_categories=cfg.unknown_categories,
    )
    result = build_testset(onto, corpus, cfg)
    manifest = write_build(
        result, out_dir, ontology=onto, corpus_path=corpus_path, n_documents=len(corpus), policy=cfg.policy()
    )
    payload = {
        "command": "testset build",
        "out": str(out_dir),
        "n_records": len(result.records),
        "requested": result.requested,
        "produced": result.produced,
        "shortfall": result.shortfall,
        "held_out": len(result.held_out),
        "unknown_categories": corpus.n_unknown_categories,
        "paraphrase": result.paraphrase,
        "manifest_hash": manifest["hash"],
    }

    def render(p: dict[str, Any]) -> str:
        rows = [[k, p["requested"][k], p["produced"][k], p["shortfall"].get(k, "")] for k in p["requested"]]
        return "\n".join(
            [
                table(rows, ["kind", "requested", "built", "short"]),
                f"{p['n_records']} cases written to {p['out']}/records.jsonl "
                f"({p['held_out']} concepts held out: ontology-heldout.kgro); manifest {p['manifest_hash']}",
            ]
        )

    emit(payload, fmt, render)


def _fmt_num(x: float | None, pct: bool = True) -> str:
    return "" if x is None else (f"±{100 * x:.1f}" if pct else f"{x:.3f}")


@testset.command()
@ontology_option
@ontology_format_option
@click.option(
    "--records",
    "records_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="The test set (records JSONL).",
)
@click.option(
    "--corpus",
    "corpus_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Documents JSONL (document type of the gold documents for the coverage matrix).",
)
@config_option
@click.option(
    "--p",
    "p",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Assumed metric value (a proportion).",
)
@click.option(
    "--half-width",
    type=click.FloatRange(0, 1, min_open=True),
    default=None,
    help="Target half-width of the interval per branch/slice (0.055 = ±5.5 points).",
)
@click.option(
    "--delta",
    type=click.FloatRange(0, 1, min_open=True),
    default=None,
    help="Minimum paired difference to detect.",
)
@click.option("--branch-depth", type=click.IntRange(1), default=None, help="Ontology depth of a branch.")
@format_option
def plan(
    ontology_path,
    ontology_format,
    records_path,
    corpus_path,
    config_path,
    p,
    half_width,
    delta,
    branch_depth,
    fmt,
) -> None:
    """Coverage matrix (intent × document type × branch, empty/thin cells) and the queries each
    branch and slice needs for a target interval half-width or paired delta."""
    from kg_rageval.records import iter_objects, read_records
    from kg_rageval.testset import load_testset_config
    from kg_rageval.testset.config import with_overrides
    from kg_rageval.testset.plan import plan_testset

    cfg = load_testset_config(config_path)
    pcfg = with_overrides(cfg.plan, p=p, half_width=half_width, delta=delta, branch_depth=branch_depth)
    onto = load_ontology_cli(ontology_path, ontology_format)
    records = read_records(records_path)
    corpus = [obj for _l, _r, obj in iter_objects(corpus_path)] if corpus_path else None
    result = plan_testset(records, onto, pcfg, corpus=corpus)
    payload = {"command": "testset plan", "records": records_path, "n_records": len(records), **result}

    def render(p: dict[str, Any]) -> str:
        t = p["targets"]
        cov = p["coverage"]
        rows = [
            [
                r["group"],
                r["value"],
                r["n"],
                _fmt_num(r["half_width"]),
                r["n_needed_ci"],
                "yes" if r["decides_ci"] else f"no (+{r['short_ci']})",
                _fmt_num(r["mde"], False),
                "yes" if r["decides_delta"] else f"no (+{r['short_delta']})",
            ]
            for r in p["rows"]
            if r["n"]
        ]
        empty = [f"{r['group']}={r['value']}" for r in p["rows"] if not r["n"]]
        head = (
            f"targets: p={t['p']}, ±{100 * t['half_width']:.1f} points at {100 * t['level']:.0f} % "
            f"→ {t['n_needed_ci']} queries per group; paired delta {t['delta']} (alpha {t['alpha']}, power "
            f"{t['power']}, rho {t['rho']}) → {t['n_needed_delta']} queries"
        )
        return "\n".join(
            [
                head,
                table(
                    rows,
                    ["group", "value", "n", "half-width (pts)", "need", "decides CI", "MDE", "decides delta"],
                ),
                f"{len(empty)} groups without any query: {', '.join(empty[:20])}"
                + (" ..." if len(empty) > 20 else ""),
                f"coverage: {cov['n_cells']} cells (intent × doc type × branch), {cov['n_empty']} empty, "
                f"{cov['n_thin']} thin (< {cov['thin_threshold']})",
            ]
        )

    emit(payload, fmt, render)


@testset.command()
@click.option(
    "--records",
    "records_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="The test set to split (records JSONL).",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Writes development.jsonl, calibration.jsonl, release.jsonl, monitoring.jsonl here.",
)
@click.option(
    "--corpus",
    "corpus_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Documents JSONL: source_id of gold documents for records without testset.sources.",
)
@config_option
@click.option("--seed", type=int, default=None, help="Override the split seed (default: the config's seed).")
@format_option
def split(records_path, out_dir, corpus_path, config_path, seed, fmt) -> None:
    """Four sets (development, judge calibration, release, monitoring) in the configured
    proportions; records sharing a source document or session stay in one set."""
    from kg_rageval.base.outputs import refuse_overwrite
    from kg_rageval.records import read_records, write_records
    from kg_rageval.testset import load_testset_config
    from kg_rageval.testset.config import SETS
    from kg_rageval.testset.split import split_summary, split_testset
    from kg_rageval.testset.store import source_map

    refuse_overwrite(
        {"--out": [Path(out_dir) / f"{name}.jsonl" for name in SETS]},
        {"--records": records_path, "--corpus": corpus_path, "--config": config_path},
    )
    cfg = load_testset_config(config_path)
    s = seed if seed is not None else (cfg.split.seed if cfg.split.seed is not None else cfg.seed)
    records = read_records(records_path)
    sets = split_testset(records, cfg.split.proportions, seed=s, source_of=source_map(corpus_path))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, recs in sets.items():
        write_records(out / f"{name}.jsonl", recs, sort_keys=True)
    payload = {
        "command": "testset split",
        "out": str(out),
        "seed": s,
        "n_records": len(records),
        "sets": split_summary(sets, cfg.split.proportions),
    }
    emit(
        payload,
        fmt,
        lambda p: table(
            [
                [k, v["records"], f"{100 * (v['share'] or 0):.1f} %", f"{100 * v['target']:.1f} %"]
                for k, v in p["sets"].items()
            ],
            ["set", "records", "share", "target"],
        ),
    )


@testset.command()
@click.argument("sets", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--ontology",
    "-O",
    "ontology_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Ontology (its content hash goes into the manifest).",
)
@ontology_format_option
@click.option(
    "--corpus",
    "corpus_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Documents JSONL (hashed; source_id of gold documents).",
)
@config_option
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the hashed test-set manifest here (default: testset-manifest.json in the split "
    "directory, when SETS is one directory).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1, min_open=True),
    default=None,
    help="Near-duplicate Jaccard threshold (MinHash estimate).",
)
@format_option
def check(
    sets, ontology_path, ontology_format, corpus_path, config_path, manifest_path, threshold, fmt
) -> None:
    """Leakage between sets (shared source documents/sessions, exact and near-duplicate queries)
    and the hashed test-set manifest. Exit 1 when anything leaks."""
    import sys

    from kg_rageval.testset import load_testset_config
    from kg_rageval.testset.check import check_leakage, testset_manifest
    from kg_rageval.testset.config import with_overrides
    from kg_rageval.testset.store import MANIFEST_NAME, read_sets, source_map, write_json

    cfg = load_testset_config(config_path)
    ccfg = with_overrides(cfg.check, threshold=threshold)
    loaded = read_sets(sets)
    src = source_map(corpus_path)
    report = check_leakage({k: v[1] for k, v in loaded.items()}, ccfg, source_of=src)
    onto = load_ontology_cli(ontology_path, ontology_format) if ontology_path else None
    if manifest_path is None and len(sets) == 1 and Path(sets[0]).is_dir():
        manifest_path = str(Path(sets[0]) / MANIFEST_NAME)
    manifest = None
    if manifest_path:
        manifest = testset_manifest(
            loaded,
            ontology=onto,
            corpus=corpus_path,
            n_documents=len(src) if src else None,
            policy=cfg.policy(),
            leakage=report,
        )
        write_json(Path(manifest_path), manifest)
    payload = {
        "command": "testset check",
        **report,
        "manifest": manifest_path,
        "manifest_hash": manifest["hash"] if manifest else None,
    }

    def render(p: dict[str, Any]) -> str:
        nd = p.get("near_duplicates") or {}
        lines = [
            f"sets: {', '.join(f'{k} ({v})' for k, v in p['sets'].items())}",
            f"shared source documents/sessions: {p['shared_sources']['count']}",
            f"exact duplicate queries across sets: {p['exact_duplicates']['count']}",
            f"near-duplicate queries across sets (Jaccard >= {nd.get('threshold')}): {nd.get('count')}"
            f" ({nd.get('within_set_pairs')} pairs within one set, not leakage)",
        ]
        for e in p["shared_sources"]["examples"][:5]:
            lines.append(f"  shared {e['key']} in {', '.join(e['sets'])}")
        for e in p["exact_duplicates"]["examples"][:5]:
            lines.append(f"  duplicate {e['query']!r}: {e['records']}")
        for e in nd.get("examples", [])[:5]:
            lines.append(f"  near {e['similarity']}: {e['a'][:2]} {e['a'][2]!r} ~ {e['b'][:2]} {e['b'][2]!r}")
        lines.append("verdict: " + ("LEAKAGE" if p["leaks"] else "no leakage"))
        if p["manifest"]:
            lines.append(f"manifest {p['manifest']} ({p['manifest_hash']})")
        return "\n".join(lines)

    emit(payload, fmt, render)
    if report["leaks"]:
        sys.exit(1)
