"""The monitoring page: what a person looks at (``kg-rageval monitor report``, ``docs/monitoring.md``).

:func:`monitor_report` reads a :class:`~kg_rageval.monitor.store.WindowStore` (read-only: it
never writes) and returns one JSON-ready payload over the windows shown:

* **drift** per window after the reference, against the reference (:func:`~kg_rageval.monitor.drift.drift_report`:
  branch mix, per-branch MMD, new concepts with ``golden``). Each window's report is one family
  corrected with Holm or BH (stated); the windows are *not* corrected against each other, so over
  ``W`` windows the chance of at least one false drift alarm on the page is up to ``W * alpha``
  (stated on the page); with ``across_windows`` every p-value of every compared window is one
  family instead (the page's family-wise error at ``alpha`` under Holm).
* **rates** per window and branch (and ``(all)``) from the store's mergeable sums, each with a
  Wilson interval and a control band from the reference window(s)' counts that accounts for
  both window sizes: the beta-binomial predictive acceptance region
  (:func:`~kg_rageval.monitor.performance.predictive_band`; a plug-in binomial band around a
  single day's rate raised false alarms on stationary 1M-row traffic, its own sampling error
  being as large as the window's), Bonferroni over the monitored cells of a rate
  (:func:`~kg_rageval.monitor.performance.apply_bands`), so the chance that any in-control cell
  of that rate leaves its band is about ``budget`` at most; pool several reference windows with
  ``rate_reference`` for narrower bands. Each rate's denominator is the rows that carry its
  field (the store counts them): ``thumbs_down_rate`` = thumbs down / (thumbs down + thumbs up),
  ``regeneration_rate`` = ``feedback.regenerated`` true / rows with a boolean
  ``feedback.regenerated``, ``refusal_rate`` = ``answer.refused`` true / rows with a boolean
  ``answer.refused``; a row without the field is not a "no". A rate whose field no row of any
  shown window carries is reported as **not observed**, never plotted as a reassuring 0.
* **guardrails** (with an alert config): :func:`~kg_rageval.monitor.alerts.evaluate_store` on
  the store's sums over the shown windows: faithfulness on the rolling reviewed/judged sample,
  p95 latency (exact, from the raw latency column), cost per query, sampled FER (given the
  review files), the regeneration band; each cell with its evidence (n, estimate, CI), the
  threshold and the deploy triage hint.
* **alerts**: every corrected drift test that fired, every rate cell outside its band and every
  guardrail cell in alert; a cell with too few rows is "insufficient evidence", never an alert.

:func:`render_html` turns the payload into one self-contained page (no script, no external CSS,
font or image; inline SVG; a ``Content-Security-Policy`` that forbids every fetch): one figure
per branch with a drift panel (``-log10`` of the corrected p-values, the alpha line) and one
panel per rate (band shaded, interval whiskers), alerts marked in red. Every string from the
data is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from kg_rageval.base.errors import ConfigError
from kg_rageval.monitor import performance as perf

ALL = "(all)"
RATES = ("regeneration_rate", "thumbs_down_rate", "refusal_rate")
NOT_OBSERVED = "not observed"
P_CAP = 4.0  # -log10 p drawn up to this; a p of 0 (no permutation as extreme) sits at the cap


def select_windows(
    windows: Sequence[str], reference: str | None, current: str | None, last: int | None
) -> tuple[str, list[str]]:
    """``(reference, shown windows)``: the store's windows up to ``current`` (default: the
    latest); with ``last`` only the last ``last`` of them; the reference (default: the first
    shown) is always shown first."""
    from kg_rageval.base.errors import InputError

    if not windows:
        raise InputError("the store holds no window (run `kg-rageval monitor ingest` first)")
    have = ", ".join(windows)
    for name, w in (("--reference", reference), ("--current", current)):
        if w is not None and w not in windows:
            raise InputError(f"{name}: no window {w!r} in the store (windows: {have})")
    cur = current or windows[-1]
    upto = [w for w in windows if w <= cur]
    if last is not None:
        if last < 2:
            raise ConfigError(f"--last {last}: expected at least 2 (a reference and a current window)")
        upto = upto[-last:]
    ref = reference or upto[0]
    if ref > cur:
        raise ConfigError(f"--reference {ref} is after --current {cur}")
    shown = [ref] + [w for w in upto if w > ref]
    if len(shown) < 2:
        raise ConfigError(f"only the reference window {ref} to show: nothing to compare it with")
    return ref, shown


def _correct_across(drift: list[dict[str, Any]], alpha: float, correction: str) -> None:
    """Re-correct every tested p-value of every window's report as one family (in place)."""
    from kg_rageval.monitor.drift import adjust

    tested = [t for rep in drift for t in rep["tests"] if t["p_value"] is not None]
    for t, p in zip(tested, adjust([t["p_value"] for t in tested], correction), strict=True):
        t["p_adjusted"] = p
        t["drift"] = p < alpha
    for rep in drift:
        rep["alert"] = any(t["drift"] for t in rep["tests"])
        rep["family"] = "every p-value of every compared window's report (--across-windows)"


