"""``kg-rageval score preference``: hard filter or soft boost for a relevance preference (the
seed article's Part 5 procedure; ``docs/retrieval.md``), with one global preference or one per
query (``--value-from labels.pred``: *within each query's linked concept*).

The JSON is every ``score <family>`` command's shape (the ``preference`` family's metrics);
with the three pre-registered thresholds (``--delta-min``, ``--epsilon``,
``--recall-loss-max``) it adds ``recommendation`` (:func:`~kg_rageval.families.retrieval.hard_vs_soft`)."""

from __future__ import annotations

import click

from kg_rageval.cli.common import (
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
@family_options("preference")
@click.option("--field", "field_", default=None, help="Shorthand for --preference: the preference's field.")
@click.option(
    "--op",
    type=click.Choice(["eq", "in", "ne", "not_in", "within"]),
    default="eq",
    show_default=True,
    help="With --field: the operator.",
)
@click.option("--value", "values", multiple=True, help="With --field: the value (repeatable: a list).")
@click.option(
    "--value-from",
    default=None,
    metavar="PATH",
    help="With --field: read each query's value from this record path (labels.pred, mentions.pred, ...).",
)
@click.option(
    "--delta-min",
    type=float,
    default=None,
    help="Pre-registered: least lower CI bound of the precision gain (with --epsilon and "
    "--recall-loss-max: a recommendation).",
)
@click.option(
    "--epsilon", type=float, default=None, help="Pre-registered: largest acceptable exclusion rate."
)
@click.option(
    "--recall-loss-max", type=float, default=None, help="Pre-registered: largest acceptable recall loss."
)
@click.option(
    "--resamples",
    type=click.IntRange(min=1),
    default=2000,
    show_default=True,
    help="Bootstrap resamples of the precision-gain CI of the recommendation.",
)
@score_output_options
def command(
    ontology_path,
    ontology_format,
    data_path,
    field_,
    op,
    values,
    value_from,
    delta_min,
    epsilon,
    recall_loss_max,
    resamples,
    rows,
    fmt,
    ci,
    ci_level,
    seed,
    **kwargs,
) -> None:
    """Hard filter or soft boost for a relevance preference: both systems' recall and precision,
    the paired precision gain, the exclusion rate, and (with the three pre-registered thresholds)
    the recommendation. The preference: --preference JSON, or --field F --op OP (--value V ... |
    --value-from PATH); with neither, each record's retrieval.preference."""
    from kg_rageval.base.errors import ConfigError
    from kg_rageval.families.retrieval import hard_vs_soft
    from kg_rageval.records import read_records, slice_keys
    from kg_rageval.scoring import get_scorer

    opts = family_kwargs("preference", kwargs)
    if field_ is not None:
        if opts.get("preference") is not None:
            raise ConfigError("give --preference JSON or --field/--op/--value, not both")
        if bool(values) == bool(value_from):
            raise ConfigError("--field needs exactly one of --value or --value-from PATH")
        if value_from:
            opts["preference"] = {"field": field_, "op": op, "value": {"from": value_from}}
        else:
            opts["preference"] = {
                "field": field_,
                "op": op,
                "value": list(values) if len(values) > 1 or op in ("in", "not_in") else values[0],
            }
    elif values or value_from:
        raise ConfigError("--value / --value-from need --field")
    thresholds = (delta_min, epsilon, recall_loss_max)
    if any(t is not None for t in thresholds) and not all(t is not None for t in thresholds):
        raise ConfigError(
            "a recommendation needs all three thresholds: --delta-min, --epsilon, --recall-loss-max"
        )
    onto = load_ontology_cli(ontology_path, ontology_format)
    records = read_records(data_path)
    bound = get_scorer("preference").bind(onto, where="score preference", **opts)
    evals = bound(records)
    canonical = with_intervals(evals, ci, ci_level, seed)
    payload = score_payload(
        evals,
        data_path=data_path,
        n_records=len(records),
        onto=onto,
        rows=rows,
        breakdowns=[f"slice:{k}" for k in slice_keys(records)],
        metrics=canonical,
    )
    payload["preference"] = evals["preference"].meta.get("preference")
    payload["n_without_preference"] = evals["preference"].meta.get("n_without_preference", 0)
    if delta_min is not None:
        o = bound.options
        res = hard_vs_soft(
            records,
            bound.inputs["corpus"],
            o["preference"],
            ontology=onto,
            k=o["k"],
            boost=o["boost"],
            delta_min=delta_min,
            epsilon=epsilon,
            recall_loss_max=recall_loss_max,
            level=ci_level,
            n_resamples=resamples,
            seed=seed,
        )
        payload["recommendation"] = res.to_dict()
    emit_score(payload, fmt, lambda p: _render(p, evals, canonical))


def _render(payload: dict, evals, metrics: dict) -> str:
    parts = [
        f"preference {payload['preference']}: {len(evals['preference'])} queries compared; "
        f"{payload['n_without_preference']} without a preference"
    ]
    parts.extend(families_text(evals, metrics=metrics))
    r = payload.get("recommendation")
    if r:
        lo, hi = r["precision_gain_ci"]
        parts += [
            f"\nprecision gain {r['precision_gain']:+.4f} [{lo:.4f}, {hi:.4f}], exclusion rate "
            f"{r['exclusion_rate']:.4f}, recall delta {r['recall_delta']:+.4f}",
            f"recommendation: {r['recommendation']}",
            *("  " + x for x in r["reasons"]),
        ]
    return "\n".join(parts)
