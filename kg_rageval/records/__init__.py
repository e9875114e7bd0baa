"""The evaluation record format: its one owner (see ``docs/records.md``).

* reading and writing JSONL records (:func:`read_records`, :func:`iter_record_chunks` (streaming), :func:`read_records_at`,
  :func:`iter_objects`,
  :func:`iter_jsonl`, :func:`write_records`, :func:`read_structured`);
* field access and error locations (:func:`where`, :func:`located`, :func:`record_error`,
  :func:`record_text`);
* slice keys, one normalisation for every family (:mod:`.slices`);
* structured reasons for unscored records (:mod:`.reasons`);
* the one ``gold_node`` rule (:func:`gold_node`, :func:`gold_nodes` of many records, :mod:`.nodes`).
"""

from kg_rageval.records._io import (
    DEFAULT_CHUNK_SIZE,
    ROW_KEYS,
    STRUCTURED_SUFFIXES,
    Record,
    collector_paused,
    iter_jsonl,
    iter_objects,
    iter_record_chunks,
    located,
    read_records,
    read_records_at,
    read_structured,
    record_error,
    record_text,
    where,
    write_records,
)
from kg_rageval.records.nodes import gold_node, gold_nodes
from kg_rageval.records.reasons import MISSING_RUN_CODES, Reason, absent_answer_code, unscored
from kg_rageval.records.slices import record_slices, slice_keys, slice_text, slice_texts, slice_values

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "ROW_KEYS",
    "MISSING_RUN_CODES",
    "Reason",
    "Record",
    "STRUCTURED_SUFFIXES",
    "absent_answer_code",
    "gold_node",
    "gold_nodes",
    "collector_paused",
    "iter_jsonl",
    "iter_objects",
    "iter_record_chunks",
    "located",
    "read_records",
    "read_records_at",
    "read_structured",
    "record_error",
    "record_slices",
    "record_text",
    "slice_keys",
    "slice_text",
    "slice_texts",
    "slice_values",
    "unscored",
    "where",
    "write_records",
]
