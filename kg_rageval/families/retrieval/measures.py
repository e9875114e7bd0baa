"""Every retrieval measure of :mod:`kg_rageval.contract.measures`, per query and vectorised, with the two
aggregation modes.

**Ranking.** A run is ranked as trec_eval ranks it (score descending, then document id
descending, :mod:`.runs`), then cut to ``depth`` documents (trec_eval ``-M``). Each ranked
document is *judged* (in the qrels with a grade >= 0), *pool-unjudged* (in the qrels with a
negative grade: sampled judgements, as trec_eval reads them) or *unjudged* (not in the qrels).
*Relevant* means judged with grade >= ``rel`` (the measure's ``rel`` parameter, else the
run-wide ``rel_level``, 1 by default: trec_eval ``-l``). ``R`` = relevant documents of the
query, ``N`` = judged non-relevant ones, ``rel_i`` = 1 when the document at rank i is relevant,
``g_i`` its grade (0 unless judged and positive), ``L`` = documents retrieved.

Per query (trec_eval's formulas, measure for measure):

* ``P@k`` = Σ_{i<=k} rel_i / k; ``R@k`` = Σ_{i<=k} rel_i / R; ``Success@k`` = [Σ_{i<=k} rel_i > 0]
* ``AP(@k)`` = Σ_{i<=k, rel_i} (Σ_{j<=i} rel_j / i) / R; ``RR(@k)`` = 1 / first relevant rank
* ``Rprec`` = Σ_{i<=R} rel_i / R
* ``nDCG(@k)`` = DCG / IDCG with DCG = Σ g_i / log2(i + 1) (``dcg=exp-log2``: 2^g − 1), IDCG
  over the query's judged grades sorted descending; no threshold (trec_eval ``ndcg_cut``)
* ``Bpref`` = (1/R) Σ_{relevant i} (1 − min(n_i, R) / min(N, R)), n_i = judged non-relevant
  above i (1 when n_i = 0)
* ``infAP`` (Yilmaz & Aslam, trec_eval's estimator for sampled judgements; pool-unjudged
  documents are the unsampled part of the pool)
* ``Judged@k`` = documents in the qrels among the top min(k, L) / min(k, L) (ir_measures);
  ``Unjudged@k`` = documents not judged (grade >= 0) in the top k / k (trec_eval ``unj_k``)
* ``ERR@k`` = Σ_{r<=k} (1/r) ρ_r Π_{i<r} (1 − ρ_i), ρ = (2^g − 1) / 2^gmax (Chapelle et al.
  2009; ``gmax`` defaults to the largest grade in the qrels)
* ``RBP(p)`` = (1 − p) Σ_i gain_i p^(i−1): binary with ``rel``, else graded with gain =
  g / max(1, largest grade judged for the query) (trec_eval ``rbp``)
* ``IPrec@r`` = max precision at or below the rank where round(r·R) relevant documents are
  reached (trec_eval ``iprec_at_recall``); ``11ptAvg`` its mean over r = 0, 0.1, ..., 1
* ``SetP`` = Σ rel / L, ``SetR`` = Σ rel / R, ``SetF`` = (β+1)·P·R / (β·P + R) (trec_eval
  ``set_F``), ``SetAP`` = (Σ rel)² / (L·R); counts ``NumRet``, ``NumRel``, ``NumRelRet``,
  ``NumNonRelJudgedRet``, ``NumQ``; ``GMAP``/``GMBpref``: per query AP/Bpref, aggregated as
  a geometric mean with floor 1e-5.

A zero denominator gives 0 for the query, as in trec_eval; a query missing from the run is an
empty run. What a mean is taken over is the *aggregation mode* (:func:`aggregate`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kg_rageval.contract.measures import COUNTS, MeasureSpec, parse_measures
from kg_rageval.families.retrieval.runs import Qrels, Run
from kg_rageval.ontology.csr import sorted_unique

DEFAULT_MEASURES = (
    "P@1",
    "P@5",
    "P@10",
    "R@5",
    "R@10",
    "R@100",
    "nDCG@5",
    "nDCG@10",
    "nDCG",
    "AP",
    "RR",
    "RR@10",
    "Rprec",
    "Success@1",
    "Success@5",
    "Success@10",
    "Bpref",
    "infAP",
    "Judged@10",
    "ERR@10",
    "RBP",
    "NumRet",
    "NumRel",
    "NumRelRet",
)
"""What ``kg-rageval score retrieval --qrels`` computes when no ``--measure`` is given."""

TREC_DEFAULT = (
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    *[f"iprec_at_recall_{x / 10:.2f}" for x in range(11)],
    *[f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)],
)
"""trec_eval's default output (without ``-m``), in its order."""

