"""What the audit's reports show of the PROV-O trail it writes (``prov.ttl``): one summary,
which ``report.json``, ``report.md`` and ``report.html`` render."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.audit.result import AuditResult

PROV = "prov.ttl"
"""The PROV-O trail of the audited run (the provenance family's ``trail``), beside the reports."""

PROV_RATE = "provenance.prov_traceable_rate"


def prov_trail_summary(result: AuditResult) -> dict[str, Any] | None:
    """What the reports show of the PROV-O trail (``prov.ttl``), ``None`` when the provenance
    family built none: ``file``, ``conforms``, ``violations`` (SHACL violations against
    ``shapes/provenance.ttl``), ``messages`` (the first 5), ``prov_traceable_rate`` (the
    metric with its numerator and denominator; value ``null`` and ``missing`` when it is
    missing evidence), ``run_recorded`` (whether the audited run has a run manifest) and
    ``note`` (one sentence for the reader, or ``null``)."""
    from kg_rageval.audit.gates import metric_dict

    run = result.families.get("provenance")
    ev = next(
        (e for e in (run.evaluations if run is not None else []) if e.family.name == "prov_trail"), None
    )
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
