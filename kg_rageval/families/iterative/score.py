"""The iterative family (seed article Part 4, "Iteratief zoeken vraagt een end-to-end test met
budget"): a search agent's trace scored end to end under explicit budgets of calls, time and
tokens.

Record section (``docs/iterative.md``); the gold documents are ``retrieval.gold``::

    "iterative": {"steps": [{"query": "...", "results": ["d4", "d1"], "calls": 1, "time_ms": 120, "tokens": 300},
                            {"query": "...", "results": ["d2"], "calls": 2, "time_ms": 340, "tokens": 800}],
                  "correct": true}          # optional: the final answer's correctness

**What a budget means** (the companion ``retrieval/iterative.py``: reformulations run under
explicit budgets): steps are taken in order while the running totals of calls, time_ms and
tokens stay within ``max_calls`` / ``max_time_ms`` / ``max_tokens`` (``None``: no limit); a
step that would take a total past a budget is **not taken**, and neither is any step after it —
the run is cut there. Outcome codes (each record exactly one, all counted):

* ``success`` — a relevant document is among the results of the taken steps and, when
  ``correct`` is given and no step was cut, the answer is correct;
* ``budget_exhausted`` — a step was cut and no relevant document was found before the cut
  (the answer the trace ends with was not reached within the budget);
* ``wrong`` — every step was taken and no relevant document was found, or ``correct`` is false.

Metrics: ``success_rate``, ``budget_exhausted_rate``, ``wrong_rate`` (sum 1 over the scored
records), ``steps_to_first_relevant.mean`` (1-based, over the successes), ``calls.mean``,
``time_ms.mean``, ``tokens.mean`` (of the taken steps). A record without the section is unscored
(``no iterative section``), one without relevant gold (``no gold``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from kg_rageval.records import Record, record_error
from kg_rageval.records.fields import gold_documents, section
from kg_rageval.records.fields import stated_row_keys as row_keys
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, mean_of, ratio

OUTCOMES = ("success", "budget_exhausted", "wrong")
_STEP = {"query", "results", "calls", "time_ms", "tokens"}
_COST = ("calls", "time_ms", "tokens")


class IterativeFamily(Family):
    name = "iterative"
    version = "1"
    stats = ("n", *(f"n_{o}" for o in OUTCOMES), "steps_first", "calls", "time_ms", "tokens")

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        why = "no record with an iterative trace and relevant gold"
        out = {f"{o}_rate": ratio(f"{o}_rate", s[f"n_{o}"], s["n"], missing=why) for o in OUTCOMES}
        out["steps_to_first_relevant.mean"] = mean_of(
            "steps_to_first_relevant.mean", s["steps_first"], s["n_success"], missing="no successful record"
        )
        for c in _COST:
            out[f"{c}.mean"] = mean_of(f"{c}.mean", s[c], s["n"], missing=why)
        return out


def _num(rec: Record, field: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise record_error(rec, field, f"expected a finite non-negative number, found {v!r}")
    return float(v)


def steps_of(rec: Record) -> tuple[list[dict[str, Any]], bool | None]:
    """The checked steps ``[{"results", "calls", "time_ms", "tokens"}]`` and ``correct``."""
    sec = section(rec, "iterative") or {}
    bad = set(sec) - {"steps", "correct"}
    if bad:
        raise record_error(rec, f"iterative.{sorted(bad)[0]}", "unknown field; expected steps or correct")
    steps = sec.get("steps")
    if not isinstance(steps, list):
        raise record_error(rec, "iterative.steps", f"expected a list of steps, found {steps!r}")
    out = []
    for i, st in enumerate(steps):
        f = f"iterative.steps.{i}"
        if not isinstance(st, dict):
            raise record_error(rec, f, f"expected an object, found {type(st).__name__}")
        unk = set(st) - _STEP
        if unk:
            raise record_error(
                rec, f"{f}.{sorted(unk)[0]}", "unknown field; expected query, results, calls, time_ms, tokens"
            )
        res = st.get("results", [])
        if not isinstance(res, list) or not all(isinstance(d, str) for d in res):
            raise record_error(rec, f"{f}.results", f"expected a list of document ids, found {res!r}")
        out.append(
            {"results": res, **{c: _num(rec, f"{f}.{c}", st.get(c, 1 if c == "calls" else 0)) for c in _COST}}
        )
    correct = sec.get("correct")
    if correct is not None and not isinstance(correct, bool):
        raise record_error(rec, "iterative.correct", f"expected true or false, found {correct!r}")
    return out, correct


def run_under_budget(
    steps: list[dict[str, Any]], gold: set[str], budgets: Mapping[str, float | None], correct: bool | None
) -> dict[str, Any]:
    """``{"outcome", "taken", "cut", "first_relevant", "calls", "time_ms", "tokens"}`` (module
    docstring: a step that would pass a budget is not taken, nor any after it)."""
    tot = dict.fromkeys(_COST, 0.0)
    taken, first = 0, None
    for st in steps:
        if any(budgets.get(c) is not None and tot[c] + st[c] > budgets[c] for c in _COST):  # type: ignore[operator]
            break
        for c in _COST:
            tot[c] += st[c]
        taken += 1
        if first is None and gold.intersection(st["results"]):
            first = taken
    cut = taken < len(steps)
    if first is not None and (cut or correct is not False):
        outcome = "success"
    elif cut:
        outcome = "budget_exhausted"
    else:
        outcome = "wrong"
    return {"outcome": outcome, "taken": taken, "cut": cut, "first_relevant": first, **tot}


def score_iterative(
    ontology: Any,
    records: Iterable[Record],
    *,
    max_calls: int | None = None,
    max_time_ms: float | None = None,
    max_tokens: int | None = None,
) -> Evaluation:
    """One row per record with an ``iterative`` trace and relevant gold (module docstring)."""
    budgets = {"calls": max_calls, "time_ms": max_time_ms, "tokens": max_tokens}
    records = list(records)
    rows, unscored = [], []
    for rec in records:
        if rec.get("iterative") is None:
            unscored.append(unscored_entry(rec["id"], "no iterative section", Reason.NO_SECTION))
            continue
        steps, correct = steps_of(rec)
        gold = gold_documents(rec)
        if not gold:
            unscored.append(unscored_entry(rec["id"], "no relevant gold", Reason.NO_GOLD))
            continue
        r = run_under_budget(steps, gold, budgets, correct)
        row: dict[str, Any] = {"record_id": rec["id"], **row_keys(rec), "n": 1, f"n_{r['outcome']}": 1}
        row["outcome"] = r["outcome"]
        if r["outcome"] == "success":
            row["steps_first"] = r["first_relevant"]
        for c in _COST:
            row[c] = r[c]
        rows.append(row)
    from kg_rageval.records.fields import all_slice_keys

    keys = sorted(
        set(all_slice_keys(records))
        | {k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")}
    )
    return build_evaluation(
        IterativeFamily(), rows, keys=[*keys, "outcome"], unscored=unscored, meta={"budgets": budgets}
    )
