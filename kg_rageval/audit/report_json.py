"""The complete machine-readable audit report (JSON, no NaN, round-trips through json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kg_rageval.audit.manifest import numbers_of

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
    ``coverage``, ``relations``, ``exclusions``, ``baseline``, ``prov_trail`` (the PROV-O
    trail written as ``prov.ttl``: :func:`prov_trail_summary`, ``null`` without one),
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
            "nodes": len(ont),
            "root": ont.root_id,
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
        "baseline": result.baseline,
        "prov_trail": prov_trail_summary(result),
        "manifest": result.manifest,
    }


PROV_RATE = "provenance.prov_traceable_rate"


def prov_trail_summary(result: AuditResult) -> dict[str, Any] | None:
    """What the reports show of the PROV-O trail (``prov.ttl``), ``None`` when the provenance
    family built none: ``file``, ``conforms``, ``violations`` (SHACL violations against
    ``shapes/provenance.ttl``), ``messages`` (the first 5), ``prov_traceable_rate`` (the
    metric with its numerator and denominator; value ``null`` and ``missing`` when it is
    missing evidence), ``run_recorded`` (whether the audited run has a run manifest) and
    ``note`` (one sentence for the reader, or ``null``)."""
    from kg_rageval.audit.gates import metric_dict
    from kg_rageval.audit.reports import PROV

    run = result.families.get("provenance")
    ev = next((e for e in (run.evaluations if run is not None else []) if e.family.name == "prov_trail"), None)
    if ev is None:
        return None
    m = result.metrics.get(PROV_RATE)
    recorded = bool(ev.stats["run_recorded"].all()) if "run_recorded" in ev.stats else None
    note = None
    if m is not None and m.value is None:
        note = f"missing evidence: {m.missing}"
    elif m is not None and m.numerator is not None and m.denominator and m.numerator < m.denominator:
        note = (
            f"{m.denominator - m.numerator:g} of {m.denominator:g} answers untraceable "
            "(the prov_trail rows' untraceable_at names the failing nodes)"
        )
    return {
        "file": PROV,
        "conforms": bool(ev.meta.get("conforms")),
        "violations": int(ev.meta.get("violations", 0)),
        "messages": list(ev.meta.get("messages") or [])[:5],
        "prov_traceable_rate": metric_dict(m) if m is not None else None,
        "run_recorded": recorded,
        "note": note,
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
