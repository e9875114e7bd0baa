"""The extraction family (issue #30, "Metadata and KG construction"): NER and relation
extraction scored against gold, per entity / relation type and per ontology node.

Record section: :mod:`kg_rageval.records.extraction` (``docs/extraction.md``). Each record
gives one row per entity type and per relation type it names (gold or predicted), so every
figure is a sum and the per-type, per-slice and per-branch roll-ups are exact.

**NER** (``gold_tags`` / ``pred_tags``). Entities are found by
:func:`~kg_rageval.families.extraction.tags.entities` (``mode="default"``: seqeval's default,
conlleval-compatible; ``mode="strict"`` with ``scheme``: seqeval's strict mode). An entity is
correct when type, start and end all equal a gold entity's. Per type ``t`` (slice
``entity_type``): ``P = TP_t / pred_t``, ``R = TP_t / gold_t``, ``F1 = 2PR / (P + R)``, equal
to seqeval's ``classification_report``; ``ner_*`` over all rows is its *micro avg*. The *macro
avg* (mean over the types of the gold ∪ predicted entities of each type's P, R and F1, a type's
undefined P or R counted 0, as seqeval and scikit-learn with ``zero_division=0``) is not a sum:
it is in ``meta["macro"]``, recomputed from the rows (:meth:`ExtractionFamily.complete`).

**Hierarchy-aware credit** (with an ontology): entity types are ontology classes
(``type_prefix`` + the tag's type, e.g. ``ex:`` + ``PER``). Each gold entity is an item with
the predicted entity of the same span (if any); each predicted entity with no gold one of its
span is an item with an empty gold side. Each side is augmented with its ancestors (the root
excluded) and counted by :func:`~kg_rageval.families.hierarchy.kernels.hierarchical_counts`:
``ner_hier_precision = Σ |P̂ ∩ T̂| / Σ |P̂|``, ``ner_hier_recall = Σ |P̂ ∩ T̂| / Σ |T̂|``. A
predicted type that is an ancestor of the gold type keeps full hierarchical precision and part
of the recall; a descendant keeps full recall and part of the precision; a wrong span gets no
credit. An item's hierarchical counts go to the row of its gold type (of its predicted type when
it has no gold), and that row's ``gold_node`` is the type, so the per-node roll-up is per
ontology class. Without an ontology the types are a flat set: ``ner_hier_*`` equal ``ner_*``.

**Relations** (``relations.gold`` / ``relations.pred``): a triple is correct when subject,
relation and object equal a gold triple's (DocRED: a document's set of (head, relation, tail)
triples). TACRED convention: relations named in ``negative_labels`` (``no_relation``, ``NA``,
``Na``) are no relation — they count in no TP, no prediction and no gold, so ``re_precision =
Σ TP / Σ predicted positive`` and ``re_recall = Σ TP / Σ gold positive``, the official TACRED
scorer's micro figures (which reports precision 1.0 when nothing is predicted: here that is
missing evidence). Per relation type: slice ``relation_type``. With an ontology that declares
properties (or has relation triples), a gold relation or gold entity type unknown to it is an
:class:`~kg_rageval.base.errors.InputError`; a predicted one is a counted fault
(``ner_unknown_type_rate``, ``re_unknown_predicate_rate``). A predicted triple whose predicate
is a declared property and whose ``subject_type`` / ``object_type`` are given is checked with
:func:`~kg_rageval.ontology.graph.satisfies` (subsumption): ``re_domain_violation_rate`` /
``re_range_violation_rate`` over those checked.

Unscored records (counted): no section — ``no_section``; NER tags with no ``pred_tags`` and no
predicted relations — ``missing_prediction``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.families.extraction.tags import MODES, SCHEMES, entities
from kg_rageval.records import Record, record_error
from kg_rageval.records.extraction import Triple, extraction_section
from kg_rageval.records.fields import all_slice_keys
from kg_rageval.records.fields import stated_row_keys as row_keys
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, harmonic, ratio

NEGATIVE_LABELS = ("no_relation", "NA", "Na")
ENTITY_KEY = "slice:entity_type"
RELATION_KEY = "slice:relation_type"


def _prf(prefix: str, tp: float, pred: float, gold: float, what: str) -> list[Metric]:
    p = ratio(f"{prefix}_precision", tp, pred, missing=f"no predicted {what}")
    r = ratio(f"{prefix}_recall", tp, gold, missing=f"no gold {what}")
    return [p, r, harmonic(f"{prefix}_f1", p, r)]


def _f1_of(tp: float, pred: float, gold: float) -> tuple[float, float, float]:
    p = tp / pred if pred else 0.0
    r = tp / gold if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


class ExtractionFamily(Family):
    name = "extraction"
    version = "1"
    stats = (
        "ner_tp",
        "ner_pred",
        "ner_gold",
        "ner_h_inter",
        "ner_h_pred",
        "ner_h_gold",
        "ner_unknown",
        "re_tp",
        "re_pred",
        "re_gold",
        "re_unknown",
        "re_checked",
        "re_domain_bad",
        "re_range_bad",
    )

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        out = [
            *_prf("ner", s["ner_tp"], s["ner_pred"], s["ner_gold"], "entity"),
            *_prf(
                "ner_hier", s["ner_h_inter"], s["ner_h_pred"], s["ner_h_gold"], "entity with an ontology type"
            ),
            ratio("ner_unknown_type_rate", s["ner_unknown"], s["ner_pred"], missing="no predicted entity"),
            *_prf("re", s["re_tp"], s["re_pred"], s["re_gold"], "relation (negative labels excluded)"),
            ratio(
                "re_unknown_predicate_rate", s["re_unknown"], s["re_pred"], missing="no predicted relation"
            ),
            ratio(
                "re_domain_violation_rate",
                s["re_domain_bad"],
                s["re_checked"],
                missing="no predicted relation with a declared property and entity types",
            ),
            ratio(
                "re_range_violation_rate",
                s["re_range_bad"],
                s["re_checked"],
                missing="no predicted relation with a declared property and entity types",
            ),
        ]
        return {m.name: m for m in out}

    def complete(self, evaluation: Any) -> None:
        """``meta["macro"]``: seqeval's macro and weighted averages over the entity types and
        the TACRED-style ones over the relation types, from the per-type rows (module
        docstring)."""
        macro: dict[str, Any] = {}
        for kind, key, pre in (("ner", ENTITY_KEY, "ner"), ("re", RELATION_KEY, "re")):
            if not len(evaluation) or key not in evaluation.keys:
                continue
            col = evaluation.keys[key]
            types = sorted({v for v in col.tolist() if isinstance(v, str)})
            per = []
            for t in types:
                tot = evaluation.totals(np.asarray([v == t for v in col.tolist()], dtype=bool))
                if tot[f"{pre}_pred"] == 0 and tot[f"{pre}_gold"] == 0:
                    continue
                per.append(
                    (t, tot[f"{pre}_gold"], _f1_of(tot[f"{pre}_tp"], tot[f"{pre}_pred"], tot[f"{pre}_gold"]))
                )
            if not per:
                continue
            support = sum(g for _, g, _ in per)
            macro[kind] = {
                "types": [t for t, _, _ in per],
                "precision": sum(v[0] for _, _, v in per) / len(per),
                "recall": sum(v[1] for _, _, v in per) / len(per),
                "f1": sum(v[2] for _, _, v in per) / len(per),
                "weighted_f1": (sum(g * v[2] for _, g, v in per) / support) if support else None,
            }
        evaluation.meta = {**evaluation.meta, "macro": macro}


class _Types:
    """Entity types and predicates checked against the ontology (module docstring)."""

    def __init__(self, onto: Any, prefix: str):
        self.o = onto
        self.prefix = prefix
        self.preds: frozenset[str] = frozenset()
        if onto is not None:
            self.preds = frozenset(q.id for q in onto.properties) | frozenset(onto.graph.predicates)

    def node(self, rec: Record, field: str, t: str, *, gold: bool) -> int:
        """The type's node index; -1 when unknown (a gold one raises); -2 without ontology."""
        if self.o is None:
            return -2
        tid = self.prefix + t
        if tid in self.o:
            return int(self.o.index(tid))
        if gold:
            raise record_error(rec, field, f"entity type {tid!r} is not a class of the ontology")
        return -1

    def entity(self, t: str | None) -> int:
        if self.o is None or t is None:
            return -1
        tid = self.prefix + t
        try:
            return int(self.o.entity_index(tid))
        except Exception:  # an unknown id: the type check counts it as not satisfied
            return -1


