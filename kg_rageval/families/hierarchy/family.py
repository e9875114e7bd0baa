"""The hierarchy metric family: scores the ``labels`` section of records.

One row per record that has a ``labels`` section with both ``gold`` and ``pred`` lists
(``{"labels": {"gold": ["T1003.001"], "pred": ["T1003"]}}``; an empty ``pred`` list is a NIL
prediction, an empty ``gold`` list says the gold answer is NIL). Records without the section,
or with ``gold`` absent, are kept in ``Evaluation.unscored`` with the reason and its code
(:mod:`kg_rageval.records` reason codes: ``no_section``, ``no_gold``).

**A missing prediction counts.** A record with gold nodes but no ``pred`` (the key absent: the
system produced nothing) is scored as an empty prediction — every gold node is missed, so it
lowers recall — and counted in ``n_missing_run`` (metric ``missing_run_rate``), which the
audit's completeness check reads. With NIL gold an absent prediction cannot be scored as
empty (that would be a correct NIL): the record is unscored with code ``missing_prediction``.

Stats per row (all additive, see :class:`HierarchyFamily`): the sums behind micro hP/hR/hF1,
the per-item (macro) values and their counts, exact matches, Wu-Palmer, one error counter per
confusion category and the hierarchy distance of errors.

Confusion categories of a wrong row, first match wins: ``not_in_ontology`` (an id the
ontology lacks: a predicted one by default, a gold one with ``on_unknown_gold="count"``),
``inactive`` (a deprecated/revoked predicted id, ``on_status="flag"``, the default), ``nil_pred`` (gold names nodes, the prediction is NIL), ``nil_gold``
(gold is NIL, a node was predicted), ``multi`` (several nodes on a side: no single relation),
then the relation of the predicted to the gold node (``parent`` ... ``unrelated``, see
:func:`~kg_rageval.families.hierarchy.relation_codes`).
"""

from __future__ import annotations

import heapq
import itertools
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import chain, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, cast

import numpy as np

from kg_rageval.base.errors import InputError, MissingEvidence, UnknownIdError
from kg_rageval.families.hierarchy.closure import closure
from kg_rageval.families.hierarchy.kernels import _root_excluded, hierarchical_counts, pair_measures
from kg_rageval.ontology import (
    ACTIVE,
    INACTIVE,
    NOT_IN_ONTOLOGY,
    RELATIONS,
    STATUS_NAMES,
    IdOptions,
    IdResolver,
    Ontology,
)
from kg_rageval.records import Record, located, read_records, slice_texts, where
from kg_rageval.records import gold_node as gold_node_rule
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, harmonic, mean_of, named, ratio

ERROR_CATEGORIES: tuple[str, ...] = RELATIONS[1:] + (
    "nil_pred",
    "nil_gold",
    "multi",
    NOT_IN_ONTOLOGY,
    INACTIVE,
)
"""Every category an error row can fall in (its ``relation`` detail)."""


