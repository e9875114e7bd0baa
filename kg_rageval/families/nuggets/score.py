"""The nuggets family (issue #31): nugget evaluation of answers as in the TREC 2024 RAG Track
(Pradeep et al. 2024, "Initial Nugget Evaluation Results for the TREC 2024 RAG Track with the
AutoNuggetizer Framework", arXiv 2411.09607; reference code ``castorini/nuggetizer``,
``src/nuggetizer/core/metrics.py``).

Record section (``docs/nuggets.md``)::

    "nuggets": {"topic_id": "2024-145979",
                "items": [{"text": "...", "importance": "vital", "assignment": "support",
                           "human_assignment": "partial_support", "concept": "DOID:1612"}],
                "answer_concepts": ["DOID:3459"]}

Each record is one answer (a topic answered by a run). Each nugget ``i`` has an importance
(``vital`` or ``okay``) and an assignment (``support``, ``partial_support``, ``not_support``).
Per answer, with ``s_i`` = 1 / 0.5 / 0 (support / partial / not) and ``ss_i`` = 1 for support
only (strict), the scores of the paper (its section on scoring; the first four are
nuggetizer's ``calculate_nugget_scores``):

* ``all`` A = Σ s_i / |nuggets|; ``all_strict`` A_strict = Σ ss_i / |nuggets|;
* ``vital`` V = Σ_vital s_i / |vital|; ``vital_strict`` V_strict = Σ_vital ss_i / |vital|;
* ``weighted`` W = Σ w_i s_i / Σ w_i and ``weighted_strict`` W_strict = Σ w_i ss_i / Σ w_i with
  w_i = 1 for a vital and 0.5 for an okay nugget.

The family's metric is the mean over answers of each per-answer score (the track's per-topic
score averaged over topics), kept as sums (``Σ score``, ``n``) so slices, runs and branches
roll up. **An answer without a vital nugget** has no vital score: nuggetizer writes 0.0 there;
here V and V_strict leave it out of their mean (their denominator is ``n_vital_answers``) and
``no_vital_rate`` counts such answers. An answer without nuggets is unscored (``no_gold``).

**Where the assignment comes from** (option ``assignment``): ``auto`` (default) — the item's
``assignment`` (an LLM judge's, as AutoNuggetizer writes it), else, for an item with a
``concept`` in a record with ``answer_concepts``, the ontology's; ``ontology`` — always the
ontology's (every item needs a ``concept``); ``human`` — ``human_assignment``.

**Ontology nuggets.** A nugget's ``concept`` (gold) is supported by the answer's linked
concepts through the hierarchy: an answer concept equal to it or more specific (a descendant:
the nugget concept is in its ancestor-or-self closure, ``Ontology.ancestor_indices``) is
``support``; a more general one (a proper ancestor) ``partial_support``; else ``not_support``
(the best over the answer's concepts). Ids resolve through
:class:`~kg_rageval.ontology.IdResolver` with the family's id options: an unknown nugget
concept is an input error (``on_unknown_gold="error"``; ``"count"``: that nugget is
``not_support``), an unknown answer concept is counted (``unknown_answer_concept_rate``).

**Judge agreement.** Over the items with both an automatic assignment (``auto`` or
``ontology`` as above) and a ``human_assignment``: ``assignment_accuracy`` = agreeing items /
paired items and ``assignment_kappa``, Cohen's κ over the three labels, from the additive
per-label counts with the judges family's helper
(:func:`kg_rageval.families.judges.stats.cohen_kappa`).

**Through the calibration family.** The second member, ``assignment_calibration``, is the
judges family's :class:`~kg_rageval.families.judges.calibration.JudgeCalibrationFamily` over the
rubric ``nugget_support`` (labels ``support`` / ``partial_support`` / ``not_support``; approval =
``support``): one row per nugget with an automatic assignment, scored as a judge verdict against
``human_assignment`` (a nugget without one counts as an unlabelled verdict: PPI). Its metrics are
``nugget_support.<metric>`` — ``accuracy`` and ``cohen_kappa`` (equal to ``assignment_accuracy``
and ``assignment_kappa``), ``false_approval_rate`` (the judge says support, the human does not)
and ``false_rejection_rate`` with Wilson intervals, ``approval_kappa``, the PPI estimate of the
support rate — with the judges family's formulas (``docs/judges.md``). The pairwise-only length
metrics are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import chain, compress, repeat
from typing import Any

import numpy as np

from kg_rageval.base.errors import ConfigError
from kg_rageval.families.judges.calibration import JudgeCalibrationFamily
from kg_rageval.families.judges.labels import SCORED, NuggetSupportLabels
from kg_rageval.families.judges.stats import cohen_kappa
from kg_rageval.records import Record, located, record_error
from kg_rageval.records.fields import _GET, all_slice_keys, section, section_columns
from kg_rageval.records.fields import stated_row_keys as row_keys
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation, columns_evaluation
from kg_rageval.results.evaluation_set import EvaluationSet
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, mean_of, ratio

# the calibration reads only a rubric's RUBRIC, LABELS and APPROVE (the judges' label classes,
# kg_rageval.families.judges.labels): no validation here, so no pydantic import
NuggetSupport = NuggetSupportLabels

IMPORTANCE = ("vital", "okay")
LABELS = ("support", "partial_support", "not_support")
CREDIT = {"support": 1.0, "partial_support": 0.5, "not_support": 0.0}
"""s_i of the paper (non-strict); the strict ss_i is 1 for support only."""
WEIGHT = {"vital": 1.0, "okay": 0.5}
"""w_i of the paper's weighted score."""
SOURCES = ("auto", "ontology", "human")
SCORES = ("all", "all_strict", "vital", "vital_strict", "weighted", "weighted_strict")
_ITEM = frozenset({"text", "importance", "assignment", "human_assignment", "concept"})
_SECTION = frozenset({"topic_id", "items", "answer_concepts"})


