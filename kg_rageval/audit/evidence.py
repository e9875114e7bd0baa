"""How a gate finds its number: the one implementation shared by ``kg-rageval audit`` and the
pytest plugin's ``assert_gates`` (so a gate evaluates identically in both).

:class:`MetricIndex` maps canonical metric names (``family.metric``) to the evaluation that
produces them; :func:`metric_for_gate` computes the metric a gate reads — the total, the
metric on a slice or node scope, and its bootstrap interval when the gate bounds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kg_rageval.audit.gates import Gate
from kg_rageval.contract import MetricName
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.metric import Metric

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.audit.families import FamilyRun


def node_mask(ev: Evaluation, ontology: Any, node_id: str, key: str = "gold_node") -> np.ndarray | None:
    """Rows whose ``key`` node lies in ``node_id``'s subtree; ``None`` when ``ev`` has no such key."""
    if key not in ev.keys:
        return None
    idx = ev.node_indices(ontology, key)
    desc = ontology.descendant_indices(ontology.index(node_id), include_self=True)
    return np.isin(idx, desc) & (idx >= 0)


def slice_mask(ev: Evaluation, name: str, value: str) -> np.ndarray | None:
    """Rows whose ``slice:<name>`` key has the text ``value`` (:func:`~kg_rageval.records.slice_text`)."""
    import itertools
    import operator

    from kg_rageval.records import slice_texts

    col = ev.keys.get(f"slice:{name}")
    if col is None:
        return None
    texts = slice_texts(col.tolist())  # texts and None as they are (the families' keys)
    return np.fromiter(map(operator.eq, texts, itertools.repeat(value)), dtype=bool, count=len(texts))


@dataclass
class _Owner:
    family: str
    ev: Evaluation
    metric: str

    @property
    def canonical(self) -> str:
        return f"{self.family}.{self.metric}"


class MetricIndex:
    """Which evaluation produces which canonical metric name (``family.metric``).

    ``names`` maps the metric texts of the gates to their resolved
    :class:`~kg_rageval.contract.MetricName`; a text left unresolved (a family that declares
    no metrics) is looked up by its bare name among the families that ran."""

    def __init__(self, runs: Mapping[str, FamilyRun], names: Mapping[str, MetricName] | None = None):
        self.runs = runs
        self.names = dict(names or {})
        self.by_name: dict[str, list[_Owner]] = {}
        self.bare: dict[str, list[_Owner]] = {}
        self.totals: dict[tuple[int, str], Metric] = {}
        for fam, run in runs.items():
            for ev in run.evaluations:
                for m, val in ev.metrics().items():
                    self.totals[(id(ev), m)] = val
                    o = _Owner(fam, ev, m)
                    self.by_name.setdefault(o.canonical, []).append(o)
                    self.bare.setdefault(m, []).append(o)

    def name_of(self, text: str | MetricName) -> MetricName:
        if isinstance(text, MetricName):
            return text
        return self.names.get(text) or MetricName.parse(text)

    def owner(self, text: str | MetricName) -> tuple[_Owner | None, str]:
        mn = self.name_of(text).unscoped()
        shown = str(text) if isinstance(text, str) else mn.qualified
        owners = self.bare.get(mn.metric) if mn.family is None else self.by_name.get(mn.qualified)
        if owners is None:
            return None, self._absent_reason(shown, mn)
        if len(owners) > 1:
            names = sorted({o.canonical for o in owners})
            return None, f"ambiguous metric {shown!r}: produced by {', '.join(names)}; name one"
        return owners[0], ""

    def _absent_reason(self, shown: str, mn: MetricName) -> str:
        fam = mn.family
        also = f" ({mn.qualified})" if fam and shown != mn.qualified else ""
        if fam is not None and fam in self.runs and self.runs[fam].status != "ran":
            r = self.runs[fam]
            return f"no family produced {shown!r}{also}: family {fam!r} did not run ({r.status}: {r.reason})"
        if fam is not None and fam not in self.runs:
            return f"no family produced {shown!r}{also}: family {fam!r} is not in the audit's families"
        not_run = {f: r for f, r in self.runs.items() if r.status != "ran"}
        if not_run:
            why = ", ".join(f"{f} ({r.status})" for f, r in sorted(not_run.items()))
            return f"no family produced {shown!r}; not run: {why} (see the families table)"
        return f"no family produced {shown!r}"


def metric_for_gate(
    g: Gate,
    index: MetricIndex,
    ontology: Any,
    bootstrap: Any,
    baseline_metrics: Mapping[str, Metric],
    *,
    has_baseline: bool = False,
    ci_methods: dict[str, str] | None = None,
) -> Metric:
    """The Metric a gate is decided on (value=None + reason when evidence is missing): the
    family total, or the metric recomputed on the rows of the gate's scope; with a CI bound,
    its confidence interval (:class:`_Bound`) under ``bootstrap`` (``n_resamples``, ``level``, ``seed``,
    ``min_units``, ``method``, ``methods``; ``ci_methods`` receives the method used per gate).
    The audit and ``assert_gates`` both decide gates with this function (or
    :func:`gate_metrics`, the same for many gates at once)."""
    return gate_metrics(
        [g], index, ontology, bootstrap, baseline_metrics, has_baseline=has_baseline, ci_methods=ci_methods
    )[0]


