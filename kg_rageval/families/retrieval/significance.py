"""N-system comparison: paired per-query tests, multiple-comparison correction, effect sizes,
bootstrap CIs on the deltas, wins/ties/losses, overall and per ontology branch.

For a baseline A and each candidate B, per measure, on the same queries (``d_q = b_q − a_q``):

* ``permutation``: the two-sided sign-flip randomisation test of
  :func:`.compare.permutation_p` (exact for n < 13);
* ``t``: Student's paired t-test, ``scipy.stats.ttest_rel(b, a)`` (ranx's ``student``);
* ``wilcoxon``: ``scipy.stats.wilcoxon(d)`` (zero differences dropped, scipy's default
  ``zero_method="wilcox"``); with every d_q = 0 the p-value is 1.
* ``tukey`` (on request): Tukey's HSD over all the systems of one measure, on the same
  queries — ``scipy.stats.tukey_hsd`` (ranx's ``tukey``), equal to statsmodels'
  ``pairwise_tukeyhsd``: a one-way ANOVA design, so the queries are *not* paired (a paired
  test has more power on the same queries); every pair of systems gets ``meandiff`` (second −
  first), the family-wise p-value and its simultaneous CI at ``level``. Its p-value already
  controls the error over all system pairs of the measure and is not corrected again.
* correction over the candidates × measures of one test: ``holm`` (step-down) or
  ``bonferroni``, ``p_adj = min(1, ...)``; ``none`` keeps the raw p.
* effect size: Cohen's d_z = mean(d) / sd(d) (ddof 1; ``None`` when sd is 0 or n < 2);
* ``ci``: percentile bootstrap interval of mean(d) (:func:`.compare.bootstrap_ci`, seeded);
* wins / ties / losses: queries with d > 0, d = 0, d < 0.

Every delta is first rounded to ``DELTA_DECIMALS`` (12) decimals: per-query values carry
~1e-14 of floating-point rounding (prefix sums shared by all queries), and counting that as a
win or a loss — or letting it break the ties among equal |d| that the Wilcoxon ranks average —
reports noise as an effect. A delta below 5e-13 is a tie. Every test, the W/T/L counts, the
effect size, the mean delta and the bootstrap CI use the rounded deltas; the systems' means are
those of the values as computed.

Per ontology branch (the queries whose gold node lies in a branch node's subtree), the same
deltas and permutation tests with Holm correction over the branches: a candidate *improves*
a branch when ``p_adj < alpha`` and the delta is positive, *breaks* it when negative.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError, MissingEvidence
from kg_rageval.families.retrieval.compare import bootstrap_ci, permutation_p

TESTS = ("permutation", "t", "wilcoxon")
ALL_TESTS = (*TESTS, "tukey")
"""``tukey`` (Tukey HSD over all systems) is on request: it is not a paired test."""
DELTA_DECIMALS = 12
"""Paired deltas are compared at this many decimals (module docstring)."""


def paired_deltas(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``b - a`` rounded to :data:`DELTA_DECIMALS` decimals (``+0.0`` for a tie)."""
    d = np.round(np.asarray(b, dtype=float) - np.asarray(a, dtype=float), DELTA_DECIMALS)
    return d + 0.0  # -0.0 → 0.0


CORRECTIONS = ("holm", "bonferroni", "none")


def holm(p: Sequence[float]) -> list[float]:
    """Holm–Bonferroni step-down adjusted p-values (same order as ``p``)."""
    pa = np.asarray(p, dtype=float)
    m = len(pa)
    order = np.argsort(pa, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * pa[order])) if m else pa
    out = np.empty(m)
    out[order] = adj
    return out.tolist()


def bonferroni(p: Sequence[float]) -> list[float]:
    pa = np.asarray(p, dtype=float)
    return np.minimum(1.0, pa * len(pa)).tolist()


def adjust(p: Sequence[float], method: str) -> list[float]:
    if method == "holm":
        return holm(p)
    if method == "bonferroni":
        return bonferroni(p)
    if method == "none":
        return [float(x) for x in p]
    raise ValueError(f"correction must be one of {CORRECTIONS}, got {method!r}")


