"""Run an audit: families → metrics (+ bootstrap intervals) → gates → per-node report.

Decision rules (also in ``docs/audit.md``):

* **Missing evidence fails.** A gate whose metric is absent (family not importable, section
  absent from every record, no such slice/node), undefined (empty denominator) or lacks the
  bound it asks for (no interval) has status ``missing`` and fails the audit.
* **Missing runs stay in the counts.** For each family, records that carry its section but
  were left unscored (missing run, timeout, invalid judge output, ...) are counted against
  ``missing_runs.budget`` (a fraction of the records with the section). Above the budget
  every gate of that family is ``missing`` and a ``<family>.missing_run_rate`` gate fails.
* **An audit with no gates fails** (there is nothing to release on).
* **A cited test-set manifest is verified** (:mod:`.testset_pin`): its own hash and the hash of
  the gold labels it pins, recomputed over the audited records; either differing fails the
  ``testset_manifest.verified`` gate as tampered evidence.
* Exit codes: 0 every gate passes; 1 a gate failed or is missing; 2 invalid inputs or config
  (raised as :class:`~kg_rageval.base.errors.InputError` before any decision is made).

Metric names: every number has one canonical name (:class:`~kg_rageval.contract.MetricName`):
``<family>.<metric>``, scoped ``<family>.<metric>[slice:<name>=<value>]`` /
``[node:<id>]`` (rows whose gold node lies in that node's subtree, each row once), baseline
deltas ``delta:<family>.<metric>``. Gates may use the accepted aliases (a bare name only one
configured family declares, ir_measures names); they are resolved through the metric registry
before any family runs, so a misspelt metric, slice value or node is exit 2 with a "did you
mean" whether or not its family ran.

Here: :func:`run_audit` and the order of its stages. Reading the inputs: :mod:`.inputs`;
running the families: :mod:`.family_runs`; checking the gates' names: :mod:`.gate_checks`;
missing-run counts: :mod:`.missing_runs`; the baseline comparison: :mod:`.paired_baseline`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kg_rageval.audit.config import AuditConfig
from kg_rageval.audit.evidence import MetricIndex, gate_key, metric_for_gate, node_mask, slice_mask  # noqa: F401 (re-exported)
from kg_rageval.audit.evidence import gate_metrics as evidence_gate_metrics
from kg_rageval.audit.families import FamilyRun
from kg_rageval.audit.family_runs import _run_streamed, configured_families, run_families
from kg_rageval.audit.gate_checks import _check_gate_metrics, resolve_gates
from kg_rageval.audit.gates import Gate, GateResult, evaluate_gates
from kg_rageval.audit.inputs import load_inputs
from kg_rageval.audit.missing_runs import (
    _family_counts,
    _fmt_reasons,
    families_in_audit,
    mark_missing_sections,
    no_gold_shares,
)
from kg_rageval.audit.paired_baseline import _run_baseline
from kg_rageval.audit.result import AuditResult
from kg_rageval.base.errors import ConfigError
from kg_rageval.base.fmt import fmt_count
from kg_rageval.results.metric import Metric


# ---------------------------------------------------------------------- the audit
def run_audit(
    config: AuditConfig,
    *,
    progress: bool = True,
    inputs: Mapping[str, Any] | None = None,
    client: Any = None,
    partitions: int | None = None,
) -> AuditResult:
    """Run the whole audit described by ``config`` and decide its gates (with the config's
    ``limits`` in force).

    ``client``: a ``distributed.Client``: when the audit streams its records file, the stream
    is partitioned over its workers — each reads, observes and scores a byte range of whole
    chunks, and the partitions' accumulations and result columns are merged here in file order
    (:mod:`.partitions`; ``partitions`` byte ranges, default twice the worker threads) — or,
    with ``partitions=0`` (and where partitions cannot be exact, e.g. a ``.gz`` file), the
    chunks are read and accumulated here and every family's call on every chunk runs on the
    workers. The report is the same as without a client, timings aside. A held audit (a
    family not streamable, ``chunk_size = 0``, ``inputs=`` given, or a fallback) runs
    in-process."""
    from kg_rageval.base import limits

    with limits.limits(config.limits), _InputsFrozen() as frozen:
        return _run_audit(
            config,
            progress=progress,
            inputs=inputs,
            loaded=frozen.freeze,
            client=client,
            partitions=partitions,
        )


class _InputsFrozen:
    """Moves the loaded inputs out of the cyclic garbage collector's reach while the audit runs
    (:func:`gc.freeze`; :func:`gc.unfreeze` on the way out, also on an error). Parsed records
    hold no reference cycles, yet every full collection walks their millions of dicts and
    lists: at 100,000 records that was a second or more of each family's CPU. Nothing is
    frozen when the caller has frozen objects itself (its freeze is left as it was)."""

    def __init__(self) -> None:
        self.active = False

    def __enter__(self) -> _InputsFrozen:
        return self

    def freeze(self) -> None:
        import gc

        if self.active or gc.get_freeze_count() == 0:  # again after a streamed audit fell back
            gc.freeze()
            self.active = True

    def __exit__(self, *exc: object) -> None:
        if self.active:
            import gc

            gc.unfreeze()
            self.active = False


def _run_audit(
    config: AuditConfig,
    *,
    progress: bool,
    inputs: Mapping[str, Any] | None,
    loaded: Any = None,
    client: Any = None,
    partitions: int | None = None,
) -> AuditResult:
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    lap = [t0]

    def tick(name: str) -> None:
        now = time.perf_counter()
        timings[name] = round(now - lap[0], 4)
        lap[0] = now

    from kg_rageval.audit.stream import HeldRecords, stream_chunk_size

    gates = config.all_gates()
    try:
        families: list[str] | None = configured_families(config)
    except ConfigError:  # raised by the held audit where it raises it (after the records)
        families = None
    size = stream_chunk_size(config, inputs, families)
    got = (
        _run_streamed(config, size, progress, loaded, tick, client, partitions) if size is not None else None
    )
    view: Any
    if got is not None:  # every family streamed: the records were read once, in chunks
        inputs, view, runs = got
        ontology = inputs["ontology"]
        names = resolve_gates(gates, config, (), ontology, slices=view.slice_values())
    else:  # the records held in one list
        inputs = dict(inputs) if inputs is not None else load_inputs(config)
        if loaded is not None:
            loaded()
        ontology = inputs["ontology"]
        view = HeldRecords(inputs["records"])
        names = resolve_gates(gates, config, view.records, ontology)
        tick("load_inputs")
        runs = run_families(config, inputs, view.records, progress=progress)
        tick("families")
    index = MetricIndex(runs, names)
    _check_gate_metrics(gates, index, config)

    # the completeness check of every family that ran: missing-run budget per family
    for key, listed in (("missing_runs", config.missing_runs.budgets), ("no_gold", config.no_gold.budgets)):
        stray = sorted(set(listed) - set(runs))
        if not stray:
            continue
        raise ConfigError(
            f"{key}.budgets: {', '.join(map(repr, stray))} "
            f"{'is not a family' if len(stray) == 1 else 'are not families'} of this audit "
            f"(families: {', '.join(sorted(runs))})",
            source=config.source,
        )
    # a record without the section of a family in the audit that requires it: a missing run
    mark_missing_sections(runs, view, families_in_audit(config, gates, index))
    budget_results: list[GateResult] = []
    over_budget: dict[str, str] = {}
    no_gold_over: dict[int, str] = {}  # id(evaluation) -> reason
    counts: dict[str, Any] = {"records": len(view), "families": {}}
    for fam, run in runs.items():
        c = _family_counts(run, view, config.missing_runs.reasons, config.missing_runs.metrics)
        counts["families"][fam] = c
        if run.status != "ran" or c["family_records"] == 0:
            continue
        budget = float(config.missing_runs.budgets.get(fam, config.missing_runs.budget))
        rate = c["missing_runs"] / c["family_records"]
        g = Gate(f"{fam}.missing_run_rate", "<=", budget)
        ok = rate <= budget + 1e-12
        detail = dict(c["unscored_reasons"])
        if c["scored_as_empty"]:
            detail["scored as an empty prediction"] = c["scored_as_empty"]
        detail.update({f"counted in {k}": v for k, v in c["missing_in_metrics"].items()})
        reason = (
            f"{c['missing_runs']}/{c['family_records']} {fam} records are missing runs "
            f"({rate:.2%}; budget {budget:.2%})"
            + (f"; unscored or invalid: {_fmt_reasons(detail)}" if detail else "")
        )
        budget_results.append(GateResult(g, "pass" if ok else "fail", rate, reason))
        if not ok:
            over_budget[fam] = f"missing evidence: {fam} missing runs above budget ({reason})"
        for ev, no_gold, n in no_gold_shares(run):  # the scored-share check, per evaluation
            cap = float(config.no_gold.budgets.get(fam, config.no_gold.budget))
            member = ev.family.name
            name = f"{fam}.no_gold_rate" if member == fam else f"{fam}.{member}.no_gold_rate"
            g = Gate(name, "<=", cap)
            ok = no_gold / n <= cap + 1e-12
            reason = (
                f"{no_gold}/{n} {member} records have no gold to score against "
                f"({no_gold / n:.2%}; budget {cap:.2%}, no_gold.budget)"
            )
            budget_results.append(GateResult(g, "pass" if ok else "fail", no_gold / n, reason))
            if not ok:
                no_gold_over[id(ev)] = (
                    f"missing evidence: {member} records without gold above budget ({reason})"
                )

    baseline = None
    baseline_metrics: dict[str, Metric] = {}
    if config.baseline is not None:
        baseline, baseline_metrics = _run_baseline(config, inputs, runs, progress, view, client)
        tick("baseline")

    # the flat metric map: globals, slices, and whatever the gates ask for
    flat: dict[str, Metric] = {}
    for name, owners in index.by_name.items():
        if len(owners) == 1:
            flat[name] = index.totals[(id(owners[0].ev), owners[0].metric)]
    if config.bootstrap.always:
        _bootstrap_all(index, flat, config)
    flat.update(baseline_metrics)
    gate_metrics: dict[str, Metric] = {}
    canonical: dict[str, str] = {}
    ci_methods: dict[str, str] = {}
    # every gate at once: bootstraps of evaluations with the same record count share their draws
    decided = evidence_gate_metrics(
        gates,
        index,
        ontology,
        config.bootstrap,
        baseline_metrics,
        has_baseline=config.baseline is not None,
        ci_methods=ci_methods,
        pool=_bootstrap_pool(client),
    )
    for g, m in zip(gates, decided):
        prev = gate_metrics.get(g.key)  # for the report: a bound's metric carries the value too
        if prev is None or m.ci is not None or (prev.ci is None and prev.value is None):
            gate_metrics[g.key] = m
        canonical[g.key] = gate_key(g, index)
    rule, notes = config.min_rows.rule(), _thin_notes(gates, index, counts)
    # each gate on its own metric: a point value and a bound of one metric are two decisions
    results = [evaluate_gates([g], {g.key: m}, min_rows=rule, notes=notes)[0] for g, m in zip(gates, decided)]
    final: list[GateResult] = []
    for r in results:
        if r.status != "missing" and r.gate.key in ci_methods and r.gate.use != "value":
            r = GateResult(r.gate, r.status, r.observed, f"{r.reason} [{ci_methods[r.gate.key]}]")
        owner, _ = index.owner(r.gate.metric)
        if owner is not None and owner.family in over_budget:
            r = GateResult(r.gate, "missing", r.observed, over_budget[owner.family])
        elif owner is not None and id(owner.ev) in no_gold_over:
            r = GateResult(r.gate, "missing", r.observed, no_gold_over[id(owner.ev)])
        final.append(r)
    final.extend(budget_results)
    pin = None
    if config.testset_manifest:
        from kg_rageval.audit.testset_pin import check_testset_pin, pin_gate

        pin = check_testset_pin(
            config.path(config.testset_manifest),
            view,  # held: the list; streamed: the records file read again in chunks
            doc=inputs.get("testset_manifest"),
            records_file=config.records,
            source=config.source,
        )
        final.append(pin_gate(pin))
    if not gates:
        final.append(
            GateResult(
                Gate("gates_configured", ">=", 1.0),
                "missing",
                0.0,
                "missing evidence: the config defines no gates",
            )
        )
    for k, m in gate_metrics.items():  # scoped gates and intervals, under their canonical names
        ck = canonical[k]
        m = Metric(ck, m.value, m.numerator, m.denominator, m.missing, m.ci)
        if ck not in flat or m.ci is not None:
            flat[ck] = m

    tick("gates")
    result = AuditResult(
        config=config,
        ontology=ontology,
        n_records=len(view),
        families=runs,
        metrics=flat,
        gate_results=final,
        counts=counts,
        baseline=baseline,
        testset=pin,
    )
    from kg_rageval.audit import pernode

    result.slices = pernode.slice_breakdowns(runs, config.slices)
    result.drivers = pernode.failure_drivers(final, index, ontology, config)
    if config.report.node_rollup:
        only = (
            None
            if config.report.node_rollup == "all"
            else pernode.shown_nodes(config, ontology, result.drivers)
        )
        result.nodes = pernode.node_rollups(runs, ontology, only)
    from kg_rageval.audit.failing import failing_records

    result.failing = failing_records(
        final,
        index,
        ontology,
        view.lookup(),
        config,
        budget_gates={str(r.gate) for r in budget_results},
        baseline=baseline,
    )
    _drop_record_stats(runs)  # the per-record views the stages shared
    result.coverage = view.coverage(ontology, inputs.get("corpus"), config)
    result.relations = pernode.relation_counts(runs)
    result.exclusions = view.exclusions(runs, ontology, inputs.get("corpus"), config)
    result.category_diagnosis = pernode.category_diagnosis_of(runs, ontology)
    tick("per_node")
    from kg_rageval.audit.manifest import build_manifest

    result.manifest = build_manifest(config, inputs, result)
    tick("manifest")
    result.seconds = time.perf_counter() - t0
    result.timings = timings
    result.chunk_size = view.size if view.streamed else None
    return result


def _bootstrap_pool(client: Any) -> Any:
    """The :class:`~kg_rageval.results.bootstrap_pool.BootstrapPool` of the gates' bootstraps
    with a Dask client (its worker threads' tasks; the same intervals bit for bit), else ``None``."""
    if client is None:
        return None
    from kg_rageval.results.bootstrap_pool import BootstrapPool

    try:
        threads = sum(client.nthreads().values())
    except Exception:  # pragma: no cover - a client without workers
        return None
    return BootstrapPool(client, threads) if threads > 1 else None


def _drop_record_stats(runs: Mapping[str, FamilyRun]) -> None:
    """Free the per-record stat views (:meth:`Evaluation.record_stats`) the audit's stages
    shared, once the last of them is done."""
    for run in runs.values():
        for ev in run.evaluations:
            ev.drop_record_stats()


def _bootstrap_all(index: MetricIndex, flat: dict[str, Metric], config: AuditConfig) -> None:
    b = config.bootstrap
    done: set[int] = set()
    for owners in index.by_name.values():
        for o in owners:
            if id(o.ev) in done:
                continue
            done.add(id(o.ev))
            cis = o.ev.bootstrap(n_resamples=b.n_resamples, level=b.level, seed=b.seed)
            for name, m in list(flat.items()):
                own = index.by_name.get(name)
                if (
                    own
                    and len(own) == 1
                    and own[0].ev is o.ev
                    and cis.get(own[0].metric)
                    and m.value is not None
                ):
                    flat[name] = m.with_ci(cis[own[0].metric])


def _thin_notes(gates: list[Gate], index: MetricIndex, counts: dict[str, Any]) -> dict[str, str]:
    """Per gate key, what a gate on too few rows is read against: the records of the audit its
    family scored, and why it left the others unscored (``no gold ×99``): 1 row of 100 records is
    no pass on what is left."""
    out: dict[str, str] = {}
    for g in gates:
        owner, _ = index.owner(g.metric) if not g.metric.startswith("delta:") else (None, "")
        if owner is None or not counts["families"].get(owner.family):
            continue
        c = counts["families"][owner.family]
        text = f"{owner.family} scored {fmt_count(c['scored_records'])} of {fmt_count(counts['records'])} records"
        if c["unscored_reasons"]:
            text += f" (unscored: {_fmt_reasons(c['unscored_reasons'])})"
        out[g.key] = text
    return out