def _rate_cells(store: Any, shown: Sequence[str], level: float, min_rows: int) -> dict[str, dict]:
    rows = store.sums(shown, by=("win", "branch")) + [
        {**r, "branch": ALL} for r in store.sums(shown, by=("win",))
    ]
    out: dict[str, dict[tuple[str, str], perf.RateCell]] = {r: {} for r in RATES}
    for r in rows:
        key = (r["win"], r["branch"])
        counts = {
            "regeneration_rate": (r["regenerated"], r["regen_n"]),
            "thumbs_down_rate": (r["thumbs_down"], r["thumbs_down"] + r["thumbs_up"]),
            "refusal_rate": (r["refused"], r["refusal_n"]),
        }
        for rate, (k, n) in counts.items():
            out[rate][key] = perf.RateCell(key[0], key[1], rate, int(k), int(n), level, min_rows)
    return out


def monitor_report(
    store: Any,
    *,
    reference: str | None = None,
    current: str | None = None,
    last: int | None = None,
    golden: set[str] | None = None,
    alpha: float = 0.05,
    correction: str = "holm",
    n_permutations: int = 100,
    sigma: float | None = None,
    seed: int = 0,
    min_rows: int = 10,
    rate_min_rows: int = perf.MIN_ROWS,
    budget: float = 0.05,
    level: float = 0.95,
    rate_reference: int = 1,
    across_windows: bool = False,
    guardrails: Any = None,
    deploys: Sequence[Any] = (),
    fer: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The monitoring payload of the module docstring (read-only on ``store``). ``guardrails``:
    an :class:`~kg_rageval.monitor.alerts.AlertConfig` whose checks run on the store's sums
    (:func:`~kg_rageval.monitor.alerts.evaluate_store`) over the shown windows, with
    ``deploys`` for the triage hint and ``fer`` cells for the sampled-FER check."""
    from kg_rageval.monitor.drift import drift_report

    if not 0 < budget < 1:
        raise ConfigError(f"false-alarm budget {budget}: expected a number in (0, 1)")
    ref, shown = select_windows(store.windows(), reference, current, last)
    if not 1 <= rate_reference < len(shown):
        raise ConfigError(
            f"rate reference of {rate_reference} windows: expected 1 to {len(shown) - 1} (windows shown: {len(shown)})"
        )
    band_ref = shown[:rate_reference]
    drift = [
        drift_report(
            store, ref, w, golden=golden, alpha=alpha, correction=correction,
            n_permutations=n_permutations, sigma=sigma, seed=seed, min_rows=min_rows,
        )
        for w in shown[1:]
    ]  # fmt: skip
    if across_windows:
        _correct_across(drift, alpha, correction)
    cells = _rate_cells(store, shown, level, rate_min_rows)
    rates: dict[str, Any] = {}
    alerts: list[dict[str, Any]] = []
    for rate, rc in cells.items():
        carried = sum(c.n for c in rc.values())
        if carried == 0:
            rates[rate] = {
                "status": NOT_OBSERVED,
                "reason": "no row of any shown window carries the field, so no rate is reported "
                "(a row without it is not a no: it is in no denominator)",
                "cells": [],
            }
            continue
        bands = perf.apply_bands(rc, band_ref, budget=budget, reference_error=True)
        rates[rate] = {
            **bands,
            "cells": [c.to_dict() for c in sorted(rc.values(), key=lambda c: (c.group, c.window))],
        }
        for c in sorted(rc.values(), key=lambda c: (c.window, c.group)):
            if c.status in ("above band", "below band"):
                alerts.append({
                    "kind": "rate", "check": rate, "window": c.window, "branch": c.group,
                    "status": c.status, "evidence": {"k": c.k, "n": c.n, "estimate": c.estimate,
                    "ci": list(c.ci) if c.ci else None}, "band": list(c.band) if c.band else None,
                })  # fmt: skip
    for rep in drift:
        for t in rep["tests"]:
            if t["drift"]:
                alerts.append({
                    "kind": "drift", "check": t["test"], "window": rep["current"],
                    "branch": t["branch"] or ALL, "status": "drift",
                    "evidence": {"n_reference": t["n_reference"], "n_current": t["n_current"],
                                 "statistic": t["statistic"], "p_value": t["p_value"],
                                 "p_adjusted": t["p_adjusted"]},
                })  # fmt: skip
    guard: dict[str, Any] | None = None
    if guardrails is not None:
        from kg_rageval.monitor.alerts import evaluate_store

        guard = evaluate_store(store, guardrails, windows=shown, deploys=deploys, fer=fer)
        for g in guard["results"]:
            if g["status"] == "alert":
                alerts.append({
                    "kind": "guardrail", "check": g["check"], "window": g["window"],
                    "branch": g["branch"], "status": "alert", "evidence": g["evidence"],
                    "threshold": g["threshold"], "triage": g["triage"],
                })  # fmt: skip
    branches = sorted(
        {ALL}
        | {r["branch"] for r in store.sums(shown, by=("branch",))}
        | {t["branch"] for rep in drift for t in rep["tests"] if t["branch"]}
    )
    return {
        "store": str(store.path),
        "reference": ref,
        "rate_reference": band_ref,
        "windows": shown,
        "rows": {w: int(sum(store.branch_counts(w).values())) for w in shown},
        "branches": [ALL] + [b for b in branches if b != ALL],
        "alpha": alpha,
        "correction": correction,
        "across_windows": across_windows,
        "correction_note": (
            f"{'Holm (family-wise error)' if correction == 'holm' else 'Benjamini-Hochberg (false discovery rate)'}"
            + (
                f" across every p-value of every compared window's report (branch mix, per-branch MMD, new "
                f"concepts; {len(drift)} windows, one family) at alpha {alpha:g}"
                if across_windows
                else f" across every p-value of one window's report (branch mix, per-branch MMD, new concepts) at "
                f"alpha {alpha:g}; windows are not corrected against each other: over {len(drift)} compared "
                f"windows the chance of at least one false drift alarm is up to {min(1.0, len(drift) * alpha):.3g}"
            )
        ),
        "rate_note": (
            f"Wilson {level:g} intervals; band: beta-binomial predictive acceptance region from the pooled "
            f"counts of the reference window(s) {', '.join(band_ref)} (Jeffreys prior: the reference rate's "
            f"own sampling error included), false-alarm budget {budget:g} per rate (Bonferroni over its monitored cells); "
            f"cells with fewer than {rate_min_rows} rows: insufficient evidence"
        ),
        "drift": drift,
        "rates": rates,
        "guardrails": guard,
        "alerts": alerts,
        "status": "alert" if alerts else "quiet",
        "note": perf.CAUSE_NOTE,
    }


# -- HTML ---------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
.status-alert{color:#b00020;font-weight:bold}.status-quiet{color:#1b5e20;font-weight:bold}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;font-size:13px}
figure.branch{margin:18px 0;border:1px solid #ddd;padding:8px}figcaption{font-weight:bold}
.note{color:#555;font-size:12px}svg text{font:11px sans-serif;fill:#333}
"""

_W, _LEFT, _RIGHT, _PH, _GAP, _TOP = 900, 70, 20, 110, 34, 10
_COLORS = {"mmd": "#1565c0", "new_concept": "#6a1b9a", "branch_mix": "#00838f", "classifier": "#ef6c00"}


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)