def answer_scores(items: Iterable[tuple[str, str]]) -> dict[str, float | None]:
    """The six per-answer scores of ``(importance, assignment)`` pairs (module docstring);
    ``vital`` / ``vital_strict`` are ``None`` without a vital nugget, all are ``None`` without
    nuggets."""
    items = list(items)
    if not items:
        return dict.fromkeys(SCORES)
    vital = [a for imp, a in items if imp == "vital"]
    n, wsum = len(items), sum(WEIGHT[imp] for imp, _ in items)
    out: dict[str, float | None] = {
        "all": sum(CREDIT[a] for _, a in items) / n,
        "all_strict": sum(a == "support" for _, a in items) / n,
        "weighted": sum(WEIGHT[imp] * CREDIT[a] for imp, a in items) / wsum,
        "weighted_strict": sum(WEIGHT[imp] * (a == "support") for imp, a in items) / wsum,
        "vital": sum(CREDIT[a] for a in vital) / len(vital) if vital else None,
        "vital_strict": sum(a == "support" for a in vital) / len(vital) if vital else None,
    }
    return out


class NuggetsFamily(Family):
    name = "nuggets"
    version = "1"
    stats = (
        "n",
        "n_vital_answers",
        "n_no_vital",
        *(f"sum_{s}" for s in SCORES),
        "n_nuggets",
        "n_vital_nuggets",
        "n_pairs",
        "agree",
        *(f"auto:{x}" for x in LABELS),
        *(f"human:{x}" for x in LABELS),
        "n_answer_concepts",
        "n_unknown_concepts",
    )

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        why = "no answer with nuggets"
        out: dict[str, Metric] = {}
        for sc in SCORES:
            vital = sc.startswith("vital")
            den = s["n_vital_answers"] if vital else s["n"]
            out[sc] = mean_of(
                sc, s[f"sum_{sc}"], den, missing="no answer with a vital nugget" if vital else why
            )
        out["no_vital_rate"] = ratio("no_vital_rate", s["n_no_vital"], s["n"], missing=why)
        pairs = "no nugget with both an automatic and a human assignment"
        out["assignment_accuracy"] = ratio("assignment_accuracy", s["agree"], s["n_pairs"], missing=pairs)
        out["assignment_kappa"] = cohen_kappa(
            "assignment_kappa",
            s["n_pairs"],
            s["agree"],
            [s[f"auto:{x}"] for x in LABELS],
            [s[f"human:{x}"] for x in LABELS],
            missing=pairs,
        )
        out["unknown_answer_concept_rate"] = ratio(
            "unknown_answer_concept_rate",
            s["n_unknown_concepts"],
            s["n_answer_concepts"],
            missing="no answer concepts read (no ontology-assigned nugget)",
        )
        return out


