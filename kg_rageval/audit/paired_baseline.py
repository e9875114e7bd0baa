"""The baseline comparison of an audit: the baseline system's run, paired with the candidate's record by record.

:func:`_run_baseline` runs the configured families over the baseline's records (held, or
streamed like the audit's), pairs both systems' per-record ids (:class:`PairedIds`), checks the
pairing (:func:`_pairing_problem`: a pairing too thin is missing evidence) and gives the
``delta:<family>.<metric>`` metrics and the per-query deltas. Which release the baseline was
scored against: :mod:`.baseline`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.audit.config import AuditConfig
from kg_rageval.audit.families import FamilyRun
from kg_rageval.audit.family_runs import (
    _bind_families,
    _stream_runs,
    configured_families,
    family_options,
    run_families,
)
from kg_rageval.audit.gates import metric_dict
from kg_rageval.base.errors import InputError
from kg_rageval.results.bootstrap import bootstrap_weights, percentile_interval
from kg_rageval.results.forms import metric_values
from kg_rageval.results.metric import Metric
from kg_rageval.results.record_stats import AlignedRecords
from kg_rageval.scoring import get_scorer, resolve_metric


# ---------------------------------------------------------------------- baseline
def _pairing_problem(
    paired: int, either: int, frac: float, n_dropped: int, dropped_first: list[str], bl: Any
) -> str | None:
    """Why a baseline comparison is missing evidence, or ``None`` when the pairing is sound:
    the candidate dropped baseline records (``n_dropped`` more than ``max_dropped``; the first
    ids, sorted, in ``dropped_first``), or the records both systems scored are fewer than
    ``min_paired_fraction`` of those either scored."""
    if n_dropped > bl.max_dropped:
        shown = ", ".join(repr(d) for d in dropped_first[:5]) + (" ..." if n_dropped > 5 else "")
        return (
            f"the candidate's records lack {n_dropped} record(s) of the baseline ({shown}; "
            f"baseline.max_dropped = {bl.max_dropped})"
        )
    if paired == 0 or frac < bl.min_paired_fraction:
        return (
            f"only {paired} of {either} records are scored by both systems ({frac:.1%}; "
            f"baseline.min_paired_fraction = {bl.min_paired_fraction:.0%})"
        )
    return None


class PairedIds:
    """The pairing of two systems' per-record ids, each side's ids distinct (a per-record view:
    one id per record, any order), as NumPy's set routines give it with one sort of both sides
    together instead of one per routine: ``common`` (sorted) and its positions ``at_c`` /
    ``at_b`` in each side (``np.intersect1d(..., return_indices=True)``), ``n_either`` (the
    size of ``np.union1d``: both sides less the common ids) and each side's unpaired ids, the
    first ``k`` in sorted order (``np.setdiff1d(side, common)[:k]``; only the unpaired ids are
    sorted, usually few)."""

    def __init__(self, ids_c: np.ndarray, ids_b: np.ndarray) -> None:
        self._c, self._b = ids_c, ids_b
        self.common, self.at_c, self.at_b = np.intersect1d(
            ids_c, ids_b, assume_unique=True, return_indices=True
        )
        self.n_either = int(len(ids_c) + len(ids_b) - len(self.common))

    @staticmethod
    def _only(ids: np.ndarray, paired: np.ndarray, k: int) -> list[Any]:
        keep = np.ones(len(ids), bool)
        keep[paired] = False
        return np.sort(ids[keep])[:k].tolist()

    def only_c(self, k: int) -> list[Any]:
        """The first ``k`` (sorted) of the candidate's ids the baseline lacks."""
        return self._only(self._c, self.at_c, k)

    def only_b(self, k: int) -> list[Any]:
        """The first ``k`` (sorted) of the baseline's ids the candidate lacks."""
        return self._only(self._b, self.at_b, k)


