"""Options and output helpers shared by every CLI command."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import Any

import click

from kg_rageval.base.fmt import fmt_count, table

format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format: a human table or machine-readable JSON.",
)

_LOADER_META = "kg_rageval.loader_options"
_LOADER_DEST = "ontology_loader_"


def loader_options(f: Callable) -> Callable:
    """Add every loader option (:data:`~kg_rageval.ontology.loaders.options.LOADER_OPTIONS`)
    plus ``--ontology-option KEY=VALUE`` to a command; the wrapped callback receives none of
    them: they are kept for :func:`load_ontology_cli` (one derivation for every command)."""
    import functools

    from kg_rageval.ontology.loaders.options import LOADER_OPTIONS

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = {k[len(_LOADER_DEST) :]: kwargs.pop(k) for k in list(kwargs) if k.startswith(_LOADER_DEST)}
        click.get_current_context().meta[_LOADER_META] = given
        return f(*args, **kwargs)

    w: Callable = wrapper
    w = click.option(
        "--ontology-option",
        _LOADER_DEST + "extra",
        multiple=True,
        metavar="KEY=VALUE",
        help="Any other loader option (JSON values), e.g. lang=de, matrix_root=false, node_label=Concept.",
    )(w)
    for opt in reversed(LOADER_OPTIONS):
        dest = _LOADER_DEST + opt.name
        if opt.kind == "flag":
            w = click.option(opt.flag, dest, is_flag=True, default=None, help=opt.help)(w)
        elif opt.kind == "choice":
            w = click.option(
                opt.flag, dest, type=click.Choice(list(opt.choices)), default=None, help=opt.help
            )(w)
        elif opt.kind == "multi":
            w = click.option(opt.flag, dest, multiple=True, help=opt.help)(w)
        else:
            w = click.option(opt.flag, dest, default=None, help=opt.help)(w)
    return w


def given_loader_options() -> dict[str, Any]:
    """The loader options of the running command (``None``/empty ones dropped)."""
    from kg_rageval.ontology.loaders.options import ontology_option_kwargs

    ctx = click.get_current_context(silent=True)
    given = dict(ctx.meta.get(_LOADER_META, {})) if ctx is not None else {}
    extra = ontology_option_kwargs(given.pop("extra", ()) or ())
    out = {k: (tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in given.items()}
    out = {k: v for k, v in out.items() if v is not None and v != () and v is not False}
    if out.get("reasoner") == "none":
        del out["reasoner"]
    return {**extra, **out}


def ontology_option(f: Callable) -> Callable:
    """``--ontology/-O FILE_OR_URI`` plus every loader option (:func:`loader_options`)."""
    f = loader_options(f)
    return click.option(
        "--ontology",
        "-O",
        "ontology_path",
        required=True,
        help="Ontology file (RDF/OWL/SKOS, OBO, STIX JSON, CSV/TSV edge table or compiled .kgro) "
        "or a graph database URI (bolt://, neo4j://) with --mapping.",
    )(f)


ontology_format_option = click.option(
    "--ontology-format",
    default=None,
    help="Loader name when the extension does not tell (see `kg-rageval ontology formats`).",
)

data_option = click.option(
    "--data",
    "-d",
    "data_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Records file (JSONL, see docs/records.md).",
)

chunk_size_option = click.option(
    "--chunk-size",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Records read and scored at a time (default 65536; 32768 for score linking); the result "
    "does not depend on it, memory does.",
)
"""``--chunk-size``: how many records a streamable family scores at a time
(:meth:`~kg_rageval.scoring.BoundScorer.score_path`)."""

quiet_option = click.option("--quiet", "-q", is_flag=True, help="No progress bars or notes.")


def emit(payload: Any, fmt: str, render_text: Callable[[Any], str]) -> None:
    """Print ``payload`` as JSON (``--format json``) or through ``render_text``. A spooled text
    among the evaluations' ``meta`` values (:func:`score_payload` with ``keep_spooled``: the
    PROV-O trail) is written from its temporary file a block at a time, never held whole: the
    same bytes as ``json.dumps`` of the payload with the text in place."""
    if fmt == "json":
        spooled = _spooled_meta(payload)
        if spooled:
            _emit_spooled(payload, spooled)
            return
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False))
    else:
        click.echo(render_text(payload))


_SENTINEL = "\x00kg-rageval spooled text {}\x00"


def _spooled_meta(payload: Any) -> list[tuple[dict[str, Any], str]]:
    """``(meta, key)`` of each spooled text among ``payload["evaluations"][*]["meta"]``."""
    from kg_rageval.base.spool import SpooledText

    evs = payload.get("evaluations") if isinstance(payload, dict) else None
    if not isinstance(evs, dict):
        return []
    return [
        (d["meta"], k)
        for d in evs.values()
        if isinstance(d, dict) and isinstance(d.get("meta"), dict)
        for k, v in d["meta"].items()
        if isinstance(v, SpooledText)
    ]


def _emit_spooled(payload: dict[str, Any], spooled: list[tuple[dict[str, Any], str]]) -> None:
    """The JSON of ``payload`` with each spooled text replaced by a sentinel string, cut at the
    sentinels, and each text written between as its JSON string: ``"``, its head and its
    spooled bytes escaped a block at a time (escaping is per character, and the blocks are
    decoded without splitting a character), ``"``. A payload holding a sentinel's text anywhere
    else is written whole."""
    import codecs

    from kg_rageval.base.spool import BLOCK

    texts = []
    for i, (meta, key) in enumerate(spooled):
        texts.append(meta[key])
        meta[key] = _SENTINEL.format(i)
    try:
        out = json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False)
    finally:
        for (meta, key), text in zip(spooled, texts):
            meta[key] = text
    marks = [json.dumps(_SENTINEL.format(i), ensure_ascii=False) for i in range(len(texts))]
    if any(out.count(m) != 1 for m in marks):  # the sentinel's text is in the payload itself
        click.echo(json.dumps(_jsonable_text(payload), indent=2, ensure_ascii=False, allow_nan=False))
        return

    def escaped(part: str) -> str:
        return json.dumps(part, ensure_ascii=False)[1:-1]

    for mark, text in zip(marks, texts):
        before, out = out.split(mark, 1)
        click.echo(before + '"' + escaped(text.head), nl=False)
        decoder = codecs.getincrementaldecoder("utf-8")()
        at, end = text.start, text.end
        while at < end:
            block = text.spool.read(at, min(end, at + BLOCK))
            at += len(block)
            click.echo(escaped(decoder.decode(block, final=at >= end)), nl=False)
        click.echo('"', nl=False)
    click.echo(out)


def _jsonable_text(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with the spooled texts of its evaluations' meta read as ``str``."""
    from kg_rageval.base.spool import SpooledText

    evs = {
        m: {**d, "meta": {k: v.text() if isinstance(v, SpooledText) else v for k, v in d["meta"].items()}}
        if isinstance(d, dict) and isinstance(d.get("meta"), dict)
        else d
        for m, d in payload["evaluations"].items()
    }
    return {**payload, "evaluations": evs}


