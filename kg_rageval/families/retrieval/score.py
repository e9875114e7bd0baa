"""``score_retrieval``: the retrieval section of the records → one :class:`Evaluation`.

Per record (``retrieval`` section, see ``docs/retrieval.md``)::

    {"gold": {"doc-12": 2, "doc-40": 1} | ["doc-12", ...],   # graded or binary judgements
     "run": ["doc-7", "doc-12"] | [["doc-7", 0.9], ...] | [{"id": .., "score": ..}] | {"doc-7": 0.9},
     "filters": [{"field": "category", "op": "within", "value": "TA0006", "source": "predicted"}],
     "gold_filters": [...],              # the correct predicates (predicate precision/recall)
     "principal": {"tenant": "acme"},    # entitlements (with a corpus)
     "gold_node": "TA0006"}              # optional: the gold category's ontology node

Order of operations for one query:

1. **Entitlement** (with a corpus): gold documents the principal may not see are removed from
   the gold set *before* scoring and counted (``n_gold_ineligible``); a query whose relevant
   gold is all ineligible is counted in ``n_q_gold_all_ineligible`` and not scored. Gold ids
   not in the corpus stay in the gold set (``n_gold_unknown``) but cannot be replayed.
   Retrieved documents the principal may not see are counted as ``n_ineligible_retrieved``.
2. **Standard metrics** (:mod:`.metrics`) over the eligible gold; a missing ``run`` scores as
   an empty run and is counted (``n_missing_run``); a query without relevant gold goes to the
   answerability slice (``n_no_gold``), not scored as 0.
3. **Filter replay** (with a corpus and a logged ``filters`` list, possibly empty; without the
   list the query is counted in ``n_filters_not_logged``): false exclusion, per-document
   exclusion and the attribution of every eligible relevant gold document at ``k_att``
   (``attribution_k``, default the largest k): *found* (in the top k_att), *ranker* (retrieved
   below k_att), *filter* (not retrieved and excluded by the filters), *retriever* (not
   retrieved though it passes the filters). A gold document that was **retrieved although the
   logged filters exclude it** shows that the log does not describe what the system did: it is
   an *inconsistent filter log* (``fe_docs_inconsistent``, ``fe_q_inconsistent``,
   ``filter_log_inconsistency_rate``, row detail ``filter_inconsistent``), counted and shown,
   and it is never at the same time a false exclusion (it passed, as the run proves) and a hit.
   Filters on entitlement fields are refused (:mod:`.filters`). Per query: *hit* when one is found; otherwise
   *filter* when every eligible gold document was excluded, *ranker* when one was retrieved
   below k_att, else *retriever*. Both partitions add up to their base.
4. **Category diagnosis**: for a falsely excluded query, the first filter that excluded its
   gold. A category filter is related to the query's gold node with the confusion taxonomy
   (``fe_cause`` = exact/parent/ancestor/child/descendant/sibling/cousin/unrelated;
   ``fe_under`` = their deepest common ancestor); another filter gives ``fe_cause`` =
   ``field:<name>``. :func:`category_diagnosis` tabulates them.

Row keys: ``gold_node`` by the one rule (:func:`kg_rageval.records.gold_node`: the record's
own ``gold_node``, else its single ``labels.gold`` id, resolved), else the family's node:
``retrieval.gold_node``, else the deepest common ancestor of the eligible relevant gold
documents' categories in the corpus — ``None`` when that is the virtual root, i.e. the gold
spans several real roots — else ``None``; and ``slice:<name>`` for every record slice. The
false-exclusion diagnosis relates filters to the family's node (the gold category).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any, cast

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.families.retrieval.corpus import Corpus, eligible_pairs
from kg_rageval.families.retrieval.filters import Filter, parse_filters, predicate_counts, replay
from kg_rageval.families.retrieval.gold import _finite, _parse_gold
from kg_rageval.families.retrieval.metrics import RetrievalFamily, evaluate_lists
from kg_rageval.families.retrieval.runs import _csr, trec_order
from kg_rageval.records import Record, gold_nodes, slice_texts, where
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.evaluation import Evaluation


def _parse_run(rec: Record, raw: Any, dedupe: bool) -> tuple[list[str], int]:
    """Ranked unique ids and the number of duplicates removed (see :mod:`.runs`)."""
    scored: list[tuple[str, float]] | None = None
    if isinstance(raw, Mapping):
        scored = []
        for d, s in raw.items():
            if isinstance(s, bool) or not isinstance(s, (int, float)):
                raise InputError(
                    f"{where(rec, f'retrieval.run[{d!r}]')}: score must be a number, found {s!r}"
                )
            scored.append((str(d), _finite(rec, f"retrieval.run[{d!r}]", s, "score")))
    elif isinstance(raw, list):
        if raw and not isinstance(raw[0], str):
            scored = []
            for i, e in enumerate(raw):
                if (
                    isinstance(e, Mapping)
                    and isinstance(e.get("id"), str)
                    and isinstance(e.get("score"), (int, float))
                ):
                    scored.append((e["id"], _finite(rec, f"retrieval.run[{i}].score", e["score"], "score")))
                elif (
                    isinstance(e, (list, tuple))
                    and len(e) == 2
                    and isinstance(e[0], str)
                    and isinstance(e[1], (int, float))
                ):
                    scored.append((e[0], _finite(rec, f"retrieval.run[{i}][1]", e[1], "score")))
                else:
                    raise InputError(
                        f"{where(rec, f'retrieval.run[{i}]')}: expected [id, score] or {{'id', 'score'}} "
                        f"(a run is all ids or all scored entries), found {e!r}"
                    )
        else:
            for i, e in enumerate(raw):
                if not isinstance(e, str):
                    raise InputError(
                        f"{where(rec, f'retrieval.run[{i}]')}: expected a document id, found {e!r}"
                    )
            ids = raw
    else:
        raise InputError(
            f"{where(rec, 'retrieval.run')}: expected a list of ids, scored entries or {{id: score}}, found {raw!r}"
        )
    if scored is not None:
        ids = [d for d, _ in scored]
    uniq = list(dict.fromkeys(ids))
    if len(uniq) != len(ids) and not dedupe:
        seen: set[str] = set()
        dup = next(d for d in ids if d in seen or seen.add(d))  # type: ignore[func-returns-value]
        raise InputError(
            f"{where(rec, 'retrieval.run')}: query {rec.get('id')!r} lists document {dup!r} more than once; "
            "k counts unique document ids (dedupe=True keeps the first occurrence)"
        )
    if scored is not None:
        first: dict[str, float] = {}
        for d, s in scored:
            first.setdefault(d, s)
        # trec_eval order: score descending, then doc id descending
        ranked = sorted(first.items(), key=lambda x: x[0], reverse=True)
        ranked.sort(key=lambda x: -x[1])
        return [d for d, _ in ranked], len(ids) - len(uniq)
    return uniq, len(ids) - len(uniq)


_STR = {str}
_NUM = {int, float}


def _parse_golds(rows: list[Record], raws: list[Any]) -> list[Mapping[str, float]]:
    """:func:`_parse_gold` of every record, with the per-id work in C-level passes over all
    records: ``{doc: grade}`` objects whose keys are all strings and grades all numbers are
    used as they are (grades become floats where they are read), lists of string ids become
    ``dict.fromkeys(ids, 1.0)``. When some record has another shape, a non-string id, a
    non-numeric, too large or non-finite grade, every record goes through the checked parser
    (which names the record and field of the first bad one)."""
    kinds = list(map(type, raws))
    dicts = [r for r, t in zip(raws, kinds) if t is dict]
    lists = [r for r, t in zip(raws, kinds) if t is list]
    ok = len(dicts) + len(lists) == len(raws)
    if ok and dicts:
        ok = (
            set(map(type, itertools.chain.from_iterable(dicts))) <= _STR
            and set(map(type, itertools.chain.from_iterable(map(dict.values, dicts)))) <= _NUM
        )
        if ok:
            try:
                ok = bool(
                    np.isfinite(
                        np.fromiter(itertools.chain.from_iterable(map(dict.values, dicts)), dtype=np.float64)
                    ).all()
                )
            except OverflowError:
                ok = False
    if ok and lists:
        ok = set(map(type, itertools.chain.from_iterable(lists))) <= _STR
    if not ok:
        return [_parse_gold(rec, raw) for rec, raw in zip(rows, raws)]
    return [raw if t is dict else dict.fromkeys(raw, 1.0) for raw, t in zip(raws, kinds)]


def _parse_runs(
    rows: list[Record], raws: list[Any], dedupe: bool
) -> tuple[list[list[str] | None], np.ndarray]:
    """:func:`_parse_run` of every record — ranked unique ids (``None`` without a run) and the
    duplicates removed per record — with the per-id work in C-level passes over all records:
    the common shapes (a list of ids, ``[[id, score], ...]``, ``{id: score}``) are unpacked,
    every id type-checked in one pass, repeats found with one ``set`` per run, and the scored
    runs put in trec_eval's order by one :func:`trec_order` (score descending, then id
    descending; a ranked list keeps its order). A run in another shape, with a repeated id or
    a bad entry goes through the checked parser (which raises, naming the record and field,
    or dedupes); so does every run when some id is not a string or a score is too large or
    not finite. Same result as :func:`_parse_run` per record."""
    n = len(raws)
    out: list[list[str] | None] = [None] * n
    scores: dict[int, list] = {}
    dups = np.zeros(n, dtype=np.int64)
    for i, raw in enumerate(raws):
        if raw is not None:
            got, sc = _shape(raw)
            out[i] = got
            if sc is not None:
                scores[i] = sc
    shaped = [x for x in out if x is not None]
    ok = set(map(type, itertools.chain.from_iterable(shaped))) <= _STR
    vals = None
    if ok and scores:
        try:
            vals = np.fromiter(itertools.chain.from_iterable(scores.values()), dtype=np.float64)
            ok = bool(np.isfinite(vals).all())
        except OverflowError:
            ok = False
    if not ok:  # the checked parser names the first bad record and field
        for i, (rec, raw) in enumerate(zip(rows, raws)):
            if raw is not None:
                out[i], dups[i] = _parse_run(rec, raw, dedupe)
        return out, dups
    for i, (rec, raw) in enumerate(zip(rows, raws)):
        x = out[i]
        if raw is not None and (x is None or len(set(x)) != len(x)):  # another shape or a repeated id
            out[i], dups[i] = _parse_run(rec, raw, dedupe)
            scores.pop(i, None)
    if scores:
        _rank_scored(out, scores)
    return out, dups


def _rank_scored(out: list[Any], scores: dict[int, list]) -> None:
    """Replace each scored run ``out[i]`` (ids in input order, ``scores[i]`` their scores) by
    its ids in trec_eval's order, all runs sorted by one :func:`trec_order`."""
    rows = list(scores)
    ids = [out[i] for i in rows]
    lens = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    ptr = _csr(lens)
    flat = np.fromiter(
        itertools.chain.from_iterable(scores[i] for i in rows), dtype=np.float64, count=int(ptr[-1])
    )
    order = trec_order(ptr, flat, None, None, row_ids=lambda r: ids[r])
    if order is None:
        return
    docs = np.fromiter(itertools.chain.from_iterable(ids), dtype=object, count=int(ptr[-1]))[order].tolist()
    p = ptr.tolist()
    for j, i in enumerate(rows):
        out[i] = docs[p[j] : p[j + 1]]