def gate_metrics(
    gates: Iterable[Gate],
    index: MetricIndex,
    ontology: Any,
    bootstrap: Any,
    baseline_metrics: Mapping[str, Metric],
    *,
    has_baseline: bool = False,
    ci_methods: dict[str, str] | None = None,
    pool: Any = None,
) -> list[Metric]:
    """:func:`metric_for_gate` of every gate, in order, with every percentile bootstrap the
    bounded gates need computed together (:func:`~kg_rageval.results.evaluation.bootstrap_many`):
    each (evaluation, metric) once, and the evaluations with the same number of records —
    two families' totals over the same records, a metric bounded from below and above —
    from one pass over the weight blocks, drawn once. The intervals are those of
    :func:`metric_for_gate` gate by gate, bit for bit (also with ``pool``, a
    :class:`~kg_rageval.results.bootstrap_pool.BootstrapPool` the resample blocks are computed on)."""
    from kg_rageval.results.evaluation import bootstrap_many

    methods_out = {} if ci_methods is None else ci_methods
    n_records: dict[int, int] = {}  # records of each whole evaluation, counted once
    staged = [_scoped(g, index, ontology, baseline_metrics, has_baseline, n_records) for g in gates]
    b = bootstrap
    requests: dict[int, tuple[Evaluation, list[str], Any]] = {}
    for st in staged:
        if isinstance(st, _Bound):
            st.prepare(b)
            if st.percentile:  # keyed by the per-record view: a scope has its own
                ev_metrics = requests.setdefault(st.key, (st.ev, [], st.per_record))[1]
                if st.owner.metric not in ev_metrics:
                    ev_metrics.append(st.owner.metric)
    cis: dict[tuple[int, str], Any] = {}
    if requests:
        got = bootstrap_many(
            requests.values(), n_resamples=b.n_resamples, level=b.level, seed=b.seed, pool=pool
        )
        for (key, (_, ms, _)), ci in zip(requests.items(), got):
            cis.update({(key, m): ci.get(m) for m in ms})
        del got
    requests.clear()
    out = []
    for st in staged:
        fin = st.finish(cis.get((st.key, st.owner.metric)), b, methods_out) if isinstance(st, _Bound) else st
        out.append(
            Metric(
                fin.g.key,
                fin.m.value,
                fin.m.numerator,
                fin.m.denominator,
                fin.m.missing,
                fin.m.ci,
                fin.m.rows,
            )
            if fin.rekey
            else fin.m
        )
    return out


@dataclass
class _Final:
    """A gate's metric as decided; ``rekey``: named after the gate (a paired delta keeps the
    baseline comparison's name)."""

    g: Gate
    m: Metric
    rekey: bool = True


@dataclass
class _Bound:
    """A ``ci_low``/``ci_high`` gate whose value is known: its confidence interval, or missing
    evidence — fewer than ``bootstrap.min_units`` records in scope (default 30), or no
    applicable interval (``kg_rageval.audit.intervals``: the percentile bootstrap widened to the
    Clopper–Pearson interval for count proportions by default)."""

    g: Gate
    m: Metric
    ev: Evaluation
    owner: _Owner
    missing: Metric | None = None
    method: str = "auto"
    percentile: bool = False
    per_record: Any = None

    def prepare(self, b: Any) -> None:
        """The resampling units check and the interval method; whether a percentile
        bootstrap is needed."""
        min_units = getattr(b, "min_units", 30)
        if self.per_record is None:  # the evaluation's cached view, read again by the bootstrap
            self.per_record = self.ev.record_stats()
        units = len(self.per_record)  # distinct record ids
        if units < min_units:
            self.missing = Metric(
                self.g.key,
                None,
                self.m.numerator,
                self.m.denominator,
                f"{self.g.use} needs at least {min_units} resampling units (records) and the "
                f"scope has {units} (bootstrap.min_units)",
            )
            return
        methods = getattr(b, "methods", None) or {}
        self.method = str(
            methods.get(self.owner.canonical)
            or methods.get(self.owner.metric)
            or getattr(b, "method", "auto")
        )
        self.percentile = self.method in ("auto", "percentile")

    @property
    def key(self) -> int:
        """Which bootstrap the gate reads: one per evaluation and scope."""
        return id(self.per_record) if self.per_record is not None else id(self.ev)

    def finish(self, pct: Any, b: Any, ci_methods: dict[str, str]) -> _Final:
        from kg_rageval.audit.intervals import bound

        if self.missing is not None:
            return _Final(self.g, self.missing)
        ci, used, why = bound(self.m, self.method, b.level, pct if self.percentile else None)
        if ci is None:
            return _Final(self.g, Metric(self.g.key, None, self.m.numerator, self.m.denominator, why))
        ci_methods[self.g.key] = used
        return _Final(self.g, self.m.with_ci(ci))


