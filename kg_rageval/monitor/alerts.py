"""Guardrail alerts on production windows, thresholds from a config (``docs/monitoring_review.md``).

Config (YAML, TOML or JSON; unknown keys are a :class:`ConfigError` with a "did you mean")::

    min_rows: 30                  # fewer rows in a cell: insufficient evidence
    level: 0.95
    deploy_lookback: 1d           # a release this long before a window counts as "just before"
    faithfulness: {min: 0.8, rolling_windows: 7}
    latency_p95_ms: {max: 2000, stage: total}
    regeneration: {reference: ["2026-11-01T00:00:00Z"], false_alarm_budget: 0.05}
    cost_per_query_usd: {max: 0.01}
    filter_false_exclusion_rate: {max: 0.02}   # sampled FER (needs reviewed records, queue, corpus)

Each check is evaluated per window and per branch (and ``(all)``). A status is ``alert``
(the interval lies wholly on the wrong side of the threshold / the count leaves its band),
``watch`` (the estimate is past the threshold, the interval is not), ``ok`` or ``insufficient
evidence`` (too few rows: never silence, never an alert). A p95 needs at least
``max(min_rows, quantile_min_rows(0.95))`` rows (59; :mod:`kg_rageval.contract.gates`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kg_rageval.base.errors import ConfigError
from kg_rageval.base.validation import validation_lines
from kg_rageval.contract.gates import quantile_min_rows
from kg_rageval.monitor import performance as perf
from kg_rageval.monitor.traffic import TrafficRow, Windowing, parse_timestamp

ALL = "(all)"
INSUFFICIENT = perf.INSUFFICIENT


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FaithfulnessCheck(_Strict):
    min: float = Field(ge=0, le=1)
    rolling_windows: int = Field(7, ge=1)


class LatencyCheck(_Strict):
    max: float = Field(gt=0)
    stage: str = "total"


class RegenerationCheck(_Strict):
    reference: list[str] = Field(min_length=1)
    false_alarm_budget: float = Field(0.05, gt=0, lt=1)
    # the beta-binomial predictive band of the monitoring page (the reference's own error
    # included) instead of the binomial band around the reference rate taken as known
    reference_error: bool = True


class CostCheck(_Strict):
    max: float = Field(gt=0)


class FerCheck(_Strict):
    max: float = Field(ge=0, le=1)


class AlertConfig(_Strict):
    min_rows: int = Field(perf.MIN_ROWS, ge=1)
    level: float = Field(0.95, gt=0, lt=1)
    deploy_lookback: str = "1d"
    faithfulness: FaithfulnessCheck | None = None
    latency_p95_ms: LatencyCheck | None = None
    regeneration: RegenerationCheck | None = None
    cost_per_query_usd: CostCheck | None = None
    filter_false_exclusion_rate: FerCheck | None = None


def config_from_mapping(data: Any, source: str = "<memory>") -> AlertConfig:
    if not isinstance(data, dict):
        raise ConfigError(f"alert config must be a mapping, got {type(data).__name__}", source=source)
    try:
        cfg = AlertConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(
            "; ".join(validation_lines(exc.errors(), model=AlertConfig)), source=source
        ) from None
    Windowing.parse(cfg.deploy_lookback)
    return cfg


def load_config(path: str | Path) -> AlertConfig:
    from kg_rageval.records import read_structured

    data, _ = read_structured(Path(path), what="config")
    return config_from_mapping(data, source=str(path))


@dataclass(frozen=True)
class Deploy:
    timestamp: datetime
    release: str


def load_deploys(path: str | Path) -> list[Deploy]:
    """A deploy-events file: JSONL (or JSON / YAML list) of ``{"timestamp", "release"}``."""
    from kg_rageval.records import iter_record_chunks

    out = []
    for chunk in iter_record_chunks(path, 4096):
        for r in chunk:
            rel = r.get("release")
            if not isinstance(rel, str) or not rel:
                from kg_rageval.records import record_error

                raise record_error(r, "release", "a deploy event needs a release name")
            out.append(Deploy(parse_timestamp(r.get("timestamp"), r), rel))
    return sorted(out, key=lambda d: d.timestamp)


@dataclass
class Alert:
    check: str
    window: str
    branch: str
    status: str
    n: int
    estimate: float | None
    ci: tuple[float, float] | None
    threshold: Any
    triage: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "window": self.window,
            "branch": self.branch,
            "status": self.status,
            "evidence": {"n": self.n, "estimate": self.estimate, "ci": list(self.ci) if self.ci else None},
            "threshold": self.threshold,
            "triage": self.triage,
            **self.detail,
        }


def triage(window: str, windowing: Windowing, deploys: Sequence[Deploy], lookback: timedelta) -> str:
    """A hint, never a verdict: a release in or just before the window → likely regression;
    none → likely drift; both remain possible."""
    if windowing.width is None:
        return f"window is release {window!r}: likely regression of that release (drift remains possible)"
    start = datetime.fromisoformat(window.replace("Z", "+00:00"))
    end = start + windowing.width
    near = [d for d in deploys if start - lookback <= d.timestamp < end]
    if near:
        rel = ", ".join(f"{d.release} at {d.timestamp.strftime('%Y-%m-%dT%H:%M:%SZ')}" for d in near)
        return f"likely regression: release {rel} just before or in the window (drift remains possible)"
    return "likely drift: no release in or just before the window (a regression remains possible)"


def _status_high_bad(est: float, lo: float, hi: float, threshold: float) -> str:
    return "alert" if lo > threshold else "watch" if est > threshold else "ok"


def _by_cell(rows: Sequence[TrafficRow]) -> dict[tuple[str, str], list[TrafficRow]]:
    out: dict[tuple[str, str], list[TrafficRow]] = {}
    for r in rows:
        out.setdefault((r.window, ALL), []).append(r)
        out.setdefault((r.window, r.branch), []).append(r)
    return out


def _system_value(row: TrafficRow, path: Sequence[str]) -> float | None:
    cur: Any = row.record.get("system")
    for p in path:
        cur = cur.get(p) if isinstance(cur, Mapping) else None
    if isinstance(cur, bool) or not isinstance(cur, (int, float)) or not math.isfinite(cur):
        return None
    return float(cur)


def quantile_ci(values: Sequence[float], q: float, level: float) -> tuple[float, tuple[float, float]]:
    """Type-7 quantile (the system family's) with a distribution-free order-statistic interval."""
    import numpy as np
    from scipy.stats import binom

    from kg_rageval.families.system.quantiles import weighted_quantile

    v = np.sort(np.asarray(values, float))
    n = len(v)
    a = 1 - level
    lo_i = max(0, int(binom.ppf(a / 2, n, q)) - 1)
    hi_i = min(n - 1, int(binom.ppf(1 - a / 2, n, q)))
    est = weighted_quantile(v, q)
    assert est is not None
    return float(est), (float(v[lo_i]), float(v[hi_i]))


def _fer_alerts(fer: Mapping[tuple[str, str], Mapping[str, Any]], threshold: float) -> list[Alert]:
    """Sampled FER above ``threshold``: on the weighted estimate (all strata, 1/pi)."""
    out = []
    for (w, g), cell in sorted(fer.items()):
        est = cell["weighted"]
        detail = {"from": est["from"], "random_stratum": cell["random_stratum"]}
        if est["status"] != "estimated":
            detail["reason"] = est.get("reason")
            out.append(
                Alert(
                    "filter_false_exclusion_rate",
                    w,
                    g,
                    INSUFFICIENT,
                    est["n"],
                    None,
                    None,
                    threshold,
                    detail=detail,
                )
            )
            continue
        lo, hi = est["ci"]
        out.append(
            Alert(
                "filter_false_exclusion_rate",
                w,
                g,
                _status_high_bad(est["estimate"], lo, hi, threshold),
                est["n"],
                est["estimate"],
                (lo, hi),
                threshold,
                detail=detail,
            )
        )
    return out


def _fer_results(cfg: AlertConfig, fer: Mapping[tuple[str, str], Mapping[str, Any]] | None) -> list[Alert]:
    """The sampled-FER guardrail's alerts (none when the config has no such guardrail); a config
    that asks for it without reviewed records is a config error."""
    if cfg.filter_false_exclusion_rate is None:
        return []
    if fer is None:
        raise ConfigError(
            "filter_false_exclusion_rate needs reviewed records, a review queue and a corpus "
            "(monitor alerts --queue QUEUE --corpus CORPUS [--reviewed REVIEWED])"
        )
    return _fer_alerts(fer, cfg.filter_false_exclusion_rate.max)


def evaluate(
    rows: Sequence[TrafficRow],
    cfg: AlertConfig,
    *,
    windowing: Windowing,
    deploys: Sequence[Deploy] = (),
    fer: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Every configured check per window and branch. ``fer``: the sampled FER cells
    (:func:`kg_rageval.monitor.fer.fer_cells` of a ``by_window`` report), needed by the
    ``filter_false_exclusion_rate`` check."""
    lookback = Windowing.parse(cfg.deploy_lookback).width or timedelta(0)
    cells = _by_cell(rows)
    windows = sorted({w for w, _ in cells})
    results: list[Alert] = []
    z = cfg.level
    mr = cfg.min_rows

    if cfg.faithfulness is not None:
        fc = cfg.faithfulness
        for i, w in enumerate(windows):
            span = set(windows[max(0, i - fc.rolling_windows + 1) : i + 1])
            for g in sorted({g for ww, g in cells if ww == w}):
                vals = [
                    v for ww in span for r in cells.get((ww, g), []) if (v := perf.faithful(r)) is not None
                ]
                n, k = len(vals), sum(vals)
                if n < mr:
                    results.append(
                        Alert("faithfulness", w, g, INSUFFICIENT, n, k / n if n else None, None, fc.min)
                    )
                    continue
                lo, hi = perf.wilson(k, n, z)
                est = k / n
                st = "alert" if hi < fc.min else "watch" if est < fc.min else "ok"
                results.append(
                    Alert(
                        "faithfulness",
                        w,
                        g,
                        st,
                        n,
                        est,
                        (lo, hi),
                        fc.min,
                        detail={"rolling_windows": sorted(span)},
                    )
                )

    if cfg.latency_p95_ms is not None:
        lc = cfg.latency_p95_ms
        need = max(mr, quantile_min_rows(0.95))
        for (w, g), rs in sorted(cells.items()):
            lat = [x for r in rs if (x := _system_value(r, ("latency_ms", lc.stage))) is not None]
            if len(lat) < need:
                results.append(
                    Alert(
                        "latency_p95_ms",
                        w,
                        g,
                        INSUFFICIENT,
                        len(lat),
                        None,
                        None,
                        lc.max,
                        detail={"min_rows": need},
                    )
                )
                continue
            est, (lo, hi) = quantile_ci(lat, 0.95, z)
            results.append(
                Alert(
                    "latency_p95_ms",
                    w,
                    g,
                    _status_high_bad(est, lo, hi, lc.max),
                    len(lat),
                    est,
                    (lo, hi),
                    lc.max,
                )
            )

    if cfg.cost_per_query_usd is not None:
        cc = cfg.cost_per_query_usd
        from scipy.stats import t as student_t

        for (w, g), rs in sorted(cells.items()):
            costs = [y for r in rs if (y := _system_value(r, ("cost_usd",))) is not None]
            n = len(costs)
            if n < mr:
                results.append(Alert("cost_per_query_usd", w, g, INSUFFICIENT, n, None, None, cc.max))
                continue
            mean = sum(costs) / n
            sd = math.sqrt(sum((v - mean) ** 2 for v in costs) / (n - 1))
            half = float(student_t.ppf(1 - (1 - z) / 2, n - 1)) * sd / math.sqrt(n)
            results.append(
                Alert(
                    "cost_per_query_usd",
                    w,
                    g,
                    _status_high_bad(mean, mean - half, mean + half, cc.max),
                    n,
                    mean,
                    (mean - half, mean + half),
                    cc.max,
                )
            )

    results.extend(_fer_results(cfg, fer))

    bands: dict[str, Any] | None = None
    if cfg.regeneration is not None:
        rc = cfg.regeneration
        rcells: dict[tuple[str, str], perf.RateCell] = {}
        for by in ("all", "branch"):
            rcells.update(perf.rate_cells(rows, "regeneration_rate", by=by, level=z, min_rows=mr))
        bands = perf.apply_bands(
            rcells, rc.reference, budget=rc.false_alarm_budget, reference_error=rc.reference_error
        )
        for c in sorted(rcells.values(), key=lambda c: (c.window, c.group)):
            if c.status == "reference":
                continue
            st = c.status if c.status == INSUFFICIENT else "ok" if c.status == "ok" else "alert"
            results.append(
                Alert(
                    "regeneration_rate",
                    c.window,
                    c.group,
                    st,
                    c.n,
                    c.estimate,
                    c.ci if c.n else None,
                    rc.reference,
                    detail={"band": list(c.band) if c.band else None, "band_status": c.status},
                )
            )

    return _finish(results, bands, windowing, deploys, lookback)


def _finish(
    results: list[Alert],
    bands: dict[str, Any] | None,
    windowing: Windowing,
    deploys: Sequence[Deploy],
    lookback: timedelta,
) -> dict[str, Any]:
    for a in results:
        if a.status in ("alert", "watch"):
            a.triage = triage(a.window, windowing, deploys, lookback)
    counts: dict[str, int] = {}
    for a in results:
        counts[a.status] = counts.get(a.status, 0) + 1
    return {
        "status": "alert" if counts.get("alert") else "quiet",
        "counts": counts,
        "regeneration_band": bands,
        "note": "a triage hint is a hint: " + perf.CAUSE_NOTE,
        "results": [a.to_dict() for a in results],
    }


def _mean_ci(n: int, total: float, squares: float, level: float) -> tuple[float, tuple[float, float]]:
    """Mean and Student-t interval from the mergeable sums ``n``, ``sum x``, ``sum x^2``
    (``var = (sum x^2 - n mean^2) / (n - 1)``, clipped at 0; the two-pass formula of
    :func:`evaluate` to about 1e-12 relative for costs of a similar size)."""
    from scipy.stats import t as student_t

    mean = total / n
    var = max(0.0, (squares - n * mean * mean) / (n - 1))
    half = float(student_t.ppf(1 - (1 - level) / 2, n - 1)) * math.sqrt(var) / math.sqrt(n)
    return mean, (mean - half, mean + half)


def evaluate_store(
    store: Any,
    cfg: AlertConfig,
    *,
    windows: Sequence[str] | None = None,
    deploys: Sequence[Deploy] = (),
    fer: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    windowing: Windowing | None = None,
) -> dict[str, Any]:
    """:func:`evaluate` on a window store's mergeable sums instead of traffic rows (``monitor
    alerts --store``, the guardrails of ``monitor report``): the same checks, cells, statuses
    and evidence. Faithfulness reads ``reviewed_*`` + ``judged_*`` (a review takes precedence
    over the judge, as in :func:`~kg_rageval.monitor.performance.faithful`), summed over the
    rolling windows; the p95 is the exact type-7 quantile of the store's raw latency column
    (``latency_ms.total``) with the same order-statistic interval; cost per query is the mean
    and t interval from ``cost_n``, ``cost_sum``, ``cost_sq``; the regeneration band reads
    ``regenerated`` over ``regen_n`` (rows that carry the field). Results are reported for
    ``windows`` (default: every window of the store); the rolling span and the bands see every
    stored window up to the last of them. ``fer``: sampled FER cells, as for :func:`evaluate`."""
    stored = store.windows()
    report = set(windows) if windows is not None else set(stored)
    last = max(report) if report else None
    upto = [w for w in stored if last is not None and w <= last]
    if windowing is None:
        spec = store.windowing()
        windowing = Windowing.parse(spec) if spec else Windowing.parse("1d")
    lookback = Windowing.parse(cfg.deploy_lookback).width or timedelta(0)
    sums = store.sums(upto, by=("win", "branch")) + [
        {**r, "branch": ALL} for r in store.sums(upto, by=("win",))
    ]
    cells = {(r["win"], r["branch"]): r for r in sums}
    results: list[Alert] = []
    z, mr = cfg.level, cfg.min_rows

    if cfg.faithfulness is not None:
        fc = cfg.faithfulness
        for i, w in enumerate(upto):
            span = upto[max(0, i - fc.rolling_windows + 1) : i + 1]
            for g in sorted({g for ww, g in cells if ww == w}):
                n = k = 0
                for ww in span:
                    c = cells.get((ww, g))
                    if c is not None:
                        n += c["reviewed_n"] + c["judged_n"]
                        k += c["reviewed_k"] + c["judged_k"]
                if n < mr:
                    results.append(
                        Alert("faithfulness", w, g, INSUFFICIENT, n, k / n if n else None, None, fc.min)
                    )
                    continue
                lo, hi = perf.wilson(k, n, z)
                est = k / n
                st = "alert" if hi < fc.min else "watch" if est < fc.min else "ok"
                detail = {"rolling_windows": list(span)}
                results.append(Alert("faithfulness", w, g, st, n, est, (lo, hi), fc.min, detail=detail))

    if cfg.latency_p95_ms is not None:
        lc = cfg.latency_p95_ms
        if lc.stage != "total":
            raise ConfigError(
                f"latency_p95_ms.stage {lc.stage!r}: the window store keeps latency_ms.total only "
                "(use stage: total, or monitor alerts --data on the traffic file)"
            )
        need = max(mr, quantile_min_rows(0.95))
        for w, g in sorted(cells):
            if cells[(w, g)]["latency_n"] < need:
                results.append(
                    Alert(
                        "latency_p95_ms", w, g, INSUFFICIENT, cells[(w, g)]["latency_n"], None, None,
                        lc.max, detail={"min_rows": need},
                    )
                )  # fmt: skip
                continue
            lat = store.latency_values([w], branch=None if g == ALL else g)
            est, (lo, hi) = quantile_ci(lat, 0.95, z)
            results.append(
                Alert(
                    "latency_p95_ms", w, g, _status_high_bad(est, lo, hi, lc.max), len(lat), est,
                    (lo, hi), lc.max,
                )
            )  # fmt: skip

    if cfg.cost_per_query_usd is not None:
        cc = cfg.cost_per_query_usd
        for w, g in sorted(cells):
            c = cells[(w, g)]
            n = c["cost_n"]
            if n < mr:
                results.append(Alert("cost_per_query_usd", w, g, INSUFFICIENT, n, None, None, cc.max))
                continue
            mean, (lo, hi) = _mean_ci(n, c["cost_sum"], c["cost_sq"], z)
            results.append(
                Alert(
                    "cost_per_query_usd", w, g, _status_high_bad(mean, lo, hi, cc.max), n, mean,
                    (lo, hi), cc.max,
                )
            )  # fmt: skip

    results.extend(_fer_results(cfg, fer))

    bands: dict[str, Any] | None = None
    if cfg.regeneration is not None:
        rc = cfg.regeneration
        rcells = {
            key: perf.RateCell(key[0], key[1], "regeneration_rate", c["regenerated"], c["regen_n"], z, mr)
            for key, c in cells.items()
            if c["regen_n"] > 0
        }
        bands = perf.apply_bands(
            rcells, rc.reference, budget=rc.false_alarm_budget, reference_error=rc.reference_error
        )
        for cell in sorted(rcells.values(), key=lambda c: (c.window, c.group)):
            if cell.status == "reference":
                continue
            st = cell.status if cell.status == INSUFFICIENT else "ok" if cell.status == "ok" else "alert"
            results.append(
                Alert(
                    "regeneration_rate", cell.window, cell.group, st, cell.n, cell.estimate,
                    cell.ci if cell.n else None, rc.reference,
                    detail={"band": list(cell.band) if cell.band else None, "band_status": cell.status},
                )
            )  # fmt: skip

    results = [a for a in results if a.window in report]
    out = _finish(results, bands, windowing, deploys, lookback)
    out["source"] = {"store": str(store.path), "windows": sorted(report)}
    return out