def t_test_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided paired Student's t-test p-value (scipy ``ttest_rel``); 1.0 when every delta
    is 0 (no evidence of a difference), ``nan`` never reaches a report."""
    from scipy import stats  # type: ignore[import-untyped]

    d = paired_deltas(a, b)
    if len(d) < 2:
        raise MissingEvidence("t-test needs at least 2 paired queries")
    if np.all(d == d[0]):
        return 1.0 if d[0] == 0 else 0.0
    return float(stats.ttest_1samp(d, 0.0).pvalue)  # = ttest_rel(b, a) on the rounded deltas


def wilcoxon_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value (scipy ``wilcoxon``); 1.0 when every delta is 0."""
    from scipy import stats  # type: ignore[import-untyped]

    d = paired_deltas(a, b)
    if not np.any(d != 0):
        return 1.0
    return float(stats.wilcoxon(d).pvalue)


def tukey_hsd(
    values: Mapping[str, np.ndarray], *, level: float = 0.95, alpha: float = 0.05
) -> list[dict[str, Any]]:
    """Tukey HSD over the systems of ``values`` (``{system: per-query array}``, same queries):
    one row per pair ``(group1, group2)`` in system order with ``meandiff`` = mean(group2) −
    mean(group1), ``p_adj``, ``ci`` (simultaneous, at ``level``) and ``reject`` (p_adj <
    alpha), as statsmodels' ``pairwise_tukeyhsd`` reports them."""
    from scipy import stats  # type: ignore[import-untyped]

    names = list(values)
    arrs = [np.asarray(values[n], dtype=float) for n in names]
    if len(arrs) < 2:
        raise InputError("Tukey HSD needs at least two systems")
    if any(len(a) < 2 for a in arrs):
        raise MissingEvidence("Tukey HSD needs at least 2 queries per system")
    if all(np.all(a == arrs[0][0]) for a in arrs):
        res_p = np.ones((len(arrs), len(arrs)))
        lo = hi = np.zeros((len(arrs), len(arrs)))
    else:
        res = stats.tukey_hsd(*arrs)
        ci = res.confidence_interval(level)
        res_p, lo, hi = res.pvalue, ci.low, ci.high
    out = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            p = float(res_p[i, j])
            out.append(
                {
                    "group1": names[i],
                    "group2": names[j],
                    "n": int(len(arrs[i])),
                    "meandiff": float(arrs[j].mean() - arrs[i].mean()),
                    "p_adj": p,
                    "ci": [float(-hi[i, j]), float(-lo[i, j])],
                    "reject": bool(p < alpha),
                }
            )
    return out


def effect_size(d: np.ndarray) -> float | None:
    """Cohen's d_z = mean / sd (ddof 1); ``None`` when undefined."""
    if len(d) < 2:
        return None
    sd = float(np.std(d, ddof=1))
    return float(np.mean(d) / sd) if sd > 0 else None


@dataclass
class Row:
    """One (measure, candidate) comparison against the baseline."""

    measure: str
    candidate: str
    n: int
    mean_base: float
    mean_cand: float
    delta: float
    ci: tuple[float, float]
    p: dict[str, float]
    p_adj: dict[str, float] = field(default_factory=dict)
    effect: float | None = None
    wins: int = 0
    ties: int = 0
    losses: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "measure": self.measure,
            "candidate": self.candidate,
            "n": self.n,
            "mean_base": self.mean_base,
            "mean_cand": self.mean_cand,
            "delta": self.delta,
            "ci": list(self.ci),
            "p": self.p,
            "p_adj": self.p_adj,
            "effect_size": self.effect,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
        }


@dataclass
class BranchRow:
    branch: str
    label: str
    candidate: str
    measure: str
    n: int
    delta: float
    ci: tuple[float, float]
    p: float
    p_adj: float
    verdict: str  # "improves" | "breaks" | "no significant change"
    wins: int
    ties: int
    losses: int

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass
class Comparison:
    """Result of :func:`compare_systems`: the means table, the paired rows, branch rows."""

    systems: list[str]
    baseline: str
    measures: list[str]
    means: dict[str, dict[str, float | None]]  # system -> measure -> mean
    n: dict[str, int]  # measure -> paired queries
    rows: list[Row]
    tests: tuple[str, ...]
    correction: str
    alpha: float
    level: float
    branches: list[BranchRow] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    tukey: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # measure -> all pairs

    def to_dict(self) -> dict[str, Any]:
        return {
            "systems": self.systems,
            "baseline": self.baseline,
            "measures": self.measures,
            "means": self.means,
            "n": self.n,
            "tests": list(self.tests),
            "correction": self.correction,
            "alpha": self.alpha,
            "level": self.level,
            "comparisons": [r.to_dict() for r in self.rows],
            "branches": [b.to_dict() for b in self.branches],
            **({"tukey": self.tukey} if self.tukey else {}),
            **({"meta": self.meta} if self.meta else {}),
        }


