"""Write evaluation results back into the graph database the ontology came from.

Teams then ask "which branches fail" in Cypher, next to their data. Two shapes:

* ``mode="nodes"`` (default): one ``(:EvalResult {run_id, family, node_id, n, depth,
  <metric>: value, <metric>_missing: reason})-[:EVALUATES]->(concept)`` per concept and run.
  Writing the same ``run_id`` and family again replaces that run's values (MERGE on
  ``run_id``, ``family``, ``node_id``; ``SET e = $props``), other runs stay.
* ``mode="properties"``: the concept nodes get ``<prefix><metric>`` properties (default prefix
  ``kgr_``) plus ``kgr_run_id``, ``kgr_family``, ``kgr_n``; a metric that is missing on a node
  is *removed* (``SET c += {name: null}``) and its reason stored in ``<prefix><metric>_missing``,
  so a stale value from an earlier run never survives as if it were current.

The values are the per-node roll-up of an :class:`~kg_rageval.results.evaluation.Evaluation`
(:meth:`Evaluation.rollup`: every row counts for its gold node and each of its ancestors), so a
branch's figure pools its whole subtree. Missing evidence stays missing: a metric whose value is
``None`` is never written as 0.

Only parameterised Cypher: the concept label, id property, result label and relationship type
are validated identifiers (backtick-quoted); ids, metric names and values are parameters
(metric names are map keys of a parameter map, ``SET e = row.props``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.ontology.loaders.neo4j import (
    GraphMapping,
    open_driver,
    quote_identifier,
    resolve_mapping,
)
from kg_rageval.ontology.model import VIRTUAL_ROOT_ID

MODES = ("nodes", "properties")


@dataclass
class WriteSummary:
    """What :func:`write_results` wrote: ``written`` concept ids found in the graph,
    ``not_found`` ids absent from it (first 100), ``skipped`` (the virtual root)."""

    run_id: str
    family: str
    mode: str
    rows: int = 0
    written: int = 0
    not_found: list[str] = field(default_factory=list)
    n_not_found: int = 0
    skipped: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _value(v: Any) -> Any:
    """A metric value as a Bolt-safe number (``None`` for missing or non-finite)."""
    if v is None:
        return None
    value = getattr(v, "value", v)
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def result_rows(
    results: Any,
    ontology: Any = None,
    *,
    key: str = "gold_node",
    metrics: list[str] | None = None,
    prefix: str = "",
) -> tuple[str, list[dict[str, Any]]]:
    """``(family, rows)`` with ``rows = [{"id": node id, "props": {...}}]`` from an
    ``Evaluation`` (rolled up over ``ontology`` along ``key``) or a ready roll-up mapping
    ``{node_id: {"n": int, "depth": int, "metrics": {name: Metric | float | None}}}``."""
    family = "results"
    if hasattr(results, "rollup") and hasattr(results, "family"):
        if ontology is None:
            raise ConfigError("writing an Evaluation needs the ontology to roll it up over")
        family = results.family.name
        rollup = results.rollup(ontology, key=key)
    elif isinstance(results, Mapping):
        rollup = results
    else:
        raise ConfigError(f"results must be an Evaluation or a roll-up mapping, not {type(results).__name__}")
    rows = []
    for node_id, entry in rollup.items():
        mets = entry.get("metrics", {}) if isinstance(entry, Mapping) else {}
        props: dict[str, Any] = {}
        for k in ("n", "depth"):
            if isinstance(entry, Mapping) and entry.get(k) is not None:
                props[prefix + k] = int(entry[k])
        for name, met in mets.items():
            if metrics is not None and name not in metrics:
                continue
            value = _value(met)
            props[prefix + name] = value
            reason = getattr(met, "missing", None) if value is None else None
            props[prefix + name + "_missing"] = (reason or "missing evidence") if value is None else None
        rows.append({"id": str(node_id), "props": props})
    return family, rows


def write_query(
    mode: str, mapping: GraphMapping, *, result_label: str = "EvalResult", relationship: str = "EVALUATES"
) -> str:
    """The Cypher statement for one batch (``$rows`` holds ``{id, props}`` maps)."""
    label = quote_identifier(mapping.node_label, "node label")
    key = quote_identifier(mapping.id_property, "id property")
    if mode == "properties":
        return (
            f"UNWIND $rows AS row MATCH (c:{label} {{{key}: row.id}}) SET c += row.props RETURN row.id AS id"
        )
    if mode == "nodes":
        res = quote_identifier(result_label, "result label")
        rel = quote_identifier(relationship, "relationship type")
        return (
            f"UNWIND $rows AS row MATCH (c:{label} {{{key}: row.id}}) "
            f"MERGE (e:{res} {{run_id: $run_id, family: $family, node_id: row.id}}) "
            f"SET e = row.props MERGE (e)-[:{rel}]->(c) RETURN row.id AS id"
        )
    raise ConfigError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")


def write_results(
    target: Any,
    results: Any,
    *,
    run_id: str,
    ontology: Any = None,
    mapping: GraphMapping | str | Mapping[str, Any] | None = None,
    mode: str = "nodes",
    key: str = "gold_node",
    metrics: list[str] | None = None,
    prefix: str = "kgr_",
    result_label: str = "EvalResult",
    relationship: str = "EVALUATES",
    database: str | None = None,
    auth: Any = None,
    batch_size: int = 1000,
    family: str | None = None,
) -> WriteSummary:
    """Write per-node results to the graph at ``target`` (a Bolt uri or an open ``neo4j``
    driver, which is left open). ``mapping`` says how concepts are found (label and id
    property, as for :func:`~kg_rageval.ontology.loaders.neo4j.load_neo4j`). Batches of
    ``batch_size`` rows go in one write transaction each. ``family`` names the results
    (default: the Evaluation's family, ``"results"`` for a roll-up mapping)."""
    if not isinstance(run_id, str) or not run_id.strip():
        raise ConfigError("run_id must be a non-empty string (it identifies this evaluation run)")
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if batch_size < 1:
        raise ConfigError("batch_size must be at least 1")
    m = resolve_mapping(mapping)
    found_family, rows = result_rows(
        results, ontology, key=key, metrics=metrics, prefix=prefix if mode == "properties" else ""
    )
    family = family or found_family
    summary = WriteSummary(run_id=run_id, family=family, mode=mode)
    kept = []
    for row in rows:
        if row["id"] == VIRTUAL_ROOT_ID:
            summary.skipped += 1
            continue
        props = row["props"]
        if mode == "nodes":
            props = {k: v for k, v in props.items() if v is not None}
            props.update(run_id=run_id, family=family, node_id=row["id"])
        else:
            props.update({prefix + "run_id": run_id, prefix + "family": family})
        kept.append({"id": row["id"], "props": props})
    summary.rows = len(kept)
    query = write_query(mode, m, result_label=result_label, relationship=relationship)

    own = isinstance(target, str)
    driver = open_driver(target, auth) if own else target
    found: set[str] = set()
    try:
        from neo4j.exceptions import Neo4jError

        with driver.session(database=database) as session:
            for start in range(0, len(kept), batch_size):
                batch = kept[start : start + batch_size]

                def work(tx, batch=batch):
                    return [r["id"] for r in tx.run(query, rows=batch, run_id=run_id, family=family)]

                try:
                    found.update(session.execute_write(work))
                except Neo4jError as exc:
                    raise InputError(f"writing results failed: {exc.code}: {exc.message}") from None
    finally:
        if own:
            driver.close()
    summary.written = len(found)
    missing = [r["id"] for r in kept if r["id"] not in found]
    summary.n_not_found = len(missing)
    summary.not_found = missing[:100]
    return summary
