"""Citation completeness and citation precision / recall against gold evidence.

**Claims and their citations** (first rule that applies):

1. ``answer.claims``: a list of ``{"text": str, "citations": [doc id, ...]}`` — claim-level
   citations given by the system;
2. otherwise the sentences of ``answer.text`` (split as in
   :func:`~kg_rageval.families.generation.verifiers.sentence_claims`); a sentence's citations are its
   inline markers: ``[doc-12]`` naming a cited id, or ``[1]`` (1-based) indexing
   ``answer.citations``. Several ids may share a bracket (``[doc-1, doc-2]`` or ``[1][2]``).
   An answer that cites nothing at all (no inline marker, no ``answer.citations``, no
   ``answer.claims``) is **uncited**: every sentence is a claim without a citation (it counts
   0 towards completeness, it is not left out). Only an answer with answer-level citations but
   no inline marker is left unscored (``no claim-level citations``): answer-level citations
   cannot say which claim they support.

``citation_completeness`` = Σ claims with ≥ 1 citation / Σ claims. A refused answer or one
without claims (no text) adds nothing (it is counted in ``no_claims``); ``uncited_answers`` =
non-refused answers with claims and no citation at all / answers with claims.

**Precision / recall** on records with ``retrieval.gold``: with C the set of cited ids
(``answer.citations`` ∪ claim citations) and G the gold evidence,
``citation_precision`` = Σ|C∩G| / Σ|C| and ``citation_recall`` = Σ|C∩G| / Σ|G|.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.families.generation.verifiers import sentence_claims
from kg_rageval.records import Record, absent_answer_code, record_error
from kg_rageval.records.fields import (
    all_slice_keys,
    answer_text,
    citations,
    flag,
    gold_documents,
    record_columns,
    row_keys,
    section,
)
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import columns_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, harmonic, named, ratio

_MARKER = re.compile(r"\[([^\[\]]+)\]")


class CitationFamily(Family):
    name = "citations"
    version = "1"
    stats = (
        "answers",
        "no_claims",
        "claims",
        "cited_claims",
        "with_claims",
        "uncited",
        "with_gold",
        "cited",
        "cited_gold",
        "gold",
    )

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        p = ratio(
            "citation_precision",
            sums["cited_gold"],
            sums["cited"],
            missing="no citations on records with gold evidence",
        )
        r = ratio("citation_recall", sums["cited_gold"], sums["gold"], missing="no gold evidence")
        return named(
            ratio(
                "citation_completeness",
                sums["cited_claims"],
                sums["claims"],
                missing="no claims with known citations",
            ),
            p,
            r,
            harmonic("citation_f1", p, r),
            ratio(
                "uncited_answer_rate", sums["uncited"], sums["with_claims"], missing="no answers with claims"
            ),
            Metric("no_claims", sums["no_claims"]),
        )


_MEMO: ContextVar[dict[str, dict[int, tuple[Record, Any]]] | None] = ContextVar(
    "claim_citations_memo", default=None
)
_TEXTS: ContextVar[dict[str, _Split] | None] = ContextVar("claim_citations_texts", default=None)
TEXT_MEMO_SIZE = 100_000
"""At most this many distinct answer texts keep their sentences and markers inside
:func:`memo_claims` (a bound on the memo's memory; texts past it are split every time)."""


@contextmanager
def memo_claims() -> Iterator[None]:
    """Within the block, :func:`claim_citations` (and :func:`memoised` readers such as
    :func:`cited_ids`) read each record once (the provenance
    family's members all read the claims of every record). The memo holds the records it saw,
    so an ``id()`` is never reused while it is alive; it is dropped at the end of the block.
    The sentences of an ``answer.text`` and the marker tokens in each are also split once per
    distinct text (at most :data:`TEXT_MEMO_SIZE` texts); each record resolves the tokens
    against its own ``answer.citations``."""
    token = _MEMO.set({})
    texts = _TEXTS.set({})
    try:
        yield
    finally:
        _TEXTS.reset(texts)
        _MEMO.reset(token)


def memoised(record: Record, slot: str, read: Callable[[Record], Any]) -> Any:
    """``read(record)``, computed once per record and ``slot`` inside :func:`memo_claims`
    (outside it: every time). The result is shared: callers must not modify it."""
    memo = _MEMO.get()
    if memo is None:
        return read(record)
    by_id = memo.get(slot)
    if by_id is None:
        by_id = memo[slot] = {}
    hit = by_id.get(id(record))
    if hit is not None and hit[0] is record:
        return hit[1]
    out = read(record)
    by_id[id(record)] = (record, out)
    return out


def answer_citations(record: Record) -> list[str] | None:
    """:func:`~kg_rageval.records.fields.citations`, memoised (do not modify the result)."""
    return memoised(record, "citations", citations)


def claim_citations(record: Record) -> list[tuple[str, list[str]]] | None:
    """``[(claim, [cited ids])]`` by the rules of the module docstring; ``None`` when the answer
    has no claim-level citation information. (Do not modify the result: inside
    :func:`memo_claims` it is shared.)"""
    return memoised(record, "claims", _claim_citations)


def _claim_citations(record: Record) -> list[tuple[str, list[str]]] | None:
    ans = section(record, "answer") or {}
    if ans.get("claims") is not None:
        raw = ans["claims"]
        if not isinstance(raw, list):
            raise record_error(record, "answer.claims", f"expected a list, found {raw!r}")
        out = []
        for k, c in enumerate(raw):
            ok = (
                isinstance(c, dict)
                and isinstance(c.get("text"), str)
                and isinstance(c.get("citations", []), list)
            )
            if not ok or not all(isinstance(x, str) for x in c.get("citations", [])):
                raise record_error(
                    record,
                    f"answer.claims[{k}]",
                    f"expected {{'text': str, 'citations': [str]}}, found {c!r}",
                )
            out.append((c["text"], list(c.get("citations", []))))
        return out
    text = answer_text(record) or ""
    cites = answer_citations(record) or []
    texts = _TEXTS.get()
    hit = texts.get(text) if texts is not None else None
    split = hit if hit is not None else _split(text)
    if hit is None and texts is not None and len(texts) < TEXT_MEMO_SIZE:
        texts[text] = split
    marked, sentences = split
    if not marked:
        if cites:
            return None  # answer-level citations only: which claim do they support?
        return [(s, []) for s, _ in sentences]  # cites nothing: every claim uncited
    return [(s, _resolve(tokens, cites) if tokens else []) for s, tokens in sentences]


def cited_ids(record: Record) -> list[str]:
    """Distinct cited ids in first-seen order (answer-level, then claim-level); read once per
    record inside :func:`memo_claims` (do not modify the
    result there: it is shared)."""
    return memoised(record, "cited_ids", _cited_ids)


def _cited_ids(record: Record) -> list[str]:
    seen = dict.fromkeys(answer_citations(record) or ())
    for _, cs in claim_citations(record) or ():
        if cs:
            seen.update(dict.fromkeys(cs))  # keeps the first position of an id seen before
    return list(seen)


_Split = tuple[bool, list[tuple[str, tuple[str, ...]]]]


def _split(text: str) -> _Split:
    """Whether ``text`` has an inline marker, and its sentences
    (:func:`~kg_rageval.families.generation.verifiers.sentence_claims`), each with the stripped tokens of
    its markers in order (``[doc-1, doc-2][3]`` → ``doc-1``, ``doc-2``, ``3``)."""
    if not _MARKER.search(text):
        return False, [(s, ()) for s in sentence_claims(text)]
    return True, [
        (s, tuple(t.strip() for group in _MARKER.findall(s) for t in group.split(",")))
        for s in sentence_claims(text)
    ]


def _resolve(tokens: tuple[str, ...], cites: list[str]) -> list[str]:
    """The cited ids of marker ``tokens``: a token naming an answer citation is that id, a
    1-based number within ``answer.citations`` indexes it; other tokens are ignored."""
    out: list[str] = []
    for tok in tokens:
        if tok in cites:
            out.append(tok)
        elif tok.isdigit() and 1 <= int(tok) <= len(cites):
            out.append(cites[int(tok) - 1])
    return out


class AnswerColumns:
    """What the provenance members read of each record's answer, as columns of one chunk:
    ``present`` (an ``answer`` section), ``refused`` (``answer.refused``), ``texts``
    (``answer.text``), ``cites`` (``answer.citations``), ``claims`` (:func:`claim_citations`)
    and ``cited`` (:func:`cited_ids`; both ``None`` where the record has no answer). Made once
    per chunk by :func:`answer_columns`; never changed by its readers."""

    __slots__ = ("cited", "cites", "claims", "ids", "present", "records", "refused", "texts")

    def __init__(
        self,
        *,
        records: list[Record],
        ids: list[Any],
        present: list[bool],
        refused: list[bool | None],
        texts: list[str | None],
        cites: list[Any],
        claims: list[Any],
        cited: list[Any],
    ):
        self.records, self.ids, self.present, self.refused = records, ids, present, refused
        self.texts, self.cites, self.claims, self.cited = texts, cites, claims, cited


def answer_columns(records: list[Record]) -> AnswerColumns | None:
    """The :class:`AnswerColumns` of ``records`` (shared by the members of one
    :func:`~kg_rageval.families.provenance.score_provenance` call), or ``None`` when a field
    they read is not in its well-formed shape: the members then read record by record with the
    checked readers, which raise the first problem in record order as they always did."""
    cols = record_columns(records)
    if cols is None:
        return None
    return cols.cached(("provenance", "answers"), lambda: _answer_columns(cols))


def _answer_columns(cols: Any) -> AnswerColumns | None:
    ids, present = cols.ids(), cols.present("answer")
    refused, texts = cols.flags("answer", "refused"), cols.texts("answer", "text")
    cites, raw_claims = cols.field("answer", "citations"), cols.field("answer", "claims")
    if ids is None or present is None or refused is None or texts is None or cites is None:
        return None
    if raw_claims is None or not set(map(type, cites)) <= {list, type(None)}:
        return None
    if any(set(map(type, c)) - {str} for c in cites if c):
        return None
    records = cols.records
    memo = _TEXTS.get()
    n = len(ids)
    claims: list[Any] = [None] * n
    cited: list[Any] = [None] * n
    for k in range(n):
        if not present[k]:
            continue
        c = cites[k] or []
        if raw_claims[k] is not None:
            try:
                cl = _claim_citations(records[k])
            except InputError:
                return None
        else:
            text = texts[k] or ""
            hit = memo.get(text) if memo is not None else None
            split = hit if hit is not None else _split(text)
            if hit is None and memo is not None and len(memo) < TEXT_MEMO_SIZE:
                memo[text] = split
            marked, sentences = split
            if not marked:
                cl = None if c else [(s, []) for s, _ in sentences]
            else:
                cl = [(s, _resolve(tokens, c) if tokens else []) for s, tokens in sentences]
        claims[k] = cl
        seen = dict.fromkeys(c)
        for _, cs in cl or ():
            if cs:
                seen.update(dict.fromkeys(cs))
        cited[k] = list(seen)
    return AnswerColumns(
        records=records,
        ids=ids,
        present=present,
        refused=refused,
        texts=texts,
        cites=cites,
        claims=claims,
        cited=cited,
    )


def stored_keys(cols: Any, at: list[int]) -> dict[str, Any]:
    """The key columns (:meth:`~kg_rageval.records.fields.RecordColumns.key_columns`) of the rows
    at ``at`` as an evaluation stores them: each chunk column compacted once
    (:func:`~kg_rageval.results.columns.compact_object`) for the three members, a coded
    column's rows codes into the chunk's distinct values (a
    :class:`~kg_rageval.results.columns.CodedColumn`, kept as it is). Every read gives the
    values ``key_columns(at)`` gives; only how they are stored may differ."""
    from kg_rageval.results.columns import compact_object

    keys = cols.cached(
        ("provenance", "stored keys"), lambda: {k: compact_object(v) for k, v in cols.keys().items()}
    )
    idx = np.asarray(at, dtype=np.intp)
    return {k: v[idx] for k, v in keys.items()}


def stored_ids(cols: Any, at: list[int]) -> Any:
    """The record ids of the rows at ``at`` as an evaluation stores them: the chunk's ids made
    one NumPy unicode array once (:func:`~kg_rageval.results.recordstore.text_column`) and
    indexed; a list of the ids when they are not texts a unicode array holds compactly."""
    from kg_rageval.results.recordstore import text_column

    texts = cols.cached(("provenance", "id texts"), lambda: text_column(cols.ids()))
    if texts is None:
        ids = cols.ids()
        return [ids[k] for k in at]
    return texts[np.asarray(at, dtype=np.intp)]


def _gold_column(records: list[Record]) -> list[set[str] | None] | None:
    """:func:`~kg_rageval.records.fields.gold_documents` of each record from the columns;
    ``None`` when some ``retrieval.gold`` is not in a well-formed shape."""
    cols = record_columns(records)
    golds = None if cols is None else cols.field("retrieval", "gold")
    if golds is None:
        return None
    out: list[set[str] | None] = []
    for g in golds:
        if g is None:
            out.append(None)
        elif type(g) is dict:
            vals = g.values()
            if not set(map(type, vals)) <= {int, float}:
                return None
            out.append({k for k, v in g.items() if v > 0})
        elif type(g) is list and set(map(type, g)) <= {str}:
            out.append(set(g))
        else:
            return None
    return out


NO_CLAIM_CITATIONS = "no claim-level citations"


def _answer_row(
    claims: list[Any] | None, cited: list[str], gold: set[str] | None
) -> tuple[tuple[int, ...], str | None]:
    """One answered record's row of :class:`CitationFamily` stats and its completeness note.

    ``claims`` is the claim-level citations (``None``: the answer has none, the row is marked
    "no claim-level citations" and the caller records it as not applicable; ``[]``: no claims),
    ``cited`` the distinct cited ids, ``gold`` the gold documents (``None``: no retrieval gold,
    the precision/recall columns stay 0 with their indicator 0). An answer whose claims cite
    nothing and that cites nothing itself is "uncited answer"."""
    no_claims = n_claims = n_cited = with_claims = uncited = 0
    why = None
    if claims is None:
        why = NO_CLAIM_CITATIONS
    elif not claims:
        no_claims = 1
    else:
        n_claims, with_claims = len(claims), 1
        n_cited = sum(1 for _, c in claims if c)
        if n_cited == 0 and not cited:  # no claim cites: the cited ids are the answer-level ones
            uncited, why = 1, "uncited answer"
    if gold is None:
        return (1, no_claims, n_claims, n_cited, with_claims, uncited, 0, 0, 0, 0), why
    hits = sum(1 for c in cited if c in gold)
    return (1, no_claims, n_claims, n_cited, with_claims, uncited, 1, len(cited), hits, len(gold)), why


def score_citations(records: Iterable[Record]) -> Evaluation:
    records = list(records)
    cols = answer_columns(records)
    golds = _gold_column(records) if cols is not None else None
    if cols is not None and golds is not None:
        return _score_columns(cols, golds)
    ids: list[Any] = []
    row_key_dicts: list[dict[str, Any]] = []
    stats: list[tuple[int, ...]] = []  # one tuple per row, in the order of CitationFamily.stats
    cited_col: list[str] = []
    completeness: list[str | None] = []
    unscored = []
    for r in records:
        if section(r, "answer") is None:
            unscored.append(unscored_entry(r["id"], "no answer", absent_answer_code(r)))
            continue
        keys = row_keys(r)
        refused = flag(r, "answer", "refused") is True
        claims = [] if refused else claim_citations(r)
        # the distinct cited ids, answer-level then claim-level: a refusal's claims are not read
        # here (its answer-level citations only); otherwise the ordered list depth and the trail
        # read again (memoised), made of what was read already
        cited = list(dict.fromkeys(answer_citations(r) or ())) if refused else cited_ids(r)
        row, why = _answer_row(claims, cited, gold_documents(r))
        if claims is None:
            unscored.append(unscored_entry(r["id"], NO_CLAIM_CITATIONS, Reason.NOT_APPLICABLE))
        stats.append(row)
        ids.append(r["id"])
        row_key_dicts.append(keys)
        cited_col.append(" ".join(sorted(cited)))
        completeness.append(why)
    return columns_evaluation(
        CitationFamily(),
        ids,
        zip(*stats),
        keys={k: [d.get(k) for d in row_key_dicts] for k in all_slice_keys(records)},
        details={"cited_ids": cited_col, "completeness": completeness},
        unscored=unscored,
    )


def _score_columns(cols: AnswerColumns, golds: list[set[str] | None]) -> Evaluation:
    """:func:`score_citations` read from the chunk's :class:`AnswerColumns`: the same evaluation."""
    records, rec_ids = cols.records, cols.ids
    pos: list[int] = []
    stats: list[tuple[int, ...]] = []  # one tuple per row, in the order of CitationFamily.stats
    cited_col: list[str] = []
    completeness: list[str | None] = []
    unscored = []
    for k, (present, refused_flag, claims_k, cited_k) in enumerate(
        zip(cols.present, cols.refused, cols.claims, cols.cited)
    ):
        if not present:
            unscored.append(unscored_entry(rec_ids[k], "no answer", absent_answer_code(records[k])))
            continue
        refused = refused_flag is True
        claims = [] if refused else claims_k
        cited = list(dict.fromkeys(cols.cites[k] or ())) if refused else cited_k
        row, why = _answer_row(claims, cited, golds[k])
        if claims is None:
            unscored.append(unscored_entry(rec_ids[k], NO_CLAIM_CITATIONS, Reason.NOT_APPLICABLE))
        stats.append(row)
        pos.append(k)
        cited_col.append(" ".join(sorted(cited)))
        completeness.append(why)
    keys = record_columns(records)
    assert keys is not None  # the columns were read from it
    return columns_evaluation(
        CitationFamily(),
        stored_ids(keys, pos),
        zip(*stats),
        keys=stored_keys(keys, pos),
        details={"cited_ids": cited_col, "completeness": completeness},
        unscored=unscored,
    )
