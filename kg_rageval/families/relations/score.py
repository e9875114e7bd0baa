"""The ``relations`` family: relation answers scored against the knowledge graph.

One row per record with a ``relations`` section (``docs/records.md``, ``docs/relations.md``).
Three independent parts, each optional in a record:

**Triples** (``gold`` vs ``answer``, lists of ``[subject, predicate, object]``). Repeats inside
one list count once. *Exact* matches are the identical triples of the same record:
``triple_precision`` = Σ exact / Σ |answer|, ``triple_recall`` = Σ exact / Σ |gold| (micro,
over records whose gold is not empty; an answer to an empty gold adds to neither —
see NIL below). *Soft* matches add hierarchy-aware partial credit: an answer triple that is
not exact may be matched one-to-one to a remaining gold triple of the same record with the
same predicate whose subject and object are each equal or one level apart in the class
hierarchy (the answer's end is a direct parent or a direct child of the gold end: a technique
for its sub-technique, or the reverse); the credit is ``partial_credit`` to the power of the
number of ends one level apart (greedy by credit, ties by position).
``soft_triple_precision`` = (Σ exact + Σ credit) / Σ |answer|, ``soft_triple_recall`` = the
same / Σ |gold|. The *confusion relation of each wrong end*: for every non-exact answer
triple, a gold triple of the record with the same predicate and the same subject makes the
object the wrong end (relation of the answer's object to the gold's object,
:meth:`Ontology.relation`, closest gold first; instances and instance-node pairs are
``unrelated``); else one with the same predicate and object makes the subject the wrong end;
else the triple is ``unanchored``. Answer ids that are neither nodes nor instances, and
predicates the graph and the properties do not know, are counted faults of the system
(``triple_unknown_ids``, ``triple_unknown_predicates``) and never match; a gold id or predicate
the ontology lacks is an input error.

**Ids** (triple ends, answer-set ids, claim ends, ``relations.node``) resolve as in every
family, through :class:`~kg_rageval.ontology.IdResolver` with the shared options
(:data:`~kg_rageval.contract.ids.ID_PARAMS`): an instance id as given, a node id as given or as
its expanded CURIE / compacted IRI, an alternative id as its concept (``aliases``); an unknown
answer id is counted (``on_unknown="error"`` raises), an unknown gold id is an input error
(``on_unknown_gold="count"`` keeps it as an opaque id that matches only itself); a deprecated
gold node is an input error (``on_status_gold``) and a deprecated answer node is scored where
it stands (``on_status``; ``"replace"`` maps either to its replacement).

**Answer sets** (``gold_answers`` vs ``answers``, lists of entity ids, for list questions;
QALD-style). Per question with a non-empty gold: P = |A ∩ G| / |A| (undefined for an empty
answer: an *abstention*, left out of macro precision), R = |A ∩ G| / |G|, F1 (0 for an
abstention). ``answer_macro_*`` are means over questions (precision over answered ones);
``answer_micro_precision`` = Σ |A ∩ G| / Σ |A| over every question (an answer to a NIL
question is all wrong), ``answer_micro_recall`` = Σ |A ∩ G| / Σ |G|.

**NIL** (empty gold), as the linking family handles NIL: an empty gold with an empty answer is
a correct abstention, counted apart (``*_nil_correct``), never a 1 from empty denominators; an
empty gold with a non-empty answer is an over-answer (``*_nil_over_answered``).
``*_nil_accuracy`` = correct abstentions / NIL questions.

**KG-grounded faithfulness** (``claims``, triples a generated answer asserts): a deterministic
verifier against the graph. A claim is *supported* when the graph holds the triple;
*contradicted* when its ids and predicate are known, the graph does not hold it and the graph
rules it out — its subject violates the predicate's declared domain or its object the range
(by subsumption or kind, :func:`kg_rageval.ontology.graph.satisfies`), or the predicate has a
``max_cardinality`` the subject already fills with other objects; otherwise it is *not in the
graph* (unknown ids or predicate included: ``claims_unknown``). ``kg_faithfulness`` =
supported / claims, ``kg_contradiction_rate`` = contradicted / claims,
``kg_not_in_graph_rate`` = not in the graph / claims.

Rows carry the key ``gold_node`` (the one rule, :func:`kg_rageval.records.gold_node`: the
record's ``gold_node``, else its single ``labels.gold`` id, else ``relations.node``, else the
first gold triple's subject or object that is a hierarchy node), so roll-ups and the per-node report attach relation answers
to a node of the hierarchy.

A record whose section has a gold (``gold`` or ``gold_answers``) but no ``answer`` /
``answers`` key is unscored as a missing prediction (code ``missing_prediction``); a record
without a ``relations`` section is unscored (``no_section``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import chain, repeat
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.ontology.graph import satisfies
from kg_rageval.ontology.model import RELATIONS, Ontology
from kg_rageval.ontology.resolver import IdOptions, IdResolver
from kg_rageval.records import Reason, gold_node, record_error, record_slices, unscored, where
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, harmonic, ratio

SECTION = "relations"
END_RELATIONS = ("parent", "ancestor", "child", "descendant", "sibling", "cousin", "unrelated")
"""Confusion relations of a wrong triple end (those of :data:`RELATIONS` after ``exact``)."""

_TRIPLE_STATS = (
    "tr_gold",
    "tr_pred",
    "tr_exact",
    "tr_credit",
    "tr_partial",
    "tr_q",
    "tr_p_sum",
    "tr_p_q",
    "tr_r_sum",
    "tr_f_sum",
    "tr_nil_q",
    "tr_nil_correct",
    "tr_nil_over",
    "tr_dup",
    "tr_unknown_ids",
    "tr_unknown_pred",
    "tr_unanchored",
)
_END_STATS = tuple(f"tr_{side}_{r}" for side in ("subject", "object") for r in END_RELATIONS)
_SET_STATS = (
    "as_gold",
    "as_pred",
    "as_hit",
    "as_q",
    "as_p_sum",
    "as_p_q",
    "as_r_sum",
    "as_f_sum",
    "as_abstain",
    "as_nil_q",
    "as_nil_correct",
    "as_nil_over",
    "as_unknown",
)
_CLAIM_STATS = (
    "fa_claims",
    "fa_supported",
    "fa_contradicted",
    "fa_not_in_graph",
    "fa_unknown",
    "fa_domain",
    "fa_range",
    "fa_cardinality",
)


class RelationsFamily(Family):
    name = "relations"
    version = "1"
    stats = _TRIPLE_STATS + _END_STATS + _SET_STATS + _CLAIM_STATS

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        m: dict[str, Metric] = {}
        tp = ratio(
            "triple_precision", s["tr_exact"], s["tr_pred"], missing="no answer triples to non-NIL gold"
        )
        tr = ratio("triple_recall", s["tr_exact"], s["tr_gold"], missing="no gold triples")
        m.update(triple_precision=tp, triple_recall=tr, triple_f1=harmonic("triple_f1", tp, tr))
        soft = s["tr_exact"] + s["tr_credit"]
        sp = ratio("soft_triple_precision", soft, s["tr_pred"], missing="no answer triples to non-NIL gold")
        sr = ratio("soft_triple_recall", soft, s["tr_gold"], missing="no gold triples")
        m.update(
            soft_triple_precision=sp, soft_triple_recall=sr, soft_triple_f1=harmonic("soft_triple_f1", sp, sr)
        )
        m["triple_macro_precision"] = ratio(
            "triple_macro_precision",
            s["tr_p_sum"],
            s["tr_p_q"],
            missing="no record with gold and answer triples",
        )
        m["triple_macro_recall"] = ratio(
            "triple_macro_recall", s["tr_r_sum"], s["tr_q"], missing="no record with gold triples"
        )
        m["triple_macro_f1"] = ratio(
            "triple_macro_f1", s["tr_f_sum"], s["tr_q"], missing="no record with gold triples"
        )
        m["partial_matches"] = Metric("partial_matches", s["tr_partial"])
        m["triple_nil_accuracy"] = ratio(
            "triple_nil_accuracy",
            s["tr_nil_correct"],
            s["tr_nil_q"],
            missing="no record with an empty gold triple list",
        )
        for k in ("tr_nil_correct", "tr_nil_over", "tr_unknown_ids", "tr_unknown_pred", "tr_unanchored"):
            name = {
                "tr_nil_correct": "triple_nil_correct",
                "tr_nil_over": "triple_nil_over_answered",
                "tr_unknown_ids": "triple_unknown_ids",
                "tr_unknown_pred": "triple_unknown_predicates",
                "tr_unanchored": "wrong_unanchored",
            }[k]
            m[name] = Metric(name, s[k])
        wrong_ends = sum(s[k] for k in _END_STATS)
        for side in ("subject", "object"):
            for r in END_RELATIONS:
                name = f"wrong_{side}_{r}"
                m[name] = ratio(name, s[f"tr_{side}_{r}"], wrong_ends, missing="no wrong triple end")
        ap = ratio(
            "answer_macro_precision",
            s["as_p_sum"],
            s["as_p_q"],
            missing="no answered question with gold answers",
        )
        m["answer_macro_precision"] = ap
        m["answer_macro_recall"] = ratio(
            "answer_macro_recall", s["as_r_sum"], s["as_q"], missing="no question with gold answers"
        )
        m["answer_macro_f1"] = ratio(
            "answer_macro_f1", s["as_f_sum"], s["as_q"], missing="no question with gold answers"
        )
        mp = ratio("answer_micro_precision", s["as_hit"], s["as_pred"], missing="no answers")
        mr = ratio("answer_micro_recall", s["as_hit"], s["as_gold"], missing="no gold answers")
        m.update(
            answer_micro_precision=mp,
            answer_micro_recall=mr,
            answer_micro_f1=harmonic("answer_micro_f1", mp, mr),
        )
        m["answer_abstentions"] = Metric("answer_abstentions", s["as_abstain"])
        m["answer_nil_accuracy"] = ratio(
            "answer_nil_accuracy",
            s["as_nil_correct"],
            s["as_nil_q"],
            missing="no question with an empty gold answer",
        )
        m["answer_nil_correct"] = Metric("answer_nil_correct", s["as_nil_correct"])
        m["answer_nil_over_answered"] = Metric("answer_nil_over_answered", s["as_nil_over"])
        m["answer_unknown_ids"] = Metric("answer_unknown_ids", s["as_unknown"])
        for name, k in (
            ("kg_faithfulness", "fa_supported"),
            ("kg_contradiction_rate", "fa_contradicted"),
            ("kg_not_in_graph_rate", "fa_not_in_graph"),
        ):
            m[name] = ratio(name, s[k], s["fa_claims"], missing="no claims")
        m["claims_unknown"] = Metric("claims_unknown", s["fa_unknown"])
        return m


FAMILY = RelationsFamily()


# ---------------------------------------------------------------------- reading
def _triples(rec: Any, sec: Mapping[str, Any], key: str, fast: bool = True) -> list | None:
    """The triples under ``key`` as a list of 3-item lists of non-empty strings (``None`` when
    absent); objects ``{"subject", "predicate", "object"}`` are accepted too. ``fast=False``
    returns the list unchecked when it is a list (the caller checks all records at once in
    :func:`_flat` and calls this again, checked, to locate a bad one)."""
    v = sec.get(key)
    if v is None:
        return None
    if type(v) is not list:
        raise record_error(
            rec,
            f"{SECTION}.{key}",
            f"expected a list of [subject, predicate, object], found {type(v).__name__}",
        )
    # fast path: lists of three strings (checked over the flattened items)
    if not v or not fast:
        return v
    if set(map(type, v)) == {list} and set(map(len, v)) == {3}:
        flat = list(chain.from_iterable(v))
        if all(flat) and set(map(type, flat)) == {str}:
            return v
    out = []
    for i, t in enumerate(v):
        if isinstance(t, Mapping):
            t = [t.get("subject"), t.get("predicate"), t.get("object")]
        if not (isinstance(t, (list, tuple)) and len(t) == 3 and all(isinstance(x, str) and x for x in t)):
            raise record_error(
                rec,
                f"{SECTION}.{key}[{i}]",
                "expected [subject, predicate, object] (three non-empty strings)",
            )
        out.append(list(t))
    return out


def _ids(rec: Any, sec: Mapping[str, Any], key: str) -> list[str] | None:
    v = sec.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise record_error(rec, f"{SECTION}.{key}", "expected a list of entity ids (non-empty strings)")
    return list(dict.fromkeys(v))


class _Codes:
    """Entity and predicate codes: known entities keep their entity index, unknown strings get
    codes past the last entity (distinct per string, so they never equal a known id). Ids
    resolve through ``resolver`` (module docstring, "Ids")."""

    def __init__(self, onto: Ontology, resolver: IdResolver):
        self.o = onto
        self.resolver = resolver
        self.n_ent = onto.graph.n_entities if onto.graph else len(onto)
        self.extra: dict[str, int] = {}
        known = list(onto.graph.predicates) + [
            q.id for q in onto.properties if not onto.graph.has_predicate(q.id)
        ]
        self.pred = {q: k for k, q in enumerate(known)}
        self.n_known_pred = len(known)

    def resolve(self, ids: list[str], role: str, locate: Any, *, check_unknown: bool = True) -> np.ndarray:
        """Entity indices of ``ids`` (``-1``: unknown), resolved as the module docstring says:
        an exact entity id, else the :class:`IdResolver` lookup (CURIE/IRI, aliases) of a node;
        node status per the options. ``locate(j)`` names the place of ``ids[j]``. Raises per
        the options (unknown ids — unless ``check_unknown`` is false: the caller names them —
        and deprecated ids)."""
        e = self.o.entity_indices(ids)
        miss = np.flatnonzero(e < 0)
        if miss.size:
            found, _ = self.resolver.lookup([ids[j] for j in miss.tolist()])
            e[miss] = found
        opt = self.resolver.options
        unknown = np.flatnonzero(e < 0)
        if (
            check_unknown
            and unknown.size
            and (opt.on_unknown_gold if role == "gold" else opt.on_unknown) == "error"
        ):
            raise self.resolver.unknown_error(ids, unknown, role, locate)
        nodes = np.flatnonzero((e >= 0) & (e < len(self.o)))
        bad = nodes[np.asarray(self.o.status)[e[nodes]] != 0]
        if bad.size:
            mode = opt.on_status_gold if role == "gold" else opt.on_status
            if mode == "error":
                raise self.resolver.status_error(ids, e, bad, role, locate)
            if mode == "replace":
                rep = np.asarray(self.o.replaced_by, dtype=np.int64)[e[bad]]
                e[bad[rep >= 0]] = rep[rep >= 0]
        return e

    def entities(self, ids: list[str], role: str, locate: Any, *, check_unknown: bool = True) -> np.ndarray:
        """:meth:`resolve`, with a code past the last entity for each unknown string."""
        e = self.resolve(ids, role, locate, check_unknown=check_unknown)
        for k in np.flatnonzero(e < 0).tolist():
            e[k] = self.n_ent + self.extra.setdefault(ids[k], len(self.extra))
        return e

    def predicates(self, ids: list[str]) -> np.ndarray:
        out = np.fromiter(map(self.pred.get, ids, repeat(-1)), dtype=np.int64, count=len(ids))
        for k in np.flatnonzero(out < 0).tolist():
            out[k] = self.pred.setdefault(ids[k], len(self.pred))
        return out


def _unique_first(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique keys and the position of each one's first occurrence (by sorting: NumPy
    2's hash-based ``unique`` is slower on large int64 arrays)."""
    order = np.argsort(key, kind="stable")
    srt = key[order]
    keep = np.ones(srt.size, dtype=bool)
    keep[1:] = srt[1:] != srt[:-1]
    return srt[keep], order[keep]


