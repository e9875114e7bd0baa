"""``kg-rageval link``: run a baseline linker over texts and write predictions as records
(see ``docs/linking.md``)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from kg_rageval.cli.common import format_option, load_ontology_cli, ontology_format_option, ontology_option

if TYPE_CHECKING:  # the linkers import lazily (spaCy, sentence-transformers)
    from kg_rageval.families.linking.dictionary import DictionaryLinker
    from kg_rageval.families.linking.embedding import EmbeddingLinker


@click.command()
@ontology_option
@ontology_format_option
@click.option(
    "--text",
    "text_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Plain text, one query per line; or a records JSONL file (its text/query is "
    "linked and mentions.pred filled in, gold kept).",
)
@click.option(
    "--linker",
    type=click.Choice(["dictionary", "embedding"]),
    default="dictionary",
    show_default=True,
    help="dictionary: exact normalised labels/synonyms (core install); "
    "embedding: MiniLM re-ranker (needs the nlp extra).",
)
@click.option(
    "--mode",
    type=click.Choice(["detect", "gold_spans"]),
    default="detect",
    show_default=True,
    help="detect: find mentions in the text; gold_spans: link the records' gold spans only.",
)
@click.option(
    "--ambiguous",
    type=click.Choice(["abstain", "first", "lca"]),
    default="abstain",
    show_default=True,
    help="Dictionary rule for a surface form naming several nodes.",
)
@click.option(
    "--nil-threshold",
    type=float,
    default=0.7,
    show_default=True,
    help="Embedding linker: best cosine below this predicts NIL.",
)
@click.option(
    "--output",
    "-o",
    "output",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the records (JSONL) here; default: standard output.",
)
@format_option
def link(
    ontology_path, ontology_format, text_path, linker, mode, ambiguous, nil_threshold, output, fmt
) -> None:
    """Run a baseline linker and write predictions in the record format."""
    from kg_rageval.base.errors import InputError
    from kg_rageval.base.outputs import refuse_overwrite
    from kg_rageval.families.linking.testset import run_linker
    from kg_rageval.records import read_records, record_error, record_text, write_records

    refuse_overwrite({"--output": output}, {"TEXT": text_path, "--ontology": ontology_path})
    onto = load_ontology_cli(ontology_path, ontology_format)
    if text_path.endswith((".jsonl", ".jsonl.gz")):
        records = read_records(text_path)
        for r in records:
            if record_text(r) is None:
                raise record_error(r, "text", "needs a 'text' or 'query' string to link")
            if not isinstance(r.setdefault("mentions", {}), dict):
                raise record_error(r, "mentions", "must be an object with 'gold' and 'pred' lists")
            r["mentions"].setdefault("gold", [])
    else:
        if mode == "gold_spans":
            raise click.BadParameter(
                "gold_spans needs a records JSONL file with gold mentions", param_hint="--mode"
            )
        with open(text_path, encoding="utf-8") as fh:
            lines = [ln.rstrip("\n") for ln in fh]
        records = [
            {"id": f"line-{k}", "query": t, "mentions": {}} for k, t in enumerate(lines, 1) if t.strip()
        ]
    if not records:
        raise InputError(
            "nothing to link: the file has no records"
            if text_path.endswith((".jsonl", ".jsonl.gz"))
            else "nothing to link: the file has no non-blank lines",
            source=text_path,
        )
    model: DictionaryLinker | EmbeddingLinker
    if linker == "dictionary":
        from kg_rageval.families.linking.dictionary import DictionaryLinker

        model = DictionaryLinker(onto, ambiguous=ambiguous)
    else:
        from kg_rageval.families.linking.embedding import EmbeddingLinker

        model = EmbeddingLinker(onto, nil_threshold=nil_threshold)
    out = run_linker(model, records, mode=mode)
    for r in out:
        if not r["mentions"].get("gold"):
            r["mentions"].pop("gold", None)
    n_mentions = sum(len(r["mentions"]["pred"]) for r in out)
    n_nil = sum(1 for r in out for m in r["mentions"]["pred"] if m["id"] is None)
    summary = {
        "command": "link",
        "linker": linker,
        "mode": mode,
        "records": len(out),
        "mentions": n_mentions,
        "nil": n_nil,
        "output": output,
    }
    if output:
        write_records(output, out)
        if fmt == "json":
            click.echo(json.dumps(summary, indent=2))
        else:
            click.echo(f"{len(out)} records, {n_mentions} predicted mentions ({n_nil} NIL) -> {output}")
    elif fmt == "json":  # one JSON document: the summary and the records
        public = [{k: v for k, v in r.items() if not k.startswith("_")} for r in out]
        click.echo(json.dumps({**summary, "output_records": public}, indent=2, ensure_ascii=False))
    else:  # JSONL on standard output (redirect it to a file for `score linking`)
        for r in out:
            sys.stdout.write(
                json.dumps({k: v for k, v in r.items() if not k.startswith("_")}, ensure_ascii=False) + "\n"
            )