def ontology_ref(onto: Any) -> dict[str, Any] | None:
    """``{"source", "hash"}`` of the ontology a report was computed with (every command's JSON);
    ``None`` without one (``score judges`` / ``score system`` without ``-O``)."""
    if onto is None:
        return None
    return {"source": onto.source, "hash": onto.content_hash}


def load_ontology_cli(path: str, fmt: str | None = None, **options: Any):
    """Load ``path`` with the command's loader options (see :func:`loader_options`);
    ``options`` given here win."""
    from kg_rageval.ontology import load_ontology

    return load_ontology(path, format=fmt, **{**given_loader_options(), **options})


def metrics_table(metrics: dict[str, Any]) -> str:
    """Render ``{name: Metric}`` as a table: value, numerator/denominator, missing reason."""
    rows = []
    for name, m in metrics.items():
        frac = ""
        if m.numerator is not None and m.denominator is not None:
            frac = f"{_num(m.numerator)}/{_num(m.denominator)}"
        ci = f"[{m.ci[0]:.4f}, {m.ci[1]:.4f}]" if m.ci else ""
        rows.append([name, m.value if m.value is not None else "missing", frac, ci, m.missing or ""])
    return table(rows, ["metric", "value", "num/den", "ci", "note"])


def families_text(evals: Any, rows_label: str = "rows", metrics: dict[str, Any] | None = None) -> list[str]:
    """One section per member of an :class:`EvaluationSet`: a heading with the row count, the
    metric table (``metrics``: the set's canonical metrics, with intervals when asked for) and
    the unscored counts (used by ``score generation``/``provenance``)."""
    parts: list[str] = []
    fam = getattr(evals, "family", "")
    for name, ev in evals.items():
        parts.append(f"\n== {name} ({len(ev)} {rows_label})")
        own = ev.metrics()
        if metrics is not None:
            own = {k: metrics.get(f"{fam}.{k}", m) for k, m in own.items()}
        parts.append(metrics_table(own))
        if ev.unscored:
            parts.append("unscored: " + ", ".join(f"{k}={v}" for k, v in ev.unscored_counts.items()))
    return parts