def _scoped(
    g: Gate,
    index: MetricIndex,
    ontology: Any,
    baseline_metrics: Mapping[str, Metric],
    has_baseline: bool,
    n_records: dict[int, int] | None = None,
) -> _Final | _Bound:
    """The gate's metric on its scope (or missing evidence); a bounded gate's interval is left
    to :class:`_Bound`."""
    if g.metric.startswith("delta:"):
        mn = index.name_of(g.metric)
        if mn.family is None:  # an undeclared family's metric: its owner names the family
            owner, _ = index.owner(mn.metric)
            if owner is not None:
                mn = MetricName(owner.family, owner.metric, delta=True)
        m = baseline_metrics.get(mn.key if not g.scope else f"{mn.key}[{g.scope}]")
        if m is None:
            why = "no baseline configured" if not has_baseline else f"no paired delta for {g.metric!r}"
            return _Final(g, Metric(g.key, None, missing=why))
        return _Final(g, m, rekey=False)
    owner, why = index.owner(g.metric)
    if owner is None:
        return _Final(g, Metric(g.key, None, missing=why))
    ev = owner.ev
    if g.scope is None:
        m = index.totals[(id(ev), owner.metric)]
    else:
        kind, _, rest = g.scope.partition(":")
        if kind == "slice":
            name, _, value = rest.partition("=")
            mask = slice_mask(ev, name, value)
            if mask is None:
                return _Final(
                    g, Metric(g.key, None, missing=f"family {owner.family!r} has no slice {name!r}")
                )
        else:
            if ontology is None:
                return _Final(
                    g, Metric(g.key, None, missing="a node scope needs the ontology (ontology=...)")
                )
            if rest not in ontology:
                return _Final(g, Metric(g.key, None, missing=f"node {rest!r} is not in the ontology"))
            mask = node_mask(ev, ontology, rest)
            if mask is None:
                return _Final(
                    g,
                    Metric(g.key, None, missing=f"family {owner.family!r} attaches no gold node to its rows"),
                )
        if not mask.any():
            return _Final(g, Metric(g.key, None, missing=f"no {owner.family} rows in scope {g.scope}"))
        absent = Metric(owner.metric, None, missing="not produced on this scope")
        if plain_rows(ev):  # the scope's sums, and its records for a bound: no copy of its rows
            m = ev.family.finalize(ev.totals(mask)).get(owner.metric, absent)
            if g.use != "value" and m.value is not None:
                per_record = scoped_records(ev, mask)
                return _Bound(g, with_rows(m, len(per_record)), ev, owner, per_record=per_record)
            return _Final(g, with_rows(m, _records_in(ev, mask)))
        ev = ev.subset(mask)
        m = ev.metrics().get(owner.metric, absent)
    if g.scope is not None or n_records is None:  # a subset: its own records
        m = with_rows(m, ev.n_records)
    else:  # a whole evaluation the index holds: counted once
        if id(ev) not in n_records:
            n_records[id(ev)] = ev.n_records
        m = with_rows(m, n_records[id(ev)])
    if g.use != "value" and m.value is not None:
        return _Bound(g, m, ev, owner)
    return _Final(g, m)


def with_rows(m: Metric, records: int) -> Metric:
    """``m`` with ``rows``: the records its rows come from (at most ``m.rows``, a quantile's
    values), which a gate's minimum of rows reads (:func:`~kg_rageval.contract.gates.rows_of`)."""
    import dataclasses

    rows = records if m.rows is None else min(int(m.rows), records)
    return dataclasses.replace(m, rows=int(rows))


def _records_in(ev: Evaluation, mask: np.ndarray) -> int:
    """Distinct records among the rows of ``mask`` (ids compared as text, as :attr:`Evaluation.n_records`)."""
    from kg_rageval.results.columns import record_id_texts

    return len(record_id_texts(ev.record_ids[mask])) if mask.any() else 0


def plain_rows(ev: Evaluation) -> bool:
    """Whether ``ev`` sums, subsets and bootstraps its rows as :class:`Evaluation` does (a
    scope can then be read as a row mask over it; the system family's quantiles cannot)."""
    cls = type(ev)
    return (
        cls.subset is Evaluation.subset
        and cls.metrics is Evaluation.metrics
        and cls.bootstrap_replicates is Evaluation.bootstrap_replicates
    )


def scoped_records(ev: Evaluation, mask: np.ndarray) -> Any:
    """The per-record stats of ``ev.subset(mask)`` (:class:`~kg_rageval.results.record_stats.RecordStats`
    over the rows of the mask), without the subset's copy of every column."""
    from kg_rageval.results.record_stats import RecordStats

    return RecordStats(ev, np.flatnonzero(mask))


def gate_key(g: Gate, index: MetricIndex) -> str:
    """The canonical name of the number a gate reads (without its bound)."""
    mn = index.name_of(g.metric)
    if mn.family is None and not mn.delta:
        owner, _ = index.owner(g.metric)
        if owner is not None:
            mn = MetricName(owner.family, owner.metric, delta=mn.delta)
    base = mn.unscoped().key
    return f"{base}[{g.scope}]" if g.scope else base
