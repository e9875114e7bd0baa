"""The system family: latency per stage, tokens, cost and cache hits per query.

Record field (``docs/records.md``, ``docs/system.md``)::

    "system": {"latency_ms": {"retrieve": 120, "rerank": 30, "generate": 800, "total": 990, "ttft": 240},
               "tokens": {"prompt": 1200, "completion": 150},
               "cost_usd": 0.0031,
               "cache": {"retrieval": true, "generation": false}}

Metrics (``<stage>`` is any ``latency_ms`` key, ``<kind>`` any ``tokens`` key plus ``total``
when prompt and completion are given, ``<layer>`` any ``cache`` key):

* ``latency.<stage>_ms.p50`` / ``.p95`` / ``.p99`` — quantiles over the records that carry the
  timing (:mod:`kg_rageval.families.system.quantiles`), ``.mean``, ``.max``; ``.n_missing`` and
  ``.missing_rate`` — records with a ``system`` section but without this timing (a gate on a
  quantile never silently ignores them: gate ``latency.total_ms.missing_rate <= 0`` too);
* ``cost.usd_per_query.mean`` / ``.p50`` / ``.p95`` / ``.p99``, ``cost.usd_total``;
* ``tokens.<kind>.mean`` / ``.p95``, ``tokens.<kind>.sum``;
* ``cache.<layer>.hit_rate`` = hits / lookups (a record with the layer's flag is one lookup).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from kg_rageval.families.system.quantiles import (
    QUANTILES,
    QuantileEvaluation,
    RowFamily,
    sorted_quantiles,
    sorted_quantiles_many,
)
from kg_rageval.records import Record, record_error
from kg_rageval.records.fields import stated_row_keys as row_keys
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.metric import Metric, mean_of, ratio

STAGES = ("retrieve", "rerank", "generate", "total", "ttft")
_NAME = re.compile(r"^[A-Za-z0-9_]+$")


class SystemFamily(RowFamily):
    """Latency, cost, tokens and cache hits (see the module docstring). The stats are, per
    measured quantity ``x``: ``x`` (the record's value, 0 when absent) and ``has:x`` (1 when
    present); per cache layer ``cache.<layer>.hits`` / ``.lookups``; and ``n`` (records)."""

    name = "system"
    version = "1"

    def __init__(
        self, stages: Iterable[str] = STAGES, tokens: Iterable[str] = (), layers: Iterable[str] = ()
    ):
        self.stages = tuple(stages)
        self.tokens = tuple(tokens)
        self.layers = tuple(layers)
        self.quantities = (
            tuple(f"latency.{s}_ms" for s in self.stages)
            + ("cost.usd_per_query",)
            + tuple(f"tokens.{t}" for t in self.tokens)
        )
        self._order_cache: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.stats = (
            ("n",)
            + tuple(x for q in self.quantities for x in (q, f"has:{q}"))
            + tuple(f"cache.{c}.{k}" for c in self.layers for k in ("hits", "lookups"))
        )

    def union(self, other: SystemFamily) -> SystemFamily:
        """The family of two merged partitions: every stage, token kind and cache layer either
        side has (standard stages first, the others sorted, as :func:`score_system` orders)."""
        extra = sorted((set(self.stages) | set(other.stages)) - set(STAGES))
        std = [st for st in STAGES if st in self.stages or st in other.stages]
        return SystemFamily(
            std + extra,
            sorted(set(self.tokens) | set(other.tokens)),
            sorted(set(self.layers) | set(other.layers)),
        )

    def _row_names(self, q: str) -> tuple[str, ...]:
        if q.startswith("latency."):
            return tuple(QUANTILES) + ("max",)
        if q.startswith("cost."):
            return ("p50", "p95", "p99")
        return ("p95",)

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        out: dict[str, Metric] = {}
        n = s["n"]
        for q in self.quantities:
            have = s[f"has:{q}"]
            why = f"no record has {q}"
            out[f"{q}.mean"] = mean_of(f"{q}.mean", s[q], have, missing=why)
            miss = n - have
            out[f"{q}.n_missing"] = Metric(f"{q}.n_missing", float(miss), miss, n)
            out[f"{q}.missing_rate"] = ratio(
                f"{q}.missing_rate", miss, n, missing="no record with a system section"
            )
            for r in self._row_names(q):
                out[f"{q}.{r}"] = Metric(f"{q}.{r}", None, missing="a quantile needs the rows, not sums")
        out["cost.usd_total"] = (
            Metric(
                "cost.usd_total",
                s["cost.usd_per_query"],
                s["cost.usd_per_query"],
                s["has:cost.usd_per_query"],
            )
            if s["has:cost.usd_per_query"]
            else Metric("cost.usd_total", None, missing="no record has cost_usd")
        )
        for t in self.tokens:
            q = f"tokens.{t}"
            out[f"{q}.sum"] = (
                Metric(f"{q}.sum", s[q])
                if s[f"has:{q}"]
                else Metric(f"{q}.sum", None, missing=f"no record has {q}")
            )
        for c in self.layers:
            out[f"cache.{c}.hit_rate"] = ratio(
                f"cache.{c}.hit_rate",
                s[f"cache.{c}.hits"],
                s[f"cache.{c}.lookups"],
                missing=f"no record reports the {c} cache",
            )
        return out

    def _present_sorted(self, stats: Mapping[str, np.ndarray], q: str) -> tuple[np.ndarray, np.ndarray]:
        """The present values of ``q`` in ascending order and their row indices (cached per
        stats column object: a bootstrap reuses the order across resamples)."""
        col = stats[q]
        hit = self._order_cache.get(q)
        if hit is not None and hit[0] is col:
            return hit[1], hit[2]
        rows = np.flatnonzero(stats[f"has:{q}"] > 0)
        order = rows[np.argsort(col[rows], kind="stable")]
        self._order_cache[q] = (col, col[order], order)
        return col[order], order

    def row_metrics(
        self, stats: Mapping[str, np.ndarray], weights: np.ndarray | None = None, only: set[str] | None = None
    ) -> dict[str, Metric]:
        out: dict[str, Metric] = {}
        for q in self.quantities:
            names = self._row_names(q)
            if only is not None and not any(f"{q}.{r}" in only for r in names):
                continue
            vals, rows = self._present_sorted(stats, q)
            w = None if weights is None else weights[rows]
            qs = [r for r in names if r != "max"]
            got = dict(zip(qs, sorted_quantiles(vals, [QUANTILES[r] for r in qs], w)))
            if "max" in names:
                keep = vals if w is None else vals[w > 0]
                got["max"] = float(keep[-1]) if len(keep) else None
            counted = len(vals) if w is None else int(round(float(w.sum())))
            for r in names:
                v = got[r]
                out[f"{q}.{r}"] = Metric(
                    f"{q}.{r}", v, missing=None if v is not None else f"no record has {q}", rows=counted
                )
        return out

    def row_replicates(
        self, stats: Mapping[str, np.ndarray], weights: np.ndarray, only: set[str]
    ) -> dict[str, np.ndarray]:
        """:meth:`row_metrics`' values under each row of ``weights`` at once (NaN where
        undefined): the quantiles by :func:`sorted_quantiles_many`, ``max`` the largest
        present value with a positive weight — the same floats as a call per resample."""
        out: dict[str, np.ndarray] = {}
        for q in self.quantities:
            names = [r for r in self._row_names(q) if f"{q}.{r}" in only]
            if not names:
                continue
            vals, rows = self._present_sorted(stats, q)
            w = weights[:, rows]
            qs = [r for r in names if r != "max"]
            if qs:
                got = sorted_quantiles_many(vals, [QUANTILES[r] for r in qs], w)
                for c, r in enumerate(qs):
                    out[f"{q}.{r}"] = got[:, c]
            if "max" in names:
                drawn = w > 0
                last = len(vals) - 1 - np.argmax(drawn[:, ::-1], axis=1) if len(vals) else 0
                out[f"{q}.max"] = (
                    np.where(drawn.any(axis=1), vals[last], np.nan) if len(vals) else np.full(len(w), np.nan)
                )
        return out


def _number(record: Record, field: str, v: Any, *, integer: bool = False) -> float:
    ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and v >= 0
    if ok and integer and not float(v).is_integer():
        ok = False
    if not ok:
        what = "a non-negative integer" if integer else "a finite non-negative number"
        raise record_error(record, field, f"expected {what}, found {v!r}")
    return float(v)


def _mapping(record: Record, field: str, v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise record_error(record, field, f"expected an object, found {type(v).__name__}")
    for k in v:
        if not _NAME.match(str(k)):
            raise record_error(record, f"{field}.{k}", "names may hold letters, digits and '_' only")
    return v


def system_values(record: Record) -> dict[str, Any] | None:
    """The record's ``system`` section checked: ``{"latency": {stage: ms}, "tokens": {kind: n},
    "cost": usd or None, "cache": {layer: bool}}``; ``None`` when absent."""
    s = record.get("system")
    if s is None:
        return None
    s = _mapping(record, "system", s)
    unknown = set(s) - {"latency_ms", "tokens", "cost_usd", "cache"}
    if unknown:
        raise record_error(
            record,
            f"system.{sorted(unknown)[0]}",
            "unknown field; expected latency_ms, tokens, cost_usd or cache",
        )
    lat = {
        k: _number(record, f"system.latency_ms.{k}", v)
        for k, v in _mapping(record, "system.latency_ms", s.get("latency_ms") or {}).items()
        if v is not None
    }
    tok = {
        k: _number(record, f"system.tokens.{k}", v, integer=True)
        for k, v in _mapping(record, "system.tokens", s.get("tokens") or {}).items()
        if v is not None
    }
    if "total" not in tok and "prompt" in tok and "completion" in tok:
        tok["total"] = tok["prompt"] + tok["completion"]
    cost = s.get("cost_usd")
    cost = None if cost is None else _number(record, "system.cost_usd", cost)
    cache = {}
    for k, v in _mapping(record, "system.cache", s.get("cache") or {}).items():
        if v is None:
            continue
        if not isinstance(v, bool):
            raise record_error(
                record, f"system.cache.{k}", f"expected true (hit) or false (miss), found {v!r}"
            )
        cache[k] = v
    return {"latency": lat, "tokens": tok, "cost": cost, "cache": cache}


def score_system(
    ontology: Any, records: Iterable[Record], *, stages: Iterable[str] | None = None
) -> QuantileEvaluation:
    """One row per record with a ``system`` section (others: unscored ``no system section``).
    ``stages``: the latency stages to report (default: the standard five plus any other stage
    a record names). ``ontology`` is not needed (rows carry ``gold_node`` for roll-ups)."""
    records = list(records)
    parsed = [(r, system_values(r)) for r in records]
    seen_stages = {k for _, v in parsed if v for k in v["latency"]}
    stage_list = list(stages) if stages is not None else list(STAGES) + sorted(seen_stages - set(STAGES))
    tokens = sorted({k for _, v in parsed if v for k in v["tokens"]})
    layers = sorted({k for _, v in parsed if v for k in v["cache"]})
    fam = SystemFamily(stage_list, tokens, layers)
    rows: list[dict[str, Any]] = []
    unscored = []
    for rec, v in parsed:
        if v is None:
            unscored.append(unscored_entry(rec["id"], "no system section", Reason.NO_SECTION))
            continue
        row: dict[str, Any] = {"record_id": rec["id"], **row_keys(rec), "n": 1.0}
        for st in stage_list:
            if st in v["latency"]:
                row[f"latency.{st}_ms"], row[f"has:latency.{st}_ms"] = v["latency"][st], 1.0
        if v["cost"] is not None:
            row["cost.usd_per_query"], row["has:cost.usd_per_query"] = v["cost"], 1.0
        for t, x in v["tokens"].items():
            row[f"tokens.{t}"], row[f"has:tokens.{t}"] = x, 1.0
        for c, hit in v["cache"].items():
            row[f"cache.{c}.hits"], row[f"cache.{c}.lookups"] = float(hit), 1.0
        rows.append(row)
    key_names = sorted({k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")})
    stats = {s: np.asarray([float(r.get(s, 0.0)) for r in rows]) for s in fam.stats}
    from kg_rageval.results.columns import _object_column

    return fam.evaluation(
        record_ids=_object_column([r["record_id"] for r in rows]),
        stats=stats,
        keys={k: _object_column([r.get(k) for r in rows]) for k in key_names},
        unscored=unscored,
        meta={"stages": stage_list, "cache_layers": layers, "token_kinds": tokens},
    )
