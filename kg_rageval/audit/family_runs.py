"""Running the configured families of an audit over its records, held or streamed.

:func:`configured_families` and :func:`family_options` say which families run and with what
options; :func:`run_families` scores each over the held records (a family that cannot run gets
a :class:`~kg_rageval.audit.families.FamilyRun` saying why: its gates are missing evidence);
:func:`_run_streamed` reads the records once, in chunks, through every family
(:func:`~kg_rageval.scoring.stream_families`).
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from kg_rageval.audit.config import AuditConfig
from kg_rageval.audit.families import FamilyRun
from kg_rageval.audit.inputs import load_inputs
from kg_rageval.base.errors import ConfigError, KgRagevalError
from kg_rageval.scoring import REGISTRY, FamilyUnavailable, Scorer, get_scorer


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


def run_families(
    config: AuditConfig, inputs: Mapping[str, Any], records: list[dict], *, progress: bool = True
) -> dict[str, FamilyRun]:
    """Run every configured family (all registered ones but the opt-in ones when ``families``
    is empty)."""
    names = configured_families(config)
    runs: dict[str, FamilyRun] = {}
    bar = _progress(names, "families", progress)
    for name in bar:
        try:
            runs[name] = _run_one(
                get_scorer(name),
                inputs,
                records,
                family_options(config, name),
                dict(config.families.get(name) or {}),
            )
        except ConfigError as exc:
            if exc.source is not None or str(exc).startswith("families."):
                raise
            # an option value the family rejected when it ran (e.g. a judge plugin that does not
            # import: "judge: ..."): name the config key
            raise ConfigError(f"families.{name}.{exc}", source=config.source) from None
    return runs


def _family_input(name: str, inputs: Mapping[str, Any]) -> Any:
    """An input by path when the config named a file (the family reads it with its own
    reader), else the object given to :func:`~.runner.run_audit` (``inputs=``)."""
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
    return spec.bind(
        inputs["ontology"],
        where=f"families.{spec.name}",
        **{k: v for k, v in family_in.items() if v is not None},
        **opts,
    )


def _run_one(
    spec: Scorer, inputs: Mapping[str, Any], records: list[dict], opts: dict[str, Any], given: dict[str, Any]
) -> FamilyRun:
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


def _run_streamed(
    config: AuditConfig,
    size: int,
    progress: bool,
    loaded: Any,
    tick: Any,
    client: Any = None,
    partitions: int | None = None,
) -> tuple[dict[str, Any], Any, dict[str, FamilyRun]] | None:
    """Run every configured family on the records file read once in chunks of ``size``
    (:func:`~kg_rageval.scoring.stream_families`; :mod:`.stream`): ``(inputs, records view,
    runs)``, or ``None`` when the audit must hold its records instead — an input other than the
    records that does not load, a family that does not bind, or one that raised on a chunk
    (:class:`~kg_rageval.scoring.StreamFallback`): the held audit then raises the error it
    raises today, in the same order (records first, then gates, then families in config order).
    A reading error of the records file is raised as the held reader raises it. ``client``: a
    ``distributed.Client`` the families' calls on the chunks are made on (the chunks are read
    and accumulated here; :func:`~kg_rageval.scoring.stream_families` with ``client``) — or,
    unless ``partitions`` is 0, the whole stream partitioned over its workers: each reads,
    observes and scores a byte range of the file, merged here in file order
    (:func:`~.partitions.run_partitioned`, ``partitions`` of them, default twice the worker
    threads; where it cannot be exact, chunk by chunk as above)."""
    from kg_rageval.audit.stream import StreamedRecords

    try:
        inputs = load_inputs(config, records=False)
        if loaded is not None:
            loaded()
        names = configured_families(config)
        view = StreamedRecords(
            inputs["paths"]["records"], size, names, inputs["ontology"], inputs.get("corpus"), config
        )
        bound = _bind_families(config, inputs, names)
    except Exception:
        return None
    tick("load_inputs")
    observers: list[Any] = [view.observe]
    digests = None
    if (
        config.baseline is not None and client is None
    ):  # the baseline's stream scores only the lines that differ
        from kg_rageval.audit.stream import LineDigests

        digests = view.line_digests = LineDigests()
        view.keep_sections()  # a stand-in for each baseline record equal to an audited one
        observers.insert(0, digests.observe)
    bar = None
    if progress:
        try:
            from tqdm import tqdm

            bar = tqdm(desc="records", unit=" rec", file=sys.stderr, leave=False)
            observers.append(lambda k, chunk: bar.update(len(chunk)))
        except ImportError:  # pragma: no cover
            pass
    try:
        runs: dict[str, FamilyRun] | None = None
        if client is not None and partitions != 0:
            from kg_rageval.audit.partitions import run_partitioned
            from kg_rageval.scoring import StreamFallback

            try:
                streams = run_partitioned(
                    client,
                    view,
                    bound[0],
                    inputs["ontology"],
                    inputs.get("corpus"),
                    config,
                    partitions=partitions,
                    spill_rows=config.spill_rows,
                    progress=bar.update if bar is not None else None,
                )
            except StreamFallback:
                return None
            if streams is not None:
                runs = _runs_of(config, inputs, names, bound[1], view, streams)
            else:  # not exact partitioned: chunk by chunk, with a fresh index
                view = StreamedRecords(
                    inputs["paths"]["records"], size, names, inputs["ontology"], inputs.get("corpus"), config
                )
                observers[0] = view.observe
                if bar is not None:
                    bar.reset()
        if runs is None:
            runs = _stream_runs(
                config,
                inputs,
                names,
                bound,
                view,
                tuple(observers),
                client,
                digests=None if digests is None else digests.sink,
            )
    finally:
        if bar is not None:
            bar.close()
    if runs is None:
        return None
    tick("families")
    return inputs, view, runs


def _bind_families(
    config: AuditConfig, inputs: Mapping[str, Any], names: list[str]
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


def _stream_runs(
    config: AuditConfig,
    inputs: Mapping[str, Any],
    names: list[str],
    bound: tuple[dict[str, Any], dict[str, float]],
    view: Any,
    observers: tuple[Any, ...],
    client: Any,
    *,
    digests: list[bytes] | None = None,
    narrow: Mapping[str, Any] | None = None,
    narrow_counts: Any = None,
    known: Any = None,
) -> dict[str, FamilyRun] | None:
    """Every family of ``names`` run on ``view.path`` read once in chunks
    (:func:`~kg_rageval.scoring.stream_families`; ``view``, a :class:`~.stream.RecordIndex`,
    among the ``observers``), as :func:`run_families` runs them on the held records: ``None``
    when a family cannot be streamed exactly (:class:`~kg_rageval.scoring.StreamFallback`:
    the caller holds the records instead). A reading error of the file propagates.
    ``digests``, ``narrow``, ``narrow_counts``, ``known``: as :func:`~kg_rageval.scoring.stream_families` takes them (a
    narrowed family's run may have ``result = None``: none of its records was scored)."""
    from kg_rageval.scoring import StreamFallback, stream_families

    bounds, bind_seconds = bound
    try:
        streams = stream_families(
            bounds,
            view.path,
            view.size,
            observers=observers,
            section_counts=view.section_counts,
            client=client,
            spill_rows=config.spill_rows,
            digests=digests,
            narrow=narrow,
            narrow_counts=narrow_counts,
            known=known,
        )
    except StreamFallback:
        return None
    return _runs_of(config, inputs, names, bind_seconds, view, streams, narrowed=set(narrow or ()))


def _runs_of(
    config: AuditConfig,
    inputs: Mapping[str, Any],
    names: list[str],
    bind_seconds: dict[str, float],
    view: Any,
    streams: Mapping[str, Any],
    narrowed: Collection[str] = (),
) -> dict[str, FamilyRun]:
    """The families' runs from their finished streams (``{family: FamilyStream}``); a family
    of ``narrowed`` (``stream_families(narrow=...)``) may have no result."""
    runs: dict[str, FamilyRun] = {}
    for name in names:
        run = family_run(
            get_scorer(name), inputs, view.n_with_section[name], dict(config.families.get(name) or {})
        )
        if run.status == "ran":
            fs = streams[name]
            assert fs.result is not None or name in narrowed
            run.result = fs.result
            run.evaluations = fs.result.evaluations if fs.result is not None else []
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
