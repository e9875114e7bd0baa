"""``report.write_back``: the audit's per-node roll-up written into a graph database.

The roll-up is :attr:`AuditResult.nodes` (``{node: {"depth", "n": {family: rows},
"metrics": {"family.metric": value}}}``, every row counted for its gold node and each
ancestor). Metric names become property names with every character outside
``[A-Za-z0-9_]`` replaced by ``_`` (``retrieval.recall@10`` → ``retrieval_recall_10``); ``n``
is the largest row count over the families. Writing goes through
:func:`kg_rageval.integrations.neo4j_writer.write_results` (parameterised Cypher; a missing
value is never written as 0). Credentials come from the environment only.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kg_rageval.base.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.audit.result import AuditResult

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def property_name(metric: str) -> str:
    """``family.metric`` as a plain property name (``retrieval.recall@10`` → ``retrieval_recall_10``)."""
    return _UNSAFE.sub("_", metric)


def rollup_rows(
    nodes: dict[str, dict[str, Any]], metrics: list[str] | None = None
) -> dict[str, dict[str, Any]]:
    """The audit roll-up in the shape :func:`~kg_rageval.integrations.neo4j_writer.result_rows`
    reads: ``{node: {"n", "depth", "metrics": {property name: value or None}}}``."""
    out: dict[str, dict[str, Any]] = {}
    for nid, entry in nodes.items():
        mets = {
            property_name(m): v
            for m, v in entry.get("metrics", {}).items()
            if metrics is None or m in metrics
        }
        counts = entry.get("n") or {}
        out[nid] = {"n": max(counts.values()) if counts else 0, "depth": entry.get("depth"), "metrics": mets}
    return out


def write_back(result: AuditResult) -> dict[str, Any]:
    """Write ``result``'s roll-up as ``config.report.write_back`` says; returns the
    :class:`~kg_rageval.integrations.neo4j_writer.WriteSummary` as a dict (with ``uri``
    redacted)."""
    from kg_rageval.audit.inputs import config_mapping, is_graph_uri, ontology_options
    from kg_rageval.integrations.neo4j_writer import write_results
    from kg_rageval.ontology.loaders.neo4j import redact_uri

    config = result.config
    wb = config.report.write_back
    if wb is None:
        raise ConfigError("report.write_back is not configured")
    from_graph = is_graph_uri(config.ontology.path)
    uri = wb.uri or (config.ontology.path if from_graph else None)
    if not uri:
        raise ConfigError(
            "report.write_back.uri: give the graph database URI (the ontology is a file)",
            source=config.source,
        )
    onto_opts = ontology_options(config) if from_graph else {}
    if wb.mapping is not None:
        mapping = config_mapping(config, wb.mapping, "report.write_back.mapping")
    else:
        mapping = onto_opts.get("mapping")
    nodes = result.nodes
    if nodes and config.report.node_rollup != "all":  # the report keeps the shown nodes only
        from kg_rageval.audit.pernode import node_rollups

        nodes = node_rollups(result.families, result.ontology)
    if not nodes:
        raise ConfigError(
            "report.write_back: the audit has no per-node roll-up (report.node_rollup is off, "
            "or no family keys its rows by gold_node)",
            source=config.source,
        )
    run_id = wb.run_id or f"{config.name}-{config.content_hash.split(':')[-1][:12]}"
    summary = write_results(
        uri,
        rollup_rows(nodes, wb.metrics),
        run_id=run_id,
        mapping=mapping,
        mode=wb.mode,
        prefix=wb.prefix,
        database=wb.database or onto_opts.get("database"),
        family="audit",
    )
    out = summary.to_dict()
    out["uri"] = redact_uri(uri)
    return out
