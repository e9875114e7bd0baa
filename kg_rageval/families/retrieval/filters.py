"""Metadata filters: parsing, canonical form and vectorised replay against a :class:`Corpus`.

A record logs the filters its system applied (``retrieval.filters``), each
``{"field": F, "op": OP, "value": V}`` (optionally ``"source": "predicted"`` when a model
produced it). Operators:

* ``eq``     — the document's ``F`` has the value V (a list-valued field: any of its values);
* ``in``     — the document's ``F`` has one of the values in the list V;
* ``ne``, ``not_in`` — the negations of ``eq`` and ``in`` (a document without ``F`` passes);
* ``within`` — ontology-aware: the document has a category that is V or a descendant of V
  (V may be a list: any of them). The ontology decides subsumption: a document passes when one
  of its categories has V in its ancestor-or-self row. ``within`` is only allowed on the
  category field (``"category"`` or the corpus's ``category_field``).

``eq``/``in`` on the category field compare category ids exactly (no descendants). A filter on
an **entitlement field** (``tenant``, ``jurisdiction``, ``status`` by default: the corpus's
``entitlement_fields``) is refused as a relevance filter: who may see a document is the
principal's business (``retrieval.principal``, judged apart), not a search predicate, and
replaying it would count correct access control as false exclusion. A document
passes a query's filters when it passes every one of them (conjunction). A field no document
has makes ``eq``/``in``/``within`` exclude everything (that is what the system would do).

Replay is vectorised over (query, document) pairs: pairs are expanded per filter, membership
is a bisection in sorted CSR rows (:func:`~.corpus.rows_contain`), and for ``within`` in the
ontology's ancestor closure (``anc_ptr``/``anc_idx``); no per-document Python loop runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError, UnknownIdError
from kg_rageval.families.retrieval.corpus import Corpus, rows_contain, value_key

OPS = ("eq", "in", "ne", "not_in", "within")
CATEGORY_ALIASES = ("category",)


@dataclass(frozen=True)
class Filter:
    """One parsed filter predicate; ``values`` is a tuple of value keys (strings)."""

    field: str
    op: str
    values: tuple[str, ...]
    source: str | None = None

    @property
    def canonical(self) -> tuple[str, str, tuple[str, ...]]:
        """``(field, op, sorted values)`` with ``eq``≡``in`` and ``ne``≡``not_in`` on one value."""
        op = {"eq": "in", "ne": "not_in"}.get(self.op, self.op)
        return (self.field, op, tuple(sorted(set(self.values))))


def parse_filter(
    raw: Any, where: str, *, category_field: str = "categories", entitlement_fields: Sequence[str] = ()
) -> Filter:
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: a filter must be an object with field, op, value; found {raw!r}")
    f, op, v = raw.get("field"), raw.get("op"), raw.get("value", raw.get("values"))
    if not isinstance(f, str) or not f:
        raise InputError(f"{where}.field: expected a field name, found {f!r}")
    if f in entitlement_fields:
        raise InputError(
            f"{where}.field: {f!r} is an entitlement field; entitlement is not a relevance filter "
            "(put the principal's access in retrieval.principal, which is judged apart)"
        )
    if op not in OPS:
        raise InputError(f"{where}.op: {op!r} is not an operator; allowed: {list(OPS)}")
    if v is None:
        raise InputError(f"{where}.value: missing")
    if op in ("in", "not_in", "within"):
        vals = v if isinstance(v, list) else [v]
    else:
        if isinstance(v, list):
            raise InputError(f"{where}.value: op {op!r} takes one value, found a list (use 'in')")
        vals = [v]
    if not vals:
        raise InputError(f"{where}.value: empty value list")
    if f in CATEGORY_ALIASES:
        f = category_field
    if op == "within" and f != category_field:
        raise InputError(
            f"{where}: 'within' applies to the category field ({category_field!r} or 'category'), not {f!r}"
        )
    src = raw.get("source")
    return Filter(f, op, tuple(value_key(x) for x in vals), src if isinstance(src, str) else None)


def parse_filters(
    raw: Any, where: str, *, category_field: str = "categories", entitlement_fields: Sequence[str] = ()
) -> list[Filter]:
    if not isinstance(raw, list):
        raise InputError(f"{where}: expected a list of filters, found {type(raw).__name__}")
    return [
        parse_filter(x, f"{where}[{i}]", category_field=category_field, entitlement_fields=entitlement_fields)
        for i, x in enumerate(raw)
    ]


def replay(
    corpus: Corpus,
    ontology,
    pair_query: np.ndarray,
    pair_doc: np.ndarray,
    filters: Sequence[Sequence[Filter]],
    *,
    where: Sequence[str] | None = None,
    resolver: Any = None,
    unknown: list[str] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Replay each query's filters on its (query, document) pairs.

    Ontology ids in category and ``within`` filters are the system's (predicted) values,
    resolved by ``resolver`` (a :class:`~kg_rageval.ontology.IdResolver`: CURIE/IRI, aliases);
    one the ontology lacks raises :class:`UnknownIdError` unless the resolver's ``on_unknown``
    is ``"count"``: then it matches no document and is appended to ``unknown``.

    Parameters
    ----------
    pair_query : query position (into ``filters``) of each pair.
    pair_doc : corpus index of each pair's document (>= 0).
    filters : the parsed filters of each query.
    where : per-query record locations for error messages (unknown ontology ids).

    Returns
    -------
    passes : bool per pair (passes every filter of its query).
    first_fail : per pair, the position in its query's filter list of the first filter it
        fails (-1 when it passes).
    """
    pair_query = np.asarray(pair_query, dtype=np.int64)
    pair_doc = np.asarray(pair_doc, dtype=np.int64)
    npairs = len(pair_query)
    first_fail = np.full(npairs, np.iinfo(np.int64).max, dtype=np.int64)
    if npairs == 0:
        return np.ones(0, dtype=bool), np.full(0, -1, dtype=np.int64)
    # pairs grouped by query
    order = np.argsort(pair_query, kind="stable")
    nq = len(filters)
    pptr = np.zeros(nq + 1, dtype=np.int64)
    np.cumsum(np.bincount(pair_query, minlength=nq), out=pptr[1:])
    # flatten filters into (query, position, group) and value alternatives
    groups: dict[tuple[str, str], tuple[list[int], list[int], list[int], list[bool]]] = {}
    oindex = ontology.id_index
    cat = corpus.category_field
    for q, fl in enumerate(filters):
        if pptr[q + 1] == pptr[q]:
            continue
        if len(fl) >= 4096:
            raise InputError(f"{where[q] if where is not None else q}: more than 4095 filters")
        for j, f in enumerate(fl):
            kind = "within" if f.op == "within" else ("cat" if f.field == cat else "field")
            key = (kind, f.field)
            fq, fj, fv, fn = groups.setdefault(key, ([], [], [], []))
            for v in f.values:
                if kind == "field":
                    t = corpus.fields.get(f.field)
                    code = t.values.get(v, -1) if t is not None else -1
                else:
                    code = oindex.get(v, -1)
                    if code < 0 and resolver is not None:
                        code = int(resolver.lookup([v])[0][0])
                    if code < 0:
                        if resolver is None or resolver.options.on_unknown == "error":
                            loc = where[q] if where is not None else f"query {q}"
                            raise UnknownIdError(
                                v,
                                where=f"{loc}, filter on {f.field!r}",
                                hint="on_unknown='count' counts a filter value the ontology "
                                "lacks (it matches no document)",
                            )
                        if unknown is not None:
                            unknown.append(v)
                fq.append(q)
                fj.append(j)
                fv.append(code)
                fn.append(f.op in ("ne", "not_in"))
    for (kind, fname), (fq, fj, fv, fn) in groups.items():
        fq_a = np.asarray(fq, dtype=np.int64)
        fj_a = np.asarray(fj, dtype=np.int64)
        fv_a = np.asarray(fv, dtype=np.int64)
        cnt = pptr[fq_a + 1] - pptr[fq_a]
        alt = np.repeat(np.arange(len(fq_a)), cnt)
        offs = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        pair = order[np.repeat(pptr[fq_a], cnt) + offs]
        doc = pair_doc[pair]
        val = fv_a[alt]
        if kind == "field":
            t = corpus.fields.get(fname)
            if t is None:
                hit = np.zeros(len(pair), dtype=bool)
            else:
                hit = np.zeros(len(pair), dtype=bool)
                ok = val >= 0
                hit[ok] = rows_contain(t.ptr, t.codes, doc[ok], val[ok])
        elif kind == "cat":
            hit = rows_contain(corpus.cat_ptr, corpus.cat_idx, doc, val)
        else:  # within: any category of the doc has val in its ancestor-or-self row
            clen = corpus.cat_ptr[doc + 1] - corpus.cat_ptr[doc]
            sub = np.repeat(np.arange(len(pair)), clen)
            coffs = np.arange(int(clen.sum())) - np.repeat(np.cumsum(clen) - clen, clen)
            cats = corpus.cat_idx[np.repeat(corpus.cat_ptr[doc], clen) + coffs]
            inside = rows_contain(ontology.anc_ptr, ontology.anc_idx, cats, val[sub])
            hit = np.bincount(sub[inside], minlength=len(pair)) > 0
        # a filter with several values passes when any value hits: reduce per (pair, filter)
        fkey = pair * 4096 + fj_a[alt]
        uk, inv = np.unique(fkey, return_inverse=True)
        any_hit = np.bincount(inv, weights=hit, minlength=len(uk)) > 0
        upair, uj = uk // 4096, uk % 4096
        neg = np.zeros(len(uk), dtype=bool)
        neg[inv] = np.asarray(fn, dtype=bool)[alt]
        passes = np.where(neg, ~any_hit, any_hit)
        failed = ~passes
        np.minimum.at(first_fail, upair[failed], uj[failed])
    big = np.iinfo(np.int64).max
    passes = first_fail == big
    first_fail[passes] = -1
    return passes, first_fail


def predicate_counts(pred: Sequence[Filter], gold: Sequence[Filter]) -> tuple[int, int, int]:
    """``(tp, n_pred, n_gold)`` over canonical predicates (field, op, value set): an extracted
    predicate is correct when a gold predicate has the same field, operator and values."""
    p = {f.canonical for f in pred}
    g = {f.canonical for f in gold}
    return len(p & g), len(p), len(g)
