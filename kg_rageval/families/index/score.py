"""The index family: does the ANN index return the true nearest neighbours, and how soon is a
committed document searchable? Per slice (document class) and ontology branch.

Record section: ``index`` (:mod:`kg_rageval.records.index`; ``docs/records.md``). One row per
record with an ``index`` section; the branch is the row's ``gold_node`` by the one rule of
``docs/records.md``.

Metrics:

* ``ann_recall@K`` (each ``K`` of the option ``k``, default 10) = mean over queries of
  ``hits_q / min(K, |exact_q|)``, where the ANN's first ``K`` ids are checked against
  the exact top ``K``:

  - with ``ann_distances`` and ``exact_distances`` — **the ann-benchmarks tie rule**: a
    returned neighbour counts when its distance ``<= exact_distances[K-1] + ε`` with
    ``ε = 1e-3`` (:data:`EPSILON`), so an equally close item the exact search ordered after the
    K-th is not a miss; hits are capped at ``min(K, |exact|)``;
  - with ``exact`` ids only: ``hits = |ann[:K] ∩ exact[:K]|``;
  - with ``exact_ranks``: ``hits = #{ann id in the first K with exact rank <= K}``, over ``K``.

  The first ``K`` ANN positions are read; a repeated id counts once (a repeat is a miss). ``ann: []`` scores 0 (the index
  returned nothing: a counted fault); ``ann`` absent beside the exact neighbours is a missing
  run (unscored ``missing_prediction``); ``exact: []`` gives no recall denominator.
* ``freshness_lag_s_p50`` / ``freshness_lag_s_p99``: type-7 quantiles (numpy's default) of
  ``searchable_ts - commit_ts`` in seconds over the rows of the group (rows, not sums:
  :mod:`kg_rageval.families.system.quantiles`). **Too few rows is missing evidence**: the
  quantile ``q`` needs at least ``ceil(1 / (1 - q))`` lags (2 for p50, 100 for p99), so that one
  lag at least lies above it — p99 of 7 lags is their maximum, not a 99th percentile.
  ``freshness_lag_s_mean`` is a sum metric.
* ``unsearchable_rate`` = documents with a ``commit_ts`` and ``searchable_ts: null`` / documents
  with a ``commit_ts`` (they have no lag yet: never hidden in the quantiles' denominator).
* ``stale_index_rate`` = queries with ``stale: true`` / queries that state ``stale``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from typing import Any

import numpy as np

from kg_rageval.families.system.quantiles import QuantileEvaluation, RowFamily, sorted_quantiles
from kg_rageval.records import Record
from kg_rageval.records.fields import stated_row_keys as row_keys
from kg_rageval.records.index import IndexSection, index_section
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.metric import Metric, mean_of, ratio

EPSILON = 1e-3
"""The ann-benchmarks tie tolerance on distances (``ann_benchmarks/plotting/metrics.py``)."""
LAG_QUANTILES = {"p50": 0.5, "p99": 0.99}


def min_rows_for(q: float) -> int:
    """The fewest values quantile ``q`` is reported on: ``ceil(1 / (1 - q))`` (2 for p50, 100 for
    p99), computed exactly for the decimal q's used."""
    return math.ceil(round(1.0 / (1.0 - q), 9))


def query_hits(
    ann: Sequence[str],
    k: int,
    *,
    exact: Sequence[str] | None = None,
    exact_ranks: Sequence[int | None] | None = None,
    ann_distances: Sequence[float] | None = None,
    exact_distances: Sequence[float] | None = None,
    epsilon: float = EPSILON,
) -> tuple[int, int]:
    """``(hits, denominator)`` of one query at cut-off ``k`` (the module docstring's rules)."""
    seen: set[str] = set()
    first: list[int] = []  # positions among the first k holding an id's first occurrence
    for i, a in enumerate(ann[:k]):
        if a not in seen:
            seen.add(a)
            first.append(i)
    if exact_ranks is not None:
        return sum(1 for i in first if (r := exact_ranks[i]) is not None and r <= k), k
    if exact is None:
        raise ValueError("query_hits needs exact or exact_ranks")
    denom = min(k, len(exact))
    if denom == 0:
        return 0, 0
    if ann_distances is not None and exact_distances is not None:
        limit = exact_distances[denom - 1] + epsilon
        return min(denom, sum(1 for i in first if ann_distances[i] <= limit)), denom
    top = set(exact[:denom])
    return sum(1 for i in first if ann[i] in top), denom