def _pairs(values: Mapping[str, np.ndarray], baseline: str, cand: str) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(values[baseline], dtype=float), np.asarray(values[cand], dtype=float)


def compare_systems(
    per_query: Mapping[str, Mapping[str, np.ndarray]],
    *,
    baseline: str | None = None,
    masks: Mapping[str, np.ndarray] | None = None,
    tests: Sequence[str] = TESTS,
    correction: str = "holm",
    alpha: float = 0.05,
    level: float = 0.95,
    n_resamples: int = 2000,
    n_permutations: int = 10000,
    seed: int = 0,
    branches: Mapping[str, tuple[str, np.ndarray]] | None = None,
    branch_measures: Sequence[str] | None = None,
) -> Comparison:
    """Compare every system with ``baseline`` (default: the first) on every measure.

    ``per_query[system][measure]`` are per-query arrays over the same queries in the same
    order; ``masks[measure]`` selects the queries paired for a measure (default all: e.g. the
    queries with a relevant document). ``branches`` maps a branch id to ``(label, mask)`` over
    the queries; ``branch_measures`` (default the first measure) are tested per branch."""
    systems = list(per_query)
    if len(systems) < 2:
        raise InputError("compare needs at least two systems")
    baseline = baseline or systems[0]
    if baseline not in per_query:
        raise InputError(f"baseline {baseline!r} is not one of the systems {systems}")
    for t in tests:
        if t not in ALL_TESTS:
            raise ValueError(f"unknown test {t!r}; choose from {ALL_TESTS}")
    measures = list(per_query[baseline])
    nq = len(next(iter(per_query[baseline].values()))) if measures else 0
    for s in systems:
        if list(per_query[s]) != measures:
            raise InputError(f"system {s!r} has measures {list(per_query[s])}, the baseline {measures}")
        for m in measures:
            if len(per_query[s][m]) != nq:
                raise InputError(f"system {s!r}, {m}: {len(per_query[s][m])} queries, the baseline {nq}")
    cands = [s for s in systems if s != baseline]
    rows: list[Row] = []
    means: dict[str, dict[str, float | None]] = {s: {} for s in systems}
    ns: dict[str, int] = {}
    tukey_rows: dict[str, list[dict[str, Any]]] = {}
    for m in measures:
        mask = (
            np.ones(nq, dtype=bool) if masks is None or m not in masks else np.asarray(masks[m], dtype=bool)
        )
        ns[m] = int(mask.sum())
        for s in systems:
            v = np.asarray(per_query[s][m], dtype=float)[mask]
            means[s][m] = float(v.mean()) if len(v) else None
        if not mask.any():
            continue
        tk: dict[tuple[str, str], dict[str, Any]] = {}
        if "tukey" in tests and mask.sum() >= 2:
            pairs = tukey_hsd(
                {s: np.asarray(per_query[s][m], dtype=float)[mask] for s in systems}, level=level, alpha=alpha
            )
            tukey_rows[m] = pairs
            tk = {(r["group1"], r["group2"]): r for r in pairs} | {
                (r["group2"], r["group1"]): r for r in pairs
            }
        for c in cands:
            a, b = _pairs({k: per_query[k][m] for k in (baseline, c)}, baseline, c)
            a, b = a[mask], b[mask]
            d = paired_deltas(a, b)
            p: dict[str, float] = {}
            if "permutation" in tests:
                p["permutation"] = permutation_p(d, n_permutations=n_permutations, seed=seed)
            if "t" in tests and len(d) >= 2:
                p["t"] = t_test_p(a, b)
            if "wilcoxon" in tests:
                p["wilcoxon"] = wilcoxon_p(a, b)
            if (baseline, c) in tk:
                p["tukey"] = tk[(baseline, c)]["p_adj"]
            rows.append(
                Row(
                    m,
                    c,
                    len(d),
                    float(a.mean()),
                    float(b.mean()),
                    float(d.mean()),
                    bootstrap_ci(d, n_resamples=n_resamples, level=level, seed=seed),
                    p,
                    effect=effect_size(d),
                    wins=int((d > 0).sum()),
                    ties=int((d == 0).sum()),
                    losses=int((d < 0).sum()),
                )
            )
    for t in tests:
        idx = [i for i, r in enumerate(rows) if t in r.p]
        # Tukey's p is already family-wise over the system pairs (module docstring)
        adj = [rows[i].p[t] for i in idx] if t == "tukey" else adjust([rows[i].p[t] for i in idx], correction)
        for i, v in zip(idx, adj):
            rows[i].p_adj[t] = v
    comp = Comparison(systems, baseline, measures, means, ns, rows, tuple(tests), correction, alpha, level)
    comp.tukey = tukey_rows
    if branches:
        comp.branches = _branches(
            per_query,
            baseline,
            cands,
            list(branch_measures or measures[:1]),
            masks,
            branches,
            alpha,
            level,
            n_resamples,
            n_permutations,
            seed,
        )
    return comp


