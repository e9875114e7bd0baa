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
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..evaluation import Evaluation, Family, Metric, build_evaluation, named, ratio
from ..generation.fields import all_slice_keys, answer_text, flag, row_keys
from ..records import Record
from ..records.reasons import Reason
from ..records.reasons import unscored as unscored_entry
from .depth import cited_ids


class ReproducibilityFamily(Family):
    name = "reproducibility"
    version = "1"
    stats = ("pairs", "same_answer", "same_citations", "same_both")

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


def score_reproducibility(base: Iterable[Record], repeats: Sequence[Iterable[Record]]) -> Evaluation:
    base = list(base)
    rows, unscored = [], []
    extra = 0
    for n, run in enumerate(repeats, start=1):
        by_id = {r["id"]: r for r in run}
        extra += len(set(by_id) - {r["id"] for r in base})
        for r in base:
            other = by_id.get(r["id"])
            if other is None:
                unscored.append({**unscored_entry(r["id"], "missing in repeat", Reason.MISSING_PREDICTION),
                                 "repeat": n})
                continue
            sa = _answer_key(r) == _answer_key(other)
            sc = set(cited_ids(r)) == set(cited_ids(other))
            row: dict[str, Any] = {"record_id": r["id"], **row_keys(r), "repeat": n, "pairs": 1,
                                   "same_answer": int(sa), "same_citations": int(sc), "same_both": int(sa and sc)}
            rows.append(row)
    return build_evaluation(ReproducibilityFamily(), rows, keys=all_slice_keys(base), details=("repeat",),
                            unscored=unscored, meta={"repeats": len(repeats), "extra_in_repeat": extra})
