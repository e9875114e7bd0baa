"""A short Markdown summary: verdict, gates, family counts, failure drivers, coverage gaps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..fmt import fmt_value
from .escape import md, md_code

if TYPE_CHECKING:  # pragma: no cover
    from .result import AuditResult

_ICON = {"pass": "PASS", "fail": "FAIL", "missing": "MISSING"}


_f = fmt_value


def _cell(s: Any) -> str:
    return md(s)


def _primary(result: "AuditResult"):
    from .report_html import _primary_gate

    pick = _primary_gate(result)
    return (pick[1], pick[2]) if pick else None


def markdown(result: "AuditResult") -> str:
    c = result.status_counts()
    verdict = "PASSED" if result.passed else "FAILED"
    lines = [
        f"# Audit {md(result.config.name)}: {verdict}",
        "",
        f"{len(result.gate_results)} gates: {c['pass']} pass, {c['fail']} fail, {c['missing']} missing "
        f"evidence. {result.n_records} records, ontology {md_code(result.ontology.source)} "
        f"({len(result.ontology)} nodes, `{result.ontology.content_hash[:19]}…`).",
        "",
        "## Gates",
        "",
        "| status | gate | observed | reason |",
        "|---|---|---:|---|",
    ]
    order = {"missing": 0, "fail": 1, "pass": 2}
    for r in sorted(result.gate_results, key=lambda r: order[r.status]):
        lines.append(f"| {_ICON[r.status]} | {md_code(r.gate)} | {_f(r.observed)} | {_cell(r.reason)} |")
    lines += ["", "## Families", "", "| family | status | records with section | scored | missing runs | unscored reasons |",
              "|---|---|---:|---:|---:|---|"]
    for fam, cnt in result.counts.get("families", {}).items():
        status = cnt["status"] + (f" ({cnt['reason']})" if cnt["reason"] else "")
        reasons = ", ".join(f"{k}: {v}" for k, v in cnt["unscored_reasons"].items())
        lines.append(f"| {md(fam)} | {_cell(status)} | {cnt['with_section']} | {cnt['scored_records']} | "
                     f"{cnt['missing_runs']} | {_cell(reasons)} |")
    if result.drivers:
        lines += ["", "## Branches driving the failures", "",
                  "| gate | node | label | depth | rows | value | impact |", "|---|---|---|---:|---:|---:|---:|"]
        for d in result.drivers[: result.config.report.top_branches]:
            lines.append(f"| {md_code(d['gate'])} | {md(d['node'])} | {_cell(d['label'] or '')} | {d['depth']} | "
                         f"{d['n']} | {_f(d['value'])} | {_f(d['impact'])} |")
    pick = _primary(result)
    if pick is not None:
        gate, key = pick
        rows = [(nid, d) for nid, d in result.nodes.items() if 1 <= d["depth"] <= 2 and d["metrics"].get(key) is not None]
        rows.sort(key=lambda r: -max(r[1]["n"].values() or [0]))
        if rows:
            lines += ["", f"## Per-branch {md_code(key)} (gate {md_code(gate)})", "",
                      "| node | label | depth | rows | value | meets gate |", "|---|---|---:|---:|---:|---|"]
            for nid, d in rows[: max(15, result.config.report.top_branches)]:
                v = d["metrics"][key]
                lines.append(f"| {md(nid)} | {_cell(d['label'] or '')} | {d['depth']} | {max(d['n'].values())} | "
                             f"{_f(v)} | {'yes' if gate.compare(v) else 'no'} |")
    cov = result.coverage
    if cov:
        lines += ["", "## Coverage", "",
                  f"{cov['n_cells']} cells (intent × document type × branch): {cov['n_empty']} empty, "
                  f"{cov['n_thin']} thin (< {cov['thin_threshold']} records)."]
    if result.baseline:
        from .report_html import _qualified_delta

        lines += ["", "## Baseline deltas (candidate − baseline; gated first, then the largest; all in the JSON)", "",
                  "| metric | candidate | baseline | delta | paired CI |", "|---|---:|---:|---:|---|"]
        gated = {r.gate.metric for r in result.gate_results if r.gate.metric.startswith("delta:")}
        keys = [k for k in result.baseline["deltas"] if _qualified_delta(k, result)]
        keys.sort(key=lambda k: (k not in gated and not any(k.endswith("." + g[6:]) for g in gated),
                                 -abs(result.baseline["deltas"][k].get("value") or 0.0), k))
        for k in keys[:20]:
            d = result.baseline["deltas"][k]
            ci = f"[{d['ci'][0]:.4f}, {d['ci'][1]:.4f}]" if d.get("ci") else (d.get("missing") or "")
            lines.append(f"| {md_code(k)} | {_f(d.get('candidate'))} | {_f(d.get('baseline'))} | {_f(d.get('value'))} | "
                         f"{_cell(ci)} |")
    lines += ["", f"Manifest metrics digest: `{result.manifest.get('metrics_digest', '')}`", ""]
    return "\n".join(lines)


def write_markdown(result: "AuditResult", path: str | Path) -> None:
    Path(path).write_text(markdown(result), encoding="utf-8")