def _esc(v: Any) -> str:
    return escape(_fmt(v), quote=True)


def _short(w: str) -> str:
    return w[:10] if len(w) >= 10 and w[4:5] == "-" else w


class _Panel:
    def __init__(self, windows: Sequence[str], y0: float, title: str, ymax: float, ylabel: str) -> None:
        self.windows = list(windows)
        self.y0, self.title, self.ymax, self.ylabel = y0, title, ymax if ymax > 0 else 1.0, ylabel
        self.parts: list[str] = []

    def x(self, w: str) -> float:
        i = self.windows.index(w)
        span = _W - _LEFT - _RIGHT
        return _LEFT + (span * (i + 0.5) / len(self.windows))

    def y(self, v: float) -> float:
        v = min(max(v, 0.0), self.ymax)
        return self.y0 + _PH - _PH * v / self.ymax

    def frame(self) -> None:
        y0, p = self.y0, self.parts
        p.append(
            f'<rect x="{_LEFT}" y="{y0}" width="{_W - _LEFT - _RIGHT}" height="{_PH}" fill="#fafafa" stroke="#bbb"/>'
        )
        p.append(f'<text x="{_LEFT}" y="{y0 - 3}">{escape(self.title)}</text>')
        for frac in (0.0, 0.5, 1.0):
            yy = y0 + _PH - _PH * frac
            p.append(
                f'<text x="{_LEFT - 4}" y="{yy + 4:.1f}" text-anchor="end">{self.ymax * frac:.3g}</text>'
            )
        step = max(1, math.ceil(len(self.windows) / 12))
        for i, w in enumerate(self.windows):
            if i % step == 0:
                p.append(
                    f'<text x="{self.x(w):.1f}" y="{y0 + _PH + 12}" text-anchor="middle">{escape(_short(w))}</text>'
                )

    def marker(self, w: str, what: str) -> None:
        x = self.x(w)
        y = self.y0 + 2
        self.parts.append(
            f'<path class="alert-marker" data-window="{escape(w, quote=True)}" d="M{x - 6:.1f},{y:.1f} '
            f'L{x + 6:.1f},{y:.1f} L{x:.1f},{y + 10:.1f} Z" fill="#d50000"><title>{escape(what)}</title></path>'
        )


