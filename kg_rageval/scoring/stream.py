"""The one stream of a JSONL file through several families: :func:`stream_families`.

The file is read once, in chunks (:func:`~kg_rageval.records.iter_record_chunks`); each chunk goes
to every family's :class:`FamilyStream`, which scores it (or keeps it waiting for evidence) and
concatenates the chunk results so that they equal the whole-file call; a family that cannot be
streamed exactly raises :class:`StreamFallback` and the caller scores the whole file. With a
Dask client the families' calls on each chunk run on its workers (:func:`_feed_on_client`).
Used by :meth:`~kg_rageval.scoring.bound.BoundScorer.score_path` and the audit.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.results.evaluation_set import EvaluationSet


class StreamFallback(Exception):
    """A family of :func:`stream_families` cannot be scored chunk by chunk with the whole-file
    result guaranteed: it raised on a chunk (an input error, a bug) or held more records without
    evidence than :data:`MAX_PENDING_CHUNKS` chunks. The caller scores the whole file instead
    (which raises the whole-file error, or gives the whole-file result). ``family``: its name;
    the cause is ``__cause__``."""

    def __init__(self, family: str, why: str) -> None:
        super().__init__(f"{family}: {why}")
        self.family = family


MAX_PENDING_CHUNKS = 4
"""Chunks without evidence (:class:`~kg_rageval.base.errors.MissingEvidence`) a family may hold
while waiting for one with evidence before :func:`stream_families` gives up on streaming it
(:class:`StreamFallback`): a file whose records carry a family's section but never anything
it can score is scored whole (and raises the whole-file error)."""


class FamilyStream:
    """One family's share of a stream: its chunk results concatenated (:class:`_SetConcatenation`),
    equal to scoring the whole file at once (the rules of :meth:`~kg_rageval.scoring.bound.BoundScorer.score_path`).

    Given the number of records of a chunk that carry the family's section (``n_sec`` of
    :meth:`feed`), a chunk in which none does is not scored (the family would find no evidence
    in it): it waits, like a chunk that raised :class:`~kg_rageval.base.errors.MissingEvidence`, for
    the next chunk with evidence — but it is not held; it is read again from the file if one
    comes (never, for a family whose section no record has: such a family gets ``result =
    None`` and ``n_with_section = 0``)."""

    def __init__(
        self,
        bound: Any,
        path: str | Path,
        size: int,
        ontology: Any = None,
        spill_rows: int | None = None,
        narrow: Callable[[int, list[Any]], list[Any]] | None = None,
        keep: frozenset[str] | None = None,
    ) -> None:
        self.bound, self.path, self.size, self.ontology = bound, path, size, ontology
        self.keep = keep  # the record keys the stream keeps (iter_record_chunks), also when read again
        self.spill_rows = spill_rows
        self.narrow = narrow  # (k, chunk) -> the records of chunk k this family scores
        self.skip = False
        self.name = bound.scorer.name
        self.out = _SetConcatenation(spill_rows)
        self.last: tuple[Any, int, int] | None = None  # (result, first chunk, last chunk), not yet added
        self.pending: list[Any] | None = []  # records of the chunks waiting for evidence; None: read again
        self.start = 0  # first waiting chunk
        self.n_pending = 0
        self.n_chunks = 0
        self.n_with_section = 0
        self.seconds = 0.0
        self.result: EvaluationSet | None = None

    def _call(self, records: list[Any]) -> EvaluationSet:
        import time

        t0 = time.perf_counter()
        try:
            return self.bound._call(records, self.ontology)
        finally:
            self.seconds += time.perf_counter() - t0

    def _again(self, first: int, end: int) -> list[Any]:
        """The records of chunks ``first .. end - 1``, read again."""
        from kg_rageval.records import iter_record_chunks

        chunks = itertools.islice(iter_record_chunks(self.path, self.size, keep=self.keep), first, end)
        if self.narrow is not None:
            narrow = self.narrow
            return [r for j, ch in enumerate(chunks, first) for r in narrow(j, ch)]
        return [r for ch in chunks for r in ch]

    def feed(
        self,
        k: int,
        chunk: list[Any],
        n_sec: int | None = None,
        done: tuple[EvaluationSet, float] | None = None,
    ) -> None:
        """Score chunk ``k`` (chunks come in file order) or keep it waiting for evidence;
        ``n_sec``: how many of its records carry the family's section (see the class).
        ``done``: ``(result, seconds)`` of this family's call on ``chunk`` alone, made elsewhere
        (a Dask worker: :func:`_feed_on_client`); used when no earlier
        chunk waits for evidence (the call this stream would make), else the batch is scored
        here. ``None`` (also: the call raised there) scores it here, with the rules above."""
        from kg_rageval.base.errors import MissingEvidence

        self.n_chunks = k + 1
        if n_sec is not None:
            self.skip = True
            self.n_with_section += n_sec
            if n_sec == 0:  # nothing to score in it: wait without holding it
                if not self.n_pending:
                    self.start = k
                self.n_pending += 1
                self.pending = None
                return
        if not self.n_pending:
            self.start = k
            batch = chunk
        else:
            held = self.pending if self.pending is not None else self._again(self.start, k)
            batch = held + chunk
            del held
        try:
            if done is not None and batch is chunk:
                res = done[0]
                self.seconds += done[1]
            else:
                res = self._call(batch)
        except MissingEvidence as exc:
            self.n_pending += 1
            if self.n_pending > MAX_PENDING_CHUNKS:
                raise StreamFallback(self.name, f"{self.n_pending} chunks without evidence") from exc
            if self.pending is not None:
                self.pending = batch
            return
        except Exception as exc:  # the whole-file call decides (its error, or its result)
            raise StreamFallback(self.name, "a chunk raised") from exc
        if self.last is not None:
            self.out.add(self.last[0])
        self.last, self.pending, self.n_pending = (res, self.start, k), [], 0

    def finish(self) -> EvaluationSet | None:
        """The concatenated result (``None``: an empty file, or no record with the section
        when section counts were given). Chunks still waiting for evidence join the last scored ones
        (read again), or, when none was scored, the whole file is scored in one call."""
        if self.n_chunks == 0 or (self.skip and self.n_with_section == 0):
            return None
        try:
            if self.n_pending:
                if self.last is None:  # no chunk had evidence: the whole file in one call
                    records = self.pending if self.pending is not None else self._again(0, self.n_chunks)
                    self.pending = None
                    self.last = (self._call(records), 0, self.n_chunks - 1)
                    del records
                else:
                    _, first, end = self.last
                    if self.pending is not None:
                        records = self._again(first, end + 1) + self.pending
                    else:
                        records = self._again(first, self.n_chunks)
                    self.pending = None
                    self.last = (self._call(records), first, self.n_chunks - 1)
                    del records
        except Exception as exc:
            raise StreamFallback(self.name, "the records without evidence raised") from exc
        assert self.last is not None
        self.out.add(self.last[0])
        self.last = None
        self.result = self.out.result(self.name)
        self.out = _SetConcatenation(self.spill_rows)
        return self.result


def stream_families(
    bounds: Mapping[str, Any],
    path: str | Path,
    size: int,
    *,
    ontology: Any = None,
    observers: tuple[Callable[[int, list[Any]], None], ...] = (),
    section_counts: Callable[[int, list[Any]], Mapping[str, int]] | None = None,
    client: Any = None,
    in_flight: int | None = None,
    spill_rows: int | None = None,
    digests: list[bytes] | None = None,
    narrow: Mapping[str, Callable[[int, list[Any]], list[Any]]] | None = None,
) -> dict[str, FamilyStream]:
    """Read the JSONL file ``path`` once, in chunks of ``size`` records
    (:func:`~kg_rageval.records.iter_record_chunks`), and score every chunk with every family
    of ``bounds`` (in that order), each result concatenated as :meth:`~kg_rageval.scoring.bound.BoundScorer.score_path`
    does (:class:`FamilyStream`); ``observers(k, chunk)`` see each chunk first (what else a
    caller keeps of the records). One chunk of record dicts is held at a time, plus the
    columns of the results. ``section_counts(k, chunk)``: ``{family: records of the chunk with
    its section}`` (after the observers): a family is not called on a chunk without its
    section (:class:`FamilyStream`).

    Returns ``{name: FamilyStream}`` (``.result``, ``.n_with_section``, ``.seconds``). Reading
    errors propagate as the whole-file reader raises them; a family that cannot be streamed
    exactly raises :class:`StreamFallback` (the caller scores the whole file). The cyclic
    garbage collector is paused meanwhile (restored afterwards, also on an error): record
    dicts hold no cycles, and the collector's passes over each fresh chunk cost as much as
    scoring it.

    ``client``: a ``distributed.Client``: the chunks are still read (and observed) here, and
    each family's call on each chunk runs on its workers, at most ``in_flight`` chunks at a
    time (default: twice the worker threads); the results are fed back in chunk order, so the
    streams equal the in-process ones (:func:`_feed_on_client`).

    ``spill_rows``: rows of a family's result kept in memory before its numeric columns go to
    a temporary file (:class:`~kg_rageval.results.concatenation.Concatenation`; default
    :data:`~kg_rageval.results.colstore.SPILL_ROWS`, 0: never).

    ``digests``: a list that gets each record's line digest as the file is read
    (:func:`~kg_rageval.records.iter_record_chunks`; the observers see a chunk's as the last
    ``len(chunk)``). ``narrow``: ``{family: narrow(k, chunk)}``, the records of chunk ``k``
    that family scores (a sublist, in order; also when a waiting chunk is read again), its
    section count taken on them: its result is that of the narrowed records (an audit's
    baseline scores only the records that differ from the audited ones: :mod:`kg_rageval.audit.paired_baseline`).
    Not with ``client``.

    Without observers and section counts (a ``score`` command), each record keeps only the
    keys its families read when every one of them declares them
    (:attr:`~kg_rageval.scoring.Scorer.record_keys`, their union): the rest is freed as it is
    read."""
    import gc

    narrow = dict(narrow or {})
    if narrow and client is not None:
        raise ValueError("stream_families: narrow is not supported with a Dask client")
    keep = _kept_keys(bounds) if not observers and section_counts is None else None
    streams = {
        n: FamilyStream(b, path, size, ontology, spill_rows, narrow.get(n), keep) for n, b in bounds.items()
    }
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        chunks = _observed_chunks(path, size, observers, section_counts, digests, keep)
        if client is not None:
            _feed_on_client(client, streams, chunks, in_flight=in_flight)
        else:
            for k, chunk, counts in chunks:
                for name, fs in streams.items():
                    if fs.narrow is None:
                        fs.feed(k, chunk, None if counts is None else counts[name])
                        continue
                    part = fs.narrow(k, chunk)
                    has = fs.bound.scorer.has_section
                    fs.feed(k, part, None if counts is None else sum(1 for r in part if has(r)))
                    del part
                del chunk
        for fs in streams.values():
            fs.finish()
    finally:
        if paused:
            gc.enable()
    return streams


def _kept_keys(bounds: Mapping[str, Any]) -> frozenset[str] | None:
    """The record keys a stream of ``bounds`` keeps: the union of the families'
    :attr:`~kg_rageval.scoring.Scorer.record_keys`, or ``None`` (every key) when one of them
    reads any key."""
    keys: set[str] = set()
    for b in bounds.values():
        ks = b.scorer.record_keys
        if ks is None:
            return None
        keys |= ks
    return frozenset(keys)


def _observed_chunks(
    path: str | Path,
    size: int,
    observers: tuple[Callable[[int, list[Any]], None], ...],
    section_counts: Callable[[int, list[Any]], Mapping[str, int]] | None,
    digests: list[bytes] | None = None,
    keep: frozenset[str] | None = None,
) -> Iterator[tuple[int, list[Any], Mapping[str, int] | None]]:
    """``(k, chunk, section counts or None)`` of each chunk of ``path``, after the observers
    saw it (reading errors propagate as the whole-file reader raises them); the heap is
    trimmed once the caller asks for the next one. ``digests``: see :func:`stream_families`."""
    from kg_rageval.records import iter_record_chunks

    for k, chunk in enumerate(iter_record_chunks(path, size, digests=digests, keep=keep)):
        for see in observers:
            see(k, chunk)
        yield k, chunk, section_counts(k, chunk) if section_counts is not None else None
        del chunk  # the caller has let go of it too (or keeps it while its calls are out)
        _trim_heap()


# ------------------------------------------------------------ the stream on a Dask client
def _score_chunk(bound: Any, ontology: Any, records: list[Any]) -> tuple[Any, float] | None:
    """One family's call on one chunk, on a worker: ``(result, seconds)``, or ``None`` when it
    raised (MissingEvidence or any other error: the client scores the chunk in-process and
    :class:`FamilyStream` decides, exactly as without Dask)."""
    import time

    t0 = time.perf_counter()
    try:
        result = bound._call(records, ontology)
    except Exception:
        return None
    return result, time.perf_counter() - t0


def _feed_on_client(
    client: Any,
    streams: Mapping[str, Any],
    chunks: Iterable[tuple[int, list[Any], Any]],
    *,
    in_flight: int | None = None,
) -> None:
    """Feed ``chunks`` (``(k, chunk, section counts or None)`` in file order, as
    :func:`~kg_rageval.scoring.stream_families` reads them) to ``streams``
    (``{family: FamilyStream}``), each family's call on each chunk made on ``client``'s workers.

    The bound scorers and their ontology are scattered once to every worker (``broadcast``);
    each chunk is scattered once and every family that has its section in it is submitted on
    it. At most ``in_flight`` chunks (default: twice the worker threads) are out at a time
    (record dicts held here: that many chunks); the oldest one's results are fed in chunk order
    with :meth:`FamilyStream.feed` (``done=``), which scores the chunk here instead when a call
    raised on the worker or earlier chunks wait for evidence — so the streams equal the
    in-process ones (a :class:`StreamFallback` propagates; the calls still
    out are cancelled)."""
    from collections import deque
    from dataclasses import replace

    from kg_rageval.base.errors import ConfigError

    limit = in_flight or default_in_flight(client)
    if limit < 1:
        raise ConfigError("in_flight must be at least 1")
    ontologies: dict[int, Any] = {}
    remote: dict[str, tuple[Any, Any]] = {}
    for name, fs in streams.items():
        onto = fs.ontology if fs.ontology is not None else fs.bound.ontology
        if id(onto) not in ontologies:
            ontologies[id(onto)] = client.scatter(onto, broadcast=True, hash=False)
        remote[name] = (replace(fs.bound, ontology=None), ontologies[id(onto)])
    bound_futures = client.scatter([b for b, _ in remote.values()], broadcast=True, hash=False)
    remote = {n: (bf, of) for (n, (_, of)), bf in zip(remote.items(), bound_futures)}
    queue: deque[tuple[int, list[Any], Any, dict[str, Any]]] = deque()

    def drain() -> None:
        k, chunk, counts, futures = queue.popleft()
        for name, fs in streams.items():
            n_sec = None if counts is None else counts[name]
            done = None
            if name in futures:
                try:
                    done = futures[name].result()
                except Exception:
                    done = None
            fs.feed(k, chunk, n_sec, done)

    try:
        for k, chunk, counts in chunks:
            chunk_future = client.scatter([chunk], hash=False)[0]
            futures = {
                name: client.submit(_score_chunk, bf, of, chunk_future, pure=False)
                for name, (bf, of) in remote.items()
                if counts is None or counts[name]
            }
            queue.append((k, chunk, counts, futures))
            del chunk, chunk_future
            while len(queue) >= limit:
                drain()
        while queue:
            drain()
    finally:
        left = [f for *_, futures in queue for f in futures.values()]
        queue.clear()
        if left:
            client.cancel(left)


def default_in_flight(client: Any) -> int:
    """Twice the worker threads of a ``distributed.Client`` (at least 1): the chunks (or
    partitions) kept out at a time by default."""
    try:
        threads = sum(client.nthreads().values())
    except Exception:  # pragma: no cover - a client without workers
        threads = 1
    return max(1, 2 * threads)


def _trim_heap() -> None:
    """Give the memory freed with a chunk back to the system (:func:`kg_rageval.base.memory.trim_heap`).
    Without it a chunk's freed record dicts and arrays stay in the heap, and the result's
    columns come on top: peak memory would be about the result twice over instead of once."""
    from kg_rageval.base.memory import trim_heap

    trim_heap()


class _SetConcatenation:
    """Member-wise :class:`~kg_rageval.results.concatenation.Concatenation` of chunk results."""

    def __init__(self, spill_rows: int | None = None) -> None:
        self.members: dict[str, Any] | None = None
        self.family = ""
        self.spill_rows = spill_rows

    def add(self, result: EvaluationSet) -> None:
        from kg_rageval.results.concatenation import Concatenation

        if self.members is None:
            self.members = {m: Concatenation(self.spill_rows) for m in result}
        elif set(result) != set(self.members):
            raise ValueError(
                f"{result.family}: cannot merge results with members {sorted(self.members)} "
                f"and {sorted(result)}"
            )
        for m, ev in result.items():
            self.members[m].add(ev)

    def result(self, family: str) -> EvaluationSet:
        from kg_rageval.results.evaluation_set import EvaluationSet

        assert self.members is not None
        return EvaluationSet(family, {m: c.result() for m, c in self.members.items()})
