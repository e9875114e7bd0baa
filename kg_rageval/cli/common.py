"""Options and output helpers shared by every CLI command."""

from __future__ import annotations

import json
import sys
from typing import Any, Callable, Iterable

import click

format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format: a human table or machine-readable JSON.",
)

ontology_option = click.option(
    "--ontology",
    "-O",
    "ontology_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Ontology file (RDF/OWL/SKOS, OBO, STIX JSON, CSV/TSV edge table or compiled .kgro).",
)

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

quiet_option = click.option("--quiet", "-q", is_flag=True, help="No progress bars or notes.")


def emit(payload: Any, fmt: str, render_text: Callable[[Any], str]) -> None:
    """Print ``payload`` as JSON (``--format json``) or through ``render_text``."""
    if fmt == "json":
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False))
    else:
        click.echo(render_text(payload))


def ontology_ref(onto: Any) -> dict[str, Any]:
    """``{"source", "hash"}`` of the ontology a report was computed with (every command's JSON)."""
    return {"source": onto.source, "hash": onto.content_hash}


def payload_head(command: str, data_path: str, n_records: int, onto: Any) -> dict[str, Any]:
    """The first keys of a ``score`` command's JSON: command, data file, records read, ontology."""
    return {"command": command, "data": data_path, "n_records": n_records, "ontology": ontology_ref(onto)}


def load_ontology_cli(path: str, fmt: str | None = None, **options: Any):
    from ..ontology import load_ontology

    return load_ontology(path, format=fmt, **options)


def table(rows: list[list[Any]], headers: list[str] | None = None) -> str:
    """A plain text table with right-aligned numbers."""
    cells = [[_fmt(c) for c in r] for r in rows]
    if headers:
        cells.insert(0, list(headers))
    if not cells:
        return ""
    widths = [max(len(r[i]) if i < len(r) else 0 for r in cells) for i in range(max(map(len, cells)))]
    lines = []
    for k, r in enumerate(cells):
        parts = []
        for i, c in enumerate(r):
            numeric = bool(headers) and k > 0
            if numeric and _is_num(c):
                parts.append(c.rjust(widths[i]))
            else:
                parts.append(c.ljust(widths[i]))
        lines.append("  ".join(parts).rstrip())
        if k == 0 and headers:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _is_num(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def _fmt(c: Any) -> str:
    if c is None:
        return "—"
    if isinstance(c, float):
        return f"{c:.4f}"
    return str(c)


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


def families_text(evals: dict[str, Any], rows_label: str = "rows") -> list[str]:
    """One section per family of ``{name: Evaluation}``: a heading with the row count, the
    metric table and the unscored counts (used by ``score generation``/``provenance``)."""
    parts: list[str] = []
    for name, ev in evals.items():
        parts.append(f"\n== {name} ({len(ev)} {rows_label})")
        parts.append(metrics_table(ev.metrics()))
        if ev.unscored:
            parts.append("unscored: " + ", ".join(f"{k}={v}" for k, v in ev.unscored_counts.items()))
    return parts


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.3f}"


def error_line(exc: BaseException | str) -> str:
    """``"error: <message>"`` on one line: a message's lines (parser messages and lists of
    problems span several) are joined with ``"; "``, or a space after a line ending in ``:``.
    Credentials in URIs are redacted (:func:`kg_rageval.redact.redact`)."""
    from ..redact import redact

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
