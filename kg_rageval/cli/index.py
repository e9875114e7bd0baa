"""``kg-rageval index recall``: ANN Recall@k of an index against exact brute-force search in
numpy at the same k, with the ann-benchmarks tie rule, the per-query recall distribution and a
bootstrap CI; exit 1 below ``--min-recall`` (:mod:`kg_rageval.families.index.exact`;
``docs/ingestion.md``, *Index*). The record-mode metrics (recall from stored ids, freshness
lag, stale-index rate) are ``kg-rageval score index``."""

from __future__ import annotations

import sys

import click

from kg_rageval.cli.common import emit


@click.group()
def index() -> None:
    """Index evaluation: ANN Recall@k against exact search (score index reads records)."""


@index.command()
@click.option(
    "--vectors",
    "vectors_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="The indexed vectors: a 2-D float .npy array (rows × dim); ids are row numbers.",
)
@click.option(
    "--queries",
    "queries_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="The query vectors: a 2-D float .npy array with the vectors' dimension.",
)
@click.option("--k", "-k", "k", type=click.IntRange(min=1), default=10, show_default=True, help="Cut-off k.")
@click.option(
    "--metric",
    type=click.Choice(["ip", "l2", "cosine"]),
    default="l2",
    show_default=True,
    help="Distance: l2 (Euclidean), ip (inner product, −⟨q,v⟩), cosine (1 − cos).",
)
@click.option(
    "--backend",
    type=click.Choice(["numpy", "hnswlib", "faiss", "results"]),
    default="hnswlib",
    show_default=True,
    help="The ANN index to check (results: the ids in --results FILE).",
)
@click.option(
    "--results",
    "results_path",
    default=None,
    type=click.Path(exists=True, dir_okay=False),
    help="With --backend results: the ids your system returned (.npy int array or one line per query).",
)
@click.option(
    "--min-recall",
    type=click.FloatRange(0, 1),
    default=None,
    help="Exit 1 when Recall@k is below it (e.g. 0.95).",
)
@click.option(
    "--m", "m", type=click.IntRange(min=2), default=16, show_default=True, help="HNSW M (hnswlib, faiss)."
)
@click.option(
    "--ef-construction",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="HNSW ef_construction (hnswlib, faiss).",
)
@click.option(
    "--ef",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="HNSW query-time ef (at least k; hnswlib, faiss).",
)
@click.option(
    "--ci",
    "n_resamples",
    type=click.IntRange(min=10),
    default=2000,
    show_default=True,
    help="Bootstrap resamples over queries.",
)
@click.option(
    "--ci-level",
    "level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Confidence level of the bootstrap interval.",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap and of the HNSW build."
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def recall(
    vectors_path,
    queries_path,
    k,
    metric,
    backend,
    results_path,
    min_recall,
    m,
    ef_construction,
    ef,
    n_resamples,
    level,
    seed,
    fmt,
) -> None:
    """ANN Recall@k against exact search at the same k (ann-benchmarks tie rule, ε = 1e-3)."""
    from kg_rageval.base.errors import InputError
    from kg_rageval.families.index import backends as be
    from kg_rageval.families.index.exact import ann_recall, exact_knn, load_matrix

    if (backend == "results") != (results_path is not None):
        raise InputError("--results FILE goes with --backend results (and only with it)")
    vectors = load_matrix(vectors_path, "vectors")
    queries = load_matrix(queries_path, "queries")
    if queries.shape[1] != vectors.shape[1]:
        raise InputError(
            f"queries: dimension {queries.shape[1]} differs from the vectors' {vectors.shape[1]} ({vectors_path})",
            source=queries_path,
        )
    if k > vectors.shape[0]:
        raise InputError(f"--k {k} is more than the {vectors.shape[0]} vectors of {vectors_path}")
    exact = exact_knn(vectors, queries, k, metric)
    if backend == "numpy":
        run = exact[0]
    elif backend == "hnswlib":
        run = be.hnswlib_search(
            vectors, queries, k, metric, m=m, ef_construction=ef_construction, ef=ef, seed=seed
        )
    elif backend == "faiss":
        run = be.faiss_search(vectors, queries, k, metric, m=m, ef_construction=ef_construction, ef=ef)
    else:
        run = be.read_results(results_path, queries.shape[0], vectors.shape[0])
    res = ann_recall(
        vectors,
        queries,
        run,
        k,
        metric,
        backend=backend,
        exact=exact,
        n_resamples=n_resamples,
        level=level,
        seed=seed,
    )
    payload = {
        "command": "index recall",
        "vectors": vectors_path,
        "queries": queries_path,
        **({"results": results_path} if results_path else {}),
        "n_vectors": int(vectors.shape[0]),
        "dim": int(vectors.shape[1]),
        **res.to_dict(min_recall),
    }
    if backend in ("hnswlib", "faiss"):
        payload["params"] = {"M": m, "ef_construction": ef_construction, "ef": max(ef, k)}

    def text(p: dict) -> str:
        lo, hi = p["ci"]
        d = p["per_query"]
        lines = [
            f"{p['measure']} = {p['recall']:.4f}  {int(p['ci_level'] * 100)}% CI [{lo:.4f}, {hi:.4f}]  "
            f"({p['queries']} queries, {p['n_vectors']} vectors × {p['dim']}, {p['metric']}, backend {p['backend']})",
            f"tie rule: {p['tie_rule']}",
            f"per query: min {d['min']:.2f}, p1 {d['p1']:.2f}, p5 {d['p5']:.2f}, p50 {d['p50']:.2f}; "
            f"{d['queries_below_1']} queries below 1.0",
            "histogram: " + ", ".join(f"{v}: {c}" for v, c in d["histogram"].items() if c),
        ]
        if "min_recall" in p:
            verdict = "pass" if p["passed"] else "FAIL"
            lines.append(
                f"gate {p['measure']} >= {p['min_recall']}: {verdict} "
                f"({p['queries_below_min_recall']} queries below it)"
            )
        return "\n".join(lines)

    emit(payload, fmt, text)
    if min_recall is not None and not payload["passed"]:
        sys.exit(1)
