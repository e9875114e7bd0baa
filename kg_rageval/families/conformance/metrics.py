"""Conformance of structured outputs (``answer.output``) to an ontology-derived schema.

One row per record with an ``answer.output``. Only records that were expected to produce an
output are held against the system (:func:`output_expectation`): a record without
``answer.output`` goes to ``unscored`` with the exact reason

* ``"missing output"`` — an output was expected (the answer did not refuse, or refused a record
  labelled ``reference.answerable: true``): a missing run of the family, counted against the
  audit's missing-run budget;
* ``"correct refusal"`` — the answer refused and the record is labelled unanswerable;
* ``"refused"`` — the answer refused and the record carries no answerability label (refusal
  behaviour is judged by the generation family, not here);
* ``"no output expected"`` — the record is labelled unanswerable and has no ``reference.output``;
* ``"no answer section"`` — the record has no ``answer`` at all and no ``reference.output``
  (not this family's evidence; with a ``reference.output`` it is a ``missing output``).

``answer.output`` is a JSON object or a string that should parse as one. Every metric is a ratio of summed row statistics; an empty denominator is
missing evidence (``value=None``), never 0 or 1.

* **Schema validity** = valid outputs / outputs. A string that does not parse is ``not_json``;
  the other failure kinds map jsonschema's failing keyword (``required`` → ``missing_field``,
  ``type`` → ``wrong_type``, ``additionalProperties`` → ``extra_field``, ``enum``/``const``/
  the vocabulary keyword/the id ``pattern`` of a lookup field → ``enum_violation``, anything
  else → ``other``). A kind counts once per output (``failure_rate_<kind>`` = outputs with
  that kind / outputs); an output may have several kinds. A non-object output (``null``, a
  list, a number) is ``wrong_type``.
* **Vocabulary conformance** = (known entity ids + known predicates) / (entity ids +
  predicates). Entity ids are the strings in the node, list and triple subject/object slots
  (read leniently, also from outputs that fail the schema); an id is *known* when it is an
  ontology id exactly as written. A predicate is known when it belongs to the field's closed
  vocabulary. ``field_conformance`` = ids *admitted* by their slot (right kind of node,
  status rule applied) / entity ids. Unknown ids are listed with their nearest match (exact
  label or synonym, case-insensitive id, then ``difflib`` over the slot's ids and labels;
  see :class:`_Suggester`).
* **Status conformance** = active known ids / known ids; deprecated and revoked ids are listed
  with their replacement (``deprecated_rate``, ``revoked_rate`` share the denominator).
* **Domain/range conformance** for triples whose predicate is an ontology property: the
  subject satisfies the declared domain when one of the domain classes is the subject itself
  or one of its ancestors (subsumption); the same for the object and the range. Several
  declared classes are a union by default (``domain_semantics="any"``: OWL ``unionOf``,
  schema.org ``domainIncludes``); ``"all"`` asks for each (RDFS's reading of several
  ``rdfs:domain`` statements). ``domain_range_conformance`` = triples passing every checked
  side / triples with at least one checkable side; triples with an unknown id or predicate, or
  a predicate without declared domain and range, are counted as ``dr_unchecked``. Over an
  ontology with a knowledge graph, triple ends may be instances and declared ids may be kinds
  (:func:`kg_rageval.ontology.graph.satisfies`, a union).
* **Relation checks** over a knowledge graph (``docs/relations.md``): ``edge_support`` =
  output triples the graph holds / output triples whose ends are entities and whose predicate
  is known; the others are *hallucinated edges* (``hallucinated_edges``,
  ``hallucinated_edge_rate``, listed in the row details). ``cardinality_conformance`` = (subject,
  predicate) pairs of an output within the predicate's ``max_cardinality`` / pairs of a
  predicate that declares one.
* **Semantic conformance** against ``reference.output`` (node and list fields the reference
  fills; an output that is not a JSON object predicts nothing there, so its reference ids
  count as missed): each admitted predicted id is ``exact`` when the reference holds it, else a
  *valid-but-wrong* id classified by :meth:`Ontology.relation` against the closest reference
  id (the first relation in :data:`~kg_rageval.ontology.RELATIONS` order).
  ``semantic_precision`` = exact / admitted predicted ids; ``semantic_recall`` = reference ids
  found / reference ids; ``confusion_<relation>`` = wrong ids with that relation / wrong ids.
  Triples: ``triple_precision``/``triple_recall`` on exact (subject, predicate, object) sets.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from itertools import chain
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from kg_rageval.base.errors import ConfigError
from kg_rageval.contract.ids import INACTIVE
from kg_rageval.families.conformance.schema import VOCAB_KEYWORD, DerivedSchema, derive_schema
from kg_rageval.families.conformance.spec import is_spec, read_spec, spec_of
from kg_rageval.ontology import IdOptions, IdResolver
from kg_rageval.ontology.model import ACTIVE, DEPRECATED, RELATIONS, STATUS_NAMES, Ontology
from kg_rageval.records import gold_node, located, slice_text
from kg_rageval.results.columns import CodedColumn, _narrow_codes, _object_column
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, named, ratio
from kg_rageval.results.recordstore import PackedValues

FAILURE_KINDS = ("not_json", "missing_field", "wrong_type", "extra_field", "enum_violation", "other")
"""Schema failure kinds, in the order reports list them."""

_KIND_OF_KEYWORD = {
    "required": "missing_field",
    "dependentRequired": "missing_field",
    "type": "wrong_type",
    "additionalProperties": "extra_field",
    "unevaluatedProperties": "extra_field",
    "enum": "enum_violation",
    "const": "enum_violation",
    VOCAB_KEYWORD: "enum_violation",
}
CONFUSIONS = tuple(r for r in RELATIONS if r != "exact") + (INACTIVE,)
"""The confusion categories of a valid-but-wrong id: a hierarchy relation to its closest
reference id, or ``inactive`` for a deprecated/revoked predicted id (``IdResolver.wrong_category``,
the one rule: a flagged id is never filed as a relation of the node it no longer stands for)."""
MAX_DETAILS = 20
FUZZY_POOL = 256


class ConformanceFamily(Family):
    """Sufficient statistics and metrics of output conformance (see the module docstring)."""

    name = "conformance"
    version = "1"
    additive_meta = ("n_aliased", "replaced_ids")  # written before "vocabularies"
    stats = (
        ("outputs", "valid")
        + FAILURE_KINDS
        + ("ent_n", "ent_known", "ent_admitted", "pred_n", "pred_known")
        + ("ent_active", "ent_deprecated", "ent_revoked", "outputs_inactive")
        + ("dr_triples", "dr_checked", "dr_ok", "dr_unchecked")
        + ("domain_checked", "domain_ok", "range_checked", "range_ok")
        + ("sem_pred", "sem_exact", "sem_gold", "sem_gold_hit", "sem_invalid")
        + tuple(f"conf_{r}" for r in CONFUSIONS)
        + ("tr_pred", "tr_gold", "tr_match")
        + ("edge_checked", "edge_in_graph", "card_checked", "card_ok")
    )

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        no_out = "no records with answer.output"
        m = named(ratio("schema_validity", s["valid"], s["outputs"], missing=no_out))
        for k in FAILURE_KINDS:
            m.add(ratio(f"failure_rate_{k}", s[k], s["outputs"], missing=no_out))
        m.add(
            ratio(
                "vocabulary_conformance",
                s["ent_known"] + s["pred_known"],
                s["ent_n"] + s["pred_n"],
                missing="no entity ids or predicates in the outputs",
            )
        )
        m.add(ratio("entity_vocabulary", s["ent_known"], s["ent_n"], missing="no entity ids in the outputs"))
        m.add(
            ratio(
                "predicate_vocabulary", s["pred_known"], s["pred_n"], missing="no predicates in the outputs"
            )
        )
        m.add(
            ratio("field_conformance", s["ent_admitted"], s["ent_n"], missing="no entity ids in the outputs")
        )
        no_known = "no known ontology ids in the outputs"
        m.add(ratio("status_conformance", s["ent_active"], s["ent_known"], missing=no_known))
        m.add(ratio("deprecated_rate", s["ent_deprecated"], s["ent_known"], missing=no_known))
        m.add(ratio("revoked_rate", s["ent_revoked"], s["ent_known"], missing=no_known))
        m.add(ratio("outputs_with_inactive_ids", s["outputs_inactive"], s["outputs"], missing=no_out))
        m.add(
            ratio(
                "domain_range_conformance",
                s["dr_ok"],
                s["dr_checked"],
                missing="no triples with a checkable domain or range",
            )
        )
        m.add(
            ratio(
                "domain_conformance",
                s["domain_ok"],
                s["domain_checked"],
                missing="no triples with a checkable domain",
            )
        )
        m.add(
            ratio(
                "range_conformance",
                s["range_ok"],
                s["range_checked"],
                missing="no triples with a checkable range",
            )
        )
        m.add(
            ratio(
                "semantic_precision",
                s["sem_exact"],
                s["sem_pred"],
                missing="no admitted predicted ids in fields that the reference output fills",
            )
        )
        m.add(ratio("semantic_recall", s["sem_gold_hit"], s["sem_gold"], missing="no reference ids"))
        wrong = s["sem_pred"] - s["sem_exact"]
        m.add(
            ratio(
                "valid_but_wrong_rate",
                wrong,
                s["sem_pred"],
                missing="no admitted predicted ids in fields that the reference output fills",
            )
        )
        for r in CONFUSIONS:
            m.add(ratio(f"confusion_{r}", s[f"conf_{r}"], wrong, missing="no valid-but-wrong ids"))
        m.add(
            ratio(
                "triple_precision",
                s["tr_match"],
                s["tr_pred"],
                missing="no predicted triples where the reference has triples",
            )
        )
        m.add(ratio("triple_recall", s["tr_match"], s["tr_gold"], missing="no reference triples"))
        no_edges = "no output triples with known ends and predicate over a graph with relations"
        m.add(ratio("edge_support", s["edge_in_graph"], s["edge_checked"], missing=no_edges))
        m.add(
            ratio(
                "hallucinated_edge_rate",
                s["edge_checked"] - s["edge_in_graph"],
                s["edge_checked"],
                missing=no_edges,
            )
        )
        m.add(
            Metric("hallucinated_edges", s["edge_checked"] - s["edge_in_graph"])
            if s["edge_checked"]
            else Metric("hallucinated_edges", None, missing=no_edges)
        )
        m.add(
            ratio(
                "cardinality_conformance",
                s["card_ok"],
                s["card_checked"],
                missing="no (subject, predicate) with a declared max cardinality",
            )
        )
        return m


FAMILY = ConformanceFamily()


# ---------------------------------------------------------------------- helpers
MISSING_OUTPUT = "missing output"
NO_ANSWER = "no answer section"


def unscored_output(record_id: Any, reason: str) -> dict[str, str]:
    """The unscored entry of a record without ``answer.output``: code ``missing_prediction``
    for ``missing output`` (a missing run), ``not_applicable`` for the others."""
    from kg_rageval.records.reasons import Reason, unscored

    code = {MISSING_OUTPUT: Reason.MISSING_PREDICTION, NO_ANSWER: Reason.NO_SECTION}.get(
        reason, Reason.NOT_APPLICABLE
    )
    return unscored(record_id, reason, code)


def _is_map(x: Any) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(x, Mapping)``, a plain ``dict`` (every JSON object) without the ABC check."""
    return type(x) is dict or isinstance(x, Mapping)


