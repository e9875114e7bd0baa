"""The hierarchy metric family: scores the ``labels`` section of records.

One row per record that has a ``labels`` section with both ``gold`` and ``pred`` lists
(``{"labels": {"gold": ["T1003.001"], "pred": ["T1003"]}}``; an empty ``pred`` list is a NIL
prediction, an empty ``gold`` list says the gold answer is NIL). Records without the section,
or with ``gold``/``pred`` absent, are kept in ``Evaluation.unscored`` with the reason.

Stats per row (all additive, see :class:`HierarchyFamily`): the sums behind micro hP/hR/hF1,
the per-item (macro) values and their counts, exact matches, Wu-Palmer, one error counter per
confusion category and the hierarchy distance of errors.

Confusion categories of a wrong row, first match wins: ``unknown`` (an id the ontology lacks,
with ``on_unknown="count"``), ``inactive`` (a deprecated/revoked predicted id, with
``on_status="count"``), ``nil_pred`` (gold names nodes, the prediction is NIL), ``nil_gold``
(gold is NIL, a node was predicted), ``multi`` (several nodes on a side: no single relation),
then the relation of the predicted to the gold node (``parent`` ... ``unrelated``, see
:func:`~kg_rageval.hierarchy.relation_codes`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import InputError, MissingEvidence, UnknownIdError
from ..evaluation import Evaluation, Family, Metric, harmonic, mean_of, ratio
from ..ontology import ACTIVE, RELATIONS, STATUS_NAMES, Ontology
from ..records import Record, located, read_records, where
from .kernels import hierarchical_counts, path_length, relation_codes, wu_palmer

ERROR_CATEGORIES: tuple[str, ...] = RELATIONS[1:] + ("nil_pred", "nil_gold", "multi", "unknown", "inactive")
"""Every category an error row can fall in (its ``relation`` detail)."""

ON_UNKNOWN = ("error", "count", "alias")
ON_STATUS = ("error", "count", "replace")


class HierarchyFamily(Family):
    """Hierarchical P/R/F1, Wu-Palmer and the confusion taxonomy as sums.

    * micro ``hierarchical_precision = Σ inter / Σ n_pred_aug``, ``hierarchical_recall =
      Σ inter / Σ n_gold_aug``, ``hierarchical_f1`` their harmonic mean (Kosmopoulos et al.
      2015; augmented sets, see :func:`~kg_rageval.hierarchy.hierarchical_counts`);
    * macro (per item) ``macro_hierarchical_precision`` = mean of ``inter / n_pred_aug`` over
      items with a non-empty augmented prediction; recall likewise over items with a non-empty
      augmented gold set; ``macro_hierarchical_f1`` = mean of ``2·inter / (n_pred_aug +
      n_gold_aug)`` over items where that denominator is not 0 (equal to the per-item harmonic
      mean; 0 for a NIL prediction against a gold node);
    * ``exact_accuracy`` = rows whose predicted set equals the gold set (NIL = NIL counts) / rows;
    * ``wu_palmer`` = mean Wu-Palmer over rows with one gold and one predicted known node;
    * ``error_count_<c>`` per category ``c`` of :data:`ERROR_CATEGORIES`, ``error_rate_<c> =
      error_count_<c> / errors``; ``errors`` = rows that are not exact;
    * ``mean_error_distance`` = mean shortest path length (up to a common ancestor and down)
      between gold and predicted node over errors with one known node on each side.

    An empty denominator gives a missing metric with its reason, never 0 or 1.
    """

    name = "hierarchy"
    version = "1"
    stats = (
        "items",
        "inter",
        "n_pred_aug",
        "n_gold_aug",
        "hp_sum",
        "hp_n",
        "hr_sum",
        "hr_n",
        "hf_sum",
        "hf_n",
        "exact",
        "wup_sum",
        "wup_n",
        "errors",
        "dist_sum",
        "dist_n",
        "pred_inactive",
        "gold_inactive",
    ) + tuple(f"err_{c}" for c in ERROR_CATEGORIES)

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        s = {k: float(sums.get(k, 0.0)) for k in self.stats}
        hp = ratio("hierarchical_precision", s["inter"], s["n_pred_aug"],
                   missing="no predicted nodes (every prediction is NIL or the root)")
        hr = ratio("hierarchical_recall", s["inter"], s["n_gold_aug"],
                   missing="no gold nodes (every gold answer is NIL or the root)")
        out = {
            "hierarchical_precision": hp,
            "hierarchical_recall": hr,
            "hierarchical_f1": harmonic("hierarchical_f1", hp, hr),
            "macro_hierarchical_precision": mean_of(
                "macro_hierarchical_precision", s["hp_sum"], s["hp_n"],
                missing="no item with a predicted node"),
            "macro_hierarchical_recall": mean_of(
                "macro_hierarchical_recall", s["hr_sum"], s["hr_n"],
                missing="no item with a gold node"),
            "macro_hierarchical_f1": mean_of(
                "macro_hierarchical_f1", s["hf_sum"], s["hf_n"],
                missing="no item with a gold or predicted node"),
            "exact_accuracy": ratio("exact_accuracy", s["exact"], s["items"], missing="no items"),
            "wu_palmer": mean_of("wu_palmer", s["wup_sum"], s["wup_n"],
                                 missing="no item with one gold and one predicted known node"),
            "errors": Metric("errors", s["errors"]),
            "mean_error_distance": mean_of(
                "mean_error_distance", s["dist_sum"], s["dist_n"],
                missing="no error between two known single nodes"),
        }
        for c in ERROR_CATEGORIES:
            out[f"error_count_{c}"] = Metric(f"error_count_{c}", s[f"err_{c}"])
        for c in ERROR_CATEGORIES:
            out[f"error_rate_{c}"] = ratio(f"error_rate_{c}", s[f"err_{c}"], s["errors"],
                                           missing="no errors")
        return out


FAMILY = HierarchyFamily()


# ---------------------------------------------------------------------------- reading labels
def _label_list(record: Record, side: str) -> list[str] | None:
    labels = record["labels"]
    if side not in labels:
        return None
    value = labels[side]
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InputError(
            f"expected a list of ontology ids (strings), found {value!r}",
            source=record.get("_source"),
            location=where(record, f"labels.{side}"),
        )
    return list(dict.fromkeys(value))


def _lookup(o: Ontology, node_id: str) -> int:
    i = o._index.get(node_id)
    if i is None:
        i = o._index.get(o.expand_curie(node_id), -1)
    return i


def score_hierarchy(
    ontology: Ontology,
    records: Iterable[Record] | str | Path,
    *,
    include_root: bool = False,
    lca_bounded: bool = False,
    on_unknown: str = "error",
    on_status: str = "error",
    wup_lcs: str = "nltk",
    wup_identical: str = "one",
) -> Evaluation:
    """Score the ``labels`` section of ``records`` against ``ontology``.

    Parameters
    ----------
    records
        Record dicts (as read by :func:`kg_rageval.records.read_records`) or a JSONL path.
    include_root, lca_bounded
        Augmented-set conventions of :func:`~kg_rageval.hierarchy.hierarchical_counts`
        (default: the root is left out, it gives free credit; full ancestor closure).
    on_unknown
        ``"error"`` (default): any id the ontology lacks raises :class:`UnknownIdError` listing
        every such id with its record and field. ``"count"``: an unknown id is scored as an
        isolated concept (augmented set = itself) and a wrong row with one is an ``unknown``
        error. ``"alias"``: an alternative id (:meth:`Ontology.canonical`) is scored as its
        concept and counted in ``meta["n_aliased"]``; other unknown ids raise as under "error".
    on_status
        Deprecated or revoked ids. ``"error"`` (default) raises; ``"count"`` scores the node
        where it stands and files a wrong row whose prediction is inactive as ``inactive``;
        ``"replace"`` maps each inactive id that has a replacement (``replaced_by``) to it,
        and counts those without one as under ``"count"``.
    wup_lcs, wup_identical
        Wu-Palmer conventions (:func:`~kg_rageval.hierarchy.wu_palmer`); by default an exact
        match scores 1 (``wup_identical="one"``), the deliberate departure from NLTK, whose
        convention can score a node against itself below 1 in a polyhierarchy.

    Raises
    ------
    InputError
        No records, or a malformed ``labels`` section (the message names record and field).
    MissingEvidence
        No record has a scorable ``labels`` section: there is nothing to score.
    """
    if on_unknown not in ON_UNKNOWN:
        raise InputError(f"on_unknown must be one of {', '.join(ON_UNKNOWN)}, not {on_unknown!r}")
    if on_status not in ON_STATUS:
        raise InputError(f"on_status must be one of {', '.join(ON_STATUS)}, not {on_status!r}")
    source = str(records) if isinstance(records, (str, Path)) else None
    if source is not None:
        records = read_records(source)
    records = list(records)
    if not records:
        raise InputError("no records to score", source=source)

    unscored: list[dict[str, str]] = []
    items: list[tuple[Record, list[str], list[str]]] = []
    for rec in records:
        if not isinstance(rec.get("labels"), dict):
            reason = "no labels section" if rec.get("labels") is None else "labels is not an object"
            if reason != "no labels section":
                raise InputError(f"expected an object, found {rec['labels']!r}",
                                 source=rec.get("_source"), location=where(rec, "labels"))
            unscored.append({"record_id": str(rec.get("id")), "reason": reason})
            continue
        gold = _label_list(rec, "gold")
        pred = _label_list(rec, "pred")
        if gold is None or pred is None:
            unscored.append({"record_id": str(rec.get("id")),
                             "reason": f"labels.{'gold' if gold is None else 'pred'} is absent"})
            continue
        items.append((rec, gold, pred))
    if not items:
        raise MissingEvidence(
            (f"{source}: " if source else "")
            + f"none of the {len(records)} records has a labels section with gold and pred lists"
        )

    # ---- resolve ids, collecting every problem before raising
    unknown: list[tuple[str, str]] = []
    inactive: list[str] = []
    replaced = 0
    aliased = 0
    resolved: list[tuple[list[int], list[str], list[int], list[str]]] = []
    pred_inactive = np.zeros(len(items), dtype=np.int64)
    gold_inactive = np.zeros(len(items), dtype=np.int64)
    for k, (rec, gold, pred) in enumerate(items):
        sides = []
        for side, ids in (("gold", gold), ("pred", pred)):
            known: list[int] = []
            unk: list[str] = []
            for pos, node_id in enumerate(ids):
                i = _lookup(ontology, node_id)
                if i < 0 and on_unknown == "alias":
                    i = ontology.aliases.get(node_id, -1)
                    aliased += i >= 0
                if i < 0:
                    unk.append(node_id)
                    unknown.append((node_id, located(rec, f"labels.{side}[{pos}]")))
                    continue
                st = int(ontology.status[i])
                if st != ACTIVE:
                    rep = int(ontology.replaced_by[i])
                    if on_status == "replace" and rep >= 0:
                        i = rep
                        replaced += 1
                    elif on_status == "error":
                        inactive.append(
                            f"{node_id!r} is {STATUS_NAMES[st]}"
                            + (f" (replaced by {ontology.ids[rep]!r})" if rep >= 0 else "")
                            + f" ({located(rec, f'labels.{side}[{pos}]')})"
                        )
                    else:
                        (gold_inactive if side == "gold" else pred_inactive)[k] = 1
                known.append(i)
            sides.append((list(dict.fromkeys(known)), unk))
        resolved.append((sides[0][0], sides[0][1], sides[1][0], sides[1][1]))
    if unknown and on_unknown != "count":
        first = unknown[0][1] + (f" and {len(unknown) - 1} more places" if len(unknown) > 1 else "")
        n_alt = len({u for u, _ in unknown if u in ontology.aliases})
        raise UnknownIdError(
            sorted({u for u, _ in unknown}),
            where=first,
            hint="pass on_unknown='count' (CLI: --on-unknown count) to score them as a category"
            + (f"; {n_alt} of them are alternative ids: on_unknown='alias' maps them" if n_alt else ""),
        )
    if inactive:
        shown = "; ".join(inactive[:10]) + (f" (and {len(inactive) - 10} more)" if len(inactive) > 10 else "")
        raise InputError(
            f"deprecated or revoked ids: {shown}; pass on_status='count' or 'replace' "
            "(CLI: --on-status) to score them"
        )

    ev = _score(ontology, items, resolved, pred_inactive, gold_inactive, unscored,
                include_root=include_root, lca_bounded=lca_bounded, wup_lcs=wup_lcs,
                wup_identical=wup_identical, on_unknown=on_unknown, on_status=on_status,
                replaced=replaced)
    if on_unknown == "alias":
        ev.meta["n_aliased"] = int(aliased)
    return ev


def _score(ontology, items, resolved, pred_inactive, gold_inactive, unscored, *, include_root,
           lca_bounded, wup_lcs, wup_identical, on_unknown, on_status, replaced) -> Evaluation:
    m = len(items)
    gk = [r[0] for r in resolved]
    gu = [r[1] for r in resolved]
    pk = [r[2] for r in resolved]
    pu = [r[3] for r in resolved]
    single_g = np.array([len(g) == 1 and not u for g, u in zip(gk, gu)])
    single_p = np.array([len(p) == 1 and not u for p, u in zip(pk, pu)])
    all_single = bool(single_g.all() and single_p.all())
    if lca_bounded:
        ok_lca = np.array([len(g) + len(u) <= 1 and len(p) + len(v) <= 1
                           for g, u, p, v in zip(gk, gu, pk, pu)])
        if not ok_lca.all() or any(gu) or any(pu):
            raise InputError(
                "lca_bounded=True needs at most one known gold and one known predicted node "
                f"per record ({int((~ok_lca).sum())} records have more, or unknown ids)"
            )
        g1 = np.array([g[0] if g else -1 for g in gk], dtype=np.int64)
        p1 = np.array([p[0] if p else -1 for p in pk], dtype=np.int64)
        inter, n_pred, n_gold = hierarchical_counts(ontology, g1, p1, include_root=include_root,
                                                    lca_bounded=True)
    elif all_single:
        g1 = np.array([g[0] for g in gk], dtype=np.int64)
        p1 = np.array([p[0] for p in pk], dtype=np.int64)
        inter, n_pred, n_gold = hierarchical_counts(ontology, g1, p1, include_root=include_root)
    else:
        inter, n_pred, n_gold = hierarchical_counts(ontology, gk, pk, include_root=include_root)
    # unknown ids: isolated concepts, augmented set = the id itself
    extra_i = np.array([len(set(u) & set(v)) for u, v in zip(gu, pu)], dtype=np.int64)
    inter = inter + extra_i
    n_pred = n_pred + np.array([len(v) for v in pu], dtype=np.int64)
    n_gold = n_gold + np.array([len(u) for u in gu], dtype=np.int64)

    f_inter = inter.astype(float)
    hp_n = (n_pred > 0).astype(float)
    hr_n = (n_gold > 0).astype(float)
    hf_den = (n_pred + n_gold).astype(float)
    hf_n = (hf_den > 0).astype(float)
    hp_sum = np.divide(f_inter, n_pred, out=np.zeros(m), where=n_pred > 0)
    hr_sum = np.divide(f_inter, n_gold, out=np.zeros(m), where=n_gold > 0)
    hf_sum = np.divide(2 * f_inter, hf_den, out=np.zeros(m), where=hf_den > 0)

    exact = np.array([set(g) == set(p) and set(u) == set(v)
                      for g, u, p, v in zip(gk, gu, pk, pu)])
    both = np.flatnonzero(single_g & single_p)
    g_both = np.array([gk[i][0] for i in both], dtype=np.int64)
    p_both = np.array([pk[i][0] for i in both], dtype=np.int64)
    relation = np.full(m, None, dtype=object)
    wup = np.full(m, None, dtype=object)
    wup_sum = np.zeros(m)
    wup_n = np.zeros(m)
    dist_sum = np.zeros(m)
    dist_n = np.zeros(m)
    if both.size:
        codes = relation_codes(ontology, g_both, p_both)
        relation[both] = np.asarray(RELATIONS, dtype=object)[codes]
        w = wu_palmer(ontology, g_both, p_both, lcs=wup_lcs, identical=wup_identical)
        wup[both] = w.tolist()
        wup_sum[both] = w
        wup_n[both] = 1.0
        wrong = codes != 0
        if wrong.any():
            d = path_length(ontology, g_both[wrong], p_both[wrong])
            dist_sum[both[wrong]] = d
            dist_n[both[wrong]] = 1.0
    errors = ~exact
    for i in range(m):
        if exact[i]:
            relation[i] = "exact"
            continue
        g_any = bool(gk[i] or gu[i])
        p_any = bool(pk[i] or pu[i])
        if gu[i] or pu[i]:
            relation[i] = "unknown"
        elif pred_inactive[i]:
            relation[i] = "inactive"
        elif g_any and not p_any:
            relation[i] = "nil_pred"
        elif p_any and not g_any:
            relation[i] = "nil_gold"
        elif not (single_g[i] and single_p[i]):
            relation[i] = "multi"
        # else: the hierarchical relation set above
    stats: dict[str, np.ndarray] = {
        "items": np.ones(m),
        "inter": f_inter,
        "n_pred_aug": n_pred.astype(float),
        "n_gold_aug": n_gold.astype(float),
        "hp_sum": hp_sum,
        "hp_n": hp_n,
        "hr_sum": hr_sum,
        "hr_n": hr_n,
        "hf_sum": hf_sum,
        "hf_n": hf_n,
        "exact": exact.astype(float),
        "wup_sum": wup_sum,
        "wup_n": wup_n,
        "errors": errors.astype(float),
        "dist_sum": dist_sum,
        "dist_n": dist_n,
        "pred_inactive": pred_inactive.astype(float),
        "gold_inactive": gold_inactive.astype(float),
    }
    for c in ERROR_CATEGORIES:
        stats[f"err_{c}"] = (errors & (relation == c)).astype(float)

    ids = ontology.ids

    def one(known: list[int], unk: list[str]) -> str | None:
        names = [ids[i] for i in known] + unk
        return names[0] if len(names) == 1 else ("|".join(names) if names else None)

    keys: dict[str, np.ndarray] = {
        "gold_node": np.asarray([ids[g[0]] if len(g) == 1 and not u else None
                                 for g, u in zip(gk, gu)], dtype=object),
    }
    slice_names = sorted({k for rec, _, _ in items if isinstance(rec.get("slices"), dict)
                          for k in rec["slices"]})
    for name in slice_names:
        keys[f"slice:{name}"] = np.asarray(
            [_slice_value(rec, name) for rec, _, _ in items], dtype=object)
    details = {
        "relation": relation,
        "gold": np.asarray([one(g, u) for g, u in zip(gk, gu)], dtype=object),
        "pred_node": np.asarray([one(p, v) for p, v in zip(pk, pu)], dtype=object),
        "wup": wup,
    }
    meta: dict[str, Any] = {
        "ontology": ontology.source,
        "ontology_hash": ontology.content_hash,
        "include_root": include_root,
        "lca_bounded": lca_bounded,
        "on_unknown": on_unknown,
        "on_status": on_status,
        "wup_lcs": wup_lcs,
        "wup_identical": wup_identical,
    }
    if replaced:
        meta["replaced_ids"] = replaced
    return Evaluation(
        family=FAMILY,
        record_ids=np.asarray([str(rec["id"]) for rec, _, _ in items], dtype=object),
        stats=stats,
        keys=keys,
        details=details,
        unscored=unscored,
        meta=meta,
    )


def _slice_value(rec: Record, name: str) -> Any:
    s = rec.get("slices")
    if not isinstance(s, dict):
        return None
    v = s.get(name)
    return v if v is None or isinstance(v, (str, int, float, bool)) else str(v)


# ---------------------------------------------------------------------------- summaries
def relation_counts(evaluation: Evaluation) -> dict[str, int]:
    """Rows per ``relation`` detail (``exact`` included), in category order."""
    counts = Counter(evaluation.details["relation"].tolist())
    order = ("exact",) + ERROR_CATEGORIES
    return {c: int(counts[c]) for c in order if counts.get(c)}


def confused_pairs(evaluation: Evaluation, top: int = 10) -> list[dict[str, Any]]:
    """The most frequent (gold, predicted) pairs among wrong rows, with their relation and
    count; ties by gold then predicted id. NIL sides show as ``None``."""
    rel = evaluation.details["relation"]
    gold = evaluation.details.get("gold", evaluation.keys["gold_node"])
    pred = evaluation.details["pred_node"]
    counts: Counter = Counter()
    for g, p, r in zip(gold.tolist(), pred.tolist(), rel.tolist()):
        if r != "exact":
            counts[(g, p, r)] += 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0][0]), str(kv[0][1])))
    return [{"gold": g, "pred": p, "relation": r, "count": c} for (g, p, r), c in ranked[:top]]