def _shape(raw: Any) -> tuple[list | None, list | None]:
    """(ids, scores or None) of a run in a common shape with numeric scores, else (None, None);
    the ids are not checked here."""
    t = type(raw)
    if t is list:
        if not raw or type(raw[0]) is str:
            return raw, None
        if type(raw[0]) is list and set(map(len, raw)) == {2}:
            sc = list(map(_SECOND, raw))
            if set(map(type, sc)) <= _NUM:
                return list(map(_FIRST, raw)), sc
        return None, None
    if t is dict and set(map(type, raw.values())) <= _NUM:
        return list(raw), list(raw.values())
    return None, None


_FIRST, _SECOND = itemgetter(0), itemgetter(1)


def _filters(
    raw: Any,
    rec: Record,
    field: str,
    memo: dict[Any, list[Filter]],
    category_field: str,
    entitlement_fields: Sequence[str],
) -> list[Filter]:
    """:func:`parse_filters` of one record's filter list, memoised on its content when every
    filter is an object of string values (the common logged shape; the parsed filters are
    immutable and shared, read-only): records repeat a few filters many times. The record's
    location is formatted only when the list is bad (the checked parse is run again with it,
    so the error is the same)."""
    key = None
    if type(raw) is list:
        try:
            key = tuple([tuple(d.items()) for d in raw])
            # a hit needs no type check: the memo's keys have string values only, and only a
            # string equals a string (1, 1.0 and True, equal to each other, never reach it)
            got = memo.get(key)
        except (AttributeError, TypeError):  # an entry that is not a mapping, an unhashable value
            key = got = None
        if got is not None:
            return got
        if key is not None:
            try:
                if not set(map(type, itertools.chain.from_iterable(map(dict.values, raw)))) <= _STR:
                    key = None
            except TypeError:  # an entry that is not a dict: the checked parse names it
                key = None
    try:
        got = parse_filters(raw, field, category_field=category_field, entitlement_fields=entitlement_fields)
    except InputError:
        parse_filters(
            raw, where(rec, field), category_field=category_field, entitlement_fields=entitlement_fields
        )
        raise  # pragma: no cover - the located parse raises the same error
    if key is not None:
        memo[key] = got
    return got


