"""``kg-rageval score retrieval``: retrieval metrics from a records file (entitlement, filter
false exclusion and its attribution, per ontology node and slice) or straight from TREC/BEIR/JSON
qrels and runs (``--qrels``/``--run``; ontology optional; ``--trec-eval`` reproduces trec_eval
``-c``). See ``docs/retrieval.md``."""

from __future__ import annotations

import click

from kg_rageval.cli.common import (
    breakdown_keys,
    canonical_dicts,
    chunk_size_option,
    emit,
    emit_score,
    fail,
    family_kwargs,
    family_options,
    load_ontology_cli,
    metrics_table,
    ontology_format_option,
    score_output_options,
    score_payload,
    short_metrics,
    table,
    with_intervals,
)


@click.command()
@click.option(
    "--ontology",
    "-O",
    "ontology_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Ontology file; required with --data, optional with --qrels (then metrics per node).",
)
@ontology_format_option
@click.option(
    "--data",
    "-d",
    "data_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Records file (JSONL, see docs/records.md); or give --qrels and --run.",
)
@click.option(
    "--qrels",
    "qrels_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Qrels: TREC (qid iter doc rel, '#' comments, .gz), BEIR TSV or ranx/ir_measures JSON.",
)
@click.option(
    "--run",
    "run_paths",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Run: TREC (six or more columns, '#' comments, .gz) or ranx/ir_measures JSON (repeatable).",
)
@click.option(
    "--qrels-format", type=click.Choice(["auto", "trec", "beir", "json"]), default="auto", show_default=True
)
@click.option("--run-format", type=click.Choice(["auto", "trec", "json"]), default="auto", show_default=True)
@click.option(
    "--measure",
    "-m",
    "measures",
    multiple=True,
    metavar="NAME",
    help="Measure (repeatable or comma-separated): ir_measures names (nDCG@10, P(rel=2)@10, AP, RR, "
    "R@100, Judged@10, Bpref, infAP, ERR@10, RBP(p=0.8), Success@5) or trec_eval names "
    "(map, ndcg_cut_10, P_5); default: a standard set (all_trec's with --trec-eval). With --data: "
    "nDCG@k, P@k, R@k, Success@k, RR(@k), AP, Rprec only; a measure the mode cannot give is refused "
    "(exit 2), never dropped.",
)
@click.option(
    "--trec-eval",
    "trec_eval",
    is_flag=True,
    help="Aggregate exactly as trec_eval -c (every judged query counts, zero-relevance ones as 0) "
    "and print trec_eval's output format.",
)
@click.option(
    "--complete/--no-complete",
    "complete",
    default=True,
    show_default=True,
    help="With --trec-eval: -c (missing runs score 0); --no-complete stops at a missing query "
    "as trec_eval 10.0 does.",
)
@click.option(
    "--rel-level",
    "-l",
    "rel_level",
    type=int,
    default=1,
    show_default=True,
    help="Relevance threshold: grade >= this is relevant (trec_eval -l).",
)
@click.option(
    "--depth",
    "-M",
    "depth",
    type=click.IntRange(min=1),
    default=None,
    help="Evaluate only the first N ranked documents per query (trec_eval -M).",
)
@click.option("--per-query", "-q", "per_query", is_flag=True, help="Per-query values too (trec_eval -q).")
@click.option(
    "--query-nodes",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="With --qrels and --ontology: a query<TAB>node table giving each query's ontology node.",
)
@family_options("retrieval")
@click.option(
    "--breakdown",
    "breakdowns",
    multiple=True,
    metavar="KEY",
    help="Metrics per value of a row key: gold_node or slice:<name> (repeatable; slices by default).",
)
@click.option(
    "--rollup/--no-rollup",
    default=True,
    show_default=True,
    help="Metrics per ontology node, pooling each node's subtree (gold_node).",
)
@click.option(
    "--rollup-depth",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Roll up only the nodes down to this depth (root = 0); the nodes of --rollup-node are "
    "added whatever their depth.",
)
@click.option(
    "--rollup-node",
    "rollup_nodes",
    multiple=True,
    metavar="ID",
    help="Also roll up this ontology node (repeatable).",
)
@chunk_size_option
@score_output_options
def command(
    ontology_path,
    ontology_format,
    data_path,
    qrels_path,
    run_paths,
    qrels_format,
    run_format,
    measures,
    trec_eval,
    complete,
    rel_level,
    depth,
    per_query,
    query_nodes,
    breakdowns,
    rollup,
    rollup_depth,
    rollup_nodes,
    chunk_size,
    rows,
    fmt,
    ci,
    ci_level,
    seed,
    **kwargs,
) -> None:
    """Retrieval metrics: from records (Recall/Precision/Hit/nDCG/MRR@k, MAP, R-precision, filter false
    exclusion) or from TREC/BEIR/JSON qrels and runs (every ir_measures/trec_eval measure)."""
    if qrels_path or run_paths:
        if data_path:
            fail("give either --data (records) or --qrels with --run, not both")
        if not (qrels_path and run_paths):
            fail("--qrels needs at least one --run (and --run needs --qrels)")
        if fmt == "csv" or ci or rows:
            fail("--format csv, --ci and --rows apply to --data records; with --qrels use --per-query")
        opts = family_kwargs("retrieval", kwargs)
        _files(
            ontology_path,
            ontology_format,
            qrels_path,
            run_paths,
            qrels_format,
            run_format,
            measures,
            trec_eval,
            complete,
            rel_level,
            depth,
            per_query,
            query_nodes,
            opts.get("corpus"),
            opts.get("category_field", "categories"),
            bool(opts.get("dedupe")),
            rollup,
            fmt,
            (rollup_depth, rollup_nodes),
        )
        return
    if not data_path:
        fail("give --data RECORDS (with --ontology) or --qrels QRELS --run RUN")
    if not ontology_path:
        fail("--data needs --ontology (records are scored against the ontology)")
    from kg_rageval.families.retrieval import category_diagnosis
    from kg_rageval.scoring import get_scorer

    onto = load_ontology_cli(ontology_path, ontology_format)
    opts = family_kwargs("retrieval", kwargs)
    selected = _record_measures(measures, opts) if measures else None  # bare retrieval metric names
    corpus_path = opts.get("corpus")
    bound = get_scorer("retrieval").bind(onto, where="score retrieval", **opts)
    corpus = bound.inputs.get("corpus")
    result = bound(data_path, chunk_size=chunk_size)  # streamed in chunks (one chunk of dicts held)
    ev = result.single
    ks = bound.options["k"]
    keys = breakdown_keys(ev, breakdowns)
    canonical = with_intervals(result, ci, ci_level, seed)
    if selected is not None:  # --measure selects what is reported
        canonical = {f"retrieval.{n}": canonical[f"retrieval.{n}"] for n in selected}
    payload = score_payload(
        result,
        data_path=data_path,
        n_records=len(ev) + len(ev.unscored),
        onto=onto,
        rows=rows,
        breakdowns=keys,
        metrics=canonical,
    )
    payload["corpus"] = corpus_path
    if selected is not None:
        payload["measures"] = [f"retrieval.{n}" for n in selected]
    if rollup:
        payload["rollup"] = {
            node: {
                "n": g["n"],
                "depth": g["depth"],
                "metrics": canonical_dicts("retrieval", g["metrics"], only=selected),
            }
            for node, g in bounded_rollup(ev, onto, rollup_depth, rollup_nodes).items()
        }
        payload["rollup_skipped"] = ev.meta.get("rollup_skipped", 0)
        payload["rollup_depth"] = rollup_depth
    if corpus is not None:
        payload["category_diagnosis"] = category_diagnosis(ev, onto)
    emit_score(
        payload,
        fmt,
        lambda p: _render(p, ev, keys, onto, max(ks), short_metrics(canonical, "retrieval"), selected),
    )


