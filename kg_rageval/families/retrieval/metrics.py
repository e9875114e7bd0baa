"""Retrieval metrics: vectorised per-query kernels and the additive :class:`RetrievalFamily`.

Each per-query value is trec_eval's formula; a judged query missing from the run scores as an
empty run, i.e. 0, and is *counted* as missing (as trec_eval ``-c``). The means are NOT
trec_eval's when a judged query has no relevant document (see below and the two aggregation
modes of :mod:`.measures`). Notation for one query: ``R`` relevant documents
(grade >= 1), ``rel_i`` = 1 when the document at rank ``i`` is relevant, ``g_i`` its gain.

* ``recall@k``    = Σ_{i<=k} rel_i / R                         (trec_eval ``recall_k``)
* ``precision@k`` = Σ_{i<=k} rel_i / k  (k, not the run length) (``P_k``)
* ``hit@k``       = 1 if Σ_{i<=k} rel_i > 0                    (``success_k``)
* ``mrr``         = 1 / rank of the first relevant document, 0 if none (``recip_rank``);
  ``mrr@k`` counts only ranks <= k
* ``map``         = AP averaged over queries, AP = (1/R) Σ_{i: rel_i=1} precision@i over the
  whole run (no cut-off: trec_eval's ``map``)
* ``r_precision`` = Σ_{i<=R} rel_i / R                         (``Rprec``)
* ``ndcg@k``      = DCG@k / IDCG@k, DCG@k = Σ_{i<=k} g_i / log2(i + 1) (``ndcg_cut_k``): the
  gain is the relevance level (graded, the default) or 1 for every relevant document
  (``gain="binary"``); negative grades give gain 0. IDCG@k sorts all judged gains of the
  query in descending order.

k counts unique document ids (see :mod:`.runs`); the ranking of a scored run is score
descending, then document id descending (trec_eval's tie order). Queries with no relevant
document are not scored as 0: they form the separate *answerability* slice (``n_no_gold``).
Every mean has the scored queries as its denominator; with none it is missing evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kg_rageval.base.errors import ConfigError
from kg_rageval.families.retrieval.runs import Qrels, Run
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, Metrics, mean_of, ratio

GAINS = ("graded", "binary")


def normalise_ks(k: int | Sequence[int]) -> tuple[int, ...]:
    """Sorted unique positive cut-offs; raises ``ValueError`` naming the bad value."""
    ks = (k,) if isinstance(k, (int, np.integer)) else tuple(k)
    if not ks:
        raise ConfigError("k: need at least one cut-off")
    for v in ks:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
            raise ConfigError(f"k must be positive integers, got {v!r}")
    return tuple(sorted({int(v) for v in ks}))


def metric_names(ks: Sequence[int]) -> list[str]:
    """Per-query metric names in report order."""
    names = []
    for k in ks:
        names += [f"recall@{k}", f"precision@{k}", f"hit@{k}", f"ndcg@{k}", f"mrr@{k}"]
    return names + ["mrr", "map", "r_precision"]


@dataclass
class PerQuery:
    """Per-query results over the *qrels* queries, in qrels order.

    ``values[name]`` holds each metric (0 for missing runs; meaningless where ``n_rel == 0``,
    which marks the answerability slice). ``run_only`` lists run queries without judgements.
    """

    qids: list[str]
    n_rel: np.ndarray
    missing: np.ndarray
    values: dict[str, np.ndarray]
    n_retrieved: np.ndarray
    ks: tuple[int, ...]
    run_only: list[str] = field(default_factory=list)

    @property
    def scored(self) -> np.ndarray:
        return self.n_rel > 0

    def mean(self, name: str) -> float | None:
        """Mean over scored queries (judged queries with a relevant document; trec_eval -c would
        also average in the zero-relevance queries as 0)."""
        m = self.scored
        return float(self.values[name][m].mean()) if m.any() else None


def _local_positions(ptr: np.ndarray) -> np.ndarray:
    lens = np.diff(ptr)
    n = int(ptr[-1])
    return np.arange(n, dtype=np.int64) - np.repeat(ptr[:-1], lens)


_DISC_CACHE: dict[int, np.ndarray] = {}


def _discounts(n: int) -> np.ndarray:
    """1 / log2(i + 2) for 0-based position i (rank i + 1)."""
    size = 1 << max(10, int(n - 1).bit_length())
    d = _DISC_CACHE.get(size)
    if d is None:
        d = 1.0 / np.log2(np.arange(size, dtype=np.float64) + 2.0)
        _DISC_CACHE[size] = d
    return d


def lookup_grades(qrels: Qrels, run: Run, qrow_of_run: np.ndarray) -> np.ndarray:
    """Relevance grade of every run entry against its query's judgements (0 when unjudged).

    Vectorised: qrels keys ``row * V + doc`` are globally sorted, so one ``searchsorted``
    finds every (query, doc) pair."""
    n = len(run.docs)
    if n == 0 or len(qrels.docs) == 0:
        return np.zeros(n)
    docs = run.docs
    if run.vocab is not qrels.vocab:
        docs = qrels.vocab.remap_from(run.vocab)[docs]
    V = max(len(qrels.vocab), 1)
    qlens = np.diff(qrels.ptr)
    qkeys = np.repeat(np.arange(len(qrels), dtype=np.int64), qlens) * V + qrels.docs
    rrow = np.repeat(qrow_of_run, np.diff(run.ptr))
    rkeys = rrow * V + docs
    pos = np.searchsorted(qkeys, rkeys)
    np.minimum(pos, len(qkeys) - 1, out=pos)
    hit = (qkeys[pos] == rkeys) & (rrow >= 0) & (docs >= 0)
    return np.where(hit, qrels.grades[pos], 0.0)


ENGINES = ("auto", "numpy", "numba")
NUMBA_MIN_ENTRIES = 3_000_000
"""``engine="auto"`` uses the numba kernel from this many run entries on (when importable):
below it the numpy path beats importing numba and loading the compiled kernel."""


def _checked_options(k: int | Sequence[int], gain: str, engine: str) -> tuple[int, ...]:
    """The cutoffs of ``k`` (:func:`normalise_ks`, checked first), then ``gain`` and ``engine``
    checked (a :class:`ConfigError` naming the allowed values)."""
    ks = normalise_ks(k)
    if gain not in GAINS:
        raise ConfigError(f"gain must be one of {GAINS}, got {gain!r}")
    if engine not in ENGINES:
        raise ConfigError(f"engine must be one of {ENGINES}, got {engine!r}")
    return ks


def evaluate_run(
    qrels: Qrels,
    run: Run,
    k: int | Sequence[int] = (1, 5, 10),
    *,
    gain: str = "graded",
    engine: str = "auto",
) -> PerQuery:
    """All metrics of the module docstring for every qrels query, in one vectorised pass.

    Parameters
    ----------
    qrels, run : the judgements and the ranked run (see :mod:`.runs`).
    k : cut-off(s) for recall/precision/hit/nDCG/MRR@k.
    gain : ``"graded"`` (gain = relevance level, trec_eval ``ndcg_cut``) or ``"binary"``.
    engine : ``"numpy"`` (cumulative sums and one ``searchsorted``), ``"numba"`` (one
        parallel pass per query, :mod:`._kernels`) or ``"auto"`` (numba for large runs when it
        is importable). Both give the same numbers.
    """
    ks = _checked_options(k, gain, engine)
    from kg_rageval.families.retrieval import _kernels

    if engine == "auto":
        engine = "numba" if (_kernels.HAVE_NUMBA and len(run.docs) >= NUMBA_MIN_ENTRIES) else "numpy"
    if engine == "numba" and not _kernels.HAVE_NUMBA:
        raise ConfigError("engine='numba' needs the numba package (pip install numba)")
    qrow_of_run = np.fromiter((qrels.qindex.get(q, -1) for q in run.qids), dtype=np.int64, count=len(run))
    lens = np.diff(run.ptr)
    binary = gain == "binary"
    n_rel, idcg = _qrels_side(qrels, ks, binary)

    # ---- run side: hits/DCG at every cut-off, first relevant rank, AP sum, R-precision hits
    if engine == "numba":
        docs = run.docs if run.vocab is qrels.vocab else qrels.vocab.remap_from(run.vocab)[run.docs]
        disc = _discounts(int(lens.max()) if len(lens) else 1)
        sides = _kernels.run_kernel(
            run.ptr, docs, qrow_of_run, qrels.ptr, qrels.docs, qrels.grades, np.asarray(ks), binary, disc
        )
    else:
        sides = _run_side_numpy(qrels, run, qrow_of_run, n_rel, ks, binary)
    run_only = [q for q, r in zip(run.qids, qrow_of_run.tolist()) if r < 0]
    return _assemble(qrels, ks, n_rel, idcg, qrow_of_run, lens, sides, run_only)


def _qrels_side(qrels: Qrels, ks: tuple[int, ...], binary: bool) -> tuple[np.ndarray, np.ndarray]:
    """R (relevant documents) per query and the ideal DCG at every cut-off."""
    nq = len(qrels)
    qlens = np.diff(qrels.ptr)
    qrow = np.repeat(np.arange(nq, dtype=np.int64), qlens)
    qrel = qrels.grades >= 1.0
    n_rel = np.bincount(qrow, weights=qrel, minlength=nq).astype(np.int64)
    qg = qrel.astype(np.float64) if binary else np.maximum(qrels.grades, 0.0)
    order = np.lexsort((-qg, qrow))
    pos = _local_positions(qrels.ptr)
    ideal = qg[order] * _discounts(int(qlens.max()) if nq else 1)[pos]
    # per-query sums in rank order from 0 (bincount adds in input order): a query's value does
    # not depend on the other queries of the batch
    idcg = (
        np.stack([np.bincount(qrow[pos < k], weights=ideal[pos < k], minlength=nq) for k in ks], axis=1)
        if nq
        else np.zeros((0, len(ks)))
    )
    return n_rel, idcg


def _assemble(qrels, ks, n_rel, idcg, qrow_of_run, lens, sides, run_only) -> PerQuery:
    """Per-query metric values from the run-side sums (see :func:`evaluate_run`)."""
    nq = len(qrels)
    hits, dcg, rank1, ap_sum, rp_hits = sides
    ok = qrow_of_run >= 0
    rq = qrow_of_run[ok]
    L = lens[ok]
    R = n_rel[rq]
    Rsafe = np.maximum(R, 1).astype(np.float64)
    hits, dcg, rank1, ap_sum, rp_hits = hits[ok], dcg[ok], rank1[ok], ap_sum[ok], rp_hits[ok]
    values: dict[str, np.ndarray] = {n: np.zeros(nq) for n in metric_names(ks)}
    rr = np.where(rank1 > 0, 1.0 / np.maximum(rank1, 1), 0.0)
    for j, k in enumerate(ks):
        h = hits[:, j].astype(np.float64)
        values[f"recall@{k}"][rq] = h / Rsafe
        values[f"precision@{k}"][rq] = h / k
        values[f"hit@{k}"][rq] = (h > 0).astype(np.float64)
        ideal_k = idcg[rq, j]
        values[f"ndcg@{k}"][rq] = np.where(ideal_k > 0, dcg[:, j] / np.where(ideal_k > 0, ideal_k, 1.0), 0.0)
        values[f"mrr@{k}"][rq] = np.where((rank1 > 0) & (rank1 <= k), rr, 0.0)
    values["mrr"][rq] = rr
    values["map"][rq] = ap_sum / Rsafe
    values["r_precision"][rq] = rp_hits / Rsafe

    missing = np.ones(nq, dtype=bool)
    missing[rq] = False
    n_ret = np.zeros(nq, dtype=np.int64)
    n_ret[rq] = L
    return PerQuery(list(qrels.qids), n_rel, missing, values, n_ret, ks, run_only)


def evaluate_dicts(
    qrels: Mapping[str, Mapping[str, float]],
    run: Mapping[str, Mapping[str, float]],
    k: int | Sequence[int] = (1, 5, 10),
    *,
    gain: str = "graded",
    engine: str = "auto",
) -> PerQuery:
    """:func:`evaluate_run` straight from pytrec_eval-style dicts (``{qid: {doc: grade}}`` and
    ``{qid: {doc: score}}``), without interning document ids or sorting runs: only the judged
    documents' ranks are computed (documents scoring higher, plus equal scores with a larger
    id: trec_eval's order), and every metric follows from (rank, grade) of the judged
    documents. With many tied judged documents every entry is ranked instead (``engine``
    then picks the kernel). Same numbers as
    ``evaluate_run(Qrels.from_dict(qrels), Run.from_dict(run))``."""
    from kg_rageval.families.retrieval.runs import _csr

    ks = _checked_options(k, gain, engine)

    q = _grades_only(qrels)
    binary = gain == "binary"
    n_rel, idcg = _qrels_side(q, ks, binary)
    present = list(filter(run.__contains__, q.qids))
    run_only = [str(x) for x in run if x not in q.qindex]
    lens = np.fromiter(map(len, map(run.__getitem__, present)), dtype=np.int64, count=len(present))
    ptr = _csr(lens)
    qrow_of_run = np.fromiter(map(q.qindex.__getitem__, present), dtype=np.int64, count=len(present))
    R = n_rel[qrow_of_run]
    sides = _sparse_sides(qrels, run, present, ptr, R, ks, binary)
    if sides is None:  # many tied judged documents: rank every run entry instead
        sides = _ranked_sides(qrels, run, present, ptr, lens, R, ks, binary, engine)
    return _assemble(q, ks, n_rel, idcg, qrow_of_run, lens, sides, run_only)


_SPARSE_CHUNK = 4_000_000
"""Score-grid cells compared per chunk in :func:`_sparse_sides` (32 MB of float64)."""


def evaluate_lists(
    golds: Sequence[Mapping[str, float]],
    ranked: Sequence[Sequence[str] | None],
    k: int | Sequence[int] = (1, 5, 10),
    *,
    gain: str = "graded",
    engine: str = "auto",
) -> PerQuery:
    """:func:`evaluate_run` for queries given as parallel lists — judgements ``{doc: grade}``
    and ranked unique ids (``None``: a missing run) — without interning any id: each run
    entry's grade is one C-level ``dict.get`` on its own query's judgements, and the metrics
    follow from the grades in rank order. Query ids are the positions (``"0"``, ``"1"``, ...).
    Same numbers as ``evaluate_run(Qrels.from_dict(...), Run.from_lists(...))``; the caller
    guarantees unique ids per run (k counts unique ids)."""
    import itertools

    from kg_rageval.families.retrieval import _kernels
    from kg_rageval.families.retrieval.runs import _csr

    ks = _checked_options(k, gain, engine)
    n = len(golds)
    q = _grades_of(list(map(str, range(n))), list(golds))
    binary = gain == "binary"
    n_rel, idcg = _qrels_side(q, ks, binary)
    rows = [i for i, r in enumerate(ranked) if r is not None]
    runs: list[Sequence[str]] = [ranked[i] for i in rows]  # type: ignore[misc]
    lens = np.fromiter(map(len, runs), dtype=np.int64, count=len(runs))
    ptr = _csr(lens)
    total = int(ptr[-1])
    zero = itertools.repeat(0.0)
    grades = np.fromiter(
        itertools.chain.from_iterable(map(golds[i].get, r, zero) for i, r in zip(rows, runs)),
        dtype=np.float64,
        count=total,
    )
    qrow = np.asarray(rows, dtype=np.int64)
    R = n_rel[qrow]
    if engine == "auto":
        engine = "numba" if (_kernels.HAVE_NUMBA and total >= NUMBA_MIN_ENTRIES) else "numpy"
    if engine == "numba":
        sides = _kernels.grades_kernel(
            ptr, grades, R, np.asarray(ks), binary, _discounts(int(lens.max()) if len(lens) else 1)
        )
    else:
        sides = _grades_side_numpy(ptr, grades, R, ks, binary)
    return _assemble(q, ks, n_rel, idcg, qrow, lens, sides, [])


def _grades_only(qrels: Mapping[str, Mapping[str, float]]) -> Qrels:
    """The judgements' grades per query, without interning document ids (``docs`` is a
    placeholder): all :func:`_qrels_side` and :func:`_assemble` read."""
    return _grades_of(list(map(str, qrels)), list(qrels.values()))


def _grades_of(qids: list[str], vals: list[Any]) -> Qrels:
    """:func:`_grades_only` of queries ``qids`` with judgements ``vals`` (parallel lists)."""
    import itertools

    from kg_rageval.families.retrieval.runs import _csr

    lens = np.fromiter(map(len, vals), dtype=np.int64, count=len(vals))
    total = int(lens.sum())
    it = (
        itertools.chain.from_iterable(map(dict.values, vals))
        if set(map(type, vals)) <= {dict}
        else itertools.chain.from_iterable(v.values() for v in vals)
    )
    grades = np.fromiter(it, dtype=np.float64, count=total)
    return Qrels(qids, _csr(lens), np.zeros(total, dtype=np.int64), grades)


SPARSE_TIE_LIMIT = 20_000
""":func:`evaluate_dicts` resolves up to this many judged documents with tied scores in
Python; beyond it every run entry is ranked."""


def _sparse_sides(qrels, run, present, ptr, R, ks, binary):
    """Run-side sums from the ranks of the *judged* documents only: rank(d) = 1 + #(scores
    above d's) + #(equal scores with a larger doc id), trec_eval's order without sorting the
    run. Returns ``None`` when too many judged documents have tied scores, or a run score is
    NaN (the ranked path then decides).

    Vectorised: each judged document's score comes from one C-level ``dict.get`` pass per
    query; the counts compare it with its query's row of a padded score grid (NaN padding
    compares false), in chunks of about ``_SPARSE_CHUNK`` cells."""
    import itertools

    nrun = len(present)
    total = int(ptr[-1])
    rrows = list(map(run.__getitem__, present))
    scores = np.fromiter(
        itertools.chain.from_iterable(
            map(dict.values, rrows) if set(map(type, rrows)) <= {dict} else (r.values() for r in rrows)
        ),
        dtype=np.float64,
        count=total,
    )
    if np.isnan(scores).any():
        return None
    judged = list(map(qrels.__getitem__, present))
    jlens = np.fromiter(map(len, judged), dtype=np.int64, count=nrun)
    nj = int(jlens.sum())
    nan = itertools.repeat(float("nan"))
    js_all = np.fromiter(
        itertools.chain.from_iterable(map(r.get, j, nan) for r, j in zip(rrows, judged)),
        dtype=np.float64,
        count=nj,
    )
    jg_all = np.fromiter(
        itertools.chain.from_iterable(map(dict.values, judged))
        if all(type(j) is dict for j in judged)
        else itertools.chain.from_iterable(j.values() for j in judged),
        dtype=np.float64,
        count=nj,
    )
    found = ~np.isnan(js_all)
    jr_all = np.repeat(np.arange(nrun, dtype=np.int64), jlens)
    jr_a, js_a, jg_a = jr_all[found], js_all[found], jg_all[found]
    nf = len(jr_a)
    rank = np.zeros(nf, dtype=np.int64)
    ties = np.zeros(nf, dtype=np.int64)
    lens = np.diff(ptr)
    width = int(lens.max()) if nrun else 0
    if nf and nrun * width <= 2 * total + 4096:  # rows of similar length: one padded grid
        grid = np.full((nrun, width), np.nan)
        grid[np.repeat(np.arange(nrun, dtype=np.int64), lens), _local_positions(ptr)] = scores
        step = max(1, _SPARSE_CHUNK // max(width, 1))
        for lo in range(0, nf, step):
            hi = min(nf, lo + step)
            rows = grid[jr_a[lo:hi]]
            s_ = js_a[lo:hi, None]
            rank[lo:hi] = 1 + (rows > s_).sum(axis=1)
            ties[lo:hi] = (rows == s_).sum(axis=1) - 1
    elif nf:  # very uneven rows: one query at a time
        bounds = np.flatnonzero(np.diff(np.concatenate(([-1], jr_a, [nrun]))))
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            r = int(jr_a[a])
            row = scores[ptr[r] : ptr[r + 1]]
            s_ = js_a[a:b, None]
            rank[a:b] = 1 + (row[None, :] > s_).sum(axis=1)
            ties[a:b] = (row[None, :] == s_).sum(axis=1) - 1
    tied = np.flatnonzero(ties > 0)
    if tied.size > SPARSE_TIE_LIMIT:
        return None
    if tied.size:  # equal scores: larger doc ids rank first (trec_eval)
        jd = list(itertools.compress(itertools.chain.from_iterable(judged), found.tolist()))
        for j in tied.tolist():
            r = int(jr_a[j])
            a = int(ptr[r])
            eq = np.flatnonzero(scores[a : int(ptr[r + 1])] == js_a[j]).tolist()
            keys = list(run[present[r]])
            d = jd[j]
            rank[j] += sum(1 for e in eq if keys[e] > d)
    # per-row sums from (row, rank, grade), rows ordered by rank
    order = np.lexsort((rank, jr_a))
    jr_a, rank, jg_a = jr_a[order], rank[order], jg_a[order]
    rel = jg_a >= 1.0
    gain_ = rel.astype(np.float64) if binary else np.maximum(jg_a, 0.0)
    width = int(np.diff(ptr).max()) if nrun else 1
    disc = _discounts(width)[np.maximum(rank - 1, 0)]
    hits = np.zeros((nrun, len(ks)), dtype=np.int64)
    dcg = np.zeros((nrun, len(ks)))
    for i, k in enumerate(ks):
        inside = rank <= k
        hits[:, i] = np.bincount(jr_a, weights=rel & inside, minlength=nrun).astype(np.int64)
        dcg[:, i] = np.bincount(jr_a, weights=gain_ * disc * inside, minlength=nrun)
    rr_idx = np.flatnonzero(rel)
    rank1 = np.zeros(nrun, dtype=np.int64)
    if rr_idx.size:
        rows_rel = jr_a[rr_idx]
        firsts = np.flatnonzero(np.concatenate(([True], rows_rel[1:] != rows_rel[:-1])))
        rank1[rows_rel[firsts]] = rank[rr_idx[firsts]]
        # AP: the i-th relevant document (by rank) of a row contributes i / rank
        start_of = np.repeat(firsts, np.diff(np.concatenate((firsts, [len(rows_rel)]))))
        ith = np.arange(len(rows_rel)) - start_of + 1
        ap_sum = np.bincount(rows_rel, weights=ith / rank[rr_idx], minlength=nrun)
        rp_hits = np.bincount(rows_rel, weights=rank[rr_idx] <= R[rows_rel], minlength=nrun).astype(np.int64)
    else:
        ap_sum = np.zeros(nrun)
        rp_hits = np.zeros(nrun, dtype=np.int64)
    return hits, dcg, rank1, ap_sum, rp_hits


def _ranked_sides(qrels, run, present, ptr, lens, R, ks, binary, engine):
    """Rank every run entry (trec_eval order) and run the grade kernels."""
    import itertools

    from kg_rageval.families.retrieval import _kernels
    from kg_rageval.families.retrieval.runs import trec_order

    total = int(ptr[-1])
    repeat0 = itertools.repeat(0.0)
    grades = np.fromiter(
        itertools.chain.from_iterable(map(qrels[x].get, run[x].keys(), repeat0) for x in present),
        dtype=np.float64,
        count=total,
    )
    scores = np.fromiter(
        itertools.chain.from_iterable(run[x].values() for x in present), dtype=np.float64, count=total
    )
    order = trec_order(ptr, scores, None, None, row_ids=lambda r: list(run[present[r]].keys()))
    if order is not None:
        grades = grades[order]
    if engine == "auto":
        engine = "numba" if (_kernels.HAVE_NUMBA and total >= NUMBA_MIN_ENTRIES) else "numpy"
    if engine == "numba":
        disc = _discounts(int(lens.max()) if len(lens) else 1)
        return _kernels.grades_kernel(ptr, grades, R, np.asarray(ks), binary, disc)
    return _grades_side_numpy(ptr, grades, R, ks, binary)


def _run_side_numpy(
    qrels: Qrels, run: Run, qrow_of_run: np.ndarray, n_rel: np.ndarray, ks: tuple[int, ...], binary: bool
):
    """numpy path: prefix sums over the concatenated run give every cut-off in O(queries)."""
    grades = lookup_grades(qrels, run, qrow_of_run)
    R = np.where(qrow_of_run >= 0, n_rel[np.maximum(qrow_of_run, 0)], 0)
    return _grades_side_numpy(run.ptr, grades, R, ks, binary)


def _grades_side_numpy(
    rptr: np.ndarray, grades: np.ndarray, R: np.ndarray, ks: tuple[int, ...], binary: bool
):
    """Run-side sums from grades in rank order. Integer counts come from prefix sums; the float
    sums (DCG, AP) are added per query in rank order starting from 0 (``bincount`` adds its
    weights in input order), as the numba kernels do: the same floats whatever the engine and
    whatever other queries share the batch."""
    starts = rptr[:-1]
    lens = np.diff(rptr)
    rel = grades >= 1.0
    C = np.zeros(len(rel) + 1, dtype=np.int64)
    np.cumsum(rel, out=C[1:])
    pos = _local_positions(rptr)
    s, L = starts, lens
    nrun = len(starts)
    rrow = np.repeat(np.arange(nrun, dtype=np.int64), lens)
    top = np.flatnonzero(pos < max(ks)) if len(ks) else np.zeros(0, np.int64)
    g_top = rel[top].astype(np.float64) if binary else np.maximum(grades[top], 0.0)
    gd = g_top * _discounts(int(lens.max()) if len(lens) else 1)[pos[top]]
    hits = (
        np.stack([C[s + np.minimum(L, k)] - C[s] for k in ks], axis=1)
        if len(s)
        else np.zeros((0, len(ks)), np.int64)
    )
    dcg = (
        np.stack(
            [np.bincount(rrow[top], weights=np.where(pos[top] < k, gd, 0.0), minlength=nrun) for k in ks],
            axis=1,
        )
        if len(s)
        else np.zeros((0, len(ks)))
    )
    total = C[s + L] - C[s]
    first = np.searchsorted(C, C[s] + 1, side="left")  # index of the first relevant entry + 1
    rank1 = np.where(total > 0, first - s, 0)
    local_hits = C[1:] - C[starts][rrow]
    term = np.where(rel, local_hits / (pos + 1.0), 0.0)
    ap_sum = np.bincount(rrow, weights=term, minlength=nrun)
    rp_hits = C[s + np.minimum(L, R)] - C[s]
    return hits, dcg, rank1, ap_sum, rp_hits


def evaluate(
    qrels: Mapping[str, Mapping[str, float]],
    run: Mapping[str, Mapping[str, float]] | Mapping[str, Sequence[str]],
    k: int | Sequence[int] = (1, 5, 10),
    *,
    gain: str = "graded",
    dedupe: bool = False,
    engine: str = "auto",
) -> dict[str, float | None]:
    """Convenience: mean metrics from plain dicts (``{qid: {doc: grade}}`` and either
    ``{qid: {doc: score}}`` or ``{qid: [doc, ...]}``). Means are over judged queries with at
    least one relevant document (trec_eval ``-c``); ``None`` when there are none."""
    q = Qrels.from_dict(qrels)
    first = next(iter(run.values()), None)
    if isinstance(first, Mapping):
        r = Run.from_dict(run, vocab=q.vocab)  # type: ignore[arg-type]
    else:
        r = Run.from_lists(run, vocab=q.vocab, dedupe=dedupe)  # type: ignore[arg-type]
    pq = evaluate_run(q, r, k, gain=gain, engine=engine)
    return {name: pq.mean(name) for name in pq.values}


# ---------------------------------------------------------------------------- the family

FILTER_STATS = (
    "n_gold_unknown",  # eligible relevant gold ids not in the corpus (scored, not replayable)
    "n_filters_not_logged",  # queries with eligible gold in the corpus but no filters list
    "n_gold_ineligible",  # gold documents removed by entitlement before scoring
    "n_q_gold_all_ineligible",  # queries whose gold was all ineligible (entitlement slice)
    "n_ineligible_retrieved",  # retrieved documents the principal may not see (leaks)
    "fe_q_eligible",  # queries with >= 1 eligible gold doc and replayed filters
    "fe_q_excluded",  # ... whose every eligible gold doc the relevance filters excluded
    "fe_docs_eligible",
    "fe_docs_excluded",
    "fe_q_inconsistent",  # queries with a gold doc retrieved although their logged filters exclude it
    "fe_docs_inconsistent",  # ... those gold docs (an inconsistent filter log, not an exclusion)
    "att_q",  # queries with >= 1 eligible gold doc and replayed filters (attribution base)
    "att_q_hit",  # an eligible gold doc in the top k_att
    "att_q_filter",  # missed: every eligible gold doc excluded by the filters
    "att_q_retriever",  # missed: some gold passed the filter, none was retrieved
    "att_q_ranker",  # missed: some gold retrieved, all below k_att
    "att_docs",
    "att_docs_found",
    "att_docs_filter",
    "att_docs_retriever",
    "att_docs_ranker",
    "pred_tp",  # filter predicates matching a gold predicate
    "pred_n",
    "gold_n",
)


class RetrievalFamily(Family):
    """Retrieval metrics as additive sums (see the module docstring for the formulas).

    Stats per metric ``m``: ``m.sum`` over scored queries; ``n_scored`` (queries with >= 1
    relevant, eligible gold document, missing runs included as 0), ``n_missing_run``,
    ``n_no_gold`` (answerability slice), ``n_duplicates_removed``, plus the filter, attribution
    and predicate counts of :data:`FILTER_STATS`. Every rate is a ratio of two sums; an empty
    denominator is missing evidence (``value=None``), never 0.
    """

    name = "retrieval"
    version = "1"

    def __init__(
        self, k: int | Sequence[int] = (1, 5, 10), *, gain: str = "graded", attribution_k: int | None = None
    ):
        self.ks = normalise_ks(k)
        self.gain = gain
        self.attribution_k = int(attribution_k or max(self.ks))
        self.metric_list = metric_names(self.ks)
        self.stats = (
            tuple(f"{m}.sum" for m in self.metric_list)
            + (
                "n_scored",
                "n_missing_run",
                "n_no_gold",
                "n_no_gold_nonempty_run",
                "n_duplicates_removed",
            )
            + FILTER_STATS
        )

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        n = sums.get("n_scored", 0.0)
        out = Metrics()
        for m in self.metric_list:
            out[m] = mean_of(m, sums.get(f"{m}.sum", 0.0), n, missing="no scored queries with relevant gold")
        for c in (
            "n_scored",
            "n_missing_run",
            "n_no_gold",
            "n_no_gold_nonempty_run",
            "n_duplicates_removed",
            "n_gold_ineligible",
            "n_q_gold_all_ineligible",
            "n_ineligible_retrieved",
            "n_gold_unknown",
            "n_filters_not_logged",
            "fe_q_eligible",
            "fe_q_excluded",
            "fe_q_inconsistent",
            "fe_docs_inconsistent",
        ):
            out[c] = Metric(c, float(sums.get(c, 0.0)))
        out.add(ratio("missing_run_rate", sums.get("n_missing_run", 0.0), n, missing="no scored queries"))
        out.add(
            ratio(
                "filter_false_exclusion_rate",
                sums.get("fe_q_excluded", 0.0),
                sums.get("fe_q_eligible", 0.0),
                missing="no queries with entitlement-eligible gold and replayed filters",
            )
        )
        out.add(
            ratio(
                "doc_exclusion_rate",
                sums.get("fe_docs_excluded", 0.0),
                sums.get("fe_docs_eligible", 0.0),
                missing="no entitlement-eligible gold documents with replayed filters",
            )
        )
        out.add(
            ratio(
                "filter_log_inconsistency_rate",
                sums.get("fe_q_inconsistent", 0.0),
                sums.get("fe_q_eligible", 0.0),
                missing="no queries with entitlement-eligible gold and replayed filters",
            )
        )
        ka = self.attribution_k
        aq = sums.get("att_q", 0.0)
        for part in ("hit", "filter", "retriever", "ranker"):
            out.add(
                ratio(
                    f"attribution@{ka}.{part}",
                    sums.get(f"att_q_{part}", 0.0),
                    aq,
                    missing="no queries with eligible gold and replayed filters",
                )
            )
        ad = sums.get("att_docs", 0.0)
        for part in ("found", "filter", "retriever", "ranker"):
            out.add(
                ratio(
                    f"doc_attribution@{ka}.{part}",
                    sums.get(f"att_docs_{part}", 0.0),
                    ad,
                    missing="no eligible gold documents with replayed filters",
                )
            )
        out.add(
            ratio(
                "predicate_precision",
                sums.get("pred_tp", 0.0),
                sums.get("pred_n", 0.0),
                missing="no extracted filter predicates on records with gold_filters",
            )
        )
        out.add(
            ratio(
                "predicate_recall",
                sums.get("pred_tp", 0.0),
                sums.get("gold_n", 0.0),
                missing="no gold filter predicates",
            )
        )
        return out
