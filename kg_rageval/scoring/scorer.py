"""The scorer protocol: how every metric family is declared and called.

A :class:`Scorer` is the one declaration of a family: its scoring function
(``"module:function"``, imported lazily), the record sections that are its evidence, its
extra inputs (corpus, spec, judgments: :class:`Input`, each with its own reader), its
parameters (:class:`~kg_rageval.contract.params.Param`) and its metrics
(:class:`~kg_rageval.contract.metrics.MetricSpec`). Every family is called the same way::

    result = scorer.score(ontology, records, corpus="corpus.jsonl", k=[1, 10])

and returns one :class:`~kg_rageval.results.evaluation.EvaluationSet` (one or several named
:class:`~kg_rageval.results.evaluation.Evaluation` objects). The scoring function behind it is called
as ``fn(ontology, records, **inputs, **params)`` with *every* declared parameter (declared
defaults filled in), so the declaration is the only place a default lives.

:meth:`Scorer.bind` validates the options and reads the inputs once, and returns a
:class:`BoundScorer` — a picklable ``records -> EvaluationSet`` callable used for partitions
(Dask) and for the baseline run of an audit.

**Streaming.** Given a JSONL path, a :class:`BoundScorer` reads it in chunks
(:func:`kg_rageval.records.iter_record_chunks`), scores each chunk and concatenates the chunk
results (:func:`kg_rageval.results.evaluation.concat_sets`), so one chunk of record dicts is held at a
time, not the file. The result equals scoring the whole list at once (rows, stats, keys,
unscored records, meta, errors): every family's rows depend only on their own record, and
what depends on all of them is set again on the concatenation (``meta`` order and
:attr:`~kg_rageval.results.evaluation.Family.additive_meta`, :meth:`~kg_rageval.results.evaluation.Family.complete`).
A family whose result depends on several records at once in another way declares
``streamable=False`` and gets the whole list.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

from kg_rageval.base.errors import ConfigError
from kg_rageval.base.imports import import_target
from kg_rageval.contract.metrics import MetricSpec
from kg_rageval.contract.params import Param, did_you_mean, validate_options

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.results.evaluation import EvaluationSet


@dataclass(frozen=True)
class Input:
    """An extra input file of a family (``corpus``, ``spec``, ``judgments``).

    ``loader`` (``"module:function"``) reads it: called as ``loader(path, ontology, options)``
    with the family's validated options (so loader options such as retrieval's
    ``category_field`` are family parameters). An input passed as an already loaded object is
    used as it is. ``required``: without it the family cannot run (the audit reports it as
    ``missing_input``; a library call raises :class:`ConfigError`). On the command line the
    input is ``--<name>`` (plus ``flags``); in the audit config it is the top-level key
    ``<name>``."""

    name: str
    help: str
    loader: str | None = None
    required: bool = False
    flags: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def load(self, value: Any, ontology: Any, options: Mapping[str, Any]) -> Any:
        if self.loader is None or not isinstance(value, (str, Path)):
            return value
        return _import(self.loader)(value, ontology, options)


def _import(target: str) -> Callable[..., Any]:
    return import_target(target)


class FamilyUnavailable(Exception):
    """The family's module is not importable (not installed / not written yet)."""


