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
  (raised as :class:`~kg_rageval.base.errors.InputError` before any decision is made).

Metric names: every number has one canonical name (:class:`~kg_rageval.contract.MetricName`):
``<family>.<metric>``, scoped ``<family>.<metric>[slice:<name>=<value>]`` /
``[node:<id>]`` (rows whose gold node lies in that node's subtree, each row once), baseline
deltas ``delta:<family>.<metric>``. Gates may use the accepted aliases (a bare name only one
configured family declares, ir_measures names); they are resolved through the metric registry
before any family runs, so a misspelt metric, slice value or node is exit 2 with a "did you
mean" whether or not its family ran.
"""

from __future__ import annotations

import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from kg_rageval.scoring import REGISTRY, FamilyUnavailable, Scorer, get_scorer, resolve_metric
from kg_rageval.contract import MetricName, did_you_mean
from kg_rageval.base.errors import ConfigError, InputError, KgRagevalError
from kg_rageval.results.evaluation import AlignedRecords, Evaluation, Metric, bootstrap_weights, percentile_interval
from kg_rageval.results.forms import metric_values, replicate_values
from kg_rageval.audit.config import AuditConfig
from kg_rageval.audit.families import FamilyRun
from kg_rageval.audit.evidence import MetricIndex, gate_key, metric_for_gate, node_mask, slice_mask  # noqa: F401 (re-exported)
from kg_rageval.audit.evidence import gate_metrics as evidence_gate_metrics
from kg_rageval.audit.gates import Gate, GateResult, evaluate_gates, metric_dict
from kg_rageval.audit.result import AuditResult


# ---------------------------------------------------------------------- inputs
def _require_file(path: Path, what: str, key: str, config: AuditConfig) -> None:
    """An input file named by the config must exist: the error names the config key."""
    if not path.exists():
        raise InputError(f"{what} does not exist", source=config.source,
                         location=f"{key} (resolved to {path})")


def is_graph_uri(path: str) -> bool:
    """Whether an ontology path is a graph database URI (the ``neo4j`` loader's)."""
    from kg_rageval.ontology.loaders import detect_format

    return "://" in path and detect_format(path) == "neo4j"


def config_mapping(config: AuditConfig, mapping: Any, key: str) -> Any:
    """A graph ``mapping`` named in the config: a mapping file path resolved against the
    config's directory (it must exist); presets and dicts unchanged."""
    from kg_rageval.ontology.loaders.neo4j import MAPPING_FILE_SUFFIXES, PRESETS

    if isinstance(mapping, str) and mapping not in PRESETS and mapping.lower().endswith(MAPPING_FILE_SUFFIXES):
        mpath = config.path(mapping)
        _require_file(mpath, "graph mapping file", f"{key} = {mapping!r}", config)
        return str(mpath)
    return mapping


def ontology_options(config: AuditConfig) -> dict[str, Any]:
    """The loader options of ``config.ontology`` (values checked, errors naming
    ``ontology.options.<key>``), a mapping file resolved against the config."""
    from kg_rageval.ontology.loaders.options import check_option_values

    try:
        options = check_option_values(config.ontology.options, where="ontology.options")
    except ConfigError as exc:
        raise ConfigError(str(exc), source=config.source) from None
    if "mapping" in options:
        options["mapping"] = config_mapping(config, options["mapping"], "ontology.options.mapping")
    return options


def load_config_ontology(config: AuditConfig) -> Any:
    """The ontology ``config.ontology`` names: a file relative to the config, or a graph
    database URI (format ``neo4j`` unless given) with its mapping; loader options checked
    against the loader (an unknown one is exit 2 naming it)."""
    from kg_rageval.ontology import load_ontology

    raw = config.ontology.path
    options = ontology_options(config)
    if is_graph_uri(raw):
        return load_ontology(raw, format=config.ontology.format or "neo4j", **options)
    opath = config.path(raw)
    _require_file(opath, "ontology file", f"ontology.path = {raw!r}", config)
    return load_ontology(opath, format=config.ontology.format, **options)


def load_inputs(config: AuditConfig, *, records: bool = True) -> dict[str, Any]:
    """Ontology, records, corpus, spec and judgments named by the config (InputError on any
    unreadable input: exit code 2). ``records=False``: the records file is checked to exist but
    not read (a streamed audit reads it in chunks; ``inputs["records"]`` is ``None``)."""
    from kg_rageval.records import read_records

    ontology = load_config_ontology(config)
    rpath = config.path(config.records)
    _require_file(rpath, "records file", f"records = {config.records!r}", config)
    held: list[dict] | None = None
    if not records:
        pass
    elif rpath.name.endswith((".otlp.json", ".otlp.jsonl")):  # traces: one record per trace (docs/system.md)
        from kg_rageval.families.system.otlp import import_otlp

        held = import_otlp(rpath)
    else:
        held = read_records(rpath)
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
             "judgments": config.path(config.judgments), "qrels": config.path(config.qrels),
             "run": config.path(config.run), "shapes": config.path(config.shapes)}
    return {"ontology": ontology, "records": held, "corpus": corpus, "spec": spec,
            "judgments": judgments, "paths": {k: v for k, v in paths.items() if v is not None}}


def _read_spec(path: Path, config: AuditConfig) -> Any:
    if not path.exists():
        raise InputError("schema spec file does not exist", source=config.source,
                         location=f"spec = {config.spec!r} (resolved to {path})")
    from kg_rageval.records import read_structured

    return read_structured(path, what="schema spec")[0]


# ---------------------------------------------------------------------- families
def family_options(config: AuditConfig, name: str) -> dict[str, Any]:
    """The validated options of family ``name`` (declared defaults filled in; path options
    resolved against the config file's directory)."""
    sc = get_scorer(name)
    opts = sc.validate(dict(config.families.get(name) or {}))
    for p in sc.params:
        v = opts.get(p.name)
        if p.kind == "path" and v is not None:
            opts[p.name] = str(config.path(v))
        elif p.kind == "path_list" and v:
            opts[p.name] = tuple(str(config.path(x)) for x in v)
    return opts


def configured_families(config: AuditConfig) -> list[str]:
    """The families the audit runs (all registered ones but the opt-in ones when ``families``
    is empty); an unknown name raises :class:`ConfigError` with a "did you mean"."""
    names = list(config.families) or [n for n, sc in REGISTRY.items() if not sc.opt_in]
    for n in names:
        try:
            get_scorer(n)
        except ConfigError as exc:
            raise ConfigError(f"families: {exc}", source=config.source) from None
    return names


def run_families(config: AuditConfig, inputs: Mapping[str, Any], records: list[dict],
                 *, progress: bool = True) -> dict[str, FamilyRun]:
    """Run every configured family (all registered ones but the opt-in ones when ``families``
    is empty)."""
    names = configured_families(config)
    runs: dict[str, FamilyRun] = {}
    bar = _progress(names, "families", progress)
    for name in bar:
        try:
            runs[name] = _run_one(get_scorer(name), inputs, records, family_options(config, name),
                                  dict(config.families.get(name) or {}))
        except ConfigError as exc:
            if exc.source is not None or str(exc).startswith("families."):
                raise
            # an option value the family rejected when it ran (e.g. a judge plugin that does not
            # import: "judge: ..."): name the config key
            raise ConfigError(f"families.{name}.{exc}", source=config.source) from None
    return runs


def _family_input(name: str, inputs: Mapping[str, Any]) -> Any:
    """An input by path when the config named a file (the family reads it with its own
    reader), else the object given to :func:`run_audit` (``inputs=``)."""
    path = (inputs.get("paths") or {}).get(name)
    return path if path is not None else inputs.get(name)


def family_run(spec: Scorer, inputs: Mapping[str, Any], n_sec: int, given: dict[str, Any]) -> FamilyRun:
    """A family's run before it is scored: status ``ran`` (to be scored), or why it is not run
    — ``missing_input`` (a required input not configured), ``no_evidence`` (``n_sec``, the
    records with its section, is 0), ``unavailable`` (its module does not import), decided in
    that order."""
    run = FamilyRun(spec.name, "ran", n_with_section=n_sec, options=given)
    family_in = {i.name: _family_input(i.name, inputs) for i in spec.inputs}
    missing_inputs = [i for i in spec.required_inputs if family_in.get(i) is None]
    if missing_inputs:
        run.status, run.reason = "missing_input", f"needs {', '.join(missing_inputs)} (not in config)"
        return run
    if n_sec == 0 and spec.sections:  # no sections: the evidence is its input files (trec)
        run.status = "no_evidence"
        run.reason = f"no record has a {' or '.join(repr(s) for s in spec.sections)} section"
        return run
    try:
        spec.load()
    except FamilyUnavailable as exc:
        run.status, run.reason = "unavailable", str(exc)
    return run


def bind_family(spec: Scorer, inputs: Mapping[str, Any], opts: dict[str, Any]) -> Any:
    """The family bound to the audit's ontology, inputs and validated options."""
    family_in = {i.name: _family_input(i.name, inputs) for i in spec.inputs}
    return spec.bind(inputs["ontology"], where=f"families.{spec.name}",
                     **{k: v for k, v in family_in.items() if v is not None}, **opts)


def _run_one(spec: Scorer, inputs: Mapping[str, Any], records: list[dict],
             opts: dict[str, Any], given: dict[str, Any]) -> FamilyRun:
    run = family_run(spec, inputs, sum(1 for r in records if spec.has_section(r)), given)
    if run.status != "ran":
        return run
    t0 = time.perf_counter()
    try:
        bound = bind_family(spec, inputs, opts)
        result = bound(records)
    except KgRagevalError:
        raise  # invalid input: exit 2
    except Exception as exc:  # a family bug: report it, its gates are missing
        run.status, run.reason = "error", _short_tb(exc)
        return run
    run.seconds = time.perf_counter() - t0
    run.result = result
    run.evaluations = result.evaluations
    return run


def _run_streamed(config: AuditConfig, size: int, progress: bool, loaded: Any, tick: Any,
                  client: Any = None) -> tuple[dict[str, Any], Any, dict[str, FamilyRun]] | None:
    """Run every configured family on the records file read once in chunks of ``size``
    (:func:`~kg_rageval.scoring.stream_families`; :mod:`.stream`): ``(inputs, records view,
    runs)``, or ``None`` when the audit must hold its records instead — an input other than the
    records that does not load, a family that does not bind, or one that raised on a chunk
    (:class:`~kg_rageval.scoring.StreamFallback`): the held audit then raises the error it
    raises today, in the same order (records first, then gates, then families in config order).
    A reading error of the records file is raised as the held reader raises it. ``client``: a
    ``distributed.Client`` the families' calls on the chunks are made on (the chunks are read
    and accumulated here; :func:`~kg_rageval.scoring.stream_families` with ``client``)."""
    from kg_rageval.audit.stream import StreamedRecords

    try:
        inputs = load_inputs(config, records=False)
        if loaded is not None:
            loaded()
        names = configured_families(config)
        view = StreamedRecords(inputs["paths"]["records"], size, names, inputs["ontology"],
                               inputs.get("corpus"), config)
        bound = _bind_families(config, inputs, names)
    except Exception:  # noqa: BLE001 — the held audit raises it where it raises it
        return None
    tick("load_inputs")
    observers: list[Any] = [view.observe]
    bar = None
    if progress:
        try:
            from tqdm import tqdm

            bar = tqdm(desc="records", unit=" rec", file=sys.stderr, leave=False)
            observers.append(lambda k, chunk: bar.update(len(chunk)))
        except ImportError:  # pragma: no cover
            pass
    try:
        runs = _stream_runs(config, inputs, names, bound, view, tuple(observers), client)
    finally:
        if bar is not None:
            bar.close()
    if runs is None:
        return None
    tick("families")
    return inputs, view, runs


def _bind_families(config: AuditConfig, inputs: Mapping[str, Any], names: list[str]
                   ) -> tuple[dict[str, Any], dict[str, float]]:
    """``({family: bound scorer}, {family: seconds to bind})`` of the families of ``names``
    that will run (their inputs there, their module importing); raises what binding raises."""
    bounds: dict[str, Any] = {}
    bind_seconds: dict[str, float] = {}
    for name in names:
        spec = get_scorer(name)
        if family_run(spec, inputs, 1, {}).status == "ran":
            t0 = time.perf_counter()
            bounds[name] = bind_family(spec, inputs, family_options(config, name))
            bind_seconds[name] = time.perf_counter() - t0
    return bounds, bind_seconds


def _stream_runs(config: AuditConfig, inputs: Mapping[str, Any], names: list[str],
                 bound: tuple[dict[str, Any], dict[str, float]], view: Any, observers: tuple[Any, ...],
                 client: Any) -> dict[str, FamilyRun] | None:
    """Every family of ``names`` run on ``view.path`` read once in chunks
    (:func:`~kg_rageval.scoring.stream_families`; ``view``, a :class:`~.stream.RecordIndex`,
    among the ``observers``), as :func:`run_families` runs them on the held records: ``None``
    when a family cannot be streamed exactly (:class:`~kg_rageval.scoring.StreamFallback`:
    the caller holds the records instead). A reading error of the file propagates."""
    from kg_rageval.scoring import StreamFallback, stream_families

    bounds, bind_seconds = bound
    try:
        streams = stream_families(bounds, view.path, view.size, observers=observers,
                                  section_counts=view.section_counts, client=client,
                                  spill_rows=config.spill_rows)
    except StreamFallback:
        return None
    runs: dict[str, FamilyRun] = {}
    for name in names:
        run = family_run(get_scorer(name), inputs, view.n_with_section[name], dict(config.families.get(name) or {}))
        if run.status == "ran":
            fs = streams[name]
            assert fs.result is not None
            run.result, run.evaluations = fs.result, fs.result.evaluations
            run.seconds = bind_seconds[name] + fs.seconds
        runs[name] = run
    return runs


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


# ---------------------------------------------------------------------- the audit
def run_audit(config: AuditConfig, *, progress: bool = True, inputs: Mapping[str, Any] | None = None,
              client: Any = None) -> AuditResult:
    """Run the whole audit described by ``config`` and decide its gates (with the config's
    ``limits`` in force).

    ``client``: a ``distributed.Client``: when the audit streams its records file, every
    family's call on every chunk runs on its workers (the chunks are read and accumulated
    here, in order; the report is the same as without it, timings aside). A held audit (a
    family not streamable, ``chunk_size = 0``, ``inputs=`` given, or a fallback) runs
    in-process."""
    from kg_rageval.base import limits

    with limits.limits(config.limits), _InputsFrozen() as frozen:
        return _run_audit(config, progress=progress, inputs=inputs, loaded=frozen.freeze, client=client)


class _InputsFrozen:
    """Moves the loaded inputs out of the cyclic garbage collector's reach while the audit runs
    (:func:`gc.freeze`; :func:`gc.unfreeze` on the way out, also on an error). Parsed records
    hold no reference cycles, yet every full collection walks their millions of dicts and
    lists: at 100,000 records that was a second or more of each family's CPU. Nothing is
    frozen when the caller has frozen objects itself (its freeze is left as it was)."""

    def __init__(self) -> None:
        self.active = False

    def __enter__(self) -> "_InputsFrozen":
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


def _run_audit(config: AuditConfig, *, progress: bool, inputs: Mapping[str, Any] | None,
               loaded: Any = None, client: Any = None) -> AuditResult:
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
    got = _run_streamed(config, size, progress, loaded, tick, client) if size is not None else None
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
    stray = sorted(set(config.missing_runs.budgets) - set(runs))
    if stray:
        raise ConfigError(f"missing_runs.budgets: {', '.join(map(repr, stray))} "
                          f"{'is not a family' if len(stray) == 1 else 'are not families'} of this audit "
                          f"(families: {', '.join(sorted(runs))})", source=config.source)
    budget_results: list[GateResult] = []
    over_budget: dict[str, str] = {}
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
        reason = (f"{c['missing_runs']}/{c['family_records']} {fam} records are missing runs "
                  f"({rate:.2%}; budget {budget:.2%})"
                  + (f"; unscored or invalid: {_fmt_reasons(detail)}" if detail else ""))
        budget_results.append(GateResult(g, "pass" if ok else "fail", rate, reason))
        if not ok:
            over_budget[fam] = f"missing evidence: {fam} missing runs above budget ({reason})"

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
    decided = evidence_gate_metrics(gates, index, ontology, config.bootstrap, baseline_metrics,
                                    has_baseline=config.baseline is not None, ci_methods=ci_methods)
    for g, m in zip(gates, decided):
        gate_metrics[g.key] = m
        canonical[g.key] = gate_key(g, index)
    results = evaluate_gates(gates, gate_metrics)
    final: list[GateResult] = []
    for r in results:
        if r.status != "missing" and r.gate.key in ci_methods and r.gate.use != "value":
            r = GateResult(r.gate, r.status, r.observed, f"{r.reason} [{ci_methods[r.gate.key]}]")
        owner, _ = index.owner(r.gate.metric)
        if owner is not None and owner.family in over_budget:
            r = GateResult(r.gate, "missing", r.observed, over_budget[owner.family])
        final.append(r)
    final.extend(budget_results)
    if not gates:
        final.append(GateResult(Gate("gates_configured", ">=", 1.0), "missing", 0.0,
                                "missing evidence: the config defines no gates"))
    for k, m in gate_metrics.items():  # scoped gates and intervals, under their canonical names
        ck = canonical[k]
        m = Metric(ck, m.value, m.numerator, m.denominator, m.missing, m.ci)
        if ck not in flat or m.ci is not None:
            flat[ck] = m

    tick("gates")
    result = AuditResult(
        config=config, ontology=ontology, n_records=len(view), families=runs, metrics=flat,
        gate_results=final, counts=counts, baseline=baseline,
    )
    from kg_rageval.audit import pernode

    result.slices = pernode.slice_breakdowns(runs, config.slices)
    result.drivers = pernode.failure_drivers(final, index, ontology, config)
    if config.report.node_rollup:
        only = None if config.report.node_rollup == "all" else pernode.shown_nodes(config, ontology, result.drivers)
        result.nodes = pernode.node_rollups(runs, ontology, only)
    from kg_rageval.audit.failing import failing_records

    result.failing = failing_records(final, index, ontology, view.lookup(), config,
                                     budget_gates={str(r.gate) for r in budget_results}, baseline=baseline)
    _drop_record_stats(runs)  # the per-record views the stages shared
    result.coverage = view.coverage(ontology, inputs.get("corpus"), config)
    result.relations = pernode.relation_counts(runs)
    result.exclusions = view.exclusions(runs, ontology, inputs.get("corpus"), config)
    tick("per_node")
    from kg_rageval.audit.manifest import build_manifest

    result.manifest = build_manifest(config, inputs, result)
    tick("manifest")
    result.seconds = time.perf_counter() - t0
    result.timings = timings
    result.chunk_size = view.size if view.streamed else None
    return result


def resolve_gates(gates: Iterable[Gate], config: AuditConfig, records: Iterable[dict], ontology: Any,
                  *, slices: Mapping[str, set[str]] | None = None) -> dict[str, MetricName]:
    """Resolve every gate's metric name through the metric registry and check its scope,
    before any family runs (a streamed audit: once the records are read): an unknown metric
    (or one the family options do not produce), an unknown slice name or value, or a node the
    ontology lacks is an invalid config (exit 2) with a "did you mean" — never missing
    evidence, which would fail every audit for a typo. ``slices``: the records' slice values
    (:func:`~kg_rageval.records.slice_values`) when ``records`` are not given.
    Returns ``{gate metric text: MetricName}``."""
    from kg_rageval.records import slice_values

    fams = configured_families(config)
    options = {f: family_options(config, f) for f in fams}
    values = slice_values(records) if slices is None else slices
    names: dict[str, MetricName] = {}
    bad: list[str] = []
    for g in gates:
        try:
            names.setdefault(g.metric, resolve_metric(g.metric, scope=fams, options=options))
        except ConfigError as exc:
            bad.append(f"{g}: {exc}")
            continue
        if not g.scope:
            continue
        kind, _, rest = g.scope.partition(":")
        if kind == "node":
            node = rest.strip()
            if node not in ontology:
                hint = ontology.suggest(node)
                bad.append(f"{g}: node {node!r} is not in the ontology" + (f" ({hint})" if hint else ""))
        else:
            name, _, value = rest.partition("=")
            name, value = name.strip(), value.strip()
            if name not in values:
                bad.append(f"{g}: no record has the slice {name!r}{did_you_mean(name, values)}"
                           + (f"; slices: {', '.join(sorted(values))}" if values else "; the records have no slices"))
            elif value not in values[name]:
                known = sorted(values[name])
                bad.append(f"{g}: no record has {name}={value!r}{did_you_mean(value, known)}; values: "
                           + ", ".join(known[:20]) + (" ..." if len(known) > 20 else ""))
    if bad:
        raise ConfigError(f"{len(bad)} invalid gate{'s' if len(bad) > 1 else ''}:\n  " + "\n  ".join(bad),
                          source=config.source)
    return names


def _check_gate_metrics(gates: Iterable[Gate], index: MetricIndex, config: AuditConfig) -> None:
    """A gate on a metric name that no family can produce is an invalid config (exit 2), not
    missing evidence. Decided only where it is knowable: the gate names its family
    (``fam.metric``) and that family ran. A bare name stays ``missing`` when nothing produces it
    (its family may simply not be configured, which is missing evidence)."""
    import difflib

    bad = []
    for g in gates:
        name = g.metric
        mn = index.name_of(name)
        if mn.delta or mn.qualified in index.by_name or (mn.family is None and mn.metric in index.bare):
            continue
        fam = mn.family
        if fam is not None and fam in index.runs and index.runs[fam].status == "ran" and not REGISTRY[fam].metrics:
            close = difflib.get_close_matches(name, list(index.by_name), n=3)
            hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
            bad.append(f"{g}: no family produces metric {name!r}{hint}")
    if bad:
        raise ConfigError(f"{len(bad)} gate{'s' if len(bad) > 1 else ''} on unknown metrics:\n  "
                          + "\n  ".join(bad), source=config.source)


def _fmt_reasons(reasons: Mapping[str, int]) -> str:
    return ", ".join(f"{k} ×{v}" for k, v in reasons.items())


def _family_counts(run: FamilyRun, records: Any, patterns: Iterable[str] = (),
                   metric_names: Iterable[str] = ()) -> dict[str, Any]:
    """Scored, unscored (by reason and code) and missing-run counts of one family.

    A missing run is a record of the family that **any** of its evaluations reports missing —
    one evaluation scoring it does not hide another's missing run:

    * unscored with a reason *code* in :data:`~kg_rageval.records.MISSING_RUN_CODES`
      (``missing_prediction``, ``timeout``, ``invalid_output``): the family decides, the reason
      text is never matched;
    * scored as an empty prediction: its per-record ``n_missing_run`` stat is positive
      (hierarchy, linking, retrieval, generation correctness and refusal);
    * only for unscored entries without a code (a family written before codes): a reason
      equal to one of ``patterns`` (``missing_runs.reasons``; case-insensitive, never a
      substring match);
    * counted in the numerator of one of ``metric_names`` (``invalid_judgment_rate``) of an
      evaluation without an ``n_missing_run`` stat (these have no record ids).

    The family's records are those carrying its section plus every record it reports missing;
    the missing-run rate is missing runs / family records. ``records``: the audit's records
    (:class:`~.stream.HeldRecords` or :class:`~.stream.StreamedRecords`; a list is taken as held)."""
    from kg_rageval.records import MISSING_RUN_CODES

    codes = {c.value if hasattr(c, "value") else str(c) for c in MISSING_RUN_CODES}
    pats = {p.strip().lower() for p in patterns}
    unscored_reasons: dict[str, int] = {}
    unscored_codes: dict[str, int] = {}
    missing_ids: set[str] = set()
    anonymous = 0
    scored: set[str] = set()
    scored_empty = 0
    in_metrics: dict[str, float] = {}
    for ev in run.evaluations:
        for u in ev.unscored:
            reason = str(u.get("reason", "unscored"))
            unscored_reasons[reason] = unscored_reasons.get(reason, 0) + 1
            code = u.get("code")
            if code is not None:
                unscored_codes[str(code)] = unscored_codes.get(str(code), 0) + 1
                if str(code) not in codes:
                    continue
            elif reason.strip().lower() not in pats:  # exact reasons, never substrings
                continue
            rid = u.get("record_id", u.get("id"))
            if rid is not None:
                missing_ids.add(str(rid))
            else:
                anonymous += 1
        scored.update(map(str, ev.record_ids.tolist()))
        if "n_missing_run" in ev.stats:
            empty = _positive_records(ev, "n_missing_run")
            scored_empty += len(empty)
            missing_ids.update(str(x) for x in empty)
            continue
        ms = ev.metrics()
        for name in metric_names:
            m = ms.get(name)
            if m is not None and m.numerator:
                in_metrics[name] = in_metrics.get(name, 0.0) + float(m.numerator)
    if isinstance(records, list):
        from kg_rageval.audit.stream import HeldRecords

        records = HeldRecords(records)
    with_sec = records.with_section(run.name)
    family_records = with_sec | missing_ids
    missing = min(len(missing_ids) + anonymous + int(round(sum(in_metrics.values()))), len(family_records))
    return {
        "status": run.status,
        "reason": run.reason,
        "with_section": run.n_with_section,
        "family_records": len(family_records),
        "scored_records": len(scored),
        "missing_runs": missing,
        "scored_as_empty": scored_empty,
        "unscored_reasons": dict(sorted(unscored_reasons.items())),
        "unscored_codes": dict(sorted(unscored_codes.items())),
        "missing_in_metrics": {k: int(round(v)) for k, v in sorted(in_metrics.items())},
        "rows": sum(len(ev) for ev in run.evaluations),
        "seconds": round(run.seconds, 4),
        "versions": run.versions,
    }


def _positive_records(ev: Evaluation, stat: str) -> list[str]:
    """The ids (sorted) of the records whose ``stat`` summed over their rows is positive — the
    records ``ev.per_record_stats()`` gives a positive ``stat``, from only the rows where it is
    not zero (the others add nothing to a record's sum): no sort of every record id."""
    col = np.asarray(ev.stats[stat])
    rows = np.flatnonzero(col != 0)
    if not len(rows):
        return []
    ids, inverse = np.unique(ev.record_ids[rows].astype(str), return_inverse=True)
    per = np.bincount(inverse.reshape(-1), weights=col[rows], minlength=len(ids))
    return ids[per > 0].tolist()


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
                if own and len(own) == 1 and own[0].ev is o.ev and cis.get(own[0].metric) and m.value is not None:
                    flat[name] = m.with_ci(cis[own[0].metric])


# ---------------------------------------------------------------------- baseline
def _pairing_problem(paired: int, either: int, frac: float, n_dropped: int, dropped_first: list[str],
                     bl: Any) -> str | None:
    """Why a baseline comparison is missing evidence, or ``None`` when the pairing is sound:
    the candidate dropped baseline records (``n_dropped`` more than ``max_dropped``; the first
    ids, sorted, in ``dropped_first``), or the records both systems scored are fewer than
    ``min_paired_fraction`` of those either scored."""
    if n_dropped > bl.max_dropped:
        shown = ", ".join(repr(d) for d in dropped_first[:5]) + (" ..." if n_dropped > 5 else "")
        return (f"the candidate's records lack {n_dropped} record(s) of the baseline ({shown}; "
                f"baseline.max_dropped = {bl.max_dropped})")
    if paired == 0 or frac < bl.min_paired_fraction:
        return (f"only {paired} of {either} records are scored by both systems ({frac:.1%}; "
                f"baseline.min_paired_fraction = {bl.min_paired_fraction:.0%})")
    return None


class PairedIds:
    """The pairing of two systems' per-record ids, each side's ids distinct (a per-record view:
    one id per record, any order), as NumPy's set routines give it with one sort of both sides
    together instead of one per routine: ``common`` (sorted) and its positions ``at_c`` /
    ``at_b`` in each side (``np.intersect1d(..., return_indices=True)``), ``n_either`` (the
    size of ``np.union1d``: both sides less the common ids) and each side's unpaired ids, the
    first ``k`` in sorted order (``np.setdiff1d(side, common)[:k]``; only the unpaired ids are
    sorted, usually few)."""

    def __init__(self, ids_c: np.ndarray, ids_b: np.ndarray) -> None:
        self._c, self._b = ids_c, ids_b
        self.common, self.at_c, self.at_b = np.intersect1d(ids_c, ids_b, assume_unique=True, return_indices=True)
        self.n_either = int(len(ids_c) + len(ids_b) - len(self.common))

    @staticmethod
    def _only(ids: np.ndarray, paired: np.ndarray, k: int) -> list[Any]:
        keep = np.ones(len(ids), bool)
        keep[paired] = False
        return np.sort(ids[keep])[:k].tolist()

    def only_c(self, k: int) -> list[Any]:
        """The first ``k`` (sorted) of the candidate's ids the baseline lacks."""
        return self._only(self._c, self.at_c, k)

    def only_b(self, k: int) -> list[Any]:
        """The first ``k`` (sorted) of the baseline's ids the candidate lacks."""
        return self._only(self._b, self.at_b, k)


def _delta_wanted(fam: str, metric: str, delta_gates: set[str]) -> bool:
    """Whether a delta gate reads ``fam.metric`` (a gate on an undeclared family's metric may
    be unresolved: its bare name)."""
    return bool({metric, f"{fam}.{metric}"} & delta_gates)


def _restricted(release: Any, view: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, positions)`` of a per-record view's records that the release comparison keeps
    (:meth:`~kg_rageval.audit.baseline.Release.restrict`: all of them for one release)."""
    ids = view.ids()
    kept, at = release.restrict(ids, {"at": np.arange(len(ids))})
    return kept, at["at"]


def _per_query_deltas(fam: str, fin: Any, names: list[str], common: np.ndarray, mc: Any, mb: Any,
                      wanted: list[str], limit: int = 50) -> dict[str, list[dict[str, Any]]]:
    """The paired per-record deltas of the ``wanted`` metrics (records where both systems
    define the metric and differ), most negative first, at most ``limit`` per metric:
    ``{fam.metric: [{"record_id", "candidate", "baseline", "delta"}]}``. Each system's
    per-record values come from :func:`~kg_rageval.results.forms.metric_values` (vectorised over the
    records where the metric has a verified form, else one ``finalize`` per record)."""
    from kg_rageval.audit.failing import worst_first

    vc = metric_values(fin, names, mc, wanted)
    vb = metric_values(fin, names, mb, wanted)
    out: dict[str, list[dict[str, Any]]] = {}
    for m in wanted:
        c, bl = vc[m][0], vb[m][0]  # type: ignore[index]
        d = c - bl
        sel = np.flatnonzero(~np.isnan(c) & ~np.isnan(bl) & (c != bl))
        order = worst_first(-d, sel, common.__getitem__, limit)  # most negative delta first, ties by id
        out[f"{fam}.{m}"] = [{"record_id": str(common[j]), "candidate": float(c[j]), "baseline": float(bl[j]),
                              "delta": float(c[j]) - float(bl[j])} for j in order]
    return out


def _baseline_config(config: AuditConfig) -> AuditConfig:
    """The config the baseline's families run with: the audit's, but no PROV-O trail (the
    trail describes the audited run only)."""
    bcfg = config.model_copy()
    bcfg._base_dir, bcfg._source = config._base_dir, config._source
    bfams = {n: dict(config.families.get(n) or {}) for n in configured_families(config)}
    if "provenance" in bfams:
        bfams["provenance"]["trail"] = False
    bcfg.families = bfams
    return bcfg


def _baseline_held(config: AuditConfig, inputs: Mapping[str, Any], cand: Any, bpath: Path,
                   progress: bool) -> tuple[Any, dict[str, FamilyRun], np.ndarray]:
    """``(release, baseline runs, baseline record ids)`` with the baseline's records read whole
    (:func:`~kg_rageval.records.read_records`), let go before the pairing."""
    from kg_rageval.audit.baseline import ReleaseCheck, load_baseline_ontology
    from kg_rageval.records import read_records

    base_records = read_records(bpath)
    check = ReleaseCheck(config, inputs["ontology"], load_baseline_ontology(config))
    check.prepare(cand)
    check.observe(0, base_records)
    release = check.result()  # refuses another release
    binputs = dict(inputs)
    binputs["records"] = base_records
    binputs["ontology"] = release.ontology
    bruns = run_families(_baseline_config(config), binputs, base_records, progress=progress)
    return release, bruns, check.ids()


def _baseline_streamed(config: AuditConfig, inputs: Mapping[str, Any], cand: Any, bpath: Path,
                       client: Any) -> tuple[Any, dict[str, FamilyRun], np.ndarray] | None:
    """:func:`_baseline_held` with the baseline's records read once in chunks of the audit's
    ``chunk_size`` through the families (:func:`_stream_runs`, as the audited records are) and
    the release check (:class:`~kg_rageval.audit.baseline.ReleaseCheck`), none of them held;
    the candidate's records are read again only for a comparison on the unchanged nodes.
    ``None`` when anything goes wrong before, in or after the stream but a reading error of
    the baseline's file (the held baseline then raises its error, in its order, or scores it)."""
    from kg_rageval.audit.baseline import ReleaseCheck, load_baseline_ontology
    from kg_rageval.audit.stream import RecordIndex

    try:
        check = ReleaseCheck(config, inputs["ontology"], load_baseline_ontology(config))
        planned = check.planned_ontology()
        check.prepare(cand)
        bcfg = _baseline_config(config)
        binputs = dict(inputs)
        binputs["records"] = None
        binputs["paths"] = {**(inputs.get("paths") or {}), "records": bpath}
        binputs["ontology"] = planned
        names = configured_families(bcfg)
        view = RecordIndex(bpath, cand.size, names)
        bound = _bind_families(bcfg, binputs, names)
    except Exception:  # noqa: BLE001 — the held baseline raises it where it raises it
        return None
    bruns = _stream_runs(bcfg, binputs, names, bound, view, (view.observe, check.observe), client)
    if bruns is None:
        return None
    try:
        release = check.result()
    except Exception:  # noqa: BLE001 — refused: the held baseline raises it in its order
        return None
    if release.ontology is not planned:  # pragma: no cover — ReleaseCheck plans what it decides
        return None
    return release, bruns, check.ids()


def _run_baseline(config: AuditConfig, inputs: Mapping[str, Any], runs: Mapping[str, FamilyRun],
                  progress: bool, records: Any = None, client: Any = None
                  ) -> tuple[dict[str, Any], dict[str, Metric]]:
    """Paired comparison with a baseline run on the same records.

    For each evaluation the candidate and baseline per-record stats are aligned on the record
    ids both scored; ``delta:m`` = m(candidate) − m(baseline) over those records. For the
    evaluations owning a metric with a delta gate (all with ``bootstrap.always``) a paired
    percentile bootstrap (the same record draws for both systems) gives the intervals, and the
    per-query deltas of the gated metrics are listed (worst first, 50 at most). ``records``:
    the candidate's (:class:`~.stream.HeldRecords` / :class:`~.stream.StreamedRecords`; default
    ``inputs["records"]``). The baseline's records are streamed like the candidate's when the
    candidate's were (:func:`_baseline_streamed`; ``client``: the Dask client its chunks are
    scored on), else held; either way only the record ids of both sides stay, as numpy arrays."""
    from kg_rageval.audit.stream import HeldRecords

    cand = HeldRecords(inputs["records"]) if records is None else records

    assert config.baseline is not None
    bpath = config.path(config.baseline.records)
    if not bpath.exists():
        raise InputError("baseline records file does not exist", source=config.source,
                         location=f"baseline.records = {config.baseline.records!r}")
    got = _baseline_streamed(config, inputs, cand, bpath, client) if cand.streamed else None
    release, bruns, base_ids = got if got is not None else _baseline_held(config, inputs, cand, bpath, progress)
    b = config.bootstrap
    fams = configured_families(config)
    options = {f: family_options(config, f) for f in fams}
    delta_gates = {resolve_metric(g.metric, scope=fams, options=options).qualified
                   for g in config.all_gates() if g.metric.startswith("delta:")}
    deltas: dict[str, Metric] = {}
    pairs: dict[str, dict[str, Any]] = {}
    primary: list[str] = []
    per_query: dict[str, list[dict[str, Any]]] = {}
    dropped = np.setdiff1d(base_ids, cand.id_array())  # sorted: the baseline's ids are unique
    dropped_first = dropped[:50].tolist()
    bl = config.baseline
    pairing: dict[str, dict[str, Any]] = {}
    for fam, run in runs.items():
        brun = bruns.get(fam)
        if brun is None or run.status != "ran" or brun.status != "ran":
            continue
        if run.result is None or brun.result is None:
            continue
        for member, ev in run.result.items():  # paired by member, then by record id
            bev = brun.result.get(member)
            if bev is None or ev.family.qualified_name != bev.family.qualified_name:
                continue
            # another ontology release: only the comparable records take part (drift.release);
            # each system's per-record stats are its cached view, read one column at a time
            view_c, view_b = ev.record_stats(), bev.record_stats()
            ids_c, at_c = _restricted(release, view_c)
            ids_b, at_b = _restricted(release, view_b)
            pair = PairedIds(ids_c, ids_b)
            common, ic, ib = pair.common, pair.at_c, pair.at_b
            names = list(view_c.names)
            label = fam if len(run.result) == 1 else f"{fam}.{member}"
            frac = len(common) / pair.n_either if pair.n_either else 0.0
            unpaired = _pairing_problem(len(common), pair.n_either, frac, len(dropped), dropped_first, bl)
            pairing[label] = {
                "paired_records": int(len(common)), "records_either": pair.n_either,
                "paired_fraction": round(frac, 6),
                "candidate_only": {"n": int(len(ids_c) - len(common)), "ids": pair.only_c(20)},
                "baseline_only": {"n": int(len(ids_b) - len(common)), "ids": pair.only_b(20)},
                "missing": unpaired,
            }
            if unpaired is not None:
                for m in ev.family.finalize({k: 0.0 for k in names}):
                    key = f"delta:{fam}.{m}"
                    primary.append(key)
                    deltas[key] = Metric(key, None, missing=unpaired)
                    pairs[key] = {"candidate": None, "baseline": None, "paired_records": int(len(common))}
                continue
            del pair
            # the paired records of each system (the stacked matrices of every stat, by column)
            mc = AlignedRecords(view_c, at_c[ic], names)
            mb = AlignedRecords(view_b, at_b[ib], names)
            del ids_c, ids_b, ic, ib
            fin = ev.family.finalize
            tc = fin(dict(zip(names, mc.probe_rows()[0].tolist())))  # the stacked sum(0), bit for bit
            tb = fin(dict(zip(names, mb.probe_rows()[0].tolist())))
            n = len(common)
            wanted = [m for m in tc if _delta_wanted(fam, m, delta_gates)]
            resamples = b.n_resamples if (wanted or b.always) else 0
            samples: dict[str, np.ndarray] = {m: np.full(resamples, np.nan) for m in tc}
            if resamples:  # paired: the same record draws (records aligned by id above) for both systems
                rc, rb = replicate_values(fin, names, [mc, mb], list(tc), resamples, b.seed, bootstrap_weights)
                samples = {m: rc[m] - rb[m] for m in tc}  # NaN where either is undefined
            for m in tc:
                key = f"delta:{fam}.{m}"
                vc, vb = tc[m].value, tb.get(m).value if tb.get(m) else None
                if vc is None or vb is None:
                    d = Metric(key, None, missing=f"{m} undefined for "
                               f"{'candidate' if vc is None else 'baseline'} on {n} paired records")
                else:
                    ci = (percentile_interval(samples[m], resamples, b.level)
                          if resamples and n >= b.min_units else None)
                    d = Metric(key, float(vc - vb), None, None, None, ci)
                primary.append(key)
                deltas[key] = d
                pairs[key] = {"candidate": vc, "baseline": vb, "paired_records": n}
            # per-query deltas (the report's regressions table) of the metrics with a delta gate:
            # one finalize per record and system, every wanted metric read from it
            if wanted:
                per_query.update(_per_query_deltas(fam, fin, names, common, mc, mb, wanted))
            del mc, mb
        for bev in brun.result.values():
            bev.drop_record_stats()
        # paired: the baseline's result columns of this family are not read again
        brun.result, brun.evaluations = None, []
    info = {
        "records": str(bpath),
        "n_records": len(base_ids),
        "families": {f: r.status for f, r in bruns.items()},
        "dropped_records": {"n": len(dropped), "ids": dropped_first},
        "pairing": pairing,
        "deltas": {k: {**metric_dict(v), **pairs.get(k, {})} for k, v in sorted(deltas.items())},
        "primary": sorted(set(primary)),
        "worst_queries": per_query,
        "release": release.to_dict(),
    }
    return info, deltas
