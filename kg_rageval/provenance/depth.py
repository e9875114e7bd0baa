"""Provenance depth: how far a citation can be traced.

Each distinct cited id of an answer (``answer.citations`` ∪ claim-level citations) is checked
against the corpus snapshot:

* ``in_corpus`` — the id is a document of the snapshot;
* ``resolved`` — it is in the corpus **and** that document has a stable ``source_id``
  (non-empty and not just a content/chunk hash, see
  :func:`~kg_rageval.provenance.corpus.is_stable_source_id`).

``provenance_depth`` = Σ resolved / Σ citations; ``citation_in_corpus_rate`` = Σ in_corpus /
Σ citations. Records with no citations add a row with zero citations (their denominator is
empty, so alone they give a missing value, never a 1). Unscored: ``no answer``.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..evaluation import Evaluation, Family, Metric, build_evaluation, named, ratio
from ..generation.fields import all_slice_keys, row_keys, section
from ..records import Record, absent_answer_code
from .citations import answer_citations, claim_citations, memoised
from .corpus import Corpus, is_stable_source_id


class ProvenanceDepthFamily(Family):
    name = "provenance_depth"
    version = "1"
    stats = ("citations", "in_corpus", "resolved")

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        return named(
            ratio("provenance_depth", sums["resolved"], sums["citations"], missing="no citations"),
            ratio("citation_in_corpus_rate", sums["in_corpus"], sums["citations"], missing="no citations"),
        )


def cited_ids(record: Record) -> list[str]:
    """Distinct cited ids in first-seen order (answer-level, then claim-level); read once per
    record inside :func:`~kg_rageval.provenance.citations.memo_claims` (do not modify the
    result there: it is shared)."""
    return memoised(record, "cited_ids", _cited_ids)


def _cited_ids(record: Record) -> list[str]:
    out = list(dict.fromkeys(answer_citations(record) or []))
    for _, cs in claim_citations(record) or []:
        for c in cs:
            if c not in out:
                out.append(c)
    return out


def score_depth(records: Iterable[Record], corpus: Corpus) -> Evaluation:
    records = list(records)
    rows, unscored = [], []
    known: dict[str, tuple[bool, bool]] = {}  # cited id -> (in the corpus, with a stable source id)

    def check(c: str) -> tuple[bool, bool]:
        got = known.get(c)
        if got is None:
            inside = c in corpus
            got = known[c] = (inside, inside and is_stable_source_id(corpus.source_id(c)))
        return got

    for r in records:
        if section(r, "answer") is None:
            unscored.append({"record_id": r["id"], "reason": "no answer", "code": absent_answer_code(r).value})
            continue
        ids = cited_ids(r)
        inc = [c for c in ids if check(c)[0]]
        stable = [c for c in inc if check(c)[1]]
        row: dict[str, Any] = {"record_id": r["id"], **row_keys(r), "citations": len(ids), "in_corpus": len(inc),
                               "resolved": len(stable),
                               "unresolved": " ".join(c for c in ids if c not in stable)}
        rows.append(row)
    return build_evaluation(ProvenanceDepthFamily(), rows, keys=all_slice_keys(records), details=("unresolved",),
                            unscored=unscored, meta={"corpus": corpus.source, "corpus_hash": corpus.hash, "corpus_documents": len(corpus)})
