"""``monitor ingest`` on a Dask cluster: the window aggregation partitioned over workers.

``ingest(store, traffic, onto, client=client)`` (``kg-rageval monitor ingest --dask-scheduler
ADDRESS`` / ``--dask-workers N``):

1. **Plan, on the client**: every records file is split into line-aligned byte ranges of whole
   chunks (:func:`~kg_rageval.audit.partitions.plan_partitions`, the audit's plan: one pass
   over the bytes, no parsing, each range's line number in the whole file); a ``.gz`` file or a
   file of one chunk is one partition. The partitions are spread over the files in proportion
   to their sizes.
2. **Per partition, on a worker** (:func:`stage_partition`): the records of its range are read
   (:func:`~kg_rageval.records.iter_record_chunks` with ``span``: line numbers as in the whole
   file), each made stage values by :func:`~kg_rageval.monitor.staging.record_values_maker`
   and staged by the store's own ``_Stage`` in an in-memory DuckDB of the worker, exactly as
   the in-process record-by-record ingest stages them. What comes back is plain tables
   (:class:`~kg_rageval.monitor.store.StagedPart`): the partial sums per cell, the latencies in
   file order, the bottom-k embedding sample per window and branch, the embedding models, and
   the record ids.
3. **Merge, on the client, in partition order = file order** (``_Stage.absorb``): the sums add,
   the latencies are concatenated, the embedding samples are joined and cut to the bottom-k
   again (the bottom-k of a union is the bottom-k of the parts' bottom-ks: the same sample),
   record ids are checked for duplicates across the partitions of a file. Then the store is
   written as in-process: one transaction per window, nothing before the whole input is read.

The merged store is the in-process one: the same windows, counts, concept counts, raw latency
values and embedding sample; the float sums (``latency_sum``, ``cost_sum``, ``cost_sq``) are
added in another order, so they agree to rounding (as DuckDB's own parallel sums do).

The client reads the input in-process instead (``None`` from :func:`ingest_partitioned`) when
a partition raised on its worker (a bad record, a duplicate id within it), a partition read a
record count other than planned, or a record id occurs in two partitions of one file: the
in-process reader then raises the error naming the file, line and field of the *first* bad
record, which a partition cannot know on its own. A valid input is read once, on the workers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg_rageval.monitor.traffic import Windowing


@dataclass(frozen=True)
class IngestTask:
    """What every worker gets once (scattered with ``broadcast``)."""

    window: str
    branch_depth: int
    branches: list[str] | None
    reservoir: int
    seed: int
    chunk_rows: int
    limits: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class IngestPart:
    """One partition: a file, its byte range (``None``: the whole file) and planned records."""

    path: str
    span: tuple[int, int, int] | None
    n_records: int | None


LAST_STATS: dict[str, Any] = {}
"""The last partitioned ingest: partitions, per partition its records and worker CPU seconds."""


def plan_ingest(files: Sequence[Path], chunk_rows: int, partitions: int) -> list[IngestPart]:
    """The partitions of ``files`` (see the module docstring)."""
    from kg_rageval.audit.partitions import plan_partitions

    sizes = [max(f.stat().st_size, 1) for f in files]
    total = sum(sizes)
    out: list[IngestPart] = []
    for f, size in zip(files, sizes, strict=True):
        want = max(1, round(partitions * size / total))
        spans = plan_partitions(f, chunk_rows, want) if want > 1 else None
        if spans is None:
            out.append(IngestPart(str(f), None, None))
        else:
            out.extend(IngestPart(str(f), s.read_span, s.n_records) for s in spans)
    return out


def stage_partition(task: IngestTask, ontology: Any, part: IngestPart, stage_cls: Any) -> Any:
    """Stage one partition on a worker; a :class:`~kg_rageval.monitor.store.StagedPart`.
    ``stage_cls``: the store's ``_Stage`` (passed along: this module does not import the store,
    which imports it)."""
    import duckdb
    import pyarrow as pa

    from kg_rageval.base import limits
    from kg_rageval.monitor.staging import record_values_maker
    from kg_rageval.records import iter_record_chunks

    c0 = time.thread_time()
    con = duckdb.connect()
    try:
        with limits.limits(task.limits):
            values = record_values_maker(
                ontology, window=task.window, branch_depth=task.branch_depth, branches=task.branches
            )
            stage = stage_cls(con, task.reservoir, task.seed)
            ids: list[str] = []
            for chunk in iter_record_chunks(part.path, task.chunk_rows, span=part.span):
                stage.add([values(r) for r in chunk])
                ids.extend(r["id"] for r in chunk)
            got = stage.export()
    finally:
        con.close()
    got.n_records = len(ids)
    got.ids = pa.array(ids, pa.string())
    got.cpu_seconds = time.thread_time() - c0
    return got


def ingest_partitioned(
    store: Any,
    files: Sequence[Path],
    ontology: Any,
    client: Any,
    *,
    stage_cls: Any,
    source: str,
    windowing: Windowing,
    window: str,
    branch_depth: int,
    branches: list[str] | None,
    replace: bool,
    reservoir: int,
    seed: int,
    chunk_rows: int,
    partitions: int | None = None,
) -> Any:
    """:func:`~kg_rageval.monitor.store.ingest` of records ``files`` over ``client``'s workers;
    ``None`` when the input must be read in-process (module docstring). ``stage_cls``: the
    store's ``_Stage``; ``source``: the windows' ``source``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kg_rageval.base import limits
    from kg_rageval.base.errors import ConfigError, InputError
    from kg_rageval.scoring.stream import default_in_flight

    if reservoir < 0:
        raise ConfigError(f"reservoir {reservoir}: expected a number >= 0")
    del windowing  # parsed by the caller: a bad --window is refused before anything is sent
    w0 = time.perf_counter()
    plan = plan_ingest(files, chunk_rows, partitions or default_in_flight(client))
    task = IngestTask(window, branch_depth, branches, reservoir, seed, chunk_rows, dict(limits._overrides))
    onto_future = client.scatter(ontology, broadcast=True, hash=False)
    task_future = client.scatter(task, broadcast=True, hash=False)
    futures = [
        client.submit(stage_partition, task_future, onto_future, p, stage_cls, pure=False) for p in plan
    ]
    stage = stage_cls(store.con, reservoir, seed)
    stats: dict[str, Any] = {"partitions": len(plan), "records": [], "cpu_seconds": []}
    try:
        ids: dict[str, list[Any]] = {}
        for p, fut in zip(plan, futures, strict=True):
            try:
                got = fut.result()
            except InputError:
                return None  # the in-process reader names the first bad record
            if p.n_records is not None and got.n_records != p.n_records:
                return None
            ids.setdefault(p.path, []).append(got.ids)
            stage.absorb(got)
            stats["records"].append(got.n_records)
            stats["cpu_seconds"].append(got.cpu_seconds)
            fut.release()
        for chunks in ids.values():
            if len(chunks) > 1:
                col = pa.chunked_array(chunks, pa.string())
                if pc.count_distinct(col).as_py() != len(col):
                    return None  # a duplicate id across partitions: the reader names its line
        summary = stage.commit(store.path, window, source, replace)
    finally:
        stage.drop()
        left = [f for f in futures if f.status == "pending"]
        if left:
            client.cancel(left)
    stats["wall_seconds"] = time.perf_counter() - w0
    LAST_STATS.clear()
    LAST_STATS.update(stats)
    return summary