@dataclass(frozen=True)
class Scorer:
    """One metric family's declaration (see the module docstring).

    ``members``: the names (``Family.name``) of the evaluations the function returns, in order;
    default ``(name,)``. ``template_values(options)`` gives, for each numeric placeholder of a
    metric template (``recall@{k}``), the values the configured options produce (so
    ``recall@20`` with ``k: [1, 10]`` is a configuration error, not missing evidence)."""

    name: str
    target: str
    sections: tuple[str, ...]
    params: tuple[Param, ...] = ()
    inputs: tuple[Input, ...] = ()
    metrics: tuple[MetricSpec, ...] = ()
    description: str = ""
    members: tuple[str, ...] = ()
    opt_in: bool = False
    """Run by the audit only when its config's ``families`` names it (not in "all families")."""
    streamable: bool = True
    """The function's result on a list of records equals the concatenation of its results on
    consecutive chunks of it (each row depends on its own record; ``meta`` combines as
    :attr:`Family.additive_meta` says). ``False``: a JSONL path is read whole and scored in
    one call (results that compare or group records, or read extra inputs per run)."""
    chunk_size: int | None = None
    """Records per streamed chunk when the caller names none (``None``:
    :data:`~kg_rageval.records.DEFAULT_CHUNK_SIZE`). Memory, not the result, depends on it: a
    family whose records parse into large dicts holds fewer of them at a time."""
    template_values: Callable[[Mapping[str, Any]], Mapping[str, set[str]]] | None = field(
        default=None, compare=False)

    # ---------------------------------------------------------------- declaration
    @property
    def member_names(self) -> tuple[str, ...]:
        return self.members or (self.name,)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def input(self, name: str) -> Input:
        for i in self.inputs:
            if i.name == name:
                return i
        raise KeyError(name)

    @property
    def required_inputs(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs if i.required)

    def find_metric(self, metric: str) -> tuple[MetricSpec, dict[str, str]] | None:
        """The declared metric whose template matches ``metric`` and the placeholder values."""
        for spec in self.metrics:
            got = spec.match(metric)
            if got is not None:
                return spec, got
        return None

    def metric_names(self, options: Mapping[str, Any] | None = None) -> list[str]:
        """Concrete metric names under ``options`` (defaults when ``None``)."""
        opts = self.validate({} if options is None else options)
        values = self.template_values(opts) if self.template_values else {}
        out: list[str] = []
        for spec in self.metrics:
            if spec.applies(opts):
                out.extend(spec.expand(values))
        return out

    def has_section(self, record: Mapping[str, Any]) -> bool:
        return any(record.get(s) is not None for s in self.sections)

    # ---------------------------------------------------------------- calling
    def validate(self, options: Mapping[str, Any], *, where: str | None = None,
                 library: bool = False) -> dict[str, Any]:
        """Every declared parameter's value (defaults filled in); an unknown option or bad
        value raises :class:`ConfigError` naming ``<where>.<key>`` (default
        ``families.<name>``)."""
        return validate_options(self.params, options, where=where or f"families.{self.name}", library=library)

    def load(self) -> Callable[..., Any]:
        try:
            return _import(self.target)
        except (ImportError, AttributeError) as exc:
            raise FamilyUnavailable(f"family {self.name!r} is not available ({self.target}: {exc})") from None

    def bind(self, ontology: Any, *, where: str | None = None, **kwargs: Any) -> "BoundScorer":
        """Validate options, read inputs (paths through their loaders), return the callable."""
        inputs_given = {i.name: kwargs.pop(i.name) for i in self.inputs if i.name in kwargs}
        opts = self.validate(kwargs, where=where or self.name, library=True)
        for i in self.inputs:
            if i.required and inputs_given.get(i.name) is None:
                raise ConfigError(f"{self.name}: needs the {i.name!r} input ({i.help})"
                                  + did_you_mean(i.name, kwargs))
        loaded = {n: self.input(n).load(v, ontology, opts) for n, v in inputs_given.items() if v is not None}
        fn_opts = {p.name: opts[p.name] if p.loader is None or opts[p.name] is None
                   else _import(p.loader)(opts[p.name], ontology, opts)
                   for p in self.params if p.input is None}
        return BoundScorer(self, ontology, loaded, fn_opts)

    def score(self, ontology: Any, records: Any, *, chunk_size: int | None = None,
              **kwargs: Any) -> "EvaluationSet":
        """Score ``records`` (dicts, or a JSONL path, read in chunks of ``chunk_size``):
        ``bind(ontology, **kwargs)(records, chunk_size=chunk_size)``."""
        return self.bind(ontology, **kwargs)(records, chunk_size=chunk_size)


