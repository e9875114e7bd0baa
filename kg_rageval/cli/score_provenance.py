"""``kg-rageval score provenance``: citation completeness and precision/recall, provenance
depth, reproducibility over repeated runs, run-manifest checks and the PROV-O audit trail
(see ``docs/provenance.md``)."""

from __future__ import annotations

import click

from .common import (data_option, emit, families_text, family_kwargs, family_options, format_option, load_ontology_cli,
                     ontology_format_option, ontology_option, payload_head)


@click.command()
@ontology_option
@ontology_format_option
@data_option
@family_options("provenance")
@click.option("--manifest", "manifest_paths", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Run manifest JSON (first = the --data run; repeatable, one per run).")
@click.option("--prov-out", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the PROV-O audit trail (Turtle) here and validate it with shapes/provenance.ttl.")
@click.option("--rows/--no-rows", default=True, show_default=True, help="Include per-record rows in JSON output.")
@format_option
def command(ontology_path, ontology_format, data_path, manifest_paths, prov_out, rows, fmt, **kwargs) -> None:
    """Citation completeness, provenance depth, reproducibility and the PROV-O trail."""
    from ..contract import get_scorer
    from ..generation.fields import all_slice_keys
    from ..provenance import export_prov, manifest_report, read_manifest, validate_prov
    from ..records import read_records

    onto = load_ontology_cli(ontology_path, ontology_format)
    records = read_records(data_path)
    bound = get_scorer("provenance").bind(onto, where="score provenance", **family_kwargs("provenance", kwargs))
    corpus = bound.inputs["corpus"]
    manifests = [read_manifest(p) for p in manifest_paths]
    evals = bound(records)
    keys = all_slice_keys(records)[1:]
    payload = {
        **payload_head("score provenance", data_path, len(records), onto),
        "corpus": {"source": corpus.source, "hash": corpus.hash, "documents": len(corpus)},
        "families": {name: ev.to_dict(rows=rows, breakdowns=keys) for name, ev in evals.items()},
        "manifest": manifest_report(manifests, corpus=corpus, ontology=onto) if manifests else None,
    }
    if prov_out:
        graph = export_prov(records, manifest=manifests[0] if manifests else None, corpus=corpus)
        graph.serialize(destination=prov_out, format="turtle")
        result = validate_prov(graph)
        payload["prov"] = {"path": prov_out, "triples": len(graph), "conforms": result["conforms"],
                           "violations": result["violations"], "messages": result["messages"]}
    emit(payload, fmt, lambda p: _render(p, evals))


def _render(payload: dict, evals: dict) -> str:
    parts = [f"{payload['n_records']} records, corpus {payload['corpus']['source']} ({payload['corpus']['documents']} documents)"]
    parts.extend(families_text(evals))
    man = payload.get("manifest")
    if man:
        parts.append("\n== run manifests")
        for c in man["manifests"]:
            state = "complete" if c["complete"] else f"INCOMPLETE missing={c['missing']} mismatched={[x['field'] for x in c['mismatched']]}"
            parts.append(f"{c['source']}: {state}")
        if man["same_configuration"] is not None:
            parts.append(f"same configuration across runs: {man['same_configuration']} {man['differing'] or ''}")
    prov = payload.get("prov")
    if prov:
        parts.append(f"\n== PROV-O trail {prov['path']}: {prov['triples']} triples, "
                     f"{'conforms' if prov['conforms'] else 'DOES NOT CONFORM'} ({prov['violations']} violations)")
        parts.extend("  " + m for m in prov["messages"][:10])
    return "\n".join(parts)