_num = fmt_count


def error_line(exc: BaseException | str) -> str:
    """``"error: <message>"`` on one line: a message's lines (parser messages and lists of
    problems span several) are joined with ``"; "``, or a space after a line ending in ``:``.
    Credentials in URIs are redacted (:func:`kg_rageval.base.redact.redact`)."""
    from kg_rageval.base.redact import redact

    out = ""
    for part in (p.strip() for p in redact(str(exc)).splitlines()):
        if part:
            out += part if not out else (" " if out.endswith(":") else "; ") + part
    return "error: " + out


def fail(message: BaseException | str, code: int = 2) -> None:
    """Print :func:`error_line` to standard error and exit with ``code`` (2: bad input)."""
    click.echo(error_line(message), err=True)
    sys.exit(code)


def breakdown_keys(ev: Any, requested: Iterable[str] = ()) -> list[str]:
    """The breakdown keys of a score command: those asked for with ``--breakdown`` plus every
    ``slice:*`` key of the evaluation; an unknown requested key is a usage error (exit 2)."""
    keys = list(dict.fromkeys([*requested, *(k for k in ev.keys if k.startswith("slice:"))]))
    for k in keys:
        if k not in ev.keys:
            raise click.BadParameter(
                f"no breakdown key {k!r}; available: {', '.join(sorted(ev.keys))}", param_hint="--breakdown"
            )
    return keys