def _branches(
    per_query, baseline, cands, measures, masks, branches, alpha, level, n_resamples, n_permutations, seed
):
    out: list[BranchRow] = []
    for m in measures:
        base_mask = None if masks is None or m not in masks else np.asarray(masks[m], dtype=bool)
        for c in cands:
            a_all = np.asarray(per_query[baseline][m], dtype=float)
            b_all = np.asarray(per_query[c][m], dtype=float)
            group: list[BranchRow] = []
            for bid, (label, bmask) in branches.items():
                mk = np.asarray(bmask, dtype=bool) & (base_mask if base_mask is not None else True)
                if not mk.any():
                    continue
                d = paired_deltas(a_all[mk], b_all[mk])
                group.append(
                    BranchRow(
                        bid,
                        label,
                        c,
                        m,
                        len(d),
                        float(d.mean()),
                        bootstrap_ci(d, n_resamples=n_resamples, level=level, seed=seed),
                        permutation_p(d, n_permutations=n_permutations, seed=seed),
                        1.0,
                        "",
                        int((d > 0).sum()),
                        int((d == 0).sum()),
                        int((d < 0).sum()),
                    )
                )
            for r, pa in zip(group, holm([g.p for g in group])):
                r.p_adj = pa
                r.verdict = (
                    ("improves" if r.delta > 0 else "breaks")
                    if (pa < alpha and r.delta != 0)
                    else "no significant change"
                )
            out.extend(group)
    return out


# --------------------------------------------------------------------------- rendering


