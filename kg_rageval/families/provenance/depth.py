"""Provenance depth: how far a citation can be traced.

Each distinct cited id of an answer (``answer.citations`` ∪ claim-level citations) is checked
against the corpus snapshot:

* ``in_corpus`` — the id is a document of the snapshot;
* ``resolved`` — it is in the corpus **and** that document has a stable ``source_id``
  (non-empty and not just a content/chunk hash, see
  :func:`~kg_rageval.families.provenance.corpus.is_stable_source_id`).

``provenance_depth`` = Σ resolved / Σ citations; ``citation_in_corpus_rate`` = Σ in_corpus /
Σ citations. Records with no citations add a row with zero citations (their denominator is
empty, so alone they give a missing value, never a 1). Unscored: ``no answer``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kg_rageval.families.provenance.citations import answer_columns, cited_ids, stored_ids, stored_keys
from kg_rageval.families.provenance.corpus import Corpus, is_stable_source_id
from kg_rageval.records import Record, absent_answer_code
from kg_rageval.records.fields import all_slice_keys, record_columns, row_keys, section
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import columns_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, named, ratio


class ProvenanceDepthFamily(Family):
    name = "provenance_depth"
    version = "1"
    stats = ("citations", "in_corpus", "resolved")

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        return named(
            ratio("provenance_depth", sums["resolved"], sums["citations"], missing="no citations"),
            ratio("citation_in_corpus_rate", sums["in_corpus"], sums["citations"], missing="no citations"),
        )


def score_depth(records: Iterable[Record], corpus: Corpus) -> Evaluation:
    records = list(records)
    unscored = []
    known: dict[str, tuple[bool, bool]] = {}  # cited id -> (in the corpus, with a stable source id)

    def check(c: str) -> tuple[bool, bool]:
        got = known.get(c)
        if got is None:
            inside = c in corpus
            got = known[c] = (inside, inside and is_stable_source_id(corpus.source_id(c)))
        return got

    row_ids: list[Any] = []
    row_key_dicts: list[dict[str, Any]] = []
    stats: list[tuple[int, int, int]] = []  # (citations, in_corpus, resolved) per row
    unresolved: list[str] = []
    cols = answer_columns(records)
    pos: list[int] = []
    for k, r in enumerate(records):
        if cols is not None:  # the chunk's columns (the same values as the readers below)
            if not cols.present[k]:
                unscored.append(unscored_entry(cols.ids[k], "no answer", absent_answer_code(r)))
                continue
            ids = cols.cited[k]
            pos.append(k)
            row_ids.append(cols.ids[k])
        else:
            if section(r, "answer") is None:
                unscored.append(unscored_entry(r["id"], "no answer", absent_answer_code(r)))
                continue
            ids = cited_ids(r)
            row_key_dicts.append(row_keys(r))
            row_ids.append(r["id"])
        n_in = n_stable = 0
        bad = []
        for c in ids:
            inside, stable = check(c)
            n_in += inside
            n_stable += stable
            if not stable:
                bad.append(c)
        stats.append((len(ids), n_in, n_stable))
        unresolved.append(" ".join(bad))
    key_cols = record_columns(records) if cols is not None else None
    return columns_evaluation(
        ProvenanceDepthFamily(),
        row_ids if key_cols is None else stored_ids(key_cols, pos),
        zip(*stats),
        keys=(
            stored_keys(key_cols, pos)
            if key_cols is not None
            else {k: [d.get(k) for d in row_key_dicts] for k in all_slice_keys(records)}
        ),
        details={"unresolved": unresolved},
        unscored=unscored,
        meta={"corpus": corpus.source, "corpus_hash": corpus.hash, "corpus_documents": len(corpus)},
    )
