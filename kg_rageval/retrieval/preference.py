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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import InputError, MissingEvidence
from ..records import Record, where
from .compare import bootstrap_ci
from .corpus import Corpus
from .filters import Filter, parse_filter, replay
from .score import _parse_gold


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


def hard_vs_soft(
    records: Iterable[Record],
    corpus: Corpus,
    preference: Filter | Mapping[str, Any],
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
) -> HardSoftResult:
    """Run the procedure of the module docstring; ``delta_min``, ``epsilon`` and
    ``recall_loss_max`` are the user's pre-registered thresholds (no defaults on purpose)."""
    if k <= 0:
        raise InputError(f"k must be positive, got {k}")
    pref = preference if isinstance(preference, Filter) else parse_filter(
        preference, "preference", category_field=corpus.category_field)
    if pref.field in corpus.entitlement_fields:
        raise InputError(
            f"preference on {pref.field!r}: entitlement fields are always hard filters, not preferences"
        )
    hard_r, soft_r, hard_p, soft_p, excluded = [], [], [], [], []
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
        keep = cidx >= 0
        if principal:
            keep[keep] = corpus.eligible(cidx[keep], principal)
        cands = [c for c, kp in zip(cands, keep.tolist()) if kp]
        cidx = cidx[keep]
        both = np.concatenate([cidx, gidx])
        ok, _ = replay(corpus, ontology, np.zeros(len(both), dtype=np.int64), both, [[pref]],
                       where=[where(rec, "preference")])
        cpass, gpass = ok[: len(cidx)], ok[len(cidx):]
        gold_set = {corpus.ids[int(d)] for d in gidx}
        ranked = _rank(cands)
        passed = {d for (d, _), p in zip(cands, cpass.tolist()) if p}
        hard_top = [d for d in ranked if d in passed][:k]
        soft_top = _rank([(d, s + (boost if d in passed else 0.0)) for d, s in cands])[:k]
        h = len(gold_set.intersection(hard_top))
        s_ = len(gold_set.intersection(soft_top))
        hard_r.append(h / len(gold_set))
        soft_r.append(s_ / len(gold_set))
        hard_p.append(h / k)
        soft_p.append(s_ / k)
        excluded.append(0.0 if gpass.any() else 1.0)
    n = len(hard_r)
    if n == 0:
        raise MissingEvidence("hard vs soft: no queries with entitlement-eligible gold and a run")
    gain = np.asarray(hard_p) - np.asarray(soft_p)
    ci = bootstrap_ci(gain, n_resamples=n_resamples, level=level, seed=seed)
    excl = float(np.mean(excluded))
    rdelta = float(np.mean(hard_r) - np.mean(soft_r))
    reasons = []
    ok1 = ci[0] >= delta_min
    ok2 = excl <= epsilon
    ok3 = rdelta >= -recall_loss_max
    reasons.append(f"lower bound of precision gain {ci[0]:.4f} {'>=' if ok1 else '<'} delta_min {delta_min}")
    reasons.append(f"exclusion rate {excl:.4f} {'<=' if ok2 else '>'} epsilon {epsilon}")
    reasons.append(f"recall delta {rdelta:.4f} {'>=' if ok3 else '<'} -recall_loss_max {-recall_loss_max}")
    f = pref
    return HardSoftResult(
        preference=f"{f.field} {f.op} {','.join(f.values)}", n_queries=n, k=k, boost=boost,
        hard_recall=float(np.mean(hard_r)), soft_recall=float(np.mean(soft_r)),
        hard_precision=float(np.mean(hard_p)), soft_precision=float(np.mean(soft_p)),
        precision_gain=float(gain.mean()), precision_gain_ci=ci, exclusion_rate=excl, recall_delta=rdelta,
        recommendation="hard" if (ok1 and ok2 and ok3) else "soft", reasons=reasons,
        params={"delta_min": delta_min, "epsilon": epsilon, "recall_loss_max": recall_loss_max, "level": level,
                "n_resamples": n_resamples, "seed": seed},
    )