def score_retrieval(
    ontology,
    records: Iterable[Record],
    corpus: Corpus | None = None,
    *,
    k: int | Sequence[int] = (1, 5, 10),
    gain: str = "graded",
    dedupe: bool = False,
    attribution_k: int | None = None,
    entitlement_defaults: Mapping[str, Any] | None = None,
    engine: str = "auto",
    **ids: Any,
) -> Evaluation:
    """Score the ``retrieval`` section of ``records`` (see the module docstring).

    Parameters
    ----------
    ontology : the compiled :class:`~kg_rageval.ontology.Ontology` (gold nodes, ``within``).
    corpus : documents with categories and entitlement fields; needed for entitlement,
        filter replay, attribution and gold nodes derived from categories.
    k : cut-offs. gain : ``"graded"`` or ``"binary"`` nDCG gain.
    dedupe : keep the first occurrence of a repeated run id (counted) instead of raising.
    attribution_k : the cut-off of the filter/retriever/ranker attribution (default max k).
    entitlement_defaults : principal fields applied to every record that does not set them
        (e.g. ``{"status": "published"}``).
    on_unknown, on_unknown_gold, on_status, on_status_gold, aliases : the one id-resolution
        convention (:mod:`kg_rageval.ontology.resolver`). The ontology ids of the logged
        filters are the system's: one the ontology lacks matches no document and is counted
        (``meta["filter_ids_not_in_ontology"]``; ``on_unknown="error"`` raises). The corpus
        categories are data: the corpus reader of the family applies ``on_unknown_gold``.
    """
    from kg_rageval.ontology import IdOptions, IdResolver

    resolver = IdResolver(ontology, IdOptions.of(**ids))
    filter_unknown: list[str] = []
    family = RetrievalFamily(k, gain=gain, attribution_k=attribution_k)
    ks, katt = family.ks, family.attribution_k
    records = list(records)
    unscored: list[dict[str, str]] = []
    rows: list[Record] = []
    filt: list[list[Filter] | None] = []
    gold_filt: list[list[Filter] | None] = []
    principals: list[Mapping[str, Any] | None] = []
    cat_field = corpus.category_field if corpus is not None else "categories"
    from kg_rageval.families.retrieval.corpus import DEFAULT_ENTITLEMENT_FIELDS

    ent_fields = tuple(corpus.entitlement_fields) if corpus is not None else DEFAULT_ENTITLEMENT_FIELDS
    ent_set = frozenset(ent_fields)
    gold_raw: list[Any] = []
    run_raw: list[Any] = []
    memo: dict[Any, list[Filter]] = {}
    for rec in records:
        sec = rec.get("retrieval")
        if sec is None:
            unscored.append(unscored_entry(rec.get("id"), "no retrieval section", Reason.NO_SECTION))
            continue
        if type(sec) is not dict and not isinstance(sec, Mapping):
            raise InputError(f"{where(rec, 'retrieval')}: expected an object, found {type(sec).__name__}")
        if "gold" not in sec:
            unscored.append(unscored_entry(rec.get("id"), "no retrieval.gold", Reason.NO_GOLD))
            continue
        rows.append(rec)
        gold_raw.append(sec["gold"])
        run_raw.append(sec.get("run"))
        f = sec.get("filters")
        filt.append(
            _filters(f, rec, "retrieval.filters", memo, cat_field, ent_fields) if f is not None else None
        )
        f = sec.get("gold_filters")
        gold_filt.append(
            _filters(f, rec, "retrieval.gold_filters", memo, cat_field, ent_fields) if f is not None else None
        )
        pr = sec.get("principal")
        if pr is not None and type(pr) is not dict and not isinstance(pr, Mapping):
            raise InputError(f"{where(rec, 'retrieval.principal')}: expected an object, found {pr!r}")
        if entitlement_defaults:
            pr = {**entitlement_defaults, **(pr or {})}
        if pr and corpus is not None and not ent_set.issuperset(pr):
            corpus.check_principal(pr, where(rec, "retrieval.principal"))  # raises, naming the record
        principals.append(pr)
    golds = _parse_golds(rows, gold_raw)
    runs, dups = _parse_runs(rows, run_raw, dedupe)

    n = len(rows)
    st: dict[str, np.ndarray] = {s: np.zeros(n) for s in family.stats}
    details: dict[str, list[Any]] = {
        c: [None] * n
        for c in (
            "attribution",
            "fe_cause",
            "fe_under",
            "fe_filter",
            "fe_filter_source",
            "filter_inconsistent",
        )
    }
    details["missing_run"] = [r is None for r in runs]

    # ---- entitlement: eligible gold (before scoring)
    # kept: corpus indices of the eligible relevant gold documents (known docs), CSR by record
    kept = np.zeros(0, dtype=np.int64)
    kept_rec = np.zeros(0, dtype=np.int64)
    unknown_gold: np.ndarray = np.zeros(n)
    if corpus is None:
        elig_gold: list[Mapping[str, float]] = list(golds)
    else:
        # all (record, gold doc) and (record, retrieved doc) pairs in one vectorised pass
        glen = np.fromiter(map(len, golds), dtype=np.int64, count=n)
        gflat = corpus.lookup(list(itertools.chain.from_iterable(golds)))
        grec = np.repeat(np.arange(n, dtype=np.int64), glen)
        grel = (
            np.fromiter(
                itertools.chain.from_iterable(map(dict.values, cast("list[dict[str, float]]", golds))),
                dtype=np.float64,
                count=len(gflat),
            )
            >= 1
            if all(type(g) is dict for g in golds)
            else np.fromiter((g[d] >= 1 for g in golds for d in g), dtype=bool, count=len(gflat))
        )
        gknown = gflat >= 0
        # every run's ids looked up once (entitlement here, ranks in the filter replay)
        run_len = np.fromiter((len(r) if r else 0 for r in runs), dtype=np.int64, count=n)
        run_doc = corpus.lookup(list(itertools.chain.from_iterable(filter(None, runs))))
        run_rec = np.repeat(np.arange(n, dtype=np.int64), run_len)
        has_pr = np.fromiter(map(bool, principals), dtype=bool, count=n)
        rsel = has_pr[run_rec] & (run_doc >= 0)
        rrec, rflat = run_rec[rsel], run_doc[rsel]
        # the gold and the retrieved pairs in one pass over the principals
        ng = int(gknown.sum())
        eligible = eligible_pairs(
            corpus, np.concatenate([grec[gknown], rrec]), np.concatenate([gflat[gknown], rflat]), principals
        )
        gok = np.ones(len(gflat), dtype=bool)
        gok[gknown] = eligible[:ng]
        st["n_gold_ineligible"] = np.bincount(grec, weights=~gok, minlength=n)
        any_rel = np.bincount(grec, weights=grel, minlength=n) > 0
        any_rel_ok = np.bincount(grec, weights=grel & gok, minlength=n) > 0
        st["n_q_gold_all_ineligible"] = (any_rel & ~any_rel_ok).astype(float)
        unknown_gold = np.bincount(grec, weights=~gknown & gok & grel, minlength=n)
        keep_mask = gknown & gok & grel
        kept, kept_rec = gflat[keep_mask], grec[keep_mask]
        # a record whose gold is all eligible keeps its gold mapping (read-only) as it is
        gptr = _csr(glen).tolist()
        some_out = (st["n_gold_ineligible"] > 0).tolist()
        gok_l = gok.tolist()
        elig_gold = [
            {d: golds[i][d] for d, kk in zip(golds[i], gok_l[gptr[i] : gptr[i + 1]]) if kk}
            if some_out[i]
            else golds[i]
            for i in range(n)
        ]
        st["n_ineligible_retrieved"] = np.bincount(rrec, weights=~eligible[ng:], minlength=n).astype(float)
    kcount = np.bincount(kept_rec, minlength=n)

    # ---- standard metrics, all queries at once
    pq = evaluate_lists(elig_gold, runs, ks, gain=gain, engine=engine)
    scored = pq.n_rel > 0
    for m in family.metric_list:
        st[f"{m}.sum"] = np.where(scored, pq.values[m], 0.0)
    st["n_scored"] = scored.astype(float)
    st["n_missing_run"] = (scored & pq.missing).astype(float)
    no_gold = (~scored) & (st["n_q_gold_all_ineligible"] == 0)
    st["n_no_gold"] = no_gold.astype(float)
    st["n_no_gold_nonempty_run"] = (no_gold & (pq.n_retrieved > 0)).astype(float)
    st["n_duplicates_removed"] = dups.astype(float)
    st["n_gold_unknown"] = unknown_gold

    # ---- predicate precision / recall
    for i in range(n):
        gf = gold_filt[i]
        if gf is not None:
            tp, npred, ngold = predicate_counts(filt[i] or [], gf)
            st["pred_tp"][i], st["pred_n"][i], st["gold_n"][i] = tp, npred, ngold

    # ---- gold nodes
    gold_node: list[str | None] = [None] * n
    given = [rec["retrieval"].get("gold_node") for rec in rows]
    for i in [i for i, g in enumerate(given) if g is not None]:
        rec, gn = rows[i], given[i]
        if not isinstance(gn, str):
            raise InputError(f"{where(rec, 'retrieval.gold_node')}: expected an ontology id, found {gn!r}")
        gold_node[i] = ontology.ids[ontology.index(gn)] if gn in ontology else _resolve(ontology, gn, rec)
    if corpus is not None and len(kept):
        _derived_gold_nodes(ontology, corpus, kept, kept_rec, given, gold_node)

    # ---- filter replay, false exclusion and attribution
    if corpus is not None:
        is_logged = np.fromiter((f is not None for f in filt), dtype=bool, count=n)
        logged = np.flatnonzero(is_logged)
        st["n_filters_not_logged"] = (~is_logged & (kcount > 0)).astype(float)
        sel = is_logged[kept_rec]
        pair_rec, pair_d = kept_rec[sel], kept[sel]
        pos = np.full(n, -1, dtype=np.int64)
        pos[logged] = np.arange(len(logged))
        lfilt = [filt[i] for i in logged.tolist()]
        passes, first_fail = replay(
            corpus,
            ontology,
            pos[pair_rec],
            pair_d,
            lfilt,
            where=_Where(rows, logged, "retrieval.filters"),
            resolver=resolver,
            unknown=filter_unknown,
        )
        rk = _ranks(corpus, is_logged[run_rec], run_rec, run_doc, run_len, pair_rec, pair_d)
        found = (rk > 0) & (rk <= katt)
        below = rk > katt
        inconsistent = (rk > 0) & ~passes  # retrieved, yet the logged filters exclude it
        p = passes | (rk > 0)  # it passed whatever filter the system really applied
        lost_filter = (rk == 0) & ~p
        lost_retr = (rk == 0) & p

        def per_q(x: np.ndarray) -> np.ndarray:
            return np.bincount(pair_rec, weights=x, minlength=n)

        n_elig = np.bincount(pair_rec, minlength=n).astype(float)
        q = n_elig > 0  # logged records with eligible relevant gold in the corpus
        n_pass, n_incons = per_q(p), per_q(inconsistent)
        n_found, n_below = per_q(found), per_q(below)
        st["fe_q_eligible"] = q.astype(float)
        st["fe_docs_eligible"] = n_elig
        st["fe_docs_excluded"] = n_elig - n_pass
        st["fe_q_inconsistent"] = (n_incons > 0).astype(float)
        st["fe_docs_inconsistent"] = n_incons
        st["att_q"] = q.astype(float)
        st["att_docs"] = n_elig.copy()
        st["att_docs_found"] = n_found
        st["att_docs_ranker"] = n_below
        st["att_docs_filter"] = per_q(lost_filter)
        st["att_docs_retriever"] = per_q(lost_retr)
        excluded = q & (n_pass == 0)
        label = np.where(n_found > 0, 0, np.where(excluded, 1, np.where(n_below > 0, 2, 3)))
        for c, name in enumerate(_ATTRIBUTION):
            st[f"att_q_{name}"] = (q & (label == c)).astype(float)
        att = details["attribution"]
        for i, c in zip(np.flatnonzero(q).tolist(), label[q].tolist()):
            att[i] = _ATTRIBUTION[c]
        if inconsistent.any():
            ids_ = corpus.ids
            got: dict[int, list[str]] = {}
            for i, d in zip(pair_rec[inconsistent].tolist(), pair_d[inconsistent].tolist()):
                got.setdefault(i, []).append(ids_[d])
            for i, ds in got.items():
                details["filter_inconsistent"][i] = " ".join(ds)
        st["fe_q_excluded"] = excluded.astype(float)
        diag_pairs: list[tuple[int, int, Filter]] = []
        if excluded.any():
            starts = _csr(np.bincount(pair_rec, minlength=n))
            for i in np.flatnonzero(excluded).tolist():
                f = filt[i][int(first_fail[starts[i]])]  # type: ignore[index]
                details["fe_filter"][i] = f"{f.field} {f.op} {','.join(f.values)}"
                details["fe_filter_source"][i] = f.source
                if (
                    f.field == corpus.category_field
                    and f.op in ("within", "eq", "in")
                    and gold_node[i] is not None
                ):
                    diag_pairs.append((i, ontology.index(gold_node[i]), f))
                else:
                    details["fe_cause"][i] = f"field:{f.field}"
        _diagnose(ontology, diag_pairs, details, resolver)

    # the row key by the one rule: the record's own gold_node or single gold label win; the
    # retrieval node above (the gold category, also the false-exclusion diagnosis's node) is
    # the family's fallback
    ruled = [i for i, rec in enumerate(rows) if "gold_node" in rec or "labels" in rec]
    row_node = list(gold_node)
    for i, node in zip(
        ruled,
        gold_nodes(
            [rows[i] for i in ruled], resolve=resolver.node_id, fallbacks=[gold_node[i] for i in ruled]
        ),
    ):
        row_node[i] = node
    keys: dict[str, list[Any]] = {"gold_node": row_node}
    sl = [r.get("slices") for r in rows]
    sl = (
        [x if type(x) is dict or isinstance(x, Mapping) else None for x in sl]
        if set(map(type, sl)) - {dict, type(None)}
        else sl
    )
    slice_names = sorted(set(itertools.chain.from_iterable(filter(None, sl))))
    empty: dict = {}
    for s in slice_names:
        keys[f"slice:{s}"] = slice_texts([(x or empty).get(s) for x in sl])
    meta = {
        "k": list(ks),
        "gain": gain,
        "attribution_k": katt,
        "conventions": "trec_eval per-query formulas; missing runs 0 and counted; queries without relevant "
        "gold in the answerability slice (not averaged); k counts unique ids; ties: score desc, "
        "doc id desc",
    }
    if filter_unknown:
        meta["filter_ids_not_in_ontology"] = sorted(set(filter_unknown))[:50]
        meta["n_filter_ids_not_in_ontology"] = len(filter_unknown)
    if corpus is not None:
        meta["corpus"] = {
            "source": corpus.source,
            "documents": len(corpus),
            "entitlement_fields": list(corpus.entitlement_fields),
        }
    return Evaluation(
        family=family,
        record_ids=np.asarray([r["id"] for r in rows], dtype=object),
        stats=st,
        keys={k_: np.asarray(v, dtype=object) for k_, v in keys.items()},
        details={k_: np.asarray(v, dtype=object) for k_, v in details.items()},
        unscored=unscored,
        meta=meta,
    )