def output_expectation(record: Mapping[str, Any]) -> str | None:
    """``None`` when the record has an ``answer.output`` to score, else the exact unscored
    reason (see the module docstring): ``"missing output"`` when one was expected."""
    answer = record.get("answer")
    if _is_map(answer) and "output" in answer:
        return None
    ref = record.get("reference")
    ref = ref if _is_map(ref) else {}
    if answer is None:  # no answer at all: missing only where a reference output expects one
        return MISSING_OUTPUT if ref.get("output") is not None else NO_ANSWER
    answerable = ref.get("answerable")
    refused = _is_map(answer) and answer.get("refused") is True
    if refused:
        if answerable is False:
            return "correct refusal"
        return MISSING_OUTPUT if answerable is True else "refused"
    if answerable is False and ref.get("output") is None:
        return "no output expected"
    return MISSING_OUTPUT


def record_gold_node(
    record: Mapping[str, Any],
    ontology: Ontology,
    reference_node: str | None = None,
    resolver: IdResolver | None = None,
) -> str | None:
    """The ontology branch of a record by the one rule (:func:`kg_rageval.records.gold_node`):
    the record's ``gold_node``, else its single ``labels.gold`` id, else ``reference_node`` (the
    reference output's first node field) as the family's own node; ids resolve through
    ``resolver`` (default options), one the ontology lacks is skipped."""
    r = resolver if resolver is not None else IdResolver(ontology)
    return gold_node(record, resolve=r.node_id, fallback=reference_node)


