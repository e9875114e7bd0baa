"""Hard filter or soft boost for a relevance preference (the seed article's Part 5 procedure).

Access rules (authorisation, tenant, jurisdiction, publication status) are always hard filters
and are never put to this test: here they only decide eligibility. For a *relevance*
preference F (locale, recency, version, a category, ...), on the same entitlement-eligible
held-out queries and the same candidate lists (each record's ``retrieval.run``, read as the
unfiltered candidates)::

    hard: candidates passing F, in run order, cut at k
    soft: candidates re-scored score + boost·[passes F], sorted (score desc, doc id desc), cut at k
    recall    = |eligible relevant gold in top k| / |eligible relevant gold|
    precision = |eligible relevant gold in top k| / k
    precision_gain_q = hard_precision_q - soft_precision_q   (paired per query)
    exclusion_rate   = share of queries whose every eligible relevant gold document fails F

A run without scores gets ``score = 1 - (rank - 1) / n``. Recommend **hard** only when all
three pre-registered conditions hold::

    lower_bound(precision_gain CI) >= delta_min
    exclusion_rate <= epsilon
    mean hard_recall - mean soft_recall >= -recall_loss_max

otherwise **soft**. No eligible query is missing evidence (raised), never a recommendation.
Replaying F on a fixed candidate list approximates a system that filters before retrieving
(it could pull in deeper candidates): give candidate lists deeper than k.

**Per-query preferences.** F need not be one global filter:

* ``{"field": "category", "op": "within", "value": {"from": "labels.pred"}}`` reads the value of
  each query from a record path (dotted, ``[i]`` indexes a list; a list of objects with ``id``,
  such as ``mentions.pred``, gives their ids; ``null`` ids are skipped): e.g. *within each
  query's linked concept*;
* ``preference=None`` reads each record's own ``retrieval.preference`` (a filter object or a
  list of them), else the relevance filters it logged (``retrieval.filters``): the question is
  then whether the system's own filters should have been hard filters or soft boosts. Several
  filters are a conjunction (hard: passes all; soft: boosted when it passes all).

A query whose preference is absent (no value at the path) is not in the comparison and is
counted (``n_without_preference``); ``within``/category values resolve through
:class:`~kg_rageval.ontology.IdResolver` with the shared id options (CURIE/IRI, alternative
ids), and one that is not an ontology id (a predicted id the ontology lacks: a fault of the
system) is a filter that passes nothing, and is counted (``n_unknown_preference``;
``on_unknown="error"`` raises instead).

:func:`score_preference` gives the per-query comparison as an additive
:class:`~kg_rageval.results.evaluation.Evaluation` (family ``preference``), so the audit decides the
three conditions as gates on its own bootstrap, e.g. ``ci_low(preference.precision_gain) >=
0.02``, ``preference.exclusion_rate <= 0.05``, ``preference.recall_delta >= -0.02``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError, MissingEvidence
from kg_rageval.families.retrieval.compare import bootstrap_ci
from kg_rageval.families.retrieval.corpus import Corpus
from kg_rageval.families.retrieval.filters import Filter, parse_filter, replay
from kg_rageval.families.retrieval.gold import _parse_gold
from kg_rageval.records import Record, where
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, mean_of, ratio


@dataclass(frozen=True)
class HardSoftResult:
    preference: str
    n_queries: int
    k: int
    boost: float
    hard_recall: float
    soft_recall: float
    hard_precision: float
    soft_precision: float
    precision_gain: float
    precision_gain_ci: tuple[float, float]
    exclusion_rate: float
    recall_delta: float
    recommendation: str
    reasons: list[str] = field(default_factory=list)
    params: dict[str, float] = field(default_factory=dict)
    n_without_preference: int = 0
    n_unknown_preference: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["precision_gain_ci"] = list(self.precision_gain_ci)
        return d


def _scored_run(rec: Record, raw: Any) -> list[tuple[str, float]]:
    if isinstance(raw, Mapping):
        return [(str(d), float(s)) for d, s in raw.items()]
    if isinstance(raw, list):
        if raw and isinstance(raw[0], str):
            n = len(raw)
            return [(d, 1.0 - r / n) for r, d in enumerate(raw)]
        out = []
        for i, e in enumerate(raw):
            if isinstance(e, Mapping):
                out.append((str(e["id"]), float(e["score"])))
            elif isinstance(e, (list, tuple)) and len(e) == 2:
                out.append((str(e[0]), float(e[1])))
            else:
                raise InputError(f"{where(rec, f'retrieval.run[{i}]')}: unreadable run entry {e!r}")
        return out
    raise InputError(f"{where(rec, 'retrieval.run')}: expected a run, found {raw!r}")


def _rank(items: list[tuple[str, float]]) -> list[str]:
    items = sorted(items, key=lambda x: x[0], reverse=True)
    items.sort(key=lambda x: -x[1])
    return [d for d, _ in items]


class PreferenceFamily(Family):
    """Per-query hard-filter-vs-soft-boost statistics (module docstring): every metric is a
    mean over the compared queries, so a bootstrap over records gives the paired CI."""

    name = "preference"
    version = "1"
    stats = (
        "n",
        "hard_recall_sum",
        "soft_recall_sum",
        "hard_precision_sum",
        "soft_precision_sum",
        "excluded",
        "unknown_preference",
    )

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        none = "no queries with entitlement-eligible gold, a run and a preference"
        out = {
            m: mean_of(m, s[f"{m}_sum"], s["n"], missing=none)
            for m in ("hard_recall", "soft_recall", "hard_precision", "soft_precision")
        }
        out["precision_gain"] = mean_of(
            "precision_gain", s["hard_precision_sum"] - s["soft_precision_sum"], s["n"], missing=none
        )
        out["recall_delta"] = mean_of(
            "recall_delta", s["hard_recall_sum"] - s["soft_recall_sum"], s["n"], missing=none
        )
        out["exclusion_rate"] = ratio("exclusion_rate", s["excluded"], s["n"], missing=none)
        out["unknown_preference"] = Metric("unknown_preference", s["unknown_preference"])
        return out


def _path_value(rec: Record, path: str) -> Any:
    cur: Any = rec
    for part in path.replace("]", "").replace("[", ".").split("."):
        if part == "":
            continue
        if isinstance(cur, list) and part.lstrip("-").isdigit():
            i = int(part)
            cur = cur[i] if -len(cur) <= i < len(cur) else None
        elif isinstance(cur, Mapping):
            cur = cur.get(part)
        else:
            return None
        if cur is None:
            return None
    return cur


def _values_at(rec: Record, path: str) -> list[str]:
    v = _path_value(rec, path)
    items = v if isinstance(v, list) else [v]
    out = []
    for x in items:
        if isinstance(x, Mapping):
            x = x.get("id")
        if isinstance(x, (str, int, float)) and not isinstance(x, bool):
            out.append(str(x))
    return list(dict.fromkeys(out))


class _Preferences:
    """The preference filter of each record: one global filter, a value read per record
    (``{"from": path}``), or each record's ``retrieval.preference``."""

    def __init__(self, preference: Filter | Mapping[str, Any] | None, corpus: Corpus):
        self.corpus = corpus
        self.fixed: Filter | None = None
        self.template: Mapping[str, Any] | None = None
        self.path: str | None = None
        if isinstance(preference, Filter):
            self.fixed = preference
        elif preference is None:
            pass
        elif isinstance(preference, Mapping):
            v = preference.get("value")
            if isinstance(v, Mapping):
                if set(v) != {"from"} or not isinstance(v["from"], str) or not v["from"]:
                    raise InputError(
                        f"preference.value: expected a value or {{'from': 'record.path'}}, found {v!r}"
                    )
                self.template, self.path = preference, v["from"]
                self._check(
                    parse_filter(
                        {**preference, "value": "x"}, "preference", category_field=corpus.category_field
                    )
                )
            else:
                self.fixed = parse_filter(preference, "preference", category_field=corpus.category_field)
        else:
            raise InputError(f"preference: expected a filter object, found {preference!r}")
        if self.fixed is not None:
            self._check(self.fixed)

    def _check(self, f: Filter) -> None:
        if f.field in self.corpus.entitlement_fields:
            raise InputError(
                f"preference on {f.field!r}: entitlement fields are always hard filters, not preferences"
            )

    @property
    def description(self) -> str:
        if self.fixed is not None:
            f = self.fixed
            return f"{f.field} {f.op} {','.join(f.values)}"
        if self.template is not None:
            return f"{self.template.get('field')} {self.template.get('op')} {{{self.path}}}"
        return "each record's retrieval.preference, else its logged retrieval.filters"

    def of(self, rec: Record) -> list[Filter] | None:
        """The preference filters of one record (a conjunction), ``None`` when it has none."""
        if self.fixed is not None:
            return [self.fixed]
        cat = self.corpus.category_field
        if self.template is not None:
            vals = _values_at(rec, self.path or "")
            if not vals:
                return None
            fl = [
                parse_filter(
                    {**self.template, "value": vals if len(vals) > 1 else vals[0]},
                    where(rec, f"preference (value from {self.path})"),
                    category_field=cat,
                )
            ]
        else:
            sec = rec.get("retrieval")
            sec = sec if isinstance(sec, Mapping) else {}
            raw, field_name = sec.get("preference"), "retrieval.preference"
            if raw is None:  # the relevance filters the system logged are the preference under test
                raw, field_name = sec.get("filters"), "retrieval.filters"
            if raw is None or raw == []:
                return None
            items = raw if isinstance(raw, list) else [raw]
            fl = [
                parse_filter(
                    x,
                    where(rec, f"{field_name}[{i}]" if isinstance(raw, list) else field_name),
                    category_field=cat,
                )
                for i, x in enumerate(items)
            ]
        for f in fl:
            self._check(f)
        return fl