def _f(x: float | None, nd: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return f"{x:.{nd}f}"


def _p(x: float | None) -> str:
    if x is None:
        return "—"
    return "<0.0001" if x < 1e-4 else f"{x:.4f}"


def _tables(
    c: Comparison,
) -> tuple[list[str], list[list[str]], list[str], list[list[str]], list[str], list[list[str]]]:
    h1 = ["measure", *c.systems]
    t1 = [[m, *[_f(c.means[s][m]) for s in c.systems]] for m in c.measures]
    tcols = [f"p_{t}" for t in c.tests]
    h2 = ["measure", "candidate", "n", "delta", f"{int(c.level * 100)}% CI", *tcols, "d_z", "W/T/L"]
    t2 = []
    for r in c.rows:
        ps = [_p(r.p_adj.get(t)) + ("*" if r.p_adj.get(t, 1.0) < c.alpha else "") for t in c.tests]
        t2.append(
            [
                r.measure,
                r.candidate,
                str(r.n),
                f"{r.delta:+.4f}",
                f"[{r.ci[0]:+.4f}, {r.ci[1]:+.4f}]",
                *ps,
                _f(r.effect, 2),
                f"{r.wins}/{r.ties}/{r.losses}",
            ]
        )
    h3 = ["branch", "candidate", "measure", "n", "delta", "CI", "p_holm", "verdict"]
    t3 = [
        [
            f"{b.branch} {b.label}".strip(),
            b.candidate,
            b.measure,
            str(b.n),
            f"{b.delta:+.4f}",
            f"[{b.ci[0]:+.4f}, {b.ci[1]:+.4f}]",
            _p(b.p_adj),
            b.verdict,
        ]
        for b in c.branches
    ]
    return h1, t1, h2, t2, h3, t3


def _note(c: Comparison) -> str:
    return (
        f"baseline {c.baseline}; p-values {c.correction}-corrected over candidates x measures per test; "
        f"* p < {c.alpha}; CI: bootstrap of the mean delta; d_z: Cohen's effect size; W/T/L: queries"
    )


def render(c: Comparison, fmt: str = "text") -> str:
    """The comparison as ``text``, ``markdown``, ``latex`` or ``json``."""
    if fmt == "json":
        return json.dumps(c.to_dict(), indent=2, allow_nan=False)
    h1, t1, h2, t2, h3, t3 = _tables(c)
    if fmt == "text":
        from kg_rageval.base.fmt import table

        parts = [table(t1, h1), "", table(t2, h2), _note(c)]
        if t3:
            parts += ["", "== per ontology branch (Holm over branches)", table(t3, h3)]
        for m, pairs in c.tukey.items():
            rows_ = [
                [
                    r["group1"],
                    r["group2"],
                    f"{r['meandiff']:+.4f}",
                    _p(r["p_adj"]),
                    f"[{r['ci'][0]:+.4f}, {r['ci'][1]:+.4f}]",
                    str(r["reject"]),
                ]
                for r in pairs
            ]
            parts += [
                "",
                f"== Tukey HSD, {m} (all pairs; queries not paired; FWER {c.alpha})",
                table(rows_, ["group1", "group2", "meandiff", "p_adj", "CI", "reject"]),
            ]
        return "\n".join(parts)
    if fmt == "markdown":

        def md(h, t):
            return "\n".join(
                ["| " + " | ".join(h) + " |", "|" + "---|" * len(h)]
                + ["| " + " | ".join(x.replace("|", "\\|") for x in r) + " |" for r in t]
            )

        parts = [md(h1, t1), "", md(h2, t2), "", f"_{_note(c)}_"]
        if t3:
            parts += ["", "**Per ontology branch** (Holm over branches)", "", md(h3, t3)]
        return "\n".join(parts)
    if fmt == "latex":
        tex_map = {
            "\\": r"\textbackslash{}",
            "&": r"\&",
            "%": r"\%",
            "_": r"\_",
            "#": r"\#",
            "$": r"\$",
            "{": r"\{",
            "}": r"\}",
            "~": r"\textasciitilde{}",
            "^": r"\textasciicircum{}",
            "<": r"$<$",
            "—": "--",
        }

        def esc(s: str) -> str:
            return "".join(tex_map.get(ch, ch) for ch in s)

        def tex(h, t):
            return "\n".join(
                [
                    r"\begin{tabular}{l" + "r" * (len(h) - 1) + "}",
                    r"\toprule",
                    " & ".join(esc(x) for x in h) + r" \\",
                    r"\midrule",
                    *[" & ".join(esc(x) for x in r) + r" \\" for r in t],
                    r"\bottomrule",
                    r"\end{tabular}",
                ]
            )

        parts = [tex(h1, t1), "", tex(h2, t2), "% " + _note(c)]
        if t3:
            parts += ["", tex(h3, t3)]
        return "\n".join(parts)
    raise ValueError(f"format must be text, markdown, latex or json, got {fmt!r}")


def html_section(c: Comparison, *, title: str = "System comparison") -> str:
    """A self-contained ``<section>`` (escaped) for the HTML audit report."""
    h1, t1, h2, t2, h3, t3 = _tables(c)
    e = html.escape

    def tab(h, t):
        head = "".join(f"<th>{e(x)}</th>" for x in h)
        body = "".join("<tr>" + "".join(f"<td>{e(x)}</td>" for x in r) + "</tr>" for r in t)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    parts = [
        f'<section class="comparison"><h2>{e(title)}</h2>',
        tab(h1, t1),
        tab(h2, t2),
        f"<p>{e(_note(c))}</p>",
    ]
    if t3:
        parts += ["<h3>Per ontology branch</h3>", tab(h3, t3)]
    parts.append("</section>")
    return "\n".join(parts)


def branch_masks(
    ontology, nodes: Sequence[str | None], *, depth: int = 1, min_queries: int = 1
) -> dict[str, tuple[str, np.ndarray]]:
    """``{branch id: (label, mask over queries)}`` for the ontology nodes at ``depth``
    (shallowest depth, root 0) whose subtree holds the gold node of ``min_queries`` or more
    queries; a query counts in every branch on its node's ancestor-or-self set."""
    idx = np.asarray(
        [ontology.id_index.get(n, -1) if isinstance(n, str) else -1 for n in nodes], dtype=np.int64
    )
    out: dict[str, list[int]] = {}
    for q, i in enumerate(idx.tolist()):
        if i < 0:
            continue
        for a in ontology.anc_idx[ontology.anc_ptr[i] : ontology.anc_ptr[i + 1]].tolist():
            if int(ontology.depth_min[a]) == depth:
                out.setdefault(ontology.ids[a], []).append(q)
    res: dict[str, tuple[str, np.ndarray]] = {}
    for b in sorted(out, key=lambda x: ontology.index(x)):
        qs = out[b]
        if len(qs) >= min_queries:
            m = np.zeros(len(idx), dtype=bool)
            m[qs] = True
            res[b] = (ontology.labels[ontology.index(b)] or "", m)
    return res
