"""The audit's records, held or streamed: what the audit-level reports read of them.

An audit either **holds** its records (one list, read whole: :class:`HeldRecords`) or
**streams** them (:class:`StreamedRecords`): when every family it runs is streamable
(:attr:`~kg_rageval.scoring.Scorer.streamable`), the records file is read once in chunks of
``chunk_size`` records (:func:`~kg_rageval.scoring.stream_families`); every chunk goes to
every family (each result concatenated, equal to scoring the whole file) and to the
accumulations the rest of the audit needs, so no list of record dicts is held:

* the record ids and line numbers (counts, baseline pairing, the records listed in the report);
* per family, which records carry its section (missing-run counts, ``no_evidence``);
* the slice values (gate scopes are checked against them);
* the coverage matrix and the exclusion attribution (:class:`~.pernode.CoverageCounter`,
  :class:`~.pernode.ExclusionCounter`: counts only).

The few records the report shows ("Records driving the failures") are read again by line
number (:func:`~kg_rageval.records.read_records_at`). Both views answer the same questions
the same way, so the report is identical; the audit falls back to holding the records when it
cannot stream them exactly (:func:`stream_chunk_size`, and
:class:`~kg_rageval.scoring.StreamFallback` from the stream: a family that raised on a chunk
is scored on the whole file, which raises the error the held audit raises, in the same
order).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kg_rageval.scoring import REGISTRY, get_scorer

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.audit.config import AuditConfig


def _sections_of(names: Iterable[str]) -> list[str]:
    """The sections of the registered families of ``names``, sorted."""
    specs = [REGISTRY.get(n) for n in names]
    return sorted({s for sc in specs if sc is not None for s in sc.sections})


def _section_flags(
    names: Iterable[str], chunk: list[dict], by_section: dict[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """``{family: bool per record}``: which records of ``chunk`` carry a section of the family
    (:meth:`~kg_rageval.scoring.Scorer.has_section`), each section looked up once
    (``by_section`` gets ``{section: bool per record}``)."""
    specs = {n: REGISTRY.get(n) for n in names}
    sections = {s for sc in specs.values() if sc is not None for s in sc.sections}
    by_sec = {
        s: np.fromiter((r.get(s) is not None for r in chunk), bool, len(chunk)) for s in sorted(sections)
    }
    if by_section is not None:
        by_section.update(by_sec)
    out: dict[str, np.ndarray] = {}
    for n, sc in specs.items():
        if sc is None:  # not a registered family: every record is its own
            out[n] = np.ones(len(chunk), bool)
            continue
        flag = np.zeros(len(chunk), bool)
        for s in sc.sections:
            flag |= by_sec[s]
        out[n] = flag
    return out


class HeldRecords:
    """The audited records as one list (today's path; also for ``run_audit(inputs=...)``, OTLP
    traces and families that are not streamable)."""

    streamed = False

    def __init__(self, records: list[dict]) -> None:
        self.records = records
        self.ids = [str(r["id"]) for r in records]

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.records)

    def with_section(self, family: str) -> set[str]:
        """The ids of the records carrying a section of ``family``."""
        spec = REGISTRY.get(family)
        if spec is None:
            return set(self.ids)
        has = spec.has_section
        return {rid for r, rid in zip(self.records, self.ids) if has(r)}

    def id_array(self) -> np.ndarray:
        """Every record id in list order, as one numpy array (:func:`id_array`)."""
        return id_array(self.ids)

    def slice_values(self) -> dict[str, set[str]]:
        from kg_rageval.records import slice_values

        return slice_values(self.records)

    def coverage(self, ontology: Any, corpus: list[dict] | None, config: AuditConfig) -> dict[str, Any]:
        from kg_rageval.audit.pernode import coverage_matrix

        return coverage_matrix(self.records, ontology, corpus, config.coverage)

    def exclusions(
        self, runs: Mapping[str, Any], ontology: Any, corpus: list[dict] | None, config: AuditConfig
    ) -> dict[str, Any]:
        from kg_rageval.audit.pernode import exclusion_attribution, make_branch_of

        return exclusion_attribution(
            runs, self.records, corpus, ontology, branch_of=make_branch_of(ontology, config.coverage)
        )

    def lookup(self) -> Any:
        """What :func:`~.failing.failing_records` reads the listed records from."""
        return self.records


def id_array(ids: Iterable[str]) -> np.ndarray:
    """Record ids as one numpy unicode array (``<U1`` when there are none): one buffer, not a
    Python string per record; sorted, intersected and looked up with numpy (``np.isin``,
    ``np.setdiff1d``), in the order of Python's ``sorted`` on the strings (code points)."""
    out = np.array(list(ids) if not isinstance(ids, list) else ids, dtype=str)
    return out if len(out) else np.zeros(0, "U1")


