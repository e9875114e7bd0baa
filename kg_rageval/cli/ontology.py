"""``kg-rageval ontology inspect|validate|compile|formats|diff|stability``."""

from __future__ import annotations

import sys
import time

import click

from kg_rageval.cli.common import (
    emit,
    format_option,
    load_ontology_cli,
    loader_options,
    ontology_format_option,
    table,
)


@click.group()
def ontology() -> None:
    """Inspect, validate, compile and diff ontologies."""


def _load_options(f):
    return loader_options(ontology_format_option(f))


@ontology.command()
@click.argument("file", metavar="FILE_OR_URI")
@_load_options
@format_option
def inspect(file, ontology_format, fmt) -> None:
    """Counts and structure of an ontology: nodes, edges, roots, depth, multi-parent nodes,
    deprecated/revoked concepts, properties, instances by kind, relation triples by predicate
    and loader diagnostics.

    FILE_OR_URI is an ontology file or a graph database URI (bolt://, neo4j://) read with
    --mapping (a preset or a mapping file); credentials come from KG_RAGEVAL_NEO4J_USER /
    KG_RAGEVAL_NEO4J_PASSWORD only."""
    t0 = time.perf_counter()
    onto = load_ontology_cli(file, ontology_format)
    summary = onto.summary()
    summary["load_seconds"] = round(time.perf_counter() - t0, 3)
    summary["warnings"] = list(onto.warnings)  # every kept message (at most 1000): the affected ids
    emit(summary, fmt, _render_inspect)


def _render_inspect(s: dict) -> str:
    rows = [
        ["source", s["source"]],
        ["version (declared)", s.get("version") or "—"],
        ["nodes", s["nodes"]],
        ["edges (parent links)", s["edges"]],
        ["roots", f"{s['n_roots']}: {', '.join(s['roots'][:5])}{' …' if s['n_roots'] > 5 else ''}"],
        ["virtual root added", "yes" if s["virtual_root"] else "no"],
        ["obsolete terms placed under the root", s.get("placed_under_root", 0)],
        ["max depth (root = 0)", s["max_depth"]],
        ["multi-parent nodes", s["multi_parent_nodes"]],
        ["leaves", s["leaves"]],
        ["active / deprecated / revoked", f"{s['active']} / {s['deprecated']} / {s['revoked']}"],
        ["with replacement", s["with_replacement"]],
        ["aliases (alternative ids)", s.get("aliases", 0)],
        [
            "labelled / synonyms / definitions",
            f"{s['labelled']} / {s['with_synonyms']} / {s['with_definition']}",
        ],
        ["node types", ", ".join(f"{k}={v}" for k, v in s["node_types"].items()) or "—"],
        ["object properties", len(s["properties"])],
        [
            "instances",
            f"{s.get('instances', 0)}"
            + (
                ": " + ", ".join(f"{k}={v}" for k, v in s["instances_by_kind"].items())
                if s.get("instances_by_kind")
                else ""
            ),
        ],
        [
            "relation triples",
            f"{s.get('relations', 0)}"
            + (
                ": " + ", ".join(f"{k}={v}" for k, v in s["relations_by_predicate"].items())
                if s.get("relations_by_predicate")
                else ""
            ),
        ],
        ["ancestor closure entries", s["ancestor_closure_entries"]],
        ["content hash", s["content_hash"]],
        ["load time (s)", s["load_seconds"]],
    ]
    out = table(rows)
    if s["diagnostics"]:
        out += "\n\nloader diagnostics:\n" + table([[k, v] for k, v in s["diagnostics"].items()])
    if s["warnings"]:
        shown = s["warnings"][:20]
        out += "\n\nfirst warnings:\n" + "\n".join(f"  - {w}" for w in shown)
        if len(s["warnings"]) > len(shown):
            out += f"\n  … and {len(s['warnings']) - len(shown)} more (--format json lists them all)"
    return out


@ontology.command()
@click.argument("file", metavar="FILE_OR_URI")
@_load_options
@click.option(
    "--shapes",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="SHACL shapes file (default: the bundled shapes/ontology.ttl).",
)
@click.option(
    "--fail-on-warnings",
    is_flag=True,
    help="Exit 1 on sh:Warning results too (default: warnings are shown, exit 0).",
)
@click.option(
    "--allow-warnings",
    is_flag=True,
    hidden=True,
    help="Accepted for compatibility: warnings never fail without --fail-on-warnings.",
)
@format_option
def validate(file, ontology_format, shapes, fail_on_warnings, allow_warnings, fmt) -> None:
    """Check an ontology against SHACL shapes (every class labelled, no self-subclass,
    deprecated classes flagged, ...). Exit code 1 on sh:Violation results only; warnings (e.g.
    deprecated classes in a published release) are shown and exit 0 unless --fail-on-warnings."""
    from kg_rageval.ontology.validate import validate_ontology

    onto = load_ontology_cli(file, ontology_format)
    report = validate_ontology(onto, shapes=shapes)
    code = 0 if report.passes(allow_warnings=not fail_on_warnings) else 1
    payload = {
        **report.to_dict(),
        "verdict": report.verdict(fail_on_warnings),
        "exit_code": code,
        "fail_on_warnings": bool(fail_on_warnings),
    }
    emit(payload, fmt, lambda _: report.to_text(fail_on_warnings=fail_on_warnings))
    if code:
        sys.exit(1)


@ontology.command()
@click.argument("file", metavar="FILE_OR_URI")
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), default=None, help="Cache path (default: FILE.kgro)."
)
@_load_options
@format_option
def compile(file, output, ontology_format, fmt) -> None:
    """Compile an ontology into a cache (.kgro) that reloads fast; any command accepts it."""
    from kg_rageval.base.outputs import refuse_overwrite
    from kg_rageval.ontology.cache import save_compiled

    if "://" not in file:
        refuse_overwrite({"--output": output or file + ".kgro"}, {"FILE": file})
    t0 = time.perf_counter()
    onto = load_ontology_cli(file, ontology_format)
    t1 = time.perf_counter()
    if output is None and "://" in file:
        from kg_rageval.base.errors import InputError

        raise InputError("give --output for the cache of an ontology loaded from a URI", source=file)
    path = save_compiled(onto, output or file + ".kgro")
    t2 = time.perf_counter()
    payload = {
        "output": str(path),
        "nodes": onto.n_nodes,
        "content_hash": onto.content_hash,
        "load_seconds": round(t1 - t0, 3),
        "save_seconds": round(t2 - t1, 3),
        "bytes": path.stat().st_size,
    }
    emit(
        payload,
        fmt,
        lambda p: (
            f"wrote {p['output']} ({p['nodes']} nodes, {p['bytes']} bytes) in {p['load_seconds'] + p['save_seconds']:.2f}s"
        ),
    )


@ontology.command()
@format_option
def formats(fmt) -> None:
    """List the ontology formats kg-rageval can load."""
    from kg_rageval.ontology import available_formats

    specs = available_formats()
    payload = [
        {"name": s.name, "extensions": list(s.extensions), "description": s.description}
        for s in specs.values()
    ]
    emit(
        payload,
        fmt,
        lambda p: table(
            [[x["name"], " ".join(x["extensions"]), x["description"]] for x in p],
            ["format", "extensions", "description"],
        ),
    )


def _drift_commands() -> None:
    from kg_rageval.cli.drift import diff, stability

    ontology.add_command(diff)
    ontology.add_command(stability)


_drift_commands()