def _delta_wanted(fam: str, metric: str, delta_gates: set[str]) -> bool:
    """Whether a delta gate reads ``fam.metric`` (a gate on an undeclared family's metric may
    be unresolved: its bare name)."""
    return bool({metric, f"{fam}.{metric}"} & delta_gates)


def _restricted(release: Any, view: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, positions)`` of a per-record view's records that the release comparison keeps
    (:meth:`~kg_rageval.audit.baseline.Release.restrict`: all of them for one release)."""
    ids = view.ids()
    kept, at = release.restrict(ids, {"at": np.arange(len(ids))})
    return kept, at["at"]


def _per_query_deltas(
    fam: str,
    fin: Any,
    names: list[str],
    common: np.ndarray,
    mc: Any,
    mb: Any,
    wanted: list[str],
    limit: int = 50,
) -> dict[str, list[dict[str, Any]]]:
    """The paired per-record deltas of the ``wanted`` metrics (records where both systems
    define the metric and differ), most negative first, at most ``limit`` per metric:
    ``{fam.metric: [{"record_id", "candidate", "baseline", "delta"}]}``. Each system's
    per-record values come from :func:`~kg_rageval.results.forms.metric_values` (vectorised over the
    records where the metric has a verified form, else one ``finalize`` per record)."""
    from kg_rageval.audit.failing import worst_first

    vc = metric_values(fin, names, mc, wanted)
    vb = metric_values(fin, names, mb, wanted)
    out: dict[str, list[dict[str, Any]]] = {}
    for m in wanted:
        c, bl = vc[m][0], vb[m][0]  # type: ignore[index]
        d = c - bl
        sel = np.flatnonzero(~np.isnan(c) & ~np.isnan(bl) & (c != bl))
        order = worst_first(-d, sel, common.__getitem__, limit)  # most negative delta first, ties by id
        out[f"{fam}.{m}"] = [
            {
                "record_id": str(common[j]),
                "candidate": float(c[j]),
                "baseline": float(bl[j]),
                "delta": float(c[j]) - float(bl[j]),
            }
            for j in order
        ]
    return out


_TRAIL_MEMBER = "prov_trail"
"""The provenance member the baseline's families do not make (:func:`_baseline_config`)."""


def _baseline_config(config: AuditConfig) -> AuditConfig:
    """The config the baseline's families run with: the audit's, but no PROV-O trail (the
    trail describes the audited run only: no :data:`_TRAIL_MEMBER`)."""
    bcfg = config.model_copy()
    bcfg._base_dir, bcfg._source = config._base_dir, config._source
    bfams = {n: dict(config.families.get(n) or {}) for n in configured_families(config)}
    if "provenance" in bfams:
        bfams["provenance"]["trail"] = False
    bcfg.families = bfams
    return bcfg


def _baseline_held(
    config: AuditConfig, inputs: Mapping[str, Any], cand: Any, bpath: Path, progress: bool
) -> tuple[Any, dict[str, FamilyRun], np.ndarray]:
    """``(release, baseline runs, baseline record ids)`` with the baseline's records read whole
    (:func:`~kg_rageval.records.read_records`), let go before the pairing."""
    from kg_rageval.audit.baseline import ReleaseCheck, load_baseline_ontology
    from kg_rageval.records import read_records

    base_records = read_records(bpath)
    check = ReleaseCheck(config, inputs["ontology"], load_baseline_ontology(config))
    check.prepare(cand)
    check.observe(0, base_records)
    release = check.result()  # refuses another release
    binputs = dict(inputs)
    binputs["records"] = base_records
    binputs["ontology"] = release.ontology
    bruns = run_families(_baseline_config(config), binputs, base_records, progress=progress)
    return release, bruns, check.ids()


