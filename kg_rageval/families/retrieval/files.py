"""Scoring TREC/BEIR/JSON qrels and runs directly, with or without an ontology.

:func:`score_run` computes every requested measure per query (:mod:`.measures`) and
aggregates it in one of the two modes (``default``: the seed article's answerability rule;
``trec_eval``: exactly trec_eval ``-c``). :func:`to_evaluation` turns the per-query values
into an additive :class:`~kg_rageval.results.evaluation.Evaluation` (family ``retrieval_measures``)
whose rows carry each query's ontology node, so ``Evaluation.rollup`` gives every measure
per node as the records path does. A query's node is given by a ``--query-nodes`` table or,
with a corpus, is the deepest common ancestor of its relevant documents' categories.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.base.redact import excerpt
from kg_rageval.contract.measures import COUNTS, MeasureSpec, parse_measures
from kg_rageval.families.retrieval.measures import (
    MIN_GEO_MEAN,
    Aggregate,
    PerQueryMeasures,
    aggregate,
    compute,
    scored_mask,
)
from kg_rageval.families.retrieval.runs import Qrels, Run
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, mean_of


@dataclass
class RunScore:
    """One run's per-query values and means."""

    name: str
    per_query: PerQueryMeasures
    aggregate: Aggregate

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {"run": self.name, **self.aggregate.to_dict()}
        if per_query:
            d["per_query"] = {
                q: {m: float(v[i]) for m, v in self.per_query.values.items()}
                for i, q in enumerate(self.per_query.qids)
            }
        return d


def score_run(
    qrels: Qrels,
    run: Run,
    measures: Sequence[str | MeasureSpec],
    *,
    name: str = "run",
    mode: str = "default",
    rel_level: int = 1,
    depth: int | None = None,
    complete: bool = True,
) -> RunScore:
    """Per-query values and means of ``measures`` for one run (see :mod:`.measures`)."""
    pq = compute(qrels, run, measures, rel_level=rel_level, depth=depth)
    return RunScore(name, pq, aggregate(pq, mode, complete=complete))


def score_trec(
    ontology,
    records,
    qrels: Qrels,
    run: Run,
    *,
    measures: Sequence[str] = (),
    mode: str = "default",
    rel_level: int = 1,
    depth: int | None = None,
    complete: bool = True,
    name: str = "run",
) -> Evaluation:
    """The registered family ``trec``: ``measures`` (any spelling; default
    :data:`~.measures.DEFAULT_MEASURES`) of ``run`` against ``qrels`` as the additive
    :class:`MeasuresFamily` evaluation, one row per qrels query, metrics named by their
    ir_measures spelling (``nDCG@10``, ``P(rel=2)@10``). ``records`` and ``ontology`` are not
    read (the evidence is the two files). Equal to
    ``score_run(...).aggregate`` (``mode`` ``trec_eval``: trec_eval ``-c``)."""
    from kg_rageval.families.retrieval.measures import DEFAULT_MEASURES

    try:
        specs = parse_measures(measures or DEFAULT_MEASURES)
    except ValueError as exc:
        raise ConfigError(f"families.trec.measures: {exc}") from None
    sc = score_run(
        qrels, run, specs, name=name, mode=mode, rel_level=rel_level, depth=depth, complete=complete
    )
    return to_evaluation(sc, mode)


class MeasuresFamily(Family):
    """Measures of :mod:`.measures` as additive sums: per measure ``m``, ``m.sum`` over the
    queries in its mean and ``m.n`` their number (``m.logsum`` for geometric means); the
    mean is ``m.sum / m.n`` (counts: the sum), missing evidence when ``m.n`` is 0. Plus
    ``n_queries``, ``n_missing_run`` and ``n_no_gold`` (the answerability slice)."""

    name = "retrieval_measures"
    version = "1"

    def __init__(self, specs: Sequence[MeasureSpec], mode: str = "default"):
        self.specs = list(specs)
        self.mode = mode
        st: list[str] = []
        for s in self.specs:
            st += [f"{s}.sum", f"{s}.n"] + ([f"{s}.logsum"] if s.measure in ("GMAP", "GMBpref") else [])
        self.stats = tuple(st) + ("n_queries", "n_missing_run", "n_no_gold")

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        out: dict[str, Metric] = {}
        for s in self.specs:
            name = str(s)
            n = sums.get(f"{name}.n", 0.0)
            if s.measure in ("GMAP", "GMBpref"):
                v = math.exp(sums.get(f"{name}.logsum", 0.0) / n) if n else None
                out[name] = Metric(name, v, None, n, None if n else "no queries in the mean")
            elif s.measure in COUNTS:
                out[name] = Metric(name, float(sums.get(f"{name}.sum", 0.0)))
            else:
                out[name] = mean_of(
                    name,
                    sums.get(f"{name}.sum", 0.0),
                    n,
                    missing="no queries with a relevant document at this threshold",
                )
        for c in ("n_queries", "n_missing_run", "n_no_gold"):
            out[c] = Metric(c, float(sums.get(c, 0.0)))
        return out


