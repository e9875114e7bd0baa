"""A family bound to an ontology, its options and its inputs: :class:`BoundScorer`.

:meth:`~kg_rageval.scoring.scorer.Scorer.bind` makes one: a picklable ``records -> EvaluationSet``
callable used for partitions (Dask) and for the baseline run of an audit.

**Streaming.** Given a JSONL path, a :class:`BoundScorer` reads it in chunks
(:func:`kg_rageval.records.iter_record_chunks`), scores each chunk and concatenates the chunk
results (:func:`kg_rageval.results.evaluation_set.concat_sets`), so one chunk of record dicts is held at a
time, not the file. The result equals scoring the whole list at once (rows, stats, keys,
unscored records, meta, errors): every family's rows depend only on their own record, and
what depends on all of them is set again on the concatenation (``meta`` order and
:attr:`~kg_rageval.results.family.Family.additive_meta`, :meth:`~kg_rageval.results.family.Family.complete`).
A family whose result depends on several records at once in another way declares
``streamable=False`` and gets the whole list.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kg_rageval.base.errors import ConfigError
from kg_rageval.scoring.stream import StreamFallback, stream_families

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.results.evaluation_set import EvaluationSet


@dataclass
class BoundScorer:
    """A family with validated options and loaded inputs: ``bound(records) -> EvaluationSet``.
    Picklable (Dask sends it to the workers).

    ``records``: a list of record dicts (scored in one call) or a JSONL path, streamed in
    chunks of ``chunk_size`` records (default: the family's :attr:`~.scorer.Scorer.chunk_size`, else
    :data:`~kg_rageval.records.DEFAULT_CHUNK_SIZE`) when the family is ``streamable``
    (see :meth:`score_path`)."""

    scorer: Any  # the Scorer (scorer.py imports this module)
    ontology: Any
    inputs: dict[str, Any]
    options: dict[str, Any]

    def __call__(self, records: Any, ontology: Any = None, *, chunk_size: int | None = None) -> EvaluationSet:
        if isinstance(records, (str, Path)):
            return self.score_path(records, ontology, chunk_size=chunk_size)
        return self._call(records, ontology)

    def _call(self, records: Any, ontology: Any) -> EvaluationSet:
        from kg_rageval.results.evaluation_set import as_evaluation_set

        fn = self.scorer.load()
        onto = self.ontology if ontology is None else ontology
        result = fn(onto, records, **self.inputs, **self.options)
        return as_evaluation_set(self.scorer.name, result)

    def score_whole(self, path: str | Path, ontology: Any = None) -> EvaluationSet:
        """Read every record of ``path`` (:func:`~kg_rageval.records.read_records`) and score
        them in one call; an empty file raises :class:`InputError` ("no records to score")."""
        from kg_rageval.base.errors import InputError
        from kg_rageval.records import read_records

        records = read_records(path)
        if not records:
            raise InputError("no records to score", source=str(path))
        return self._call(records, ontology)

    def score_path(
        self, path: str | Path, ontology: Any = None, *, chunk_size: int | None = None
    ) -> EvaluationSet:
        """Score a JSONL file chunk by chunk; the result equals :meth:`score_whole`'s.

        Each chunk of ``chunk_size`` records is scored on its own and its result appended to
        growing columns (:class:`~kg_rageval.results.concatenation.Concatenation`, equal to
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
          then ids, counting every place); so do more than :data:`~kg_rageval.scoring.stream.MAX_PENDING_CHUNKS` chunks
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
            result = stream_families({self.scorer.name: self}, path, size, ontology=ontology)[
                self.scorer.name
            ].result
        except StreamFallback:  # the whole-file call raises the family's error (or scores it)
            return self.score_whole(path, ontology)
        if result is None:  # an empty file
            raise InputError("no records to score", source=str(path))
        return result
