"""``kg-rageval score extraction``: NER P/R/F1 per entity type (seqeval default or strict
mode), relation P/R/F1 per relation type (TACRED convention), hierarchy-aware type credit and
domain/range violations through the ontology (see ``docs/extraction.md``).

The labelled sample comes as records (``--data``) or as the files the reference tools read:
CoNLL BIO (``--conll``, conlleval's ``TOKEN ... GOLD PRED`` layout, or with ``--conll-pred`` a
second file whose last column is the prediction), TACRED JSON (``--tacred`` with
``--tacred-pred``, ``{id: relation}``) and DocRED JSON (``--docred`` with ``--docred-pred``,
the official result list)."""

from __future__ import annotations

from typing import Any

import click

from kg_rageval.cli.common import (
    chunk_size_option,
    emit_section_score,
    family_kwargs,
    family_options,
    load_ontology_cli,
    score_output_options,
)

_FILE = click.Path(exists=True, dir_okay=False)

NOTES = [
    "per type: --rows or the slice:entity_type / slice:relation_type breakdowns; macro averages "
    "(seqeval's zero_division=0) in meta.macro; relations in --negative-labels count nowhere (TACRED)"
]


def _records(
    data: str | None,
    conll: str | None,
    conll_pred: str | None,
    tacred: str | None,
    tacred_pred: str | None,
    docred: str | None,
    docred_pred: str | None,
) -> tuple[Any, str]:
    """The records to score and the path the envelope names: exactly one source."""
    from kg_rageval.base.errors import InputError

    given = [
        n for n, v in (("--data", data), ("--conll", conll), ("--tacred", tacred), ("--docred", docred)) if v
    ]
    if len(given) != 1:
        raise InputError(
            "give exactly one of --data, --conll, --tacred, --docred"
            + (f" (given: {', '.join(given)})" if given else "")
        )
    for flag, value, base in (
        ("--conll-pred", conll_pred, conll),
        ("--tacred-pred", tacred_pred, tacred),
        ("--docred-pred", docred_pred, docred),
    ):
        if value and not base:
            raise InputError(f"{flag} goes with {flag.removesuffix('-pred')}")
    if data:
        return data, data
    if conll:
        from kg_rageval.records.conll import read_conll, read_conll_pair

        if conll_pred:
            return read_conll_pair(conll, conll_pred), conll
        return read_conll(conll, gold_col=-2, pred_col=-1), conll
    if tacred:
        from kg_rageval.records.relation_sets import read_tacred

        return read_tacred(tacred, tacred_pred), tacred
    from kg_rageval.records.relation_sets import read_docred

    assert docred is not None
    return read_docred(docred, docred_pred), docred


@click.command(name="extraction")
@click.option(
    "--ontology",
    "-O",
    "ontology_path",
    default=None,
    help="Ontology whose classes are the entity types and whose properties the relations (optional).",
)
@click.option("--ontology-format", default=None, help="Loader name when the extension does not tell.")
@click.option(
    "--data", "-d", "data_path", type=_FILE, default=None, help="Records file (JSONL, see docs/records.md)."
)
@click.option(
    "--conll",
    type=_FILE,
    default=None,
    help="CoNLL BIO file: TOKEN ... GOLD PRED (conlleval), or gold tags in the last column with --conll-pred.",
)
@click.option("--conll-pred", type=_FILE, default=None, help="With --conll: the predictions (last column).")
@click.option("--tacred", type=_FILE, default=None, help="TACRED JSON file of sentences (gold relations).")
@click.option(
    "--tacred-pred", type=_FILE, default=None, help="With --tacred: predictions {sentence id: relation}."
)
@click.option("--docred", type=_FILE, default=None, help="DocRED JSON file of documents (gold triples).")
@click.option("--docred-pred", type=_FILE, default=None, help="With --docred: the official result list.")
@family_options("extraction")
@chunk_size_option
@score_output_options
def command(
    ontology_path: str | None,
    ontology_format: str | None,
    data_path: str | None,
    conll: str | None,
    conll_pred: str | None,
    tacred: str | None,
    tacred_pred: str | None,
    docred: str | None,
    docred_pred: str | None,
    chunk_size: int | None,
    rows: bool,
    fmt: str,
    ci: int,
    ci_level: float,
    seed: int,
    **kwargs: Any,
) -> None:
    """NER and relation extraction P/R/F1 per type, hierarchy credit and domain/range violations."""
    from kg_rageval.scoring import get_scorer

    data, shown = _records(data_path, conll, conll_pred, tacred, tacred_pred, docred, docred_pred)
    onto = load_ontology_cli(ontology_path, ontology_format) if ontology_path else None
    evals = get_scorer("extraction").score(
        onto,
        data,
        chunk_size=chunk_size if data_path else None,
        where="score extraction",
        **family_kwargs("extraction", kwargs),
    )
    emit_section_score(
        evals,
        data_path=shown,
        onto=onto,
        rows=rows,
        fmt=fmt,
        ci=ci,
        ci_level=ci_level,
        seed=seed,
        notes=[
            *NOTES,
            *(() if onto else ("no ontology: no hierarchy credit, no unknown-type or domain/range check",)),
        ],
    )
