"""Unseen-concept flag: ontology concepts named in the answer that appear nowhere in the
provided context.

``unseen(answer, contexts) = concepts(answer.text) − ⋃ concepts(context passage)`` with the
dictionary linker of :mod:`kg_rageval.families.generation.concepts` over **all** of
``retrieval.contexts`` (cited or not). A record is flagged when the set is non-empty.

This is a cheap string-level check, not grounding: it cannot see identity, relations,
negation, time or provenance. The seed's example is a case it cannot catch: the answer
"Paris was founded in 1994" against the context "Paris was not founded in 1994." names only
Paris, which the context names too, so nothing is flagged although the answer contradicts the
context. Measure the flag against labels before trusting it:

* ``unseen_precision`` = Σ|flagged ∩ gold| / Σ|flagged|, ``unseen_recall`` = Σ|flagged ∩ gold| / Σ|gold|
  over records carrying the label ``reference.unseen_concepts`` (list of ids; [] = none);
* ``flag_rate`` = flagged records / checked records (no labels needed).

Unscored: ``no answer``, ``no context``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kg_rageval.families.generation.concepts import (
    ConceptLinker,
    concepts_in,
    dictionary_linker,
    linker_name,
    memoised,
)
from kg_rageval.records import Record, absent_answer_code, located
from kg_rageval.records.fields import all_slice_keys, answer_text, contexts, id_list, record_columns, row_keys
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, harmonic, named, ratio

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.ontology import Ontology


def unseen_concepts(answer: str, context_texts: Sequence[str], linker: ConceptLinker) -> frozenset[str]:
    """Concepts the answer names that no context passage names."""
    return linker(answer) - concepts_in(context_texts, linker)


class UnseenConceptFamily(Family):
    name = "unseen_concepts"
    version = "1"
    stats = ("checked", "flagged_record", "flagged", "labelled", "tp", "flagged_labelled", "gold")

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        p = ratio(
            "unseen_precision", sums["tp"], sums["flagged_labelled"], missing="no flags on labelled records"
        )
        r = ratio("unseen_recall", sums["tp"], sums["gold"], missing="no labelled unseen concepts")
        return named(
            ratio("flag_rate", sums["flagged_record"], sums["checked"], missing="no answers with context"),
            p,
            r,
            harmonic("unseen_f1", p, r),
        )


def score_unseen(
    records: Iterable[Record], ontology: Ontology, *, linker: ConceptLinker | None = None, ids: Any = None
) -> Evaluation:
    """Flag answer concepts absent from the context; ``reference.unseen_concepts`` (gold ids,
    resolved by :class:`~kg_rageval.ontology.IdResolver` with the options ``ids``) gives
    precision/recall of the flags."""
    from kg_rageval.ontology import IdOptions, IdResolver

    resolver = IdResolver(ontology, ids or IdOptions())
    records = list(records)
    linker = linker or dictionary_linker(ontology)
    link = memoised(linker)
    rows: list[dict[str, Any]] = []
    unscored = []
    # every field of a record is read (and checked) in record order, so the error a bad
    # record raises is the first one in the file, as with one linking call per record
    checked: list[tuple[Record, str, list[str], dict[str, Any], set[str] | None]] = []
    # the answer texts and whether a context is given, read as columns when well formed (a
    # record without a context is unscored without reading it further)
    cols = record_columns(records)
    texts: list[str | None] | None = None
    given: list[Any] | None = None
    rids: list[Any] | None = None
    if cols is not None:
        texts = cols.texts("answer", "text")
        given = cols.field("retrieval", "contexts") if texts is not None else None
        rids = cols.ids() if given is not None else None
    for k, r in enumerate(records):
        if rids is None or texts is None or given is None:
            text = answer_text(r)
        else:
            text = texts[k]
            if text is not None and given[k] is None:
                unscored.append(unscored_entry(rids[k], "no context", Reason.MISSING_INPUT))
                continue
        if text is None:
            unscored.append(unscored_entry(r["id"], "no answer", absent_answer_code(r)))
            continue
        ctx = contexts(r)
        if ctx is None:
            unscored.append(unscored_entry(r["id"], "no context", Reason.MISSING_INPUT))
            continue
        keys = row_keys(r)
        gold = id_list(r, "reference", "unseen_concepts")
        g = None
        if gold is not None:
            res = resolver.resolve(gold, "gold", lambda j: located(r, f"reference.unseen_concepts[{j}]"))  # noqa: B023 - called now
            g = {ontology.ids[i] if i >= 0 else gold[j] for j, i in enumerate(res.idx.tolist())}
        checked.append((r, text, [t for _, t in ctx], keys, g))
    # every answer and passage linked in one batched call (the same sets as one call each):
    # flagged = concepts(answer) - union of concepts(passage), as unseen_concepts
    linked = iter(link.many(t for _, text, passages, _, _ in checked for t in (text, *passages)))
    for r, _text, passages, keys, g in checked:
        named = next(linked)
        flagged = named.difference(*[next(linked) for _ in passages])
        row: dict[str, Any] = {
            "record_id": r["id"],
            **keys,
            "checked": 1,
            "flagged_record": int(bool(flagged)),
            "flagged": len(flagged),
            "unseen": " ".join(sorted(flagged)),
        }
        if g is not None:
            row.update(labelled=1, tp=len(flagged & g), flagged_labelled=len(flagged), gold=len(g))
        rows.append(row)
    return build_evaluation(
        UnseenConceptFamily(),
        rows,
        keys=all_slice_keys(records),
        details=("unseen",),
        unscored=unscored,
        meta={"linker": linker_name(linker)},
    )
