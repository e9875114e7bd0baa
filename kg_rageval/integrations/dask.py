"""Scale a metric family out over partitioned records on ``dask.distributed``.

Every family scores into an :class:`~kg_rageval.results.evaluation.Evaluation` of additive per-row
statistics, so scoring partitions independently and concatenating them
(:meth:`Evaluation.merge`) gives exactly the single-process result: the same rows in the same
order, the same totals, breakdowns, roll-ups and bootstrap intervals (records are split into
*contiguous* partitions and merged back in partition order).

``score_distributed("generation", ontology, records, client=client, judgments=...)`` scores any
registered family by name (or a :class:`~kg_rageval.scoring.Scorer`): its options are
validated and its inputs (corpus, spec, judgments) read once on the client, exactly as
``Scorer.score`` does, and the merged :class:`~kg_rageval.results.evaluation_set.EvaluationSet` equals the
in-process ``scorer.score(ontology, records, **opts)``. A plain scoring function
``f(ontology, records, **opts) -> Evaluation`` works too. The ontology is scattered once to
every worker (``broadcast=True``) and each partition is scored where its records are. Two
result shapes:

* ``collect="rows"`` (default): the merged :class:`Evaluation`, identical to
  ``score_fn(ontology, records, **opts)``;
* ``collect="totals"``: only the summed statistics per partition come back (a few numbers, not
  millions of rows) and :func:`score_totals` returns ``(family, sums, n_rows, unscored)`` —
  enough for the headline metrics (``family.finalize(sums)``) when rows, breakdowns and
  bootstrap are not needed.

Partition-level functions must be importable by the workers (a module-level function, not a
lambda defined in ``__main__`` on a remote cluster; a ``LocalCluster`` with processes pickles
by value with cloudpickle, so test-local functions work there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kg_rageval.base.errors import ConfigError
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.evaluation_set import EvaluationSet
from kg_rageval.scoring.bound import BoundScorer

ScoreFn = Callable[..., Evaluation]


def partition(records: Sequence[Any], npartitions: int) -> list[Sequence[Any]]:
    """Split ``records`` into ``npartitions`` contiguous, nearly equal slices (order kept;
    empty slices are dropped)."""
    if npartitions < 1:
        raise ConfigError("npartitions must be at least 1")
    n = len(records)
    npartitions = min(npartitions, max(n, 1))
    base, extra = divmod(n, npartitions)
    out, start = [], 0
    for k in range(npartitions):
        stop = start + base + (1 if k < extra else 0)
        if stop > start:
            out.append(records[start:stop])
        start = stop
    return out or [records[:0]]


def merge_all(evaluations: Sequence[Any]) -> Any:
    """Merge partitions in order; the same as folding :meth:`Evaluation.merge` left to right
    (:func:`~kg_rageval.results.evaluation.concat_evaluations`: each column copied once)."""
    from kg_rageval.results.evaluation import concat_evaluations
    from kg_rageval.results.evaluation_set import concat_sets

    items = list(evaluations)
    if not items:
        raise ValueError("nothing to merge")
    if isinstance(items[0], EvaluationSet):
        return concat_sets(items)
    return concat_evaluations(items)


def _score_part(score_fn: ScoreFn, ontology: Any, records: Any, opts: dict) -> Any:
    if isinstance(score_fn, BoundScorer):
        return score_fn(records, ontology)
    return score_fn(ontology, records, **opts)


def _as_fn(score_fn: Any, ontology: Any, opts: dict) -> tuple[Any, dict]:
    """A family name or Scorer becomes a :class:`BoundScorer` (options validated, inputs read
    once, without the ontology, which travels separately); a function stays as it is."""
    from kg_rageval.scoring import Scorer, get_scorer

    if isinstance(score_fn, (str, Scorer)):
        bound = get_scorer(score_fn).bind(ontology, **opts)
        bound.ontology = None
        return bound, {}
    return score_fn, opts


@dataclass
class PartTotals:
    """What one partition sends back in ``collect="totals"`` mode."""

    family: Any
    sums: dict[str, float]
    n_rows: int
    unscored: list[dict[str, str]] = field(default_factory=list)


def _score_part_totals(score_fn: ScoreFn, ontology: Any, records: Any, opts: dict) -> PartTotals:
    ev = _score_part(score_fn, ontology, records, opts)
    if isinstance(ev, EvaluationSet):
        ev = ev.single
    return PartTotals(ev.family, ev.totals(), len(ev), list(ev.unscored))


def _default_npartitions(client: Any) -> int:
    from kg_rageval.scoring.stream import default_in_flight

    return default_in_flight(client)


def _reads_files_only(score_fn: Any) -> bool:
    """Whether ``score_fn`` is a family whose evidence is its input files (no record section,
    e.g. ``trec``): partitions of the records would each count the files again, so it is
    scored once, in one partition (its numbers were 3x with 3 partitions)."""
    from kg_rageval.scoring import Scorer, get_scorer

    return isinstance(score_fn, (str, Scorer)) and not get_scorer(score_fn).sections


def _submit(score_fn, ontology, records, *, client, npartitions, part_fn, opts):
    whole = _reads_files_only(score_fn)
    score_fn, opts = _as_fn(score_fn, ontology, opts)
    if client is None:
        from distributed import get_client

        client = get_client()  # raises ValueError when there is none
    if whole:
        parts = Partitions([[r for p in records for r in p] if _is_partitioned(records) else list(records)])
    else:
        parts = (
            records
            if _is_partitioned(records)
            else partition(records, npartitions or _default_npartitions(client))
        )
    onto_future = client.scatter(ontology, broadcast=True, hash=False)
    part_futures = client.scatter(list(parts), hash=False)
    futures = [client.submit(part_fn, score_fn, onto_future, pf, opts, pure=False) for pf in part_futures]
    return client.gather(futures)


class Partitions(list):
    """Records already split into partitions (a list of sequences) — passed as they are."""


def _is_partitioned(records: Any) -> bool:
    return isinstance(records, Partitions)


def score_distributed(
    score_fn: ScoreFn | str | Any,
    ontology: Any,
    records: Sequence[Any] | Partitions,
    *,
    client: Any = None,
    npartitions: int | None = None,
    **opts: Any,
) -> Any:
    """Score ``records`` with a family (a registered name or a Scorer: the result is an
    :class:`EvaluationSet`) or ``score_fn(ontology, part, **opts)`` on a Dask cluster, and merge.

    ``client``: a ``distributed.Client`` (default: the current one). ``records``: a sequence
    (split into ``npartitions`` contiguous slices, default twice the worker threads) or a
    :class:`Partitions` list. The result equals ``score_fn(ontology, records, **opts)``.
    """
    parts = _submit(
        score_fn, ontology, records, client=client, npartitions=npartitions, part_fn=_score_part, opts=opts
    )
    return merge_all(parts)


def score_totals(
    score_fn: ScoreFn,
    ontology: Any,
    records: Sequence[Any] | Partitions,
    *,
    client: Any = None,
    npartitions: int | None = None,
    **opts: Any,
) -> tuple[Any, dict[str, float], int, list[dict[str, str]]]:
    """Like :func:`score_distributed` but only the summed statistics travel back:
    ``(family, sums, n_rows, unscored)``; ``family.finalize(sums)`` gives the metrics of the
    single-process ``Evaluation.metrics()`` — exactly for integer counts, up to floating-point
    summation order for fractional statistics (partition sums are added in partition order)."""
    parts: list[PartTotals] = _submit(
        score_fn,
        ontology,
        records,
        client=client,
        npartitions=npartitions,
        part_fn=_score_part_totals,
        opts=opts,
    )
    family = parts[0].family
    names = list(parts[0].sums)
    sums = {k: float(sum(p.sums.get(k, 0.0) for p in parts)) for k in names}
    unscored = [u for p in parts for u in p.unscored]
    return family, sums, sum(p.n_rows for p in parts), unscored


def local_client(n_workers: int = 2, threads_per_worker: int = 1, **kw: Any):
    """A ``LocalCluster`` client bound to loopback (scheduler, workers and its HTTP server on
    free ports), for tests and benchmarks."""
    from distributed import Client, LocalCluster

    kw.setdefault("processes", True)
    kw.setdefault("dashboard_address", "127.0.0.1:0")  # loopback: ":0" would listen on every interface
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, host="127.0.0.1", **kw)
    return Client(cluster)


def iter_partitions(records: Iterable[Any], size: int) -> Partitions:
    """Chunk an iterable (e.g. a JSONL reader) into :class:`Partitions` of ``size`` records."""
    if size < 1:
        raise ConfigError("size must be at least 1")
    out, cur = Partitions(), []
    for r in records:
        cur.append(r)
        if len(cur) == size:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


@contextmanager
def audit_client(scheduler: str | None = None, workers: int | None = None) -> Iterator[Any]:
    """The Dask client of ``kg-rageval audit --dask-scheduler ADDRESS`` (connects
    ``distributed.Client(ADDRESS)``) or ``--dask-workers N`` (a :func:`local_client` of ``N``
    one-thread worker processes, closed on the way out); ``None`` when neither is given."""
    if scheduler is not None and workers is not None:
        raise ConfigError("give --dask-scheduler or --dask-workers, not both")
    if scheduler is None and workers is None:
        yield None
        return
    try:
        import distributed
    except ImportError as exc:
        raise ConfigError("the Dask options need dask.distributed: pip install 'kg-rageval[dask]'") from exc
    if workers is not None:
        if workers < 1:
            raise ConfigError("--dask-workers must be at least 1")
        client = local_client(n_workers=workers, threads_per_worker=1)
    else:
        try:
            client = distributed.Client(scheduler, timeout=30)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ConfigError(
                f"--dask-scheduler {scheduler}: cannot connect ({type(exc).__name__}: {exc})"
            ) from exc
    try:
        yield client
    finally:
        cluster = client.cluster if workers is not None else None
        client.close()
        if cluster is not None:
            cluster.close()
