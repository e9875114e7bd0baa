"""Frozen reference: ``kg_rageval.families.retrieval.score`` as it was before the vectorised records
path (per-record parsing and ranking). ``tests/families/retrieval/test_retrieval_fastpaths.py`` checks the
current ``score_retrieval`` against it; not part of the package."""
# ruff: noqa

from __future__ import annotations

import math

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.records import Record, slice_texts, where
from kg_rageval.families.retrieval.corpus import Corpus, value_key
from kg_rageval.families.retrieval.filters import Filter, parse_filters, predicate_counts, replay
from kg_rageval.families.retrieval.metrics import RetrievalFamily, evaluate_run
from kg_rageval.families.retrieval.runs import Qrels, Run, Vocab


def eligible_pairs(
    corpus: "Corpus",
    pair_group: np.ndarray,
    pair_doc: np.ndarray,
    principals: Sequence[Mapping[str, Any] | None],
) -> np.ndarray:
    """The per-group loop it was before principal classes (issue #20).

    :meth:`Corpus.eligible` for many (group, document) pairs at once, each group with its
    own principal (``None``: everything eligible). Vectorised: for each entitlement field, the
    allowed (group, value) keys are sorted once and every (pair, document value) is looked up
    with one ``searchsorted``."""
    pair_group = np.asarray(pair_group, dtype=np.int64)
    pair_doc = np.asarray(pair_doc, dtype=np.int64)
    ok = np.ones(len(pair_doc), dtype=bool)
    fields: dict[str, None] = {}
    for pr in principals:
        if pr:
            fields.update(dict.fromkeys(pr))
    for f in fields:
        table = corpus.fields.get(f)
        restricted = np.zeros(len(principals), dtype=bool)
        keys: list[int] = []
        C = (len(table.values) + 1) if table is not None else 1
        memo: dict[Any, list[int]] = {}
        for g, pr in enumerate(principals):
            if pr and f in pr:
                restricted[g] = True
                if table is not None:
                    want = pr[f] if isinstance(pr[f], list) else [pr[f]]
                    mk = tuple(value_key(v) for v in want)
                    codes_ = memo.get(mk)
                    if codes_ is None:
                        codes_ = memo[mk] = sorted({table.code(v) for v in want} - {-1})
                    keys.extend(g * C + c for c in codes_)
        sel = restricted[pair_group]
        if table is None:
            ok &= ~sel
            continue
        idx = np.flatnonzero(sel)
        docs = pair_doc[idx]
        lens = table.ptr[docs + 1] - table.ptr[docs]
        rep = np.repeat(np.arange(len(idx)), lens)
        offs = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        codes = table.codes[np.repeat(table.ptr[docs], lens) + offs]
        allowed = np.unique(np.asarray(keys, dtype=np.int64))
        want_keys = pair_group[idx][rep] * C + codes
        pos = np.minimum(np.searchsorted(allowed, want_keys), max(len(allowed) - 1, 0))
        hit = (allowed[pos] == want_keys) if len(allowed) else np.zeros(len(want_keys), dtype=bool)
        any_hit = np.bincount(rep[hit], minlength=len(idx)) > 0
        ok[idx] &= any_hit
    return ok


def _finite(rec: Record, field: str, value: float | int, what: str) -> float:
    """``float(value)``; an integer too large for a float or a non-finite number is an input
    error naming the record and field (NaN/inf are not measurements)."""
    try:
        x = float(value)
    except OverflowError:
        raise InputError(
            f"{where(rec, field)}: {what} {str(value)[:20]}... is too large for a number"
        ) from None
    if not math.isfinite(x):
        raise InputError(f"{where(rec, field)}: {what} must be a finite number, found {x!r}")
    return x