class IndexFamily(RowFamily):
    """Stats per row: ``n``; per cut-off ``K``: ``recall@K`` (the query's recall) and
    ``n_q@K`` (1 when it has a denominator); ``n_stale`` / ``n_stale_known``; ``n_docs``
    (a ``commit_ts``), ``n_unsearchable``, ``lag`` / ``has_lag`` (the row's lag in seconds)."""

    name = "index"
    version = "1"

    def __init__(self, ks: Iterable[int] = (10,)):
        self.ks = tuple(sorted({int(k) for k in ks}))
        self.stats = (
            "n",
            *(x for k in self.ks for x in (f"recall@{k}", f"n_q@{k}")),
            "n_stale",
            "n_stale_known",
            "n_docs",
            "n_unsearchable",
            "lag",
            "has_lag",
        )

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        out: dict[str, Metric] = {}
        for k in self.ks:
            m = mean_of(
                f"ann_recall@{k}",
                s[f"recall@{k}"],
                s[f"n_q@{k}"],
                missing="no query with ANN ids and exact neighbours",
            )
            out[m.name] = dataclasses.replace(m, rows=int(s[f"n_q@{k}"]))
        out["stale_index_rate"] = dataclasses.replace(
            ratio("stale_index_rate", s["n_stale"], s["n_stale_known"], missing="no query states stale"),
            rows=int(s["n_stale_known"]),
        )
        out["unsearchable_rate"] = dataclasses.replace(
            ratio(
                "unsearchable_rate", s["n_unsearchable"], s["n_docs"], missing="no document with a commit_ts"
            ),
            rows=int(s["n_docs"]),
        )
        out["freshness_lag_s_mean"] = dataclasses.replace(
            mean_of(
                "freshness_lag_s_mean",
                s["lag"],
                s["has_lag"],
                missing="no searchable document with commit_ts and searchable_ts",
            ),
            rows=int(s["has_lag"]),
        )
        for q in LAG_QUANTILES:
            name = f"freshness_lag_s_{q}"
            out[name] = Metric(name, None, missing="a quantile needs the rows, not sums")
        return out

    def row_metrics(
        self, stats: Mapping[str, np.ndarray], weights: np.ndarray | None = None, only: set[str] | None = None
    ) -> dict[str, Metric]:
        names = {f"freshness_lag_s_{q}": q for q in LAG_QUANTILES}
        want = {n: q for n, q in names.items() if only is None or n in only}
        if not want:
            return {}
        rows = np.flatnonzero(stats["has_lag"] > 0)
        vals = stats["lag"][rows]
        order = np.argsort(vals, kind="stable")
        v = vals[order]
        w = None if weights is None else weights[rows][order]
        n = int(len(v) if w is None else round(float(w.sum())))
        out: dict[str, Metric] = {}
        for name, q in want.items():
            p = LAG_QUANTILES[q]
            need = min_rows_for(p)
            if n < need:
                why = (
                    "no searchable document with commit_ts and searchable_ts"
                    if n == 0
                    else f"{q} needs at least {need} lags, found {n} (too few rows for the quantile)"
                )
                out[name] = Metric(name, None, missing=why, rows=n)
                continue
            got = sorted_quantiles(v, [p], w)[0]
            out[name] = Metric(name, got, rows=n)
        return out


def _row(rec: Record, sec: IndexSection, ks: tuple[int, ...]) -> dict[str, Any] | None:
    row: dict[str, Any] = {"record_id": rec["id"], **row_keys(rec), "n": 1}
    scored = False
    has_exact = sec.exact is not None or sec.exact_ranks is not None
    if has_exact and sec.ann is not None:
        for k in ks:
            hits, denom = query_hits(
                sec.ann,
                k,
                exact=sec.exact,
                exact_ranks=sec.exact_ranks,
                ann_distances=sec.ann_distances,
                exact_distances=sec.exact_distances,
            )
            if denom:
                row[f"recall@{k}"] = hits / denom
                row[f"n_q@{k}"] = 1
                scored = True
    if sec.stale is not None:
        row.update(n_stale_known=1, n_stale=int(sec.stale))
        scored = True
    if sec.commit_ts is not None:
        row["n_docs"] = 1
        scored = True
        if sec.searchable_ts is None:
            row["n_unsearchable"] = 1
        else:
            row.update(lag=sec.searchable_ts - sec.commit_ts, has_lag=1)
    return row if scored else None


def score_index(ontology: Any, records: Iterable[Record], *, k: Iterable[int] = (10,)) -> QuantileEvaluation:
    """One row per record with a scorable ``index`` section (module docstring). ``ontology``
    is not read (the per-branch roll-up takes it); ``k``: the cut-offs of ``ann_recall@K``."""
    ks = tuple(sorted({int(x) for x in k}))
    if not ks or min(ks) < 1:
        raise ValueError(f"index: k must be positive integers, got {list(k)!r}")
    rows: list[dict[str, Any]] = []
    unscored = []
    for rec in records:
        sec = index_section(rec)
        if sec is None:
            unscored.append(unscored_entry(rec["id"], "no index section", Reason.NO_SECTION))
            continue
        if sec.ann is None and (sec.exact is not None or sec.exact_ranks is not None):
            unscored.append(
                unscored_entry(
                    rec["id"],
                    "exact neighbours but no ANN ids: the index answered nothing",
                    Reason.MISSING_PREDICTION,
                )
            )
            continue
        row = _row(rec, sec, ks)
        if row is None:
            unscored.append(
                unscored_entry(
                    rec["id"],
                    "nothing to score: no exact neighbours, no stale flag, no commit_ts",
                    Reason.NO_GOLD,
                )
            )
            continue
        rows.append(row)
    keys = sorted({x for r in rows for x in r if x == "gold_node" or x.startswith("slice:")})
    ev = build_evaluation(IndexFamily(ks), rows, keys=keys, unscored=unscored)
    return QuantileEvaluation(**{f.name: getattr(ev, f.name) for f in fields(Evaluation)})


__all__ = ["EPSILON", "IndexFamily", "min_rows_for", "query_hits", "score_index"]
