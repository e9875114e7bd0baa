"""Faithfulness: the share of an answer's claims that its context supports.

Per answer ``faithfulness = |supported| / |claims|`` (the judgment contract in
:mod:`kg_rageval.families.generation.judgment`). Reported:

* ``faithfulness`` — mean of per-answer faithfulness over **scored** answers (≥ 1 claim);
* ``faithfulness_micro`` — Σ supported / Σ claims over scored answers;
* ``no_claims_rate`` — answers with a valid judgment but no claims / valid judgments (these
  answers get no score and are left out of both means: never a perfect 1.0);
* ``invalid_judgment_rate`` — invalid or unparseable judgments / all judgments attempted;
* the counts ``answers_scored``, ``no_claims``, ``invalid_judgment`` (value = the count).

One row per record that has an answer and a judgment (given or produced by a judge), and
per refused answer (``answer.refused: true``) without one: a refusal asserts nothing, so it
is a judgment with no claims (status ``no_claims``, source ``refusal``), never a missing run
(a judge, when given, still judges a refusal's text). Unscored: ``no answer`` (no ``answer`` section / text), ``no judgment`` (none given and no
judge), ``no context`` (a judge needs ``retrieval.contexts``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from itertools import repeat
from typing import Any

from kg_rageval.families.generation.columns import stored_key_columns
from kg_rageval.families.generation.judgment import (
    INVALID,
    NO_CLAIMS,
    SCORED,
    JudgmentOutcome,
    parse_judgment,
)
from kg_rageval.families.generation.verifiers import Judge
from kg_rageval.records import Record, absent_answer_code
from kg_rageval.records.fields import (
    RecordColumns,
    all_slice_keys,
    answer_text,
    cited_context_texts,
    flag,
    record_columns,
    row_keys,
    section,
)
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation, columns_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, mean_of, named, ratio


class FaithfulnessFamily(Family):
    name = "faithfulness"
    version = "1"
    stats = (
        "attempted",
        "judged",
        "invalid_judgment",
        "no_claims",
        "scored",
        "claims",
        "supported",
        "faithfulness_sum",
    )

    def __init__(self, judgments: Collection[Any] = ()):
        self.judgments = judgments
        """The record ids of the judgments given (a judgments mapping is used as it is)."""

    def complete(self, evaluation: Evaluation) -> None:
        """The parts that depend on all rows: once any answer is judged, an answer left
        unjudged is the judge's missing run (code ``missing_prediction``, not
        ``missing_input``); ``meta["judgments_without_record"]`` (the first 20, sorted) and
        ``meta["n_judgments_without_record"]``: the given judgments whose record is not among
        the rows (a record with a given judgment always has a row)."""
        attempted = evaluation.stats.get("attempted")
        if len(evaluation) and evaluation.unscored and attempted is not None and attempted.any():
            # a refusal's row (no judgment attempted) does not make the judge expected elsewhere
            entries = list(evaluation.unscored)  # fresh dicts: changed, then stored back
            if any(u["reason"] == "no judgment" and u.get("code") != "missing_prediction" for u in entries):
                for u in entries:
                    if u["reason"] == "no judgment":
                        u["code"] = "missing_prediction"
                evaluation.unscored[:] = entries
        meta = evaluation.meta
        meta.pop("judgments_without_record", None)
        meta.pop("n_judgments_without_record", None)
        if self.judgments:
            rows = set(evaluation.record_ids.tolist())
            orphan = sorted(j for j in self.judgments if j not in rows)
            if orphan:
                meta["judgments_without_record"] = orphan[:20]
                meta["n_judgments_without_record"] = len(orphan)

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        return named(
            mean_of(
                "faithfulness",
                sums["faithfulness_sum"],
                sums["scored"],
                missing="no judged answer has claims",
            ),
            ratio("faithfulness_micro", sums["supported"], sums["claims"], missing="no extracted claims"),
            ratio("no_claims_rate", sums["no_claims"], sums["judged"], missing="no valid judgments"),
            ratio(
                "invalid_judgment_rate", sums["invalid_judgment"], sums["attempted"], missing="no judgments"
            ),
            Metric("answers_scored", sums["scored"]),
            Metric("no_claims", sums["no_claims"]),
            Metric("invalid_judgment", sums["invalid_judgment"]),
        )


def _refusal_row(record: Record) -> dict[str, Any]:
    """The row of a refused answer without a judgment: a valid judgment with no claims
    (status ``no_claims``, source ``refusal``; counted in ``no_claims`` and ``no_claims_rate``,
    left out of both means, not in ``invalid_judgment_rate``'s attempts)."""
    return {
        "record_id": record["id"],
        **row_keys(record),
        "judgment_source": "refusal",
        "status": NO_CLAIMS,
        "judged": 1,
        "claims": 0,
        "supported": 0,
        "no_claims": 1,
    }


def _row(record: Record, outcome: JudgmentOutcome, source: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "record_id": record["id"],
        **row_keys(record),
        "attempted": 1,
        "judgment_source": source,
    }
    row["status"] = outcome.status
    if not outcome.valid:
        row["invalid_judgment"] = 1
        row["reason"] = outcome.error
        return row
    j = outcome  # the valid judgment's counts, read without building the pydantic model
    row.update(judged=1, claims=j.n_claims, supported=j.n_supported, failure_mode=j.failure_mode)
    if j.status == NO_CLAIMS:
        row["no_claims"] = 1
    else:
        row.update(scored=1, faithfulness_sum=j.faithfulness, faithfulness=j.faithfulness)
    return row


def score_faithfulness(
    records: Iterable[Record],
    *,
    judgments: Mapping[str, Any] | None = None,
    judge: Judge | None = None,
) -> Evaluation:
    """Score faithfulness of each record's answer.

    The judgment of a record is, in order: ``judgments[record id]`` (e.g. from
    :func:`~kg_rageval.families.generation.judgment.load_judgments`), the record's ``answer.judgment``,
    or ``judge(answer text, cited context texts)`` when a judge is given. A judge that raises
    is a bug and propagates; bad judge *output* is ``invalid_judgment``."""
    records = list(records)
    judgments = judgments or {}
    cols = record_columns(records)
    if cols is not None:
        fast = _score_columns(cols, judgments, judge)
        if fast is not None:
            return fast
    rows, unscored = [], []
    for r in records:
        text = answer_text(r)
        ans = section(r, "answer") or {}
        if r["id"] in judgments:
            raw, source = judgments[r["id"]], "judgments-file"
        elif "judgment" in ans:
            raw, source = ans["judgment"], "record"
        elif flag(r, "answer", "refused") is True and (judge is None or text is None):
            rows.append(_refusal_row(r))  # a refusal asserts nothing: no claims, never missing
            continue
        elif judge is not None:
            if text is None:
                unscored.append(unscored_entry(r["id"], "no answer", absent_answer_code(r)))
                continue
            ctx = cited_context_texts(r)
            if ctx is None:
                unscored.append(unscored_entry(r["id"], "no context", Reason.MISSING_INPUT))
                continue
            raw, source = judge(text, ctx), getattr(judge, "name", type(judge).__name__)
        else:
            # no answer: the system's missing run; no judgment: decided below
            reason = "no answer" if text is None else "no judgment"
            code = absent_answer_code(r) if text is None else Reason.MISSING_INPUT
            unscored.append(unscored_entry(r["id"], reason, code))
            continue
        rows.append(_row(r, parse_judgment(raw), source))
    fam = FaithfulnessFamily(judgments)
    ev = build_evaluation(
        fam,
        rows,
        keys=all_slice_keys(records),
        details=("status", "judgment_source", "failure_mode", "reason", "faithfulness"),
        unscored=unscored,
    )
    fam.complete(ev)  # missing-run codes and judgments without a record
    return ev


_DETAILS = ("status", "judgment_source", "failure_mode", "reason", "faithfulness")

JUDGMENT_MEMO_SIZE = 1 << 16
"""At most this many distinct recorded judgments keep their parse inside one
:func:`score_faithfulness` call (a bound on the memo's memory)."""


def _judgment_key(raw: Any) -> Any:
    """A hashable key of a judgment object whose values are texts, ``None`` or lists of texts
    (the shape the contract asks for): two such objects with equal keys parse to the same
    outcome. ``None`` for anything else (it is parsed every time)."""
    if type(raw) is not dict:
        return None
    key: list[tuple[Any, Any]] = []
    for k, v in raw.items():
        if type(v) is list:
            if not set(map(type, v)) <= {str}:
                return None
            key.append((k, tuple(v)))
        elif v is None or type(v) is str:
            key.append((k, v))
        else:
            return None
    return tuple(key)


_ABSENT = object()
"""An answer without a ``judgment`` key (a ``null`` judgment is one: it is invalid)."""

_REFUSAL_ROW = ("refusal", NO_CLAIMS, None, None, None, 0, 1, 0, 1, 0, 0, 0, 0.0)
"""The column row of a refusal without a judgment (see :func:`_refusal_row`)."""


def _outcome_row(outcome: JudgmentOutcome) -> tuple[Any, ...]:
    """``(status, failure mode, reason, faithfulness, *stats)`` of a judged row (stats in
    :attr:`FaithfulnessFamily.stats` order)."""
    if not outcome.valid:
        return (outcome.status, None, outcome.error, None, 1, 0, 1, 0, 0, 0, 0, 0.0)
    n, sup, fm = outcome.n_claims, outcome.n_supported, outcome.failure_mode
    if outcome.status == NO_CLAIMS:
        return (NO_CLAIMS, fm, None, None, 1, 1, 0, 1, 0, n, sup, 0.0)
    f = outcome.faithfulness
    return (outcome.status, fm, None, f, 1, 1, 0, 0, 1, n, sup, f)


def _score_columns(
    cols: RecordColumns, judgments: Mapping[str, Any], judge: Judge | None
) -> Evaluation | None:
    """:func:`score_faithfulness` read from the records' columns: the same evaluation, or
    ``None`` when a column it reads is not well formed (the per-record loop then raises as it
    did). Equal recorded judgments are parsed once; the judge sees the same calls in the same
    order (each record's cited context is read by the checked reader)."""
    ids, answers = cols.ids(), cols.section("answer")
    texts, refused = cols.texts("answer", "text"), cols.flags("answer", "refused")
    if ids is None or answers is None or texts is None or refused is None:
        return None
    memo: dict[Any, tuple[Any, ...]] = {}
    pos: list[int] = []
    # one tuple per row: (source, status, failure mode, reason, faithfulness, *stats)
    results: list[tuple[Any, ...]] = []
    append = results.append
    unscored = []
    raws = list(map(dict.get, answers, repeat("judgment"), repeat(_ABSENT)))
    for k, raw in enumerate(raws):
        if judgments and ids[k] in judgments:
            raw, source = judgments[ids[k]], "judgments-file"
        elif raw is not _ABSENT:
            source = "record"
        elif refused[k] is True and (judge is None or texts[k] is None):
            pos.append(k)
            append(_REFUSAL_ROW)
            continue
        elif judge is not None:
            rid, text = ids[k], texts[k]
            if text is None:
                unscored.append(unscored_entry(rid, "no answer", absent_answer_code(cols.records[k])))
                continue
            ctx = cited_context_texts(cols.records[k])
            if ctx is None:
                unscored.append(unscored_entry(rid, "no context", Reason.MISSING_INPUT))
                continue
            raw, source = judge(text, ctx), getattr(judge, "name", type(judge).__name__)
        else:
            rid, text = ids[k], texts[k]
            reason = "no answer" if text is None else "no judgment"
            code = absent_answer_code(cols.records[k]) if text is None else Reason.MISSING_INPUT
            unscored.append(unscored_entry(rid, reason, code))
            continue
        key = _judgment_key(raw)
        got = memo.get((source, key)) if key is not None else None
        if got is None:
            got = (source, *_outcome_row(parse_judgment(raw)))
            if key is not None and len(memo) < JUDGMENT_MEMO_SIZE:
                memo[source, key] = got
        pos.append(k)
        append(got)
    source_col, status, failure, reasons, faith, *stat_cols = (
        zip(*results) if results else [()] * (5 + len(FaithfulnessFamily.stats))
    )
    fam = FaithfulnessFamily(judgments)
    ev = columns_evaluation(
        fam,
        [ids[k] for k in pos],
        stat_cols,
        keys=stored_key_columns(cols, pos),
        details=dict(
            zip(_DETAILS, (list(status), list(source_col), list(failure), list(reasons), list(faith)))
        ),
        unscored=unscored,
    )
    fam.complete(ev)
    return ev


__all__ = ["FaithfulnessFamily", "score_faithfulness", "SCORED", "NO_CLAIMS", "INVALID"]