def parse_output(value: Any) -> tuple[Any, str | None]:
    """``(parsed value, problem)``: a string is parsed as JSON; problem is ``None`` or why it
    is not JSON."""
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value), None
        except ValueError as exc:
            msg = getattr(exc, "msg", str(exc))
            col = getattr(exc, "colno", None)
            return None, f"not JSON: {msg}" + (f" (column {col})" if col else "")
    return value, None


def failure_kind(error: Any) -> str:
    """The failure kind of one jsonschema ``ValidationError`` (see the module docstring)."""
    kw = error.validator
    if kw == "pattern" and isinstance(error.schema, Mapping) and VOCAB_KEYWORD in error.schema:
        return "enum_violation"
    return _KIND_OF_KEYWORD.get(kw, "other")


def _path(error: Any) -> str:
    return _fmt_path(error.absolute_path)


def _fmt_path(path: Any) -> str:
    parts: list[str] = []
    for p in path:
        parts.append(f"[{p}]" if isinstance(p, int) else (("." if parts else "") + str(p)))
    return "".join(parts) or "(root)"


ENGINES = ("compiled", "jsonschema", "pydantic")


def check_schema(
    derived: DerivedSchema, value: Any, *, engine: str = "compiled"
) -> tuple[Any, list[dict[str, str]]]:
    """Parse and validate one output: ``(parsed or None, failures)``; each failure is
    ``{"kind", "path", "message"}`` and an empty list means valid.

    Engines (same verdicts and failure kinds; tested against each other):

    * ``"compiled"`` (default): the closures of :mod:`.fastcheck`, compiled once per schema
      (falls back to jsonschema when the schema leaves the derived subset);
    * ``"jsonschema"``: the compiled Draft 2020-12 validator (set-based ``enum``): the
      reference;
    * ``"pydantic"``: the equivalent pydantic model first; jsonschema names the failures of the
      outputs it rejects."""
    obj, problem = parse_output(value)
    if problem is not None:
        return None, [{"kind": "not_json", "path": "(root)", "message": problem}]
    if engine == "compiled":
        checker = derived.checker
        if checker is not None:
            return obj, [{"kind": k, "path": _fmt_path(p), "message": _short(m)} for k, p, m in checker(obj)]
    elif engine == "pydantic":
        if derived.accepts_fast(obj):
            return obj, []
    elif engine != "jsonschema":
        raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    failures = []
    for err in derived.validator.iter_errors(obj):
        failures.append({"kind": failure_kind(err), "path": _path(err), "message": _short(err.message)})
    if len(failures) > 1:
        # a value of the wrong type is not also an enum violation (jsonschema reports both)
        typed = {f["path"] for f in failures if f["kind"] == "wrong_type"}
        failures = [f for f in failures if not (f["kind"] == "enum_violation" and f["path"] in typed)]
    return obj, failures


def _short(msg: str, limit: int = 200) -> str:
    return msg if len(msg) <= limit else msg[: limit - 1] + "…"