# ---------------------------------------------------------------------- family options
def _click_option(p: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The click option of a declared :class:`~kg_rageval.contract.Param`."""
    flags = [p.flag, *p.flags]
    kw: dict[str, Any] = {"help": p.help, "show_default": p.default not in (None, ())}
    if p.kind == "bool":
        neg = "--no-" + p.flag[2:]
        return click.option(f"{p.flag}/{neg}", *p.flags, p.name, default=bool(p.default), **kw)
    if p.kind in ("int_list", "str_list", "path_list"):
        kw["multiple"] = True
        kw["default"] = tuple(p.default or ())
    else:
        kw["default"] = p.default
    if p.choices and p.pattern:  # checked by the declaration when the family binds
        kw["metavar"] = "|".join(p.choices) + "|" + (p.pattern_text or "PATTERN").upper()
    elif p.choices:
        kw["type"] = click.Choice(list(p.choices))
    elif p.kind in ("int", "int_list"):
        kw["type"] = click.IntRange(min=int(p.minimum)) if p.minimum is not None else click.INT
    elif p.kind == "float":
        kw["type"] = click.FloatRange(min=p.minimum) if p.minimum is not None else click.FLOAT
    elif p.kind in ("path", "path_list"):
        kw["type"] = click.Path(exists=True)
    elif p.kind == "mapping":
        kw["metavar"] = "JSON"
    return click.option(*flags, p.name, **kw)


def dask_options(
    scheduler_help: str, partitions_help: str, *, partitions_min: int = 1
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--dask-scheduler ADDRESS`` / ``--dask-workers N`` / ``--dask-partitions P`` of a command
    that can run on a Dask cluster (the client comes from
    :func:`kg_rageval.integrations.dask.audit_client`); each command says what runs where."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        options = [
            click.option(
                "--dask-scheduler", "dask_scheduler", default=None, metavar="ADDRESS", help=scheduler_help
            ),
            click.option(
                "--dask-workers",
                "dask_workers",
                type=click.IntRange(min=1),
                default=None,
                metavar="N",
                help="Like --dask-scheduler, on a local cluster of N worker processes started for this run.",
            ),
            click.option(
                "--dask-partitions",
                "dask_partitions",
                type=click.IntRange(min=partitions_min),
                default=None,
                metavar="P",
                help=partitions_help,
            ),
        ]
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


def family_options(family: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator adding one click option per declared input and parameter of ``family``
    (derived from its :class:`~kg_rageval.scoring.Scorer`; nothing written twice)."""
    from kg_rageval.scoring import get_scorer

    sc = get_scorer(family)

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for p in reversed([p for p in sc.params if p.exposed]):
            fn = _click_option(p)(fn)
        for i in reversed(sc.inputs):
            fn = click.option(
                i.flag,
                *i.flags,
                i.name,
                type=click.Path(exists=True, dir_okay=False),
                required=i.required,
                default=None,
                help=i.help,
            )(fn)
        return fn

    return deco


def family_kwargs(family: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Pop the inputs and parameters of ``family`` out of a command's ``kwargs`` (inputs that
    were not given are left out)."""
    from kg_rageval.scoring import get_scorer

    sc = get_scorer(family)
    out: dict[str, Any] = {}
    for i in sc.inputs:
        v = kwargs.pop(i.name, None)
        if v is not None:
            out[i.name] = v
    for p in sc.params:
        if p.exposed and p.name in kwargs:
            v = kwargs.pop(p.name)
            if p.kind in ("int_list", "str_list", "path_list") and v == ():
                v = p.default
            out[p.name] = v
    return out


# ---------------------------------------------------------------------- one output shape
def score_output_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The output options every ``score <family>`` command shares: ``--format
    text|json|csv``, ``--rows/--no-rows`` (default off), ``--ci N`` (bootstrap intervals over
    records, N resamples; 0 = none), ``--ci-level``, ``--seed``."""
    fn = click.option(
        "--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap resampling (--ci)."
    )(fn)
    fn = click.option(
        "--ci-level",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=0.95,
        show_default=True,
        help="Confidence level of the --ci intervals.",
    )(fn)
    fn = click.option(
        "--ci",
        "ci",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        help="Percentile bootstrap intervals over records with this many resamples (fills the "
        "ci column; 0: none).",
    )(fn)
    fn = click.option(
        "--rows/--no-rows",
        "rows",
        default=False,
        show_default=True,
        help="Include the per-row results (JSON: 'rows'; CSV: the rows instead of the metrics).",
    )(fn)
    fn = click.option(
        "--format",
        "fmt",
        type=click.Choice(["text", "json", "csv"]),
        default="text",
        show_default=True,
        help="Output: a human table, JSON (the same shape for every family) or CSV.",
    )(fn)
    return fn


def with_intervals(result: Any, n_resamples: int, level: float, seed: int) -> dict[str, Any]:
    """The canonical metrics of an :class:`EvaluationSet`, with bootstrap intervals when
    ``n_resamples`` > 0 (each member resamples its own records)."""
    metrics = result.metrics()
    if n_resamples > 0:
        for _member, ev in result.items():
            cis = ev.bootstrap(n_resamples=n_resamples, level=level, seed=seed)
            for name, ci in cis.items():
                key = f"{result.family}.{name}"
                if ci is not None and metrics[key].value is not None:
                    metrics[key] = metrics[key].with_ci(ci)
    return metrics


def score_payload(
    result: Any,
    *,
    data_path: str,
    n_records: int,
    onto: Any,
    rows: bool,
    breakdowns: Iterable[str] = (),
    metrics: dict[str, Any] | None = None,
    keep_spooled: bool = False,
) -> dict[str, Any]:
    """The one JSON shape of every ``score <family>`` command (docs/evaluation.md):
    ``command``, ``family``, ``data``, ``ontology``, ``counts``, ``metrics`` (canonical names),
    ``unscored`` (reason → records), ``breakdowns`` (key → value → ``{"n", "metrics"}``),
    ``evaluations`` (each member's version, sums and meta) and, with ``rows``, ``rows`` and
    ``unscored_records``. ``metrics``: the canonical metrics when already computed (with
    intervals, :func:`with_intervals`). A family adds its own extra keys after these.
    ``keep_spooled``: a ``meta`` value kept in a temporary file (a
    :class:`~kg_rageval.base.spool.SpooledText`: the PROV-O trail) stays so, not read into a
    ``str``; :func:`emit` writes it from its file (equal to the text: same JSON bytes)."""
    from kg_rageval.results.columns import record_id_texts
    from kg_rageval.results.evaluation import breakdown_dicts

    fam = result.family
    metrics = result.metrics() if metrics is None else metrics
    scored: set[str] = set()
    for ev in result.values():
        scored.update(record_id_texts(ev.record_ids))
    bd: dict[str, Any] = {}
    for key in breakdowns:
        for _member, ev in result.items():
            if key not in ev.keys:
                continue
            d = breakdown_dicts(ev, key)
            dst = bd.setdefault(key, {})
            for value, g in d.items():
                cell = dst.setdefault(value, {"n": 0, "metrics": {}})
                cell["n"] += g["n"]  # rows, over the members that have the key
                cell["metrics"].update(
                    {f"{fam}.{k}": {**m, "name": f"{fam}.{k}"} for k, m in g["metrics"].items()}
                )
    payload: dict[str, Any] = {
        "command": f"score {fam}",
        "family": fam,
        "data": data_path,
        "ontology": ontology_ref(onto),
        "counts": {
            "records": n_records,
            "scored_records": len(scored),
            "rows": {m: len(ev) for m, ev in result.items()},
            "unscored": sum(result.unscored_counts.values()),
        },
        "metrics": {k: m.to_dict() for k, m in metrics.items()},
        "unscored": result.unscored_counts,
        "breakdowns": bd,
        "evaluations": {
            m: {
                k: v
                for k, v in _summary_dict(ev, keep_spooled).items()
                if k in ("version", "sums", "meta", "n_rows", "n_records")
            }
            for m, ev in result.items()
        },
    }
    if rows:
        payload["rows"] = [
            {"member": m, **r} for m, ev in result.items() for r in ev.to_dict(rows=True)["rows"]
        ]
        payload["unscored_records"] = [
            {"member": m, **u} for m, ev in result.items() for u in ev.to_dict(rows=True)["unscored_records"]
        ]
    return payload


def _summary_dict(ev: Any, keep_spooled: bool) -> dict[str, Any]:
    """``ev.to_dict(rows=False)``; with ``keep_spooled``, its spooled ``meta`` texts as they are
    (the others converted as ``to_dict`` converts them)."""
    from kg_rageval.base.spool import SpooledText

    spooled = {k: v for k, v in ev.meta.items() if isinstance(v, SpooledText)} if keep_spooled else {}
    if not spooled:
        return ev.to_dict(rows=False)
    held = ev.meta
    ev.meta = {**held, **dict.fromkeys(spooled, "")}
    try:
        d = ev.to_dict(rows=False)
    finally:
        ev.meta = held
    d["meta"] = {k: spooled.get(k, v) for k, v in d["meta"].items()}
    return d


def emit_score(payload: dict[str, Any], fmt: str, render_text: Callable[[Any], str]) -> None:
    """Print a score payload as text, JSON, or CSV (the metrics; with ``--rows`` the rows)."""
    if fmt != "csv":
        emit(payload, fmt, render_text)
        return
    import csv
    import io

    buf = io.StringIO()
    if "rows" in payload:
        rows = payload["rows"]
        cols = list(dict.fromkeys(k for r in rows for k in r))
        w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in r.items()})
    else:
        w2 = csv.writer(buf, lineterminator="\n")
        w2.writerow(["metric", "value", "numerator", "denominator", "ci_low", "ci_high", "missing"])
        for name, m in payload["metrics"].items():
            ci = m.get("ci") or [None, None]
            w2.writerow(
                [
                    name,
                    m.get("value"),
                    m.get("numerator"),
                    m.get("denominator"),
                    ci[0],
                    ci[1],
                    m.get("missing", ""),
                ]
            )
    click.echo(buf.getvalue(), nl=False)