def _record_measures(measures, opts: dict) -> list[str]:
    """The ``retrieval`` metric names ``--measure`` asks for in records mode (``nDCG@20`` →
    ``ndcg@20``; a cut-off not among ``--k`` is added, the attribution cut-off staying the
    largest k asked for with ``--k``). A measure the records mode does not compute is refused
    (exit 2) naming it and the qrels/run mode that does."""
    from kg_rageval.contract.measures import RECORD_METRICS, parse_measures, record_metric

    try:
        specs = parse_measures(measures)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--measure") from None
    names = [record_metric(s) for s in specs]
    lacking = [str(s) for s, n in zip(specs, names) if n is None]
    if lacking:
        known = ", ".join(
            x
            for m, (bare, cut) in RECORD_METRICS.items()
            for x in ((f"{m}@k" if cut else ""), (m if bare else ""))
            if x
        )
        fail(
            f"--measure {', '.join(lacking)}: not computed from records (--data computes "
            f"{known}, with default parameters); score "
            f"{'it' if len(lacking) == 1 else 'them'} from TREC/BEIR/JSON files with --qrels/--run"
        )
    ks = [int(k) for k in opts.get("k") or (1, 5, 10)]
    cuts = [int(s.cutoff) for s in specs if s.cutoff is not None and int(s.cutoff) not in ks]
    if cuts:
        if opts.get("attribution_k") is None:
            opts["attribution_k"] = max(ks)  # attribution where it was without --measure
        opts["k"] = tuple(sorted({*ks, *cuts}))
    return list(dict.fromkeys(n for n in names if n is not None))