def _ner_rows(rec, sec, types: _Types, mode: str, scheme: str, base: dict) -> dict[str, dict[str, float]]:
    found = []
    for field, tags in (("extraction.gold_tags", sec.gold_tags), ("extraction.pred_tags", sec.pred_tags)):
        try:
            found.append(entities(tags, mode, scheme))
        except ValueError as err:  # a prefix the strict scheme does not allow
            raise record_error(rec, field, str(err)) from None
    gold, pred = found
    rows: dict[str, dict[str, float]] = {}

    def row(t: str) -> dict[str, float]:
        return rows.setdefault(t, {})

    def add(t: str, k: str, v: float = 1.0) -> None:
        r = row(t)
        r[k] = r.get(k, 0.0) + v

    gset = set(gold)
    for t, _, _ in gold:
        add(t, "ner_gold")
    for ent in pred:
        add(ent[0], "ner_pred")
        if ent in gset:
            add(ent[0], "ner_tp")
    if types.o is None:  # a flat set of types: hierarchical credit is exact type credit
        for st in rows.values():
            st["ner_h_inter"] = st.get("ner_tp", 0.0)
            st["ner_h_pred"] = st.get("ner_pred", 0.0)
            st["ner_h_gold"] = st.get("ner_gold", 0.0)
    else:
        from kg_rageval.families.hierarchy.kernels import hierarchical_counts

        gnode = {(s, e): types.node(rec, "extraction.gold_tags", t, gold=True) for t, s, e in gold}
        gtype = {(s, e): t for t, s, e in gold}
        items_g, items_p, owner = [], [], []
        spans_pred = set()
        for t, s, e in pred:
            spans_pred.add((s, e))
            p = types.node(rec, "extraction.pred_tags", t, gold=False)
            if p < 0:
                add(t, "ner_unknown")
            if (s, e) in gnode:
                items_g.append(gnode[(s, e)])
                items_p.append(p)
                owner.append((gtype[(s, e)], p < 0))
            else:
                items_g.append(-1)
                items_p.append(p)
                owner.append((t, p < 0))
        for (s, e), g in gnode.items():
            if (s, e) not in spans_pred:
                items_g.append(g)
                items_p.append(-1)
                owner.append((gtype[(s, e)], False))
        if items_g:
            inter, npred, ngold = hierarchical_counts(
                types.o, np.asarray(items_g, dtype=np.int64), np.asarray(items_p, dtype=np.int64)
            )
            for (t, unknown), a, b, c in zip(owner, inter.tolist(), npred.tolist(), ngold.tolist()):
                add(t, "ner_h_inter", a)
                add(t, "ner_h_pred", b + (1.0 if unknown else 0.0))  # an unknown type: one opaque node
                add(t, "ner_h_gold", c)
    return rows