@dataclass
class BoundScorer:
    """A family with validated options and loaded inputs: ``bound(records) -> EvaluationSet``.
    Picklable (Dask sends it to the workers).

    ``records``: a list of record dicts (scored in one call) or a JSONL path, streamed in
    chunks of ``chunk_size`` records (default: the family's :attr:`Scorer.chunk_size`, else
    :data:`~kg_rageval.records.DEFAULT_CHUNK_SIZE`) when the family is ``streamable``
    (see :meth:`score_path`)."""

    scorer: Scorer
    ontology: Any
    inputs: dict[str, Any]
    options: dict[str, Any]

    def __call__(self, records: Any, ontology: Any = None, *,
                 chunk_size: int | None = None) -> "EvaluationSet":
        if isinstance(records, (str, Path)):
            return self.score_path(records, ontology, chunk_size=chunk_size)
        return self._call(records, ontology)

    def _call(self, records: Any, ontology: Any) -> "EvaluationSet":
        from kg_rageval.results.evaluation import as_evaluation_set

        fn = self.scorer.load()
        onto = self.ontology if ontology is None else ontology
        result = fn(onto, records, **self.inputs, **self.options)
        return as_evaluation_set(self.scorer.name, result)

    def score_whole(self, path: str | Path, ontology: Any = None) -> "EvaluationSet":
        """Read every record of ``path`` (:func:`~kg_rageval.records.read_records`) and score
        them in one call; an empty file raises :class:`InputError` ("no records to score")."""
        from kg_rageval.base.errors import InputError
        from kg_rageval.records import read_records

        records = read_records(path)
        if not records:
            raise InputError("no records to score", source=str(path))
        return self._call(records, ontology)

    def score_path(self, path: str | Path, ontology: Any = None, *,
                   chunk_size: int | None = None) -> "EvaluationSet":
        """Score a JSONL file chunk by chunk; the result equals :meth:`score_whole`'s.

        Each chunk of ``chunk_size`` records is scored on its own and its result appended to
        growing columns (:class:`~kg_rageval.results.evaluation.Concatenation`, equal to
        :func:`~kg_rageval.results.evaluation.concat_evaluations` of the chunk results), so the record
        dicts of one chunk and the columns of the result are held, not the file. Equality with
        the whole-file call:

        * reading errors (bad JSON, missing or duplicate ids) are raised as the whole-file
          reader raises them (:func:`~kg_rageval.records.iter_record_chunks`);
        * a chunk without evidence (the family raises
          :class:`~kg_rageval.base.errors.MissingEvidence`, e.g. no record has the section) is
          scored together with the next chunk, or at the end of the file with the last scored
          one (read again); a file without evidence raises the whole-file error;
        * any other error of a family on a chunk (an unknown id, a malformed section) makes
          the whole file be scored at once, so the error is the one the whole-file call raises
          (families check all records in phases: the first malformed record in the file,
          then ids, counting every place); so do more than :data:`MAX_PENDING_CHUNKS` chunks
          in a row without evidence;
        * a family that is not ``streamable`` is scored with :meth:`score_whole`.

        The chunks are read and scored by :func:`stream_families` (the one stream, shared
        with the audit, which feeds each chunk to all its families). The cyclic garbage
        collector is paused meanwhile (restored afterwards, also on an error), as
        :func:`~kg_rageval.records.iter_record_chunks` pauses it while reading.
        """
        from kg_rageval.base.errors import InputError
        from kg_rageval.records import DEFAULT_CHUNK_SIZE

        size = (self.scorer.chunk_size or DEFAULT_CHUNK_SIZE) if chunk_size is None else chunk_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"chunk_size must be a positive integer, not {chunk_size!r}")
        if not self.scorer.streamable:
            return self.score_whole(path, ontology)
        try:
            result = stream_families({self.scorer.name: self}, path, size, ontology=ontology)[self.scorer.name].result
        except StreamFallback:  # the whole-file call raises the family's error (or scores it)
            return self.score_whole(path, ontology)
        if result is None:  # an empty file
            raise InputError("no records to score", source=str(path))
        return result


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
    equal to scoring the whole file at once (the rules of :meth:`BoundScorer.score_path`).

    Given the number of records of a chunk that carry the family's section (``n_sec`` of
    :meth:`feed`), a chunk in which none does is not scored (the family would find no evidence
    in it): it waits, like a chunk that raised :class:`~kg_rageval.base.errors.MissingEvidence`, for
    the next chunk with evidence — but it is not held; it is read again from the file if one
    comes (never, for a family whose section no record has: such a family gets ``result =
    None`` and ``n_with_section = 0``)."""

    def __init__(self, bound: BoundScorer, path: str | Path, size: int, ontology: Any = None,
                 spill_rows: int | None = None) -> None:
        self.bound, self.path, self.size, self.ontology = bound, path, size, ontology
        self.spill_rows = spill_rows
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
        self.result: "EvaluationSet | None" = None

    def _call(self, records: list[Any]) -> "EvaluationSet":
        import time

        t0 = time.perf_counter()
        try:
            return self.bound._call(records, self.ontology)
        finally:
            self.seconds += time.perf_counter() - t0

    def _again(self, first: int, end: int) -> list[Any]:
        """The records of chunks ``first .. end - 1``, read again."""
        from kg_rageval.records import iter_record_chunks

        return [r for ch in itertools.islice(iter_record_chunks(self.path, self.size), first, end) for r in ch]

    def feed(self, k: int, chunk: list[Any], n_sec: int | None = None,
             done: tuple["EvaluationSet", float] | None = None) -> None:
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

    def finish(self) -> "EvaluationSet | None":
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


def stream_families(bounds: Mapping[str, BoundScorer], path: str | Path, size: int, *,
                    ontology: Any = None, observers: tuple[Callable[[int, list[Any]], None], ...] = (),
                    section_counts: Callable[[int, list[Any]], Mapping[str, int]] | None = None,
                    client: Any = None, in_flight: int | None = None, spill_rows: int | None = None
                    ) -> dict[str, FamilyStream]:
    """Read the JSONL file ``path`` once, in chunks of ``size`` records
    (:func:`~kg_rageval.records.iter_record_chunks`), and score every chunk with every family
    of ``bounds`` (in that order), each result concatenated as :meth:`BoundScorer.score_path`
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
    a temporary file (:class:`~kg_rageval.results.evaluation.Concatenation`; default
    :data:`~kg_rageval.results.colstore.SPILL_ROWS`, 0: never)."""
    import gc

    streams = {n: FamilyStream(b, path, size, ontology, spill_rows) for n, b in bounds.items()}
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        chunks = _observed_chunks(path, size, observers, section_counts)
        if client is not None:
            _feed_on_client(client, streams, chunks, in_flight=in_flight)
        else:
            for k, chunk, counts in chunks:
                for name, fs in streams.items():
                    fs.feed(k, chunk, None if counts is None else counts[name])
                del chunk
        for fs in streams.values():
            fs.finish()
    finally:
        if paused:
            gc.enable()
    return streams


def _observed_chunks(path: str | Path, size: int, observers: tuple[Callable[[int, list[Any]], None], ...],
                     section_counts: Callable[[int, list[Any]], Mapping[str, int]] | None
                     ) -> Iterator[tuple[int, list[Any], Mapping[str, int] | None]]:
    """``(k, chunk, section counts or None)`` of each chunk of ``path``, after the observers
    saw it (reading errors propagate as the whole-file reader raises them); the heap is
    trimmed once the caller asks for the next one."""
    from kg_rageval.records import iter_record_chunks

    for k, chunk in enumerate(iter_record_chunks(path, size)):
        for see in observers:
            see(k, chunk)
        yield k, chunk, section_counts(k, chunk) if section_counts is not None else None
        del chunk  # the caller has let go of it too (or keeps it while its calls are out)
        _trim_heap()


# ------------------------------------------------------------ the stream on a Dask client
def _score_chunk(bound: BoundScorer, ontology: Any, records: list[Any]) -> tuple[Any, float] | None:
    """One family's call on one chunk, on a worker: ``(result, seconds)``, or ``None`` when it
    raised (MissingEvidence or any other error: the client scores the chunk in-process and
    :class:`FamilyStream` decides, exactly as without Dask)."""
    import time

    t0 = time.perf_counter()
    try:
        result = bound._call(records, ontology)
    except Exception:  # noqa: BLE001 — decided on the client
        return None
    return result, time.perf_counter() - t0


def _feed_on_client(client: Any, streams: Mapping[str, Any], chunks: Iterable[tuple[int, list[Any], Any]], *,
                 in_flight: int | None = None) -> None:
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
                except Exception:  # noqa: BLE001 — a lost worker: scored here
                    done = None
            fs.feed(k, chunk, n_sec, done)

    try:
        for k, chunk, counts in chunks:
            chunk_future = client.scatter([chunk], hash=False)[0]
            futures = {name: client.submit(_score_chunk, bf, of, chunk_future, pure=False)
                       for name, (bf, of) in remote.items() if counts is None or counts[name]}
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
    """Member-wise :class:`~kg_rageval.results.evaluation.Concatenation` of chunk results."""

    def __init__(self, spill_rows: int | None = None) -> None:
        self.members: dict[str, Any] | None = None
        self.family = ""
        self.spill_rows = spill_rows

    def add(self, result: "EvaluationSet") -> None:
        from kg_rageval.results.evaluation import Concatenation

        if self.members is None:
            self.members = {m: Concatenation(self.spill_rows) for m in result}
        elif set(result) != set(self.members):
            raise ValueError(f"{result.family}: cannot merge results with members {sorted(self.members)} "
                             f"and {sorted(result)}")
        for m, ev in result.items():
            self.members[m].add(ev)

    def result(self, family: str) -> "EvaluationSet":
        from kg_rageval.results.evaluation import EvaluationSet

        assert self.members is not None
        return EvaluationSet(family, {m: c.result() for m, c in self.members.items()})