def _files(
    ontology_path,
    ontology_format,
    qrels_path,
    run_paths,
    qrels_format,
    run_format,
    measures,
    trec_eval,
    complete,
    rel_level,
    depth,
    per_query,
    query_nodes,
    corpus_path,
    category_field,
    dedupe,
    rollup,
    fmt,
    rollup_bound=(2, ()),
):
    """The ``--qrels``/``--run`` path (see :mod:`kg_rageval.families.retrieval.files`)."""
    from pathlib import Path

    from kg_rageval.contract.measures import parse_measures
    from kg_rageval.families.retrieval.files import (
        query_gold_nodes,
        read_query_nodes,
        score_run,
        to_evaluation,
    )
    from kg_rageval.families.retrieval.measures import DEFAULT_MEASURES, TREC_ALL, trec_eval_lines
    from kg_rageval.families.retrieval.runs import KeyVocab
    from kg_rageval.families.retrieval.trec import compiled_pays, load_qrels, load_run, run_tag

    mode = "trec_eval" if trec_eval else "default"
    try:
        specs = parse_measures(measures or (TREC_ALL if trec_eval else DEFAULT_MEASURES))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--measure") from None
    if fmt == "text" and trec_eval:  # trec_eval's format has no line for them: refused, never dropped
        lacking = [str(s) for s in specs if s.trec_name is None]
        if lacking:
            fail(
                f"--trec-eval text output cannot show {', '.join(lacking)}: trec_eval has no such "
                f"measure (or not with these parameters); drop {'it' if len(lacking) == 1 else 'them'} "
                "from --measure, or use --format json (trec_eval aggregation, ir_measures names)"
            )
    # one reader for the qrels and the runs: the compiled one (numba) where the files are large
    # enough to repay importing it, so that the runs continue the qrels' document table
    compiled = compiled_pays([qrels_path, *run_paths])
    qrels = load_qrels(qrels_path, format=qrels_format, compiled=compiled)
    nodes = onto = None
    if ontology_path:
        onto = load_ontology_cli(ontology_path, ontology_format)
        corpus = None
        if corpus_path:
            from kg_rageval.families.retrieval import read_corpus

            corpus = read_corpus(corpus_path, onto, category_field=category_field)
        table_ = read_query_nodes(query_nodes, onto) if query_nodes else None
        if corpus is None and table_ is None:
            fail("--ontology with --qrels needs --corpus (document categories) or --query-nodes")
        nodes = query_gold_nodes(qrels, onto, corpus=corpus, table=table_, rel_level=rel_level)
    elif query_nodes or corpus_path:
        fail("--query-nodes and --corpus with --qrels need --ontology")
    names = _run_names(run_paths)
    scores = []
    for path, name in zip(run_paths, names):
        # a qrels file read by the compiled reader hands its document table on, the numpy
        # reader its ids (a KeyVocab): the run's documents get the qrels' codes as they are
        # read (no mapping of the run's ids after)
        shared = (
            qrels.vocab
            if getattr(qrels.vocab, "table", None) is not None or isinstance(qrels.vocab, KeyVocab)
            else None
        )
        run = load_run(path, format=run_format, dedupe=dedupe, vocab=shared, compiled=compiled)
        scores.append(
            (
                path,
                score_run(
                    qrels,
                    run,
                    specs,
                    name=name,
                    mode=mode,
                    rel_level=rel_level,
                    depth=depth,
                    complete=complete,
                ),
            )
        )
    if fmt == "text" and trec_eval:
        out = []
        for path, sc in scores:
            tag = run_tag(path) or Path(path).name
            out.extend(trec_eval_lines(sc.per_query, run_id=tag, per_query=per_query, complete=complete))
        click.echo("\n".join(out))
        return
    payload: dict = {
        "command": "score retrieval",
        "qrels": qrels_path,
        "mode": mode,
        "rel_level": rel_level,
        "depth": depth,
        "measures": [str(s) for s in specs],
        "runs": [],
    }
    rolls = {}
    for path, sc in scores:
        d = sc.to_dict(per_query=per_query)
        d["file"] = path
        if onto is not None and rollup:
            ev = to_evaluation(sc, mode, nodes=nodes)
            d["rollup"] = {
                node: {
                    "n": g["n"],
                    "depth": g["depth"],
                    "metrics": {m: v.to_dict() for m, v in g["metrics"].items()},
                }
                for node, g in bounded_rollup(ev, onto, *rollup_bound).items()
            }
            d["rollup_skipped"] = ev.meta.get("rollup_skipped", 0)
            rolls[sc.name] = d["rollup"]
        payload["runs"].append(d)
    if onto is not None:
        payload["ontology"] = {"source": onto.source, "hash": onto.content_hash}
    emit(payload, fmt, lambda p: _render_files(p, specs))