def short_metrics(metrics: dict[str, Any], family: str) -> dict[str, Any]:
    """``{bare name: Metric}`` of one family's canonical metrics (for text tables)."""
    pre = family + "."
    return {k[len(pre) :] if k.startswith(pre) else k: m for k, m in metrics.items()}


def canonical_dicts(
    family: str, metrics: dict[str, Any], only: Iterable[str] | None = None
) -> dict[str, Any]:
    """``{"<family>.<metric>": Metric.to_dict()}`` of a family's bare-named metrics (per-node
    and per-branch tables use the same canonical names as the totals)."""
    names = list(metrics) if only is None else list(only)
    return {f"{family}.{k}": {**metrics[k].to_dict(), "name": f"{family}.{k}"} for k in names}


def emit_section_score(
    evals: Any,
    *,
    data_path: str,
    onto: Any,
    rows: bool,
    fmt: str,
    ci: int,
    ci_level: float,
    seed: int,
    unit: str = "records",
    notes: Iterable[str] = (),
    member: str | None = None,
) -> None:
    """The tail every ``kg-rageval score <family>`` of a section family shares (parsing,
    chunking, consistency, nuggets): bootstrap intervals when something was scored, the one
    score envelope broken down by the records' slices, and the text view — ``<n> <unit>``, the
    family table over the scored ``<unit>``, then ``notes`` (caveats printed under it).
    ``member``: the evaluation whose rows are the ``<unit>`` counted (default: the only one)."""
    ev = evals.single if member is None else evals[member]
    keys = [k for k in ev.keys if k.startswith("slice:")]
    canonical = with_intervals(evals, ci, ci_level, seed) if len(ev) else evals.metrics()
    payload = score_payload(
        evals,
        data_path=data_path,
        n_records=ev.n_records + len(ev.unscored),  # distinct ids: a family may give a record several rows
        onto=onto,
        rows=rows,
        breakdowns=keys,
        metrics=canonical,
    )
    lines = list(notes)
    emit_score(
        payload,
        fmt,
        lambda p: "\n".join(
            [f"{p['counts']['records']} {unit}", *families_text(evals, f"scored {unit}", canonical), *lines]
        ),
    )