_ATTRIBUTION = ("hit", "filter", "ranker", "retriever")
"""Per-query attribution labels, in the order they are decided (see the module docstring)."""


class _Where(Sequence[str]):
    """The record locations of the logged queries, formatted only when an error names one."""

    def __init__(self, rows: list[Record], logged: np.ndarray, field: str) -> None:
        self.rows, self.logged, self.field = rows, logged, field

    def __len__(self) -> int:
        return len(self.logged)

    def __getitem__(self, q):  # type: ignore[override]
        return where(self.rows[int(self.logged[q])], self.field)


def _ranks(
    corpus: Corpus,
    logged: np.ndarray,
    run_rec: np.ndarray,
    run_doc: np.ndarray,
    run_len: np.ndarray,
    pair_rec: np.ndarray,
    pair_doc: np.ndarray,
) -> np.ndarray:
    """The 1-based rank of each (record, corpus document) pair's document in the record's run
    (0: not retrieved), from every run's ids looked up in the corpus (``run_doc``, -1 for an id
    it lacks; ``run_rec`` the record of each entry, ``run_len`` each run's length; ``logged``:
    the entries of the records with logged filters): the pairs are found with one
    ``searchsorted`` (run ids are unique per record)."""
    rank = np.arange(len(run_doc), dtype=np.int64) - np.repeat(_csr(run_len)[:-1], run_len) + 1
    ok = logged & (run_doc >= 0)
    nd = max(len(corpus), 1)
    key = run_rec[ok] * nd + run_doc[ok]
    order = np.argsort(key, kind="stable")
    key, rank = key[order], rank[ok][order]
    want = pair_rec * nd + pair_doc
    out = np.zeros(len(want), dtype=np.int64)
    if len(key):
        at = np.minimum(np.searchsorted(key, want), len(key) - 1)
        hit = key[at] == want
        out[hit] = rank[at[hit]]
    return out


