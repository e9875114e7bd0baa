"""A short Markdown summary: verdict, gates, family counts, failure drivers, coverage gaps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kg_rageval.audit.escape import md, md_code
from kg_rageval.base.fmt import fmt_value

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.audit.result import AuditResult

_ICON = {"pass": "PASS", "fail": "FAIL", "missing": "MISSING"}


_f = fmt_value


def _cell(s: Any) -> str:
    return md(s)


def _primary(result: AuditResult):
    from kg_rageval.audit.report_html import _primary_gate

    pick = _primary_gate(result)
    return (pick[1], pick[2]) if pick else None


def markdown(result: AuditResult) -> str:
    c = result.status_counts()
    verdict = "PASSED" if result.passed else "FAILED"
    lines = [
        f"# Audit {md(result.config.name)}: {verdict}",
        "",
        f"{len(result.gate_results)} gates: {c['pass']} pass, {c['fail']} fail, {c['missing']} missing "
        f"evidence. {result.n_records} records, ontology {md_code(result.ontology.source)} "
        f"({result.ontology.n_nodes} nodes, `{result.ontology.content_hash[:19]}…`).",
        "",
        "## Gates",
        "",
        "| status | gate | observed | reason |",
        "|---|---|---:|---|",
    ]
    order = {"missing": 0, "fail": 1, "pass": 2}
    for r in sorted(result.gate_results, key=lambda r: order[r.status]):
        lines.append(f"| {_ICON[r.status]} | {md_code(r.gate)} | {_f(r.observed)} | {_cell(r.reason)} |")
    lines += [
        "",
        "## Families",
        "",
        "| family | status | records with section | scored | missing runs | unscored reasons |",
        "|---|---|---:|---:|---:|---|",
    ]
    for fam, cnt in result.counts.get("families", {}).items():
        status = cnt["status"] + (f" ({cnt['reason']})" if cnt["reason"] else "")
        reasons = ", ".join(f"{k}: {v}" for k, v in cnt["unscored_reasons"].items())
        lines.append(
            f"| {md(fam)} | {_cell(status)} | {cnt['with_section']} | {cnt['scored_records']} | "
            f"{cnt['missing_runs']} | {_cell(reasons)} |"
        )
    if result.drivers:
        lines += [
            "",
            "## Branches driving the failures",
            "",
            "impact = weight × (global value − branch value): the shortfall a branch carries beyond "
            "its size (docs/audit.md).",
            "",
            "| gate | node | label | depth | rows | value | deficit share | impact |",
            "|---|---|---|---:|---:|---:|---:|---:|",
        ]
        for d in result.drivers[: result.config.report.top_branches]:
            lines.append(
                f"| {md_code(d['gate'])} | {md(d['node'])} | {_cell(d['label'] or '')} | {d['depth']} | "
                f"{d['n']} | {_f(d['value'])} | {_f(d.get('deficit_share'))} | {_f(d['impact'])} |"
            )
    lines += failing_records_markdown(result)
    from kg_rageval.audit.report_html import failed_gate_views

    views = failed_gate_views(result)
    if not views:
        pick = _primary(result)
        views = [(pick[0], pick[1], None)] if pick is not None else []
    ont = result.ontology
    for gate, key, root in views:
        if root is not None and root in ont:
            top = int(ont.depth_min[ont.index(root)])
            inside = set(ont.descendant_indices(ont.index(root), include_self=True).tolist())
            rows = [
                (nid, d)
                for nid, d in result.nodes.items()
                if ont.id_index.get(nid) in inside
                and top <= d["depth"] <= top + 2
                and d["metrics"].get(key) is not None
            ]
        else:
            rows = [
                (nid, d)
                for nid, d in result.nodes.items()
                if 1 <= d["depth"] <= 2 and d["metrics"].get(key) is not None
            ]
        rows.sort(key=lambda r: -max(r[1]["n"].values() or [0]))
        if rows:
            under = f" under {root}" if root is not None else ""
            lines += [
                "",
                f"## Per-branch {md_code(key)}{md(under)} (gate {md_code(gate)})",
                "",
                "| node | label | depth | rows | value | meets gate |",
                "|---|---|---:|---:|---:|---|",
            ]
            for nid, d in rows[: max(15, result.config.report.top_branches)]:
                v = d["metrics"][key]
                lines.append(
                    f"| {md(nid)} | {_cell(d['label'] or '')} | {d['depth']} | {max(d['n'].values())} | "
                    f"{_f(v)} | {'yes' if gate.compare(v) else 'no'} |"
                )
    ex = result.exclusions or {}
    if ex:
        by = ", ".join(f"{k} {v}" for k, v in (ex.get("excluded_by_filter") or {}).items()) or "none"
        lines += [
            "",
            "## Gold documents excluded before ranking",
            "",
            f"Of {ex.get('gold_documents', 0)} gold documents in the corpus: excluded by filters: {_cell(by)}; "
            f"hidden by entitlement (correct): {ex.get('excluded_by_entitlement', 0)}; "
            f"inconsistent filter logs (retrieved although the logged filters exclude them): "
            f"{ex.get('inconsistent_filter_log', 0)}.",
        ]
    from kg_rageval.audit.report_html import category_diagnosis_rows

    diag = category_diagnosis_rows(result)
    if diag is not None:
        head, drows = diag
        lines += ["", "## Where false exclusions come from", "", md(head) + ("." if drows else "")]
        if drows:
            lines += ["", "| cause | under | label | queries | share |", "|---|---|---|---:|---:|"]
            lines += [f"| {' | '.join(_cell(c) for c in r)} |" for r in drows]
    lines += prov_trail_markdown(result)
    cov = result.coverage
    if cov:
        lines += [
            "",
            "## Coverage",
            "",
            f"{cov['n_cells']} cells (intent × document type × branch): {cov['n_empty']} empty, "
            f"{cov['n_thin']} thin (< {cov['thin_threshold']} records).",
        ]
    if result.baseline:
        from kg_rageval.audit.report_html import _qualified_delta

        lines += [
            "",
            "## Baseline deltas (candidate − baseline; gated first, then the largest; all in the JSON)",
            "",
        ]
        from kg_rageval.audit.baseline import release_note

        note = release_note(result.baseline.get("release"))
        if note:
            lines += [_cell(note), ""]
        lines += ["| metric | candidate | baseline | delta | paired CI |", "|---|---:|---:|---:|---|"]
        gated = {r.gate.metric for r in result.gate_results if r.gate.metric.startswith("delta:")}
        deltas = result.baseline["deltas"]
        keys = [k for k in deltas if _qualified_delta(k, result)]
        keys.sort(
            key=lambda k: (
                k not in gated and not any(k.endswith("." + g[6:]) for g in gated),
                -abs(deltas[k].get("value") or 0.0),
                k,
            )
        )
        for k in keys[:20]:
            d = result.baseline["deltas"][k]
            ci = f"[{d['ci'][0]:.4f}, {d['ci'][1]:.4f}]" if d.get("ci") else (d.get("missing") or "")
            lines.append(
                f"| {md_code(k)} | {_f(d.get('candidate'))} | {_f(d.get('baseline'))} | {_f(d.get('value'))} | "
                f"{_cell(ci)} |"
            )
    lines += ["", f"Manifest metrics digest: `{result.manifest.get('metrics_digest', '')}`", ""]
    return "\n".join(lines)


def _val(x: Any) -> str:
    """A record value in a table cell: JSON (lists, objects) as a code span, text escaped."""
    if isinstance(x, (list, dict)):
        import json

        return md_code(json.dumps(x, ensure_ascii=False, default=str))
    return _cell(_f(x))


def prov_trail_markdown(result: AuditResult) -> list[str]:
    """The PROV-O trail section (:func:`~kg_rageval.audit.prov_trail.prov_trail_summary`):
    ``prov_traceable_rate`` with its numerator and denominator (or why it is missing), the
    SHACL verdict of ``prov.ttl`` and its first messages."""
    from kg_rageval.audit.prov_trail import prov_trail_summary

    p = prov_trail_summary(result)
    if p is None:
        return []
    m = p["prov_traceable_rate"] or {}
    num, den = m.get("numerator"), m.get("denominator")
    frac = f" ({num:g}/{den:g} answers)" if num is not None and den is not None else ""
    rate = _f(m.get("value")) if m.get("value") is not None else "missing evidence"
    verdict = "conforms" if p["conforms"] else f"does not conform ({p['violations']} SHACL violations)"
    lines = [
        "",
        "## PROV-O trail",
        "",
        f"`provenance.prov_traceable_rate`: {rate}{frac}. {md_code(p['file'])} {verdict} "
        "against `shapes/provenance.ttl`.",
    ]
    if p["note"]:
        lines += ["", _cell(p["note"])]
    if p["messages"]:
        lines += ["", *(f"- {_cell(msg)}" for msg in p["messages"])]
    return lines


def failing_records_markdown(result: AuditResult) -> list[str]:
    """Per failing gate, the records driving it (worst first; ``report.failing_records``)."""
    blocks = [f for f in result.failing if f["records"] or f.get("note")]
    if not blocks:
        return []
    lines = ["", "## Records driving the failing gates", ""]
    for f in blocks:
        if not f["records"]:
            lines += [f"### {md_code(f['gate'])} — {f['status']}: {_cell(f['note'])}", ""]
            continue
        lines += [
            f"### {md_code(f['gate'])} — {f['status']}: {len(f['records'])} of {f['n_driving']} "
            f"records, worst first",
            "",
            "| record | query | gold | prediction | value | reason |",
            "|---|---|---|---|---:|---|",
        ]
        for r in f["records"]:
            lines.append(
                f"| {_cell(r['id'])} | {_val(r['query'])} | {_val(r['gold'])} | {_val(r['prediction'])} | "
                f"{_f(r['value'])} | {_cell(r['reason'] or '')} |"
            )
        lines.append("")
    return lines


def write_markdown(result: AuditResult, path: str | Path) -> None:
    Path(path).write_text(markdown(result), encoding="utf-8")
