"""A family's metrics on many rows of summed stats at once, without a ``finalize`` per row.

Bootstrap replicates (one row of sums per resample), failure drivers (one row per ontology
node) and failing records (one row per record) need one metric on thousands of rows of summed
stats. ``Family.finalize`` works on one row and builds a :class:`~kg_rageval.results.metric.Metric`
per metric; this module finds out, from ``finalize`` itself, how a metric follows from the
stats, and evaluates that form on all rows with numpy:

* ``ratio``: ``value = (x·a + a0) / (x·b + b0)``, undefined where the denominator is 0 — every
  :func:`~kg_rageval.results.metric.ratio` / :func:`~kg_rageval.results.metric.mean_of` metric;
  ``a``, ``b`` are read off ``finalize`` on the zero vector and the basis vectors;
* ``linear``: ``value = x·a + a0`` with no numerator/denominator (counts such as ``errors``);
* ``harmonic``: ``2·P·R / (P + R)`` of two ``ratio`` metrics of the same family (F1; 0 where
  ``P + R = 0``, undefined where either is).

A form is accepted only when it reproduces ``finalize`` (value, numerator, denominator,
definedness, to 1e-9 relative) on probe rows — the zero and basis vectors, the caller's
representative rows (the totals, sample records) — and :func:`metric_values` checks it again on
sample rows of the actual input; a metric with no verified form (a threshold on a count, a
median, a calibration error) is finalized row by row (up to ``loop_limit`` rows). Values
computed from a form are the same floats as ``finalize``'s where numerator and denominator are
single stats (the usual case); otherwise they may differ in the last bits (another order of
the same additions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

Finalize = Callable[[Mapping[str, float]], Mapping[str, Any]]

_RTOL = 1e-9


@dataclass(frozen=True)
class Form:
    """How one metric follows from a row ``x`` of summed stats (see the module docstring)."""

    kind: str  # "ratio" | "linear" | "harmonic"
    a: np.ndarray | None = None
    a0: float = 0.0
    b: np.ndarray | None = None
    b0: float = 0.0
    parts: tuple[str, str] | None = None

    def columns(self) -> list[np.ndarray]:
        """The coefficient vectors this form reads (its projections of the stats)."""
        return [v for v in (self.a, self.b) if v is not None]


def _close(x: float | None, y: float | None) -> bool:
    if x is None or y is None:
        return x is None and y is None
    return abs(x - y) <= _RTOL * max(1.0, abs(x), abs(y))


def _nd(m: Any) -> tuple[float | None, float | None, float | None]:
    if m is None:
        return None, None, None
    return (
        None if m.numerator is None else float(m.numerator),
        None if m.denominator is None else float(m.denominator),
        m.value,
    )


def metric_forms(
    finalize: Finalize, names: list[str], metrics: Iterable[str], probes: np.ndarray | None = None
) -> dict[str, Form | None]:
    """The verified :class:`Form` of each metric in ``metrics`` (``None``: finalize it row by
    row), plus the verified forms of the family's other metrics (a harmonic form's parts).
    ``probes``: representative rows (totals, sample records) the forms must reproduce."""
    k = len(names)
    wanted = list(metrics)

    def fin(vec: np.ndarray) -> Mapping[str, Any]:
        return finalize(dict(zip(names, vec.tolist())))

    zero = fin(np.zeros(k))
    basis = [fin(row) for row in np.eye(k)]
    checks = [np.asarray(p, dtype=float) for p in (probes if probes is not None else [])]
    checks.append(np.arange(1.0, k + 1.0))  # a generic point: every stat positive and distinct
    checked = [fin(p) for p in checks]
    forms: dict[str, Form | None] = {}

    def linear_form(name: str) -> Form | None:
        z = _nd(zero.get(name))
        bs = [_nd(b.get(name)) for b in basis]
        if z[0] is not None and z[1] is not None and all(t[0] is not None and t[1] is not None for t in bs):
            a = np.asarray([t[0] for t in bs]) - z[0]  # type: ignore[operator]
            b = np.asarray([t[1] for t in bs]) - z[1]  # type: ignore[operator]
            return Form("ratio", a, float(z[0]), b, float(z[1]))
        if (
            z[0] is None
            and z[1] is None
            and z[2] is not None
            and all(t[0] is None and t[1] is None and t[2] is not None for t in bs)
        ):
            a = np.asarray([t[2] for t in bs]) - z[2]  # type: ignore[operator]
            return Form("linear", a, float(z[2]))  # type: ignore[arg-type]
        return None

    def reproduces(name: str, form: Form, row: np.ndarray, got: Mapping[str, Any]) -> bool:
        num, den, value = _nd(got.get(name))
        want = _values(form, row[None, :], forms)
        w_num = w_den = None
        if form.kind == "ratio":
            w_num, w_den = float(row @ form.a + form.a0), float(row @ form.b + form.b0)  # type: ignore[operator]
            if not (_close(num, w_num) and _close(den, w_den)):
                return False
        w_val = None if np.isnan(want[0][0]) else float(want[0][0])
        return _close(value, w_val)

    all_names = list(zero)
    candidates = {n: linear_form(n) for n in all_names}
    for name in all_names:  # linear forms first: a harmonic form is built from them
        f = candidates[name]
        if f is not None and all(reproduces(name, f, p, c) for p, c in zip(checks, checked)):
            forms[name] = f
    ratios = [n for n, f in forms.items() if f is not None and f.kind == "ratio"]
    points = [(p, c) for p, c in zip(checks, checked)] + list(zip(np.eye(k), basis))
    pts = np.asarray([p for p, _ in points]) if points else np.zeros((0, k))
    # every ratio metric on every point, then every (P, R) pair's harmonic mean at once
    vals = (
        np.asarray([_values(forms[r], pts, forms)[0] for r in ratios])  # type: ignore[arg-type]
        if ratios
        else np.zeros((0, len(pts)))
    )
    for name in wanted:
        if name in forms:
            continue
        forms[name] = None
        target = np.asarray(
            [
                np.nan if _nd(c.get(name))[2] is None else float(_nd(c.get(name))[2])  # type: ignore[arg-type]
                for _, c in points
            ]
        )
        if not ratios or np.isnan(target).all():
            continue
        hm = harmonic_values(vals[:, None, :], vals[None, :, :])
        same_nan = np.isnan(hm) == np.isnan(target)
        close = np.abs(np.nan_to_num(hm) - np.nan_to_num(target)) <= _RTOL * np.maximum(
            1.0, np.abs(np.nan_to_num(target))
        )
        ok = (same_nan & close).all(axis=2)
        np.fill_diagonal(ok, False)
        for i, j in zip(*np.nonzero(ok)):
            f = Form("harmonic", parts=(ratios[int(i)], ratios[int(j)]))
            if all(reproduces(name, f, p, c) for p, c in points):
                forms[name] = f
                break
    return {**forms, **{m: forms.get(m) for m in wanted}}  # the parts of harmonic forms included


def _ratio_values(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den != 0, num / np.where(den != 0, den, 1.0), np.nan)


def _values(
    form: Form, rows: np.ndarray, forms: Mapping[str, Form | None]
) -> tuple[np.ndarray, np.ndarray | None]:
    """``(values, denominators)`` of ``form`` on ``rows`` (NaN: undefined / no denominator)."""
    if form.kind == "linear":
        return rows @ form.a + form.a0, None  # type: ignore[operator]
    if form.kind == "ratio":
        num, den = rows @ form.a + form.a0, rows @ form.b + form.b0  # type: ignore[operator]
        return _ratio_values(num, den), den
    p_form, r_form = (forms[n] for n in form.parts)  # type: ignore[union-attr]
    p = _values(p_form, rows, forms)[0]  # type: ignore[arg-type]
    r = _values(r_form, rows, forms)[0]  # type: ignore[arg-type]
    return harmonic_values(p, r), None


def harmonic_values(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``2·P·R/(P+R)``; 0 where ``P + R = 0``; NaN where either is NaN
    (:func:`~kg_rageval.results.metric.harmonic`)."""
    s = p + r
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(s == 0, 0.0, 2 * p * r / np.where(s == 0, 1.0, s))
    return np.where(np.isnan(p) | np.isnan(r), np.nan, out)