class _Suggester:
    """Nearest ontology id for an unknown value (cached per value and slot).

    Order: exact label or synonym (case-insensitive), CURIE expansion, case-insensitive id,
    then ``difflib.get_close_matches`` (cutoff 0.6) over the slot's ids and labels. For speed
    on large vocabularies the fuzzy pool is at most :data:`FUZZY_POOL` names: those sharing the
    longest prefix with the value that still has candidates (or the sorted neighbours)."""

    def __init__(self, ontology: Ontology):
        self.o = ontology
        self.cache: dict[tuple[str, int], dict[str, str] | None] = {}
        self._casefold: dict[str, str] | None = None
        self._names: dict[int, tuple[list[str], dict[str, str]]] = {}

    def __call__(self, value: str, vocab_ids: tuple[str, ...]) -> dict[str, str] | None:
        key = (value, id(vocab_ids))
        if key not in self.cache:
            self.cache[key] = self._suggest(value, vocab_ids)
        return self.cache[key]

    def _hit(self, i: str, how: str) -> dict[str, str]:
        return {"id": i, "label": self.o.labels[self.o.id_index[i]] or "", "how": how}

    def _sorted_names(self, vocab_ids: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
        key = id(vocab_ids)
        if key not in self._names:
            o = self.o
            names: dict[str, str] = {}
            for i in vocab_ids:
                names.setdefault(i.casefold(), i)
                lab = o.labels[o.id_index[i]]
                if lab:
                    names.setdefault(lab.casefold(), i)
            self._names[key] = (sorted(names), names)
        return self._names[key]

    def _suggest(self, value: str, vocab_ids: tuple[str, ...]) -> dict[str, str] | None:
        import bisect

        o = self.o
        found = o.find_by_label(value.strip())
        if found:
            in_vocab = [f for f in found if f in set(vocab_ids)] or found
            return self._hit(in_vocab[0], "label")
        expanded = o.expand_curie(value)
        if expanded in o.id_index:
            return self._hit(expanded, "curie")
        if self._casefold is None:
            self._casefold = {}
            for i in o.ids:
                self._casefold.setdefault(i.casefold(), i)
        if value.casefold() in self._casefold:
            return self._hit(self._casefold[value.casefold()], "case")
        if not vocab_ids:
            return None
        keys, names = self._sorted_names(vocab_ids)
        v = value.casefold()
        if len(keys) <= FUZZY_POOL:
            pool = keys
        else:
            pool = []
            for k in range(len(v), 0, -1):
                lo = bisect.bisect_left(keys, v[:k])
                hi = bisect.bisect_left(keys, v[:k] + "\U0010ffff")
                if hi > lo:
                    pool = keys[lo : min(hi, lo + FUZZY_POOL)]
                    break
            if not pool:
                at = bisect.bisect_left(keys, v)
                pool = keys[max(0, at - FUZZY_POOL // 2) : at + FUZZY_POOL // 2]
        close = difflib.get_close_matches(v, pool, n=1, cutoff=0.6)
        return self._hit(names[close[0]], "fuzzy") if close else None


def _strings(v: Any) -> list[str]:
    if isinstance(v, str):
        return [v]
    if isinstance(v, list):
        return [x for x in v if isinstance(x, str)]
    return []


def _triples(v: Any) -> list[tuple[Any, Any, Any]]:
    if not isinstance(v, list):
        return []
    return [(t.get("subject"), t.get("predicate"), t.get("object")) for t in v if isinstance(t, dict)]


def as_derived(ontology: Ontology, spec: Any) -> DerivedSchema:
    """A :class:`DerivedSchema` from a derived schema, a spec, a mapping or a spec file path.
    A schema derived from another ontology object is derived again from its spec."""
    if isinstance(spec, DerivedSchema):
        return spec if spec.ontology is ontology else derive_schema(ontology, spec.spec)
    if is_spec(spec):
        return derive_schema(ontology, spec)
    if isinstance(spec, Mapping):
        return derive_schema(ontology, spec_of(spec))
    if isinstance(spec, (str, Path)):
        return derive_schema(ontology, read_spec(spec))
    raise TypeError(f"spec must be a SchemaSpec, DerivedSchema, mapping or path, not {type(spec).__name__}")


# ---------------------------------------------------------------------- scoring
class _Scorer:
    """Scores one record at a time (:meth:`score`); confusions are classified for all rows at
    the end (:meth:`resolve_confusions`)."""

    def __init__(
        self,
        derived: DerivedSchema,
        domain_semantics: str,
        engine: str = "compiled",
        ids: IdOptions | None = None,
    ):
        if engine not in ENGINES:
            raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        self.engine = engine
        if domain_semantics not in ("any", "all"):
            raise ConfigError(f"domain_semantics must be 'any' or 'all', not {domain_semantics!r}")
        self.d = derived
        self.o = derived.ontology
        self.every = domain_semantics == "all"
        self.suggest = _Suggester(self.o)
        self.props = {p.id: p for p in self.o.properties}
        self.graph = bool(self.o.graph.n_triples)
        self.entity = self.o.entity_id_index
        self.status = self.o.entity_status
        self._classes: dict[tuple[str, ...], np.ndarray] = {}
        self.ids = ids or IdOptions()
        self.resolver = IdResolver(self.o, self.ids)
        self.n_aliased = 0
        self.n_replaced = 0
        self.record: Mapping[str, Any] = {}
        self._memo: dict[Any, int] = {}
        self.pair_stats: list[dict[str, float]] = []
        """Per scored ``(output, reference)`` pair (:meth:`pair`): its stats ..."""
        self.pair_details: list[dict[str, Any]] = []
        """... its details ..."""
        self.pair_ids: list[tuple[int, int]] = []
        """... and the aliased and replaced ids it counts (``meta`` n_aliased, replaced_ids)."""

    # ids, by the one resolver's conventions --------------------------------
    def _where(self, field: str) -> str:
        return located(dict(self.record), field) if self.record else field

    def canon(self, v: str, role: str, field: str, *, check: bool = True) -> str | None:
        """The ontology id ``v`` stands for (itself, its CURIE/IRI spelling, the concept of an
        alias, the replacement of an inactive id under ``on_status*="replace"``), or ``None``
        when the ontology lacks it; with ``check``, the options' errors are raised naming the
        record and ``field``."""
        o, opt = self.o, self.ids
        i = o.id_index.get(v)
        if i is None:
            idx, n_alias = self.resolver.lookup([v])
            if idx[0] < 0:
                if check and (opt.on_unknown_gold if role == "gold" else opt.on_unknown) == "error":
                    raise self.resolver.unknown_error(
                        [v], np.zeros(1, dtype=np.int64), role, lambda j: self._where(field)
                    )
                return None
            i = int(idx[0])
            self.n_aliased += n_alias if check else 0
        if int(o.status[i]) != ACTIVE:
            mode = opt.on_status_gold if role == "gold" else opt.on_status
            if mode == "error" and check:
                raise self.resolver.status_error(
                    [v], np.asarray([i]), np.zeros(1, dtype=np.int64), role, lambda j: self._where(field)
                )
            rep = int(o.replaced_by[i])
            if mode == "replace" and rep >= 0:
                self.n_replaced += 1 if check else 0
                i = rep
        return o.ids[i]

    def classes(self, ids: tuple[str, ...]) -> np.ndarray:
        if ids not in self._classes:
            self._classes[ids] = np.asarray(
                sorted({self.o.id_index[i] for i in ids if i in self.o.id_index}), dtype=np.int64
            )
        return self._classes[ids]

    def satisfies(self, node: int, classes: np.ndarray, declared: tuple[str, ...] = ()) -> bool:
        """``node`` (an entity index) satisfies the declared classes. A hierarchy node: by
        subsumption (``all`` or ``any`` of them); an instance, or declared kinds, through the
        graph (:func:`kg_rageval.ontology.graph.satisfies`: a union)."""
        if node < len(self.o) and (classes.size == len(declared) or not self.graph):
            anc = self.o.ancestor_indices(node)
            hit = np.isin(classes, anc)
            return bool(hit.all() if self.every else hit.any())
        from kg_rageval.ontology.graph import satisfies

        return bool(satisfies(self.o, np.array([node]), declared)[0])

    def _edge(self, si: int | None, p: str, oi: int | None, st: dict, edges: list, triple: list) -> None:
        """Count an output triple against the graph: known ends and predicate are checked, and
        one the graph lacks is a hallucinated edge."""
        g = self.o.graph
        pi = g.predicate_index(p)
        if si is None or oi is None or (pi < 0 and p not in self.props):
            return
        st["edge_checked"] = st.get("edge_checked", 0) + 1
        if pi >= 0 and g.contains(np.array([si]), np.array([pi]), np.array([oi]))[0]:
            st["edge_in_graph"] = st.get("edge_in_graph", 0) + 1
        elif len(edges) < MAX_DETAILS:
            edges.append(triple)

    def resolve_confusions(self) -> None:
        """Classify every valid-but-wrong id of every scored pair against its closest
        reference id (smallest relation code; ties to the smallest reference id) in one
        vectorised call, and add the ``conf_<relation>`` counts and ``confusions`` details to
        the pair's stats and details."""
        idx = self.o.id_index
        items: list[tuple[int, str, str, tuple[str, ...]]] = []
        for pos, det in enumerate(self.pair_details):
            if "_pending" in det:
                for name, p, golds in det.pop("_pending"):
                    items.append((pos, name, p, golds))
        if not items:
            return
        gold = np.asarray([idx[g] for it in items for g in it[3]], dtype=np.int64)
        pred = np.asarray([idx[it[2]] for it in items for _ in it[3]], dtype=np.int64)
        codes = relation_codes(self.o, gold, pred)
        one = np.asarray([idx[it[2]] for it in items], dtype=np.int64)
        status = np.asarray(self.o.status)
        by_ids = IdResolver.wrong_category(np.zeros(len(items), dtype=bool), status[one] != ACTIVE)
        start = 0
        for k, (pos, name, p, golds) in enumerate(items):
            seg = codes[start : start + len(golds)].tolist()
            start += len(golds)
            code, g = min(zip(seg, golds))
            rel = by_ids[k] or RELATIONS[code]
            st = self.pair_stats[pos]
            st[f"conf_{rel}"] = st.get(f"conf_{rel}", 0) + 1
            conf = self.pair_details[pos].setdefault("confusions", [])
            if len(conf) < MAX_DETAILS:
                conf.append({"field": name, "pred": p, "gold": g, "relation": rel})

    # one record ------------------------------------------------------------
    def pair(self, value: Any, reference: Any) -> int:
        """The index of the ``(value, reference)`` pair in :attr:`pair_stats` /
        :attr:`pair_details` / :attr:`pair_ids`, scored (:meth:`score`) once per distinct pair
        (exactly equal: same types, keys in the same order, same values; see
        :func:`_exact_key`). Errors name the first record with the pair, which is the record
        being scored when they are raised. At most ``_MEMO_MAX`` pairs are remembered; values
        that are not plain JSON (dict/list/str/number/bool/None) are scored every time."""
        key = _pair_key(value, reference)
        hit = self._memo.get(key) if key is not None else None
        if hit is not None:
            return hit
        a0, r0 = self.n_aliased, self.n_replaced
        st, det = self.score(value, reference)
        k = len(self.pair_stats)
        self.pair_stats.append(st)
        self.pair_details.append(det)
        self.pair_ids.append((self.n_aliased - a0, self.n_replaced - r0))
        self.n_aliased, self.n_replaced = a0, r0  # counted per row, by the caller
        if key is not None and len(self._memo) < _MEMO_MAX:
            self._memo[key] = k
        return k

    def score(self, value: Any, reference: Any) -> tuple[dict[str, float], dict[str, Any]]:
        d, o, idx = self.d, self.o, self.o.id_index
        st: dict[str, float] = {"outputs": 1.0}
        det: dict[str, Any] = {}
        obj, failures = check_schema(d, value, engine=self.engine)
        kinds = sorted({f["kind"] for f in failures}, key=FAILURE_KINDS.index)
        for k in kinds:
            st[k] = 1.0
        st["valid"] = 0.0 if failures else 1.0
        if failures:
            det["failures"] = failures[:MAX_DETAILS]
        det["failure_kinds"] = kinds
        if not isinstance(obj, dict):
            if reference is not None:  # the reference ids are missed, not skipped
                self._semantic({}, reference, st, det)
            return st, det

        unknown: list[dict[str, Any]] = []
        not_admitted: list[dict[str, Any]] = []
        inactive: list[dict[str, Any]] = []
        for path, vname, f in d.node_slots():
            vocab = d.vocabularies[vname]
            if f.kind == "triples":
                field, _, slot = vname.partition(".")
                values = [t[0 if slot == "subject" else 2] for t in _triples(obj.get(field))]
                values = [v for v in values if isinstance(v, str)]
            else:
                values = _strings(obj.get(vname))
            lookup = self.entity if f.kind == "triples" else idx  # triple ends may be instances
            for v in values:
                st["ent_n"] = st.get("ent_n", 0) + 1
                if lookup is not idx and v not in idx and v in lookup:
                    cv: str | None = v  # an instance (a triple end): the graph's id, not the hierarchy's
                else:
                    cv = self.canon(v, "pred", f"answer.output.{path}")
                i = lookup.get(cv) if cv is not None else None
                if i is None:
                    if len(unknown) < MAX_DETAILS:
                        unknown.append({"value": v, "slot": path, "suggestion": self.suggest(v, vocab.ids)})
                    continue
                st["ent_known"] = st.get("ent_known", 0) + 1
                code = int(self.status[i])
                if code == ACTIVE:
                    st["ent_active"] = st.get("ent_active", 0) + 1
                else:
                    key = "ent_deprecated" if code == DEPRECATED else "ent_revoked"
                    st[key] = st.get(key, 0) + 1
                    if len(inactive) < MAX_DETAILS:
                        rep = (
                            int(o.replaced_by[i])
                            if i < len(o)
                            else int(o.graph.instance_replaced_by[i - len(o)])
                        )
                        inactive.append(
                            {
                                "id": v,
                                "slot": path,
                                "status": STATUS_NAMES[code],
                                "replacement": o.entity_id(rep) if rep >= 0 else None,
                            }
                        )
                if cv in vocab.members:
                    st["ent_admitted"] = st.get("ent_admitted", 0) + 1
                elif len(not_admitted) < MAX_DETAILS:
                    if code != ACTIVE and not d.spec.allows(f, STATUS_NAMES[code]):
                        reason = f"{STATUS_NAMES[code]} ids are not allowed"
                    else:
                        reason = "outside the field's selection"
                    not_admitted.append(
                        {"value": v, "slot": path, "reason": reason, "selector": vocab.selector}
                    )
        if st.get("ent_deprecated") or st.get("ent_revoked"):
            st["outputs_inactive"] = 1.0
        if unknown:
            det["unknown_ids"] = unknown
        if not_admitted:
            det["not_admitted"] = not_admitted
        if inactive:
            det["inactive_ids"] = inactive

        violations: list[dict[str, Any]] = []
        pred_unknown: list[dict[str, Any]] = []
        edges: list[list[str]] = []
        per_subject: dict[tuple[int, str], set[str]] = {}
        for name, f in d.spec.fields.items():
            if f.kind != "triples":
                continue
            pv = d.vocabularies[f"{name}.predicate"]
            for s, p, ob in _triples(obj.get(name)):
                if isinstance(p, str):
                    st["pred_n"] = st.get("pred_n", 0) + 1
                    if p in pv.members:
                        st["pred_known"] = st.get("pred_known", 0) + 1
                    elif len(pred_unknown) < MAX_DETAILS:
                        close = difflib.get_close_matches(p, list(pv.ids), n=1, cutoff=0.6)
                        pred_unknown.append(
                            {
                                "value": p,
                                "slot": f"{name}[].predicate",
                                "suggestion": close[0] if close else None,
                            }
                        )
                if not (isinstance(s, str) and isinstance(p, str) and isinstance(ob, str)):
                    continue
                st["dr_triples"] = st.get("dr_triples", 0) + 1
                prop = self.props.get(p)
                si, oi = idx.get(s), idx.get(ob)
                if self.graph:
                    si, oi = self.entity.get(s, si), self.entity.get(ob, oi)
                    self._edge(si, p, oi, st, edges, [s, p, ob])
                    if prop is not None and prop.max_cardinality is not None and si is not None:
                        per_subject.setdefault((si, p), set()).add(ob)
                checked, ok = False, True
                if prop is not None:
                    for side, node, declared in (("domain", si, prop.domain), ("range", oi, prop.range)):
                        classes = self.classes(declared)
                        if node is None or not (classes.size or (self.graph and declared)):
                            continue
                        checked = True
                        st[f"{side}_checked"] = st.get(f"{side}_checked", 0) + 1
                        if self.satisfies(node, classes, declared):
                            st[f"{side}_ok"] = st.get(f"{side}_ok", 0) + 1
                        else:
                            ok = False
                            if len(violations) < MAX_DETAILS:
                                violations.append(
                                    {"triple": [s, p, ob], "side": side, "expected": list(declared)}
                                )
                if checked:
                    st["dr_checked"] = st.get("dr_checked", 0) + 1
                    st["dr_ok"] = st.get("dr_ok", 0) + (1 if ok else 0)
                else:
                    st["dr_unchecked"] = st.get("dr_unchecked", 0) + 1
        for (si, p), objs in per_subject.items():
            st["card_checked"] = st.get("card_checked", 0) + 1
            cap = self.props[p].max_cardinality or 0
            if len(objs) <= cap:
                st["card_ok"] = st.get("card_ok", 0) + 1
            elif len(violations) < MAX_DETAILS:
                violations.append(
                    {
                        "subject": self.o.entity_id(si),
                        "predicate": p,
                        "side": "cardinality",
                        "objects": sorted(objs),
                        "max_cardinality": cap,
                    }
                )
        if edges:
            det["hallucinated_edges"] = edges
        if pred_unknown:
            det["unknown_predicates"] = pred_unknown
        if violations:
            det["domain_range_violations"] = violations

        if reference is not None:
            self._semantic(obj, reference, st, det)
        return st, det

    def _semantic(self, obj: dict, reference: Any, st: dict[str, float], det: dict[str, Any]) -> None:
        d = self.d
        ref, problem = parse_output(reference)
        if problem is not None or not isinstance(ref, dict):
            det["reference_problem"] = problem or f"reference.output is a {type(ref).__name__}, not an object"
            return
        ref_unknown = []
        for name, f in d.spec.fields.items():
            if name not in ref:
                continue
            if f.kind == "triples":
                gold = {t for t in _triples(ref[name]) if all(isinstance(x, str) for x in t)}
                pred = {t for t in _triples(obj.get(name)) if all(isinstance(x, str) for x in t)}
                st["tr_gold"] = st.get("tr_gold", 0) + len(gold)
                st["tr_pred"] = st.get("tr_pred", 0) + len(pred)
                st["tr_match"] = st.get("tr_match", 0) + len(gold & pred)
                continue
            if f.kind not in ("node", "list"):
                continue
            gold_ids = []
            for g in _strings(ref[name]):
                cg = self.canon(g, "gold", f"reference.output.{name}")
                if cg is not None:
                    gold_ids.append(cg)
                else:
                    ref_unknown.append({"value": g, "slot": name})
            gold_set = set(gold_ids)
            pred_ids = list(
                dict.fromkeys(self.canon(p, "pred", name, check=False) or p for p in _strings(obj.get(name)))
            )
            members = d.vocabularies[name].members
            st["sem_gold"] = st.get("sem_gold", 0) + len(gold_set)
            st["sem_gold_hit"] = st.get("sem_gold_hit", 0) + len(gold_set & set(pred_ids))
            for p in pred_ids:
                if p not in members:
                    st["sem_invalid"] = st.get("sem_invalid", 0) + 1
                    continue
                st["sem_pred"] = st.get("sem_pred", 0) + 1
                if p in gold_set:
                    st["sem_exact"] = st.get("sem_exact", 0) + 1
                    continue
                if not gold_ids:
                    continue
                # classified for all records at once in resolve_confusions()
                det.setdefault("_pending", []).append((name, p, tuple(gold_ids)))
        if ref_unknown:
            det["reference_unknown_ids"] = ref_unknown[:MAX_DETAILS]


def relation_codes(ontology: Ontology, gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Relation codes (indices into ``RELATIONS``) of many (gold, pred) index pairs: the
    hierarchy family's vectorised :func:`kg_rageval.families.hierarchy.relation_codes`, so conformance,
    linking and hierarchy reports give the same relation for the same pair."""
    from kg_rageval.families.hierarchy import relation_codes as vectorised

    return np.asarray(vectorised(ontology, gold, pred), dtype=np.int64)


_MEMO_MAX = 200_000
_PLAIN = (str, int, float, bool, type(None))


_STR_ONLY = {str}


def _pair_key(value: Any, reference: Any) -> Any:
    """:func:`_exact_key` of ``(value, reference)``; for two flat objects of strings (the usual
    structured output and its reference) their items, checked by C-level type scans (no
    collision with an :func:`_exact_key`, which is a tuple starting with a tag string)."""
    if type(value) is dict and type(reference) is dict:
        items_v, items_r = tuple(value.items()), tuple(reference.items())
        if set(map(type, chain.from_iterable(items_v + items_r))) <= _STR_ONLY:  # keys and values
            return (items_v, items_r)
    return _exact_key((value, reference))


def _exact_key(x: Any) -> Any:
    """A hashable key equal for two JSON-like values exactly when they are equal with the same
    types everywhere (``1``, ``1.0`` and ``True`` differ; a dict's key order counts, since
    details list problems in field order); ``None`` for anything else (a tuple, a set, ...)."""
    t = type(x)
    if t in _PLAIN:
        return (t, x)
    if t is dict:
        items = []
        for k, v in x.items():
            kv = _exact_key(v)
            if type(k) is not str or kv is None:
                return None
            items.append((k, kv))
        return ("d", tuple(items))
    if t is list or t is tuple:
        out = []
        for v in x:
            kv = _exact_key(v)
            if kv is None:
                return None
            out.append(kv)
        return ("l" if t is list else "t", tuple(out))
    return None


def _row_column(values: list[Any], codes: np.ndarray) -> np.ndarray:
    """The object column of one value per pair, taken at each row's pair code."""
    col = np.empty(len(values), dtype=object)
    col[:] = values
    return col[codes]


def score_conformance(
    ontology: Ontology,
    records: Iterable[Mapping[str, Any]],
    spec: Any,
    *,
    domain_semantics: str = "any",
    engine: str = "compiled",
    **ids: Any,
) -> Evaluation:
    """Score ``answer.output`` of each record against ``spec`` (a :class:`SchemaSpec` or
    :class:`~kg_rageval.families.conformance.spec.PlainSpec`, a :class:`DerivedSchema`, a spec mapping or a spec file path). See the module docstring for
    the metrics; per-row ``details`` carry failures, unknown ids with suggestions, inactive
    ids with replacements, domain/range violations and confusions.

    ``engine``: how schema validity is checked (see :func:`check_schema`).

    Ids are resolved by the one resolver's conventions (:mod:`kg_rageval.ontology.resolver`):
    an output id the ontology lacks is counted (``entity_vocabulary``; ``on_unknown="error"``
    raises), a deprecated/revoked one flagged with its replacement (``on_status``); a
    ``reference.output`` id the ontology lacks or that is inactive is an input error naming the
    record and field (``on_unknown_gold`` / ``on_status_gold``); aliases and CURIE/IRI
    spellings resolve to their concept for the vocabulary and semantic checks (schema validity
    still wants the exact id the schema lists).

    Keys: ``slice:<name>`` for each record slice and ``gold_node`` (:func:`record_gold_node`:
    the record's ``gold_node``, else its single ``labels.gold`` id, else the reference id of the
    first node field; resolved with the id options)."""
    derived = as_derived(ontology, spec)
    scorer = _Scorer(derived, domain_semantics, engine, IdOptions.of(**ids))
    first_node = next((n for n, f in derived.spec.fields.items() if f.kind == "node"), None)
    rids: list[Any] = []
    pairs: list[int] = []  # each row's scored (output, reference) pair
    gold_nodes: list[str | None] = []
    row_slices: list[dict[str, str | None] | None] = []
    ref_nodes: dict[int, str | None] = {}  # per pair: the reference id of the first node field
    unscored: list[dict[str, str]] = []
    slice_names: set[str] = set()
    for r in records:
        rid = r.get("id")
        answer = r.get("answer")
        why = output_expectation(r)
        if why is not None or not _is_map(answer):
            unscored.append(unscored_output(rid, why or MISSING_OUTPUT))
            continue
        reference = r.get("reference")
        ref_out = reference.get("output") if _is_map(reference) else None
        scorer.record = r
        k = scorer.pair(answer["output"], ref_out)
        rids.append(rid)
        pairs.append(k)
        slices = r.get("slices")
        if _is_map(slices) and slices:
            texts = {f"slice:{name}": slice_text(v) for name, v in slices.items()}
            slice_names.update(texts)
            row_slices.append(texts)
        else:
            row_slices.append(None)
        if k in ref_nodes:
            ref_node = ref_nodes[k]
        else:
            ref_node = None
            if first_node is not None:
                ref, _ = parse_output(ref_out) if ref_out is not None else (None, None)
                if isinstance(ref, dict) and isinstance(ref.get(first_node), str):
                    ref_node = ref[first_node]
            ref_nodes[k] = ref_node
        gold_nodes.append(record_gold_node(r, scorer.o, ref_node, scorer.resolver))
    scorer.resolve_confusions()
    codes = np.asarray(pairs, dtype=np.int64)
    counts = np.bincount(codes, minlength=len(scorer.pair_ids))
    if scorer.pair_ids:
        per_pair = np.asarray(scorer.pair_ids, dtype=np.int64)
        scorer.n_aliased, scorer.n_replaced = (int(x) for x in counts @ per_pair)
    table = np.asarray(
        [[st.get(name, 0.0) for name in FAMILY.stats] for st in scorer.pair_stats], dtype=float
    ).reshape(len(scorer.pair_stats), len(FAMILY.stats))
    kinds = [",".join(det.pop("failure_kinds")) or None for det in scorer.pair_details]
    problems = [det or None for det in scorer.pair_details]
    keys: dict[str, Any] = {"gold_node": gold_nodes}
    for name in sorted(slice_names):
        keys[name] = [None if s is None else s.get(name) for s in row_slices]
    meta = {
        "schema": derived.spec.title,
        "spec": derived.spec.source,
        "domain_semantics": domain_semantics,
        "engine": engine,
        **({"n_aliased": scorer.n_aliased} if scorer.n_aliased else {}),
        **({"replaced_ids": scorer.n_replaced} if scorer.n_replaced else {}),
        "vocabularies": {k: {"size": len(v), "mode": v.mode} for k, v in derived.vocabularies.items()},
    }
    # one pickled dict per distinct pair in one buffer (no Python object kept per pair), read as
    # each row's own dict
    # CodedColumn and Evaluation.details take packed values and coded columns (results/evaluation.py
    # annotates plain arrays only)
    problem_col = CodedColumn(
        _narrow_codes(codes, len(problems)),
        PackedValues.of(problems),  # type: ignore[arg-type]
        fresh=True,
    )
    return Evaluation(
        FAMILY,
        _object_column(rids),
        {name: table[codes, j] for j, name in enumerate(FAMILY.stats)},
        keys={k: _object_column(v) for k, v in keys.items()},
        details={"failure_kinds": _row_column(kinds, codes), "problems": problem_col},  # type: ignore[dict-item]
        unscored=unscored,
        meta=meta,
    )
