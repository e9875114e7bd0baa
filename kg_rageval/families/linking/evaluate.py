"""Entity linking and NIL evaluation over the ``mentions`` section of the records.

Input per record (``docs/records.md``)::

    "mentions": {"gold": [{"start": 26, "end": 38, "id": "T1003.001", "type": "technique"},
                          {"start": 0, "end": 5, "id": null, "nearest": "T1003"}],
                 "pred": [{"start": 26, "end": 38, "id": "T1003", "score": 0.82}]}

Character offsets, ``end`` exclusive; ``id: null`` is NIL (the concept is not in the ontology).
A gold NIL mention may name ``nearest``: the ontology concept closest to it (e.g. the parent
of a held-out concept); an over-link is then reported with its relation to that concept.

**Alignment.** Each record's gold and predicted mentions are aligned one-to-one:

* ``strict`` (default): a pair needs identical ``(start, end)``.
* ``overlap=True``: spans that share at least one character may pair. Candidate pairs are taken
  greedily in the order: most shared characters first, then the smaller boundary difference
  ``|Δstart| + |Δend|``, then the earlier gold start, then the earlier predicted start; a pair
  is kept when neither mention is already paired (deterministic, one-to-one).

Every gold and every predicted mention then lands in exactly one row of the
:class:`~kg_rageval.results.evaluation.Evaluation`: a *pair*, a *missed* gold mention or a *spurious*
prediction (``details['outcome']``). Row stats (all additive, see :class:`LinkingFamily`) give:

* **mention detection** ``P = Σ matched / Σ pred``, ``R = Σ matched / Σ gold``;
* **disambiguation accuracy** = correct ids / matched pairs whose gold id is in the ontology;
* **neleval/TAC measures**: ``strong_all_match`` (span and id equal, NIL = NIL) — this is the
  micro end-to-end linking P/R/F1; ``strong_link_match`` (the same over in-KB mentions only:
  gold and predicted ids non-NIL on both sides); ``strong_nil_match`` (span match over NIL
  mentions only). neleval's *strong* measures require identical spans, so with
  ``overlap=True`` the same counts are reported under this package's own names
  ``overlap_all_match_*``, ``overlap_link_match_*``, ``overlap_nil_match_*`` (a pair only
  needs to share a character), never under neleval's names with a different meaning;
* **macro end-to-end linking** over records: per record ``P = tp/pred``, ``R = tp/gold``,
  ``F1 = 2·tp/(gold + pred)``; each is averaged over the records where its denominator is
  non-zero (a record without gold and predicted mentions has no F1);
* **NIL decision** among aligned pairs: ``nil_precision`` = (gold NIL ∧ pred NIL) / pred NIL,
  ``nil_recall`` = (gold NIL ∧ pred NIL) / gold NIL. Unlike ``strong_nil_match`` these do not
  mix in detection errors;
* **over-links** (gold NIL, predicted a node) and **abstentions** (gold in-KB, predicted NIL),
  counted apart from correct abstentions (gold NIL, predicted NIL). ``over_link_near_rate`` is
  the share of over-links with a ``nearest`` concept whose predicted node is related to it
  (any relation but ``unrelated``);
* **wrong links** (both in-KB, ids differ) classified with the hierarchy confusion taxonomy
  (:data:`~kg_rageval.ontology.RELATIONS`, ``relation(gold, pred)``): ``T1003`` predicted for
  ``T1003.001`` is a ``parent`` error;
* **hierarchical P/R/F1** (ancestor-or-self sets, Kosmopoulos et al.; the root is left out,
  it is in every set) and **Wu-Palmer** mean (NLTK's definition, root depth 1) over aligned
  pairs whose gold and predicted ids are both ontology nodes; an exact link scores 1 (the
  kernel's ``identical="one"``).

The hierarchy kernels are :mod:`kg_rageval.families.hierarchy`'s (``relation_codes``,
``hierarchical_counts``, ``wu_palmer``), so linking and hierarchy reports give the same
relation and Wu-Palmer for the same pair.

Empty denominators give missing metrics (``value=None`` with a reason), never 0 or 1.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kg_rageval.base.errors import UnknownIdError
from kg_rageval.ontology import INACTIVE, NOT_IN_ONTOLOGY, RELATIONS, IdOptions, IdResolver
from kg_rageval.records import Record, located, record_error, record_text, slice_texts
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, Metrics, harmonic, ratio

NIL = -1
"""Code of a NIL id (``null``) in the integer id arrays."""

_NO_ROW = np.iinfo(
    np.int64
).min  # code of "no mention on this side" in row arrays (unknown ids are -2, -3, ...)

OUTCOMES = ("correct", "wrong_link", "over_link", "abstention", "correct_nil", "missed", "spurious")


class LinkingFamily(Family):
    """Sufficient statistics and formulas of entity-linking evaluation (module docstring)."""

    name = "linking"
    version = "2"
    stats = (
        "n_gold",
        "n_pred",
        "matched",
        "gold_inkb",
        "pred_inkb",
        "gold_nil",
        "pred_nil",
        "all_tp",
        "inkb_tp",
        "nil_tp",
        "matched_gold_inkb",
        "matched_gold_nil",
        "matched_pred_nil",
        "over_links",
        "over_links_with_nearest",
        "over_links_near",
        "abstentions",
        "wrong_links",
        *(f"rel_{r}" for r in RELATIONS),
        "rel_not_in_ontology",
        "rel_inactive",
        "h_overlap",
        "h_pred",
        "h_gold",
        "wup_sum",
        "wup_n",
        "unknown_ids",
        "inactive_ids",
        "rec_p_sum",
        "rec_p_n",
        "rec_r_sum",
        "rec_r_n",
        "rec_f1_sum",
        "rec_f1_n",
        "n_missing_run",
    )
    additive_meta = ("records_scored", "records_without_mentions", "unknown_ids", "n_aliased", "replaced_ids")

    def __init__(self, overlap: bool = False):
        self.overlap = overlap
        self.match_prefix = "overlap" if overlap else "strong"
        """``strong`` (neleval's identical-span measures) or ``overlap`` (overlap alignment)."""
        if overlap:  # other metric names, another definition: never merged or paired with strict
            self.version = "1-overlap"

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        out = Metrics()

        def prf(prefix: str, tp: float, n_pred: float, n_gold: float, what: str) -> None:
            p = ratio(f"{prefix}_precision", tp, n_pred, missing=f"no predicted {what}")
            r = ratio(f"{prefix}_recall", tp, n_gold, missing=f"no gold {what}")
            out[p.name], out[r.name] = p, r
            out.add(harmonic(f"{prefix}_f1", p, r))

        prf("mention", s["matched"], s["n_pred"], s["n_gold"], "mentions")
        out.add(
            ratio(
                "disambiguation_accuracy",
                s["inkb_tp"],
                s["matched_gold_inkb"],
                missing="no detected mentions with an in-ontology gold id",
            )
        )
        mp = self.match_prefix
        prf(f"{mp}_all_match", s["all_tp"], s["n_pred"], s["n_gold"], "mentions")
        prf(f"{mp}_link_match", s["inkb_tp"], s["pred_inkb"], s["gold_inkb"], "in-KB mentions")
        prf(f"{mp}_nil_match", s["nil_tp"], s["pred_nil"], s["gold_nil"], "NIL mentions")
        lp = ratio(
            "linking_macro_precision",
            s["rec_p_sum"],
            s["rec_p_n"],
            missing="no records with predicted mentions",
        )
        lr = ratio(
            "linking_macro_recall", s["rec_r_sum"], s["rec_r_n"], missing="no records with gold mentions"
        )
        out[lp.name], out[lr.name] = lp, lr
        out.add(ratio("linking_macro_f1", s["rec_f1_sum"], s["rec_f1_n"], missing="no records with mentions"))
        prf(
            "nil",
            s["nil_tp"],
            s["matched_pred_nil"],
            s["matched_gold_nil"],
            "NIL decisions on detected mentions",
        )
        out.add(Metric("over_links", s["over_links"]))
        out.add(
            ratio(
                "over_link_rate",
                s["over_links"],
                s["matched_gold_nil"],
                missing="no detected gold-NIL mentions",
            )
        )
        out.add(
            ratio(
                "over_link_near_rate",
                s["over_links_near"],
                s["over_links_with_nearest"],
                missing="no over-links of gold mentions that name a nearest concept",
            )
        )
        out.add(Metric("correct_abstentions", s["nil_tp"]))
        out.add(Metric("abstentions", s["abstentions"]))
        out.add(
            ratio(
                "abstention_rate",
                s["abstentions"],
                s["matched_gold_inkb"],
                missing="no detected in-KB gold mentions",
            )
        )
        out.add(Metric("wrong_links", s["wrong_links"]))
        for r in RELATIONS[1:]:
            out.add(ratio(f"wrong_link_{r}", s[f"rel_{r}"], s["wrong_links"], missing="no wrong links"))
        hp = ratio(
            "hierarchical_precision", s["h_overlap"], s["h_pred"], missing="no linked pairs of ontology nodes"
        )
        hr = ratio(
            "hierarchical_recall", s["h_overlap"], s["h_gold"], missing="no linked pairs of ontology nodes"
        )
        out[hp.name], out[hr.name] = hp, hr
        out.add(harmonic("hierarchical_f1", hp, hr))
        out.add(ratio("wu_palmer", s["wup_sum"], s["wup_n"], missing="no linked pairs of ontology nodes"))
        out.add(
            ratio(
                "wrong_link_not_in_ontology",
                s["rel_not_in_ontology"],
                s["wrong_links"],
                missing="no wrong links",
            )
        )
        out.add(
            ratio(
                "wrong_link_inactive",
                s.get("rel_inactive", 0.0),
                s["wrong_links"],
                missing="no wrong links",
            )
        )
        out.add(Metric("unknown_ids", s["unknown_ids"]))
        out.add(Metric("inactive_ids", s.get("inactive_ids", 0.0)))
        out.add(
            ratio(
                "missing_run_rate",
                s.get("n_missing_run", 0.0),
                s["rec_r_n"],
                missing="no records with gold mentions",
            )
        )
        return out


# ---------------------------------------------------------------------------- flattening
@dataclass
class _Side:
    """Flat columns of all gold or all predicted mentions (in record order)."""

    rec: list[int]  # record index per mention
    start: list[int]
    end: list[int]
    code: list[int]
    extra: list[Any]  # gold: mention type; pred: score or None
    near: list[int]  # gold: nearest code, -1 when none is named

    @classmethod
    def empty(cls) -> _Side:
        return cls([], [], [], [], [], [])

    def pos(self, j: int) -> int:
        """Position of flat mention ``j`` in its record's list."""
        r = self.rec[j]
        k = j
        while k > 0 and self.rec[k - 1] == r:
            k -= 1
        return j - k


class _Ids:
    """Maps id strings to ontology indices by the one resolver's conventions
    (:class:`~kg_rageval.ontology.IdResolver`: exact id, CURIE/IRI, aliases); an id the
    ontology lacks is an error or an opaque counted code (``-2, -3, ...``) per the options of
    its role (gold / predicted)."""

    def __init__(self, ontology, opts: IdOptions):
        self.get = ontology.id_index.get
        self.resolver = IdResolver(ontology, opts)
        self.opts = opts
        self.unknown: dict[str, int] = {}
        self.aliased = 0

    def code(self, value: Any, record: Record, field: str) -> int:
        if value is None:
            return NIL
        if type(value) is not str:
            raise record_error(record, field, f"must be an ontology id string or null, not {value!r}")
        i = self.get(value)
        if i is not None:
            return i
        idx, n_alias = self.resolver.lookup([value])
        if idx[0] >= 0:
            self.aliased += n_alias
            return int(idx[0])
        gold = field.startswith("mentions.gold")
        if (self.opts.on_unknown_gold if gold else self.opts.on_unknown) == "error":
            opt = "on_unknown_gold" if gold else "on_unknown"
            hint = self.resolver.ontology.suggest(value)
            raise UnknownIdError(
                value,
                where=located(record, field),
                hint=(f"{hint}; " if hint else "")
                + f"pass {opt}='count' (--{opt.replace('_', '-')} count) to count it",
            )
        c = self.unknown.get(value)
        if c is None:
            c = self.unknown[value] = -2 - len(self.unknown)
        return c


_bad = record_error  # file, record id, line and field (kg_rageval.records)


def _span(m: Any, record: Record, field: str, limit: int | None) -> tuple[int, int]:
    if type(m) is not dict:
        raise _bad(record, field, f"a mention must be an object, not {type(m).__name__}")
    s, e = m.get("start"), m.get("end")
    if type(s) is not int or type(e) is not int:
        raise _bad(record, field, f"start and end must be integers, found start={s!r}, end={e!r}")
    if s < 0 or e <= s:
        raise _bad(record, field, f"invalid span [{s}, {e}): need 0 <= start < end (end exclusive)")
    if limit is not None and e > limit:
        raise _bad(record, field, f"span [{s}, {e}) runs past the end of the text ({limit} characters)")
    return s, e


def _flatten(records: Sequence[Record], ids: _Ids):
    """Validate and flatten every record's mentions (a tight loop: 1M mentions in ~1 s; any
    mention that fails the fast checks is re-examined by the slow path, which raises)."""
    gold, pred = _Side.empty(), _Side.empty()
    scored: list[int] = []
    unscored: list[dict[str, str]] = []
    missing_recs: list[int] = []
    get = ids.get
    miss: Any = object()  # a sentinel; the codes found are ints
    g_rec, g_s, g_e, g_c, g_t, g_n = (
        gold.rec.extend,
        gold.start.append,
        gold.end.append,
        gold.code.append,
        gold.extra.append,
        gold.near.append,
    )
    p_rec, p_s, p_e, p_c, p_x = (
        pred.rec.extend,
        pred.start.append,
        pred.end.append,
        pred.code.append,
        pred.extra.append,
    )
    for ri, r in enumerate(records):
        m = r.get("mentions")
        if m is None:
            unscored.append(unscored_entry(r.get("id"), "no mentions section", Reason.NO_SECTION))
            continue
        if type(m) is not dict:
            raise _bad(r, "mentions", "must be an object with 'gold' and 'pred' lists")
        g_list, p_list = m.get("gold"), m.get("pred")
        if g_list is None:
            unscored.append(
                unscored_entry(r.get("id"), "no gold mentions (mentions.gold absent)", Reason.NO_GOLD)
            )
            continue
        if p_list is None:  # the system produced nothing: scored as no predicted mentions
            if type(g_list) is list and g_list:
                p_list = []
                missing_recs.append(ri)
            else:
                unscored.append(
                    unscored_entry(
                        r.get("id"),
                        "no predictions (mentions.pred absent; no gold mentions to miss)",
                        Reason.MISSING_PREDICTION,
                    )
                )
                continue
        if type(g_list) is not list:
            raise _bad(r, "mentions.gold", "must be a list of mentions")
        if type(p_list) is not list:
            raise _bad(r, "mentions.pred", "must be a list of mentions")
        text = record_text(r)
        limit = len(text) if text is not None else 1 << 62
        scored.append(ri)
        for k, g in enumerate(g_list):
            if type(g) is not dict:
                _span(g, r, f"mentions.gold[{k}]", limit)
            s, e, i = g.get("start"), g.get("end"), g.get("id", miss)
            if type(s) is not int or type(e) is not int or s < 0 or e <= s or e > limit or i is miss:
                _slow(g, r, f"mentions.gold[{k}]", limit)
            c = NIL if i is None else get(i, miss) if type(i) is str else miss
            if c is miss:
                c = ids.code(i, r, f"mentions.gold[{k}].id")
            g_s(s)
            g_e(e)
            g_c(c)
            if len(g) > 3:  # optional fields present
                g_t(g.get("type"))
                nr = g.get("nearest")
                g_n(-1 if nr is None else ids.code(nr, r, f"mentions.gold[{k}].nearest"))
            else:
                g_t(None)
                g_n(-1)
        g_rec([ri] * len(g_list))
        for k, p in enumerate(p_list):
            if type(p) is not dict:
                _span(p, r, f"mentions.pred[{k}]", limit)
            s, e, i = p.get("start"), p.get("end"), p.get("id", miss)
            if type(s) is not int or type(e) is not int or s < 0 or e <= s or e > limit or i is miss:
                _slow(p, r, f"mentions.pred[{k}]", limit)
            sc = p.get("score") if len(p) > 3 else None
            if sc is not None and (type(sc) is not float or sc != sc or sc in _INF):
                if type(sc) is not int:
                    raise _bad(r, f"mentions.pred[{k}].score", f"must be a finite number, not {sc!r}")
            c = NIL if i is None else get(i, miss) if type(i) is str else miss
            if c is miss:
                c = ids.code(i, r, f"mentions.pred[{k}].id")
            p_s(s)
            p_e(e)
            p_c(c)
            p_x(sc)
        p_rec([ri] * len(p_list))
    return gold, pred, scored, unscored, missing_recs


_INF = (math.inf, -math.inf)


def _slow(m: dict, record: Record, field: str, limit: int) -> None:
    """The detailed checks of one mention; raises the precise error."""
    _span(m, record, field, None if limit == 1 << 62 else limit)
    if "id" not in m:
        raise _bad(record, field + ".id", "missing: give an ontology id or null for NIL")


def _arrays(side: _Side) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return (
        np.asarray(side.rec, dtype=np.int64),
        np.asarray(side.start, dtype=np.int64),
        np.asarray(side.end, dtype=np.int64),
        np.asarray(side.code, dtype=np.int64),
    )


def _check_spans(records, side: _Side, rec, start, end, *, which: str, allow_overlap: bool) -> np.ndarray:
    """Sort order of one side by (record, start, end); duplicates/overlaps raise."""
    order = np.lexsort((end, start, rec))
    if order.size < 2:
        return order
    r, s, e = rec[order], start[order], end[order]
    same = r[1:] == r[:-1]
    dup = same & (s[1:] == s[:-1]) & (e[1:] == e[:-1])
    if which == "gold" and not allow_overlap:
        bad = same & (s[1:] < e[:-1])
        kind = "overlaps"
    else:
        bad = dup
        kind = "duplicates"
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        a, b = int(order[k]), int(order[k + 1])
        rec_ = records[int(r[k])]
        msg = f"span [{s[k + 1]}, {e[k + 1]}) {kind} mentions.{which}[{side.pos(a)}] [{s[k]}, {e[k]})"
        if which == "pred":
            msg += "; duplicate predicted spans are rejected, not double-counted"
        else:
            msg += "; gold spans may not overlap (allow_overlapping_gold=True permits nesting)"
        raise _bad(rec_, f"mentions.{which}[{side.pos(b)}]", msg)
    return order


def _match_strict(g_rec, g_s, g_e, p_rec, p_s, p_e) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (gold, pred) with identical (record, start, end)."""
    ng = g_rec.size
    rec = np.concatenate([g_rec, p_rec])
    s = np.concatenate([g_s, p_s])
    e = np.concatenate([g_e, p_e])
    side = np.concatenate([np.zeros(ng, np.int8), np.ones(p_rec.size, np.int8)])
    order = np.lexsort((side, e, s, rec))
    if order.size < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rr, ss, ee, sd = rec[order], s[order], e[order], side[order]
    hit = (rr[1:] == rr[:-1]) & (ss[1:] == ss[:-1]) & (ee[1:] == ee[:-1]) & (sd[1:] != sd[:-1])
    k = np.flatnonzero(hit)
    return order[k].astype(np.int64), order[k + 1].astype(np.int64) - ng


def _match_overlap(g_rec, g_s, g_e, p_rec, p_s, p_e) -> tuple[np.ndarray, np.ndarray]:
    """Greedy one-to-one overlap alignment per record (rule in the module docstring)."""
    gi_all, pi_all = [], []
    g_by: dict[int, list[int]] = {}
    for i, r in enumerate(g_rec.tolist()):
        g_by.setdefault(r, []).append(i)
    p_by: dict[int, list[int]] = {}
    for i, r in enumerate(p_rec.tolist()):
        p_by.setdefault(r, []).append(i)
    gs, ge, ps, pe = g_s.tolist(), g_e.tolist(), p_s.tolist(), p_e.tolist()
    for r, gl in g_by.items():
        pl = p_by.get(r)
        if not pl:
            continue
        cands = []
        for gi in gl:
            for pi in pl:
                ov = min(ge[gi], pe[pi]) - max(gs[gi], ps[pi])
                if ov > 0:
                    diff = abs(gs[gi] - ps[pi]) + abs(ge[gi] - pe[pi])
                    cands.append((-ov, diff, gs[gi], ps[pi], gi, pi))
        cands.sort()
        used_g: set[int] = set()
        used_p: set[int] = set()
        for *_, gi, pi in cands:
            if gi in used_g or pi in used_p:
                continue
            used_g.add(gi)
            used_p.add(pi)
            gi_all.append(gi)
            pi_all.append(pi)
    return np.asarray(gi_all, np.int64), np.asarray(pi_all, np.int64)


def match_spans(
    g_rec: np.ndarray,
    g_s: np.ndarray,
    g_e: np.ndarray,
    p_rec: np.ndarray,
    p_s: np.ndarray,
    p_e: np.ndarray,
    *,
    overlap: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The one-to-one span alignment of this module (its docstring, *Alignment*) for other
    families: int64 arrays of group, start and end of the gold and the predicted spans (a
    *group* is what may pair: the record here, ``(record, entity type)`` for PII scrubbing).
    Returns the index pairs ``(gold, pred)``: identical ``(group, start, end)`` when strict,
    the greedy most-shared-characters rule with ``overlap=True``."""
    fn = _match_overlap if overlap else _match_strict
    return fn(g_rec, g_s, g_e, p_rec, p_s, p_e)


def _apply_status(
    resolver: IdResolver, records, side: _Side, rec: np.ndarray, codes: np.ndarray, mode: str, role: str
) -> int:
    """Deprecated/revoked ids of one side per the resolver convention: ``"error"`` raises
    (every offending id, the first places; the resolver's own message), ``"replace"`` maps ids
    with a replacement (in place; the others stay, flagged), ``"flag"`` leaves them. Returns how
    many were replaced."""
    bad = np.flatnonzero(resolver.inactive(codes))
    if not bad.size:
        return 0
    ontology = resolver.ontology
    if mode == "error":
        names = [ontology.ids[i] if i >= 0 else "" for i in codes.tolist()]  # only on this error path
        raise resolver.status_error(
            names,
            codes,
            bad,
            role,
            lambda j: located(records[int(rec[j])], f"mentions.{role}[{side.pos(j)}].id"),
        )
    if mode == "replace":
        replaced_by = np.asarray(ontology.replaced_by, dtype=np.int64)
        rep = replaced_by[codes[bad]]
        has = rep >= 0
        codes[bad[has]] = rep[has]
        return int(has.sum())
    return 0


# ---------------------------------------------------------------------------- scoring
def _hierarchy_backend():
    """(name, relation_codes, hierarchical_counts, wu_palmer) over int64 index arrays."""
    from kg_rageval.families.hierarchy import hierarchical_counts, relation_codes, wu_palmer

    def wup(onto, g, p):  # an exact link earns full credit (not NLTK's polyhierarchy oddity)
        return wu_palmer(onto, g, p, identical="one")

    return "kg_rageval.families.hierarchy", relation_codes, hierarchical_counts, wup


def score_linking(
    ontology,
    records: Iterable[Record],
    *,
    overlap: bool = False,
    allow_overlapping_gold: bool = False,
    **ids: Any,
) -> Evaluation:
    """Score the ``mentions`` section of ``records`` (see the module docstring).

    Parameters
    ----------
    ontology : Ontology
        Every id (gold, predicted, ``nearest``) must be one of its nodes.
    records : iterable of dict
        Records as read by :func:`kg_rageval.records.read_records`.
    overlap : bool
        Align overlapping spans (greedy one-to-one rule) instead of requiring identical spans.
    on_unknown, on_unknown_gold, on_status, on_status_gold, aliases
        The one id-resolution convention (:mod:`kg_rageval.ontology.resolver`). By default a
        gold id the ontology lacks, or a deprecated/revoked gold id, raises naming record and
        field; a predicted id the ontology lacks is kept as an opaque id — compared by string,
        left out of the hierarchy measures, its wrong link filed as ``not_in_ontology`` — and
        counted in ``unknown_ids``; a deprecated/revoked predicted id is flagged (the
        ``inactive_ids`` count, its replacement in the ``replacement`` detail); alternative
        ids resolve to their concept.
    allow_overlapping_gold : bool
        Permit nested/crossing gold spans (identical gold spans are always rejected).

    Returns
    -------
    Evaluation
        One row per aligned pair, missed gold mention or spurious prediction. Keys:
        ``gold_node``, ``pred_node``, ``node_type``, ``branch``, ``mention_type``,
        ``outcome``, ``slice:<name>``. Details: ``relation``, ``nearest``,
        ``nearest_relation``, ``pred_score``, span offsets. Records without a ``mentions``
        section or its ``gold`` list are in ``unscored`` (codes ``no_section``, ``no_gold``).
        A record with gold mentions but no ``pred`` list (the system produced nothing) is
        scored as no predicted mentions — each gold mention is missed — and counted in
        ``n_missing_run`` (metric ``missing_run_rate`` = such records / records with gold
        mentions); without gold mentions it is unscored with code ``missing_prediction``.

    Raises
    ------
    InputError
        Bad spans (negative, ``end <= start``, past the text in ``text``/``query``),
        overlapping gold spans, duplicate predicted spans, malformed mentions or scores.
    UnknownIdError
        An id not in the ontology under ``on_unknown="error"``.
    """
    opts = IdOptions.of(**ids)
    records = records if isinstance(records, list) else list(records)
    idr = _Ids(ontology, opts)
    gold, pred, scored, unscored, missing_recs = _flatten(records, idr)
    g_rec, g_s, g_e, g_code = _arrays(gold)
    p_rec, p_s, p_e, p_code = _arrays(pred)
    n_replaced = _apply_status(idr.resolver, records, gold, g_rec, g_code, opts.on_status_gold, "gold")
    n_replaced += _apply_status(idr.resolver, records, pred, p_rec, p_code, opts.on_status, "pred")
    _check_spans(records, gold, g_rec, g_s, g_e, which="gold", allow_overlap=allow_overlapping_gold)
    _check_spans(records, pred, p_rec, p_s, p_e, which="pred", allow_overlap=True)

    if overlap:
        mg, mp = _match_overlap(g_rec, g_s, g_e, p_rec, p_s, p_e)
    else:
        mg, mp = _match_strict(g_rec, g_s, g_e, p_rec, p_s, p_e)
    g_used = np.zeros(g_rec.size, bool)
    g_used[mg] = True
    p_used = np.zeros(p_rec.size, bool)
    p_used[mp] = True
    lone_g = np.flatnonzero(~g_used)
    lone_p = np.flatnonzero(~p_used)
    row_g = np.concatenate([mg, lone_g, np.full(lone_p.size, -1, np.int64)])
    row_p = np.concatenate([mp, np.full(lone_g.size, -1, np.int64), lone_p])
    has_g, has_p = row_g >= 0, row_p >= 0
    row_rec = np.where(
        has_g,
        g_rec[np.maximum(row_g, 0)] if g_rec.size else 0,
        p_rec[np.maximum(row_p, 0)] if p_rec.size else 0,
    )
    row_start = np.where(
        has_g, g_s[np.maximum(row_g, 0)] if g_rec.size else 0, p_s[np.maximum(row_p, 0)] if p_rec.size else 0
    )
    order = np.lexsort((row_start, row_rec))
    row_g, row_p, has_g, has_p, row_rec = (a[order] for a in (row_g, row_p, has_g, has_p, row_rec))

    gc = np.where(has_g, g_code[np.maximum(row_g, 0)] if g_code.size else 0, _NO_ROW)
    pc = np.where(has_p, p_code[np.maximum(row_p, 0)] if p_code.size else 0, _NO_ROW)
    matched = has_g & has_p
    g_nil, p_nil = has_g & (gc == NIL), has_p & (pc == NIL)
    g_inkb, p_inkb = has_g & ~g_nil, has_p & ~p_nil
    same = matched & (gc == pc)
    n = row_rec.size
    st: dict[str, np.ndarray] = {
        "n_gold": has_g,
        "n_pred": has_p,
        "matched": matched,
        "gold_inkb": g_inkb,
        "pred_inkb": p_inkb,
        "gold_nil": g_nil,
        "pred_nil": p_nil,
        "all_tp": same,
        "inkb_tp": same & g_inkb,
        "nil_tp": same & g_nil,
        "matched_gold_inkb": matched & g_inkb,
        "matched_gold_nil": matched & g_nil,
        "matched_pred_nil": matched & p_nil,
        "over_links": matched & g_nil & p_inkb,
        "abstentions": matched & g_inkb & p_nil,
    }
    both = matched & g_inkb & p_inkb
    st["wrong_links"] = both & ~same
    known = both & (gc >= 0) & (pc >= 0)
    st["unknown_ids"] = (has_g & (gc <= -2)).astype(int) + (has_p & (pc <= -2)).astype(int)
    p_inactive = has_p & idr.resolver.inactive(pc)
    st["inactive_ids"] = p_inactive
    # the one rule (IdResolver.wrong_category): an unknown id, then a flagged inactive predicted
    # id, file a wrong link before its hierarchy relation
    by_ids = IdResolver.wrong_category(st["wrong_links"] & ~known, st["wrong_links"] & p_inactive)
    w_inactive = by_ids == INACTIVE

    # hierarchy on pairs of ontology nodes
    _, rel_codes, h_counts, wup_fn = _hierarchy_backend()
    rel = np.full(n, -1, np.int8)
    kidx = np.flatnonzero(known)
    h_o, h_p, h_g = (np.zeros(n) for _ in range(3))
    wup = np.zeros(n)
    if kidx.size:
        gk, pk = gc[kidx], pc[kidx]
        rel[kidx] = rel_codes(ontology, gk, pk)
        h_o[kidx], h_p[kidx], h_g[kidx] = h_counts(ontology, gk, pk)
        wup[kidx] = wup_fn(ontology, gk, pk)
    for c, name in enumerate(RELATIONS):
        st[f"rel_{name}"] = known & (rel == c) & ~w_inactive
    st["rel_exact"] = st["rel_exact"] | (both & same & ~known)  # opaque ids equal by string
    st["rel_not_in_ontology"] = by_ids == NOT_IN_ONTOLOGY
    st["rel_inactive"] = w_inactive
    st.update(h_overlap=h_o, h_pred=h_p, h_gold=h_g, wup_sum=wup, wup_n=known)

    # over-links against the gold mention's nearest concept
    near = np.full(n, -1, np.int64)
    gi = np.flatnonzero(has_g)
    if gi.size:
        near[gi] = np.asarray(gold.near, dtype=np.int64)[row_g[gi]]
    ol = st["over_links"]
    ol_near = ol & (near >= 0) & (pc >= 0)
    near_rel = np.full(n, -1, np.int8)
    oidx = np.flatnonzero(ol_near)
    if oidx.size:
        near_rel[oidx] = rel_codes(ontology, near[oidx], pc[oidx])
    st["over_links_with_nearest"] = ol_near
    st["over_links_near"] = ol_near & (near_rel != RELATIONS.index("unrelated"))

    # macro over records: the first row of each record carries the record's ratios
    rec_ids, first, inv = np.unique(row_rec, return_index=True, return_inverse=True)
    tp_r = np.bincount(inv, weights=same, minlength=rec_ids.size)
    ng_r = np.bincount(inv, weights=has_g, minlength=rec_ids.size)
    np_r = np.bincount(inv, weights=has_p, minlength=rec_ids.size)
    for name in ("rec_p_sum", "rec_p_n", "rec_r_sum", "rec_r_n", "rec_f1_sum", "rec_f1_n"):
        st[name] = np.zeros(n, dtype=bool if name.endswith("_n") else float)  # counts 0/1: bool
    with np.errstate(divide="ignore", invalid="ignore"):
        st["rec_p_sum"][first] = np.where(np_r > 0, tp_r / np.maximum(np_r, 1), 0)
        st["rec_p_n"][first] = np_r > 0
        st["rec_r_sum"][first] = np.where(ng_r > 0, tp_r / np.maximum(ng_r, 1), 0)
        st["rec_r_n"][first] = ng_r > 0
        st["rec_f1_sum"][first] = np.where(ng_r + np_r > 0, 2 * tp_r / np.maximum(ng_r + np_r, 1), 0)
        st["rec_f1_n"][first] = ng_r + np_r > 0
    # a record with gold mentions but no predictions: counted once, on its first row
    st["n_missing_run"] = np.zeros(n, dtype=bool)
    if missing_recs:
        st["n_missing_run"][first[np.isin(rec_ids, missing_recs)]] = True

    stats = {
        k: v if isinstance(v, np.ndarray) and v.dtype == bool else np.asarray(v, dtype=float)
        for k, v in st.items()
    }  # 0/1 columns stay bool (1 byte a row)
    keys, details = _describe(
        ontology,
        records,
        idr,
        gold,
        pred,
        row_rec,
        row_g,
        row_p,
        has_g,
        has_p,
        gc,
        pc,
        rel,
        near,
        near_rel,
        matched,
        same,
        g_nil,
        p_nil,
    )
    replacement = np.full(n, None, dtype=object)
    if p_inactive.any():
        rep = np.asarray(ontology.replaced_by, dtype=np.int64)[pc[p_inactive]]
        replacement[p_inactive] = [ontology.ids[r] if r >= 0 else None for r in rep.tolist()]
    details["replacement"] = replacement
    if w_inactive.any():
        details["relation"][w_inactive] = INACTIVE
    record_ids = _obj([str(r.get("id")) for r in records])[row_rec]  # one str() per record
    empty = len(scored) - int(rec_ids.size)
    meta: dict[str, Any] = {
        "alignment": "overlap" if overlap else "strict",
        "records_scored": len(scored),
        "records_without_mentions": empty,
    }
    if idr.unknown:
        meta["unknown_ids"] = sorted(idr.unknown)[:50]
    if idr.aliased:
        meta["n_aliased"] = idr.aliased
    if n_replaced:
        meta["replaced_ids"] = n_replaced
    return Evaluation(LinkingFamily(overlap=overlap), record_ids, stats, keys, details, unscored, meta)


_ID_ARRAYS: weakref.WeakKeyDictionary[Any, np.ndarray] = weakref.WeakKeyDictionary()


def _id_array(ontology) -> np.ndarray:
    """``ontology.ids`` as an object array, made once per ontology (each chunk of a stream
    looks its ids up in it; building it per call cost a tenth of a small chunk's time)."""
    arr = _ID_ARRAYS.get(ontology)
    if arr is None:
        arr = _ID_ARRAYS[ontology] = _obj(list(ontology.ids))
    return arr


def _obj(values: list) -> np.ndarray:
    out = np.empty(len(values), object)
    out[:] = values
    return out


def _describe(
    ontology,
    records,
    ids,
    gold,
    pred,
    row_rec,
    row_g,
    row_p,
    has_g,
    has_p,
    gc,
    pc,
    rel,
    near,
    near_rel,
    matched,
    same,
    g_nil,
    p_nil,
):
    n = row_rec.size
    ids_arr = _id_array(ontology)
    # opaque (unknown) ids by code -2, -3, ..., then None for NIL and for no mention
    unknown = sorted(ids.unknown.items(), key=lambda kv: -kv[1])
    extra = _obj([u for u, _ in unknown] + [None])

    def names(codes: np.ndarray) -> np.ndarray:
        out = ids_arr[np.maximum(codes, 0)] if ids_arr.size else np.empty(codes.size, object)
        neg = np.flatnonzero(codes < 0)
        if neg.size:
            c = codes[neg]
            out[neg] = extra[np.where((c <= -2) & (c != _NO_ROW), -2 - c, extra.size - 1)]
        return out

    gold_node, pred_node = names(gc), names(pc)
    node_type = np.empty(n, object)
    branch = np.empty(n, object)
    ok = gc >= 0
    if ok.any():
        uniq, inv = np.unique(gc[ok], return_inverse=True)
        types = ontology.node_types
        node_type[ok] = _obj([types[i] for i in uniq.tolist()])[inv]
        branch[ok] = _branch_ids(ontology, uniq)[inv]
    outcome = np.empty(n, object)
    outcome[:] = "spurious"
    outcome[has_g & ~has_p] = "missed"
    outcome[matched & same & ~g_nil] = "correct"
    outcome[matched & same & g_nil] = "correct_nil"
    outcome[matched & g_nil & ~p_nil] = "over_link"
    outcome[matched & ~g_nil & p_nil] = "abstention"
    outcome[matched & ~g_nil & ~p_nil & ~same] = "wrong_link"
    mtype = np.empty(n, object)
    score = np.empty(n, object)
    gi, pi = np.flatnonzero(has_g), np.flatnonzero(has_p)
    if gi.size:
        mtype[gi] = _obj(_shared(gold.extra))[row_g[gi]]
    near_names = names(np.where(near >= 0, near, _NO_ROW))
    nearest = near_names
    if pi.size:
        score[pi] = _obj(_shared(pred.extra))[row_p[pi]]
    rel_names = np.asarray(list(RELATIONS) + [None], dtype=object)
    relation = rel_names[np.where(rel >= 0, rel, len(RELATIONS))]
    nearest_relation = rel_names[np.where(near_rel >= 0, near_rel, len(RELATIONS))]
    g_s = np.asarray(gold.start, np.int64)
    g_e = np.asarray(gold.end, np.int64)
    p_s = np.asarray(pred.start, np.int64)
    p_e = np.asarray(pred.end, np.int64)

    offsets: dict[int, int] = {}  # one int object per distinct offset, shared by the 4 columns

    def col(arr, idx, ok):
        out = np.empty(n, object)
        if arr.size:
            vals = arr[np.maximum(idx, 0)][ok].tolist()
            if arr.max() > 256:  # CPython caches -5..256; larger offsets are an object each
                vals = list(map(offsets.setdefault, vals, vals))
            out[ok] = vals
        return out

    keys = {
        "gold_node": gold_node,
        "pred_node": pred_node,
        "node_type": node_type,
        "branch": branch,
        "mention_type": mtype,
        "outcome": outcome,
    }
    slices = [r.get("slices") for r in records]
    with_rows = np.zeros(len(records), dtype=bool)
    with_rows[row_rec] = True
    slice_names = sorted(
        {k for i in np.flatnonzero(with_rows).tolist() if isinstance(slices[i], dict) for k in slices[i]}
    )
    for s in slice_names:  # one text per record, then one per row (a C-level take)
        vals = [(sl or {}).get(s) for sl in slices]
        keys[f"slice:{s}"] = _obj(_shared(slice_texts(vals)))[row_rec]
    details = {
        "relation": relation,
        "nearest": nearest,
        "nearest_relation": nearest_relation,
        "pred_score": score,
        "gold_start": col(g_s, row_g, has_g),
        "gold_end": col(g_e, row_g, has_g),
        "pred_start": col(p_s, row_p, has_p),
        "pred_end": col(p_e, row_p, has_p),
    }
    return keys, details


def _shared(values: list) -> list:
    """``values`` with equal strings, or equal floats, as one object each. Parsed JSON has a
    fresh object per value, and a column keeps every one alive (a million slice texts ``"a"``
    are 50 MB as their own strings, nothing as one). Only a list of strings (and ``None``) or
    of floats (and ``None``) is shared, and not one holding ``-0.0`` (equal to ``0.0``), so
    every value keeps its type and its text in the output (``1 == 1.0`` would not)."""
    kinds = set(map(type, values))
    if not (kinds <= _TEXTS or kinds <= _FLOATS):
        return values
    seen: dict[Any, Any] = {}
    out = list(map(seen.setdefault, values, values))
    if 0.0 in seen and any(v == 0.0 and math.copysign(1.0, v) < 0 for v in values if type(v) is float):
        return values
    return out


_TEXTS = {str, type(None)}
_FLOATS = {float, type(None)}


def _branch_ids(ontology, nodes: np.ndarray) -> np.ndarray:
    """The *branch* of each node: its top-level concept — the real root of a multi-root
    ontology, otherwise the child of the root on its ancestor path (the root is its own
    branch). With several candidates (polyhierarchy) the lowest index (first in topological
    order) wins. Object array of ids (``None`` when there is none)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    out = np.empty(nodes.size, object)
    depth = np.asarray(ontology.depth_min)
    top = depth[nodes] < 1
    out[top] = _obj([ontology.ids[i] for i in nodes[top].tolist()])
    lens, anc = ontology.ancestor_rows(nodes)
    owner = np.repeat(np.arange(nodes.size), lens)
    hit = depth[anc] == 1
    own, first = np.unique(owner[hit], return_index=True)  # rows are sorted: lowest index first
    cand = anc[hit][first]
    keep = ~top[own]
    out[own[keep]] = _obj([ontology.ids[i] for i in cand[keep].tolist()])
    return out


# ---------------------------------------------------------------------------- sweep
def confidence_sweep(
    evaluation: Evaluation, thresholds: Sequence[float] | None = None
) -> list[dict[str, Any]] | None:
    """Precision/recall as predictions below a score threshold are dropped.

    At threshold ``t`` a prediction is kept when ``score >= t`` (a dropped prediction turns its
    aligned gold mention into a miss). For each ``t`` the row holds ``n_pred`` and the
    ``strong_all_match`` and ``strong_link_match`` (``overlap_*`` with overlap alignment)
    precision, recall and F1 (``None`` when the
    denominator is empty). ``thresholds`` defaults to the distinct scores (at most 101
    quantiles of them). Returns ``None`` when any prediction lacks a score (a sweep over part of
    the predictions would mislead) or no prediction has one.
    """
    score = evaluation.details["pred_score"]
    st = evaluation.stats
    has_p = st["n_pred"] > 0
    if not has_p.any():
        return None
    rows = np.flatnonzero(has_p)
    sc = score[rows].astype(float)  # None -> NaN
    if np.isnan(sc).any():
        return None
    if thresholds is None:
        uniq = np.unique(sc)
        thresholds = (uniq if uniq.size <= 101 else np.quantile(uniq, np.linspace(0, 1, 101))).tolist()
        del uniq
    n_gold = float(st["n_gold"].sum())
    n_gold_inkb = float(st["gold_inkb"].sum())
    mp = getattr(evaluation.family, "match_prefix", "strong")
    # rows with a prediction by ascending score; the rows kept at a threshold t are a suffix
    # (score >= t), so every count is a suffix sum (0/1 columns: exact integers in any order)
    local = np.argsort(sc, kind="stable")
    sorted_sc = sc[local]
    order = rows[local]
    del sc, rows, local
    ts = np.asarray(thresholds, dtype=float).tolist()
    ats = [int(np.searchsorted(sorted_sc, t, "left")) for t in ts]  # first row with score >= t
    del sorted_sc

    def suffix(col: str) -> list[float]:
        v = st[col]
        if v.dtype == bool:  # a count of the kept rows: 1 byte a row, no float copies
            kept = v[order]
            return [float(np.count_nonzero(kept[at:])) for at in ats]
        c = np.zeros(order.size + 1)
        c[:-1] = np.cumsum(np.asarray(v, dtype=float)[order][::-1])[::-1]
        return [float(c[at]) for at in ats]

    sums = {c: suffix(c) for c in ("all_tp", "n_pred", "inkb_tp", "pred_inkb")}
    out = []
    for j, (t, at) in enumerate(zip(ts, ats)):
        n_pred = float(order.size - at)
        fam = {}
        for prefix, tp_col, pred_col, ng in (
            (f"{mp}_all_match", "all_tp", "n_pred", n_gold),
            (f"{mp}_link_match", "inkb_tp", "pred_inkb", n_gold_inkb),
        ):
            tp = sums[tp_col][j]
            npd = sums[pred_col][j]
            p = ratio("p", tp, npd, missing="no predictions at this threshold")
            r = ratio("r", tp, ng, missing="no gold mentions")
            f = harmonic("f", p, r)
            fam[f"{prefix}_precision"] = p.value
            fam[f"{prefix}_recall"] = r.value
            fam[f"{prefix}_f1"] = f.value
        out.append({"threshold": t, "n_pred": int(n_pred), **fam})
    return out
