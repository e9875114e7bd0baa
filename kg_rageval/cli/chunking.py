"""``kg-rageval chunking sweep``: Recall@k of retrieval runs made with different chunk sizes and
overlaps, with bootstrap CIs, and the smallest size after which recall stops improving
(:mod:`kg_rageval.families.chunking.sweep`; ``docs/ingestion.md``). The per-document chunk
metrics are ``kg-rageval score chunking``."""

from __future__ import annotations

import click

from kg_rageval.cli.common import emit


@click.group()
def chunking() -> None:
    """Chunking evaluation: the chunk-size / overlap sweep (score chunking scores the chunks)."""


@chunking.command()
@click.option(
    "--qrels",
    "qrels_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Qrels every run is scored against (TREC, BEIR TSV or ranx JSON).",
)
@click.option(
    "--run",
    "run_specs",
    multiple=True,
    required=True,
    metavar="size=N[,overlap=M]:PATH",
    help="A run made with chunk size N and overlap M (repeat; TREC or ranx JSON).",
)
@click.option("-k", "k", type=click.IntRange(min=1), default=10, show_default=True, help="Recall cut-off.")
@click.option(
    "--ci",
    "n_resamples",
    type=click.IntRange(min=10),
    default=2000,
    show_default=True,
    help="Bootstrap resamples.",
)
@click.option(
    "--ci-level",
    "level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Confidence level of the bootstrap intervals.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap resamples.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def sweep(qrels_path, run_specs, k, n_resamples, level, seed, fmt) -> None:
    """Recall@k against chunk size and overlap; names the plateau size."""
    from kg_rageval.families.chunking.sweep import parse_run_spec, sweep_files

    specs = [parse_run_spec(s) for s in run_specs]
    res = sweep_files(qrels_path, specs, k=k, n_resamples=n_resamples, level=level, seed=seed)
    payload = {"command": "chunking sweep", "qrels": qrels_path, **res.to_dict()}

    def text(p: dict) -> str:
        lines = [
            f"{'size':>6} {'overlap':>7} {p['measure']:>8}  {int(p['level'] * 100)}% CI        queries  run"
        ]
        for pt in p["points"]:
            lo, hi = pt["ci"]
            lines.append(
                f"{pt['size']:>6} {pt['overlap']:>7} {pt['recall']:>8.4f}  [{lo:.4f}, {hi:.4f}]  {pt['n']:>7}  {pt['run']}"
            )
        b = p["best"]
        lines.append(f"best: size={b['size']}, overlap={b['overlap']} ({p['measure']} {b['recall']:.4f})")
        lines.append(f"plateau size: {p['plateau_size']} ({p['plateau_rule']})")
        return "\n".join(lines)

    emit(payload, fmt, text)
