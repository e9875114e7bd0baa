"""``kg-rageval score provenance``: citation completeness and precision/recall, provenance
depth, reproducibility over repeated runs, run-manifest checks and the PROV-O audit trail
(see ``docs/provenance.md``)."""

from __future__ import annotations

import click

from kg_rageval.cli.common import (
    chunk_size_option,
    data_option,
    emit_score,
    families_text,
    family_kwargs,
    family_options,
    load_ontology_cli,
    ontology_format_option,
    ontology_option,
    score_output_options,
    score_payload,
    with_intervals,
)


@click.command()
@ontology_option
@ontology_format_option
@data_option
@family_options("provenance")
@click.option(
    "--prov-out",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the PROV-O audit trail (Turtle) here and validate it with shapes/provenance.ttl.",
)
@chunk_size_option
@score_output_options
def command(
    ontology_path, ontology_format, data_path, prov_out, chunk_size, rows, fmt, ci, ci_level, seed, **kwargs
) -> None:
    """Citation completeness, provenance depth, reproducibility and the PROV-O trail."""
    from kg_rageval.families.provenance import export_prov, manifest_report, validate_prov
    from kg_rageval.scoring import get_scorer

    onto = load_ontology_cli(ontology_path, ontology_format)
    bound = get_scorer("provenance").bind(
        onto, where="score provenance", **family_kwargs("provenance", kwargs)
    )
    corpus = bound.inputs["corpus"]
    manifests = list(bound.options.get("manifests") or ())  # read by the family's loader
    evals = bound(data_path, chunk_size=chunk_size)  # streamed in chunks (one chunk of dicts held)
    depth = evals["provenance_depth"]  # a row or an unscored entry per record
    keys = list(evals["citations"].keys)[1:]  # the slices of every record (gold_node first)
    canonical = with_intervals(evals, ci, ci_level, seed)
    payload = score_payload(
        evals,
        data_path=data_path,
        n_records=len(depth) + len(depth.unscored),
        onto=onto,
        rows=rows,
        breakdowns=keys,
        metrics=canonical,
        keep_spooled=True,  # the trail written from its temporary file (emit), never held whole
    )
    payload["corpus"] = {"source": corpus.source, "hash": corpus.hash, "documents": len(corpus)}
    payload["manifest"] = manifest_report(manifests, corpus=corpus, ontology=onto) if manifests else None
    if prov_out:
        trail = evals.get("prov_trail")
        if trail is not None:  # built and validated by the family already (trail: true)
            from kg_rageval.base.spool import write_text

            write_text(trail.meta["turtle"], prov_out)
            result, triples = trail.meta, trail.meta["triples"]
        else:  # --no-trail: the rdflib graph and pySHACL, on every record at once
            from kg_rageval.records import read_records

            graph = export_prov(
                read_records(data_path), manifest=manifests[0] if manifests else None, corpus=corpus
            )
            graph.serialize(destination=prov_out, format="turtle")
            result, triples = validate_prov(graph), len(graph)
        payload["prov"] = {
            "path": prov_out,
            "triples": triples,
            "conforms": result["conforms"],
            "violations": result["violations"],
            "messages": result["messages"],
        }
    emit_score(payload, fmt, lambda p: _render(p, evals, canonical))


def _render(payload: dict, evals, metrics: dict) -> str:
    parts = [
        f"{payload['counts']['records']} records, corpus {payload['corpus']['source']} ({payload['corpus']['documents']} documents)"
    ]
    parts.extend(families_text(evals, metrics=metrics))
    man = payload.get("manifest")
    if man:
        parts.append("\n== run manifests")
        for c in man["manifests"]:
            state = (
                "complete"
                if c["complete"]
                else f"INCOMPLETE missing={c['missing']} mismatched={[x['field'] for x in c['mismatched']]}"
            )
            parts.append(f"{c['source']}: {state}")
        if man["same_configuration"] is not None:
            parts.append(
                f"same configuration across runs: {man['same_configuration']} {man['differing'] or ''}"
            )
    prov = payload.get("prov")
    if prov:
        parts.append(
            f"\n== PROV-O trail {prov['path']}: {prov['triples']} triples, "
            f"{'conforms' if prov['conforms'] else 'DOES NOT CONFORM'} ({prov['violations']} violations)"
        )
        parts.extend("  " + m for m in prov["messages"][:10])
    return "\n".join(parts)
