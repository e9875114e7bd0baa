"""``kg-rageval score conformance``: schema validity, vocabulary, status, domain/range and
semantic conformance of ``answer.output`` against an ontology-derived schema (see
``docs/conformance.md``)."""

from __future__ import annotations

import click

from kg_rageval.cli.common import (
    chunk_size_option,
    data_option,
    emit_score,
    family_kwargs,
    family_options,
    load_ontology_cli,
    metrics_table,
    ontology_format_option,
    ontology_option,
    score_output_options,
    score_payload,
    short_metrics,
    table,
    with_intervals,
)


@click.command()
@ontology_option
@ontology_format_option
@data_option
@click.option(
    "--export-schema",
    "export_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the derived JSON Schema (draft 2020-12) here.",
)
@click.option(
    "--export-flavor",
    type=click.Choice(["json-schema", "decoder", "openai"]),
    default="json-schema",
    show_default=True,
    help="json-schema: full schema; decoder: vendor keywords removed; openai: wrapped as a response_format.",
)
@click.option(
    "--shapes",
    "shapes_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Also validate the outputs rendered as RDF against these SHACL shapes (e.g. shapes/output-attack.ttl).",
)
@family_options("conformance")
@chunk_size_option
@score_output_options
def command(
    ontology_path,
    ontology_format,
    data_path,
    export_path,
    export_flavor,
    shapes_path,
    chunk_size,
    rows,
    fmt,
    ci,
    ci_level,
    seed,
    **kwargs,
) -> None:
    """Schema validity, vocabulary, status and domain/range conformance."""
    from kg_rageval.families.conformance import derive_schema
    from kg_rageval.families.conformance.outlines_backend import export_schema
    from kg_rageval.scoring import get_scorer

    opts = family_kwargs("conformance", kwargs)
    spec_path = opts["spec"]
    onto = load_ontology_cli(ontology_path, ontology_format)
    bound = get_scorer("conformance").bind(onto, where="score conformance", **opts)
    spec = bound.inputs["spec"]
    derived = derive_schema(onto, spec)
    bound.inputs["spec"] = derived
    if export_path:
        export_schema(derived, export_path, flavor=export_flavor)
    result = bound(data_path, chunk_size=chunk_size)  # streamed in chunks (one chunk of dicts held)
    ev = result.single
    breakdowns = [k for k in ev.keys if k.startswith("slice:")]  # the slices of the scored rows
    canonical = with_intervals(result, ci, ci_level, seed)
    n_read = len(ev) + len(ev.unscored)  # every record is a row or unscored
    payload = score_payload(
        result,
        data_path=data_path,
        n_records=n_read,
        onto=onto,
        rows=rows,
        breakdowns=breakdowns,
        metrics=canonical,
    )
    payload["schema"] = {
        "spec": spec_path,
        "title": spec.title,
        "size_bytes": derived.size_bytes,
        "vocabularies": {k: {"size": len(v), "mode": v.mode} for k, v in derived.vocabularies.items()},
        "exported_to": export_path,
    }
    shacl_ev = None
    if shapes_path:
        from kg_rageval.families.conformance.shacl import score_shacl
        from kg_rageval.records import read_records

        shacl_ev = score_shacl(onto, read_records(data_path), shapes_path, spec)  # the RDF of every output
        payload["shacl"] = shacl_ev.to_dict(rows=rows)
    emit_score(payload, fmt, lambda p: _render(p, ev, shacl_ev, short_metrics(canonical, "conformance")))


def _render(payload: dict, ev, shacl_ev, metrics: dict) -> str:
    s = payload["schema"]
    vocab = ", ".join(
        f"{k}={v['size']}{'' if v['mode'] == 'enum' else ' (lookup)'}" for k, v in s["vocabularies"].items()
    )
    parts = [
        f"{payload['counts']['records']} records; schema {s['title']} ({s['size_bytes']} bytes; {vocab})",
    ]
    if s["exported_to"]:
        parts.append(f"schema written to {s['exported_to']}")
    parts.append(metrics_table(metrics))
    if ev.unscored:
        parts.append("unscored: " + ", ".join(f"{k}={v}" for k, v in ev.unscored_counts.items()))
    problems = []
    for r in ev.rows():
        p = r.get("problems") or {}
        for u in p.get("unknown_ids", []):
            sug = u["suggestion"]
            problems.append(
                [
                    r["record_id"],
                    u["slot"],
                    u["value"],
                    "unknown id",
                    f"{sug['id']} ({sug['how']})" if sug else "—",
                ]
            )
        for u in p.get("inactive_ids", []):
            problems.append([r["record_id"], u["slot"], u["id"], u["status"], u["replacement"] or "—"])
        for v in p.get("domain_range_violations", []):
            problems.append(
                [r["record_id"], v["side"], " ".join(v["triple"]), "domain/range", " | ".join(v["expected"])]
            )
        if len(problems) >= 20:
            break
    if problems:
        parts.append("\nfirst problems:")
        parts.append(
            table(problems[:20], ["record", "slot", "value", "problem", "suggestion/replacement/expected"])
        )
    if shacl_ev is not None:
        parts.append("\n== SHACL")
        parts.append(metrics_table(shacl_ev.metrics()))
    return "\n".join(parts)