def _parse_gold(rec: Record, raw: Any) -> dict[str, float]:
    if isinstance(raw, Mapping):
        out = {}
        for d, g in raw.items():
            if isinstance(g, bool) or not isinstance(g, (int, float)):
                raise InputError(
                    f"{where(rec, f'retrieval.gold[{d!r}]')}: grade must be a number, found {g!r}"
                )
            out[str(d)] = _finite(rec, f"retrieval.gold[{d!r}]", g, "grade")
        return out
    if isinstance(raw, list):
        for i, d in enumerate(raw):
            if not isinstance(d, str):
                raise InputError(f"{where(rec, f'retrieval.gold[{i}]')}: expected a document id, found {d!r}")
        return {d: 1.0 for d in raw}
    raise InputError(
        f"{where(rec, 'retrieval.gold')}: expected an object {{doc: grade}} or a list of ids, found {raw!r}"
    )


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
    golds: list[dict[str, float]] = []
    runs: list[list[str] | None] = []
    dups: list[int] = []
    filt: list[list[Filter] | None] = []
    gold_filt: list[list[Filter] | None] = []
    principals: list[Mapping[str, Any] | None] = []
    cat_field = corpus.category_field if corpus is not None else "categories"
    from kg_rageval.families.retrieval.corpus import DEFAULT_ENTITLEMENT_FIELDS

    ent_fields = tuple(corpus.entitlement_fields) if corpus is not None else DEFAULT_ENTITLEMENT_FIELDS
    for rec in records:
        sec = rec.get("retrieval")
        if sec is None:
            unscored.append(
                {"record_id": str(rec.get("id")), "reason": "no retrieval section", "code": "no_section"}
            )
            continue
        if not isinstance(sec, Mapping):
            raise InputError(f"{where(rec, 'retrieval')}: expected an object, found {type(sec).__name__}")
        if "gold" not in sec:
            unscored.append(
                {"record_id": str(rec.get("id")), "reason": "no retrieval.gold", "code": "no_gold"}
            )
            continue
        rows.append(rec)
        golds.append(_parse_gold(rec, sec["gold"]))
        if sec.get("run") is None:
            runs.append(None)
            dups.append(0)
        else:
            r, nd = _parse_run(rec, sec["run"], dedupe)
            runs.append(r)
            dups.append(nd)
        filt.append(
            parse_filters(
                sec["filters"],
                where(rec, "retrieval.filters"),
                category_field=cat_field,
                entitlement_fields=ent_fields,
            )
            if sec.get("filters") is not None
            else None
        )
        gold_filt.append(
            parse_filters(
                sec["gold_filters"],
                where(rec, "retrieval.gold_filters"),
                category_field=cat_field,
                entitlement_fields=ent_fields,
            )
            if sec.get("gold_filters") is not None
            else None
        )
        pr = sec.get("principal")
        if pr is not None and not isinstance(pr, Mapping):
            raise InputError(f"{where(rec, 'retrieval.principal')}: expected an object, found {pr!r}")
        if entitlement_defaults:
            pr = {**entitlement_defaults, **(pr or {})}
        if pr and corpus is not None:
            corpus.check_principal(pr, where(rec, "retrieval.principal"))
        principals.append(pr)

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
    elig_gold: list[dict[str, float]] = []
    gold_docs_idx: list[np.ndarray] = []  # corpus indices of eligible relevant gold (known docs)
    unknown_gold = np.zeros(n)
    if corpus is None:
        elig_gold = list(golds)
        gold_docs_idx = [np.zeros(0, dtype=np.int64) for _ in range(n)]
    else:
        # all (record, gold doc) and (record, retrieved doc) pairs in one vectorised pass
        gids = [list(g) for g in golds]
        glen = np.asarray([len(x) for x in gids], dtype=np.int64)
        gflat = corpus.lookup([d for x in gids for d in x])
        grec = np.repeat(np.arange(n, dtype=np.int64), glen)
        grel = np.fromiter(
            (golds[i][d] >= 1 for i, x in enumerate(gids) for d in x), dtype=bool, count=len(gflat)
        )
        gknown = gflat >= 0
        gok = np.ones(len(gflat), dtype=bool)
        gok[gknown] = eligible_pairs(corpus, grec[gknown], gflat[gknown], principals)
        st["n_gold_ineligible"] = np.bincount(grec, weights=~gok, minlength=n)
        any_rel = np.bincount(grec, weights=grel, minlength=n) > 0
        any_rel_ok = np.bincount(grec, weights=grel & gok, minlength=n) > 0
        st["n_q_gold_all_ineligible"] = (any_rel & ~any_rel_ok).astype(float)
        unknown_gold = np.bincount(grec, weights=~gknown & gok & grel, minlength=n)
        gptr = np.concatenate(([0], np.cumsum(glen)))
        keep_mask = gknown & gok & grel
        for i in range(n):
            a_, b_ = gptr[i], gptr[i + 1]
            okr = gok[a_:b_].tolist()
            elig_gold.append({d: golds[i][d] for d, kk in zip(gids[i], okr) if kk})
            gold_docs_idx.append(gflat[a_:b_][keep_mask[a_:b_]])
        rlen = np.asarray(
            [len(r) if (r and principals[i]) else 0 for i, r in enumerate(runs)], dtype=np.int64
        )
        rflat = corpus.lookup([d for i, r in enumerate(runs) if r and principals[i] for d in r])
        rrec = np.repeat(np.arange(n, dtype=np.int64), rlen)
        rk = rflat >= 0
        bad = ~eligible_pairs(corpus, rrec[rk], rflat[rk], principals)
        st["n_ineligible_retrieved"] = np.bincount(rrec[rk], weights=bad, minlength=n).astype(float)

    # ---- standard metrics, all queries at once
    qids = [f"{i}" for i in range(n)]
    vocab = Vocab()
    qrels = Qrels.from_dict(dict(zip(qids, elig_gold)), vocab=vocab)
    present = [i for i in range(n) if runs[i] is not None]
    run = Run.from_lists({qids[i]: runs[i] for i in present}, vocab=vocab)
    pq = evaluate_run(qrels, run, ks, gain=gain, engine=engine)
    scored = pq.n_rel > 0
    for m in family.metric_list:
        st[f"{m}.sum"] = np.where(scored, pq.values[m], 0.0)
    st["n_scored"] = scored.astype(float)
    st["n_missing_run"] = (scored & pq.missing).astype(float)
    no_gold = (~scored) & (st["n_q_gold_all_ineligible"] == 0)
    st["n_no_gold"] = no_gold.astype(float)
    st["n_no_gold_nonempty_run"] = (no_gold & (pq.n_retrieved > 0)).astype(float)
    st["n_duplicates_removed"] = np.asarray(dups, dtype=float)
    st["n_gold_unknown"] = unknown_gold

    # ---- predicate precision / recall
    for i in range(n):
        if gold_filt[i] is not None:
            tp, npred, ngold = predicate_counts(filt[i] or [], gold_filt[i])
            st["pred_tp"][i], st["pred_n"][i], st["gold_n"][i] = tp, npred, ngold

    # ---- gold nodes
    gold_node: list[str | None] = [None] * n
    for i, rec in enumerate(rows):
        gn = rec["retrieval"].get("gold_node")
        if gn is not None:
            if not isinstance(gn, str):
                raise InputError(
                    f"{where(rec, 'retrieval.gold_node')}: expected an ontology id, found {gn!r}"
                )
            gold_node[i] = ontology.ids[ontology.index(gn)] if gn in ontology else _resolve(ontology, gn, rec)
        elif corpus is not None and len(gold_docs_idx[i]):
            cats = np.unique(np.concatenate([corpus.categories_of(int(d)) for d in gold_docs_idx[i]]))
            if len(cats):
                node = int(cats[0])
                for c in cats[1:].tolist():
                    node = ontology.lca_index(node, int(c))
                # gold under several real roots has no branch: the virtual root is no gold node
                gold_node[i] = None if (ontology.virtual_root and node == 0) else ontology.ids[node]

    # ---- filter replay, false exclusion and attribution
    if corpus is not None:
        logged = [i for i in range(n) if filt[i] is not None]
        st["n_filters_not_logged"] = np.asarray(
            [1.0 if (filt[i] is None and len(gold_docs_idx[i])) else 0.0 for i in range(n)]
        )
        pair_q = (
            np.concatenate([np.full(len(gold_docs_idx[i]), j, dtype=np.int64) for j, i in enumerate(logged)])
            if logged
            else np.zeros(0, np.int64)
        )
        pair_d = np.concatenate([gold_docs_idx[i] for i in logged]) if logged else np.zeros(0, np.int64)
        passes, first_fail = replay(
            corpus,
            ontology,
            pair_q,
            pair_d,
            [filt[i] for i in logged],
            where=[where(rows[i], "retrieval.filters") for i in logged],
            resolver=resolver,
            unknown=filter_unknown,
        )
        off = 0
        diag_pairs: list[tuple[int, int, Filter]] = []
        for j, i in enumerate(logged):
            m = len(gold_docs_idx[i])
            if m == 0:
                continue
            p = passes[off : off + m]
            ff = first_fail[off : off + m]
            docs = gold_docs_idx[i]
            off += m
            rank = {d: r for r, d in enumerate(runs[i] or [], start=1)}
            rk = np.asarray([rank.get(corpus.ids[int(d)], 0) for d in docs], dtype=np.int64)
            found = (rk > 0) & (rk <= katt)
            below = rk > katt
            inconsistent = (rk > 0) & ~p  # retrieved, yet the logged filters exclude it
            p = p | (rk > 0)  # it passed whatever filter the system really applied
            lost_filter = (rk == 0) & ~p
            lost_retr = (rk == 0) & p
            st["fe_q_eligible"][i] = 1.0
            st["fe_docs_eligible"][i] = m
            st["fe_docs_excluded"][i] = float((~p).sum())
            if inconsistent.any():
                st["fe_q_inconsistent"][i] = 1.0
                st["fe_docs_inconsistent"][i] = float(inconsistent.sum())
                details["filter_inconsistent"][i] = " ".join(corpus.ids[int(d)] for d in docs[inconsistent])
            st["att_q"][i] = 1.0
            st["att_docs"][i] = m
            st["att_docs_found"][i] = float(found.sum())
            st["att_docs_ranker"][i] = float(below.sum())
            st["att_docs_filter"][i] = float(lost_filter.sum())
            st["att_docs_retriever"][i] = float(lost_retr.sum())
            if found.any():
                details["attribution"][i] = "hit"
            elif not p.any():
                details["attribution"][i] = "filter"
            elif below.any():
                details["attribution"][i] = "ranker"
            else:
                details["attribution"][i] = "retriever"
            st[f"att_q_{details['attribution'][i]}"][i] = 1.0
            if not p.any():
                st["fe_q_excluded"][i] = 1.0
                f = filt[i][int(ff[0])]
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

    keys: dict[str, list[Any]] = {"gold_node": gold_node}
    slice_names = sorted({s for r in rows if isinstance(r.get("slices"), Mapping) for s in r["slices"]})
    for s in slice_names:
        keys[f"slice:{s}"] = slice_texts([(r.get("slices") or {}).get(s) for r in rows])
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
    for j, (i, g, f) in enumerate(pairs):
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
        relation_codes, _CACHE = None, {}
    if relation_codes is not None and (len(gold) >= VECTOR_RELATIONS_MIN or ontology in _CACHE):
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
    if cause is None or total == 0:
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