def ratio_from_sums(form: Form, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """A ``ratio`` form's values from its already summed numerator and denominator
    projections (``rows @ a``, ``rows @ b`` without the constants)."""
    return _ratio_values(num + form.a0, den + form.b0)


class RowLimit(Exception):
    """More rows than ``loop_limit`` for a metric that must be finalized row by row."""


def metric_values(
    finalize: Finalize,
    names: list[str],
    rows: Any,
    metrics: Iterable[str],
    *,
    probes: np.ndarray | None = None,
    loop_limit: int | None = None,
    forms: Mapping[str, Form | None] | None = None,
) -> dict[str, tuple[np.ndarray, np.ndarray] | None]:
    """``{metric: (values, denominators)}`` on every row of ``rows`` (summed stats, columns in
    ``names`` order): NaN where the metric is undefined; the denominator where the metric has
    one, else NaN. A metric without a verified form is finalized row by row, or ``None`` when
    that would take more than ``loop_limit`` rows. ``probes`` default to the rows' total and
    five sample rows; the forms are checked again on sample rows of ``rows``.

    ``rows`` may also be a :class:`~kg_rageval.results.record_stats.RecordStats` view (per-record sums,
    stats in ``names`` order): the values are the same bits as on its stacked matrix, read
    from only the stat columns the forms' projections need (:meth:`Projection.matrix_of`);
    the stacked matrix is built only for a metric finalized row by row."""
    wanted = list(metrics)
    n = len(rows)
    view = not isinstance(rows, np.ndarray)
    if forms is None:
        if probes is None:
            probes = _probe_rows(rows)
        forms = metric_forms(finalize, names, wanted, probes)
    forms = dict(forms)
    # the forms again on sample rows of the real input: a form that does not hold is dropped
    sample = _sample_index(n)
    if sample:
        picked = rows.rows_at(sample) if view else rows[sample]
        got = [finalize(dict(zip(names, row))) for row in picked.tolist()]
        for m in wanted:
            f = forms.get(m)
            if f is None:
                continue
            vals, dens = _values(f, picked, forms)
            for t, g in enumerate(got):
                num, den, value = _nd(g.get(m))
                want = None if np.isnan(vals[t]) else float(vals[t])
                if not _close(value, want) or (dens is not None and not _close(den, float(dens[t]))):
                    forms[m] = None
                    break
    out: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
    loop = [m for m in wanted if forms.get(m) is None]
    formed = [m for m in wanted if forms.get(m) is not None]
    proj = Projection(forms, formed) if view and formed else None
    sums = proj.matrix_of(rows, names) if proj is not None else None
    for m in formed:
        vals, dens = proj.values(m, sums) if proj is not None else _values(forms[m], rows, forms)  # type: ignore[arg-type]
        out[m] = (vals, dens if dens is not None else np.full(n, np.nan))
    del sums
    if loop:
        if loop_limit is not None and n > loop_limit:
            out.update(dict.fromkeys(loop))
        else:
            if view:
                rows = rows.matrix()
            vals_l = {m: np.full(n, np.nan) for m in loop}
            dens_l = {m: np.full(n, np.nan) for m in loop}
            for j, row in enumerate(rows.tolist()):
                res = finalize(dict(zip(names, row)))
                for m in loop:
                    got_m: Any = res.get(m)
                    if got_m is not None and got_m.value is not None:
                        vals_l[m][j] = got_m.value
                        if got_m.denominator is not None:
                            dens_l[m][j] = got_m.denominator
            out.update({m: (vals_l[m], dens_l[m]) for m in loop})
    return {m: out[m] for m in wanted}


def _sample_index(n: int) -> list[int]:
    if n == 0:
        return []
    rng = np.random.default_rng(0)
    return sorted({0, n - 1, *rng.integers(0, n, 3).tolist()})


def _sample_rows(rows: np.ndarray) -> np.ndarray:
    if not len(rows):
        return np.zeros((0, rows.shape[1] if rows.ndim == 2 else 0))
    return np.vstack([rows.sum(axis=0)[None, :], rows[_sample_index(len(rows))]])


def _probe_rows(mat: Any) -> np.ndarray:
    """:func:`_sample_rows` of a stats matrix or of a
    :class:`~kg_rageval.results.record_stats.RecordStats` view (its :meth:`probe_rows`, the same bits)."""
    return _sample_rows(mat) if isinstance(mat, np.ndarray) else mat.probe_rows()


def _resampled(mat: Any, weights: np.ndarray) -> list[float]:
    """Every stat's sum over one resample of a matrix or a view (for the forms' checks)."""
    return (weights @ mat).tolist() if isinstance(mat, np.ndarray) else mat.resampled(weights)


def replicate_values(
    finalize: Finalize,
    names: list[str],
    mats: list[Any],
    metrics: Iterable[str],
    n_resamples: int,
    seed: int,
    weights_of: Callable[[int, int, int], Any],
) -> list[dict[str, np.ndarray]]:
    """Each metric's value in each of ``n_resamples`` bootstrap resamples (NaN where
    undefined), for each of the aligned per-record stat matrices ``mats`` (one row per record,
    the same records in the same order: the same draws for every matrix — the paired
    bootstrap).

    The resampled sums are ``weights @ stats`` over the weight blocks ``weights_of(n,
    n_resamples, seed)`` yields (:func:`~kg_rageval.results.bootstrap.bootstrap_weights`: the draws,
    and so the replicates, are those of a per-resample ``finalize``). A metric with a verified :class:`Form` reads only
    its projections of the stats (one matrix product per block over a few columns) and is
    computed for the whole block at once; the others are finalized per resample. The forms
    are checked on the first block's first and last resample against ``finalize``.
    :func:`replicate_jobs` computes several of these from one pass over the weights.

    A matrix may also be a per-record view (:class:`~kg_rageval.results.record_stats.RecordStats`,
    :class:`~kg_rageval.results.record_stats.AlignedRecords`, stats in ``names`` order): only the
    columns the forms project are summed and kept (:meth:`Projection.matrix_of`), with the
    replicates of its stacked matrix bit for bit; every stat is stacked only for a metric
    finalized per resample."""
    return replicate_jobs([Replicates(finalize, names, mats, metrics)], n_resamples, seed, weights_of)[0]


@dataclass(frozen=True)
class Replicates:
    """One bootstrapped evaluation for :func:`replicate_jobs`: its ``finalize``, stat
    ``names``, aligned per-record stat matrices (or views of them) ``mats`` and the
    ``metrics`` wanted."""

    finalize: Finalize
    names: list[str]
    mats: list[Any]
    metrics: Iterable[str]


def replicate_jobs(
    jobs: list[Replicates],
    n_resamples: int,
    seed: int,
    weights_of: Callable[[int, int, int], Any],
    pool: Any = None,
) -> list[list[dict[str, np.ndarray]]]:
    """:func:`replicate_values` of every job, whose matrices all have the same number of rows
    ``n``, from **one** pass over the weight blocks of ``(n, n_resamples, seed)``: the draws
    are made once for all of them, and each job's replicates are those it gets alone (the
    weights depend only on ``n``, ``n_resamples`` and the seed). A job whose forms fail the
    first-block check is computed again, alone, without them. ``pool``: a
    :class:`~kg_rageval.results.bootstrap_pool.BootstrapPool` whose workers compute the blocks
    after the first, the same replicates bit for bit (``weights_of`` the one scheme,
    :func:`~kg_rageval.results.bootstrap.bootstrap_weights`; checked, else serially here)."""
    states = [_Job(job, n_resamples) for job in jobs]
    ns = {len(s.mats[0]) for s in states if s.runs}
    if len(ns) > 1:
        raise ValueError(f"replicate_jobs: the jobs' matrices have different numbers of rows {sorted(ns)}")
    pending = [s for s in states if s.runs]
    if pending and pool is not None:
        from kg_rageval.results.bootstrap import bootstrap_weights
        from kg_rageval.results.bootstrap_pool import replicate_on_pool

        for s in pending:
            s.reset()
        if weights_of is bootstrap_weights and replicate_on_pool(pending, n_resamples, seed, pool, _block):
            pending = []
    while pending:
        for s in pending:
            s.reset()
        _replicates(pending, n_resamples, seed, weights_of)
        pending = [s for s in pending if not s.done]
    return [s.out for s in states]


class _Job:
    """A job's forms, projections and output while :func:`_replicates` runs it."""

    def __init__(self, job: Replicates, n_resamples: int):
        self.finalize, self.names, self.mats = job.finalize, job.names, job.mats
        self.wanted = list(job.metrics)
        n = len(self.mats[0]) if self.mats else 0
        self.out: list[dict[str, np.ndarray]] = [
            {m: np.full(n_resamples, np.nan) for m in self.wanted} for _ in self.mats
        ]
        self.runs = bool(n and self.wanted)
        self.forms: dict[str, Form | None] = {}
        if self.runs:
            probes = np.vstack([_probe_rows(mat) for mat in self.mats])
            self.forms = dict(metric_forms(self.finalize, self.names, self.wanted, probes))
        self.done = not self.runs
        self.full: dict[int, np.ndarray] = {}

    def full_matrix(self, i: int) -> np.ndarray:
        """Matrix ``i`` of the job as records × every stat (a view's stacked once, kept for
        the job: a metric finalized per resample reads every stat)."""
        mat = self.mats[i]
        if isinstance(mat, np.ndarray):
            return mat
        got = self.full.get(i)
        if got is None:
            got = self.full[i] = mat.matrix()
        return got

    def reset(self) -> None:
        for dst in self.out:
            for arr in dst.values():
                arr.fill(np.nan)
        self.proj = Projection(self.forms, self.wanted)
        self.loop = [m for m in self.wanted if self.forms.get(m) is None]
        self.projs = [
            self.proj.matrix(mat) if isinstance(mat, np.ndarray) else self.proj.matrix_of(mat, self.names)
            for mat in self.mats
        ]
        self.done = True


def _single_blas_thread() -> Any:
    """:func:`~kg_rageval.results.bootstrap.single_blas_thread` (kept under this name)."""
    from kg_rageval.results.bootstrap import single_blas_thread

    return single_blas_thread()


class Projection:
    """The few linear projections of the stats that the verified forms of ``metrics`` read
    (a stat column itself for a unit coefficient vector, so its sums are the stat's sums bit
    for bit), and the metrics' values from summed projections."""

    def __init__(self, forms: Mapping[str, Form | None], metrics: Iterable[str]):
        self.forms = forms
        self.metrics = [m for m in metrics if forms.get(m) is not None]
        self._keys: dict[tuple[float, ...], int] = {}
        self.vectors: list[np.ndarray] = []
        for m in self.metrics:
            self._need(forms[m])  # type: ignore[arg-type]

    def _need(self, f: Form) -> None:
        if f.kind == "harmonic":
            for p in f.parts or ():
                self._need(self.forms[p])  # type: ignore[arg-type]
            return
        for v in f.columns():
            key = tuple(v.tolist())
            if key not in self._keys:
                self._keys[key] = len(self.vectors)
                self.vectors.append(v)

    def columns(self, mat: np.ndarray) -> list[np.ndarray]:
        """The projected columns of a stats matrix (rows × stats)."""
        out = []
        for v in self.vectors:
            nz = np.flatnonzero(v)
            out.append(mat[:, nz[0]] if len(nz) == 1 and v[nz[0]] == 1.0 else mat @ v)
        return out

    def columns_of(self, stats: Sequence[np.ndarray]) -> list[np.ndarray]:
        """:meth:`columns` of ``np.stack(stats, axis=1)`` (one array per stat, in the names'
        order), bit for bit, stacked only for a projection that is not a stat column itself
        or the exact sum of two (:meth:`_projected`)."""
        return self._projected(
            stats.__getitem__, len(stats[0]) if stats else 0, lambda: np.stack(stats, axis=1)
        )

    def matrix(self, mat: np.ndarray) -> np.ndarray:
        cols = self.columns(mat)
        return np.stack(cols, axis=1) if cols else np.zeros((len(mat), 0))

    def matrix_of(self, source: Any, names: list[str]) -> np.ndarray:
        """:meth:`matrix` of ``source.matrix()`` (a :class:`~kg_rageval.results.record_stats.RecordStats`
        view, stats in ``names`` order), bit for bit, from only the per-record columns the
        projections read (:meth:`_projected`)."""
        out = np.empty((len(source), len(self.vectors)))
        self._projected(lambda i: source.column(names[i]), len(source), source.matrix, out)
        return out

    def _projected(
        self,
        column: Callable[[int], np.ndarray],
        n: int,
        stacked: Callable[[], np.ndarray],
        into: np.ndarray | None = None,
    ) -> list[np.ndarray]:
        """Each projection of the stats whose columns ``column(i)`` gives (``stacked()``: all
        of them as one rows × stats matrix), the bits of ``stacked() @ v``: a unit vector is a
        stat's column; a vector of one or two coefficients ``±1`` is their exact sum (one
        rounding of ``±x ± y`` whatever the order of the additions, from a zero start as the
        matrix product's); any other vector is the product with the stacked matrix, built
        once. ``into``: a rows × projections matrix to write them in, column by column
        (nothing is returned then: no second copy of them is held)."""
        out: list[np.ndarray] = []
        full = None
        for j, v in enumerate(self.vectors):
            nz = np.flatnonzero(v).tolist()
            if len(nz) == 1 and v[nz[0]] == 1.0:
                col = column(nz[0])
            elif len(nz) <= 2 and all(abs(v[i]) == 1.0 for i in nz):
                col = np.zeros(n)
                for i in nz:
                    col = col + column(i) if v[i] > 0 else col - column(i)
            else:
                if full is None:
                    full = stacked()
                col = full @ v
            if into is None:
                out.append(col)
            else:
                into[:, j] = col
        return out

    def _col(self, sums: np.ndarray, v: np.ndarray | None) -> np.ndarray:
        return sums[:, self._keys[tuple(v.tolist())]]  # type: ignore[union-attr, index]

    def values(self, metric: str, sums: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """``(values, denominators or None)`` of a metric on rows of summed projections."""
        f = self.forms[metric]
        assert f is not None
        if f.kind == "linear":
            return self._col(sums, f.a) + f.a0, None
        if f.kind == "ratio":
            den = self._col(sums, f.b) + f.b0
            return _ratio_values(self._col(sums, f.a) + f.a0, den), den
        p, r = (self.values(x, sums)[0] for x in f.parts)  # type: ignore[union-attr]
        return harmonic_values(p, r), None


def _replicates(jobs: list[_Job], n_resamples: int, seed: int, weights_of: Any) -> None:
    """One pass over the weight blocks for every job; a job whose forms do not reproduce
    ``finalize`` on the first block drops the failing forms, is marked not ``done`` and is
    left out of the rest of the pass."""
    one = _single_blas_thread()
    with one if one is not None else nullcontext():
        _replicate_blocks(jobs, n_resamples, seed, weights_of)


def _replicate_blocks(jobs: list[_Job], n_resamples: int, seed: int, weights_of: Any) -> None:
    """:func:`_replicates`' pass over the weight blocks (BLAS already on one thread)."""
    live = list(jobs)
    first = True
    for lo, w in weights_of(len(jobs[0].mats[0]), n_resamples, seed):
        hi = lo + len(w)
        for job in live:
            if not _block(job, w, lo, hi, first):
                job.done = False
        if first:
            live = [job for job in live if job.done]
            if not live:
                return
        first = False


def _block(job: _Job, w: np.ndarray, lo: int, hi: int, first: bool) -> bool:
    """One block of resamples ``lo:hi`` (weights ``w``) of one job; ``False`` (with the
    failing forms dropped) when a form does not reproduce ``finalize`` on the first block."""
    names, finalize, proj = job.names, job.finalize, job.proj
    k = len(names)
    vec_metrics = proj.metrics
    for i, (mat, pmat, dst) in enumerate(zip(job.mats, job.projs, job.out)):
        sums = w @ pmat  # the columns of w @ mat, bit for bit
        for m in vec_metrics:
            dst[m][lo:hi] = proj.values(m, sums)[0]
        if first:  # the forms against finalize on real resamples
            bad = set()
            for j in sorted({0, len(w) - 1}):
                res = finalize(dict(zip(names, _resampled(mat, w[j]))))
                for m in vec_metrics:
                    g = res.get(m)
                    v = dst[m][lo + j]
                    if not _close(None if g is None else g.value, None if np.isnan(v) else float(v)):
                        bad.add(m)
            if bad:
                for m in bad:
                    job.forms[m] = None
                return False
        if job.loop:
            full = (w @ job.full_matrix(i)).tolist() if k else [[] for _ in range(len(w))]
            for j, row in enumerate(full):
                res = finalize(dict(zip(names, row)))
                for m in job.loop:
                    g = res.get(m)
                    if g is not None and g.value is not None:
                        dst[m][lo + j] = g.value
    return True
