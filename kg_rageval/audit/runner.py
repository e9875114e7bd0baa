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
* Exit codes: 0 every gate passes; 1 a gate failed or is missing; 2 invalid inputs or config
  (raised as :class:`~kg_rageval.errors.InputError` before any decision is made).

Metric keys: a family's metric ``m`` is available as ``m`` (when no other family produces the
same name) and always as ``<family>.m``; scoped as ``m[slice:<name>=<value>]`` and
``m[node:<id>]`` (rows whose gold node lies in that node's subtree, each row once); baseline
deltas as ``delta:m``.
"""

from __future__ import annotations

import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import ConfigError, InputError, KgRagevalError
from ..evaluation import Evaluation, Metric
from .config import AuditConfig
from .families import (
    REGISTRY,
    FamilyRun,
    FamilySpec,
    FamilyUnavailable,
    call_family,
    family_inputs,
    has_section,
    load_function,
    normalize_result,
)
from .gates import Gate, GateResult, evaluate_gates, metric_dict


@dataclass
class AuditResult:
    """Everything an audit decided and measured; reports render this object."""

    config: AuditConfig
    ontology: Any
    n_records: int
    families: dict[str, FamilyRun]
    metrics: dict[str, Metric]
    gate_results: list[GateResult]
    slices: dict[str, dict[str, Any]] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    drivers: list[dict[str, Any]] = field(default_factory=list)
    coverage: dict[str, Any] = field(default_factory=dict)
    relations: dict[str, dict[str, int]] = field(default_factory=dict)
    exclusions: dict[str, Any] = field(default_factory=dict)
    baseline: dict[str, Any] | None = None
    counts: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return bool(self.gate_results) and all(r.status == "pass" for r in self.gate_results)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def status_counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "missing": 0}
        for r in self.gate_results:
            out[r.status] += 1
        return out


# ---------------------------------------------------------------------- inputs
def _require_file(path: Path, what: str, key: str, config: AuditConfig) -> None:
    """An input file named by the config must exist: the error names the config key."""
    if not path.exists():
        raise InputError(f"{what} does not exist", source=config.source,
                         location=f"{key} (resolved to {path})")


def load_inputs(config: AuditConfig) -> dict[str, Any]:
    """Ontology, records, corpus, spec and judgments named by the config (InputError on any
    unreadable input: exit code 2)."""
    from ..ontology import load_ontology
    from ..records import read_records

    opath = config.path(config.ontology.path)
    _require_file(opath, "ontology file", f"ontology.path = {config.ontology.path!r}", config)
    ontology = load_ontology(opath, format=config.ontology.format, **config.ontology.options)
    rpath = config.path(config.records)
    _require_file(rpath, "records file", f"records = {config.records!r}", config)
    if rpath.name.endswith((".otlp.json", ".otlp.jsonl")):  # traces: one record per trace (docs/system.md)
        from ..system.otlp import import_otlp

        records = import_otlp(rpath)
    else:
        records = read_records(rpath)
    corpus = None
    if config.corpus:
        cpath = config.path(config.corpus)
        _require_file(cpath, "corpus file", f"corpus = {config.corpus!r}", config)
        corpus = read_records(cpath)
    spec = None
    if config.spec:
        spec = _read_spec(config.path(config.spec), config)
    judgments = None
    if config.judgments:
        jpath = config.path(config.judgments)
        if not jpath.exists():
            raise InputError("judgments file does not exist", source=config.source,
                             location=f"judgments = {config.judgments!r}")
        judgments = read_records(jpath)
    paths = {"records": rpath, "corpus": config.path(config.corpus), "spec": config.path(config.spec),
             "judgments": config.path(config.judgments)}
    return {"ontology": ontology, "records": records, "corpus": corpus, "spec": spec,
            "judgments": judgments, "paths": {k: v for k, v in paths.items() if v is not None}}


def _read_spec(path: Path, config: AuditConfig) -> Any:
    if not path.exists():
        raise InputError("schema spec file does not exist", source=config.source,
                         location=f"spec = {config.spec!r} (resolved to {path})")
    from ..records import read_structured

    return read_structured(path, what="schema spec")[0]


# ---------------------------------------------------------------------- families
def run_families(config: AuditConfig, inputs: Mapping[str, Any], records: list[dict],
                 *, progress: bool = True) -> dict[str, FamilyRun]:
    """Run every configured family (all registered ones when ``families`` is empty)."""
    names = list(config.families) or list(REGISTRY)
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ConfigError(f"families: unknown famil{'ies' if len(unknown) > 1 else 'y'} "
                          f"{', '.join(map(repr, unknown))}; known: {', '.join(sorted(REGISTRY))}",
                          source=config.source)
    runs: dict[str, FamilyRun] = {}
    bar = _progress(names, "families", progress)
    for name in bar:
        spec = REGISTRY[name]
        opts = dict(config.families.get(name) or {})
        runs[name] = _run_one(spec, inputs, records, opts)
    return runs


def _run_one(spec: FamilySpec, inputs: Mapping[str, Any], records: list[dict],
             opts: dict[str, Any]) -> FamilyRun:
    n_sec = sum(1 for r in records if has_section(r, spec))
    run = FamilyRun(spec.name, "ran", n_with_section=n_sec, options=opts)
    missing_inputs = [i for i in spec.requires if inputs.get(i) is None]
    if missing_inputs:
        run.status, run.reason = "missing_input", f"needs {', '.join(missing_inputs)} (not in config)"
        return run
    if n_sec == 0:
        run.status = "no_evidence"
        run.reason = f"no record has a {' or '.join(repr(s) for s in spec.sections)} section"
        return run
    try:
        fn = load_function(spec)
    except FamilyUnavailable as exc:
        run.status, run.reason = "unavailable", str(exc)
        return run
    t0 = time.perf_counter()
    try:
        finputs = family_inputs(spec, inputs)
        result = call_family(fn, inputs["ontology"], records, finputs, spec, opts)
    except KgRagevalError:
        raise  # invalid input: exit 2
    except TypeError as exc:
        if "unexpected keyword" in str(exc) or "got an unexpected" in str(exc):
            raise ConfigError(f"families.{spec.name}: {exc}") from None
        run.status, run.reason = "error", _short_tb(exc)
        return run
    except Exception as exc:  # a family bug: report it, its gates are missing
        run.status, run.reason = "error", _short_tb(exc)
        return run
    run.seconds = time.perf_counter() - t0
    run.evaluations = normalize_result(result)
    if not run.evaluations:
        run.status, run.reason = "error", f"{spec.target} returned no Evaluation ({type(result).__name__})"
    return run


def _short_tb(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _progress(items: Iterable, desc: str, enabled: bool):
    if not enabled:
        return items
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return items
    return tqdm(list(items), desc=desc, file=sys.stderr, leave=False, disable=not enabled)


# ---------------------------------------------------------------------- evaluation helpers
def node_mask(ev: Evaluation, ontology: Any, node_id: str, key: str = "gold_node") -> np.ndarray | None:
    """Rows whose ``key`` node lies in ``node_id``'s subtree; ``None`` when ``ev`` has no such key."""
    if key not in ev.keys:
        return None
    idx = ev.node_indices(ontology, key)
    desc = ontology.descendant_indices(ontology.index(node_id), include_self=True)
    return np.isin(idx, desc) & (idx >= 0)


def slice_mask(ev: Evaluation, name: str, value: str) -> np.ndarray | None:
    col = ev.keys.get(f"slice:{name}")
    if col is None:
        return None
    return np.asarray([v is not None and str(v) == value for v in col], dtype=bool)


@dataclass
class _Owner:
    family: str
    ev: Evaluation
    metric: str


class MetricIndex:
    """Which evaluation produces which metric name, with ambiguity tracking."""

    def __init__(self, runs: Mapping[str, FamilyRun]):
        self.runs = runs
        self.by_name: dict[str, list[_Owner]] = {}
        self.totals: dict[tuple[int, str], Metric] = {}
        for fam, run in runs.items():
            for ev in run.evaluations:
                ms = ev.metrics()
                for m, val in ms.items():
                    self.totals[(id(ev), m)] = val
                    o = _Owner(fam, ev, m)
                    self.by_name.setdefault(m, []).append(o)
                    self.by_name.setdefault(f"{fam}.{m}", []).append(o)
                    if ev.family.name != fam:  # a family returning several evaluations
                        self.by_name.setdefault(f"{fam}.{ev.family.name}.{m}", []).append(o)

    def owner(self, name: str) -> tuple[_Owner | None, str]:
        owners = self.by_name.get(name)
        if owners is None:
            return None, self._absent_reason(name)
        if len(owners) > 1:
            names = sorted({f"{o.family}.{o.metric}" if len(self.by_name.get(f"{o.family}.{o.metric}", [])) == 1
                            else f"{o.family}.{o.ev.family.name}.{o.metric}" for o in owners})
            return None, f"ambiguous metric {name!r}: produced by {', '.join(names)}; name one"
        return owners[0], ""

    def _absent_reason(self, name: str) -> str:
        fam_prefix = name.split(".", 1)[0] if "." in name else None
        not_run = {f: r for f, r in self.runs.items() if r.status != "ran"}
        if fam_prefix in self.runs and self.runs[fam_prefix].status != "ran":
            r = self.runs[fam_prefix]
            return f"family {fam_prefix!r} did not run ({r.status}: {r.reason})"
        if not_run:
            why = ", ".join(f"{f} ({r.status})" for f, r in sorted(not_run.items()))
            return f"no family produced {name!r}; not run: {why} (see the families table)"
        return f"no family produced {name!r}"


def _metric_for_gate(g: Gate, index: MetricIndex, ontology: Any, config: AuditConfig,
                     baseline_metrics: Mapping[str, Metric]) -> Metric:
    """The Metric a gate is decided on (value=None + reason when evidence is missing)."""
    if g.metric.startswith("delta:"):
        m = baseline_metrics.get(g.metric if not g.scope else g.key)
        if m is None:
            why = "no baseline configured" if config.baseline is None else f"no paired delta for {g.metric!r}"
            return Metric(g.key, None, missing=why)
        return m
    owner, why = index.owner(g.metric)
    if owner is None:
        return Metric(g.key, None, missing=why)
    ev = owner.ev
    if g.scope is None:
        m = index.totals[(id(ev), owner.metric)]
    else:
        kind, _, rest = g.scope.partition(":")
        if kind == "slice":
            name, _, value = rest.partition("=")
            mask = slice_mask(ev, name, value)
            if mask is None:
                return Metric(g.key, None, missing=f"family {owner.family!r} has no slice {name!r}")
        else:
            if rest not in ontology:
                return Metric(g.key, None, missing=f"node {rest!r} is not in the ontology")
            mask = node_mask(ev, ontology, rest)
            if mask is None:
                return Metric(g.key, None, missing=f"family {owner.family!r} attaches no gold node to its rows")
        if not mask.any():
            return Metric(g.key, None, missing=f"no {owner.family} rows in scope {g.scope}")
        ev = ev.subset(mask)
        m = ev.metrics().get(owner.metric, Metric(owner.metric, None, missing="not produced on this scope"))
    if g.use != "value" and m.value is not None:
        b = config.bootstrap
        ci = ev.bootstrap(n_resamples=b.n_resamples, level=b.level, seed=b.seed, metrics=[owner.metric])
        m = m.with_ci(ci.get(owner.metric))
    return Metric(g.key, m.value, m.numerator, m.denominator, m.missing, m.ci)


# ---------------------------------------------------------------------- the audit
def run_audit(config: AuditConfig, *, progress: bool = True, inputs: Mapping[str, Any] | None = None
              ) -> AuditResult:
    """Run the whole audit described by ``config`` and decide its gates."""
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    lap = [t0]

    def tick(name: str) -> None:
        now = time.perf_counter()
        timings[name] = round(now - lap[0], 4)
        lap[0] = now

    gates = config.all_gates()
    inputs = dict(inputs) if inputs is not None else load_inputs(config)
    ontology = inputs["ontology"]
    records = inputs["records"]
    _check_gate_nodes(gates, ontology, config)
    tick("load_inputs")
    runs = run_families(config, inputs, records, progress=progress)
    tick("families")
    index = MetricIndex(runs)
    _check_gate_metrics(gates, index, config)

    # missing-run budget per family
    budget_results: list[GateResult] = []
    over_budget: dict[str, str] = {}
    counts: dict[str, Any] = {"records": len(records), "families": {}}
    for fam, run in runs.items():
        c = _family_counts(run, records, config.missing_runs.reasons, config.missing_runs.metrics)
        counts["families"][fam] = c
        if run.status != "ran" or run.n_with_section == 0:
            continue
        rate = c["missing_runs"] / run.n_with_section
        g = Gate(f"{fam}.missing_run_rate", "<=", float(config.missing_runs.budget))
        ok = rate <= config.missing_runs.budget + 1e-12
        detail = dict(c["unscored_reasons"])
        detail.update({f"counted in {k}": v for k, v in c["missing_in_metrics"].items()})
        reason = (f"{c['missing_runs']}/{run.n_with_section} records with a {fam} section are missing runs "
                  f"({rate:.2%}; budget {config.missing_runs.budget:.2%})"
                  + (f"; unscored or invalid: {_fmt_reasons(detail)}" if detail else ""))
        budget_results.append(GateResult(g, "pass" if ok else "fail", rate, reason))
        if not ok:
            over_budget[fam] = f"missing evidence: {fam} missing runs above budget ({reason})"

    baseline = None
    baseline_metrics: dict[str, Metric] = {}
    if config.baseline is not None:
        baseline, baseline_metrics = _run_baseline(config, inputs, runs, progress)
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
    for g in _progress(gates, "gates", progress and len(gates) > 20):
        gate_metrics[g.key] = _metric_for_gate(g, index, ontology, config, baseline_metrics)
    results = evaluate_gates(gates, gate_metrics)
    final: list[GateResult] = []
    for r in results:
        owner, _ = index.owner(r.gate.metric)
        if owner is not None and owner.family in over_budget:
            r = GateResult(r.gate, "missing", r.observed, over_budget[owner.family])
        final.append(r)
    final.extend(budget_results)
    if not gates:
        final.append(GateResult(Gate("gates_configured", ">=", 1.0), "missing", 0.0,
                                "missing evidence: the config defines no gates"))
    for k, m in gate_metrics.items():
        flat.setdefault(k, m)
        if m.ci is not None:
            flat[k] = m

    tick("gates")
    result = AuditResult(
        config=config, ontology=ontology, n_records=len(records), families=runs, metrics=flat,
        gate_results=final, counts=counts, baseline=baseline,
    )
    from . import pernode

    result.slices = pernode.slice_breakdowns(runs, config.slices)
    if config.report.node_rollup:
        result.nodes = pernode.node_rollups(runs, ontology)
    result.drivers = pernode.failure_drivers(final, index, ontology, config)
    result.coverage = pernode.coverage_matrix(records, ontology, inputs.get("corpus"), config.coverage)
    result.relations = pernode.relation_counts(runs)
    result.exclusions = pernode.exclusion_attribution(runs, records, inputs.get("corpus"), ontology,
                                                      branch_of=pernode.make_branch_of(ontology, config.coverage))
    tick("per_node")
    from .manifest import build_manifest

    result.manifest = build_manifest(config, inputs, result)
    tick("manifest")
    result.seconds = time.perf_counter() - t0
    result.timings = timings
    return result


def _check_gate_nodes(gates: Iterable[Gate], ontology: Any, config: AuditConfig) -> None:
    """A node-scoped gate on an id the ontology lacks is an invalid config (exit 2), not
    missing evidence: it would fail every audit for a typo."""
    bad = []
    for g in gates:
        if g.scope and g.scope.startswith("node:"):
            node = g.scope[len("node:"):]
            if node not in ontology:
                hint = ontology._suggest(node) if hasattr(ontology, "_suggest") else None
                bad.append(f"{g}: node {node!r} is not in the ontology" + (f" (did you mean {hint!r}?)" if hint else ""))
    if bad:
        raise ConfigError(f"{len(bad)} gate{'s' if len(bad) > 1 else ''} on unknown ontology nodes:\n  "
                          + "\n  ".join(bad), source=config.source)


def _check_gate_metrics(gates: Iterable[Gate], index: MetricIndex, config: AuditConfig) -> None:
    """A gate on a metric name that no family can produce is an invalid config (exit 2), not
    missing evidence. Decided only where it is knowable: the gate names its family
    (``fam.metric``) and that family ran. A bare name stays ``missing`` when nothing produces it
    (its family may simply not be configured, which is missing evidence)."""
    import difflib

    bad = []
    for g in gates:
        name = g.metric
        if name.startswith("delta:") or name in index.by_name:
            continue
        fam = name.split(".", 1)[0] if "." in name else None
        if fam in index.runs and index.runs[fam].status == "ran":
            close = difflib.get_close_matches(name, list(index.by_name), n=3)
            hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
            bad.append(f"{g}: no family produces metric {name!r}{hint}")
    if bad:
        raise ConfigError(f"{len(bad)} gate{'s' if len(bad) > 1 else ''} on unknown metrics:\n  "
                          + "\n  ".join(bad), source=config.source)


def _fmt_reasons(reasons: Mapping[str, int]) -> str:
    return ", ".join(f"{k} ×{v}" for k, v in reasons.items())


def _family_counts(run: FamilyRun, records: list[dict], patterns: Iterable[str] = (),
                   metric_names: Iterable[str] = ()) -> dict[str, Any]:
    """Scored, unscored (by reason) and missing-run counts of one family.

    A missing run is a record that carries the family's section and either was scored by none
    of the family's evaluations and left unscored for a reason matching one of ``patterns``, or
    is counted in the numerator of one of the family's ``metric_names`` (e.g. retrieval's
    ``missing_run_rate``: a missing run scored as an empty run; generation's
    ``invalid_judgment_rate``). The total is capped at the records with the section."""
    pats = [p.lower() for p in patterns]
    unscored_reasons: dict[str, int] = {}
    missing_ids: set[str] = set()
    anonymous = 0
    scored: set[str] = set()
    for ev in run.evaluations:
        for u in ev.unscored:
            reason = str(u.get("reason", "unscored"))
            unscored_reasons[reason] = unscored_reasons.get(reason, 0) + 1
            if not any(p in reason.lower() for p in pats):
                continue
            rid = u.get("record_id", u.get("id"))
            if rid is not None:
                missing_ids.add(str(rid))
            else:
                anonymous += 1
        scored.update(str(x) for x in ev.record_ids.tolist())
    in_metrics: dict[str, float] = {}
    for ev in run.evaluations:
        ms = ev.metrics()
        for name in metric_names:
            m = ms.get(name)
            if m is not None and m.numerator:
                in_metrics[name] = in_metrics.get(name, 0.0) + float(m.numerator)
    spec = REGISTRY.get(run.name)
    with_sec = {r["id"] for r in records if spec is None or has_section(r, spec)}
    missing = min(len((missing_ids - scored) & with_sec) + anonymous + int(round(sum(in_metrics.values()))),
                  len(with_sec))
    return {
        "status": run.status,
        "reason": run.reason,
        "with_section": run.n_with_section,
        "scored_records": len(scored),
        "missing_runs": missing,
        "unscored_reasons": dict(sorted(unscored_reasons.items())),
        "missing_in_metrics": {k: int(round(v)) for k, v in sorted(in_metrics.items())},
        "rows": sum(len(ev) for ev in run.evaluations),
        "seconds": round(run.seconds, 4),
        "versions": run.versions,
    }


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
                if own and len(own) == 1 and own[0].ev is o.ev and cis.get(own[0].metric) and m.value is not None:
                    flat[name] = m.with_ci(cis[own[0].metric])


# ---------------------------------------------------------------------- baseline
def _delta_wanted(fam: str, ev: Evaluation, metric: str, delta_gates: set[str]) -> bool:
    names = {metric, f"{fam}.{metric}", f"{fam}.{ev.family.name}.{metric}"}
    return bool(names & delta_gates)


def _run_baseline(config: AuditConfig, inputs: Mapping[str, Any], runs: Mapping[str, FamilyRun],
                  progress: bool) -> tuple[dict[str, Any], dict[str, Metric]]:
    """Paired comparison with a baseline run on the same records.

    For each evaluation the candidate and baseline per-record stats are aligned on the record
    ids both scored; ``delta:m`` = m(candidate) − m(baseline) over those records. For the
    evaluations owning a metric with a delta gate (all with ``bootstrap.always``) a paired
    percentile bootstrap (the same record draws for both systems) gives the intervals, and the
    per-query deltas of the gated metrics are listed (worst first, 50 at most)."""
    from ..records import read_records

    bpath = config.path(config.baseline.records)
    if not bpath.exists():
        raise InputError("baseline records file does not exist", source=config.source,
                         location=f"baseline.records = {config.baseline.records!r}")
    base_records = read_records(bpath)
    binputs = dict(inputs)
    binputs["records"] = base_records
    bcfg = config.model_copy()
    bcfg._base_dir, bcfg._source = config._base_dir, config._source
    bruns = run_families(bcfg, binputs, base_records, progress=progress)
    b = config.bootstrap
    delta_gates = {g.metric[len("delta:"):] for g in config.all_gates() if g.metric.startswith("delta:")}
    deltas: dict[str, Metric] = {}
    pairs: dict[str, dict[str, Any]] = {}
    primary: list[str] = []
    per_query: dict[str, list[dict[str, Any]]] = {}
    seen_names: dict[str, int] = {}
    for fam, run in runs.items():
        brun = bruns.get(fam)
        if brun is None or run.status != "ran" or brun.status != "ran":
            continue
        for ev, bev in zip(run.evaluations, brun.evaluations):
            if ev.family.qualified_name != bev.family.qualified_name:
                continue
            ids_c, st_c = ev.per_record_stats()
            ids_b, st_b = bev.per_record_stats()
            common, ic, ib = np.intersect1d(ids_c, ids_b, return_indices=True)
            names = list(st_c)
            if len(common) == 0:
                continue
            mc = np.stack([st_c[k][ic] for k in names], axis=1)
            mb = np.stack([st_b[k][ib] for k in names], axis=1)
            fin = ev.family.finalize
            tc = fin(dict(zip(names, mc.sum(0).tolist())))
            tb = fin(dict(zip(names, mb.sum(0).tolist())))
            rng = np.random.default_rng(b.seed)
            n = len(common)
            samples: dict[str, list[float]] = {m: [] for m in tc}
            wanted = [m for m in tc if _delta_wanted(fam, ev, m, delta_gates)]
            resamples = b.n_resamples if (wanted or b.always) else 0
            for _ in range(resamples):
                w = np.bincount(rng.integers(0, n, n), minlength=n).astype(float)
                rc = fin(dict(zip(names, (w @ mc).tolist())))
                rb = fin(dict(zip(names, (w @ mb).tolist())))
                for m in tc:
                    if rc[m].value is not None and rb.get(m) is not None and rb[m].value is not None:
                        samples[m].append(rc[m].value - rb[m].value)
            alpha = (1 - b.level) / 2
            for m in tc:
                key = f"delta:{m}"
                seen_names[key] = seen_names.get(key, 0) + 1
                vc, vb = tc[m].value, tb.get(m).value if tb.get(m) else None
                if vc is None or vb is None:
                    d = Metric(key, None, missing=f"{m} undefined for "
                               f"{'candidate' if vc is None else 'baseline'} on {n} paired records")
                else:
                    s = samples[m]
                    ci = None
                    if resamples and len(s) * 2 >= resamples:
                        lo, hi = np.quantile(np.asarray(s), [alpha, 1 - alpha])
                        ci = (float(lo), float(hi))
                    d = Metric(key, float(vc - vb), None, None, None, ci)
                aliases = [key, f"delta:{fam}.{m}"]
                if ev.family.name != fam:
                    aliases.append(f"delta:{fam}.{ev.family.name}.{m}")
                primary.append(aliases[1])
                for a in aliases:
                    deltas[a] = d
                    pairs[a] = {"candidate": vc, "baseline": vb, "paired_records": n}
            # per-query deltas (the report's regressions table) of the metrics with a delta gate:
            # one finalize per record and system, every wanted metric read from it
            if wanted:
                rows_of: dict[str, list[dict[str, Any]]] = {m: [] for m in wanted}
                for j, rid in enumerate(common.tolist()):
                    fc = fin(dict(zip(names, mc[j].tolist())))
                    fb = fin(dict(zip(names, mb[j].tolist())))
                    for m in wanted:
                        c1, b1 = fc.get(m), fb.get(m)
                        if c1 is None or b1 is None or c1.value is None or b1.value is None:
                            continue
                        if c1.value != b1.value:
                            rows_of[m].append({"record_id": rid, "candidate": c1.value, "baseline": b1.value,
                                               "delta": c1.value - b1.value})
                for m, rows in rows_of.items():
                    rows.sort(key=lambda r: (r["delta"], r["record_id"]))
                    per_query[f"{fam}.{m}"] = rows[:50]
    for key, cnt in seen_names.items():
        if cnt > 1:
            deltas[key] = Metric(key, None, missing=f"ambiguous: {cnt} families produce it; use delta:<family>.<metric>")
            pairs.pop(key, None)
    info = {
        "records": str(bpath),
        "n_records": len(base_records),
        "families": {f: r.status for f, r in bruns.items()},
        "deltas": {k: {**metric_dict(v), **pairs.get(k, {})} for k, v in sorted(deltas.items())},
        "primary": sorted(set(primary)),
        "worst_queries": per_query,
    }
    return info, deltas