class RecordIndex:
    """What a streamed pass keeps of every record of a JSONL file: its id (one numpy array per
    chunk, joined when read: :meth:`id_array`), its line number and, per family, whether it
    carries the family's section — fed chunk by chunk by :meth:`observe` (an observer of
    :func:`~kg_rageval.scoring.stream_families`; :meth:`section_counts` its
    ``section_counts``). A streamed baseline keeps only this of its records; the audited
    records keep more (:class:`StreamedRecords`)."""

    streamed = True

    def __init__(self, path: Path, size: int, families: list[str]) -> None:
        self.path, self.size, self.families = path, size, families
        self._ids: list[np.ndarray] = []
        self._n = 0
        self._lines: list[np.ndarray] = []
        self._flags: dict[str, list[np.ndarray]] = {f: [] for f in families}
        self.n_with_section = dict.fromkeys(families, 0)
        self.sections: list[str] | None = None  # kept per record: keep_sections()
        self._masks: list[np.ndarray] = []
        self.marked = False

    def keep_sections(self) -> None:
        """From now on keep, per record, which of the families' sections it carries (a bit
        each, :meth:`section_masks`; 4 bytes a record) and whether any record has a re-base
        mark (``marked``: a ``rebase`` object): what a stand-in for a record needs
        (:class:`~kg_rageval.audit.paired_baseline._Reuse`). Not for more than 32 sections."""
        sections = _sections_of(self.families)
        if len(sections) <= 32:
            self.sections = sections

    def observe(self, k: int, chunk: list[dict]) -> None:
        self._ids.append(id_array([r["id"] for r in chunk]))
        self._n += len(chunk)
        self._lines.append(np.fromiter((r["_line"] for r in chunk), np.int64, len(chunk)))
        by_sec: dict[str, np.ndarray] | None = {} if self.sections is not None else None
        for f, flag in _section_flags(self.families, chunk, by_sec).items():
            self._flags[f].append(flag)
            self.n_with_section[f] += int(flag.sum())
        if by_sec is not None and self.sections is not None:
            mask = np.zeros(len(chunk), np.uint32)
            for bit, sec in enumerate(self.sections):
                mask |= by_sec[sec].astype(np.uint32) << np.uint32(bit)
            self._masks.append(mask)
            if not self.marked:
                self.marked = any(isinstance(r.get("rebase"), dict) for r in chunk)

    def section_masks(self) -> np.ndarray:
        """Per record (file order) the bits of the :attr:`sections` it carries (:meth:`keep_sections`)."""
        return np.concatenate(self._masks) if self._masks else np.zeros(0, np.uint32)

    def section_counts(self, k: int, chunk: list[dict]) -> dict[str, int]:
        """The records of the chunk just observed that carry each family's section."""
        return {f: int(flags[-1].sum()) if flags else 0 for f, flags in self._flags.items()}

    def __len__(self) -> int:
        return self._n

    def id_array(self) -> np.ndarray:
        """Every record id in file order (one array; the chunks' arrays joined once)."""
        if len(self._ids) != 1:
            self._ids = [np.concatenate(self._ids) if self._ids else np.zeros(0, "U1")]
        return self._ids[0]

    @property
    def ids(self) -> np.ndarray:
        return self.id_array()

    def with_section(self, family: str) -> set[str]:
        ids = self.id_array()
        flags = self._flags.get(family)
        if flags is None:
            return set(ids.tolist())
        got = np.concatenate(flags) if flags else np.zeros(0, bool)
        return set(ids[got].tolist())

    def records_of(self, wanted: set[str]) -> dict[str, dict]:
        """``{id: record}`` of the records asked for, read again by line number."""
        from kg_rageval.records import read_records_at

        lines = np.concatenate(self._lines) if self._lines else np.zeros(0, np.int64)
        at = lines[np.isin(self.id_array(), id_array(sorted(map(str, wanted))))].tolist() if wanted else []
        return {r["id"]: r for r in read_records_at(self.path, at).values()}


class LineDigests:
    """The line digests of a streamed records file, one array per chunk (``chunks[k]``: a
    ``(len(chunk k), 2)`` uint64 array, each row one record's 16-byte digest,
    :func:`~kg_rageval.records.line_digest`): :attr:`sink` is the list the reader appends to
    (``stream_families(digests=...)``), :meth:`observe` (an observer, first of them) takes a
    chunk's out of it. 16 bytes a record."""

    def __init__(self) -> None:
        self.sink: list[bytes] = []
        self.chunks: list[np.ndarray] = []

    def observe(self, k: int, chunk: list[dict]) -> None:
        got = np.frombuffer(b"".join(self.sink), dtype=np.uint64).reshape(-1, 2)
        assert len(got) == len(chunk), "the digests of one chunk"
        self.chunks.append(got)
        self.sink.clear()


