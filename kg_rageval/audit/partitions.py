"""The streamed audit partitioned over a Dask cluster: each worker reads, observes and scores a
byte range of the records file; the client merges the partitions exactly, in file order.

Without partitions (:func:`~kg_rageval.scoring.stream_families` with ``client``) the client
reads and parses every chunk and only the families' calls run on the workers, so the client's
reading is the bound of the audit. Here (:func:`run_partitioned`, the streamed audit of
``run_audit(config, client=client)``):

1. **Plan** (:func:`plan_partitions`, on the client): one pass over the file's bytes counting
   lines finds the byte offset and the line number of every chunk's first record; the chunks
   are grouped into ``partitions`` consecutive byte ranges (line-aligned, whole chunks: every
   partition's chunks are the in-process audit's chunks, numbered the same).
2. **Send once**: the compiled ontology, the bound families (their ontology left out) and what
   the per-record accumulations need (corpus, config, the limits in force) are scattered to
   every worker once (``broadcast``).
3. **Per partition, on a worker** (:func:`audit_partition`): the records of its byte range are
   read in chunks (:func:`~kg_rageval.records.iter_record_chunks` with ``span``, line numbers
   as in the whole file), observed by a :class:`~.stream.StreamedRecords` of its own (ids, line
   numbers, section flags, slice values, coverage and exclusion counts) and scored by every
   family with its section in the chunk: per chunk ``(section counts, {family: (result,
   seconds) or None})`` — the sufficient statistics and result columns of that chunk.
4. **Merge, on the client, in partition order = file order**: the accumulations are joined
   (:meth:`~.stream.StreamedRecords.absorb`: arrays concatenated, counts added, first-seen
   order kept, the first 20 examples), and every chunk's result is fed to the family's
   :class:`~kg_rageval.scoring.stream.FamilyStream` in chunk order, exactly as the in-process
   stream feeds it — a chunk whose call raised on the worker, or that must join earlier chunks
   without evidence, is read again and scored here with the in-process rules. The report is
   therefore the in-process one, byte for byte (``tests/audit/test_audit_partitions.py``).

The partitioned path gives way to the chunk-by-chunk one (same report) when it cannot be exact:
a ``.gz`` file (no byte ranges), a partition that raised on its worker (a reading error, a
duplicate id: the chunk-by-chunk stream raises it as the held reader does), a record count
other than planned (a line the plan took for a record is blank to the reader), or a record id
in two partitions (a duplicate the reader must report).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Span:
    """One partition of a records file: bytes ``[start, end)``, ``lines`` physical lines before
    ``start``, chunks ``first_chunk .. first_chunk + n_chunks - 1`` holding ``n_records``."""

    start: int
    end: int
    lines: int
    first_chunk: int
    n_chunks: int
    n_records: int

    @property
    def read_span(self) -> tuple[int, int, int]:
        """The ``span`` argument of :func:`~kg_rageval.records.iter_record_chunks`."""
        return (self.start, self.end, self.lines)


def plan_partitions(path: str | Path, size: int, partitions: int) -> list[Span] | None:
    """The byte ranges of at most ``partitions`` consecutive groups of whole chunks of ``size``
    records (records: the lines that are not blank), as even in chunks as can be; ``None`` for a
    ``.gz`` file, an empty one or a file of one chunk (nothing to partition). One pass over the
    bytes, no parsing (the plan's record counts are checked against the workers' reads): the
    file is read in blocks of whole lines (:data:`PLAN_BLOCK` bytes and the rest of the last
    line), whose line starts NumPy finds (:func:`_block_records`)."""
    p = Path(path)
    if p.suffix == ".gz" or partitions < 2:
        return None
    starts: list[tuple[int, int]] = []  # (byte offset, lines before) of each chunk's first record
    n = 0  # records so far
    lines = 0  # physical lines so far
    pos = 0
    with open(p, "rb") as fh:
        while True:
            block = fh.read(PLAN_BLOCK)
            if not block:
                break
            if not block.endswith(b"\n"):
                block += fh.readline()  # whole lines only
            offsets, linenos, n_lines = _block_records(block)
            need = (-n) % size  # records of this block before the next chunk's first
            for i in range(need, len(offsets), size):
                starts.append((pos + int(offsets[i]), lines + int(linenos[i])))
            n += len(offsets)
            lines += n_lines
            pos += len(block)
    n_chunks = len(starts)
    if n_chunks < 2:
        return None
    parts = min(partitions, n_chunks)
    bounds = [round(i * n_chunks / parts) for i in range(parts + 1)]
    out = []
    for a, b in itertools.pairwise(bounds):
        end = starts[b][0] if b < n_chunks else pos
        n_rec = (b - a) * size if b < n_chunks else n - a * size
        out.append(Span(starts[a][0], end, starts[a][1], a, b - a, n_rec))
    return out


PLAN_BLOCK = 1 << 20
"""Bytes :func:`plan_partitions` reads at a time (1 MiB, and the rest of the last line: a block stays in the cache)."""

_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[list(b" \t\n\r\x0b\x0c")] = True  # what bytes.strip() strips


def _block_records(block: bytes) -> tuple[np.ndarray, np.ndarray, int]:
    """``(byte offsets, line indexes, physical lines)`` of the records of ``block`` (whole lines,
    the last with or without its newline): a record is a line that ``bytes.strip()`` leaves
    non-empty, as the reader counts them. A line whose first byte is not whitespace is one; the
    few others (a blank line, leading spaces) are stripped one by one."""
    arr = np.frombuffer(block, dtype=np.uint8)
    first = np.flatnonzero(arr == 10) + 1
    n_lines = len(first) + (0 if block.endswith(b"\n") else 1)
    first = np.concatenate(([0], first[:-1] if block.endswith(b"\n") else first))
    lead = _WHITESPACE[arr[first]]
    if not lead.any():
        return first, np.arange(len(first)), n_lines
    keep = ~lead
    for i in np.flatnonzero(lead).tolist():
        a = int(first[i])
        b = int(first[i + 1]) if i + 1 < len(first) else len(block)
        keep[i] = bool(block[a:b].strip())
    idx = np.flatnonzero(keep)
    return first[idx], idx, n_lines


@dataclass
class PartitionResult:
    """What one partition sends back (:func:`audit_partition`): its record index
    (``index``: a :class:`~.stream.StreamedRecords` without its ontology and corpus), per chunk
    ``(section counts, {family: (result, seconds) or None})``, its record count and the worker's
    CPU (thread time) and wall seconds."""

    index: Any
    chunks: list[tuple[dict[str, int], dict[str, Any]]]
    n_records: int
    cpu_seconds: float
    wall_seconds: float
    worker: str = ""


@dataclass
class PartitionContext:
    """What every worker gets once (scattered with ``broadcast``): the bound families (their
    ontology left out), the records file, the chunk size, the family names, the corpus and
    config of the accumulations, and the limits in force on the client."""

    bounds: dict[str, Any]
    path: str
    size: int
    names: list[str]
    corpus: list[dict] | None
    config: Any
    limits: dict[str, int] = field(default_factory=dict)


def audit_partition(
    ctx: PartitionContext, ontology: Any, span: Span, score: Callable[..., Any]
) -> PartitionResult:
    """Read, observe and score partition ``span`` on a worker (see the module docstring);
    ``score``: :func:`kg_rageval.scoring.stream._score_chunk` (the client's, passed along)."""
    from kg_rageval.audit.stream import StreamedRecords
    from kg_rageval.base import limits
    from kg_rageval.records import collector_paused, iter_record_chunks

    t0, c0 = time.perf_counter(), time.thread_time()
    with limits.limits(ctx.limits), collector_paused():
        index = StreamedRecords(Path(ctx.path), ctx.size, ctx.names, ontology, ctx.corpus, ctx.config)
        chunks: list[tuple[dict[str, int], dict[str, Any]]] = []
        n = 0
        for i, chunk in enumerate(iter_record_chunks(ctx.path, ctx.size, span=span.read_span)):
            k = span.first_chunk + i
            index.observe(k, chunk)
            counts = index.section_counts(k, chunk)
            done = {name: score(bound, ontology, chunk) for name, bound in ctx.bounds.items() if counts[name]}
            chunks.append((counts, done))
            n += len(chunk)
            del chunk
        index.detach()
    import os

    return PartitionResult(
        index, chunks, n, time.thread_time() - c0, time.perf_counter() - t0, f"pid {os.getpid()}"
    )


@dataclass
class PartitionStats:
    """How a partitioned audit went: per partition its records, the worker's CPU and wall
    seconds; the client's plan seconds and merge seconds (CPU of the client's thread while it
    joined the partitions and fed the family streams), and its wall seconds in all."""

    records: list[int] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)
    wall_seconds: list[float] = field(default_factory=list)
    plan_seconds: float = 0.0
    merge_cpu_seconds: float = 0.0
    wall: float = 0.0
    stream_cpu_seconds: float = 0.0
    stream_main_cpu_seconds: float = 0.0
    receive_cpu_seconds: float = 0.0


