"""Reproducibility: the same records rerun on the same snapshot.

For every record of the base run and every repeat run that holds the same record id, one row
(a *pair*) compares:

* ``same_answer`` — ``answer.text`` equal after stripping leading/trailing whitespace, and the
  same ``answer.refused`` flag (exact string equality: a paraphrase is a different answer);
* ``same_citations`` — the same *set* of cited ids (answer-level ∪ claim-level; order ignored);
* ``same_both`` — both.

``identical_answer_rate`` = Σ same_answer / Σ pairs (likewise for citations and both). A base
record absent from a repeat run is unscored (reason ``missing in repeat``, with ``repeat`` = n); repeat records unknown to
the base run are counted in ``meta['extra_in_repeat']``.

Rows come repeat by repeat (all pairs with repeat 1, in base-run order, then repeat 2, ...).
Partitions of the base run (streamed chunks) combine into the same rows, order and meta
(:meth:`ReproducibilityFamily.complete`, :meth:`ReproducibilityFamily.merge_meta`); the
repeat runs are held whole, since a base record's repeat may be anywhere in them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from kg_rageval.families.provenance.citations import cited_ids
from kg_rageval.records import Record
from kg_rageval.records.fields import all_slice_keys, answer_text, flag, row_keys
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation import Evaluation, take_rows
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, named, ratio


class ReproducibilityFamily(Family):
    """``repeat_records``: the number of records of the repeat runs together (what
    :meth:`merge_meta` needs to combine partitions' ``extra_in_repeat``)."""

    name = "reproducibility"
    version = "1"
    stats = ("pairs", "same_answer", "same_citations", "same_both")

    def __init__(self, repeat_records: int = 0) -> None:
        self.repeat_records = repeat_records

    def merge_meta(self, metas: list[dict[str, Any]]) -> dict[str, Any]:
        """``extra_in_repeat`` of partitions of the base run (disjoint record ids): each
        partition counts the R repeat records absent from *it*, R − m_i, so all of them
        together have R − Σ m_i = Σ (R − m_i) − (k − 1)·R."""
        meta = super().merge_meta(metas)
        if all(isinstance(m.get("extra_in_repeat"), int) for m in metas):
            meta["extra_in_repeat"] = (
                sum(m["extra_in_repeat"] for m in metas) - (len(metas) - 1) * self.repeat_records
            )
        return meta

    def complete(self, evaluation: Evaluation) -> None:
        """Rows and unscored records ordered by repeat run, then as the base run holds them
        (the order of one call; partitions' rows are concatenated partition by partition)."""
        rep = evaluation.details.get("repeat")
        if rep is not None and len(rep) > 1:
            n = np.asarray(rep.tolist(), dtype=np.int64)
            if (n[1:] < n[:-1]).any():
                take_rows(evaluation, np.argsort(n, kind="stable"))
        unscored = evaluation.unscored  # a list or the stored UnscoredRecords: either takes a slice
        unscored[:] = sorted(unscored, key=lambda u: u.get("repeat", 0))  # stable

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        miss = "no repeated records"
        return named(
            ratio("identical_answer_rate", sums["same_answer"], sums["pairs"], missing=miss),
            ratio("identical_citation_rate", sums["same_citations"], sums["pairs"], missing=miss),
            ratio("identical_rate", sums["same_both"], sums["pairs"], missing=miss),
        )


def _answer_key(r: Record) -> tuple[str | None, bool]:
    t = answer_text(r)
    return (None if t is None else t.strip(), flag(r, "answer", "refused") is True)


def score_reproducibility(
    base: Iterable[Record], repeats: Sequence[Iterable[Record] | Mapping[Any, Record]]
) -> Evaluation:
    """The pairs of the module docstring. ``repeats``: each repeat run's records, or a mapping
    record id → record of them (as the family's loader reads them once)."""
    base = list(base)
    rows, unscored = [], []
    extra = total = 0
    base_ids = {r["id"] for r in base}
    for n, run in enumerate(repeats, start=1):
        by_id = run if isinstance(run, Mapping) else {r["id"]: r for r in run}
        total += len(by_id)
        extra += len(by_id) - sum(1 for i in base_ids if i in by_id)
        for r in base:
            other = by_id.get(r["id"])
            if other is None:
                unscored.append(
                    {**unscored_entry(r["id"], "missing in repeat", Reason.MISSING_PREDICTION), "repeat": n}
                )
                continue
            sa = _answer_key(r) == _answer_key(other)
            sc = set(cited_ids(r)) == set(cited_ids(other))
            row: dict[str, Any] = {
                "record_id": r["id"],
                **row_keys(r),
                "repeat": n,
                "pairs": 1,
                "same_answer": int(sa),
                "same_citations": int(sc),
                "same_both": int(sa and sc),
            }
            rows.append(row)
    fam = ReproducibilityFamily(total)
    ev = build_evaluation(
        fam,
        rows,
        keys=all_slice_keys(base),
        details=("repeat",),
        unscored=unscored,
        meta={"repeats": len(repeats), "extra_in_repeat": extra},
    )
    fam.complete(ev)
    return ev
