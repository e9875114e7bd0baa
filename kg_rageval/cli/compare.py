"""``kg-rageval compare``: N systems on the same queries — every measure, paired tests with
multiple-comparison correction, effect sizes, bootstrap CIs on the deltas, wins/ties/losses,
and per ontology branch which branches a candidate improves or breaks
(:mod:`kg_rageval.families.retrieval.significance`, ``docs/retrieval.md``)."""

from __future__ import annotations

from pathlib import Path

import click
import numpy as np

from kg_rageval.cli.common import fail, load_ontology_cli, ontology_format_option


@click.command()
@click.option(
    "--qrels",
    "qrels_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Qrels (TREC, BEIR TSV or ranx/ir_measures JSON).",
)
@click.option(
    "--run",
    "run_paths",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A system's run (repeatable; the first is the baseline unless --baseline).",
)
@click.option(
    "--data",
    "-d",
    "data_paths",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Instead of runs: one records file per system (retrieval sections), paired by record id.",
)
@click.option(
    "--name", "names", multiple=True, help="System names, in --run/--data order (default: file names)."
)
@click.option(
    "--baseline", default=None, help="The system the others are compared with (default: the first)."
)
@click.option(
    "--measure",
    "-m",
    "measures",
    multiple=True,
    metavar="NAME",
    help="Measures (repeatable or comma-separated; ir_measures or trec_eval names). "
    "Default: nDCG@10, AP, RR, P@10, R@100 (records: the records metrics).",
)
@click.option(
    "--test",
    "tests",
    multiple=True,
    type=click.Choice(["permutation", "t", "wilcoxon", "tukey"]),
    help="Tests (repeatable; default the three paired ones; tukey: Tukey HSD over all systems).",
)
@click.option(
    "--correction", type=click.Choice(["holm", "bonferroni", "none"]), default="holm", show_default=True
)
@click.option(
    "--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True
)
@click.option(
    "--level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Bootstrap CI level.",
)
@click.option("--resamples", type=click.IntRange(min=100), default=2000, show_default=True)
@click.option("--permutations", type=click.IntRange(min=100), default=10000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--trec-eval",
    "trec_eval",
    is_flag=True,
    help="Pair every judged query (trec_eval -c), not only those with a relevant document.",
)
@click.option("--rel-level", "-l", "rel_level", type=int, default=1, show_default=True)
@click.option("--depth", "-M", "depth", type=click.IntRange(min=1), default=None)
@click.option(
    "--ontology",
    "-O",
    "ontology_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Ontology: compare per branch (needs --corpus or --query-nodes with --qrels).",
)
@ontology_format_option
@click.option("--corpus", "corpus_path", type=click.Path(exists=True, dir_okay=False), default=None)
@click.option("--query-nodes", type=click.Path(exists=True, dir_okay=False), default=None)
@click.option(
    "--branch-depth",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Ontology depth of the branches (root 0).",
)
@click.option(
    "--branch-measure",
    "branch_measures",
    multiple=True,
    help="Measures tested per branch (default: the first measure).",
)
@click.option(
    "--rerank",
    is_flag=True,
    help="Two runs, a first stage then its reranking: refuse a query whose candidate sets differ; "
    "default measures nDCG@10, RR, P@1.",
)
@click.option(
    "--allow-mismatch",
    is_flag=True,
    help="--rerank: drop (and count) the queries whose candidate sets differ instead of refusing.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "latex", "json"]),
    default="text",
    show_default=True,
)
def command(
    qrels_path,
    run_paths,
    data_paths,
    names,
    baseline,
    measures,
    tests,
    correction,
    alpha,
    level,
    resamples,
    permutations,
    seed,
    trec_eval,
    rel_level,
    depth,
    ontology_path,
    ontology_format,
    corpus_path,
    query_nodes,
    branch_depth,
    branch_measures,
    rerank,
    allow_mismatch,
    fmt,
) -> None:
    """Compare N systems: means, paired tests (Holm/Bonferroni), effect sizes, CIs, W/T/L, per branch."""
    from kg_rageval.families.retrieval.significance import branch_masks, compare_systems, render

    if bool(run_paths) == bool(data_paths):
        fail("give the systems either as --run files (with --qrels) or as --data records files")
    paths = run_paths or data_paths
    if len(paths) < 2:
        fail("compare needs at least two systems")
    if names and len(names) != len(paths):
        fail(f"--name given {len(names)} times for {len(paths)} systems")
    sys_names = list(names) if names else _names(paths)
    if len(set(sys_names)) != len(sys_names):
        fail(f"system names must be unique, got {sys_names}")
    onto = load_ontology_cli(ontology_path, ontology_format) if ontology_path else None
    if rerank:
        if not run_paths or len(run_paths) != 2:
            fail("--rerank compares two --run files: the first stage, then its reranking")
        measures = measures or ("nDCG@10", "RR", "P@1")
    if run_paths:
        if not qrels_path:
            fail("--run needs --qrels")
        per_query, masks, nodes, meta = _from_runs(
            qrels_path,
            run_paths,
            sys_names,
            measures,
            trec_eval,
            rel_level,
            depth,
            onto,
            corpus_path,
            query_nodes,
            rerank=rerank,
            allow_mismatch=allow_mismatch,
        )
    else:
        if onto is None:
            fail("--data needs --ontology (records are scored against it)")
        per_query, masks, nodes, meta = _from_records(data_paths, sys_names, measures, onto, corpus_path)
    branches = (
        branch_masks(onto, nodes, depth=branch_depth) if onto is not None and nodes is not None else None
    )
    comp = compare_systems(
        per_query,
        baseline=baseline,
        masks=masks,
        tests=tuple(tests) or ("permutation", "t", "wilcoxon"),
        correction=correction,
        alpha=alpha,
        level=level,
        n_resamples=resamples,
        n_permutations=permutations,
        seed=seed,
        branches=branches,
        branch_measures=list(branch_measures) or None,
    )
    comp.meta.update(meta)
    click.echo(render(comp, fmt))


