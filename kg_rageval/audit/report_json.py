"""The complete machine-readable audit report (JSON, no NaN, round-trips through json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kg_rageval.audit.manifest import numbers_of
from kg_rageval.audit.prov_trail import prov_trail_summary

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.audit.result import AuditResult

REPORT_VERSION = 1


def report_dict(result: AuditResult) -> dict[str, Any]:
    """Every decision and number of the audit as plain JSON types.

    Top-level keys: ``report_version``, ``name``, ``passed``, ``exit_code``, ``summary``
    (gate status counts), ``gates`` (one entry per gate: gate text, status, observed value,
    reason), ``metrics`` (flat ``{key: Metric.to_dict()}``), ``families`` (status, counts,
    unscored reasons, versions), ``slices``, ``nodes`` (per-node roll-up), ``drivers``
    (branches behind failures), ``failing_records`` (per failing gate, the records driving it),
    ``coverage``, ``relations``, ``exclusions``, ``category_diagnosis``, ``baseline``,
    ``prov_trail`` (the PROV-O trail written as ``prov.ttl``:
    :func:`~kg_rageval.audit.prov_trail.prov_trail_summary`, ``null`` without one),
    ``manifest``."""
    ont = result.ontology
    return {
        "report_version": REPORT_VERSION,
        "name": result.config.name,
        "passed": result.passed,
        "exit_code": result.exit_code,
        "summary": {
            **result.status_counts(),
            "gates": len(result.gate_results),
            "records": result.n_records,
            "seconds": round(result.seconds, 3),
        },
        "timings": result.timings,
        "ontology": {
            "source": str(ont.source),
            "nodes": ont.n_nodes,
            "root": ont.root_id,
            "virtual_root": bool(ont.virtual_root),
            "content_hash": ont.content_hash,
        },
        "gates": [r.to_dict() for r in result.gate_results],
        "metrics": numbers_of(result)["metrics"],
        "families": result.counts.get("families", {}),
        "slices": result.slices,
        "nodes": result.nodes,
        "drivers": result.drivers,
        "failing_records": result.failing,
        "coverage": result.coverage,
        "relations": result.relations,
        "exclusions": result.exclusions,
        "category_diagnosis": result.category_diagnosis,
        "baseline": result.baseline,
        "prov_trail": prov_trail_summary(result),
        "manifest": result.manifest,
    }


def dumps(payload: Any, *, indent: int | None = 2) -> str:
    return json.dumps(payload, indent=indent, ensure_ascii=False, allow_nan=False, default=_default)


def _default(x: Any) -> Any:
    import numpy as np

    if isinstance(x, (np.integer, np.floating, np.bool_)):
        return x.item()
    if isinstance(x, (set, tuple)):
        return list(x)
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def write_json(result: AuditResult, path: str | Path) -> dict[str, Any]:
    d = report_dict(result)
    text = dumps(d, indent=None)  # complete and compact; `python -m json.tool` pretty-prints it
    Path(path).write_text(text + "\n", encoding="utf-8")
    return json.loads(text)