def _compare(
    records: Iterable[Record],
    corpus: Corpus,
    prefs: _Preferences,
    ontology,
    k: int,
    boost: float,
    ids: Mapping[str, Any],
) -> tuple[list[dict[str, Any]], int]:
    """Per-query rows of the comparison and the number of queries without a preference.
    Concept values resolve through :class:`~kg_rageval.ontology.IdResolver` with the options
    ``ids`` (as in every family: CURIE/IRI, alternative ids)."""
    from kg_rageval.ontology import IdOptions, IdResolver

    if k <= 0:
        raise InputError(f"k must be positive, got {k}")
    resolver = IdResolver(ontology, IdOptions.of(**ids))
    rows: list[dict[str, Any]] = []
    without = 0
    for rec in records:
        sec = rec.get("retrieval")
        if not isinstance(sec, Mapping) or "gold" not in sec or sec.get("run") is None:
            continue
        gold = _parse_gold(rec, sec["gold"])
        principal = sec.get("principal")
        cands = _scored_run(rec, sec["run"])
        cand_ids = [d for d, _ in cands]
        cidx = corpus.lookup(cand_ids)
        gids = [d for d, g in gold.items() if g >= 1]
        gidx = corpus.lookup(gids)
        gk = gidx >= 0
        gidx = gidx[gk]
        if principal and len(gidx):
            gidx = gidx[corpus.eligible(gidx, principal)]
        if len(gidx) == 0:
            continue
        pref = prefs.of(rec)
        if pref is None:
            without += 1
            continue
        keep = cidx >= 0
        if principal:
            keep[keep] = corpus.eligible(cidx[keep], principal)
        cands = [c for c, kp in zip(cands, keep.tolist()) if kp]
        cidx = cidx[keep]
        both = np.concatenate([cidx, gidx])
        concepts = [v for f in pref if f.op == "within" or f.field == corpus.category_field for v in f.values]
        unknown = bool(concepts) and bool((resolver.lookup(concepts)[0] < 0).any())
        if unknown and resolver.options.on_unknown == "count":  # a concept the ontology lacks passes nothing
            ok = np.zeros(len(both), dtype=bool)
        else:  # (on_unknown="error": replay names the unknown value)
            ok, _ = replay(
                corpus,
                ontology,
                np.zeros(len(both), dtype=np.int64),
                both,
                [pref],
                where=[where(rec, "preference")],
                resolver=resolver,
            )
        cpass, gpass = ok[: len(cidx)], ok[len(cidx) :]
        gold_set = {corpus.ids[int(d)] for d in gidx}
        ranked = _rank(cands)
        passed = {d for (d, _), p in zip(cands, cpass.tolist()) if p}
        hard_top = [d for d in ranked if d in passed][:k]
        soft_top = _rank([(d, s + (boost if d in passed else 0.0)) for d, s in cands])[:k]
        h = len(gold_set.intersection(hard_top))
        s_ = len(gold_set.intersection(soft_top))
        from kg_rageval.records import record_slices

        rows.append(
            {
                "record_id": str(rec.get("id")),
                "n": 1,
                "hard_recall_sum": h / len(gold_set),
                "soft_recall_sum": s_ / len(gold_set),
                "hard_precision_sum": h / k,
                "soft_precision_sum": s_ / k,
                "excluded": 0.0 if gpass.any() else 1.0,
                "unknown_preference": int(unknown),
                "preference": " and ".join(f"{f.field} {f.op} {','.join(f.values)}" for f in pref),
                **record_slices(rec),
            }
        )
    return rows, without


