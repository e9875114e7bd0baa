"""``kg-rageval score retrieval``: trec_eval-equal retrieval metrics, entitlement, filter false
exclusion and its attribution, per ontology node and slice (see ``docs/retrieval.md``)."""

from __future__ import annotations

import click

from .common import (
    breakdown_keys,
    data_option,
    emit,
    family_kwargs,
    family_options,
    format_option,
    load_ontology_cli,
    metrics_table,
    ontology_format_option,
    ontology_option,
    table,
)

_HEADLINE = ("n_scored", "n_missing_run", "n_no_gold", "filter_false_exclusion_rate", "doc_exclusion_rate")


@click.command()
@ontology_option
@ontology_format_option
@data_option
@family_options("retrieval")
@click.option("--breakdown", "breakdowns", multiple=True, metavar="KEY",
              help="Metrics per value of a row key: gold_node or slice:<name> (repeatable; slices by default).")
@click.option("--rollup/--no-rollup", default=True, show_default=True,
              help="Metrics per ontology node, pooling each node's subtree (gold_node).")
@click.option("--rows/--no-rows", default=False, show_default=True, help="Include per-query rows in JSON.")
@format_option
def command(ontology_path, ontology_format, data_path, breakdowns, rollup, rows, fmt, **kwargs) -> None:
    """Recall/Precision/Hit/nDCG/MRR@k, MAP, R-precision (trec_eval -c) and filter false exclusion."""
    from ..contract import get_scorer
    from ..records import read_records
    from ..retrieval import category_diagnosis

    onto = load_ontology_cli(ontology_path, ontology_format)
    records = read_records(data_path)
    opts = family_kwargs("retrieval", kwargs)
    corpus_path = opts.get("corpus")
    bound = get_scorer("retrieval").bind(onto, where="score retrieval", **opts)
    corpus = bound.inputs.get("corpus")
    ev = bound(records).single
    ks = bound.options["k"]
    keys = breakdown_keys(ev, breakdowns)
    payload = {
        "command": "score retrieval",
        "data": data_path,
        "corpus": corpus_path,
        "n_records": len(records),
        "ontology": {"source": onto.source, "hash": onto.content_hash},
        **ev.to_dict(rows=rows, breakdowns=keys),
    }
    if rollup:
        payload["rollup"] = {
            node: {"n": g["n"], "depth": g["depth"],
                   "metrics": {m: v.to_dict() for m, v in g["metrics"].items()}}
            for node, g in ev.rollup(onto).items()
        }
        payload["rollup_skipped"] = ev.meta.get("rollup_skipped", 0)
    if corpus is not None:
        payload["category_diagnosis"] = category_diagnosis(ev, onto)
    emit(payload, fmt, lambda p: _render(p, ev, keys, onto, max(ks)))


def _render(payload: dict, ev, keys: list[str], onto, kmax: int) -> str:
    parts = [f"{payload['n_records']} records, {len(ev)} with a retrieval section"]
    if ev.unscored:
        parts.append("unscored: " + ", ".join(f"{k}={v}" for k, v in ev.unscored_counts.items()))
    parts.append(metrics_table(ev.metrics()))
    cols = [f"recall@{kmax}", f"ndcg@{kmax}", "mrr", "map", "filter_false_exclusion_rate"]
    for k in keys:
        rows = [[str(v), g["n"], *(g["metrics"][c].value for c in cols)] for v, g in ev.breakdown(k).items()]
        parts.append(f"\n== by {k}")
        parts.append(table(rows, [k, "queries", *cols]))
    if "rollup" in payload:
        rows = []
        for node, g in sorted(payload["rollup"].items(), key=lambda x: (x[1]["depth"], x[0]))[:40]:
            m = g["metrics"]
            rows.append([node, g["depth"], g["n"], *(m[c]["value"] for c in cols)])
        parts.append("\n== by gold node (subtree roll-up, first 40 by depth)")
        parts.append(table(rows, ["node", "depth", "queries", *cols]))
    diag = payload.get("category_diagnosis")
    if diag and diag.get("sentences"):
        parts.append("\n== where false exclusions come from")
        parts.extend(diag["sentences"])
    return "\n".join(parts)