def bounded_rollup(ev, onto, max_depth: int, nodes=()) -> dict:
    """The roll-up the command shows: nodes down to ``max_depth`` plus the requested
    ``nodes`` (each subtree pooled as in the full roll-up; ontology index order)."""
    out = ev.rollup(onto, max_depth=max_depth)
    if nodes:
        extra = ev.rollup(onto, nodes=list(nodes))  # an unknown id raises UnknownIdError (exit 2)
        order = {i: n for n, i in ((n, onto.index(n)) for n in {**out, **extra})}
        merged = {**out, **extra}
        out = {order[i]: merged[order[i]] for i in sorted(order)}
    return out


def _run_names(paths) -> list[str]:
    from pathlib import Path

    names = [Path(p).name for p in paths]
    if len(set(names)) != len(names):
        names = [str(p) for p in paths]
    return names


def _render_files(payload: dict, specs) -> str:
    runs = payload["runs"]
    mode_note = (
        "trec_eval -c: every judged query in every mean, zero-relevance queries as 0"
        if payload["mode"] == "trec_eval"
        else "default: means over queries with a relevant document; queries without one are the "
        "answerability slice (counted, not averaged)"
    )
    parts = [f"mode: {mode_note}"]
    headers = ["measure", *[r["run"] for r in runs]]
    rows = []
    for s in specs:
        name = str(s)
        rows.append([name, *[r["values"][name] for r in runs]])
    parts.append(table(rows, headers))
    cnt = [
        [c, *[r[c] for r in runs]]
        for c in (
            "n_queries",
            "n_missing_run",
            "n_no_gold",
            "n_no_gold_nonempty_run",
            "n_run_only",
            "n_duplicates_removed",
        )
    ]
    parts.append("")
    parts.append(table(cnt, ["queries", *[r["run"] for r in runs]]))
    for r in runs:
        if "rollup" in r:
            cols = [str(s) for s in specs][:5]
            rr = [
                [node, g["depth"], g["n"], *(g["metrics"][c]["value"] for c in cols)]
                for node, g in sorted(r["rollup"].items(), key=lambda x: (x[1]["depth"], x[0]))[:40]
            ]
            parts.append(f"\n== {r['run']} by ontology node (subtree roll-up, first 40 by depth)")
            parts.append(table(rr, ["node", "depth", "queries", *cols]))
    return "\n".join(parts)


def _render(payload: dict, ev, keys: list[str], onto, kmax: int, metrics: dict, selected=None) -> str:
    parts = [f"{payload['counts']['records']} records, {len(ev)} with a retrieval section"]
    if ev.unscored:
        parts.append("unscored: " + ", ".join(f"{k}={v}" for k, v in ev.unscored_counts.items()))
    parts.append(metrics_table(metrics))
    cols = (
        selected[:5]
        if selected
        else [f"recall@{kmax}", f"ndcg@{kmax}", "mrr", "map", "filter_false_exclusion_rate"]
    )
    for k in keys:
        rows = [[str(v), g["n"], *(g["metrics"][c].value for c in cols)] for v, g in ev.breakdown(k).items()]
        parts.append(f"\n== by {k}")
        parts.append(table(rows, [k, "queries", *cols]))
    if "rollup" in payload:
        rows = []
        for node, g in sorted(payload["rollup"].items(), key=lambda x: (x[1]["depth"], x[0]))[:40]:
            m = g["metrics"]
            rows.append([node, g["depth"], g["n"], *(m[f"retrieval.{c}"]["value"] for c in cols)])
        parts.append("\n== by gold node (subtree roll-up, first 40 by depth)")
        parts.append(table(rows, ["node", "depth", "queries", *cols]))
    diag = payload.get("category_diagnosis")
    if diag and diag.get("sentences"):
        parts.append("\n== where false exclusions come from")
        parts.extend(diag["sentences"])
    return "\n".join(parts)
