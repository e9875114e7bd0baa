"""Answer correctness against ``reference.answer``: SQuAD exact match / token F1 and
concept-level hierarchical P/R/F1.

Scored records: ``reference.answerable`` is not ``false`` and ``reference.answer`` is present
(a string or a list of acceptable strings; the max over them is taken). A refused answer
(``answer.refused`` true) on such a record is scored as the empty string: EM 0 and F1 0.

Inline citation markers (``[doc-12]``, ``[1]``, ``[doc-1, doc-2]``: a bracket of tokens without
spaces, :data:`~kg_rageval.records.fields.CITATION_MARKER`) are removed from the answer
before EM and token F1 (``strip_citations=True``, the default), so ``"90 days [logs]."``
equals the reference ``"90 days"``; ``strip_citations=False`` scores the text as written.

Concept-level correctness compares the ontology concepts of the answer (``answer.concepts`` or
the dictionary linker over ``answer.text``) with those of the reference (``reference.concepts``
or the linker over the reference strings, all of them pooled), by ancestor-augmented sets
without the root, counted by the hierarchy family's kernel in one call over all records
(:func:`kg_rageval.families.hierarchy.hierarchical_counts`; Sedan vs Hatchback in the vehicle taxonomy
share only {car}: hP = hR = 1/2). It is scored only when the reference names at least one
concept (``concept_scored``); micro sums give ``concept_hP``, ``concept_hR``, ``concept_hF1``.

Unscored: ``no reference answer``, ``unanswerable`` (refusal behaviour covers those),
``no answer``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from kg_rageval.families.generation.columns import column_evaluation, stored_key_columns
from kg_rageval.families.generation.concepts import (
    ConceptLinker,
    concepts_in,
    dictionary_linker,
    linker_name,
    memoised,
)
from kg_rageval.families.generation.squad import SquadScorer
from kg_rageval.records import Record, located, record_error
from kg_rageval.records.fields import (
    all_slice_keys,
    answer_text,
    flag,
    id_list,
    record_columns,
    row_keys,
    section,
    strip_citation_markers,
)
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, harmonic, mean_of, named, ratio

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.ontology import IdOptions, IdResolver, Ontology


class CorrectnessFamily(Family):
    name = "correctness"
    version = "1"
    stats = (
        "qa_scored",
        "em_sum",
        "f1_sum",
        "concept_scored",
        "h_inter",
        "h_pred",
        "h_gold",
        "n_missing_run",
        "concepts_not_in_ontology",
    )

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        hp = ratio("concept_hP", sums["h_inter"], sums["h_pred"], missing="answers name no ontology concept")
        hr = ratio(
            "concept_hR", sums["h_inter"], sums["h_gold"], missing="references name no ontology concept"
        )
        return named(
            mean_of(
                "exact_match",
                sums["em_sum"],
                sums["qa_scored"],
                missing="no answerable records with a reference answer",
            ),
            mean_of(
                "token_f1",
                sums["f1_sum"],
                sums["qa_scored"],
                missing="no answerable records with a reference answer",
            ),
            hp,
            Metric("concepts_not_in_ontology", sums.get("concepts_not_in_ontology", 0.0)),
            hr,
            harmonic("concept_hF1", hp, hr),
        )


def _references(record: Record) -> list[str] | None:
    ref = section(record, "reference")
    if ref is None or ref.get("answer") is None:
        return None
    a = ref["answer"]
    if isinstance(a, str):
        return [a]
    if isinstance(a, list) and a and all(isinstance(x, str) for x in a):
        return list(a)
    raise record_error(
        record, "reference.answer", f"expected a string or a non-empty list of strings, found {a!r}"
    )


_READ = object()
"""``given`` of :func:`_concepts` not read yet: read it from the record (the checked reader)."""


def _concepts(
    record: Record,
    sec: str,
    texts: list[str],
    resolver: IdResolver,
    linker: ConceptLinker,
    given: Any = _READ,
) -> tuple[list[str], list[int], int]:
    """The concept ids of ``sec`` (given, resolved by the one id resolver — the reference's
    as gold, the answer's as predicted — or linked from the texts), their ontology indices and
    how many given ids the ontology lacks (kept out of the list; counted). A linked id the
    ontology lacks raises :class:`~kg_rageval.base.errors.UnknownIdError` naming the record.
    ``given``: ``{sec}.concepts`` when already read (``None``: absent)."""
    if given is _READ:
        given = id_list(record, sec, "concepts")
    o = resolver.ontology
    if given is None:
        linked = sorted(concepts_in(texts, linker))
        get = o.id_index.get
        idx = [get(c, -1) for c in linked]
        if -1 in idx:
            o.indices(linked, where=located(record, "concepts"))  # raises, naming the ids
        return linked, idx, 0
    role = "gold" if sec == "reference" else "pred"
    res = resolver.resolve(list(given), role, lambda j: located(record, f"{sec}.concepts[{j}]"))
    known = list(dict.fromkeys(i for i in res.idx.tolist() if i >= 0))
    ids = o.ids
    return [ids[i] for i in known], known, int(res.unknown.sum())


_UNANSWERABLE = object()
_NO_REFERENCE = object()


def _fields_checked(records: list[Record]) -> Iterator[tuple[Any, ...]]:
    """``(record, refs, refused, text, reference concepts, answer concepts)`` of each record,
    read by the checked readers in the order they always were (``refs`` is a marker for an
    unscored record; the concepts :data:`_READ`: read when needed)."""
    for r in records:
        refs = _references(r)
        if flag(r, "reference", "answerable") is False:
            yield r, _UNANSWERABLE, False, None, None, None
            continue
        if refs is None:
            yield r, _NO_REFERENCE, False, None, None, None
            continue
        yield r, refs, flag(r, "answer", "refused") is True, answer_text(r), _READ, _READ


def _fields_columns(records: list[Record]) -> list[tuple[Any, ...]] | None:
    """What :func:`_fields_checked` reads, from the records' columns
    (:class:`~kg_rageval.records.fields.RecordColumns`); ``None`` when a column is not well
    formed (then the checked readers raise as they did)."""
    cols = record_columns(records)
    if cols is None:
        return None
    answers, answerable = cols.field("reference", "answer"), cols.field("reference", "answerable")
    refused, texts = cols.flags("answer", "refused"), cols.texts("answer", "text")
    ref_c, ans_c = cols.field("reference", "concepts"), cols.field("answer", "concepts")
    if answers is None or answerable is None or refused is None or texts is None or ref_c is None:
        return None
    if ans_c is None or cols.flags("reference", "answerable") is None:
        return None
    for col in (ref_c, ans_c):
        if not set(map(type, col)) <= {list, type(None)}:
            return None
        if list in set(map(type, col)) and not all(set(map(type, v)) <= {str} for v in col if v is not None):
            return None
    out: list[tuple[Any, ...]] = []
    append = out.append
    for r, a, ok, ref, text, rc, ac in zip(records, answers, answerable, refused, texts, ref_c, ans_c):
        if a is None:
            refs = None
        elif type(a) is str:
            refs = [a]
        elif type(a) is list and a and set(map(type, a)) == {str}:
            refs = list(a)
        else:
            return None
        if ok is False:
            append((r, _UNANSWERABLE, False, None, None, None))
        elif refs is None:
            append((r, _NO_REFERENCE, False, None, None, None))
        else:
            append((r, refs, ref is True, text, rc, ac))
    return out


MEMO_SIZE = 1 << 16
"""At most this many distinct ``(answer text, refused, references)`` keep their scores inside
one :func:`score_correctness` call (a bound on the memo's memory)."""


def _scored(
    r: Record,
    refs: list[str],
    refused: bool,
    text: str | None,
    given_ref: Any,
    given_ans: Any,
    squad: SquadScorer,
    resolver: IdResolver | None,
    link: ConceptLinker | None,
    strip_citations: bool,
) -> tuple[Any, ...]:
    """``(EM, token F1, missing run, concepts)`` of one scored record; ``concepts``:
    ``(answer ids, reference ids, gold indices, predicted indices, unknown predicted, unknown
    gold)`` when the reference names a concept, else ``None``."""
    missing = text is None and not refused  # a reference but no answer: scored as empty, counted
    pred: str = "" if refused or missing or text is None else text
    if strip_citations and pred:
        pred = strip_citation_markers(pred)
    e, f = squad.scores(pred, refs)
    concept = None
    if resolver is not None and link is not None:
        gold, gi, gu = _concepts(r, "reference", refs, resolver, link, given_ref)
        if gold or gu:
            pred_c, pi, pu = (
                ([], [], 0) if refused else _concepts(r, "answer", [pred], resolver, link, given_ans)
            )
            concept = (" ".join(pred_c), " ".join(gold), gi, pi, pu, gu)
    return e, f, float(missing), concept


def score_correctness(
    records: Iterable[Record],
    ontology: Ontology | None = None,
    *,
    linker: ConceptLinker | None = None,
    ids: IdOptions | None = None,
    strip_citations: bool = True,
) -> Evaluation:
    """EM / token F1 per record, plus concept-level counts when an ontology is given (given
    concept ids resolved by :class:`~kg_rageval.ontology.IdResolver` with ``ids``);
    ``strip_citations``: remove inline citation markers from the answer first.

    Each record's fields are read from the chunk's columns
    (:class:`~kg_rageval.records.fields.RecordColumns`), record by record with the checked
    readers only when a column is not well formed. A record without given concepts is scored
    by its ``(answer text, refused, references)``: each distinct one once per call (at most
    :data:`MEMO_SIZE` kept)."""
    from kg_rageval.ontology import IdOptions, IdResolver

    records = list(records)
    if ontology is not None and linker is None:
        linker = dictionary_linker(ontology)
    link = memoised(linker) if linker is not None else None
    resolver = IdResolver(ontology, ids or IdOptions()) if ontology is not None else None
    squad = SquadScorer()
    unscored = []
    rec_ids, em, f1, refused_col, missing_col = [], [], [], [], []
    at: list[int] = []  # the record position of each row
    # concept-scored rows: positions, ids, index lists and unknown counts (one kernel call)
    pos: list[int] = []
    answer_c: list[str] = []
    reference_c: list[str] = []
    gold_idx: list[list[int]] = []
    pred_idx: list[list[int]] = []
    p_unknown: list[int] = []
    g_unknown: list[int] = []
    memo: dict[Any, tuple[Any, ...]] = {}
    slot_of: dict[int, int] = {}  # id of a concepts tuple (held by memo or keep) -> its slot
    slots: list[int] = []  # each concept-scored row's slot in the lists below
    keep: list[Any] = []  # every row's concepts tuple: alive while its id is a key of slot_of
    fields = _fields_columns(records)
    cols = record_columns(records) if fields is not None else None
    for k, (r, refs, refused, text, given_ref, given_ans) in enumerate(
        fields if fields is not None else _fields_checked(records)
    ):
        if refs is _UNANSWERABLE:
            unscored.append(unscored_entry(r["id"], "unanswerable", Reason.NOT_APPLICABLE))
            continue
        if refs is _NO_REFERENCE:
            unscored.append(unscored_entry(r["id"], "no reference answer", Reason.NO_GOLD))
            continue
        # a record without given concepts is scored by its (text, refused, references): each
        # distinct one once (the first record of it raises where scoring it raises)
        key = (text, refused, *refs) if given_ref is None and given_ans is None else None
        got = memo.get(key) if key is not None else None
        if got is None:
            got = _scored(
                r, refs, refused, text, given_ref, given_ans, squad, resolver, link, strip_citations
            )
            if key is not None and len(memo) < MEMO_SIZE:
                memo[key] = got
        e, f, missing, concept = got
        keep.append(concept)
        rec_ids.append(r["id"])
        at.append(k)
        em.append(e)
        f1.append(f)
        refused_col.append(refused)
        missing_col.append(missing)
        if concept is not None:
            pos.append(len(rec_ids) - 1)
            answer_c.append(concept[0])
            reference_c.append(concept[1])
            s_ = slot_of.get(id(concept))
            if s_ is None:  # the concept lists of a distinct record: counted once
                s_ = slot_of[id(concept)] = len(gold_idx)
                gold_idx.append(concept[2])
                pred_idx.append(concept[3])
                p_unknown.append(concept[4])
                g_unknown.append(concept[5])
            slots.append(s_)
    n = len(rec_ids)
    stats: dict[str, Any] = {
        "qa_scored": np.ones(n),
        "em_sum": em,
        "f1_sum": f1,
        "n_missing_run": missing_col,
    }
    answer_concepts: list[str | None] = [None] * n
    reference_concepts: list[str | None] = [None] * n
    if pos and resolver is not None:
        stats.update(
            _concept_stats(resolver.ontology, n, pos, slots, gold_idx, pred_idx, p_unknown, g_unknown)
        )
        for k, p in enumerate(pos):
            answer_concepts[p], reference_concepts[p] = answer_c[k], reference_c[k]
    meta: dict[str, Any] = {"linker": linker_name(linker)} if linker is not None else {}
    meta["strip_citations"] = strip_citations
    if cols is not None:
        key_cols: dict[str, Any] = stored_key_columns(cols, at)
    else:
        key_rows = [row_keys(records[k]) for k in at]
        key_cols = {key: [kr.get(key) for kr in key_rows] for key in all_slice_keys(records)}
    return column_evaluation(
        CorrectnessFamily(),
        rec_ids,
        stats,
        key_columns=key_cols,
        details={
            "exact_match": em,
            "token_f1": f1,
            "refused": refused_col,
            "answer_concepts": answer_concepts,
            "reference_concepts": reference_concepts,
        },
        unscored=unscored,
        meta=meta,
    )


def _concept_stats(
    ontology: Ontology,
    n_rows: int,
    pos: list[int],
    slots: list[int],
    gold_idx: list[list[int]],
    pred_idx: list[list[int]],
    p_unknown: list[int],
    g_unknown: list[int],
) -> dict[str, np.ndarray]:
    """The concept stats columns of ``n_rows`` rows, of which the rows ``pos`` are scored with
    the gold / predicted index lists ``gold_idx`` / ``pred_idx`` at ``slots`` (one slot per
    distinct record, shared by its equal rows): ``(|P̂ ∩ T̂|, |P̂|, |T̂|)`` of all of them from
    ONE call of :func:`kg_rageval.families.hierarchy.hierarchical_counts`. An id the ontology
    lacks is an isolated concept: it adds 1 to its side only (``p_unknown`` / ``g_unknown``);
    the other rows are 0."""
    from kg_rageval.families.hierarchy import hierarchical_counts

    inter, n_pred, n_gold = hierarchical_counts(ontology, gold_idx, pred_idx)
    pu, gu = np.asarray(p_unknown, dtype=np.int64), np.asarray(g_unknown, dtype=np.int64)
    take = np.asarray(slots, dtype=np.intp)
    inter, n_pred, n_gold, pu, gu = (np.asarray(a)[take] for a in (inter, n_pred, n_gold, pu, gu))
    at = np.asarray(pos, dtype=np.int64)
    out = {}
    for name, values in (
        ("concept_scored", 1),
        ("h_inter", inter),
        ("h_pred", n_pred + pu),
        ("h_gold", n_gold + gu),
        ("concepts_not_in_ontology", pu + gu),
    ):
        col = np.zeros(n_rows)
        col[at] = values
        out[name] = col
    return out