def _derived_gold_nodes(
    ontology,
    corpus: Corpus,
    kept: np.ndarray,
    kept_rec: np.ndarray,
    given: list[Any],
    gold_node: list[str | None],
) -> None:
    """``gold_node[i]`` of each record without a given ``gold_node``: the deepest common
    ancestor (:meth:`Ontology.lca_index`, folded over the ascending category indices) of the
    corpus categories of its eligible relevant gold documents (``kept``, by ``kept_rec``);
    the virtual root is no gold node. One category (the common case) needs no fold."""
    clen = corpus.cat_ptr[kept + 1] - corpus.cat_ptr[kept]
    crec = np.repeat(kept_rec, clen)
    offs = np.arange(int(clen.sum())) - np.repeat(np.cumsum(clen) - clen, clen)
    cats = corpus.cat_idx[np.repeat(corpus.cat_ptr[kept], clen) + offs]
    no = max(len(ontology), 1)
    u = np.unique(crec * no + cats)
    urec, ucat = (u // no).tolist(), (u % no).tolist()
    vroot = ontology.virtual_root
    ids = ontology.ids
    j, m = 0, len(urec)
    while j < m:
        i, node = urec[j], ucat[j]
        j += 1
        while j < m and urec[j] == i:
            node = ontology.lca_index(node, ucat[j])
            j += 1
        if given[i] is None:
            gold_node[i] = None if (vroot and node == 0) else ids[node]


def _resolve(ontology, gn: str, rec: Record) -> str:
    from kg_rageval.base.errors import UnknownIdError

    try:
        return ontology.resolve(gn)
    except UnknownIdError as exc:
        raise UnknownIdError(gn, where=where(rec, "retrieval.gold_node"), hint=str(exc)) from None


def _diagnose(
    ontology, pairs: list[tuple[int, int, Filter]], details: dict[str, list[Any]], resolver: Any = None
) -> None:
    """Relation of each excluding category filter to the query's gold node (vectorised when
    :func:`kg_rageval.families.hierarchy.relation_codes` is available); a filter whose values the
    ontology lacks (counted, see :func:`score_retrieval`) has the cause ``not_in_ontology``."""
    if not pairs:
        return
    from kg_rageval.ontology import NOT_IN_ONTOLOGY
    from kg_rageval.ontology.model import RELATIONS

    # a filter with several values: the value nearest to the gold node (first by relation order)
    cand_g, cand_v, owner = [], [], []
    for j, (i, g, f) in enumerate(pairs):
        vals = list(f.values)
        idx = (
            resolver.lookup(vals)[0]
            if resolver is not None
            else np.asarray([ontology.index(v) for v in vals])
        )
        known = [int(x) for x in idx.tolist() if x >= 0]
        if not known:
            details["fe_cause"][i] = NOT_IN_ONTOLOGY
            details["fe_under"][i] = None
            continue
        for v in known:
            cand_g.append(g)
            cand_v.append(v)
            owner.append(j)
    if not owner:
        return
    codes = _relation_codes(ontology, np.asarray(cand_g), np.asarray(cand_v))
    chosen: dict[int, tuple[int, int]] = {}
    for o, c, v in zip(owner, codes.tolist(), cand_v):
        if o not in chosen or c < chosen[o][0]:
            chosen[o] = (c, v)
    for j, (i, g, _f) in enumerate(pairs):
        if j not in chosen:
            continue
        c, v = chosen[j]
        details["fe_cause"][i] = RELATIONS[c]
        lca = ontology.lca_index(g, v)
        # the virtual root is no place exclusions come from: no common ancestor
        details["fe_under"][i] = None if (ontology.virtual_root and lca == 0) else ontology.ids[lca]


VECTOR_RELATIONS_MIN = 20_000
"""Below this many pairs, and unless the hierarchy closure is already built, relations are
computed pair by pair (building the closure of a large ontology costs seconds)."""


def _relation_codes(ontology, gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Relation codes (indices into ``RELATIONS``) of (gold, pred) pairs: the vectorised
    :func:`kg_rageval.families.hierarchy.relation_codes` when worthwhile, else ``Ontology.relation_index``
    (the two are tested equal by the hierarchy module)."""
    from kg_rageval.ontology.model import RELATIONS

    try:
        from kg_rageval.families.hierarchy import relation_codes  # type: ignore[attr-defined]
        from kg_rageval.families.hierarchy.closure import _CACHE
    except ImportError:  # pragma: no cover - depends on the other module being present
        pass
    else:
        if len(gold) >= VECTOR_RELATIONS_MIN or ontology in _CACHE:
            return np.asarray(relation_codes(ontology, gold, pred), dtype=np.int64)
    return np.asarray(
        [RELATIONS.index(ontology.relation_index(int(a), int(b))) for a, b in zip(gold, pred)], dtype=np.int64
    )


def category_diagnosis(evaluation: Evaluation, ontology=None) -> dict[str, Any]:
    """Where the false exclusions come from: counts and shares by cause and common ancestor.

    Returns ``{"n_false_exclusions": N, "by_cause": [{"cause", "n", "share"}],
    "by_cause_under": [{"cause", "under", "label", "n", "share"}], "sentences": [...]}``; shares
    are of all falsely excluded queries. With none, the shares are missing (``None``)."""
    cause = evaluation.details.get("fe_cause")
    under = evaluation.details.get("fe_under")
    excl = evaluation.stats["fe_q_excluded"] > 0
    total = int(excl.sum())
    out: dict[str, Any] = {"n_false_exclusions": total, "by_cause": [], "by_cause_under": [], "sentences": []}
    if cause is None or under is None or total == 0:
        out["missing"] = "no false exclusions" if total == 0 else "no diagnosis"
        return out
    by_c: dict[str, int] = {}
    by_cu: dict[tuple[str, str | None], int] = {}
    for c, u, e in zip(cause.tolist(), under.tolist(), excl.tolist()):
        if not e:
            continue
        c = c or "unknown"
        by_c[c] = by_c.get(c, 0) + 1
        by_cu[(c, u)] = by_cu.get((c, u), 0) + 1
    out["by_cause"] = [
        {"cause": c, "n": v, "share": v / total} for c, v in sorted(by_c.items(), key=lambda x: (-x[1], x[0]))
    ]
    for (c, u), v in sorted(by_cu.items(), key=lambda x: (-x[1], x[0][0], str(x[0][1]))):
        label = (
            ontology.labels[ontology.index(u)]
            if (ontology is not None and u is not None and u in ontology)
            else None
        )
        out["by_cause_under"].append({"cause": c, "under": u, "label": label, "n": v, "share": v / total})
        kind = f"{c}-category filters" if not c.startswith("field:") else f"filters on {c[6:]!r}"
        where_ = f" under {u}" + (f" ({label})" if label else "") if u else ""
        out["sentences"].append(
            f"{100 * v / total:.0f}% of false exclusions ({v}/{total}) come from {kind}{where_}"
        )
    return out