def _drift_panel(branch: str, payload: Mapping[str, Any], y0: float) -> _Panel:
    alpha = payload["alpha"]
    panel = _Panel(payload["windows"], y0, "drift: -log10 corrected p (dashed: alpha)", P_CAP, "")
    panel.frame()
    p = panel.parts
    ya = panel.y(-math.log10(alpha))
    p.append(
        f'<line x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{ya:.1f}" y2="{ya:.1f}" stroke="#d50000" stroke-dasharray="4 3"/>'
    )
    for rep in payload["drift"]:
        w = rep["current"]
        for t in rep["tests"]:
            if (t["branch"] or ALL) != branch:
                continue
            color = _COLORS.get(t["test"], "#444")
            label = f"{t['test']} {w}: n {t['n_reference']}/{t['n_current']}"
            if t["p_adjusted"] is None:
                x = panel.x(w)
                yb = y0 + _PH - 4
                p.append(
                    f'<path class="insufficient" d="M{x - 4:.1f},{yb - 4:.1f} L{x + 4:.1f},{yb + 4:.1f} M{x - 4:.1f},{yb + 4:.1f} '
                    f'L{x + 4:.1f},{yb - 4:.1f}" stroke="#999"><title>{escape(label + ": " + str(t["reason"]))}</title></path>'
                )
                continue
            v = -math.log10(t["p_adjusted"]) if t["p_adjusted"] > 0 else P_CAP
            p.append(
                f'<circle class="drift-point" cx="{panel.x(w):.1f}" cy="{panel.y(v):.1f}" r="4" fill="{color}">'
                f"<title>{escape(label)}: statistic {_esc(t['statistic'])}, p {_esc(t['p_value'])}, "
                f"p adjusted {_esc(t['p_adjusted'])}</title></circle>"
            )
            if t["drift"]:
                panel.marker(w, f"DRIFT {label}: p adjusted {_fmt(t['p_adjusted'])}")
    return panel