def _key(rec, p, s, o, dims):
    n_rec, n_p, n_e = dims
    return ((rec * n_p + p) * n_e + s) * n_e + o


def _match(a_key: np.ndarray, g_key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks: answers found in gold, gold found in answers (both sides unique)."""
    return np.isin(a_key, g_key, assume_unique=True), np.isin(g_key, a_key, assume_unique=True)


def _parents_of(onto: Ontology, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, parent) pairs: every direct parent of each hierarchy-node entity (instances and
    unknown codes have none; the virtual root is no parent)."""
    n = len(onto)
    node = np.flatnonzero((e >= 0) & (e < n))
    starts = onto.parent_ptr[e[node]]
    lens = onto.parent_ptr[e[node] + 1] - starts
    rows = np.repeat(node, lens)
    if not rows.size:
        return rows, rows
    off = np.repeat(starts - np.concatenate(([0], np.cumsum(lens)[:-1])), lens) + np.arange(int(lens.sum()))
    par = onto.parent_idx[off].astype(np.int64)
    if onto.virtual_root:
        keep = par != 0
        rows, par = rows[keep], par[keep]
    return rows, par


def _variants(onto, rec, p, s, o):
    """For each triple, the variants with its subject and/or object moved to a direct parent:
    arrays (row, s', o', moved_s, moved_o), the unmoved variant included."""
    m = rec.size
    rows = [np.arange(m)]
    sv, ov = [s], [o]
    ms, mo = [np.zeros(m, dtype=np.int8)], [np.zeros(m, dtype=np.int8)]
    rs, ps = _parents_of(onto, s)
    ro, po = _parents_of(onto, o)
    rows += [rs, ro]
    sv += [ps, s[ro]]
    ov += [o[rs], po]
    ms += [np.ones(rs.size, dtype=np.int8), np.zeros(ro.size, dtype=np.int8)]
    mo += [np.zeros(rs.size, dtype=np.int8), np.ones(ro.size, dtype=np.int8)]
    # both ends moved
    if rs.size and ro.size:
        order = np.argsort(ro, kind="stable")
        ro_s, po_s = ro[order], po[order]
        lo = np.searchsorted(ro_s, rs, side="left")
        hi = np.searchsorted(ro_s, rs, side="right")
        cnt = hi - lo
        left = np.repeat(np.arange(rs.size), cnt)
        if left.size:
            idx = np.repeat(lo - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt) + np.arange(int(cnt.sum()))
            rows.append(rs[left])
            sv.append(ps[left])
            ov.append(po_s[idx])
            ms.append(np.ones(left.size, dtype=np.int8))
            mo.append(np.ones(left.size, dtype=np.int8))
    return (
        np.concatenate(rows),
        np.concatenate(sv),
        np.concatenate(ov),
        np.concatenate(ms),
        np.concatenate(mo),
    )


def _partial(onto, A, G, a_open, g_open, dims, partial_credit):
    """One-to-one partial matches of open answers to open gold: (answer rows, gold rows, credit)."""
    ai = np.flatnonzero(a_open)
    gi = np.flatnonzero(g_open)
    if not ai.size or not gi.size or partial_credit <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    ar, asv, aov, ams, amo = _variants(onto, A[0][ai], A[2][ai], A[1][ai], A[3][ai])
    gr, gsv, gov, gms, gmo = _variants(onto, G[0][gi], G[2][gi], G[1][gi], G[3][gi])
    ak = _key(A[0][ai][ar], A[2][ai][ar], asv, aov, dims)
    gk = _key(G[0][gi][gr], G[2][gi][gr], gsv, gov, dims)
    order = np.argsort(gk, kind="stable")
    gk_s = gk[order]
    lo = np.searchsorted(gk_s, ak, side="left")
    hi = np.searchsorted(gk_s, ak, side="right")
    cnt = hi - lo
    left = np.repeat(np.arange(ak.size), cnt)
    if not left.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    right = order[np.repeat(lo - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt) + np.arange(int(cnt.sum()))]
    s_moves = ams[left].astype(np.int64) + gms[right]
    o_moves = amo[left].astype(np.int64) + gmo[right]
    ok = (s_moves <= 1) & (o_moves <= 1) & (s_moves + o_moves >= 1)
    a_rows, g_rows = ai[ar[left[ok]]], gi[gr[right[ok]]]
    credit = float(partial_credit) ** (s_moves[ok] + o_moves[ok])
    # one-to-one, greedy by credit, ties by answer then gold position
    order = np.lexsort((g_rows, a_rows, -credit))
    used_a: set[int] = set()
    used_g: set[int] = set()
    out_a, out_g, out_c = [], [], []
    for k in order.tolist():
        a, g = int(a_rows[k]), int(g_rows[k])
        if a in used_a or g in used_g:
            continue
        used_a.add(a)
        used_g.add(g)
        out_a.append(a)
        out_g.append(g)
        out_c.append(float(credit[k]))
    return np.asarray(out_a, dtype=np.int64), np.asarray(out_g, dtype=np.int64), np.asarray(out_c)


def _end_relations(onto, A, G, wrong, dims):
    """(side, relation code) per wrong answer row: -1 side for unanchored (see the module doc)."""
    from kg_rageval.families.hierarchy import relation_codes

    n = len(onto)
    rows = np.flatnonzero(wrong)
    side = np.full(rows.size, -1, dtype=np.int8)
    code = np.full(rows.size, len(RELATIONS) - 1, dtype=np.int64)
    n_rec, n_p, n_e = dims
    for sd, anchor, free in ((1, 1, 3), (0, 3, 1)):  # object wrong (same subject) first, then subject
        todo = np.flatnonzero(side < 0)
        if not todo.size:
            break
        r = rows[todo]
        ak = (A[0][r] * n_p + A[2][r]) * n_e + A[anchor][r]
        gk = (G[0] * n_p + G[2]) * n_e + G[anchor]
        order = np.argsort(gk, kind="stable")
        gk_s = gk[order]
        lo = np.searchsorted(gk_s, ak, side="left")
        hi = np.searchsorted(gk_s, ak, side="right")
        cnt = hi - lo
        has = cnt > 0
        left = np.repeat(np.arange(r.size), cnt)
        right = order[
            np.repeat(lo - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt) + np.arange(int(cnt.sum()))
        ]
        pred_end, gold_end = A[free][r][left], G[free][right]
        c = np.full(left.size, len(RELATIONS) - 1, dtype=np.int64)
        nodes = (pred_end < n) & (gold_end < n) & (pred_end >= 0) & (gold_end >= 0)
        if nodes.any():
            c[nodes] = relation_codes(onto, gold_end[nodes], pred_end[nodes])
        c = np.where(c == 0, len(RELATIONS) - 1, c)  # cannot be exact (the triple was wrong)
        best = np.full(r.size, len(RELATIONS) - 1, dtype=np.int64)
        np.minimum.at(best, left, c)
        side[todo[has]] = sd
        code[todo[has]] = best[has]
    return rows, side, code


# ---------------------------------------------------------------------- scoring
def score_relations(
    ontology: Ontology,
    records: Iterable[Any],
    *,
    partial_credit: float = 0.5,
    **ids: Any,
) -> Evaluation:
    """Score the ``relations`` section of each record (see the module docstring).

    ``ids``: the id-resolution options (:data:`~kg_rageval.contract.ids.ID_PARAMS`).
    Columnar: the triples of all records are scored together (vectorised), one row per
    scored record."""
    if not 0.0 <= float(partial_credit) <= 1.0:
        raise InputError(f"partial_credit must lie in [0, 1], not {partial_credit!r}")
    onto = ontology
    codes = _Codes(onto, IdResolver(onto, IdOptions.of(**ids)))
    lost: list[dict[str, str]] = []
    rids: list[Any] = []
    scored: list[Any] = []
    slices: list[dict[str, str]] = []
    gold_lists: list[list] = []  # per triple record: its gold list, then its answer list
    ans_lists: list[list] = []
    tri_rows: list[int] = []
    set_rows: list[dict[str, float]] = []
    set_at: list[int] = []
    claim_lists: list[list] = []
    claim_rows: list[int] = []
    nodes: list[str | None] = []
    for r in records:
        rid = r.get("id")
        sec = r.get(SECTION)
        if sec is None:
            lost.append(unscored(rid, f"no {SECTION} section", Reason.NO_SECTION))
            continue
        if type(sec) is not dict and not isinstance(sec, Mapping):
            raise record_error(r, SECTION, f"expected an object, found {type(sec).__name__}")
        gold, answer = _triples(r, sec, "gold", False), _triples(r, sec, "answer", False)
        gold_a, answers = _ids(r, sec, "gold_answers"), _ids(r, sec, "answers")
        cl = _triples(r, sec, "claims", False)
        if (gold is not None and answer is None) or (gold_a is not None and answers is None):
            lost.append(
                unscored(
                    rid, "gold relations but no answer (answer/answers missing)", Reason.MISSING_PREDICTION
                )
            )
            continue
        if gold is None and gold_a is None and cl is None:
            lost.append(unscored(rid, "no gold, gold_answers or claims", Reason.NO_GOLD))
            continue
        k = len(rids)
        rids.append(rid)
        scored.append(r)
        nodes.append(_node_of(codes, r, sec, gold))
        slices.append(record_slices(r) if r.get("slices") is not None else {})
        if gold is not None:
            tri_rows.append(k)
            gold_lists.append(gold)
            ans_lists.append(answer or [])
        if gold_a is not None:
            ge = codes.entities(
                gold_a, "gold", lambda j, r=r: where(r, f"{SECTION}.gold_answers[{j}]"), check_unknown=False
            )
            bad = np.flatnonzero(ge >= codes.n_ent)
            if bad.size and codes.resolver.options.on_unknown_gold == "error":
                raise record_error(
                    r,
                    f"{SECTION}.gold_answers[{int(bad[0])}]",
                    f"gold id {gold_a[int(bad[0])]!r} is neither a node nor an instance of the ontology",
                )
            ans = answers or []
            pe = codes.entities(ans, "pred", lambda j, r=r: where(r, f"{SECTION}.answers[{j}]"))
            set_at.append(k)
            set_rows.append(_answer_set(codes.n_ent, set(ge.tolist()), set(pe.tolist())))
        if cl is not None:
            claim_rows.append(k)
            claim_lists.append(cl)
    g_flat, a_flat = _flat(gold_lists, tri_rows), _flat(ans_lists, tri_rows)
    if g_flat is None or a_flat is None:  # objects, or a bad item: check record by record
        gold_lists = [_triples(scored[k], scored[k][SECTION], "gold") or [] for k in tri_rows]
        ans_lists = [_triples(scored[k], scored[k][SECTION], "answer") or [] for k in tri_rows]
        g_flat, a_flat = _flat(gold_lists, tri_rows), _flat(ans_lists, tri_rows)
    n = len(rids)
    cols: dict[str, np.ndarray] = {name: np.zeros(n) for name in FAMILY.stats}
    wrong = np.full(n, None, dtype=object)
    if tri_rows:
        _score_triples(onto, codes, scored, n, cols, wrong, tri_rows, g_flat, a_flat, float(partial_credit))
    for k, st in zip(set_at, set_rows):
        for name, v in st.items():
            cols[name][k] = v
    if claim_rows:
        _score_claims(onto, codes, scored, cols, claim_rows, claim_lists)
    names = sorted({name for sl in slices for name in sl})
    keys = {name: np.asarray([sl.get(name) for sl in slices], dtype=object) for name in names}
    keys["gold_node"] = np.asarray(nodes, dtype=object)
    return Evaluation(
        FAMILY,
        np.asarray(rids, dtype=object),
        cols,
        keys=keys,
        details={"wrong": wrong},
        unscored=lost,
        meta={"partial_credit": float(partial_credit)},
    )


def _node_of(codes: _Codes, r: Any, sec: Mapping[str, Any], gold) -> str | None:
    """The hierarchy node a record's row is attached to (key ``gold_node``), by the one rule
    (:func:`kg_rageval.records.gold_node`: the record's ``gold_node``, else its single
    ``labels.gold`` id), with the family's own node as the fallback: ``relations.node`` when
    given (it must name a node), else the subject of the first gold triple when it resolves to
    a hierarchy node, else that triple's object when it does. Ids resolve as every id (an
    alternative id gives its concept)."""
    resolve = codes.resolver.node_id
    node = sec.get("node")
    own = None
    if node is not None:
        own = resolve(node) if isinstance(node, str) else None
        if own is None:
            raise record_error(r, f"{SECTION}.node", f"{node!r} is not a node of the ontology's hierarchy")
    elif gold:
        t = gold[0]
        ends = (
            (t.get("subject"), t.get("object"))
            if isinstance(t, Mapping)
            else (t[0], t[2])
            if isinstance(t, (list, tuple)) and len(t) == 3
            else ()
        )
        own = next((n for n in (resolve(x) for x in ends if isinstance(x, str) and x) if n is not None), None)
    return gold_node(r, resolve=resolve, fallback=own)


def _flat(lists: list[list], rows: list[int]) -> tuple[np.ndarray, list[str], list[str], list[str]] | None:
    """Record index, subjects, predicates and objects of all triples of ``lists`` (one list per
    row of ``rows``), or ``None`` when an item is not a list of three non-empty strings (checked
    with C-level passes over the flattened items)."""
    items = list(chain.from_iterable(lists))
    if items and (set(map(type, items)) != {list} or set(map(len, items)) != {3}):
        return None
    flat = list(chain.from_iterable(items))
    if flat and not (all(flat) and set(map(type, flat)) == {str}):
        return None
    lens = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    return np.repeat(np.asarray(rows, dtype=np.int64), lens), flat[0::3], flat[1::3], flat[2::3]


def _locator(scored: list, rec: np.ndarray, key: str) -> Any:
    """``at(j, end)``: the place of the ``end`` of flattened triple ``j`` of ``relations.<key>``."""
    first: dict[int, int] = {}
    for j, k in enumerate(rec.tolist()):
        first.setdefault(k, j)

    def at(j: int, end: str) -> str:
        k = int(rec[j])
        return where(scored[k], f"{SECTION}.{key}[{j - first[k]}].{end}")

    return at


def _check_gold(onto, codes, scored, rec, s, p, o, gs, gp, go) -> None:
    """A gold predicate the ontology lacks is an input error, and so is a gold id unless
    ``on_unknown_gold`` is ``"count"`` (first one named)."""
    ids_error = codes.resolver.options.on_unknown_gold == "error"
    bad_s, bad_o, bad_p = (
        (gs >= codes.n_ent) & ids_error,
        (go >= codes.n_ent) & ids_error,
        gp >= codes.n_known_pred,
    )
    bad = bad_s | bad_o | bad_p
    if not bad.any():
        return
    j = int(np.flatnonzero(bad)[0])
    k = int(rec[j])
    i = j - int(np.flatnonzero(rec == k)[0])
    if bad_p[j]:
        raise record_error(
            scored[k], f"{SECTION}.gold[{i}].predicate", f"gold predicate {p[j]!r} is not in the ontology"
        )
    end, x = ("subject", s[j]) if bad_s[j] else ("object", o[j])
    hint = onto.suggest(x)
    raise record_error(
        scored[k],
        f"{SECTION}.gold[{i}].{end}",
        f"gold id {x!r} is neither a node nor an instance of the ontology" + (f" ({hint})" if hint else ""),
    )


def _answer_set(n_ent: int, gold: set[int], pred: set[int]) -> dict[str, float]:
    """One question's answer-set stats from its gold and answer entity codes (unknown ids have
    codes ``>= n_ent``; an id and its alternative id share one code)."""
    hit = len(gold & pred)
    row: dict[str, float] = {"as_unknown": sum(1 for a in pred if a >= n_ent), "as_pred": len(pred)}
    if not gold:
        row["as_nil_q"] = 1
        row["as_nil_correct" if not pred else "as_nil_over"] = 1
        return row
    row["as_gold"], row["as_hit"], row["as_q"] = len(gold), hit, 1
    rr = hit / len(gold)
    row["as_r_sum"] = rr
    if not pred:
        row["as_abstain"] = 1
        return row
    pp = hit / len(pred)
    row["as_p_sum"], row["as_p_q"] = pp, 1
    row["as_f_sum"] = 2 * pp * rr / (pp + rr) if pp + rr else 0.0
    return row


def _score_triples(
    onto, codes, scored, n_rows, cols, wrong_col, rows, g_flat, a_flat, partial_credit
) -> None:
    g_rec, g_s, g_p, g_o = g_flat
    a_rec, a_s, a_p, a_o = a_flat
    g_at, a_at = _locator(scored, g_rec, "gold"), _locator(scored, a_rec, "answer")
    gs = codes.entities(g_s, "gold", lambda j: g_at(j, "subject"), check_unknown=False)
    go = codes.entities(g_o, "gold", lambda j: g_at(j, "object"), check_unknown=False)
    gp = codes.predicates(g_p)
    _check_gold(onto, codes, scored, g_rec, g_s, g_p, g_o, gs, gp, go)
    as_ = codes.entities(a_s, "pred", lambda j: a_at(j, "subject"))
    ao = codes.entities(a_o, "pred", lambda j: a_at(j, "object"))
    ap = codes.predicates(a_p)
    dims = (n_rows, max(len(codes.pred), 1), codes.n_ent + len(codes.extra) + 1)
    if float(dims[0]) * dims[1] * dims[2] * dims[2] >= 2.0**62:
        raise InputError("too many records × entities to key the triples in 64 bits; score in partitions")
    unknown_ids = (as_ >= codes.n_ent) | (ao >= codes.n_ent)
    unknown_pred = ap >= codes.n_known_pred
    # unique per record (repeats count once)
    ka = _key(a_rec, ap, as_, ao, dims)
    kg = _key(g_rec, gp, gs, go, dims)
    ua, first_a = _unique_first(ka)
    ug = _unique_first(kg)[0]
    dup = np.bincount(a_rec, minlength=n_rows) - np.bincount(a_rec[first_a], minlength=n_rows)
    A = (a_rec[first_a], as_[first_a], ap[first_a], ao[first_a])
    unk_ids, unk_pred = unknown_ids[first_a], unknown_pred[first_a]
    e2 = dims[2] * dims[2]
    G = (ug // (dims[1] * e2), (ug // dims[2]) % dims[2], (ug // e2) % dims[1], ug % dims[2])
    a_hit, g_hit = _match(ua, ug)
    # NIL records (empty gold): answers there are over-answers, not in the micro counts
    gold_n = np.bincount(G[0], minlength=n_rows)
    is_tri = np.zeros(n_rows, dtype=bool)
    is_tri[np.asarray(rows, dtype=np.int64)] = True
    nil_rec = is_tri & (gold_n == 0)
    a_open = ~a_hit & ~unk_ids & ~unk_pred & ~nil_rec[A[0]]
    a_rows, g_rows, credit = _partial(onto, A, G, a_open, ~g_hit, dims, partial_credit)
    wrong = ~a_hit & ~nil_rec[A[0]]
    wrong_rows, end_side, end_code = _end_relations(onto, A, G, wrong, dims)
    pred_n = np.bincount(A[0], minlength=n_rows)
    exact = np.bincount(A[0][a_hit], minlength=n_rows)
    live = is_tri & ~nil_rec
    cols["tr_dup"][:] = dup
    cols["tr_unknown_ids"][:] = np.bincount(A[0][unk_ids], minlength=n_rows)
    cols["tr_unknown_pred"][:] = np.bincount(A[0][unk_pred & ~unk_ids], minlength=n_rows)
    cols["tr_nil_q"][:] = nil_rec
    cols["tr_nil_correct"][:] = nil_rec & (pred_n == 0)
    cols["tr_nil_over"][:] = nil_rec & (pred_n > 0)
    cols["tr_gold"][:] = np.where(live, gold_n, 0)
    cols["tr_pred"][:] = np.where(live, pred_n, 0)
    cols["tr_exact"][:] = np.where(live, exact, 0)
    cols["tr_q"][:] = live
    if a_rows.size:
        cols["tr_credit"][:] = np.bincount(A[0][a_rows], weights=credit, minlength=n_rows)
        cols["tr_partial"][:] = np.bincount(A[0][a_rows], minlength=n_rows)
    for sd, name in ((0, "subject"), (1, "object")):
        for c, rel in enumerate(RELATIONS):
            if rel != "exact":
                sel = (end_side == sd) & (end_code == c)
                cols[f"tr_{name}_{rel}"][:] = np.bincount(A[0][wrong_rows[sel]], minlength=n_rows)
    cols["tr_unanchored"][:] = np.bincount(A[0][wrong_rows[end_side < 0]], minlength=n_rows)
    g_live = np.maximum(gold_n, 1)
    rr = np.where(live, exact / g_live, 0.0)
    answered = live & (pred_n > 0)
    pp = np.where(answered, exact / np.maximum(pred_n, 1), 0.0)
    cols["tr_r_sum"][:] = rr
    cols["tr_p_sum"][:] = pp
    cols["tr_p_q"][:] = answered
    den = pp + rr
    cols["tr_f_sum"][:] = np.where(answered & (den > 0), 2 * pp * rr / np.where(den > 0, den, 1), 0.0)
    # a few wrong triples per record as details
    inv_e = {v: kk for kk, v in codes.extra.items()}
    inv_p = {v: kk for kk, v in codes.pred.items()}
    shown: dict[int, list] = {}
    for wr, sd, c in zip(wrong_rows[:10000].tolist(), end_side[:10000].tolist(), end_code[:10000].tolist()):
        k = int(A[0][wr])
        lst = shown.setdefault(k, [])
        if len(lst) < 5:
            lst.append(
                {
                    "triple": [
                        _name(onto, codes, inv_e, int(A[1][wr])),
                        inv_p.get(int(A[2][wr]), "?"),
                        _name(onto, codes, inv_e, int(A[3][wr])),
                    ],
                    "wrong_end": ("subject", "object")[sd] if sd >= 0 else None,
                    "relation": RELATIONS[c] if sd >= 0 else "unanchored",
                }
            )
    for k, lst in shown.items():
        wrong_col[k] = lst


def _name(onto, codes, inv: dict, e: int) -> str:
    return onto.entity_id(e) if e < codes.n_ent else inv.get(e - codes.n_ent, "?")


def _score_claims(
    onto: Ontology, codes: _Codes, scored: list, cols: dict, rows: list[int], claim_lists: list
) -> None:
    flat = _flat(claim_lists, rows)
    if flat is None:  # objects, or a bad item: check record by record
        flat = _flat([_triples(scored[k], scored[k][SECTION], "claims") or [] for k in rows], rows)
    rec, cs, cp, co = flat  # type: ignore[misc]
    n = cols["fa_claims"].size
    c_at = _locator(scored, rec, "claims")
    s = codes.resolve(cs, "pred", lambda j: c_at(j, "subject"))
    o = codes.resolve(co, "pred", lambda j: c_at(j, "object"))
    g = onto.graph
    p = np.fromiter((g.predicate_index(q) for q in cp), dtype=np.int64, count=len(cp))
    known_pred = np.fromiter((q in codes.pred for q in cp), dtype=bool, count=len(cp))
    known = (s >= 0) & (o >= 0) & known_pred
    supported = g.contains(s, p, o) & known
    bad_dom = np.zeros(len(cp), dtype=bool)
    bad_rng = np.zeros(len(cp), dtype=bool)
    bad_card = np.zeros(len(cp), dtype=bool)
    cp_arr = np.asarray(cp, dtype=object)
    for q in set(cp):
        prop = onto.property(q)
        if prop is None:
            continue
        sel = np.flatnonzero(known & ~supported & (cp_arr == q))
        if not sel.size:
            continue
        if prop.domain:
            bad_dom[sel] = ~satisfies(onto, s[sel], prop.domain)
        if prop.range:
            bad_rng[sel] = ~satisfies(onto, o[sel], prop.range)
        pi = g.predicate_index(q)
        if prop.max_cardinality is not None and pi >= 0:
            pos = g.positions(predicate=pi)
            filled = np.bincount(g.s[pos], minlength=g.n_entities)
            bad_card[sel] = filled[s[sel]] >= prop.max_cardinality
    contradicted = known & ~supported & (bad_dom | bad_rng | bad_card)
    for name, mask in (
        ("fa_claims", None),
        ("fa_supported", supported),
        ("fa_contradicted", contradicted),
        ("fa_not_in_graph", ~supported & ~contradicted),
        ("fa_unknown", ~known),
        ("fa_domain", contradicted & bad_dom),
        ("fa_range", contradicted & bad_rng),
        ("fa_cardinality", contradicted & bad_card),
    ):
        cols[name][:] = np.bincount(rec if mask is None else rec[mask], minlength=n)