def _names(paths) -> list[str]:
    names = [Path(p).name for p in paths]
    return names if len(set(names)) == len(names) else [str(p) for p in paths]


def _from_runs(
    qrels_path,
    run_paths,
    sys_names,
    measures,
    trec_eval,
    rel_level,
    depth,
    onto,
    corpus_path,
    query_nodes,
    *,
    rerank=False,
    allow_mismatch=False,
):
    from kg_rageval.contract.measures import parse_measures
    from kg_rageval.families.retrieval.files import query_gold_nodes, read_query_nodes
    from kg_rageval.families.retrieval.measures import compute, scored_mask
    from kg_rageval.families.retrieval.trec import load_qrels, load_run

    try:
        specs = parse_measures(measures or ("nDCG@10", "AP", "RR", "P@10", "R@100"))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--measure") from None
    qrels = load_qrels(qrels_path)
    mode = "trec_eval" if trec_eval else "default"
    per_query, masks = {}, {}
    missing = {}
    runs = [load_run(path) for path in run_paths]
    keep = np.ones(len(qrels), dtype=bool)
    mismatched: list[str] = []
    if rerank:
        mismatched = _candidate_mismatch(runs, run_paths, allow_mismatch)
        keep = np.asarray([q not in set(mismatched) for q in qrels.qids], dtype=bool)
    for run, name in zip(runs, sys_names):
        pq = compute(qrels, run, specs, rel_level=rel_level, depth=depth)
        per_query[name] = {str(s): pq.values[str(s)] for s in specs}
        missing[name] = int(pq.ranked.missing.sum())
        masks = {str(s): scored_mask(pq, s, mode) & keep for s in specs}
    nodes = None
    if onto is not None:
        corpus = None
        if corpus_path:
            from kg_rageval.families.retrieval import read_corpus

            corpus = read_corpus(corpus_path, onto)
        table_ = read_query_nodes(query_nodes, onto) if query_nodes else None
        if corpus is None and table_ is None:
            fail("--ontology with --qrels needs --corpus or --query-nodes")
        nodes = query_gold_nodes(qrels, onto, corpus=corpus, table=table_, rel_level=rel_level)
    meta = {
        "qrels": qrels_path,
        "mode": mode,
        "n_queries": len(qrels),
        "n_missing_run": missing,
        "pairing": "every judged query"
        if trec_eval
        else "queries with a relevant document (missing runs scored 0 and counted)",
    }
    if rerank:
        meta["rerank"] = {"n_mismatched": len(mismatched), "mismatched": mismatched[:20]}
    return per_query, masks, nodes, meta


def _candidate_mismatch(runs, run_paths, allow_mismatch) -> list[str]:
    """Queries whose candidate sets differ between the first stage and the reranked run (a
    reranker only reorders: the delta is valid on identical sets; docs/fusion.md)."""
    sets = []
    for run in runs:
        s = run.vocab.strings
        sets.append(
            {
                q: {s[d] for d in run.docs[run.ptr[i] : run.ptr[i + 1]].tolist()}
                for i, q in enumerate(run.qids)
            }
        )
    a, b = sets
    bad = [q for q in dict.fromkeys([*a, *b]) if a.get(q) != b.get(q)]
    if bad and not allow_mismatch:
        q = bad[0]
        x, y = a.get(q, set()), b.get(q, set())
        fail(
            f"--rerank: query {q!r} has different candidate sets in {run_paths[0]} and {run_paths[1]} "
            f"({len(x - y)} only in the first stage, {len(y - x)} only in the reranked run); "
            f"{len(bad)} such queries (--allow-mismatch drops and counts them)"
        )
    return bad


def _from_records(data_paths, sys_names, measures, onto, corpus_path):
    from kg_rageval.records import read_records
    from kg_rageval.scoring import get_scorer

    opts = {"corpus": corpus_path} if corpus_path else {}
    bound = get_scorer("retrieval").bind(onto, where="compare", **opts)
    evs = [bound(read_records(p)).single for p in data_paths]
    fam = evs[0].family
    wanted = list(measures) or list(fam.metric_list)
    for m in wanted:
        if m not in fam.metric_list:
            raise click.BadParameter(
                f"unknown records metric {m!r}; choose from {fam.metric_list}", param_hint="--measure"
            )
    ids = [[str(x) for x in ev.record_ids.tolist()] for ev in evs]
    common = sorted(set(ids[0]).intersection(*ids[1:]))
    only = sorted(set().union(*ids) - set(common))
    if only:
        fail(f"records scored for some systems only (pairs must be complete): {only[:10]}")
    per_query, masks = {}, {}
    nodes = None
    scored = None
    for ev, name, rid in zip(evs, sys_names, ids):
        pos = {r: i for i, r in enumerate(rid)}
        order = np.asarray([pos[r] for r in common], dtype=np.int64)
        sc = ev.stats["n_scored"][order] > 0
        scored = sc if scored is None else (scored & sc)
        per_query[name] = {m: ev.stats[f"{m}.sum"][order] for m in wanted}
        if nodes is None and "gold_node" in ev.keys:
            nodes = ev.keys["gold_node"][order].tolist()
    masks = dict.fromkeys(wanted, scored)
    return per_query, masks, nodes, {"records": list(data_paths), "n_paired": len(common)}