def _re_rows(rec, sec, types: _Types, negative: frozenset[str]) -> dict[str, dict[str, float]]:
    rows: dict[str, dict[str, float]] = {}

    def add(t: str, k: str, v: float = 1.0) -> None:
        r = rows.setdefault(t, {})
        r[k] = r.get(k, 0.0) + v

    check = bool(types.preds)
    gold = {(t.subject, t.relation, t.object) for t in sec.gold_relations if t.relation not in negative}
    for i, t in enumerate(sec.gold_relations):
        if check and t.relation not in negative and t.relation not in types.preds:
            raise record_error(
                rec,
                f"extraction.relations.gold[{i}].relation",
                f"{t.relation!r} is not a predicate of the ontology",
            )
        for k in ("subject_type", "object_type"):
            v = getattr(t, k)
            if types.o is not None and v is not None and types.entity(v) < 0:
                raise record_error(
                    rec,
                    f"extraction.relations.gold[{i}].{k}",
                    f"{types.prefix + v!r} is not an id of the ontology",
                )
    for g in gold:
        add(g[1], "re_gold")
    seen: set[tuple[str, str, str]] = set()
    pred: list[Triple] = []
    for t in sec.pred_relations or ():
        key = (t.subject, t.relation, t.object)
        if t.relation in negative or key in seen:  # a set of triples: a repeat counts once
            continue
        seen.add(key)
        pred.append(t)
    for t in pred:
        add(t.relation, "re_pred")
        if (t.subject, t.relation, t.object) in gold:
            add(t.relation, "re_tp")
        if check and t.relation not in types.preds:
            add(t.relation, "re_unknown")
            continue
        prop = types.o.property(t.relation) if types.o is not None else None
        if prop is None or t.subject_type is None or t.object_type is None:
            continue
        from kg_rageval.ontology.graph import satisfies

        add(t.relation, "re_checked")
        if prop.domain and not satisfies(types.o, np.asarray([types.entity(t.subject_type)]), prop.domain)[0]:
            add(t.relation, "re_domain_bad")
        if prop.range and not satisfies(types.o, np.asarray([types.entity(t.object_type)]), prop.range)[0]:
            add(t.relation, "re_range_bad")
    return rows