PAIRWISE_ONLY = ("judge_longer_win_rate", "human_longer_win_rate", "length_balanced_win_rate")
"""Calibration metrics of pairwise verdicts (answer lengths), not produced for nuggets (the
declaration in :mod:`kg_rageval.scoring.reformulation` leaves the same ones out; the contract
test checks declared = produced)."""


class AssignmentCalibrationFamily(JudgeCalibrationFamily):
    """The automatic nugget assignment calibrated against the human one: the judges family's
    calibration over the one rubric ``nugget_support`` (module docstring); metric names
    ``nugget_support.<metric>``."""

    name = "assignment_calibration"

    def __init__(self, *, level: float = 0.95):
        super().__init__({NuggetSupport.RUBRIC: NuggetSupport}, level=level)

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        prefix = f"{NuggetSupport.RUBRIC}."
        return {
            k: m
            for k, m in super().finalize(s).items()
            if k.startswith(prefix) and k[len(prefix) :] not in PAIRWISE_ONLY
        }


def _calibration_rows(
    rec: Record, keys: Mapping[str, Any], items: list[dict[str, Any]], auto: list[str | None], judge: str
) -> list[dict[str, Any]]:
    """One calibration row per nugget with an automatic assignment (the judges family's row)."""
    from kg_rageval.families.judges.score import calibration_row

    out = []
    for i, (it, a) in enumerate(zip(items, auto)):
        if a is None:
            continue
        h = it["human_assignment"]
        p = {
            "rubric": NuggetSupport.RUBRIC,
            "judge": judge,
            "status": SCORED,
            "error": None,
            "label": a,
            "human": h,
            "human_approves": None if h is None else h == NuggetSupport.APPROVE,
            "order": "AB",
            "item": f"nugget:{i}",
            "lengths": None,
            "where": f"nuggets.items.{i}",
        }
        row = calibration_row(rec, keys, p, NuggetSupport, ())
        row.pop("length_bin", None)
        out.append(row)
    return out


def _label(rec: Record, field: str, v: Any, allowed: tuple[str, ...]) -> str:
    if v not in allowed:
        raise record_error(rec, field, f"expected one of {', '.join(allowed)}, found {v!r}")
    return str(v)