def score_preference(
    ontology,
    records: Iterable[Record],
    corpus: Corpus | None = None,
    *,
    preference: Filter | Mapping[str, Any] | None = None,
    k: int = 10,
    boost: float = 0.1,
    **ids: Any,
) -> Evaluation:
    """The per-query hard-vs-soft comparison as an :class:`Evaluation` (family ``preference``;
    metrics ``hard_recall``, ``soft_recall``, ``hard_precision``, ``soft_precision``,
    ``precision_gain``, ``recall_delta``, ``exclusion_rate``, ``unknown_preference``).
    ``preference``: see the module docstring (``None``: each record's ``retrieval.preference``);
    ``ids``: the id-resolution options (:data:`~kg_rageval.contract.ids.ID_PARAMS`)."""
    if corpus is None:
        raise InputError("the hard-vs-soft comparison needs a corpus (to replay the preference)")
    records = list(records)
    prefs = _Preferences(preference, corpus)
    rows, without = _compare(records, corpus, prefs, ontology, k, boost, ids)
    from kg_rageval.records import slice_keys

    return build_evaluation(
        PreferenceFamily(),
        rows,
        keys=[f"slice:{k}" for k in slice_keys(records)],
        details=("preference",),
        meta={"preference": prefs.description, "k": k, "boost": boost, "n_without_preference": without},
    )