LAST_STATS: PartitionStats | None = None
"""The :class:`PartitionStats` of the last partitioned audit in this process (benchmarks read it)."""


def run_partitioned(
    client: Any,
    view: Any,
    bounds: Mapping[str, Any],
    ontology: Any,
    corpus: list[dict] | None,
    config: Any,
    *,
    partitions: int | None = None,
    spill_rows: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any] | None:
    """The streamed audit's families on ``view.path`` partitioned over ``client``'s workers:
    ``{family: FamilyStream}`` finished, ``view`` (a fresh :class:`~.stream.StreamedRecords`)
    holding the merged accumulations — or ``None`` when the partitioned path cannot be exact
    (see the module docstring; ``view`` is then left unusable: the caller streams afresh).
    :class:`~kg_rageval.scoring.StreamFallback` from a family stream propagates (the caller
    holds the records, as without partitions). ``partitions``: default twice the workers'
    threads."""
    import gc
    from dataclasses import replace

    from kg_rageval.base import limits
    from kg_rageval.scoring import stream as scoring_stream
    from kg_rageval.scoring.stream import FamilyStream, default_in_flight

    global LAST_STATS
    stats = PartitionStats()
    w0, p0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
    t0 = time.perf_counter()
    spans = plan_partitions(view.path, view.size, partitions or default_in_flight(client))
    stats.plan_seconds = time.perf_counter() - t0
    if spans is None:
        return None
    onto_future = client.scatter(ontology, broadcast=True, hash=False)
    ctx = PartitionContext(
        {n: replace(b, ontology=None) for n, b in bounds.items()},
        str(view.path),
        view.size,
        list(view.families),
        corpus,
        config,
        dict(limits._overrides),
    )
    ctx_future = client.scatter(ctx, broadcast=True, hash=False)
    score = scoring_stream._score_chunk
    futures = [client.submit(audit_partition, ctx_future, onto_future, s, score, pure=False) for s in spans]
    streams = {n: FamilyStream(b, view.path, view.size, None, spill_rows) for n, b in bounds.items()}
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        for span, fut in zip(spans, futures):
            try:
                r0 = time.thread_time()
                part: PartitionResult = fut.result()
                stats.receive_cpu_seconds += time.thread_time() - r0
            except Exception:
                return None  # the chunk-by-chunk stream raises it as the held reader does
            if part.n_records != span.n_records or len(part.chunks) != span.n_chunks:
                return None
            c0 = time.thread_time()
            view.absorb(part.index)
            _feed(streams, span, part.chunks)
            stats.merge_cpu_seconds += time.thread_time() - c0
            stats.records.append(part.n_records)
            stats.cpu_seconds.append(part.cpu_seconds)
            stats.wall_seconds.append(part.wall_seconds)
            fut.release()
            del part
            if progress is not None:
                progress(span.n_records)
        c0 = time.thread_time()
        ids = view.id_array()
        if len(np.unique(ids)) != len(ids):
            return None  # a duplicate id across partitions: the reader names it
        for fs in streams.values():
            fs.finish()
        stats.merge_cpu_seconds += time.thread_time() - c0
    finally:
        if paused:
            gc.enable()
        left = [f for f in futures if f.status == "pending"]
        if left:
            client.cancel(left)
    stats.wall = time.perf_counter() - w0
    stats.stream_cpu_seconds = time.process_time() - p0
    stats.stream_main_cpu_seconds = time.thread_time() - m0
    LAST_STATS = stats
    return streams


def _feed(
    streams: Mapping[str, Any], span: Span, chunks: list[tuple[dict[str, int], dict[str, Any]]]
) -> None:
    """Feed one partition's chunk results to the family streams in chunk order; a chunk's
    records are read again (from its partition's byte range) only where the stream scores it
    here (the call raised on the worker, or earlier chunks wait for evidence)."""
    from kg_rageval.records import iter_record_chunks

    for i, (counts, done) in enumerate(chunks):
        k = span.first_chunk + i
        records: list[Any] | None = None
        for name, fs in streams.items():
            n_sec = counts[name]
            got = done.get(name)
            if n_sec and (got is None or fs.n_pending):
                if records is None:
                    chunk_iter = iter_record_chunks(fs.path, fs.size, span=span.read_span)
                    records = next(itertools.islice(chunk_iter, i, None))
                fs.feed(k, records, n_sec, got)
            else:
                fs.feed(k, [], n_sec, got)