def _rate_panel(branch: str, rate: str, info: Mapping[str, Any], windows: Sequence[str], y0: float) -> _Panel:
    cells = [c for c in info["cells"] if c["group"] == branch]
    top = max([c["ci"][1] for c in cells if c["ci"]] + [c["band"][1] for c in cells if c["band"]] + [0.0])
    ymax = min(1.0, max(0.05, top * 1.15))
    panel = _Panel(windows, y0, f"{rate} (shaded: control band; whiskers: interval)", ymax, "")
    panel.frame()
    p = panel.parts
    half = 0.35 * (_W - _LEFT - _RIGHT) / len(windows)
    for c in cells:
        x = panel.x(c["window"])
        if c["band"]:
            lo, hi = c["band"]
            p.append(
                f'<rect class="band" x="{x - half:.1f}" y="{panel.y(hi):.1f}" width="{2 * half:.1f}" '
                f'height="{max(0.5, panel.y(lo) - panel.y(hi)):.1f}" fill="#c8e6c9"/>'
            )
        label = f"{rate} {c['window']}: {c['k']}/{c['n']} ({c['status']})"
        if c["estimate"] is None:
            continue
        if c["ci"]:
            p.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{panel.y(c["ci"][0]):.1f}" y2="{panel.y(c["ci"][1]):.1f}" stroke="#555"/>'
            )
        fill = (
            "#999"
            if c["status"] == perf.INSUFFICIENT
            else "#000"
            if c["status"] == "reference"
            else "#1565c0"
        )
        p.append(
            f'<circle class="rate-point" cx="{x:.1f}" cy="{panel.y(c["estimate"]):.1f}" r="3.5" fill="{fill}">'
            f"<title>{escape(label)}: {_esc(c['estimate'])} CI {_esc(c['ci'])} band {_esc(c['band'])}</title></circle>"
        )
        if c["status"] in ("above band", "below band"):
            panel.marker(c["window"], f"ALERT {label}")
    return panel


def _branch_figure(branch: str, payload: Mapping[str, Any]) -> str:
    rates = [(r, info) for r, info in payload["rates"].items() if info.get("status") != NOT_OBSERVED]
    panels = [_drift_panel(branch, payload, _TOP + 14)]
    for i, (rate, info) in enumerate(rates):
        panels.append(_rate_panel(branch, rate, info, payload["windows"], _TOP + 14 + (i + 1) * (_PH + _GAP)))
    for a in payload["alerts"]:
        if a["kind"] == "guardrail" and a["branch"] == branch:
            ev = a["evidence"]
            panels[0].marker(
                a["window"],
                f"GUARDRAIL {a['check']} {a['window']}: n {ev['n']}, estimate {_fmt(ev['estimate'])}, "
                f"CI {_fmt(ev['ci'])}, threshold {_fmt(a['threshold'])}; {a['triage']}",
            )
    height = _TOP + 14 + len(panels) * (_PH + _GAP)
    body = "".join("".join(pn.parts) for pn in panels)
    n_alerts = sum(1 for a in payload["alerts"] if a["branch"] == branch)
    b = escape(branch, quote=True)
    return (
        f'<figure class="branch" data-branch="{b}" data-alerts="{n_alerts}"><figcaption>branch {escape(branch)}'
        f" — {n_alerts} alert(s)</figcaption>"
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{_W}" height="{height}" '
        f'viewBox="0 0 {_W} {height}" role="img" aria-label="monitoring of branch {b}">{body}</svg></figure>'
    )