class StreamedRecords(RecordIndex):
    """What a streamed audit keeps of its records file (see the module docstring); fed chunk
    by chunk by :meth:`observe` (an observer of :func:`~kg_rageval.scoring.stream_families`)."""

    def __init__(
        self,
        path: Path,
        size: int,
        families: list[str],
        ontology: Any,
        corpus: list[dict] | None,
        config: AuditConfig,
    ) -> None:
        from kg_rageval.audit.pernode import CoverageCounter, ExclusionCounter, make_branch_of

        super().__init__(path, size, families)
        self.line_digests: LineDigests | None = None  # kept for a baseline's stream (family_runs)
        self._slices: dict[str, set[str]] = {}
        self.coverage_error: Exception | None = None
        self.coverage_counter: CoverageCounter | None = None
        self.exclusion_counter: ExclusionCounter | None = None
        try:  # a coverage.branches error is raised where the held audit raises it: at the report
            self.coverage_counter = CoverageCounter(ontology, corpus, config.coverage)
            self.exclusion_counter = ExclusionCounter(
                corpus, ontology, branch_of=make_branch_of(ontology, config.coverage)
            )
        except Exception as exc:
            self.coverage_error = exc

    def observe(self, k: int, chunk: list[dict]) -> None:
        from kg_rageval.records import slice_values

        super().observe(k, chunk)
        for name, values in slice_values(chunk).items():
            self._slices.setdefault(name, set()).update(values)
        if self.coverage_counter is not None:
            self.coverage_counter.add(chunk)
        if self.exclusion_counter is not None:
            self.exclusion_counter.add(chunk)

    def detach(self) -> None:
        """Keep only what :meth:`absorb` merges (a partition's index on its way back from a
        worker: :mod:`.partitions`): the counters' counts, without their ontology and corpus."""
        cc, ec = self.coverage_counter, self.exclusion_counter
        self._cells = cc.cells if cc is not None else {}
        self._excl = (
            None
            if ec is None
            else (ec.by_field, ec.by_branch, ec.entitlement, ec.n_gold, ec.inconsistent, ec.examples)
        )
        self.coverage_counter = self.exclusion_counter = None
        self.coverage_error = None

    def absorb(self, part: StreamedRecords) -> None:
        """Append a detached partition's index (:meth:`detach`), the next one in file order:
        ids, line numbers and section flags joined, counts added, slice values united; the
        counters' dicts keep the order in which the whole file first saw each key (partition by
        partition) and the exclusion examples stay the first 20."""
        self._ids.extend(part._ids)
        self._lines.extend(part._lines)
        self._n += part._n
        for f in self.families:
            self._flags[f].extend(part._flags[f])
            self.n_with_section[f] += part.n_with_section[f]
        for name, values in part._slices.items():
            self._slices.setdefault(name, set()).update(values)
        if self.coverage_counter is not None:
            cells = self.coverage_counter.cells
            for cell, n in part._cells.items():
                cells[cell] = cells.get(cell, 0) + n
        ec = self.exclusion_counter
        if ec is not None and part._excl is not None:
            by_field, by_branch, entitlement, n_gold, inconsistent, examples = part._excl
            for mine, theirs in ((ec.by_field, by_field), (ec.by_branch, by_branch)):
                for key, n in theirs.items():
                    mine[key] = mine.get(key, 0) + n
            ec.entitlement += entitlement
            ec.n_gold += n_gold
            ec.inconsistent += inconsistent
            ec.examples.extend(examples[: max(0, 20 - len(ec.examples))])

    def __iter__(self) -> Iterator[dict]:
        """The records, read again chunk by chunk (the baseline's release check reads them)."""
        from kg_rageval.records import iter_record_chunks

        for chunk in iter_record_chunks(self.path, self.size):
            yield from chunk

    def slice_values(self) -> dict[str, set[str]]:
        return self._slices

    def coverage(self, ontology: Any, corpus: list[dict] | None, config: AuditConfig) -> dict[str, Any]:
        if self.coverage_error is not None:
            raise self.coverage_error
        assert self.coverage_counter is not None
        return self.coverage_counter.result()

    def exclusions(
        self, runs: Mapping[str, Any], ontology: Any, corpus: list[dict] | None, config: AuditConfig
    ) -> dict[str, Any]:
        assert self.exclusion_counter is not None
        return self.exclusion_counter.result()

    def lookup(self) -> Any:
        """``ids -> {id: record}``: the records asked for, read again by line number."""
        return self.records_of


AUDIT_CHUNK_SIZE = 16_384
"""Records per chunk of a streamed audit (the config's ``chunk_size``, CLI ``--chunk-size``, when
not given): about 100 MB of record dicts for the six-section records of
``benchmarks/bench_audit.py``; larger chunks save little CPU (docs/performance.md)."""


def stream_chunk_size(
    config: AuditConfig, inputs: Mapping[str, Any] | None, families: list[str] | None
) -> int | None:
    """The chunk size the audit streams its records file with, or ``None`` to hold it: held
    when the caller passed the inputs (``run_audit(inputs=...)``), when ``chunk_size`` is 0,
    for OTLP traces, when ``families`` (the configured ones) is ``None`` (the config names an
    unknown family: the held audit raises that where it raises it), and when a family the
    audit would run (its required inputs configured) is not streamable."""
    if inputs is not None or config.chunk_size == 0 or families is None:
        return None
    if config.records_format or Path(config.records).name.endswith((".otlp.json", ".otlp.jsonl")):
        return None
    for name in families:
        spec = get_scorer(name)
        if all(getattr(config, i, None) for i in spec.required_inputs) and not spec.streamable:
            return None
    return AUDIT_CHUNK_SIZE if config.chunk_size is None else config.chunk_size
