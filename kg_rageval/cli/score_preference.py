"""``kg-rageval score preference``: hard filter or soft boost for a relevance preference (the
seed article's Part 5 procedure; ``docs/retrieval.md``), with one global preference or one per
query (``--value-from labels.pred``: *within each query's linked concept*)."""

from __future__ import annotations

import click

from .common import (data_option, emit, family_kwargs, family_options, format_option, load_ontology_cli,
                     ontology_format_option, ontology_option)


@click.command()
@ontology_option
@ontology_format_option
@data_option
@family_options("preference")
@click.option("--field", "field_", default=None, help="Shorthand for --preference: the preference's field.")
@click.option("--op", type=click.Choice(["eq", "in", "ne", "not_in", "within"]), default="eq", show_default=True,
              help="With --field: the operator.")
@click.option("--value", "values", multiple=True, help="With --field: the value (repeatable: a list).")
@click.option("--value-from", default=None, metavar="PATH",
              help="With --field: read each query's value from this record path (labels.pred, mentions.pred, ...).")
@click.option("--delta-min", type=float, required=True, help="Pre-registered: least lower CI bound of the precision gain.")
@click.option("--epsilon", type=float, required=True, help="Pre-registered: largest acceptable exclusion rate.")
@click.option("--recall-loss-max", type=float, required=True, help="Pre-registered: largest acceptable recall loss.")
@click.option("--level", type=float, default=0.95, show_default=True, help="Confidence level of the gain CI.")
@click.option("--resamples", type=click.IntRange(min=1), default=2000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@format_option
def command(ontology_path, ontology_format, data_path, field_, op, values, value_from, delta_min, epsilon,
            recall_loss_max, level, resamples, seed, fmt, **kwargs) -> None:
    """Hard filter or soft boost for a relevance preference: paired precision gain, recall
    delta, exclusion rate and the recommendation from your pre-registered thresholds. The
    preference: --preference JSON, or --field F --op OP (--value V ... | --value-from PATH); with
    neither, each record's retrieval.preference."""
    from ..contract import get_scorer
    from ..errors import ConfigError
    from ..records import read_records
    from ..retrieval import hard_vs_soft

    opts = family_kwargs("preference", kwargs)
    if field_ is not None:
        if opts.get("preference") is not None:
            raise ConfigError("give --preference JSON or --field/--op/--value, not both")
        if bool(values) == bool(value_from):
            raise ConfigError("--field needs exactly one of --value or --value-from PATH")
        if value_from:
            opts["preference"] = {"field": field_, "op": op, "value": {"from": value_from}}
        else:
            opts["preference"] = {"field": field_, "op": op,
                                  "value": list(values) if len(values) > 1 or op in ("in", "not_in") else values[0]}
    elif values or value_from:
        raise ConfigError("--value / --value-from need --field")
    onto = load_ontology_cli(ontology_path, ontology_format)
    records = read_records(data_path)
    bound = get_scorer("preference").bind(onto, where="score preference", **opts)
    o = bound.options
    res = hard_vs_soft(records, bound.inputs["corpus"], o["preference"], ontology=onto, k=o["k"], boost=o["boost"],
                       delta_min=delta_min, epsilon=epsilon, recall_loss_max=recall_loss_max, level=level,
                       n_resamples=resamples, seed=seed)
    payload = {"command": "score preference", "data": data_path, "n_records": len(records),
               "ontology": {"source": onto.source, "hash": onto.content_hash}, "result": res.to_dict()}
    emit(payload, fmt, lambda p: _render(p))


def _render(payload: dict) -> str:
    r = payload["result"]
    lo, hi = r["precision_gain_ci"]
    return "\n".join([
        f"preference {r['preference']}: {r['n_queries']} queries compared at k={r['k']} (boost {r['boost']}); "
        f"{r['n_without_preference']} without a preference, {r['n_unknown_preference']} with an unknown concept",
        f"recall     hard {r['hard_recall']:.4f}  soft {r['soft_recall']:.4f}  delta {r['recall_delta']:+.4f}",
        f"precision  hard {r['hard_precision']:.4f}  soft {r['soft_precision']:.4f}  gain {r['precision_gain']:+.4f} "
        f"[{lo:.4f}, {hi:.4f}]",
        f"exclusion rate {r['exclusion_rate']:.4f}",
        f"recommendation: {r['recommendation']}",
        *("  " + x for x in r["reasons"]),
    ])