def to_evaluation(
    score: RunScore, mode: str = "default", *, nodes: Sequence[str | None] | None = None
) -> Evaluation:
    """One row per qrels query with the additive stats of :class:`MeasuresFamily` (key
    ``gold_node`` when ``nodes`` is given, one per qrels query)."""
    pq = score.per_query
    fam = MeasuresFamily(pq.specs, mode)
    nq = len(pq.qids)
    stats: dict[str, np.ndarray] = {}
    for s in pq.specs:
        name = str(s)
        mask = scored_mask(pq, s, mode)
        v = pq.values[name]
        stats[f"{name}.sum"] = np.where(mask, v, 0.0)
        stats[f"{name}.n"] = mask.astype(float)
        if s.measure in ("GMAP", "GMBpref"):
            stats[f"{name}.logsum"] = np.where(mask, np.log(np.maximum(v, MIN_GEO_MEAN)), 0.0)
    rk = pq.ranked
    R = np.bincount(
        np.repeat(np.arange(nq), np.diff(rk.qrels.ptr)),
        weights=rk.qrels.grades >= max(pq.rel_level, 0),
        minlength=nq,
    )
    stats["n_queries"] = np.ones(nq)
    stats["n_missing_run"] = rk.missing.astype(float)
    stats["n_no_gold"] = (R == 0).astype(float)
    keys = {"gold_node": np.asarray(list(nodes), dtype=object)} if nodes is not None else {}
    return Evaluation(
        fam, np.asarray(pq.qids, dtype=object), stats, keys=keys, meta={"run": score.name, "mode": mode}
    )


def read_query_nodes(path: str | Path, ontology) -> dict[str, str]:
    """A ``query<TAB>node`` table (``#`` comments, blank lines skipped); every node must be an
    ontology id (or alias), else an error names the line."""
    p = Path(path)
    out: dict[str, str] = {}
    with open(p, encoding="utf-8") as fh:
        for lineno, ln in enumerate(fh, start=1):
            s = ln.strip()
            if not s or s.startswith("#"):
                continue
            parts = s.split("\t") if "\t" in s else s.split()
            if len(parts) != 2:
                raise InputError(
                    f"expected 'query<TAB>node', found {excerpt(s)}", source=str(p), location=f"line {lineno}"
                )
            q, node = parts[0].strip(), parts[1].strip()
            if node not in ontology:
                raise InputError(
                    f"node {node!r} is not in the ontology", source=str(p), location=f"line {lineno}"
                )
            out[q] = ontology.ids[ontology.index(node)]
    return out


def query_gold_nodes(
    qrels: Qrels, ontology, *, corpus=None, table: Mapping[str, str] | None = None, rel_level: int = 1
) -> list[str | None]:
    """Each qrels query's node: ``table[qid]`` when given, else (with a corpus) the deepest
    common ancestor of the categories of its relevant documents found in the corpus, else
    ``None`` (left out of the roll-up and counted there)."""
    out: list[str | None] = []
    s = qrels.vocab.strings
    for i, q in enumerate(qrels.qids):
        if table is not None and q in table:
            out.append(table[q])
            continue
        node = None
        if corpus is not None:
            a, b = int(qrels.ptr[i]), int(qrels.ptr[i + 1])
            rel = [
                s[d]
                for d, g in zip(qrels.docs[a:b].tolist(), qrels.grades[a:b].tolist())
                if g >= max(rel_level, 0)
            ]
            idx = corpus.lookup(rel) if rel else np.zeros(0, np.int64)
            idx = idx[idx >= 0]
            if len(idx):
                cats = np.unique(np.concatenate([corpus.categories_of(int(d)) for d in idx]))
                if len(cats):
                    n = int(cats[0])
                    for c in cats[1:].tolist():
                        n = ontology.lca_index(n, int(c))
                    node = ontology.ids[n]
        out.append(node)
    return out
