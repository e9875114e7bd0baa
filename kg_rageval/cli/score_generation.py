"""``kg-rageval score generation``: faithfulness, correctness, refusal, unseen concepts and
calibration over a records file (see ``docs/generation.md``)."""

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
@family_options("generation")
@chunk_size_option
@score_output_options
@click.option(
    "--parquet",
    "parquet_dir",
    type=click.Path(file_okay=False),
    default=None,
    metavar="DIR",
    help="Also write each member's per-record results and metrics as Parquet into DIR "
    "(docs/interop.md, Out; the parquet extra).",
)
@click.option(
    "--ragas-table",
    "ragas_table_path",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE",
    help="Also write a RAGAS-compatible table (RAGAS's columns, then one generation.<metric> column "
    "per record): Parquet, or CSV when FILE ends in .csv.",
)
def command(
    ontology_path,
    ontology_format,
    data_path,
    chunk_size,
    rows,
    fmt,
    ci,
    ci_level,
    seed,
    parquet_dir=None,
    ragas_table_path=None,
    **kwargs,
) -> None:
    """Faithfulness, answer correctness, refusal behaviour, unseen concepts and calibration."""
    from kg_rageval.base.outputs import refuse_overwrite
    from kg_rageval.scoring import get_scorer

    refuse_overwrite({"--ragas-table": ragas_table_path}, {"--data": data_path})
    onto = load_ontology_cli(ontology_path, ontology_format)
    evals = get_scorer("generation").score(
        onto,
        data_path,
        chunk_size=chunk_size,
        where="score generation",
        **family_kwargs("generation", kwargs),
    )
    first = next(iter(evals.values()))  # every member keys its rows by the slices of all records
    keys = [k for k in first.keys if k.startswith("slice:")]
    canonical = with_intervals(evals, ci, ci_level, seed)
    n_read = len(first) + len(first.unscored)  # each member scores or lists every record
    payload = score_payload(
        evals, data_path=data_path, n_records=n_read, onto=onto, rows=rows, breakdowns=keys, metrics=canonical
    )
    if parquet_dir or ragas_table_path:
        from kg_rageval.interop.export import write_parquet, write_ragas_table
        from kg_rageval.records import read_records

        written: dict[str, str] = {}
        if parquet_dir:
            write_parquet(evals, parquet_dir)
            written["parquet"] = str(parquet_dir)
        if ragas_table_path:
            write_ragas_table(read_records(data_path), evals, ragas_table_path)
            written["ragas_table"] = str(ragas_table_path)
        payload["written"] = written
    emit_score(payload, fmt, lambda p: _render(p, evals, canonical))


def _render(payload: dict, evals, metrics: dict) -> str:
    parts = [f"{payload['counts']['records']} records, ontology {payload['ontology']['source']}"]
    parts.extend(families_text(evals, "scored rows", metrics))
    for ev in evals.values():
        orphan = ev.meta.get("n_judgments_without_record")
        if orphan:
            parts.append(
                f"warning: {orphan} judgments name no record of the data file, e.g. "
                + ", ".join(repr(i) for i in ev.meta["judgments_without_record"][:5])
            )
    for kind, path in payload.get("written", {}).items():
        parts.append(f"wrote {kind}: {path}")
    return "\n".join(parts)
