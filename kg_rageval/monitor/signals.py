"""Implicit feedback signals as **candidates, not KPIs** (``docs/monitoring_review.md``).

A click on a cited source, a long dwell, a regeneration, a copy, share or export, or a
follow-up such as "are you sure?" may say something about answer quality, or nothing, or the
opposite of what one expects (a long dwell can be careful reading or confusion). So no
direction is assigned here: each signal is reported as its **association with reviewed
labels** (``review.faithful`` by default: any boolean reviewed field), with ``n`` and an
interval, and the report says "candidate signal, association only".

Signals (from the production record's ``feedback`` section, ``kg_rageval.monitor.traffic``;
a row without the field is not in that signal's analysis):

* ``cited_click``: ``feedback.cited_clicks > 0`` (an integer >= 0);
* ``dwell_ms``: ``feedback.dwell_ms`` (a number >= 0), continuous;
* ``regenerated``, ``copied``, ``shared``, ``exported``: ``feedback.<name>`` (bool);
* ``followup_doubt``: ``feedback.followup`` (the next user turn, or null: no follow-up)
  matches a doubt pattern (:data:`DOUBT_PATTERNS`, case-insensitive; replaceable).

Statistics per signal (and group: ``all``, ``branch`` or ``intent``), over reviewed rows:

* binary signal: the label rate with and without the signal and their **difference** with
  Newcombe's hybrid score interval (method 10; equal to ``statsmodels``
  ``confint_proportions_2indep(method="newcomb")``), the Pearson chi-square test of the 2 x 2
  table without continuity correction (``scipy.stats.chi2_contingency(correction=False)``)
  and Fisher's exact p;
* continuous signal: the **point-biserial** correlation with the label and its t-test p-value
  (``scipy.stats.pointbiserialr``), a seeded percentile bootstrap interval of ``r``, and the
  signal's mean for each label value.

Fewer than ``min_rows`` reviewed rows, an empty arm or a constant label is ``insufficient
evidence``. ``direction`` is always ``None``: choosing one is a decision for a person who has
seen the association on their own traffic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kg_rageval.audit.intervals import wilson
from kg_rageval.monitor.performance import group_of
from kg_rageval.monitor.traffic import TrafficRow
from kg_rageval.records import record_error

NOTE = (
    "candidate signal, association only: no direction is assigned; an association with reviewed "
    "labels on this traffic is not a KPI and does not show that the signal measures quality"
)
INSUFFICIENT = "insufficient evidence"
MIN_ROWS = 30
DOUBT_PATTERNS = (
    r"\bare you (?:sure|certain)\b",
    r"\byou sure\b",
    r"\breally\s*\?",
    r"\bis (?:that|this) (?:right|correct|true)\b",
    r"\bthat(?:'s| is) (?:wrong|not right|incorrect|not true)\b",
    r"\bdouble[- ]check\b",
)
BINARY = ("cited_click", "regenerated", "copied", "shared", "exported", "followup_doubt")
CONTINUOUS = ("dwell_ms",)
SIGNALS = BINARY + CONTINUOUS


def _rec(row: TrafficRow) -> dict[str, Any]:
    return dict(row.record) or {"id": row.record_id}


def signal_reader(
    name: str, doubt: Sequence[str] = DOUBT_PATTERNS
) -> Callable[[TrafficRow], bool | float | None]:
    """``row -> value`` of one signal (``None``: the row does not carry it); a malformed field
    is an :class:`InputError` naming the record and field."""
    if name not in SIGNALS:
        raise ValueError(f"unknown signal {name!r}; known: {', '.join(SIGNALS)}")
    if name == "followup_doubt":
        pats = [re.compile(p, re.IGNORECASE) for p in doubt]

        def followup(row: TrafficRow) -> bool | None:
            if "followup" not in row.feedback:
                return None
            v = row.feedback["followup"]
            if v is None:
                return False
            if not isinstance(v, str):
                raise record_error(_rec(row), "feedback.followup", "expected the next turn's text or null")
            return any(p.search(v) for p in pats)

        return followup
    field, ok, expected, convert = _FIELDS.get(name) or (name, _is_bool, "true, false or null", bool)

    def read(row: TrafficRow) -> bool | float | None:
        v = row.feedback.get(field)
        if v is None:
            return None
        if not ok(v):
            raise record_error(_rec(row), f"feedback.{field}", f"expected {expected}, found {v!r}")
        return convert(v)

    return read


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _is_duration(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


_FIELDS: dict[str, tuple[str, Callable[[Any], bool], str, Callable[[Any], bool | float]]] = {
    "cited_click": ("cited_clicks", _is_count, "an integer >= 0", lambda v: v > 0),
    "dwell_ms": ("dwell_ms", _is_duration, "a number >= 0", float),
}


def label_reader(path: str = "review.faithful") -> Callable[[TrafficRow], int | None]:
    """``row -> 0/1`` of a reviewed boolean field (dotted path in the record); ``None`` when
    the row is not reviewed."""
    parts = path.split(".")

    def read(row: TrafficRow) -> int | None:
        cur: Any = row.record
        for p in parts:
            cur = cur.get(p) if isinstance(cur, Mapping) else None
        if cur is None:
            return None
        if isinstance(cur, bool):
            return int(cur)
        if isinstance(cur, int) and cur in (0, 1):
            return cur
        raise record_error(_rec(row), path, f"a reviewed label is true/false (or 0/1), found {cur!r}")

    return read


def newcombe_diff(k1: int, n1: int, k0: int, n0: int, level: float = 0.95) -> tuple[float, float]:
    """Newcombe's hybrid score interval (method 10) of ``k1/n1 - k0/n0`` from the two Wilson
    intervals."""
    p1, p0 = k1 / n1, k0 / n0
    l1, u1 = wilson(k1, n1, level)
    l0, u0 = wilson(k0, n0, level)
    d = p1 - p0
    lo = d - math.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2)
    hi = d + math.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)
    return max(-1.0, lo), min(1.0, hi)


def _binary(pairs: Sequence[tuple[bool, int]], level: float) -> dict[str, Any]:
    from scipy.stats import chi2_contingency, fisher_exact

    n1 = sum(1 for s, _ in pairs if s)
    n0 = len(pairs) - n1
    k1 = sum(y for s, y in pairs if s)
    k0 = sum(y for s, y in pairs if not s)
    out: dict[str, Any] = {
        "kind": "binary",
        "with_signal": {"n": n1, "label_rate": k1 / n1 if n1 else None},
        "without_signal": {"n": n0, "label_rate": k0 / n0 if n0 else None},
    }
    if not n1 or not n0:
        return {**out, "status": INSUFFICIENT, "reason": "the signal is constant on the reviewed rows"}
    table = [[k1, n1 - k1], [k0, n0 - k0]]
    chi2, p, _, _ = chi2_contingency(table, correction=False)
    out.update(
        status="estimated",
        statistic="difference in label rate (with - without the signal)",
        estimate=k1 / n1 - k0 / n0,
        ci=list(newcombe_diff(k1, n1, k0, n0, level)),
        interval="Newcombe hybrid score (method 10)",
        chi2=float(chi2),
        chi2_p=float(p),
        fisher_p=float(fisher_exact(table).pvalue),
        test="Pearson chi-square of the 2x2 table, no continuity correction; Fisher exact",
    )
    return out


def point_biserial(x: Sequence[float], y: Sequence[int]) -> tuple[float, float]:
    """``(r, two-sided p)``: Pearson r of a 0/1 label with a continuous signal and its t-test."""
    import numpy as np
    from scipy.stats import t as student_t

    X, Y = np.asarray(x, float), np.asarray(y, float)
    n = len(X)
    r = float(np.corrcoef(X, Y)[0, 1])
    r = max(-1.0, min(1.0, r))
    if abs(r) == 1.0:
        return r, 0.0
    tstat = r * math.sqrt((n - 2) / (1 - r * r))
    return r, float(2 * student_t.sf(abs(tstat), n - 2))


def bootstrap_r(
    x: Sequence[float], y: Sequence[int], *, n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[tuple[float, float] | None, int]:
    """Seeded percentile bootstrap interval of the point-biserial r (resampling rows); a
    resample with a constant signal or label is dropped and counted."""
    import numpy as np

    rng = np.random.default_rng(seed)
    X, Y = np.asarray(x, float), np.asarray(y, float)
    n = len(X)
    rs: list[np.ndarray] = []
    dropped = 0
    step = max(1, min(n_boot, 2_000_000 // max(n, 1)))
    done = 0
    while done < n_boot:
        b = min(step, n_boot - done)
        idx = rng.integers(0, n, size=(b, n))
        xs, ys = X[idx], Y[idx]
        xc = xs - xs.mean(axis=1, keepdims=True)
        yc = ys - ys.mean(axis=1, keepdims=True)
        den = np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
        ok = den > 0
        dropped += int((~ok).sum())
        rs.append((xc * yc).sum(axis=1)[ok] / den[ok])
        done += b
    allr = np.concatenate(rs) if rs else np.zeros(0)
    if len(allr) == 0:
        return None, dropped
    a = (1 - level) / 2
    return (float(np.quantile(allr, a)), float(np.quantile(allr, 1 - a))), dropped


def _continuous(pairs: Sequence[tuple[float, int]], level: float, n_boot: int, seed: int) -> dict[str, Any]:
    xs = [x for x, _ in pairs]
    ys = [y for _, y in pairs]
    g1 = [x for x, y in pairs if y]
    g0 = [x for x, y in pairs if not y]
    out: dict[str, Any] = {
        "kind": "continuous",
        "mean_label_1": sum(g1) / len(g1) if g1 else None,
        "mean_label_0": sum(g0) / len(g0) if g0 else None,
    }
    if len(set(xs)) < 2:
        return {**out, "status": INSUFFICIENT, "reason": "the signal is constant on the reviewed rows"}
    r, p = point_biserial(xs, ys)
    ci, dropped = bootstrap_r(xs, ys, n_boot=n_boot, level=level, seed=seed)
    out.update(
        status="estimated",
        statistic="point-biserial correlation with the label",
        estimate=r,
        ci=list(ci) if ci else None,
        interval=f"percentile bootstrap, {n_boot} resamples, seed {seed} ({dropped} degenerate dropped)",
        p_value=p,
        test="t-test of the point-biserial r (n - 2 df)",
    )
    return out


def signal_report(
    rows: Sequence[TrafficRow],
    *,
    label: str = "review.faithful",
    signals: Sequence[str] = SIGNALS,
    by: str = "all",
    level: float = 0.95,
    min_rows: int = MIN_ROWS,
    n_boot: int = 1000,
    seed: int = 0,
    doubt: Sequence[str] = DOUBT_PATTERNS,
) -> dict[str, Any]:
    """Association of every signal with the reviewed ``label`` per group (module docstring)."""
    read_label = label_reader(label)
    labelled = [(r, y) for r in rows if (y := read_label(r)) is not None]
    results = []
    for name in signals:
        read = signal_reader(name, doubt)
        cells: dict[str, list[tuple[Any, int]]] = {}
        for r, y in labelled:
            v = read(r)
            if v is None:
                continue
            cells.setdefault(group_of(r, by), []).append((v, y))
        for g in sorted(cells):
            pairs = cells[g]
            entry: dict[str, Any] = {"signal": name, "group": g, "n": len(pairs), "direction": None}
            n_pos = sum(y for _, y in pairs)
            if len(pairs) < min_rows:
                entry.update(status=INSUFFICIENT, reason=f"{len(pairs)} reviewed rows (< {min_rows})")
            elif n_pos in (0, len(pairs)):
                entry.update(status=INSUFFICIENT, reason="the reviewed label is constant")
            elif name in BINARY:
                entry.update(_binary(pairs, level))
            else:
                entry.update(_continuous(pairs, level, n_boot, seed))
            entry["label_rate"] = n_pos / len(pairs)
            results.append(entry)
    return {
        "note": NOTE,
        "label": label,
        "by": by,
        "level": level,
        "min_rows": min_rows,
        "n_rows": len(rows),
        "n_reviewed": len(labelled),
        "doubt_patterns": list(doubt),
        "results": results,
    }
