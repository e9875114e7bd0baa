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

from kg_rageval.families.generation.verifiers import sentence_claims
from kg_rageval.records import Record, absent_answer_code, record_error
from kg_rageval.records.fields import (
    all_slice_keys,
    answer_text,
    citations,
    flag,
    gold_documents,
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


def score_citations(records: Iterable[Record]) -> Evaluation:
    records = list(records)
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
        no_claims = n_claims = n_cited = with_claims = uncited = 0
        why = None
        if claims is None:
            why = "no claim-level citations"
            unscored.append(unscored_entry(r["id"], "no claim-level citations", Reason.NOT_APPLICABLE))
        elif not claims:
            no_claims = 1
        else:
            n_claims, with_claims = len(claims), 1
            n_cited = sum(1 for _, c in claims if c)
            if n_cited == 0 and not cited:  # no claim cites: the cited ids are the answer-level ones
                uncited, why = 1, "uncited answer"
        gold = gold_documents(r)
        if gold is None:
            stats.append((1, no_claims, n_claims, n_cited, with_claims, uncited, 0, 0, 0, 0))
        else:
            stats.append(
                (
                    1,
                    no_claims,
                    n_claims,
                    n_cited,
                    with_claims,
                    uncited,
                    1,
                    len(cited),
                    sum(1 for c in cited if c in gold),
                    len(gold),
                )
            )
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