def items_of(rec: Record) -> tuple[list[dict[str, Any]], list[str] | None]:
    """The checked items and ``answer_concepts`` of a record's ``nuggets`` section."""
    sec = section(rec, "nuggets")
    if not isinstance(sec, dict):
        raise record_error(rec, "nuggets", f"expected an object, found {type(sec).__name__}")
    bad = set(sec) - _SECTION
    if bad:
        raise record_error(
            rec, f"nuggets.{sorted(bad)[0]}", "unknown field; expected topic_id, items or answer_concepts"
        )
    tid = sec.get("topic_id")
    if tid is not None and not isinstance(tid, str):
        raise record_error(rec, "nuggets.topic_id", f"expected the topic id as a string, found {tid!r}")
    raw = sec.get("items")
    if not isinstance(raw, list):
        raise record_error(rec, "nuggets.items", f"expected a list of nuggets, found {raw!r}")
    items = []
    for i, it in enumerate(raw):
        f = f"nuggets.items.{i}"
        if not isinstance(it, dict):
            raise record_error(rec, f, f"expected an object, found {type(it).__name__}")
        unk = set(it) - _ITEM
        if unk:
            raise record_error(
                rec,
                f"{f}.{sorted(unk)[0]}",
                "unknown field; expected text, importance, assignment, human_assignment, concept",
            )
        if not isinstance(it.get("text"), str):
            raise record_error(rec, f"{f}.text", f"expected the nugget's text, found {it.get('text')!r}")
        out: dict[str, Any] = {"importance": _label(rec, f"{f}.importance", it.get("importance"), IMPORTANCE)}
        for k in ("assignment", "human_assignment"):
            out[k] = None if it.get(k) is None else _label(rec, f"{f}.{k}", it[k], LABELS)
        c = it.get("concept")
        if c is not None and not isinstance(c, str):
            raise record_error(rec, f"{f}.concept", f"expected a concept id, found {c!r}")
        out["concept"] = c
        items.append(out)
    ac = sec.get("answer_concepts")
    if ac is not None and (not isinstance(ac, list) or not all(isinstance(c, str) for c in ac)):
        raise record_error(rec, "nuggets.answer_concepts", f"expected a list of concept ids, found {ac!r}")
    return items, ac


class _Hierarchy:
    """Ontology assignments of nugget concepts (module docstring), ids through IdResolver."""

    def __init__(self, ontology: Any, ids: Mapping[str, Any]):
        from kg_rageval.ontology import IdOptions, IdResolver

        self.onto = ontology
        self.resolver = IdResolver(ontology, IdOptions.of(**ids)) if ontology is not None else None
        self.n_aliased = 0

    def assign(
        self, rec: Record, items: list[dict[str, Any]], which: list[int], answer: list[str]
    ) -> tuple[dict[int, str], int]:
        """``{item index: label}`` for the items ``which`` and the number of unknown answer
        concepts."""
        if self.resolver is None:
            raise ConfigError(
                "nuggets: a nugget with a concept is assigned through the ontology; pass one (-O) "
                f"({located(rec, f'nuggets.items.{which[0]}.concept')})"
            )
        gold = self.resolver.resolve(
            [items[i]["concept"] for i in which],
            "gold",
            lambda j: located(rec, f"nuggets.items.{which[j]}.concept"),
        )
        pred = self.resolver.resolve(answer, "pred", lambda j: located(rec, f"nuggets.answer_concepts.{j}"))
        self.n_aliased += gold.aliased + pred.aliased
        known = [int(p) for p in pred.idx.tolist() if p >= 0]
        closures = [set(self.onto.ancestor_indices(p).tolist()) for p in known]
        out = {}
        for i, g in zip(which, gold.idx.tolist()):
            g = int(g)
            if g < 0:
                out[i] = "not_support"  # an unknown nugget concept counted (on_unknown_gold="count")
            elif any(g in c for c in closures):  # the same or a more specific concept
                out[i] = "support"
            elif any(p != g and p in set(self.onto.ancestor_indices(g).tolist()) for p in known):
                out[i] = "partial_support"  # a more general concept
            else:
                out[i] = "not_support"
        return out, int(pred.unknown.sum())


_NONE = type(None)


def _coded(values: list[Any], labels: tuple[Any, ...]) -> np.ndarray | None:
    """The position of each value in ``labels`` (``None`` when one is not there)."""
    pos = {x: i for i, x in enumerate(labels)}
    if not set(map(type, values)) <= set(map(type, labels)) or not set(values) <= pos.keys():
        return None
    return np.fromiter(map(pos.__getitem__, values), dtype=np.int64, count=len(values))