def render_html(payload: Mapping[str, Any]) -> str:
    """One self-contained page (module docstring); every data string escaped."""
    status = payload["status"]
    rows = "".join(
        f"<tr><td>{escape(a['kind'])}</td><td>{escape(a['check'])}</td><td>{escape(a['window'])}</td>"
        f"<td>{escape(a['branch'])}</td><td>{escape(a['status'])}</td><td>"
        + escape(", ".join(f"{k} {_fmt(v)}" for k, v in a["evidence"].items()))
        + "</td></tr>"
        for a in payload["alerts"]
    )
    windows = "".join(
        f"<tr><td>{escape(w)}</td><td>{payload['rows'][w]}</td><td>{'reference' if w == payload['reference'] else ''}</td></tr>"
        for w in payload["windows"]
    )
    absent = "".join(
        f"<li>{escape(r)}: {escape(info['status'])} — {escape(info['reason'])}</li>"
        for r, info in payload["rates"].items()
        if info.get("status") == NOT_OBSERVED
    )
    figures = "".join(_branch_figure(b, payload) for b in payload["branches"])
    guard = payload.get("guardrails")
    if guard is None:
        guard_html = "<p>No guardrail config given (<code>--alerts-config</code>).</p>"
    else:
        shown = [g for g in guard["results"] if g["status"] != "ok"]
        counts = ", ".join(f"{k} {v}" for k, v in sorted(guard["counts"].items()))
        guard_rows = "".join(
            f'<tr class="guardrail-row status-{escape(g["status"].replace(" ", "-"), quote=True)}">'
            f"<td>{escape(g['check'])}</td><td>{escape(g['window'])}</td><td>{escape(g['branch'])}</td>"
            f"<td>{escape(g['status'])}</td><td>{_esc(g['evidence']['n'])}</td><td>{_esc(g['evidence']['estimate'])}</td>"
            f"<td>{_esc(g['evidence']['ci'])}</td><td>{_esc(g['threshold'])}</td><td>{escape(g['triage'])}</td></tr>"
            for g in shown
        )
        guard_html = (
            f'<p class="note">Guardrail checks per window and branch: {escape(counts)}; a cell with too few '
            f"rows is insufficient evidence, never an alert; {escape(guard['note'])}.</p>"
            + (
                "<table><thead><tr><th>check</th><th>window</th><th>branch</th><th>status</th><th>n</th>"
                "<th>estimate</th><th>CI</th><th>threshold</th><th>triage</th></tr></thead>"
                f"<tbody>{guard_rows}</tbody></table>"
                if guard_rows
                else "<p>Every guardrail check is ok.</p>"
            )
        )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>Monitoring: {escape(payload['store'])}</title><style>{_CSS}</style></head><body>"
        f"<h1>Monitoring: {escape(payload['store'])}</h1>"
        f'<p>Status: <span class="status-{"alert" if status == "alert" else "quiet"}">{escape(status.upper())}</span>'
        f" — {len(payload['alerts'])} alert(s) over {len(payload['windows'])} windows, reference "
        f"{escape(payload['reference'])}.</p>"
        f'<p class="note">Drift: {escape(payload["correction_note"])}.</p>'
        f'<p class="note">Rates: {escape(payload["rate_note"])}.</p>'
        f'<p class="note">{escape(payload["note"])}; red triangles mark alerts, grey crosses insufficient evidence.</p>'
        + (f"<ul>{absent}</ul>" if absent else "")
        + "<h2>Alerts</h2>"
        + (
            f"<table><thead><tr><th>kind</th><th>check</th><th>window</th><th>branch</th><th>status</th>"
            f"<th>evidence</th></tr></thead><tbody>{rows}</tbody></table>"
            if rows
            else "<p>None.</p>"
        )
        + f"<h2>Guardrails</h2>{guard_html}"
        + f"<h2>Windows</h2><table><thead><tr><th>window</th><th>rows</th><th></th></tr></thead><tbody>{windows}</tbody></table>"
        + f"<h2>Per branch</h2>{figures}</body></html>"
    )
