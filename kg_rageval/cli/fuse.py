"""``kg-rageval fuse``: N runs fused into one TREC run — RRF, convex combination (with an α
sweep scored against qrels), CombSUM, CombMNZ, CombMAX, CombANZ, with min-max / z-score / sum /
no normalisation (:func:`kg_rageval.families.retrieval.fusion.fuse`, equal to ranx's ``fuse``;
``docs/fusion.md``)."""

from __future__ import annotations

import os

import click

from kg_rageval.cli.common import emit, fail


@click.command()
@click.option(
    "--run",
    "run_paths",
    multiple=True,
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="An input run (TREC or ranx JSON; repeat, at least two).",
)
@click.option(
    "--method",
    type=click.Choice(["rrf", "convex", "wsum", "combsum", "combmnz", "combmax", "combanz"]),
    default="rrf",
    show_default=True,
)
@click.option(
    "--norm",
    type=click.Choice(["min-max", "zmuv", "zscore", "sum", "none"]),
    default="min-max",
    show_default=True,
    help="Per-query normalisation before score fusion (RRF uses ranks only).",
)
@click.option("-k", "k", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True)
@click.option("--weight", "weights", multiple=True, type=float, help="wsum: one weight per --run, in order.")
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1),
    default=None,
    help="convex (two runs): weight of the first; without it --qrels picks the best of the sweep.",
)
@click.option(
    "--alphas",
    default="0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1",
    show_default=True,
    help="convex with --qrels: the α grid of the sweep (comma-separated).",
)
@click.option(
    "--qrels",
    "qrels_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Score the inputs and the fusion (and the α sweep of convex) against these qrels.",
)
@click.option("--measure", "-m", default="nDCG@10", show_default=True, help="Measure of the scoring.")
@click.option("--rel-level", "-l", "rel_level", type=int, default=1, show_default=True)
@click.option(
    "--output",
    "-o",
    "output",
    type=click.Path(dir_okay=False),
    required=True,
    help="Write the fused TREC run here (never over an input).",
)
@click.option("--tag", default="kg-rageval-fused", show_default=True, help="Run tag of the output.")
@click.option("--depth", type=click.IntRange(min=1), default=None, help="Keep the top N per query.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(
    run_paths,
    method,
    norm,
    k,
    weights,
    alpha,
    alphas,
    qrels_path,
    measure,
    rel_level,
    output,
    tag,
    depth,
    fmt,
) -> None:
    """Fuse N runs into one TREC run (RRF, convex with an α sweep, CombSUM/MNZ/MAX/ANZ)."""
    from kg_rageval.base.outputs import atomic_path, refuse_overwrite, writing
    from kg_rageval.contract.measures import parse_measures
    from kg_rageval.families.retrieval.fusion import alpha_sweep, fuse
    from kg_rageval.families.retrieval.runs import Run
    from kg_rageval.families.retrieval.trec import load_qrels, load_run, write_run

    if len(run_paths) < 2:
        fail("fuse needs at least two --run files")
    try:
        parse_measures([measure])
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--measure") from None
    refuse_overwrite({"--output": output}, {"--run": list(run_paths), "--qrels": qrels_path})
    runs = [load_run(p).to_dict() for p in run_paths]
    payload: dict = {"method": method, "norm": norm, "runs": list(run_paths)}
    w: list[float] | None = list(weights) if weights else None
    if method == "convex":
        if len(runs) != 2:
            fail(f"convex fuses two runs, got {len(runs)} (use --method wsum with --weight for N)")
        if alpha is None and qrels_path is None:
            fail("convex needs --alpha, or --qrels to choose α by the sweep")
        if qrels_path is not None:
            try:
                grid = [float(x) for x in alphas.split(",") if x.strip()]
            except ValueError:
                raise click.BadParameter(
                    f"not a list of numbers: {alphas!r}", param_hint="--alphas"
                ) from None
            qrels = load_qrels(qrels_path).to_dict()
            sweep = alpha_sweep(
                qrels, runs[0], runs[1], measure=measure, norm=norm, alphas=grid, rel_level=rel_level
            )
            payload["sweep"] = sweep
            if alpha is None:
                if sweep["best"] is None:
                    fail(f"α sweep: no labelled query gives a {measure} value (missing evidence)")
                alpha = sweep["best"]["alpha"]
                payload["alpha_from"] = (
                    "best of the sweep (choose α on tuning queries, report on held-out ones)"
                )
        payload["alpha"] = alpha
        w = [alpha, 1.0 - alpha]
    elif method == "wsum":
        if w is None:
            fail("wsum needs one --weight per --run")
        payload["weights"] = w
    if method == "rrf":
        payload["k"] = k
    fused = fuse(runs, method, norm=norm, k=k, weights=w)
    if depth is not None:
        from kg_rageval.families.retrieval.fusion import trec_ranking

        fused = {q: {d: s[d] for d in trec_ranking(s)[:depth]} for q, s in fused.items()}
    payload["n_queries"] = len(fused)
    payload["n_queries_missing"] = {p: sum(q not in r for q in fused) for p, r in zip(run_paths, runs)}
    if qrels_path is not None:
        payload["scores"] = _scores(qrels_path, [*runs, fused], [*run_paths, "fused"], measure, rel_level)
    tmp = atomic_path(output)
    with writing(output):
        write_run(tmp, Run.from_dict(fused), tag=tag)
        os.replace(tmp, output)
    payload["output"] = output
    emit(payload, fmt, _text)


def _scores(qrels_path, runs, names, measure, rel_level) -> dict:
    from kg_rageval.families.retrieval.measures import aggregate, compute
    from kg_rageval.families.retrieval.runs import Run
    from kg_rageval.families.retrieval.trec import load_qrels

    q = load_qrels(qrels_path)
    out = {}
    for name, run in zip(names, runs):
        pq = compute(q, Run.from_dict(run, vocab=q.vocab), [measure], rel_level=rel_level)
        agg = aggregate(pq)
        key = str(pq.specs[0])
        out[name] = {"measure": key, "value": agg.values[key], "n": agg.n[key]}
    return out


def _text(p: dict) -> str:
    lines = [f"fused {len(p['runs'])} runs with {p['method']} (norm {p['norm']}) → {p.get('output')}"]
    lines.append(f"queries: {p['n_queries']}; missing per run: {p['n_queries_missing']}")
    if "sweep" in p:
        sw = p["sweep"]
        lines.append(f"α sweep ({sw['measure']}, α = weight of the first run):")
        for r in sw["alphas"]:
            v = "missing" if r["value"] is None else f"{r['value']:.4f}"
            lines.append(f"  α={r['alpha']:.2f}  {v}  (n={r['n']})")
        lines.append(f"  chosen α = {p['alpha']}; beats both runs: {sw['beats_both_lanes']}")
        if "alpha_from" in p:  # α chosen on the very queries it is scored on
            lines.append(f"  note: α is the {p['alpha_from']}; the fused score below is optimistic")
    for name, s in p.get("scores", {}).items():
        v = "missing" if s["value"] is None else f"{s['value']:.4f}"
        lines.append(f"{s['measure']} {name}: {v} (n={s['n']})")
    return "\n".join(lines)