def score_extraction(
    ontology: Any,
    records: Iterable[Record],
    *,
    mode: str = "default",
    scheme: str = "IOB2",
    type_prefix: str = "",
    negative_labels: Iterable[str] = NEGATIVE_LABELS,
) -> Evaluation:
    """Rows per record and entity / relation type (module docstring for every convention)."""
    if mode not in MODES:
        raise InputError(f"extraction: mode must be one of {', '.join(MODES)}, not {mode!r}")
    if scheme not in SCHEMES:
        raise InputError(f"extraction: scheme must be one of {', '.join(SCHEMES)}, not {scheme!r}")
    negative = frozenset(negative_labels)
    types = _Types(ontology, type_prefix)
    records = list(records)
    rows: list[dict[str, Any]] = []
    unscored = []
    for rec in records:
        sec = extraction_section(rec)
        if sec is None:
            unscored.append(unscored_entry(rec["id"], "no extraction section", Reason.NO_SECTION))
            continue
        ner = sec.gold_tags is not None and sec.pred_tags is not None
        rel = sec.has_relations and sec.pred_relations is not None
        if not ner and not rel:
            unscored.append(
                unscored_entry(rec["id"], "no predicted tags or relations", Reason.MISSING_PREDICTION)
            )
            continue
        base = {"record_id": rec["id"], **row_keys(rec)}
        n0 = len(rows)
        if ner:
            for t, st in sorted(_ner_rows(rec, sec, types, mode, scheme, base).items()):
                r = {**base, ENTITY_KEY: t, **st}
                if types.o is not None:
                    tid = type_prefix + t
                    r["gold_node"] = tid if tid in types.o else None
                rows.append(r)
        if rel:
            for t, st in sorted(_re_rows(rec, sec, types, negative).items()):
                rows.append({**base, RELATION_KEY: t, **st})
        if len(rows) == n0:  # nothing named on either side: the record is scored, with zeros
            rows.append(dict(base))
    keys = sorted(
        set(all_slice_keys(records))
        | {ENTITY_KEY, RELATION_KEY}
        | {k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")}
    )
    fam = ExtractionFamily()
    ev = build_evaluation(
        fam,
        rows,
        keys=keys,
        unscored=unscored,
        meta={"mode": mode, "scheme": scheme, "negative_labels": sorted(negative)},
    )
    fam.complete(ev)
    return ev


__all__ = ["NEGATIVE_LABELS", "ExtractionFamily", "score_extraction"]