class HierarchyFamily(Family):
    """Hierarchical P/R/F1, Wu-Palmer and the confusion taxonomy as sums.

    * micro ``hierarchical_precision = Σ inter / Σ n_pred_aug``, ``hierarchical_recall =
      Σ inter / Σ n_gold_aug``, ``hierarchical_f1`` their harmonic mean (Kosmopoulos et al.
      2015; augmented sets, see :func:`~kg_rageval.families.hierarchy.hierarchical_counts`);
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
    version = "2"
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
        "n_missing_run",
    ) + tuple(f"err_{c}" for c in ERROR_CATEGORIES)
    additive_meta = ("replaced_ids", "n_aliased")

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        s = {k: float(sums.get(k, 0.0)) for k in self.stats}
        hp = ratio(
            "hierarchical_precision",
            s["inter"],
            s["n_pred_aug"],
            missing="no predicted nodes (every prediction is NIL or the root)",
        )
        hr = ratio(
            "hierarchical_recall",
            s["inter"],
            s["n_gold_aug"],
            missing="no gold nodes (every gold answer is NIL or the root)",
        )
        out = named(
            hp,
            hr,
            harmonic("hierarchical_f1", hp, hr),
            mean_of(
                "macro_hierarchical_precision",
                s["hp_sum"],
                s["hp_n"],
                missing="no item with a predicted node",
            ),
            mean_of("macro_hierarchical_recall", s["hr_sum"], s["hr_n"], missing="no item with a gold node"),
            mean_of(
                "macro_hierarchical_f1",
                s["hf_sum"],
                s["hf_n"],
                missing="no item with a gold or predicted node",
            ),
            ratio("exact_accuracy", s["exact"], s["items"], missing="no items"),
            mean_of(
                "wu_palmer",
                s["wup_sum"],
                s["wup_n"],
                missing="no item with one gold and one predicted known node",
            ),
            Metric("errors", s["errors"]),
            mean_of(
                "mean_error_distance",
                s["dist_sum"],
                s["dist_n"],
                missing="no error between two known single nodes",
            ),
        )
        out.add(ratio("missing_run_rate", s["n_missing_run"], s["items"], missing="no items"))
        for c in ERROR_CATEGORIES:
            out.add(Metric(f"error_count_{c}", s[f"err_{c}"]))
        for c in ERROR_CATEGORIES:
            out.add(ratio(f"error_rate_{c}", s[f"err_{c}"], s["errors"], missing="no errors"))
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


def score_hierarchy(
    ontology: Ontology,
    records: Iterable[Record] | str | Path,
    *,
    include_root: bool = False,
    lca_bounded: bool = False,
    wup_lcs: str = "nltk",
    wup_identical: str = "one",
    **ids: Any,
) -> Evaluation:
    """Score the ``labels`` section of ``records`` against ``ontology``.

    Parameters
    ----------
    records
        Record dicts (as read by :func:`kg_rageval.records.read_records`) or a JSONL path.
    include_root, lca_bounded
        Augmented-set conventions of :func:`~kg_rageval.families.hierarchy.hierarchical_counts`
        (default: the root is left out, it gives free credit; full ancestor closure).
    on_unknown, on_unknown_gold, on_status, on_status_gold, aliases
        How ids are resolved: the one convention of every family
        (:mod:`kg_rageval.ontology.resolver`). By default a gold id the ontology lacks, or a
        deprecated/revoked gold id, raises naming file, line and field; a predicted id the
        ontology lacks is scored as an isolated concept (augmented set = itself) and a wrong
        row with one is a ``not_in_ontology`` error; a deprecated/revoked predicted id is
        scored where it stands and a wrong row with one is ``inactive``; alternative ids
        (aliases) score as their concept (``meta["n_aliased"]``); ``"replace"`` maps inactive
        ids with a replacement to it (``meta["replaced_ids"]``).
    wup_lcs, wup_identical
        Wu-Palmer conventions (:func:`~kg_rageval.families.hierarchy.wu_palmer`); by default an exact
        match scores 1 (``wup_identical="one"``), the deliberate departure from NLTK, whose
        convention can score a node against itself below 1 in a polyhierarchy.

    Raises
    ------
    InputError
        No records, or a malformed ``labels`` section (the message names record and field).
    MissingEvidence
        No record has a scorable ``labels`` section: there is nothing to score.
    """
    opts = IdOptions.of(**ids)
    source = str(records) if isinstance(records, (str, Path)) else None
    if isinstance(records, (str, Path)):
        records = read_records(str(records))
    records = list(records)
    if source is None and records and isinstance(records[0], Mapping):
        source = records[0].get("_source")  # read from a file: name it
    if not records:
        raise InputError("no records to score", source=source)

    col = _collect(records)
    if col is None:  # something is malformed: the per-record reader raises the first problem
        col = _collect_checked(records)
    if not col.items:
        raise MissingEvidence(
            (f"{source}: " if source else "")
            + f"none of the {len(records)} records has a labels section with gold and pred lists"
        )
    res = _resolve(ontology, col, opts)
    return _score(
        ontology,
        col,
        res,
        include_root=include_root,
        lca_bounded=lca_bounded,
        wup_lcs=wup_lcs,
        wup_identical=wup_identical,
        opts=opts,
    )


# ---------------------------------------------------------------------------- collecting
_ABSENT = object()


class _Columns:
    """The scorable records as flat columns: ``items`` (the records), per side the label lists
    (``gold``/``pred``, strings deduplicated in order), their lengths and offsets and all their
    ids in one flat list; ``slices`` (each record's ``slices`` value) and ``unscored``."""

    __slots__ = ("flat", "gold", "items", "missing", "pred", "slices", "unscored")

    def __init__(self, items, gold, pred, slices, unscored, flat=None, missing=None):
        #: positions (in ``items``) of records scored as an empty prediction: ``pred`` absent
        self.missing: list[int] = missing or []
        #: per side, ``(lens, flat ids)`` when already computed
        self.flat: dict[str, tuple[np.ndarray, list[str]]] = flat or {}
        self.items: list[Record] = items
        self.gold: list[list[str]] = gold
        self.pred: list[list[str]] = pred
        self.slices: list[Any] = slices
        self.unscored: list[dict[str, str]] = unscored


def _collect(records: list[Record]) -> _Columns | None:
    """The records as :class:`_Columns`, or ``None`` when something is malformed.

    Bulk path first: when every record's ``labels`` is a dict whose ``gold`` and ``pred`` are
    lists, the columns are pulled out with C-level ``map`` calls (no per-record Python code);
    otherwise :func:`_collect_loop` handles the absent sections and the NIL/string forms."""
    if type(records) is not list or any(type(r) is not dict for r in records[:1]):
        return _collect_loop(records)
    try:
        labels = list(map(dict.get, records, repeat("labels")))
    except TypeError:
        return _collect_loop(records)
    if set(map(type, labels)) != {dict}:
        return _collect_loop(records)
    label_maps = cast("list[dict[str, Any]]", labels)
    absent = _ABSENT
    golds = list(map(dict.get, label_maps, repeat("gold"), repeat(absent)))
    preds = list(map(dict.get, label_maps, repeat("pred"), repeat(absent)))
    if set(map(type, golds)) != {list} or set(map(type, preds)) != {list}:
        return _collect_loop(records)
    done = {}
    for name, side in (("gold", cast("list[list[Any]]", golds)), ("pred", cast("list[list[Any]]", preds))):
        lens = np.fromiter(map(len, side), dtype=np.int64, count=len(side))
        multi = np.flatnonzero(lens > 1)
        for k in multi.tolist():
            try:
                side[k] = list(dict.fromkeys(side[k]))
            except TypeError:
                return None
        if multi.size:
            lens[multi] = np.fromiter(
                (len(side[k]) for k in multi.tolist()), dtype=np.int64, count=multi.size
            )
        flat = list(chain.from_iterable(side))
        if flat and (set(map(type, flat)) != {str} or "" in flat):
            return None
        done[name] = (lens, flat)
    slices = list(map(dict.get, records, repeat("slices")))
    return _Columns(records, golds, preds, slices, [], done)


def _collect_loop(records: list[Record]) -> _Columns | None:
    """One pass over ``records`` for the common, well-formed case; ``None`` as soon as anything
    is malformed (the caller then runs :func:`_collect_checked`, which raises the first problem
    in record order with its message). Element types are checked afterwards, over the flat id
    list, at C speed."""
    items: list[Record] = []
    golds: list[list[str]] = []
    preds: list[list[str]] = []
    slices: list[Any] = []
    unscored: list[dict[str, str]] = []
    missing: list[int] = []
    absent = _ABSENT
    for rec in records:
        labels = rec.get("labels")
        if type(labels) is not dict:
            if labels is None:
                unscored.append(_unscored(rec, "no labels section", "no_section"))
                continue
            return None  # not an object (or a dict subclass): the checked path decides
        gold = labels.get("gold", absent)
        pred = labels.get("pred", absent)
        if type(gold) is not list:
            gold = _normalise(gold)
            if gold is None:
                return None
        elif len(gold) > 1:
            try:
                gold = list(dict.fromkeys(gold))
            except TypeError:
                return None
        if type(pred) is not list:
            pred = _normalise(pred)
            if pred is None:
                return None
        elif len(pred) > 1:
            try:
                pred = list(dict.fromkeys(pred))
            except TypeError:
                return None
        if gold is absent or pred is absent:
            pred = _absent_pred(rec, gold, pred, absent, unscored, missing, len(items))
            if pred is absent:
                continue
        items.append(rec)
        golds.append(gold)
        preds.append(pred)
        slices.append(rec.get("slices"))
    for side in (golds, preds):
        flat = list(chain.from_iterable(side))
        if flat and (set(map(type, flat)) != {str} or "" in flat):
            return None
    return _Columns(items, golds, preds, slices, unscored, missing=missing)


def _unscored(rec: Record, reason: str, code: str) -> dict[str, str]:
    return unscored_entry(rec.get("id"), reason, code)


def _absent_pred(
    rec: Record, gold: Any, pred: Any, absent: Any, unscored: list, missing: list[int], position: int
) -> Any:
    """A record whose ``gold`` or ``pred`` is absent: unscored (returns ``absent``) or, with gold
    nodes but no prediction, scored as the empty prediction (returns ``[]``, position noted)."""
    if gold is absent:
        unscored.append(_unscored(rec, "labels.gold is absent", "no_gold"))
        return absent
    if gold:
        missing.append(position)
        return []
    unscored.append(
        _unscored(
            rec, "labels.pred is absent (NIL gold: not scored as a NIL prediction)", "missing_prediction"
        )
    )
    return absent


def _normalise(value: Any) -> Any:
    """A non-list label value as a list (``None`` = NIL, a non-empty string = one id), the
    absent marker unchanged, ``None`` when malformed."""
    if value is _ABSENT:
        return value
    if value is None:
        return []
    if type(value) is str and value:
        return [value]
    return None


def _collect_checked(records: list[Record]) -> _Columns:
    """Per-record reading with full checks: raises :class:`InputError` at the first malformed
    record (in record order)."""
    items: list[Record] = []
    golds, preds, slices = [], [], []
    unscored: list[dict[str, str]] = []
    missing: list[int] = []
    for rec in records:
        if not isinstance(rec.get("labels"), dict):
            reason = "no labels section" if rec.get("labels") is None else "labels is not an object"
            if reason != "no labels section":
                raise InputError(
                    f"expected an object, found {rec['labels']!r}",
                    source=rec.get("_source"),
                    location=where(rec, "labels"),
                )
            unscored.append(_unscored(rec, reason, "no_section"))
            continue
        gold = _label_list(rec, "gold")
        pred = _label_list(rec, "pred")
        if gold is None or pred is None:
            pred = _absent_pred(
                rec,
                _ABSENT if gold is None else gold,
                _ABSENT if pred is None else pred,
                _ABSENT,
                unscored,
                missing,
                len(items),
            )
            if pred is _ABSENT or gold is None:  # an absent gold always returns _ABSENT
                continue
        items.append(rec)
        golds.append(gold)
        preds.append(pred)
        slices.append(rec.get("slices"))
    return _Columns(items, golds, preds, slices, unscored, missing=missing)


# ---------------------------------------------------------------------------- resolving ids
class _Side:
    """One side (gold or pred) of every row, resolved: ``lens`` (ids per row), ``item`` (row of
    each flat entry), ``idx`` (node index per flat entry, -1 = unknown), ``flat`` (the strings)."""

    __slots__ = ("flat", "idx", "item", "lens", "name", "starts")

    def __init__(self, name: str, lists: list[list[str]], done=None):
        self.name = name
        m = len(lists)
        if done is None:
            done = (np.fromiter(map(len, lists), dtype=np.int64, count=m), list(chain.from_iterable(lists)))
        self.lens, self.flat = done
        self.starts = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(self.lens, out=self.starts[1:])
        self.item = np.repeat(np.arange(m, dtype=np.int64), self.lens)
        self.idx = np.zeros(0, dtype=np.int64)

    def pos(self, j: int) -> int:
        """Position of flat entry ``j`` in its record's (deduplicated) list."""
        return j - int(self.starts[self.item[j]])


@dataclass(slots=True, eq=False)
class _Resolved:
    gold: _Side
    pred: _Side
    pred_inactive: np.ndarray
    gold_inactive: np.ndarray
    replaced: int
    aliased: int


def _resolve(o: Ontology, col: _Columns, opts: IdOptions) -> _Resolved:
    """Resolve every id through the :class:`~kg_rageval.ontology.IdResolver` conventions,
    collecting every problem (in record, side, position order) before raising: unknown ids
    that the options make an error first, then inactive ones."""
    m = len(col.items)
    sides = (_Side("gold", col.gold, col.flat.get("gold")), _Side("pred", col.pred, col.flat.get("pred")))
    res = _Resolved(
        *sides,
        pred_inactive=np.zeros(m, dtype=np.int64),
        gold_inactive=np.zeros(m, dtype=np.int64),
        replaced=0,
        aliased=0,
    )
    resolver = IdResolver(o, opts)
    status = np.asarray(o.status)
    replaced_by = np.asarray(o.replaced_by, dtype=np.int64)
    unknown: list[tuple[int, int, int]] = []  # (row, side, flat entry)
    inactive: list[tuple[int, int, int]] = []
    for s_no, side in enumerate(sides):
        gold = s_no == 0
        side.idx, n_alias = resolver.lookup(side.flat)
        idx = side.idx
        res.aliased += n_alias
        unk = np.flatnonzero(idx < 0)
        if unk.size and (opts.on_unknown_gold if gold else opts.on_unknown) == "error":
            unknown += [(int(side.item[j]), s_no, int(j)) for j in unk[:1]]
            unknown += [(-1, s_no, int(j)) for j in unk[1:]]  # only the first place is shown
        known = np.flatnonzero(idx >= 0)
        bad = known[status[idx[known]] != ACTIVE]
        if not bad.size:
            continue
        flag = res.gold_inactive if gold else res.pred_inactive
        mode = opts.on_status_gold if gold else opts.on_status
        if mode == "replace":
            rep = replaced_by[idx[bad]]
            has = rep >= 0
            idx[bad[has]] = rep[has]
            res.replaced += int(has.sum())
            bad = bad[~has]  # without a replacement: flagged
        if mode == "error":
            inactive += [(int(side.item[j]), s_no, int(j)) for j in bad]
        else:
            flag[side.item[bad]] = 1
    if unknown:
        first = min((u for u in unknown if u[0] >= 0), key=lambda u: u[:2])
        side = sides[first[1]]
        n_unknown = len(unknown)
        where_first = located(col.items[first[0]], f"labels.{side.name}[{side.pos(first[2])}]")
        where_first += f" and {n_unknown - 1} more places" if n_unknown > 1 else ""
        names = sorted(
            {
                s.flat[j]
                for k, s in enumerate(sides)
                for j in np.flatnonzero(s.idx < 0).tolist()
                if (opts.on_unknown_gold if k == 0 else opts.on_unknown) == "error"
            }
        )
        opt = "on_unknown_gold" if any(u[1] == 0 for u in unknown) else "on_unknown"
        raise UnknownIdError(
            names,
            where=where_first,
            hint=f"pass {opt}='count' (CLI: --{opt.replace('_', '-')} count) to score them as the category "
            f"{NOT_IN_ONTOLOGY!r}",
        )
    if inactive:
        inactive.sort()
        msgs = []
        for row, s_no, j in inactive[:11]:
            side = sides[s_no]
            i = int(side.idx[j])
            st = int(status[i])
            rep = int(replaced_by[i])
            msgs.append(
                f"{side.flat[j]!r} is {STATUS_NAMES[st]}"
                + (f" (replaced by {o.ids[rep]!r})" if rep >= 0 else "")
                + f" ({located(col.items[row], f'labels.{side.name}[{side.pos(j)}]')})"
            )
        shown = "; ".join(msgs[:10]) + (f" (and {len(inactive) - 10} more)" if len(inactive) > 10 else "")
        gold_side = any(s_no == 0 for _, s_no, _ in inactive)
        opt = "on_status_gold" if gold_side else "on_status"
        raise InputError(
            f"deprecated or revoked ids: {shown}; pass {opt}='flag' or 'replace' "
            f"(CLI: --{opt.replace('_', '-')}) to score them"
        )
    return res


# ---------------------------------------------------------------------------- scoring
_IDS_CACHE: weakref.WeakKeyDictionary[Ontology, np.ndarray] = weakref.WeakKeyDictionary()


def _ids_array(o: Ontology) -> np.ndarray:
    arr = _IDS_CACHE.get(o)
    if arr is None:
        arr = np.empty(len(o), dtype=object)
        arr[:] = list(o.ids)
        _IDS_CACHE[o] = arr
    return arr


#: Category codes of a row: the relation codes 0..7, then these.
_CATEGORY_NAMES = RELATIONS + ("nil_pred", "nil_gold", "multi", NOT_IN_ONTOLOGY, INACTIVE)
_NIL_PRED, _NIL_GOLD, _MULTI, _NOT_IN_ONTOLOGY, _INACTIVE = range(len(RELATIONS), len(_CATEGORY_NAMES))


def _score(
    ontology,
    col: _Columns,
    res: _Resolved,
    *,
    include_root,
    lca_bounded,
    wup_lcs,
    wup_identical,
    opts: IdOptions,
) -> Evaluation:
    m = len(col.items)
    G, P = res.gold, res.pred
    ids = _ids_array(ontology)
    # Per row: known/unknown counts per side, the single known node (or -1), exactness and the
    # unknown-id overlap. Simple rows (at most one id per side, none unknown) are vectorised;
    # the others (several ids on a side, or an unknown id) are worked out one by one.
    g1 = np.full(m, -1, dtype=np.int64)
    p1 = np.full(m, -1, dtype=np.int64)
    for one_side, arr in ((G, g1), (P, p1)):
        sel = (one_side.lens == 1)[one_side.item]
        arr[one_side.item[sel]] = one_side.idx[sel]
    complex_rows = (G.lens > 1) | (P.lens > 1)
    complex_rows[G.item[G.idx < 0]] = True
    complex_rows[P.item[P.idx < 0]] = True
    n_gk = G.lens.copy()
    n_pk = P.lens.copy()
    n_gu = np.zeros(m, dtype=np.int64)
    n_pu = np.zeros(m, dtype=np.int64)
    exact = (g1 == p1) & (G.lens == P.lens)  # simple rows: same single node, or NIL = NIL
    extra_i = np.zeros(m, dtype=np.int64)
    crow = np.flatnonzero(complex_rows)
    cplx: dict[int, tuple[list[int], list[str], list[int], list[str]]] = {}
    for k in crow.tolist():
        gk, gu = _row_side(G, k)
        pk, pu = _row_side(P, k)
        cplx[k] = (gk, gu, pk, pu)
        n_gk[k], n_gu[k], n_pk[k], n_pu[k] = len(gk), len(gu), len(pk), len(pu)
        g1[k] = gk[0] if len(gk) == 1 else -1
        p1[k] = pk[0] if len(pk) == 1 else -1
        exact[k] = set(gk) == set(pk) and set(gu) == set(pu)
        extra_i[k] = len(set(gu) & set(pu))
    single_g = (n_gk == 1) & (n_gu == 0)
    single_p = (n_pk == 1) & (n_pu == 0)
    # every pair kernel at once, over the rows with one known node on each side
    one_one = np.flatnonzero((n_gk == 1) & (n_pk == 1))
    measures = pair_measures(ontology, g1[one_one], p1[one_one], lcs=wup_lcs, identical=wup_identical)

    if lca_bounded:
        ok_lca = ((n_gk + n_gu) <= 1) & ((n_pk + n_pu) <= 1)
        if not ok_lca.all() or n_gu.any() or n_pu.any():
            raise InputError(
                "lca_bounded=True needs at most one known gold and one known predicted node "
                f"per record ({int((~ok_lca).sum())} records have more, or unknown ids)"
            )
        inter, n_pred, n_gold = hierarchical_counts(
            ontology, g1, p1, include_root=include_root, lca_bounded=True
        )
    else:
        # at most one known node a side: closure row lengths, and |A(g) ∩ A(p)| from the pair
        # kernels below when both sides have one (minus the excluded root); several: sets
        excl = _root_excluded(ontology, include_root)
        lens = closure(ontology).lens
        n_gold = np.where(n_gk == 1, lens[np.maximum(g1, 0)] - excl, 0).astype(np.int64)
        n_pred = np.where(n_pk == 1, lens[np.maximum(p1, 0)] - excl, 0).astype(np.int64)
        inter = np.zeros(m, dtype=np.int64)
        one_one = np.flatnonzero((n_gk == 1) & (n_pk == 1))
        inter[one_one] = measures[0] - excl
        multi = np.flatnonzero((n_gk > 1) | (n_pk > 1))
        if multi.size:
            rows = multi.tolist()
            mi, mp, mg = hierarchical_counts(
                ontology, [cplx[k][0] for k in rows], [cplx[k][2] for k in rows], include_root=include_root
            )
            inter[multi], n_pred[multi], n_gold[multi] = mi, mp, mg
    # unknown ids: isolated concepts, augmented set = the id itself
    inter = inter + extra_i
    n_pred = n_pred + n_pu
    n_gold = n_gold + n_gu

    f_inter = inter.astype(float)
    hp_n = n_pred > 0  # 0/1 stats stay bool (1 byte a row; Evaluation keeps them)
    hr_n = n_gold > 0
    hf_den = (n_pred + n_gold).astype(float)
    hf_n = hf_den > 0
    hp_sum = np.divide(f_inter, n_pred, out=np.zeros(m), where=n_pred > 0)
    hr_sum = np.divide(f_inter, n_gold, out=np.zeros(m), where=n_gold > 0)
    hf_sum = np.divide(2 * f_inter, hf_den, out=np.zeros(m), where=hf_den > 0)

    sel = single_g[one_one] & single_p[one_one]  # no unknown id either
    both = one_one[sel]
    category = np.zeros(m, dtype=np.int64)
    wup = np.full(m, None, dtype=object)
    wup_sum = np.zeros(m)
    wup_n = np.zeros(m, dtype=bool)
    dist_sum = np.zeros(m)
    dist_n = np.zeros(m, dtype=bool)
    if both.size:
        _, codes, w, d = (x[sel] for x in measures)
        category[both] = codes
        wup[both] = w
        wup_sum[both] = w
        wup_n[both] = True
        wrong = codes != 0
        dist_sum[both[wrong]] = d[wrong]
        dist_n[both[wrong]] = True
    errors = ~exact
    # the category of a wrong row, first match wins (assigned in reverse order of priority)
    g_any = (n_gk + n_gu) > 0
    p_any = (n_pk + n_pu) > 0
    category[~(single_g & single_p)] = _MULTI
    category[p_any & ~g_any] = _NIL_GOLD
    category[g_any & ~p_any] = _NIL_PRED
    by_ids = IdResolver.wrong_category((n_gu > 0) | (n_pu > 0), res.pred_inactive > 0)  # the one rule
    category[by_ids == INACTIVE] = _INACTIVE
    category[by_ids == NOT_IN_ONTOLOGY] = _NOT_IN_ONTOLOGY
    category[exact] = 0
    relation = np.asarray(_CATEGORY_NAMES, dtype=object)[category]
    missing_run = np.zeros(m, dtype=bool)
    missing_run[col.missing] = True
    stats: dict[str, np.ndarray] = {
        "items": np.ones(m, dtype=bool),
        "inter": f_inter,
        "n_pred_aug": n_pred.astype(float),
        "n_gold_aug": n_gold.astype(float),
        "hp_sum": hp_sum,
        "hp_n": hp_n,
        "hr_sum": hr_sum,
        "hr_n": hr_n,
        "hf_sum": hf_sum,
        "hf_n": hf_n,
        "exact": exact,
        "wup_sum": wup_sum,
        "wup_n": wup_n,
        "errors": errors,
        "dist_sum": dist_sum,
        "dist_n": dist_n,
        "pred_inactive": res.pred_inactive > 0,
        "gold_inactive": res.gold_inactive > 0,
        "n_missing_run": missing_run,
    }
    counts = np.bincount(category[errors], minlength=len(_CATEGORY_NAMES))
    for c in ERROR_CATEGORIES:
        code = _CATEGORY_NAMES.index(c)
        stats[f"err_{c}"] = (errors & (category == code)) if counts[code] else np.zeros(m, dtype=bool)

    gold_node = np.full(m, None, dtype=object)
    gold_node[single_g] = ids[g1[single_g]]
    gold_str = gold_node.copy()
    stated = [k for k, r in enumerate(col.items) if r.get("gold_node") is not None]  # the one gold_node rule:
    resolve = (
        IdResolver(ontology, opts).node_id if stated else None
    )  # a record's own gold_node wins if it resolves
    for k in stated:
        gold_node[k] = gold_node_rule(col.items[k], resolve=resolve, fallback=gold_node[k])
    pred_str = np.full(m, None, dtype=object)
    pred_str[single_p] = ids[p1[single_p]]

    def one(known: list[int], unk: list[str]) -> str | None:
        names = [ids[i] for i in known] + unk
        return names[0] if len(names) == 1 else ("|".join(names) if names else None)

    for k, (gk, gu, pk, pu) in cplx.items():
        gold_str[k] = one(gk, gu)
        pred_str[k] = one(pk, pu)
    keys: dict[str, np.ndarray] = {"gold_node": gold_node}
    for name, column in _slice_columns(col.slices).items():
        keys[f"slice:{name}"] = column
    # a deprecated/revoked predicted node is flagged with its replacement (the resolver's rule)
    replacement = np.full(m, None, dtype=object)
    flagged = np.flatnonzero((res.pred_inactive > 0) & single_p & (p1 >= 0))
    if flagged.size:
        rep = np.asarray(ontology.replaced_by, dtype=np.int64)[p1[flagged]]
        replacement[flagged] = [ids[r] if r >= 0 else None for r in rep.tolist()]
    details = {
        "relation": relation,
        "gold": gold_str,
        "pred_node": pred_str,
        "wup": wup,
        "missing_run": missing_run,
        "replacement": replacement,
    }
    meta: dict[str, Any] = {
        "ontology": ontology.source,
        "ontology_hash": ontology.content_hash,
        "include_root": include_root,
        "lca_bounded": lca_bounded,
        "on_unknown": opts.on_unknown,
        "on_unknown_gold": opts.on_unknown_gold,
        "on_status": opts.on_status,
        "on_status_gold": opts.on_status_gold,
        "aliases": opts.aliases,
        "wup_lcs": wup_lcs,
        "wup_identical": wup_identical,
    }
    if res.replaced:
        meta["replaced_ids"] = res.replaced
    if res.aliased:
        meta["n_aliased"] = int(res.aliased)
    record_ids = np.empty(m, dtype=object)
    record_ids[:] = list(map(str, map(itemgetter("id"), col.items)))
    return Evaluation(
        family=FAMILY,
        record_ids=record_ids,
        stats=stats,
        keys=keys,
        details=details,
        unscored=col.unscored,
        meta=meta,
    )


def _row_side(side: _Side, k: int) -> tuple[list[int], list[str]]:
    """Known node indices (deduplicated, in order) and unknown ids of row ``k`` on one side."""
    a, b = int(side.starts[k]), int(side.starts[k + 1])
    idx = side.idx[a:b].tolist()
    known = [i for i in idx if i >= 0]
    unk = [s for s, i in zip(side.flat[a:b], idx) if i < 0]
    return list(dict.fromkeys(known)), unk


def _slice_columns(slices: list[Any]) -> dict[str, np.ndarray]:
    """One object column per slice name (sorted; names from every record's ``slices`` dict):
    the value's text (:func:`kg_rageval.records.slice_text`, the one normalisation), ``None``
    when absent."""
    all_dicts = set(map(type, slices)) == {dict}
    dicts = slices if all_dicts else [s for s in slices if isinstance(s, dict)]
    names = sorted(set().union(*dicts)) if dicts else []
    out: dict[str, np.ndarray] = {}
    for name in names:
        if all_dicts:
            vals = list(map(dict.get, slices, repeat(name)))
        else:
            vals = [s.get(name) if isinstance(s, dict) else None for s in slices]
        vals = slice_texts(vals)
        arr = np.empty(len(vals), dtype=object)
        arr[:] = vals
        out[name] = arr
    return out


# ---------------------------------------------------------------------------- summaries
def relation_counts(evaluation: Evaluation) -> dict[str, int]:
    """Rows per ``relation`` detail (``exact`` included), in category order."""
    counts = Counter(evaluation.details["relation"].tolist())
    order = ("exact",) + ERROR_CATEGORIES
    return {c: int(counts[c]) for c in order if counts.get(c)}


def confused_pairs(evaluation: Evaluation, top: int = 10) -> list[dict[str, Any]]:
    """The most frequent (gold, predicted) pairs among wrong rows, with their relation and
    count; ties by gold then predicted id (as text), then first appearance. NIL sides show as
    ``None``.

    Vectorised: each column is coded by first appearance (one C-level dict pass), the
    (gold, pred, relation) codes are counted with ``np.unique``, and only the pairs that can
    reach the top (count at least the ``top``-th largest) are ranked by their texts."""
    rel = evaluation.details["relation"]
    gold = evaluation.details.get("gold", evaluation.keys["gold_node"])
    pred = evaluation.details["pred_node"]
    wrong = np.flatnonzero(np.asarray(rel != "exact", dtype=bool))
    if top == 0 or not wrong.size:
        return []
    cols = [c[wrong] for c in (gold, pred, rel)]
    codes = [_first_seen(c) for c in cols]
    n, n_rel = wrong.size, int(codes[2].max()) + 1
    if n * n * n_rel >= 2**63:  # the combined code would overflow int64: count the tuples
        return _confused_pairs_counter(cols, top)
    key = (codes[0] * n + codes[1]) * n_rel + codes[2]
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    if top > 0 and counts.size > top:
        floor = np.partition(counts, counts.size - top)[counts.size - top]  # the top-th largest
        above = np.flatnonzero(counts > floor)
        tied = np.flatnonzero(counts == floor)
        # of the pairs tied at the floor, the (top - above) first by gold, pred text, appearance
        g, p = (c[first[tied]].tolist() for c in cols[:2])
        picked = heapq.nsmallest(top - above.size, zip(map(str, g), map(str, p), first[tied].tolist()))
        sel = np.concatenate([first[above], np.asarray([t[2] for t in picked], dtype=np.int64)])
        sel_counts = np.concatenate([counts[above], np.full(len(picked), floor, dtype=counts.dtype)])
        first, counts = sel, sel_counts
    g, p, r = (c[first].tolist() for c in cols)
    ranked = sorted(zip((-counts).tolist(), map(str, g), map(str, p), first.tolist(), g, p, r))
    ranked = ranked[:top]  # top < 0 drops the last pairs, as sorted(...)[:top] does
    return [{"gold": gg, "pred": pp, "relation": rr, "count": -c} for c, _, _, _, gg, pp, rr in ranked]


def _first_seen(col: np.ndarray) -> np.ndarray:
    """For each cell, the position of the first equal cell (int64)."""
    first: dict[Any, int] = {}
    return np.fromiter(map(first.setdefault, col.tolist(), itertools.count()), dtype=np.int64, count=len(col))


def _confused_pairs_counter(cols: list[np.ndarray], top: int) -> list[dict[str, Any]]:
    counts = Counter(zip(*(c.tolist() for c in cols)))
    key = lambda kv: (-kv[1], str(kv[0][0]), str(kv[0][1]))  # noqa: E731
    ranked = (
        heapq.nsmallest(top, counts.items(), key=key) if top >= 0 else sorted(counts.items(), key=key)[:top]
    )
    return [{"gold": g, "pred": p, "relation": r, "count": c} for (g, p, r), c in ranked]