def hard_vs_soft(
    records: Iterable[Record],
    corpus: Corpus,
    preference: Filter | Mapping[str, Any] | None,
    *,
    ontology,
    k: int = 10,
    boost: float = 0.1,
    delta_min: float,
    epsilon: float,
    recall_loss_max: float,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    **ids: Any,
) -> HardSoftResult:
    """Run the procedure of the module docstring; ``delta_min``, ``epsilon`` and
    ``recall_loss_max`` are the user's pre-registered thresholds (no defaults on purpose).
    ``preference``: one filter, a per-query template (``{"value": {"from": path}}``) or
    ``None`` (each record's ``retrieval.preference``); ``ids``: the id-resolution options."""
    prefs = _Preferences(preference, corpus)
    rows, without = _compare(records, corpus, prefs, ontology, k, boost, ids)
    n = len(rows)
    if n == 0:
        raise MissingEvidence(
            "hard vs soft: no queries with entitlement-eligible gold, a run and a preference"
        )
    hard_r = np.asarray([r["hard_recall_sum"] for r in rows])
    soft_r = np.asarray([r["soft_recall_sum"] for r in rows])
    hard_p = np.asarray([r["hard_precision_sum"] for r in rows])
    soft_p = np.asarray([r["soft_precision_sum"] for r in rows])
    gain = hard_p - soft_p
    ci = bootstrap_ci(gain, n_resamples=n_resamples, level=level, seed=seed)
    excl = float(np.mean([r["excluded"] for r in rows]))
    rdelta = float(hard_r.mean() - soft_r.mean())
    reasons = []
    ok1 = ci[0] >= delta_min
    ok2 = excl <= epsilon
    ok3 = rdelta >= -recall_loss_max
    reasons.append(f"lower bound of precision gain {ci[0]:.4f} {'>=' if ok1 else '<'} delta_min {delta_min}")
    reasons.append(f"exclusion rate {excl:.4f} {'<=' if ok2 else '>'} epsilon {epsilon}")
    reasons.append(f"recall delta {rdelta:.4f} {'>=' if ok3 else '<'} -recall_loss_max {-recall_loss_max}")
    return HardSoftResult(
        preference=prefs.description,
        n_queries=n,
        k=k,
        boost=boost,
        hard_recall=float(hard_r.mean()),
        soft_recall=float(soft_r.mean()),
        hard_precision=float(hard_p.mean()),
        soft_precision=float(soft_p.mean()),
        precision_gain=float(gain.mean()),
        precision_gain_ci=ci,
        exclusion_rate=excl,
        recall_delta=rdelta,
        recommendation="hard" if (ok1 and ok2 and ok3) else "soft",
        reasons=reasons,
        params={
            "delta_min": delta_min,
            "epsilon": epsilon,
            "recall_loss_max": recall_loss_max,
            "level": level,
            "n_resamples": n_resamples,
            "seed": seed,
        },
        n_without_preference=without,
        n_unknown_preference=int(sum(r["unknown_preference"] for r in rows)),
    )