def _calibration_table(judge: str) -> tuple[tuple[str, ...], np.ndarray]:
    """The assignment-calibration stats of a nugget row for each (automatic, human) label pair
    (human ``None`` last): :func:`_calibration_rows`' row, made once per pair (its stats depend
    on the two labels only)."""
    fam = AssignmentCalibrationFamily()
    table = np.zeros((len(LABELS), len(LABELS) + 1, len(fam.stats)))
    for i, a in enumerate(LABELS):
        for j, h in enumerate((*LABELS, None)):
            item = {"human_assignment": h}
            row = _calibration_rows({"id": ""}, {}, [item], [a], judge)[0]
            table[i, j] = [row.get(x, 0.0) for x in fam.stats]
    return fam.stats, table


def _score_columns(records: list[Record], assignment: str) -> EvaluationSet | None:
    """:func:`score_nuggets` read from the records' columns
    (:class:`~kg_rageval.records.fields.RecordColumns`) when every nugget carries its
    assignment (``assignment="auto"``, no ontology assignment): per-answer scores from label
    counts (sums of halves and quarters, exact in floating point: the same values as
    :func:`answer_scores`), the calibration member's stats looked up per label pair, no row
    dict a nugget. The same members, or ``None`` when a column is not in its well-formed
    shape or a nugget has no assignment (the record loop then scores it, or raises the first
    problem as it always did)."""
    if assignment != "auto":
        return None
    got = section_columns(records, "nuggets")
    if got is None:
        return None
    cols, rid, secs, has = got
    present = list(compress(secs, has))
    if not present or not all(map(_SECTION.issuperset, present)):
        return None
    topics = list(map(_GET, present, repeat("topic_id")))
    raw = list(map(_GET, present, repeat("items")))
    answers = list(map(_GET, present, repeat("answer_concepts")))
    if not set(map(type, topics)) <= {str, _NONE} or not set(map(type, raw)) <= {list}:
        return None
    if not set(map(type, answers)) <= {list, _NONE}:
        return None
    if not set(map(type, chain.from_iterable(a for a in answers if a))) <= {str}:
        return None
    flat = list(chain.from_iterable(raw))
    if not set(map(type, flat)) <= {dict} or not all(map(_ITEM.issuperset, flat)):
        return None
    if not set(map(type, map(_GET, flat, repeat("text")))) <= {str}:
        return None
    if not set(map(type, map(_GET, flat, repeat("concept")))) <= {str, _NONE}:
        return None
    imp = _coded(list(map(_GET, flat, repeat("importance"))), IMPORTANCE)
    asg = _coded(list(map(_GET, flat, repeat("assignment"))), LABELS)
    hum = _coded(list(map(_GET, flat, repeat("human_assignment"))), (*LABELS, None))
    if imp is None or asg is None or hum is None:
        return None  # a bad label, or a nugget without its assignment: the record loop
    n_items = np.fromiter(map(len, raw), dtype=np.int64, count=len(raw))
    scored = n_items > 0
    sc = np.flatnonzero(scored)
    n = sc.size
    if not n:
        return None
    # per-item row index (scored sections only: an empty one has no items)
    cnt = n_items[sc]
    owner = np.repeat(np.arange(n), cnt)

    def per_row(mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        w = mask.astype(float) if weights is None else np.where(mask, weights, 0.0)
        return np.bincount(owner, weights=w, minlength=n)

    credit = np.asarray([CREDIT[x] for x in LABELS])[asg]
    weight = np.asarray([WEIGHT[x] for x in IMPORTANCE])[imp]
    strict = asg == 0
    vital = imp == 0
    every = np.ones(asg.size, dtype=bool)
    n_vital = per_row(vital)
    wsum = per_row(every, weight)
    has_vital = n_vital > 0
    den_v = np.where(has_vital, n_vital, 1.0)
    stats: dict[str, np.ndarray] = {
        "n": np.ones(n),
        "n_vital_answers": has_vital.astype(float),
        "n_no_vital": (~has_vital).astype(float),
        "sum_all": per_row(every, credit) / cnt,
        "sum_all_strict": per_row(strict) / cnt,
        "sum_vital": np.where(has_vital, per_row(vital, credit) / den_v, 0.0),
        "sum_vital_strict": np.where(has_vital, per_row(vital & strict) / den_v, 0.0),
        "sum_weighted": per_row(every, weight * credit) / wsum,
        "sum_weighted_strict": per_row(strict, weight) / wsum,
        "n_nuggets": cnt.astype(float),
        "n_vital_nuggets": n_vital,
    }
    paired = hum < len(LABELS)
    stats["n_pairs"] = per_row(paired)
    stats["agree"] = per_row(paired & (asg == hum))
    for c, x in enumerate(LABELS):
        stats[f"auto:{x}"] = per_row(paired & (asg == c))
        stats[f"human:{x}"] = per_row(hum == c)
    stats["n_answer_concepts"] = np.zeros(n)
    stats["n_unknown_concepts"] = np.zeros(n)
    at = np.flatnonzero(has)
    rows_at = at[sc]
    unscored = []
    why = np.full(len(records), -1, dtype=np.int8)
    why[~has] = 0
    why[at[~scored]] = 1
    for k in np.flatnonzero(why >= 0).tolist():
        if why[k] == 0:
            unscored.append(unscored_entry(rid[k], "no nuggets section", Reason.NO_SECTION))
        else:
            unscored.append(unscored_entry(rid[k], "no nuggets for the answer", Reason.NO_GOLD))
    names = sorted(set(all_slice_keys(records)) | {"gold_node"})
    kc = cols.key_columns(rows_at)
    none = np.full(n, None, dtype=object)
    keys = {k: kc.get(k, none) for k in names}
    meta = {"assignment": assignment, "n_aliased": 0}
    fam = NuggetsFamily()
    ids = np.empty(n, dtype=object)
    ids[:] = [rid[k] for k in rows_at.tolist()]
    nuggets = columns_evaluation(
        fam,
        ids,
        [stats[x] for x in fam.stats],
        keys=keys,
        details={"topic_id": [topics[k] for k in sc.tolist()]},
        unscored=unscored,
        meta=meta,
    )
    _, table = _calibration_table("auto")
    cal_cols = []
    for j in range(table.shape[2]):  # one stats column at a time (whole numbers as int8)
        t = table[:, :, j]
        small = t.astype(np.int8)
        cal_cols.append((small if np.array_equal(small, t) else t)[asg, hum])
    m = int(cnt.max())
    item_names = np.empty(m, dtype=object)
    item_names[:] = [f"nugget:{i}" for i in range(m)]
    first = np.repeat(np.cumsum(cnt) - cnt, cnt)
    label_of = np.empty(len(LABELS) + 1, dtype=object)
    label_of[:] = [*LABELS, None]
    calibration = columns_evaluation(
        AssignmentCalibrationFamily(),
        ids[owner],
        cal_cols,
        keys={k: v[owner] for k, v in keys.items()},
        details={
            "judge": np.full(owner.size, "auto", dtype=object),
            "item": item_names[np.arange(owner.size) - first],
            "label": label_of[asg],
            "human": label_of[hum],
        },
        unscored=list(unscored),
        meta=dict(meta),
    )
    return EvaluationSet("nuggets", {"nuggets": nuggets, "assignment_calibration": calibration})


def score_nuggets(
    ontology: Any, records: Iterable[Record], *, assignment: str = "auto", **ids: Any
) -> EvaluationSet:
    """Members ``nuggets`` (one row per answer with nuggets) and ``assignment_calibration``
    (one row per nugget with an automatic assignment), as the module docstring says."""
    if assignment not in SOURCES:
        raise ConfigError(f"nuggets.assignment: {assignment!r} is not one of {', '.join(SOURCES)}")
    hier = _Hierarchy(ontology, ids)
    records = list(records)
    by_columns = _score_columns(records, assignment)
    if by_columns is not None:
        return by_columns
    rows, unscored, cal_rows = [], [], []
    not_run: list[dict[str, Any]] = []  # unscored by both members: no section, no nuggets
    for rec in records:
        if rec.get("nuggets") is None:
            unscored.append(unscored_entry(rec["id"], "no nuggets section", Reason.NO_SECTION))
            not_run.append(unscored[-1])
            continue
        items, answer = items_of(rec)
        if not items:
            unscored.append(unscored_entry(rec["id"], "no nuggets for the answer", Reason.NO_GOLD))
            not_run.append(unscored[-1])
            continue
        auto: list[str | None] = [None if assignment == "ontology" else it["assignment"] for it in items]
        need = [i for i, it in enumerate(items) if auto[i] is None and it["concept"] is not None]
        n_concepts = n_unknown = 0
        if need and answer is not None:
            got, n_unknown = hier.assign(rec, items, need, answer)
            n_concepts = len(answer)
            for i, derived in got.items():
                auto[i] = derived
        judge = "ontology" if assignment == "ontology" else "auto"
        cal_rows += _calibration_rows(rec, row_keys(rec), items, auto, judge)
        labels: list[str | None]
        if assignment == "human":
            labels = [it["human_assignment"] for it in items]
            if any(lab is None for lab in labels):
                unscored.append(
                    unscored_entry(rec["id"], "a nugget without human_assignment", Reason.MISSING_INPUT)
                )
                continue
        else:
            labels = auto
            for i, lab in enumerate(labels):
                if lab is None and items[i]["concept"] is not None:
                    raise record_error(
                        rec, "nuggets.answer_concepts", "a concept nugget needs the answer's linked concepts"
                    )
                if lab is None:
                    f = "concept" if assignment == "ontology" else "assignment"
                    what = "a concept" if assignment == "ontology" else "an assignment, or a concept"
                    raise record_error(
                        rec,
                        f"nuggets.items.{i}.{f}",
                        f"no assignment: give {what} (with nuggets.answer_concepts)",
                    )
        sc = answer_scores((it["importance"], lab) for it, lab in zip(items, labels))  # type: ignore[misc]
        row: dict[str, Any] = {"record_id": rec["id"], **row_keys(rec), "n": 1}
        for k, v in sc.items():
            row[f"sum_{k}"] = 0.0 if v is None else v
        has_vital = sc["vital"] is not None
        row["n_vital_answers"], row["n_no_vital"] = int(has_vital), int(not has_vital)
        row["n_nuggets"] = len(items)
        row["n_vital_nuggets"] = sum(it["importance"] == "vital" for it in items)
        for a, it in zip(auto, items):
            h = it["human_assignment"]
            if a is not None and h is not None:
                row["n_pairs"] = row.get("n_pairs", 0) + 1
                row["agree"] = row.get("agree", 0) + int(a == h)
                row[f"auto:{a}"] = row.get(f"auto:{a}", 0) + 1
                row[f"human:{h}"] = row.get(f"human:{h}", 0) + 1
        row["n_answer_concepts"], row["n_unknown_concepts"] = n_concepts, n_unknown
        row["topic_id"] = (rec.get("nuggets") or {}).get("topic_id")
        rows.append(row)
    keys = sorted(
        set(all_slice_keys(records))
        | {k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")}
    )
    meta = {"assignment": assignment, "n_aliased": hier.n_aliased}
    return EvaluationSet(
        "nuggets",
        {
            "nuggets": build_evaluation(
                NuggetsFamily(), rows, keys=keys, details=["topic_id"], unscored=unscored, meta=meta
            ),
            "assignment_calibration": build_evaluation(
                AssignmentCalibrationFamily(),
                cal_rows,
                keys=keys,
                details=["judge", "item", "label", "human"],
                unscored=list(not_run),
                meta=dict(meta),
            ),
        },
    )