class _Reuse:
    """What the baseline's stream shares with the audited run's: a baseline record whose line
    is, byte for byte, the line of the audited record with its id (their 16-byte digests
    equal, :class:`~.stream.LineDigests`; wherever it is in either file) is the same record, so
    every family gives it the rows it gave the audited one. Those families (:meth:`plan`)
    score only the other baseline records (``stream_families(narrow=...)``), and each
    member's result is the audited run's rows of the equal records, then the rows scored
    (:meth:`result`): the per-record stats the pairing reads are those of scoring every
    baseline record, bit for bit (a record's rows stay together, in their order).

    A family shares its rows when it ran on the audited records with the same options (but
    the PROV-O trail, which the baseline does not make), its rows are records
    (``rows_are_records``) and it has sections; only in-process (no Dask client) and when the
    baseline is scored with the audited ontology. What it keeps: per baseline chunk one bool
    per record, and the equal records' ids."""

    def __init__(self, cand: Any, runs: Mapping[str, FamilyRun], view: Any) -> None:
        self._cand = cand  # the audited StreamedRecords, its line digests kept
        self._runs = runs
        self._view = view  # the baseline's RecordIndex: its ids, chunk by chunk
        self._index: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.digests: Any = None
        self.same: list[np.ndarray] = []
        self._same_ids: list[np.ndarray] = []
        self.members: dict[str, list[str]] = {}
        self._ids_sorted: np.ndarray | None = None
        self._part: tuple[int, int, list[dict]] | None = None  # (k, id(chunk), its differing records)

    def _by_id(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(audited ids, their sorting order, their line digests)``, made once."""
        if self._index is None:
            ids = self._cand.id_array()
            chunks = self._cand.line_digests.chunks
            dig = np.concatenate(chunks) if chunks else np.zeros((0, 2), np.uint64)
            self._index = (ids, np.argsort(ids, kind="stable"), dig)
        return self._index

    @staticmethod
    def plan(
        config: AuditConfig, bcfg: AuditConfig, runs: Mapping[str, FamilyRun], names: list[str]
    ) -> dict[str, list[str]]:
        """``{family: its baseline members}`` of the families that share the audited run's rows."""
        out: dict[str, list[str]] = {}
        for name in names:
            run = runs.get(name)
            spec = get_scorer(name)
            if run is None or run.status != "ran" or run.result is None or not spec.sections:
                continue
            if not all(ev.family.rows_are_records for ev in run.result.values()):
                continue
            a, b = family_options(config, name), family_options(bcfg, name)
            if a == b:
                out[name] = list(run.result)
            elif {k for k in a if a[k] != b.get(k)} == {"trail"} and set(a) == set(b):
                out[name] = [m for m in run.result if m != _TRAIL_MEMBER]
        return out

    def known(self, bound: Mapping[str, Any]) -> Any:
        """``known(i, digest)`` for the baseline's reader
        (:func:`~kg_rageval.records.iter_record_chunks`), or ``None`` when it cannot be used:
        a baseline line whose digest is that of the audited file's ``i``-th line is that
        line, byte for byte — its record already read, checked and scored — so it is not
        parsed again but stands in as its id and the sections it carries (each ``True``): all
        that the observers read of it (the id, the section flags; the release check's re-base
        marks: only when no audited record has one), and every family (``bound``) shares its
        rows (:meth:`narrow` leaves it out: it is equal). The audited records' section bits
        (:meth:`~.stream.RecordIndex.keep_sections`) must cover the baseline families'
        sections."""
        from kg_rageval.audit.stream import _sections_of

        cand = self._cand
        secs = getattr(cand, "sections", None)
        if secs is None or cand.marked or not set(bound) <= set(self.members):
            return None
        if not set(_sections_of(self._view.families)) <= set(secs):
            return None
        ids, _, dig = self._by_id()
        raw = np.ascontiguousarray(dig).tobytes()
        masks = cand.section_masks().tolist()
        n = len(masks)
        if n != len(ids) or len(raw) != 16 * n:  # pragma: no cover — one of each per audited record
            return None
        shapes: dict[int, tuple[str, ...]] = {}

        def known(i: int, digest: bytes) -> dict | None:
            if i >= n or raw[16 * i : 16 * i + 16] != digest:
                return None
            m = masks[i]
            keys = shapes.get(m)
            if keys is None:
                keys = shapes[m] = tuple(s for b, s in enumerate(secs) if m >> b & 1)
            rec: dict[str, Any] = dict.fromkeys(keys, True)
            rec["id"] = str(ids[i])
            return rec

        return known

    def observe(self, k: int, chunk: list[dict]) -> None:
        """After the baseline's :class:`~.stream.LineDigests` and ids saw chunk ``k``: which of
        its records are an audited record, line for line."""
        ids, order, dig = self._by_id()
        b_ids, b_dig = self._view._ids[-1], self.digests.chunks[k]
        same = np.zeros(len(b_ids), bool)
        if len(ids) and len(b_ids):
            at = np.searchsorted(ids, b_ids, sorter=order)
            j = order[np.minimum(at, len(ids) - 1)]
            same = (ids[j] == b_ids) & (dig[j] == b_dig).all(axis=1)
        self.same.append(same)
        if same.any():
            self._same_ids.append(b_ids[same])

    def narrow(self, k: int, chunk: list[dict]) -> list[dict]:
        """The records of baseline chunk ``k`` a sharing family scores: those that differ."""
        same = self.same[k]
        if not same.any():
            return chunk
        got = self._part
        if got is not None and got[0] == k and got[1] == id(chunk):
            return got[2]  # every sharing family scores the same sublist of the chunk
        part = [r for r, s in zip(chunk, same.tolist()) if not s]
        self._part = (k, id(chunk), part)
        return part

    def counts(self, k: int, chunk: list[dict]) -> dict[str, int]:
        """``{sharing family: records of the narrowed chunk k with its section}`` (the
        baseline's section flags of the chunk just observed, less the equal records): what
        counting :meth:`narrow`'s records with ``has_section`` gives. Called once a chunk,
        before the families: the previous chunk's sublist is let go."""
        self._part = None
        keep = ~self.same[k]
        flags = self._view._flags
        return {f: int(np.count_nonzero(flags[f][-1] & keep)) for f in self.members if f in flags}

    def same_ids(self) -> np.ndarray:
        """The ids of the baseline records equal to the audited ones, sorted."""
        from kg_rageval.audit.stream import id_array

        got = np.concatenate(self._same_ids) if self._same_ids else id_array([])
        return np.sort(got)

    def result(self, name: str, scored: Any, spill_rows: int | None = None) -> Any:
        """Family ``name``'s baseline result: per member, the audited run's rows of the equal
        records, then the rows of the others (``scored``; ``None``: none of them had the
        section), stats only (what the pairing reads), concatenated as a stream's chunks are
        (:class:`~kg_rageval.results.concatenation.Concatenation`: past ``spill_rows`` rows
        the columns go to a temporary file); ``None`` when ``scored`` has other members than
        planned."""
        from kg_rageval.results.concatenation import Concatenation
        from kg_rageval.results.evaluation_set import EvaluationSet

        self._part = None
        members = self.members[name]
        if scored is not None and list(scored) != members:
            return None
        if self._ids_sorted is None:
            self._ids_sorted = self.same_ids()
        cand = self._runs[name].result
        assert cand is not None  # plan() shares only families that ran with a result
        out = EvaluationSet(name)
        for m in members:
            ev = cand[m]
            both = Concatenation(spill_rows)
            both.add(_stats_only(ev, _among(ev.record_ids.astype(str), self._ids_sorted)))
            if scored is not None:
                both.add(_stats_only(scored[m], None))
            out[m] = both.result()
        return out


def _among(ids: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """``np.isin(ids, sorted_ids)`` for ``sorted_ids`` sorted (one ``searchsorted``, no sort
    of ``ids``)."""
    if not len(sorted_ids):
        return np.zeros(len(ids), bool)
    at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    return np.asarray(sorted_ids[at] == ids, bool)


def _stats_only(ev: Any, keep: np.ndarray | None) -> Any:
    """``ev``'s record ids and stat columns (the rows ``keep`` selects; all for ``None``)."""
    from kg_rageval.results.columns import _raw
    from kg_rageval.results.evaluation import Evaluation

    if keep is None:
        return Evaluation(
            family=ev.family, record_ids=ev.record_ids, stats=dict(_raw(ev.stats)), meta=dict(ev.meta)
        )
    return Evaluation(
        family=ev.family,
        record_ids=ev.record_ids[keep],
        stats={k: v[keep] for k, v in _raw(ev.stats)},
        meta=dict(ev.meta),
    )


def _baseline_streamed(
    config: AuditConfig,
    inputs: Mapping[str, Any],
    cand: Any,
    bpath: Path,
    client: Any,
    runs: Mapping[str, FamilyRun] | None = None,
) -> tuple[Any, dict[str, FamilyRun], np.ndarray] | None:
    """:func:`_baseline_held` with the baseline's records read once in chunks of the audit's
    ``chunk_size`` through the families (:func:`_stream_runs`, as the audited records are) and
    the release check (:class:`~kg_rageval.audit.baseline.ReleaseCheck`), none of them held;
    the candidate's records are read again only for a comparison on the unchanged nodes.
    ``None`` when anything goes wrong before, in or after the stream but a reading error of
    the baseline's file (the held baseline then raises its error, in its order, or scores it).
    ``runs``: the audited run's, whose rows the baseline's equal records share (:class:`_Reuse`)."""
    from kg_rageval.audit.baseline import ReleaseCheck, load_baseline_ontology
    from kg_rageval.audit.stream import LineDigests, RecordIndex

    try:
        check = ReleaseCheck(config, inputs["ontology"], load_baseline_ontology(config))
        planned = check.planned_ontology()
        check.prepare(cand)
        bcfg = _baseline_config(config)
        binputs = dict(inputs)
        binputs["records"] = None
        binputs["paths"] = {**(inputs.get("paths") or {}), "records": bpath}
        binputs["ontology"] = planned
        names = configured_families(bcfg)
        view = RecordIndex(bpath, cand.size, names)
        bound = _bind_families(bcfg, binputs, names)
        reuse = None
        observers: tuple[Any, ...] = (view.observe, check.observe)
        cand_digests = getattr(cand, "line_digests", None)
        if runs is not None and client is None and cand_digests is not None and planned is inputs["ontology"]:
            reuse = _Reuse(cand, runs, view)
            reuse.members = {n: m for n, m in _Reuse.plan(config, bcfg, runs, names).items() if n in bound[0]}
            reuse.digests = LineDigests()
            observers = (reuse.digests.observe, view.observe, check.observe, reuse.observe)
    except Exception:
        return None
    narrow = dict.fromkeys(reuse.members, reuse.narrow) if reuse is not None else None
    known = reuse.known(bound[0]) if reuse is not None else None
    bruns = _stream_runs(
        bcfg,
        binputs,
        names,
        bound,
        view,
        observers,
        client,
        digests=None if reuse is None else reuse.digests.sink,
        narrow=narrow,
        narrow_counts=None if reuse is None else reuse.counts,
        known=known,
    )
    if bruns is None:
        return None
    try:
        release = check.result()
    except Exception:
        return None
    if release.ontology is not planned:  # pragma: no cover — ReleaseCheck plans what it decides
        return None
    if reuse is not None:  # each sharing family's result is made when it is paired (_run_baseline)
        for name in reuse.members:
            if bruns[name].status == "ran":
                bruns[name].shared = reuse
    return release, bruns, check.ids()


_PENDING: Any = object()
"""A delta's place in :func:`_run_baseline`'s deltas, taken before its paired bootstrap ran."""

SHARED_BOOTSTRAP_BYTES = 256 * 2**20
"""The most bytes of per-record stats (both systems', 8 bytes a stat and record) of the paired
evaluations whose bootstraps share one pass over the weight blocks (:class:`_PairedBootstraps`):
about 100,000 records of the six families' evaluations with a delta gate; past it each
evaluation draws the weights again (at 1,000,000 records one evaluation's stats alone may be
hundreds of MB)."""


class _PairedJob:
    """One paired evaluation of :func:`_run_baseline`: both systems' aligned stats (``mc``,
    ``mb``), their totals (``tc``, ``tb``: ``finalize`` of the stacked sums) and what its
    ``delta:`` metrics are made from (:meth:`finish`)."""

    def __init__(self, fam: str, fin: Any, names: list[str], mc: Any, mb: Any, tc: Any, tb: Any, n: int):
        self.fam, self.fin, self.names, self.mc, self.mb, self.tc, self.tb, self.n = (
            fam,
            fin,
            names,
            mc,
            mb,
            tc,
            tb,
            n,
        )

    def keys(self) -> list[str]:
        return [f"delta:{self.fam}.{m}" for m in self.tc]

    def size(self) -> int:
        """Bytes of both systems' per-record stats (an upper bound of what the bootstrap holds)."""
        return 2 * 8 * self.n * max(len(self.names), 1)

    def finish(
        self,
        deltas: dict[str, Metric],
        pairs: dict[str, dict[str, Any]],
        samples: Mapping[str, np.ndarray],
        resamples: int,
        b: Any,
    ) -> None:
        """Put each ``delta:`` metric in its place (``samples``: the paired replicates of each
        metric, candidate less baseline; none without a bootstrap)."""
        tc, tb, n = self.tc, self.tb, self.n
        for m in tc:
            key = f"delta:{self.fam}.{m}"
            vc, vb = tc[m].value, tb.get(m).value if tb.get(m) else None
            if vc is None or vb is None:
                d = Metric(
                    key,
                    None,
                    missing=f"{m} undefined for "
                    f"{'candidate' if vc is None else 'baseline'} on {n} paired records",
                )
            else:
                ci = (
                    percentile_interval(samples[m], resamples, b.level)
                    if resamples and n >= b.min_units
                    else None
                )
                d = Metric(key, float(vc - vb), None, None, None, ci, n)
            deltas[key] = d
            pairs[key] = {"candidate": vc, "baseline": vb, "paired_records": n}
        self.mc = self.mb = None


class _PairedBootstraps:
    """The paired bootstraps of :func:`_run_baseline`, vectorised: the evaluations waiting
    (:meth:`add`) whose records are as many and whose stats fit in
    :data:`SHARED_BOOTSTRAP_BYTES` together are bootstrapped in one pass over the weight blocks
    (:func:`~kg_rageval.results.forms.replicate_jobs`: the weights are drawn once for all of
    them, and each gets the replicates it gets alone — the weights depend only on the number
    of records, resamples and the seed); an evaluation that does not fit flushes those
    waiting first, one too large alone is bootstrapped at once. Once they are, the baseline's
    result columns of the families paired to the end (``release``) are let go."""

    def __init__(
        self,
        b: Any,
        deltas: dict[str, Metric],
        pairs: dict[str, dict[str, Any]],
        release: list[FamilyRun],
    ) -> None:
        self.b, self.deltas, self.pairs = b, deltas, pairs
        self.release = release  # the families paired to the end: let go once bootstrapped
        self.jobs: list[_PairedJob] = []
        self.resamples = 0

    def add(self, job: _PairedJob, resamples: int) -> None:
        if self.jobs and (
            job.n != self.jobs[0].n
            or resamples != self.resamples
            or sum(j.size() for j in self.jobs) + job.size() > SHARED_BOOTSTRAP_BYTES
        ):
            self.flush()
        self.jobs.append(job)
        self.resamples = resamples
        if job.size() > SHARED_BOOTSTRAP_BYTES:  # nothing joins it: alone, now
            self.flush()

    def flush(self) -> None:
        """Bootstrap the evaluations waiting and put their deltas in place."""
        from kg_rageval.results.forms import Replicates, replicate_jobs

        if not self.jobs:
            return
        jobs, self.jobs = self.jobs, []
        got = replicate_jobs(
            [Replicates(j.fin, j.names, [j.mc, j.mb], list(j.tc)) for j in jobs],
            self.resamples,
            self.b.seed,
            bootstrap_weights,
        )
        for job, (rc, rb) in zip(jobs, got):
            samples = {m: rc[m] - rb[m] for m in job.tc}  # NaN where either is undefined
            job.finish(self.deltas, self.pairs, samples, self.resamples, self.b)
        del got, jobs
        _release(self.release)


def _release(bruns: list[FamilyRun]) -> None:
    """Let go of the baseline's result columns of families paired and bootstrapped (not read again)."""
    for brun in bruns:
        if brun.result is not None:
            for bev in brun.result.values():
                bev.drop_record_stats()
        brun.result, brun.evaluations = None, []
    bruns.clear()


def _run_baseline(
    config: AuditConfig,
    inputs: Mapping[str, Any],
    runs: Mapping[str, FamilyRun],
    progress: bool,
    records: Any = None,
    client: Any = None,
) -> tuple[dict[str, Any], dict[str, Metric]]:
    """Paired comparison with a baseline run on the same records.

    For each evaluation the candidate and baseline per-record stats are aligned on the record
    ids both scored; ``delta:m`` = m(candidate) − m(baseline) over those records. For the
    evaluations owning a metric with a delta gate (all with ``bootstrap.always``) a paired
    percentile bootstrap (the same record draws for both systems) gives the intervals, and the
    per-query deltas of the gated metrics are listed (worst first, 50 at most). ``records``:
    the candidate's (:class:`~.stream.HeldRecords` / :class:`~.stream.StreamedRecords`; default
    ``inputs["records"]``). The baseline's records are streamed like the candidate's when the
    candidate's were (:func:`_baseline_streamed`; ``client``: the Dask client its chunks are
    scored on), else held; either way only the record ids of both sides stay, as numpy arrays."""
    from kg_rageval.audit.stream import HeldRecords

    cand = HeldRecords(inputs["records"]) if records is None else records

    assert config.baseline is not None
    bpath = config.path(config.baseline.records)
    if not bpath.exists():
        raise InputError(
            "baseline records file does not exist",
            source=config.source,
            location=f"baseline.records = {config.baseline.records!r}",
        )
    got = _baseline_streamed(config, inputs, cand, bpath, client, runs) if cand.streamed else None
    release, bruns, base_ids = (
        got if got is not None else _baseline_held(config, inputs, cand, bpath, progress)
    )
    b = config.bootstrap
    fams = configured_families(config)
    options = {f: family_options(config, f) for f in fams}
    delta_gates = {
        resolve_metric(g.metric, scope=fams, options=options).qualified
        for g in config.all_gates()
        if g.metric.startswith("delta:")
    }
    deltas: dict[str, Metric] = {}
    pairs: dict[str, dict[str, Any]] = {}
    primary: list[str] = []
    per_query: dict[str, list[dict[str, Any]]] = {}
    dropped = np.setdiff1d(base_ids, cand.id_array())  # sorted: the baseline's ids are unique
    dropped_first = dropped[:50].tolist()
    bl = config.baseline
    pairing: dict[str, dict[str, Any]] = {}
    release_after: list[FamilyRun] = []
    pending = _PairedBootstraps(b, deltas, pairs, release_after)
    for fam, run in runs.items():
        brun = bruns.get(fam)
        if brun is None or run.status != "ran" or brun.status != "ran":
            continue
        if brun.shared is not None:  # the audited rows of the equal records, then the others'
            got = brun.shared.result(fam, brun.result, config.spill_rows)
            if got is None:  # pragma: no cover — the same options make the same members
                raise RuntimeError(f"{fam}: the baseline's members differ from the audited run's")
            brun.result, brun.evaluations, brun.shared = got, got.evaluations, None
        if run.result is None or brun.result is None:
            continue
        for member, ev in run.result.items():  # paired by member, then by record id
            bev = brun.result.get(member)
            if bev is None or ev.family.qualified_name != bev.family.qualified_name:
                continue
            # another ontology release: only the comparable records take part (drift.release);
            # each system's per-record stats are its cached view, read one column at a time
            view_c, view_b = ev.record_stats(), bev.record_stats()
            ids_c, at_c = _restricted(release, view_c)
            ids_b, at_b = _restricted(release, view_b)
            pair = PairedIds(ids_c, ids_b)
            common, ic, ib = pair.common, pair.at_c, pair.at_b
            names = list(view_c.names)
            label = fam if len(run.result) == 1 else f"{fam}.{member}"
            frac = len(common) / pair.n_either if pair.n_either else 0.0
            unpaired = _pairing_problem(len(common), pair.n_either, frac, len(dropped), dropped_first, bl)
            pairing[label] = {
                "paired_records": int(len(common)),
                "records_either": pair.n_either,
                "paired_fraction": round(frac, 6),
                "candidate_only": {"n": int(len(ids_c) - len(common)), "ids": pair.only_c(20)},
                "baseline_only": {"n": int(len(ids_b) - len(common)), "ids": pair.only_b(20)},
                "missing": unpaired,
            }
            if unpaired is not None:
                for m in ev.family.finalize(dict.fromkeys(names, 0.0)):
                    key = f"delta:{fam}.{m}"
                    primary.append(key)
                    deltas[key] = Metric(key, None, missing=unpaired)
                    pairs[key] = {"candidate": None, "baseline": None, "paired_records": int(len(common))}
                continue
            del pair
            # the paired records of each system (the stacked matrices of every stat, by column)
            mc = AlignedRecords(view_c, at_c[ic], names)
            mb = AlignedRecords(view_b, at_b[ib], names)
            del ids_c, ids_b, ic, ib
            fin = ev.family.finalize
            tc = fin(dict(zip(names, mc.probe_rows()[0].tolist())))  # the stacked sum(0), bit for bit
            tb = fin(dict(zip(names, mb.probe_rows()[0].tolist())))
            n = len(common)
            wanted = [m for m in tc if _delta_wanted(fam, m, delta_gates)]
            resamples = b.n_resamples if (wanted or b.always) else 0
            job = _PairedJob(fam, fin, names, mc, mb, tc, tb, n)
            for key in job.keys():  # the deltas' places, in this order, filled when bootstrapped
                primary.append(key)
                deltas[key] = _PENDING
            # per-query deltas (the report's regressions table) of the metrics with a delta gate:
            # one finalize per record and system, every wanted metric read from it
            if wanted:
                per_query.update(_per_query_deltas(fam, fin, names, common, mc, mb, wanted))
            del mc, mb
            if resamples:  # paired: the same record draws (records aligned by id above) for both systems
                pending.add(job, resamples)
            else:
                job.finish(deltas, pairs, {}, 0, b)
        release_after.append(brun)  # its result columns let go once its jobs are bootstrapped
        if not pending.jobs:
            _release(release_after)
    pending.flush()
    _release(release_after)
    info = {
        "records": str(bpath),
        "n_records": len(base_ids),
        "families": {f: r.status for f, r in bruns.items()},
        "dropped_records": {"n": len(dropped), "ids": dropped_first},
        "pairing": pairing,
        "deltas": {k: {**metric_dict(v), **pairs.get(k, {})} for k, v in sorted(deltas.items())},
        "primary": sorted(set(primary)),
        "worst_queries": per_query,
        "release": release.to_dict(),
    }
    return info, deltas
