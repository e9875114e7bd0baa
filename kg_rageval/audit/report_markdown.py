"""A short Markdown summary: verdict, gates, family counts, failure drivers, coverage gaps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .runner import AuditResult

_ICON = {"pass": "PASS", "fail": "FAIL", "missing": "MISSING"}


def _f(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:.4f}"
    return str(x)


def _cell(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def markdown(result: "AuditResult") -> str:
    c = result.status_counts()
    verdict = "PASSED" if result.passed else "FAILED"
    lines = [
        f"# Audit {result.config.name}: {verdict}",
        "",
        f"{len(result.gate_results)} gates: {c['pass']} pass, {c['fail']} fail, {c['missing']} missing "
        f"evidence. {result.n_records} records, ontology `{result.ontology.source}` "
        f"({len(result.ontology)} nodes, `{result.ontology.content_hash[:19]}…`).",
        "",
        "## Gates",
        "",
        "| status | gate | observed | reason |",
        "|---|---|---:|---|",
    ]
    order = {"missing": 0, "fail": 1, "pass": 2}
    for r in sorted(result.gate_results, key=lambda r: order[r.status]):
        lines.append(f"| {_ICON[r.status]} | `{_cell(r.gate)}` | {_f(r.observed)} | {_cell(r.reason)} |")
    lines += ["", "## Families", "", "| family | status | records with section | scored | missing runs | unscored reasons |",
              "|---|---|---:|---:|---:|---|"]
    for fam, cnt in result.counts.get("families", {}).items():
        status = cnt["status"] + (f" ({cnt['reason']})" if cnt["reason"] else "")
        reasons = ", ".join(f"{k}: {v}" for k, v in cnt["unscored_reasons"].items())
        lines.append(f"| {fam} | {_cell(status)} | {cnt['with_section']} | {cnt['scored_records']} | "
                     f"{cnt['missing_runs']} | {_cell(reasons)} |")
    if result.drivers:
        lines += ["", "## Branches driving the failures", "",
                  "| gate | node | label | depth | rows | value | impact |", "|---|---|---|---:|---:|---:|---:|"]
        for d in result.drivers[: result.config.report.top_branches]:
            lines.append(f"| `{_cell(d['gate'])}` | {d['node']} | {_cell(d['label'] or '')} | {d['depth']} | "
                         f"{d['n']} | {_f(d['value'])} | {_f(d['impact'])} |")
    cov = result.coverage
    if cov:
        lines += ["", "## Coverage", "",
                  f"{cov['n_cells']} cells (intent × document type × branch): {cov['n_empty']} empty, "
                  f"{cov['n_thin']} thin (< {cov['thin_threshold']} records)."]
    if result.baseline:
        lines += ["", "## Baseline deltas", "", "| metric | delta | CI |", "|---|---:|---|"]
        for k, d in result.baseline["deltas"].items():
            if k.count(".") == 0 or True:
                ci = f"[{d['ci'][0]:.4f}, {d['ci'][1]:.4f}]" if d.get("ci") else ""
                lines.append(f"| `{k}` | {_f(d.get('value'))} | {ci} |")
    lines += ["", f"Manifest metrics digest: `{result.manifest.get('metrics_digest', '')}`", ""]
    return "\n".join(lines)


def write_markdown(result: "AuditResult", path: str | Path) -> None:
    Path(path).write_text(markdown(result), encoding="utf-8")