TREC_ALL = (
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    *[f"iprec_at_recall_{x / 10:.2f}" for x in range(11)],
    *[f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)],
    *[f"recall_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)],
    "infAP",
    "gm_bpref",
    "11pt_avg",
    "ndcg",
    *[f"ndcg_cut_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)],
    *[f"map_cut_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)],
    "success_1",
    "success_5",
    "success_10",
    "set_P",
    "set_recall",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
    "rbp",
    "unj_5",
    "unj_10",
    "unj_20",
)
"""The measures of trec_eval's ``-m all_trec`` that kg-rageval computes, in trec_eval's order
(``Rprec_mult``, ``utility``, ``relative_P``, ``binG``, ``G``, ``ndcg_rel``, ``Rndcg``,
``set_relative_P`` and ``rbp_resid`` are not computed)."""

_IPREC11 = tuple(x / 10 for x in range(11))


@dataclass
class Ranked:
    """Runs aligned to the qrels queries (qrels order), ranked and cut to ``depth``."""

    qrels: Qrels
    ptr: np.ndarray  # CSR over qrels queries; missing queries are empty
    grade: np.ndarray  # grade of each ranked document (0 where not in the qrels)
    inq: np.ndarray  # bool: the document is in the query's qrels (any grade)
    missing: np.ndarray  # bool per qrels query: absent from the run
    run_only: list[str] = field(default_factory=list)
    depth: int | None = None
    n_duplicates_removed: int = 0

    @property
    def qids(self) -> list[str]:
        return self.qrels.qids

    @property
    def n_ret(self) -> np.ndarray:
        return np.diff(self.ptr)


JUDGE_KERNEL_MIN = 1 << 20
"""Ranked entries from which :func:`rank` looks up the judgements by the compiled kernel (when
numba is installed and already imported, or from :data:`JUDGE_KERNEL_COLD_MIN` entries; the
numpy path below gives the same arrays, tested)."""
RANK_BLOCK = 1 << 18
"""Ranked entries per block of :func:`rank`'s numpy judgement lookup (its temporaries are
bounded by the block, not the run)."""
JUDGE_KERNEL_COLD_MIN = 8 << 20
"""Ranked entries from which :func:`rank` imports numba for the judgement lookup: below, the
numpy lookup (about 0.1 s a million entries) costs less than importing it."""


def rank(qrels: Qrels, run: Run, *, depth: int | None = None) -> Ranked:
    """Align ``run`` (already in trec_eval order, see :class:`.Run`) to the qrels queries and
    look up each ranked document's judgement in one ``searchsorted``."""
    if depth is not None and depth <= 0:
        raise ValueError(f"depth must be positive, got {depth!r}")
    nq = len(qrels)
    qrow = qrels.qindex
    row_of_run = np.fromiter((qrow.get(q, -1) for q in run.qids), dtype=np.int64, count=len(run))
    run_only = [q for q, r in zip(run.qids, row_of_run.tolist()) if r < 0]
    rlens = np.diff(run.ptr)
    if depth is not None:
        rlens = np.minimum(rlens, depth)
    src = np.full(nq, -1, dtype=np.int64)
    ok = row_of_run >= 0
    src[row_of_run[ok]] = np.flatnonzero(ok)
    # a run with no rows (an empty file): every qrels query is a missing run, counted as such
    lens = np.where(src >= 0, rlens[np.maximum(src, 0)], 0) if nq and len(rlens) else np.zeros(nq, np.int64)
    ptr = np.zeros(nq + 1, dtype=np.int64)
    np.cumsum(lens, out=ptr[1:])
    total = int(ptr[-1])
    dup = int(run.duplicates.sum()) if run.duplicates is not None else 0
    from kg_rageval.families.retrieval import _kernels, _run_kernels

    warm = "numba" in sys.modules or total >= JUDGE_KERNEL_COLD_MIN
    if _kernels.HAVE_NUMBA and total >= JUDGE_KERNEL_MIN and warm and len(qrels.docs):
        # one compiled pass: no per-entry index, key and search arrays (about 60 bytes an entry)
        remap = qrels.vocab.remap_from(run.vocab) if run.vocab is not qrels.vocab else None
        grade, inq = _run_kernels.judge_rows(
            src, run.ptr, ptr, run.docs, remap, qrels.ptr, qrels.docs, qrels.grades
        )
        return Ranked(qrels, ptr, grade, inq, src < 0, run_only, depth, dup)
    starts = run.ptr[:-1][np.maximum(src, 0)] if nq and len(rlens) else np.zeros(nq, np.int64)
    remap = qrels.vocab.remap_from(run.vocab) if run.vocab is not qrels.vocab and total else None
    grade = np.zeros(total)
    inq = np.zeros(total, dtype=bool)
    if total and len(qrels.docs):
        V = max(len(qrels.vocab), 1)
        qkeys = np.repeat(np.arange(nq, dtype=np.int64), np.diff(qrels.ptr)) * V + qrels.docs
        # whole queries at a time, about RANK_BLOCK entries: the index, key and search arrays
        # (about 60 bytes an entry) stay small; every entry's lookup is independent of the others
        cuts = np.searchsorted(ptr, np.arange(RANK_BLOCK, total, RANK_BLOCK), side="right") - 1
        edges = sorted_unique(np.concatenate(([0], cuts, [nq])))
        for a, b in zip(edges[:-1].tolist(), edges[1:].tolist()):
            e0, e1 = int(ptr[a]), int(ptr[b])
            if e0 == e1:
                continue
            blens = lens[a:b]
            take = np.repeat(starts[a:b] - ptr[a:b], blens) + np.arange(e0, e1, dtype=np.int64)
            docs = run.docs[take]
            if remap is not None:
                docs = remap[docs]
            sel = np.flatnonzero(docs >= 0)  # ids the qrels know at all (a run's own ids map to -1 otherwise)
            rkeys = np.repeat(np.arange(a, b, dtype=np.int64), blens)[sel] * V + docs[sel]
            pos = np.searchsorted(qkeys, rkeys)
            np.minimum(pos, len(qkeys) - 1, out=pos)
            hit = qkeys[pos] == rkeys
            at = sel[hit] + e0
            inq[at] = True
            grade[at] = qrels.grades[pos[hit]]
    return Ranked(qrels, ptr, grade, inq, src < 0, run_only, depth, dup)


class _Ctx:
    """Per-query building blocks shared by the measures (computed once per threshold)."""

    def __init__(self, rk: Ranked, rel_level: int, gmax: float | None):
        self.rk = rk
        self.rel_level = rel_level
        q = rk.qrels
        self.nq = len(q)
        self.ptr = rk.ptr
        self.s = rk.ptr[:-1]
        self.L = np.diff(rk.ptr)
        self.N = int(rk.ptr[-1])
        # row and rank position of every entry: int32 when they fit (half the memory of the
        # two largest arrays; every use converts to float64 or indexes, so no value changes)
        it = np.int32 if max(self.N, self.nq) < 2**31 - 1 else np.int64
        self.it = it  # also the prefix counts' type
        self.row = np.repeat(np.arange(self.nq, dtype=it), self.L)
        self.pos = np.arange(self.N, dtype=it) - np.repeat(self.s.astype(it), self.L)
        self.judged = rk.inq & (rk.grade >= 0)
        self.qrow = np.repeat(np.arange(self.nq, dtype=np.int64), np.diff(q.ptr))
        self.gmax = gmax if gmax is not None else (float(q.grades.max()) if len(q.grades) else 1.0)
        self._t: dict[int, dict[str, np.ndarray]] = {}
        self._disc: np.ndarray | None = None
        self._idcg: dict[tuple, np.ndarray] = {}
        self._cache: dict[tuple, Any] = {}

    def bc(self, w, rows=None) -> np.ndarray:
        return np.bincount(self.row if rows is None else rows, weights=w, minlength=self.nq)

    def disc(self, n: int) -> np.ndarray:
        if self._disc is None or len(self._disc) < n:
            self._disc = 1.0 / np.log2(np.arange(max(n, 1024), dtype=np.float64) + 2.0)
        return self._disc[:n]

    def t(self, rel: int | None) -> dict[str, np.ndarray]:
        """Threshold-dependent arrays: rel flags, prefix counts, R, N."""
        t = self.rel_level if rel is None else rel
        d = self._t.get(t)
        if d is None:
            g = self.rk.qrels.grades
            relf = self.judged & (self.rk.grade >= t)
            C = np.zeros(self.N + 1, dtype=self.it)
            np.cumsum(relf, out=C[1:])
            R = np.bincount(self.qrow, weights=g >= max(t, 0), minlength=self.nq).astype(np.int64)
            Nn = np.bincount(self.qrow, weights=(g >= 0) & (g < t), minlength=self.nq).astype(np.int64)
            ri = np.flatnonzero(relf)
            d = {
                "rel": relf,
                "C": C,
                "R": R,
                "Nn": Nn,
                "tot": C[self.s + self.L] - C[self.s],
                "ri": ri,
                "rrow": self.row[ri],
            }
            self._t[t] = d
        return d

    def cached(self, key, make):
        v = self._cache.get(key)
        if v is None:
            v = make()
            self._cache[key] = v
        return v

    def iprec_table(self, rel: int | None) -> np.ndarray:
        """Per relevant retrieved document (global order): the interpolated precision at its
        rank, max over ranks at or below it of precision. Precision only rises at relevant
        documents, so the maximum is taken over the relevant ones (a few per query)."""
        d = self.t(rel)
        v = d.get("iprec")
        if v is None:
            C = d["C"]
            ri = np.flatnonzero(d["rel"])
            rows = self.row[ri]
            prec = (C[ri + 1] - C[self.s][rows]) / (self.pos[ri] + 1.0)
            v = _suffix_max_by_row(rows, prec)
            d["iprec"] = v
        return v

    def hits(self, d, k: int | None) -> np.ndarray:
        if k is None:
            return d["tot"]
        C = d["C"]
        return C[self.s + np.minimum(self.L, k)] - C[self.s]

    def idcg(self, k: int | None, exp: bool) -> np.ndarray:
        key = (k, exp)
        v = self._idcg.get(key)
        if v is None:
            q = self.rk.qrels
            g = np.where(q.grades > 0, q.grades, 0.0)
            if exp:
                g = np.where(g > 0, np.exp2(g) - 1.0, 0.0)
            order = np.lexsort((-g, self.qrow))
            qlens = np.diff(q.ptr)
            lpos = np.arange(len(g)) - np.repeat(q.ptr[:-1], qlens)
            w = g[order] * self.disc(int(qlens.max()) if len(qlens) else 1)[lpos] if len(g) else np.zeros(0)
            if k is not None:
                w = w * (lpos < k)
            v = np.bincount(self.qrow, weights=w, minlength=self.nq)
            self._idcg[key] = v
        return v


def _safe_div(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.divide(a, b, out=np.zeros(np.broadcast(a, b).shape), where=b > 0)


def _suffix_max_by_row(row: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """max(vals[j]) over j >= i within i's row (rows ascending, contiguous), exactly: values
    become order-preserving integer codes, offset per row so that along the reversed array
    (rows descending) a running maximum never carries from one row into another."""
    if not len(vals):
        return vals
    uniq, code = np.unique(vals, return_inverse=True)
    m = len(uniq)
    nrows = int(row.max()) + 1
    key = (nrows - 1 - row[::-1]).astype(np.int64) * m + code.reshape(-1)[::-1]
    return uniq[(np.maximum.accumulate(key) % m)[::-1]]


def _rel_prefix(ctx: _Ctx, d: dict, term: np.ndarray) -> np.ndarray:
    """Prefix sums over the relevant entries (global order: by query, then rank)."""
    T = np.zeros(len(term) + 1)
    np.cumsum(term, out=T[1:])
    return T


def _before(ctx: _Ctx, flags: np.ndarray, ri: np.ndarray, rrow: np.ndarray) -> np.ndarray:
    """For the entries ``ri``: how many entries above them in their query have ``flags``."""
    c = np.zeros(ctx.N + 1, dtype=ctx.it)
    np.cumsum(flags, out=c[1:])
    return c[ri] - c[ctx.s][rrow]


def _dcg_prefix(ctx: _Ctx, exp: bool):
    """Entries with a positive judged grade, their prefix count per entry and the prefix sums
    of their discounted gains: DCG@k of a query is a difference of two prefix values."""
    gp = ctx.judged & (ctx.rk.grade > 0)
    gi = np.flatnonzero(gp)
    Cg = np.zeros(ctx.N + 1, dtype=ctx.it)
    np.cumsum(gp, out=Cg[1:])
    g = ctx.rk.grade[gi]
    if exp:
        g = np.exp2(g) - 1.0
    w = g * ctx.disc(int(ctx.L.max()) if ctx.nq else 1)[ctx.pos[gi]] if len(gi) else np.zeros(0)
    D = np.zeros(len(gi) + 1)
    np.cumsum(w, out=D[1:])
    return gi, Cg, D


def _bpref(ctx: _Ctx, d: dict) -> np.ndarray:
    ri, rrow, R = d["ri"], d["rrow"], d["R"]
    nr = _before(ctx, ctx.judged & ~d["rel"], ri, rrow)
    Rr, Nr = R[rrow], d["Nn"][rrow]
    frac = _safe_div(np.minimum(nr, Rr), np.minimum(Nr, Rr))
    term = np.where(nr > 0, 1.0 - frac, 1.0)
    return _safe_div(np.bincount(rrow, weights=term, minlength=ctx.nq), R)


def _measure(ctx: _Ctx, spec: MeasureSpec) -> np.ndarray:
    m = spec.measure
    k: Any = spec.cutoff
    d = ctx.t(spec.rel)
    R = d["R"]
    if m == "P":
        return ctx.hits(d, k) / float(k)
    if m in ("R", "SetR"):
        return _safe_div(ctx.hits(d, k if m == "R" else None), R)
    if m == "Success":
        return (ctx.hits(d, k) > 0).astype(np.float64)
    if m in ("AP", "GMAP"):
        # per relevant entry: (relevant so far) / rank; summed up to the relevant ones in the top k
        T = ctx.cached(
            ("apT", spec.rel),
            lambda: _rel_prefix(
                ctx, d, (d["C"][d["ri"] + 1] - d["C"][ctx.s][d["rrow"]]) / (ctx.pos[d["ri"]] + 1.0)
            ),
        )
        base = d["C"][ctx.s]
        return _safe_div(T[base + ctx.hits(d, k)] - T[base], R)
    if m == "RR":
        C = d["C"]
        first = np.searchsorted(C, C[ctx.s] + 1, side="left") - ctx.s  # 1-based rank of first relevant
        ok = (d["tot"] > 0) & ((first <= k) if k is not None else True)
        return np.where(ok, 1.0 / np.maximum(first, 1), 0.0)
    if m == "Rprec":
        return _safe_div(d["C"][ctx.s + np.minimum(ctx.L, R)] - d["C"][ctx.s], R)
    if m == "nDCG":
        exp = spec.param("dcg") == "exp-log2"
        gi, Cg, D = ctx.cached(("dcg", exp), lambda: _dcg_prefix(ctx, exp))
        end = ctx.s + (ctx.L if k is None else np.minimum(ctx.L, k))
        # a difference of two prefix sums over all queries carries ~1e-14 of rounding: a perfect
        # ranking must read 1, not 1.0000000000000284
        return np.clip(_safe_div(D[Cg[end]] - D[Cg[ctx.s]], ctx.idcg(k, exp)), 0.0, 1.0)
    if m in ("Bpref", "GMBpref"):
        return ctx.cached(("bpref", spec.rel), lambda: _bpref(ctx, d))
    if m == "infAP":
        ri, rrow = d["ri"], d["rrow"]
        nr = _before(ctx, ctx.judged & ~d["rel"], ri, rrow)
        pu = _before(ctx, ctx.rk.inq & (ctx.rk.grade < 0), ri, rrow)
        eps = 0.00001
        rs = d["C"][ri] - d["C"][ctx.s][rrow] + 1  # relevant so far, this one included
        j = ctx.pos[ri].astype(np.float64)
        jj = np.where(j > 0, j, 1.0)
        term = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rs - 1 + nr + pu) / jj) * (
            (rs - 1 + eps) / (rs - 1 + nr + 2 * eps)
        )
        term = np.where(j == 0, 1.0, term)
        return _safe_div(np.bincount(rrow, weights=term, minlength=ctx.nq), R)
    if m == "Judged":
        kk = ctx.L if k is None else np.minimum(ctx.L, k)
        # judged entries among each query's first kk: a difference of prefix counts (exact
        # integers, as the per-entry sum was; no per-entry cut-off array)
        c = np.zeros(ctx.N + 1, dtype=ctx.it)
        np.cumsum(ctx.rk.inq, out=c[1:])
        return _safe_div(c[ctx.s + kk] - c[ctx.s], kk)
    if m == "Unjudged":
        return ctx.bc(~ctx.judged & (ctx.pos < k)) / float(k)
    if m == "ERR":
        gmax = float(spec.param("gmax", ctx.gmax))
        # only the entries with a positive judged grade count: elsewhere rho is exactly 0, its
        # log term exactly -0.0 (which leaves a running sum as it is) and its term 0, so the
        # sums over them alone are the same doubles as over every entry, in the same order
        nz = np.flatnonzero(ctx.judged & (ctx.rk.grade > 0))
        g = ctx.rk.grade[nz]
        # (2^g - 1) / 2^gmax written as 2^(g - gmax) - 2^-gmax: the same doubles for small
        # grades, and no overflow for a large one (2.0**2000 raised OverflowError)
        rho = np.exp2(np.minimum(g, gmax) - gmax) - np.exp2(-gmax)
        lg = np.log1p(-np.minimum(rho, 1 - 1e-16))
        cl = np.zeros(len(nz) + 1)
        np.cumsum(lg, out=cl[1:])  # cl[t]: the sum over the first t of them (sequential, as before)
        pos = ctx.pos[nz]
        row = ctx.row[nz]
        start = cl[np.searchsorted(nz, ctx.s)]  # the sum before each query's first entry
        term = rho * np.exp(cl[:-1] - start[row]) / (pos + 1.0) * (pos < k)
        return ctx.bc(term, row)
    if m == "RBP":
        p = float(spec.param("p", 0.8))
        if spec.rel is not None:  # binary: the relevant entries
            idx, gain = d["ri"], np.ones(len(d["ri"]))
        else:  # graded: gain g / max(1, the query's largest judged grade), trec_eval's rbp
            q = ctx.rk.qrels
            top = np.zeros(ctx.nq)
            if len(q.grades):
                np.maximum.at(top, ctx.qrow, np.where(q.grades >= 0, q.grades, 0.0))
            idx = ctx.cached(("dcg", False), lambda: _dcg_prefix(ctx, False))[0]
            gain = ctx.rk.grade[idx] / np.maximum(top, 1.0)[ctx.row[idx]]
        return (1.0 - p) * np.bincount(
            ctx.row[idx], weights=gain * np.power(p, ctx.pos[idx].astype(np.float64)), minlength=ctx.nq
        )
    if m in ("IPrec", "11ptAvg"):
        levels = (float(k),) if m == "IPrec" else _IPREC11
        C, tot = d["C"], d["tot"]
        smax = ctx.iprec_table(spec.rel)
        out = np.zeros(ctx.nq)
        for r in levels:
            c = np.floor(r * R + 0.5).astype(np.int64)  # lround(r * R), trec_eval 10.0
            c1 = np.maximum(c, 1)
            ok = (tot > 0) & (c <= tot)
            val = np.zeros(ctx.nq)
            if ok.any():
                val[ok] = smax[C[ctx.s][ok] + c1[ok] - 1]
            out += val
        return out / len(levels)
    if m == "SetP":
        return _safe_div(d["tot"], ctx.L)
    if m == "SetF":
        beta = float(spec.param("beta", 1.0))
        P = _safe_div(d["tot"], ctx.L)
        Rr = _safe_div(d["tot"], R)
        return np.where(d["tot"] > 0, _safe_div((beta + 1.0) * P * Rr, beta * P + Rr), 0.0)
    if m == "SetAP":
        return _safe_div(d["tot"].astype(np.float64) ** 2, ctx.L * R)
    if m == "NumRet":
        return ctx.L.astype(np.float64)
    if m == "NumRel":
        return R.astype(np.float64)
    if m == "NumRelRet":
        return d["tot"].astype(np.float64)
    if m == "NumNonRelJudgedRet":
        return ctx.bc(ctx.judged & ~d["rel"])
    if m == "NumQ":
        return np.ones(ctx.nq)
    raise ValueError(f"measure {spec} is not implemented")  # pragma: no cover


@dataclass
class PerQueryMeasures:
    """Per-query values over the qrels queries (qrels order) and what the means need."""

    ranked: Ranked
    specs: list[MeasureSpec]
    values: dict[str, np.ndarray]
    n_rel: dict[str, np.ndarray]  # per measure: relevant documents at its threshold
    rel_level: int

    @property
    def qids(self) -> list[str]:
        return self.ranked.qids


def compute(
    qrels: Qrels,
    run: Run,
    measures: Iterable[str | MeasureSpec] = DEFAULT_MEASURES,
    *,
    rel_level: int = 1,
    depth: int | None = None,
    gmax: float | None = None,
) -> PerQueryMeasures:
    """Per-query values of ``measures`` (names or specs) for every qrels query.

    ``rel_level`` is the run-wide relevance threshold (trec_eval ``-l``), ``depth`` the
    ranking depth (``-M``), ``gmax`` ERR's maximum grade (default: the qrels' largest)."""
    specs = [m if isinstance(m, MeasureSpec) else None for m in measures]
    names = [m for m in measures if not isinstance(m, MeasureSpec)] if None in specs else []
    parsed = iter(parse_measures(names)) if names else iter(())
    out_specs: list[MeasureSpec] = []
    for s in specs:
        out_specs.append(s if s is not None else next(parsed))
    out_specs = list(dict.fromkeys(out_specs + list(parsed)))
    rk = rank(qrels, run, depth=depth)
    ctx = _Ctx(rk, rel_level, gmax)
    values = {str(s): _measure(ctx, s) for s in out_specs}
    n_rel = {str(s): ctx.t(s.rel)["R"] for s in out_specs}
    return PerQueryMeasures(rk, out_specs, values, n_rel, rel_level)


# ------------------------------------------------------------------------ aggregation

MODES = ("default", "trec_eval")


@dataclass
class Aggregate:
    """Means of one run. ``value`` None is missing evidence (default mode: no query with a
    relevant document at the measure's threshold)."""

    mode: str
    values: dict[str, float | None]
    n: dict[str, int]  # queries in each mean
    n_queries: int  # qrels queries
    n_missing_run: int
    n_no_gold: int  # default mode: queries without a relevant document (threshold rel_level)
    n_no_gold_nonempty_run: int
    run_only: list[str]
    n_duplicates_removed: int = 0

    def to_dict(self) -> dict:
        return {
            "mode": self.mode,
            "values": self.values,
            "n": self.n,
            "n_queries": self.n_queries,
            "n_missing_run": self.n_missing_run,
            "n_no_gold": self.n_no_gold,
            "n_no_gold_nonempty_run": self.n_no_gold_nonempty_run,
            "n_run_only": len(self.run_only),
            "n_duplicates_removed": self.n_duplicates_removed,
        }


MIN_GEO_MEAN = 0.00001


def scored_mask(pq: PerQueryMeasures, spec: MeasureSpec | str, mode: str = "default") -> np.ndarray:
    """Queries that enter the mean of ``spec``: every qrels query (``trec_eval``), or those
    with >= 1 relevant document at the measure's threshold (``default``; NumRet, NumQ and
    Judged/Unjudged, which need no relevant document, use every query)."""
    name = str(spec)
    spec = spec if isinstance(spec, MeasureSpec) else next(s for s in pq.specs if str(s) == name)
    if mode == "trec_eval" or spec.measure in ("NumRet", "NumQ", "Judged", "Unjudged"):
        return np.ones(len(pq.qids), dtype=bool)
    return pq.n_rel[name] > 0


def aggregate(pq: PerQueryMeasures, mode: str = "default", *, complete: bool = True) -> Aggregate:
    """Means of every measure.

    * ``default`` (the seed article's rule): the mean of a measure is over the queries with
      at least one relevant document at its threshold; queries without one are the
      *answerability slice*, counted in ``n_no_gold`` (and ``n_no_gold_nonempty_run`` when
      the system returned documents), never averaged in as 0. Missing runs score 0 and are
      counted (``n_missing_run``). A measure without such queries is missing evidence.
    * ``trec_eval`` (``trec_eval -c``): every qrels query counts, zero-relevance ones and
      missing runs as 0; counts (``NumRet``...) are sums, ``GMAP``/``GMBpref`` geometric
      means with floor 1e-5; with ``complete`` (``-c``, the default) ``NumRel`` is trec_eval's
      -c total of judgements with grade > 0 (whatever ``-l``). ``complete=False`` is trec_eval
      without ``-c``: a qrels query missing from the run raises, as trec_eval 10.0 stops there.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    rk = pq.ranked
    if mode == "trec_eval" and not complete and rk.missing.any():
        from kg_rageval.base.errors import InputError

        q = pq.qids[int(np.flatnonzero(rk.missing)[0])]
        raise InputError(
            f"query {q!r} is judged but has no results; trec_eval 10.0 stops here "
            "without -c (complete=True scores it as an empty run)"
        )
    R1 = _base_R(pq)
    values: dict[str, float | None] = {}
    ns: dict[str, int] = {}
    for s in pq.specs:
        name = str(s)
        v = pq.values[name]
        mask = scored_mask(pq, s, mode)
        n = int(mask.sum())
        ns[name] = n
        if s.measure in COUNTS and mode == "trec_eval":
            if s.measure == "NumQ":
                values[name] = float(len(v))
            elif s.measure == "NumRel" and s.rel is None and complete:
                values[name] = float((rk.qrels.grades > 0).sum())
            else:
                values[name] = float(v.sum())
            continue
        if n == 0:
            values[name] = None
            continue
        if s.measure in ("GMAP", "GMBpref"):
            values[name] = float(math.exp(np.log(np.maximum(v[mask], MIN_GEO_MEAN)).mean()))
        elif s.measure in COUNTS and s.measure != "NumQ":
            values[name] = float(v[mask].sum())
        elif s.measure == "NumQ":
            values[name] = float(n)
        else:
            values[name] = float(v[mask].mean())
    no_gold = R1 == 0
    return Aggregate(
        mode,
        values,
        ns,
        len(pq.qids),
        int(rk.missing.sum()),
        int(no_gold.sum()),
        int((no_gold & (rk.n_ret > 0)).sum()),
        list(rk.run_only),
        rk.n_duplicates_removed,
    )


def _base_R(pq: PerQueryMeasures) -> np.ndarray:
    g = pq.ranked.qrels.grades
    qrow = np.repeat(np.arange(len(pq.qids), dtype=np.int64), np.diff(pq.ranked.qrels.ptr))
    return np.bincount(qrow, weights=g >= max(pq.rel_level, 0), minlength=len(pq.qids)).astype(np.int64)


# ------------------------------------------------------------------------ trec_eval output


def _trec_value(spec: MeasureSpec, v: float) -> str:
    if spec.measure in COUNTS:
        return str(int(round(v)))
    return f"{v:.4f}"


def trec_eval_lines(
    pq: PerQueryMeasures,
    *,
    run_id: str = "run",
    per_query: bool = False,
    measures: Sequence[MeasureSpec] | None = None,
    complete: bool = True,
) -> list[str]:
    """trec_eval's output lines (``name<TAB>qid<TAB>value``, names padded to 22 characters)
    for the measures trec_eval has; per query in qrels-id order when ``per_query`` (as
    trec_eval ``-q``, which prints no per-query NumQ, GMAP or GMBpref), then ``all``."""
    specs = list(measures or pq.specs)
    agg = aggregate(pq, "trec_eval", complete=complete)
    lines = []
    order = sorted(range(len(pq.qids)), key=lambda i: pq.qids[i])
    if per_query:
        for i in order:
            q = pq.qids[i]
            for s in specs:
                if s.trec_name is None or s.measure in ("NumQ", "GMAP", "GMBpref"):
                    continue
                lines.append(f"{s.trec_name:<22}\t{q}\t{_trec_value(s, float(pq.values[str(s)][i]))}")
    lines.insert(0, f"{'runid':<22}\tall\t{run_id}")
    for s in specs:
        if s.trec_name is None:
            continue
        v = agg.values[str(s)]
        lines.append(f"{s.trec_name:<22}\tall\t{_trec_value(s, float(v or 0.0))}")
    return lines
