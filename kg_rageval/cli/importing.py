"""``kg-rageval import FORMAT INPUT -o records.jsonl``: turn a RAGAS or DeepEval dataset, a
BEIR folder (and run), TREC RAG answer or nugget files, or Phoenix / OTLP span exports into
kg-rageval records, printing how many rows lacked each record field (``docs/interop.md``)."""

from __future__ import annotations

import json

import click

from kg_rageval.cli.common import format_option
from kg_rageval.interop.formats import FORMATS


@click.command(name="import")
@click.argument("fmt_name", metavar="FORMAT", type=click.Choice(sorted(FORMATS)))
@click.argument("input_path", metavar="INPUT", type=click.Path(exists=True))
@click.option(
    "--output",
    "-o",
    "output",
    required=True,
    type=click.Path(dir_okay=False, writable=True),
    help="Write the records (JSONL) here; never over INPUT.",
)
@click.option(
    "--golden",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Golden records (JSONL): join the imported rows onto them; every golden record is written, "
    "one without a matching row as a missing run.",
)
@click.option(
    "--join-key",
    default="query_id",
    show_default=True,
    help="query_id (imported id = golden id), text (normalised query text) or attribute:NAME "
    "(the imported source field NAME = golden id).",
)
@click.option("--split", default=None, help="beir: the qrels split (qrels/<split>.tsv; default test).")
@click.option(
    "--run",
    "run_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="beir: a run file (TREC six columns or ranx/ir_measures JSON) -> retrieval.run.",
)
@click.option(
    "--nuggets",
    "nuggets_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="trec-rag: the topics' nugget file, giving the importance of assignment nuggets without one.",
)
@click.option(
    "--id-attribute",
    default=None,
    metavar="NAME",
    help="phoenix, otlp: the root span attribute that gives the record id (default: the trace id).",
)
@click.option(
    "--link",
    "link_ontology",
    type=click.Path(exists=True),
    default=None,
    metavar="ONTOLOGY",
    help="Run the dictionary linker of this ontology over each record's query, contexts and answer: "
    "ids under 'linked' (linked, not labelled) and slices.linked_branch for per-branch breakdowns.",
)
@format_option
def command(
    fmt_name: str,
    input_path: str,
    output: str,
    golden: str | None,
    join_key: str,
    split: str | None,
    run_path: str | None,
    nuggets_path: str | None,
    id_attribute: str | None,
    link_ontology: str | None,
    fmt: str,
) -> None:
    """Import a RAGAS, DeepEval, BEIR, TREC RAG, Phoenix or OTLP export as kg-rageval records."""
    from kg_rageval.base.outputs import refuse_overwrite
    from kg_rageval.interop.formats import read
    from kg_rageval.interop.join import check_key, join
    from kg_rageval.records import read_records, write_records

    refuse_overwrite(
        {"--output": output},
        {
            "INPUT": input_path,
            "--golden": golden,
            "--run": run_path,
            "--nuggets": nuggets_path,
            "--link": link_ontology,
        },
    )
    check_key(join_key)
    imported = read(
        fmt_name, input_path, split=split, run=run_path, nuggets=nuggets_path, id_attribute=id_attribute
    )
    records = imported.records
    summary = {"command": "import", **imported.summary(), "output": output}
    if golden:
        joined = join(records, read_records(golden), join_key)
        records = joined.records
        summary["join"] = {"golden": golden, "key": join_key, **joined.summary()}
    if link_ontology:
        from kg_rageval.cli.common import load_ontology_cli
        from kg_rageval.interop.link import link_records

        counts = link_records(records, load_ontology_cli(link_ontology), source=link_ontology)
        summary["link"] = {"ontology": link_ontology, "linker": "dictionary", **counts}
    write_records(output, records)
    if fmt == "json":
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(
        f"{len(imported.records)} rows from {input_path} ({fmt_name}) -> {len(records)} records in {output}"
    )
    for name, n in imported.missing.items():
        click.echo(f"  missing {name}: {n}")
    for name, value in imported.counts.items():
        if isinstance(value, list):
            if value:
                click.echo(f"    {name}: {', '.join(map(str, value))}")
        else:
            click.echo(f"  {name}: {value}")
    if link_ontology:
        lk = summary["link"]
        click.echo(
            f"  linked (dictionary, {link_ontology}): {lk['n_linked_queries']} queries with a concept, "
            f"{lk['n_mentions']} mentions, {lk['n_abstained']} ambiguous forms left unlinked"
        )
    if golden:
        j = summary["join"]
        click.echo(f"  joined on {join_key}: {j['matched']} matched")
        click.echo(
            f"  golden records without a row (missing runs): {j['n_unmatched_golden']}"
            + (f" ({', '.join(j['unmatched_golden'][:20])})" if j["unmatched_golden"] else "")
        )
        click.echo(
            f"  rows without a golden record (not scored): {j['n_unmatched_imported']}"
            + (f" ({', '.join(j['unmatched_imported'][:20])})" if j["unmatched_imported"] else "")
        )
