"""``kg-rageval import FORMAT INPUT -o records.jsonl``: turn a RAGAS or DeepEval dataset into
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
@format_option
def command(fmt_name: str, input_path: str, output: str, fmt: str) -> None:
    """Import a RAGAS or DeepEval dataset as kg-rageval records."""
    from kg_rageval.base.outputs import refuse_overwrite
    from kg_rageval.interop.formats import read
    from kg_rageval.records import write_records

    refuse_overwrite({"--output": output}, {"INPUT": input_path})
    imported = read(fmt_name, input_path)
    write_records(output, imported.records)
    summary = {"command": "import", **imported.summary(), "output": output}
    if fmt == "json":
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(f"{len(imported.records)} records from {input_path} ({fmt_name}) -> {output}")
    for name, n in imported.missing.items():
        click.echo(f"  missing {name}: {n}")
