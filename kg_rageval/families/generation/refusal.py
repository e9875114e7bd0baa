"""Refusal (abstention) behaviour on records labelled answerable / unanswerable.

A record is scored when it has ``reference.answerable`` (bool) and an ``answer`` section; the
answer refused when ``answer.refused`` is true (absent = did not refuse). With
R = refusals, U = records that should abstain (answerable false), A = answerable records:

* ``refusal_precision`` = |R ∩ U| / |R| — correct refusals among refusals;
* ``refusal_recall``    = |R ∩ U| / |U| — refusals among cases that should abstain;
* ``over_refusal_rate`` = |R ∩ A| / |A| — refusals of answerable questions;
* ``refusal_f1`` = harmonic mean of the first two.

The label says whether the *provided evidence* allows an answer (the seed's definition), not
whether the whole corpus does. Unscored: ``no answerable label`` (code ``no_gold``). A
labelled record without an ``answer`` section is scored as an answer that did not refuse and
counted in ``n_missing_run`` (a missing run the audit's completeness check counts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from kg_rageval.families.generation.columns import stored_key_columns
from kg_rageval.records import Record
from kg_rageval.records.fields import all_slice_keys, flag, record_columns, row_keys, section
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation, columns_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, harmonic, named, ratio


class RefusalFamily(Family):
    name = "refusal"
    version = "1"
    stats = ("refused", "should_abstain", "answerable", "correct_refusal", "over_refusal", "n_missing_run")

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        p = ratio("refusal_precision", sums["correct_refusal"], sums["refused"], missing="no refusals")
        r = ratio(
            "refusal_recall",
            sums["correct_refusal"],
            sums["should_abstain"],
            missing="no records that should abstain",
        )
        return named(
            p,
            r,
            harmonic("refusal_f1", p, r),
            ratio(
                "over_refusal_rate", sums["over_refusal"], sums["answerable"], missing="no answerable records"
            ),
        )


def score_refusal(records: Iterable[Record]) -> Evaluation:
    records = list(records)
    fast = _score_columns(records)
    if fast is not None:
        return fast
    rows: list[dict[str, Any]] = []
    unscored = []
    for r in records:
        answerable = flag(r, "reference", "answerable")
        if answerable is None:
            unscored.append(unscored_entry(r["id"], "no answerable label", Reason.NO_GOLD))
            continue
        # no answer section: scored as an answer that did not refuse (a missed refusal when the
        # record should abstain) and counted as a missing run
        missing = section(r, "answer") is None
        refused = flag(r, "answer", "refused") is True
        outcome = (
            "correct_refusal"
            if refused and not answerable
            else "over_refusal"
            if refused
            else "missed_refusal"
            if not answerable
            else "answered"
        )
        rows.append(
            {
                "record_id": r["id"],
                **row_keys(r),
                "outcome": outcome,
                "refused": int(refused),
                "should_abstain": int(not answerable),
                "answerable": int(answerable),
                "correct_refusal": int(refused and not answerable),
                "over_refusal": int(refused and answerable),
                "n_missing_run": int(missing),
            }
        )
    return build_evaluation(
        RefusalFamily(), rows, keys=all_slice_keys(records), details=("outcome",), unscored=unscored
    )


def _score_columns(records: list[Record]) -> Evaluation | None:
    """:func:`score_refusal` read from the records' columns
    (:class:`~kg_rageval.records.fields.RecordColumns`): the same evaluation, or ``None`` when
    a column is not well formed (the per-record loop then raises as it always did)."""
    cols = record_columns(records)
    if cols is None:
        return None
    ids, answerable = cols.ids(), cols.flags("reference", "answerable")
    present, refused_col = cols.present("answer"), cols.flags("answer", "refused")
    if ids is None or answerable is None or present is None or refused_col is None:
        return None
    labelled = np.array([v is not None for v in answerable], dtype=bool)
    at = np.flatnonzero(labelled)
    unscored = [
        unscored_entry(ids[k], "no answerable label", Reason.NO_GOLD)
        for k in np.flatnonzero(~labelled).tolist()
    ]
    pos = at.tolist()
    ans = np.array([answerable[k] for k in pos], dtype=bool)
    ref = np.array([refused_col[k] is True for k in pos], dtype=bool)
    missing = ~np.array([present[k] for k in pos], dtype=bool)
    outcome = np.where(
        ref,
        np.where(ans, "over_refusal", "correct_refusal"),
        np.where(ans, "answered", "missed_refusal"),
    ).astype(object)
    f = lambda b: b.astype(float)  # noqa: E731
    return columns_evaluation(
        RefusalFamily(),
        [ids[k] for k in pos],
        [f(ref), f(~ans), f(ans), f(ref & ~ans), f(ref & ans), f(missing)],
        keys=stored_key_columns(cols, at),
        details={"outcome": outcome.tolist()},
        unscored=unscored,
    )
