"""A self-contained HTML audit report: inline CSS, SVG and one small inline script (sorting
and filtering the metrics table); no external assets.

Plots: per-branch scores on the hierarchy for every failed gate (an indented tree of bars, red
below the gate's threshold), confusion relation bars, exclusion attribution bars and a
coverage heat-map. The records driving each failing gate are listed; the metrics table is
grouped by family, sortable (click a header) and filterable; paired ``delta:`` rows are in the
baseline section only.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape as _html_escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kg_rageval.audit.escape import xml_text
from kg_rageval.audit.report_ingestion import ingestion_html
from kg_rageval.base.fmt import fmt_value

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.audit.result import AuditResult

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:24px}
h1{margin:0 0 4px;font-size:26px} h2{margin:28px 0 8px;font-size:19px;border-bottom:1px solid #dde1e7;padding-bottom:4px}
.verdict{display:inline-block;padding:4px 12px;border-radius:4px;font-weight:700;color:#fff}
.pass{background:#1e7d45}.fail{background:#b3261e}.missing{background:#a15c00}
.sub{color:#5b6473;font-size:14px}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
th,td{border:1px solid #e1e4ea;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5} td.num{text-align:right;font-variant-numeric:tabular-nums}
.tag{display:inline-block;padding:1px 6px;border-radius:3px;color:#fff;font-size:12px;font-weight:600}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.card{background:#fff;border:1px solid #e1e4ea;border-radius:6px;padding:12px;margin:8px 0}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:16px}
.heat td{text-align:center;min-width:28px}
.c0{background:#f4c7c3}.c1{background:#fde7b0}.c2{background:#d7ecd9}
details pre{white-space:pre-wrap;font-size:12px;background:#fff;border:1px solid #e1e4ea;padding:8px}
.ctitle{font-weight:600;font-size:13px;margin:0 0 6px}
svg text{font-family:system-ui,sans-serif;font-size:12px;fill:#1d2330}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th[aria-sort=ascending]::after{content:" \\25B2"}
table.sortable th[aria-sort=descending]::after{content:" \\25BC"}
.metric-family h3{margin:14px 0 4px;font-size:15px}
input.filter{padding:4px 8px;font-size:13px;width:320px;margin:4px 0 8px}
"""

SCRIPT = """(function(){
function key(td){var v=td.getAttribute('data-v');if(v!==null&&v!==''){return parseFloat(v);}
return td.textContent.trim().toLowerCase();}
function sortBy(table,col,th){var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
var asc=th.getAttribute('aria-sort')!=='ascending';
Array.prototype.forEach.call(table.tHead.rows[0].cells,function(c){c.removeAttribute('aria-sort');});
th.setAttribute('aria-sort',asc?'ascending':'descending');
rows.sort(function(a,b){var x=key(a.cells[col]),y=key(b.cells[col]);var nx=typeof x==='number',ny=typeof y==='number';
if(nx&&ny){return asc?x-y:y-x;}if(nx!==ny){return nx?-1:1;}
return asc?(x<y?-1:(x>y?1:0)):(x<y?1:(x>y?-1:0));});
rows.forEach(function(r){body.appendChild(r);});}
Array.prototype.forEach.call(document.querySelectorAll('table.sortable'),function(t){
Array.prototype.forEach.call(t.tHead.rows[0].cells,function(th,i){th.addEventListener('click',function(){sortBy(t,i,th);});});});
var f=document.getElementById('metric-filter');
if(f){f.addEventListener('input',function(){var q=f.value.trim().toLowerCase();
Array.prototype.forEach.call(document.querySelectorAll('.metric-family'),function(sec){var shown=0;
var fam=(sec.getAttribute('data-family')||'').toLowerCase();
Array.prototype.forEach.call(sec.querySelectorAll('tbody tr'),function(r){
var ok=!q||fam.indexOf(q)>=0||r.textContent.toLowerCase().indexOf(q)>=0;r.hidden=!ok;if(ok){shown++;}});
sec.hidden=shown===0;});});}
})();"""


def escape(s: Any, quote: bool = True) -> str:
    """HTML-escape an input-derived string; control characters removed and bidi overrides
    shown (:mod:`kg_rageval.audit.escape`)."""
    return _html_escape(xml_text(s, multiline=True), quote=quote)


def _f(x: Any, nd: int = 4) -> str:
    return escape(fmt_value(x, nd))


def _table(headers: list[str], rows: Iterable[list[str]], num_cols: Iterable[int] = ()) -> str:
    nums = set(num_cols)
    out = ["<table><thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in headers) + "</tr></thead><tbody>"]
    for r in rows:
        out.append(
            "<tr>"
            + "".join(f'<td class="num">{c}</td>' if i in nums else f"<td>{c}</td>" for i, c in enumerate(r))
            + "</tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def bar_chart(
    items: list[tuple[str, float]],
    *,
    title: str,
    color: str = "#3b6fb6",
    value_fmt: str = "{:g}",
    max_value: float | None = None,
    colors: list[str] | None = None,
) -> str:
    """Horizontal bar chart as inline SVG."""
    if not items:
        return f'<p class="sub">{escape(title)}: no data.</p>'
    width, label_w, row_h = 560, 190, 22
    top = max([v for _, v in items] + [max_value or 0]) or 1.0
    h = row_h * len(items) + 8
    parts = [
        f'<div class="ctitle">{escape(title)}</div>'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for i, (lab, v) in enumerate(items):
        y = 2 + i * row_h
        w = max(0.0, (width - label_w - 70) * (v / top))
        c = colors[i] if colors else color
        short = lab if len(lab) <= 28 else lab[:27] + "…"
        parts.append(f'<text x="0" y="{y + 14}"><title>{escape(lab)}</title>{escape(short)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" fill="{c}"/>')
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 14}">{escape(value_fmt.format(v))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _primary_gate(result: AuditResult):
    """The global gate shown on the hierarchy plot: the first failing one with node data, else
    the first with node data."""
    cands = []
    for pos, r in enumerate(result.gate_results):
        g = r.gate
        if g.scope or g.metric.startswith("delta:") or g.metric.endswith("missing_run_rate"):
            continue
        for key in _node_metric_keys(result, g.metric):
            with_value = sum(1 for d in result.nodes.values() if d["metrics"].get(key) is not None)
            if with_value:
                cands.append((r.status == "pass", pos, g, key))
            break
    cands.sort(key=lambda c: (c[0], c[1]))
    return (cands[0][0], cands[0][2], cands[0][3]) if cands else None


def _node_metric_keys(result: AuditResult, metric: str) -> list[str]:
    cache = getattr(result, "_node_keys", None)
    if cache is None:
        cache = set()
        for d in result.nodes.values():
            cache.update(d["metrics"])
        result._node_keys = cache  # type: ignore[attr-defined]
    return sorted(k for k in cache if k == metric or k.endswith("." + metric))


def failed_gate_views(result: AuditResult) -> list[tuple[Any, str, str | None]]:
    """``(gate, node metric key, subtree root)`` of every failed or missing gate whose metric has
    per-node evidence, in gate order: global gates over the whole hierarchy, ``node:X`` gates
    over X's subtree (slice gates have no per-node view: the roll-up is not per slice)."""
    out = []
    for r in result.gate_results:
        g = r.gate
        if r.status == "pass" or g.metric.startswith("delta:") or g.metric.endswith("missing_run_rate"):
            continue
        root = g.scope[len("node:") :] if g.scope and g.scope.startswith("node:") else None
        if g.scope and root is None:
            continue
        for key in _node_metric_keys(result, g.metric):
            if any(d["metrics"].get(key) is not None for d in result.nodes.values()):
                out.append((g, key, root))
            break
    return out


DIAGNOSIS_ROWS = 10
"""Rows of the category-diagnosis table in the HTML and Markdown reports (all are in the JSON)."""


def category_diagnosis_rows(result: AuditResult) -> tuple[str, list[list[Any]]] | None:
    """The short category-diagnosis table of the reports: a heading sentence and rows ``[cause,
    under, label, queries, share]`` (the first :data:`DIAGNOSIS_ROWS`, most frequent first), or
    ``None`` when the audit replayed no filters."""
    d = result.category_diagnosis or {}
    if not d:
        return None
    n = int(d.get("n_false_exclusions", 0))
    rows = [
        [r["cause"], r["under"] or "(no common ancestor)", r["label"] or "", r["n"], f"{r['share']:.1%}"]
        for r in d.get("by_cause_under", [])[:DIAGNOSIS_ROWS]
    ]
    more = len(d.get("by_cause_under", [])) - len(rows)
    head = (
        f"{n} falsely excluded {'query' if n == 1 else 'queries'}, by the first filter that excluded "
        "the gold (its relation to the gold node, and their deepest common ancestor)"
        + (f"; {more} more rows in report.json" if more > 0 else "")
        if n
        else "No falsely excluded queries."
    )
    return head, rows


def hierarchy_plot(
    result: AuditResult, max_rows: int = 45, gate: Any = None, key: str | None = None, root: str | None = None
) -> str:
    """Per-branch scores as an indented tree (3 levels) with one bar per node, for ``gate``
    (default: the first failing gate with per-node evidence, else the first with any), over
    the whole hierarchy or the subtree of ``root``."""
    if gate is None or key is None:
        pick = _primary_gate(result)
        if pick is None or not result.nodes:
            return '<p class="sub">No metric with per-node evidence (no family attached gold nodes to its rows).</p>'
        _, gate, key = pick
    ont = result.ontology
    start = ont.index(root) if root is not None and root in ont else 0
    top = result.nodes.get(ont.ids[start], {}).get("depth", 0) if start else 0
    inside = set(ont.descendant_indices(start, include_self=True).tolist()) if start else None
    rows = [
        (nid, d)
        for nid, d in result.nodes.items()
        if d["metrics"].get(key) is not None or key in d["metrics"]
    ]
    if inside is not None:
        rows = [r for r in rows if ont.id_index.get(r[0]) in inside]
    virtual = ont.virtual_root and start == 0  # the virtual root is no branch: never charted
    if virtual:
        rows = [r for r in rows if r[0] != ont.ids[0]]
    # keep the most populated nodes of the top levels, shown in tree (pre-)order
    rows = [r for r in rows if r[1]["depth"] <= top + 3]
    rows.sort(key=lambda r: -max(r[1]["n"].values() or [0]))
    keep = {nid for nid, _ in rows[:max_rows]}
    order: list[tuple[str, int]] = []
    children = ont.child_ptr_idx

    def walk(i: int, depth: int, seen: set[int]) -> None:
        if i in seen or len(order) > max_rows:
            return
        seen.add(i)
        nid = ont.ids[i]
        if nid in keep:
            order.append((nid, depth))
        ptr, idx = children
        for c in idx[ptr[i] : ptr[i + 1]].tolist():
            if ont.ids[c] in keep or depth < 3:
                walk(c, depth + 1, seen)

    walk(start, -1 if virtual else 0, set())  # under a virtual root, the real roots are level 0
    width, row_h, indent, label_w = 760, 20, 14, 300
    h = row_h * len(order) + 12
    under = f" under {escape(ont.label(root) or root)}" if root is not None else ""
    parts = [
        f'<div class="ctitle">{escape(key)} per branch{under} (gate <code>{escape(str(gate))}</code>; '
        f"red = violates the threshold, dashed line = threshold; n = rows)</div>"
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" role="img" '
        f'aria-label="per-branch {escape(key)}"><title>{escape(key)} per ontology branch</title>'
    ]
    scale = width - label_w - 110
    tx = label_w + scale * max(0.0, min(1.0, gate.threshold))
    for i, (nid, depth) in enumerate(order):
        d = result.nodes[nid]
        y = 2 + i * row_h
        v = d["metrics"].get(key)
        n = max(d["n"].values() or [0])
        lab = f"{d['label'] or nid}"
        lab = lab if len(lab) <= 34 else lab[:33] + "…"
        parts.append(
            f'<text x="{depth * indent}" y="{y + 13}"><title>{escape(nid)}</title>{escape(lab)}</text>'
        )
        if v is None:
            parts.append(f'<text x="{label_w}" y="{y + 13}" fill="#a15c00">missing (n={n})</text>')
            continue
        w = scale * max(0.0, min(1.0, float(v)))
        ok = gate.compare(float(v))
        parts.append(
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 7}" '
            f'fill="{"#3b8f5a" if ok else "#c0392b"}"/>'
        )
        parts.append(f'<text x="{label_w + scale + 8}" y="{y + 13}">{float(v):.3f} (n={n})</text>')
    parts.append(
        f'<line x1="{tx:.1f}" y1="0" x2="{tx:.1f}" y2="{h - 4}" stroke="#1d2330" stroke-dasharray="4 3"/>'
    )
    parts.append("</svg>")
    return "".join(parts)


def coverage_heatmap(cov: dict[str, Any], max_branches: int = 40) -> str:
    if not cov:
        return ""
    axes = cov["axes"]
    branches = axes["branch"][:max_branches]
    counts = {(c["intent"], c["doc_type"], c["branch"]): c["n"] for c in cov["cells"]}
    thin = cov["thin_threshold"]
    head = (
        "<tr><th>intent</th><th>doc type</th>"
        + "".join(
            f'<th title="{escape(b)}">{escape((cov["branch_labels"].get(b) or b)[:14])}</th>'
            for b in branches
        )
        + "</tr>"
    )
    body = []
    for it in axes["intent"]:
        for dt in axes["doc_type"]:
            cells = []
            for b in branches:
                n = counts.get((it, dt, b), 0)
                cls = "c0" if n == 0 else ("c1" if n < thin else "c2")
                cells.append(f'<td class="{cls}">{n}</td>')
            body.append(f"<tr><td>{escape(it)}</td><td>{escape(dt)}</td>{''.join(cells)}</tr>")
    more = (
        f'<p class="sub">{len(axes["branch"]) - max_branches} more branches in the JSON report.</p>'
        if len(axes["branch"]) > max_branches
        else ""
    )
    return (
        f'<p class="sub">{cov["n_cells"]} cells: <span class="tag" style="background:#c0392b">'
        f'{cov["n_empty"]} empty</span> <span class="tag" style="background:#a15c00">{cov["n_thin"]} thin '
        f'(&lt; {thin})</span></p><div style="overflow-x:auto"><table class="heat">{head}{"".join(body)}</table></div>{more}'
    )


def _qualified_delta(key: str, result: AuditResult) -> bool:
    """``delta:<family>.<metric>`` keys (unique), not the unqualified or evaluation aliases."""
    return key in set((result.baseline or {}).get("primary", ()))


def _duplicate_key(key: str, result: AuditResult) -> bool:
    """An unqualified metric key whose ``family.metric`` twin is also in the table."""
    if "[" in key or key.startswith("delta:") or key.split(".", 1)[0] in result.families:
        return False
    return any(f"{fam}.{key}" in result.metrics for fam in result.families)


def _delta_row(k: str, d: dict[str, Any]) -> list[str]:
    return [
        f"<code>{escape(k)}</code>",
        _f(d.get("candidate")),
        _f(d.get("baseline")),
        _f(d.get("value")),
        (f"[{d['ci'][0]:.4f}, {d['ci'][1]:.4f}]" if d.get("ci") else escape(d.get("missing") or "")),
    ]


def _gated_delta(key: str, result: AuditResult) -> bool:
    gated = {r.gate.metric for r in result.gate_results if r.gate.metric.startswith("delta:")}
    return key in gated or any(key.endswith("." + g[len("delta:") :]) for g in gated)


def metric_family(key: str, result: AuditResult) -> str:
    """The family a metric key belongs to (``fam.m``, ``fam.eval.m``, scoped keys, bare names)."""
    base = key.split("[", 1)[0]
    head = base.split(".", 1)[0]
    if head in result.families:
        return head
    owners = [f for f in result.families if f"{f}.{base}" in result.metrics]
    return owners[0] if len(owners) == 1 else "other"


def _num_attr(x: Any) -> str:
    return f"{float(x)!r}" if isinstance(x, (int, float)) and x == x else ""


def metrics_html(result: AuditResult) -> str:
    """Every metric (``delta:`` keys are in the baseline section), one sortable table per family,
    with a filter box; unqualified duplicates of ``family.metric`` keys are left out."""
    groups: dict[str, list[tuple[str, Any]]] = {}
    for k, m in sorted(result.metrics.items()):
        if k.startswith("delta:") or _duplicate_key(k, result):
            continue
        groups.setdefault(metric_family(k, result), []).append((k, m))
    if not groups:
        return "<h2>Metrics</h2><p class='sub'>No metrics.</p>"
    out = [
        "<h2>Metrics</h2>",
        "<input id='metric-filter' class='filter' type='search' placeholder='filter metrics (name, family, value)' "
        "aria-label='filter metrics'>",
    ]
    order = [f for f in result.families if f in groups] + sorted(set(groups) - set(result.families))
    for fam in order:
        rows = groups[fam]
        body = "".join(
            "<tr>"
            f"<td><code>{escape(k)}</code></td>"
            f'<td class="num" data-v="{_num_attr(m.value)}">{_f(m.value)}</td>'
            f'<td class="num" data-v="{_num_attr(m.denominator)}">'
            + (
                f"{m.numerator:g}/{m.denominator:g}"
                if m.numerator is not None and m.denominator is not None
                else ""
            )
            + "</td>"
            f"<td>{(f'[{m.ci[0]:.4f}, {m.ci[1]:.4f}]' if m.ci else '')}</td>"
            f"<td>{escape(m.missing or '')}</td></tr>"
            for k, m in rows
        )
        out.append(
            f"<section class='metric-family' data-family='{escape(fam, quote=True)}'>"
            f"<h3>{escape(fam)} <span class='sub'>({len(rows)} metrics)</span></h3>"
            "<table class='sortable'><thead><tr><th>metric</th><th>value</th><th>num/den</th><th>CI</th>"
            f"<th>missing</th></tr></thead><tbody>{body}</tbody></table></section>"
        )
    return "".join(out)


def prov_trail_html(result: AuditResult) -> str:
    """The PROV-O trail section (:func:`~kg_rageval.audit.prov_trail.prov_trail_summary`):
    ``prov_traceable_rate`` with its numerator and denominator (or why it is missing) and the
    SHACL verdict of ``prov.ttl``; empty without a trail."""
    from kg_rageval.audit.prov_trail import prov_trail_summary

    p = prov_trail_summary(result)
    if p is None:
        return ""
    m = p["prov_traceable_rate"] or {}
    num, den = m.get("numerator"), m.get("denominator")
    verdict = "conforms" if p["conforms"] else f"does not conform ({p['violations']} SHACL violations)"
    out = [
        "<h2>PROV-O trail</h2><div class='card'>",
        _table(
            ["metric", "value", "num/den", "missing"],
            [
                [
                    "<code>provenance.prov_traceable_rate</code>",
                    _f(m.get("value")) if m.get("value") is not None else "missing evidence",
                    f"{num:g}/{den:g}" if num is not None and den is not None else "",
                    escape(m.get("missing") or ""),
                ]
            ],
            num_cols=[1, 2],
        ),
        f"<p><code>{escape(p['file'])}</code> {escape(verdict)} against <code>shapes/provenance.ttl</code>.</p>",
    ]
    if p["note"]:
        out.append(f"<p class='sub'>{escape(p['note'])}</p>")
    if p["messages"]:
        out.append("<ul>" + "".join(f"<li>{escape(msg)}</li>" for msg in p["messages"]) + "</ul>")
    out.append("</div>")
    return "".join(out)


def failing_records_html(result: AuditResult) -> str:
    """Per failing gate, the records driving it (worst first)."""
    import json

    def cell(x: Any) -> str:
        if isinstance(x, (list, dict)):
            x = json.dumps(x, ensure_ascii=False, default=str)
        return _f(x)

    blocks = [f for f in result.failing if f["records"] or f.get("note")]
    if not blocks:
        return ""
    out = [
        "<h2>Records driving the failing gates</h2>",
        f"<p class='sub'>worst first: the records furthest below the threshold on their own "
        f"(at most {result.config.report.failing_records} per gate; all counts in the JSON report)</p>",
    ]
    for f in blocks:
        out.append(
            f"<h3><code>{escape(f['gate'])}</code> <span class='tag {escape(f['status'])}'>"
            f"{escape(f['status'].upper())}</span> <span class='sub'>{len(f['records'])} of "
            f"{f['n_driving']} records</span></h3>"
            if f["records"]
            else f"<h3><code>{escape(f['gate'])}</code> <span class='sub'>{escape(f['note'])}</span></h3>"
        )
        if not f["records"]:
            continue
        out.append(
            _table(
                ["record", "query", "gold", "prediction", "value", "reason"],
                (
                    [
                        escape(str(r["id"])),
                        cell(r["query"]),
                        cell(r["gold"]),
                        cell(r["prediction"]),
                        _f(r["value"]),
                        escape(r["reason"] or ""),
                    ]
                    for r in f["records"]
                ),
                num_cols=[4],
            )
        )
    return "".join(out)


def html_report(result: AuditResult) -> str:
    c = result.status_counts()
    verdict = "pass" if result.passed else "fail"
    ont = result.ontology
    s: list[str] = []
    s.append(
        f"<h1>Audit: {escape(result.config.name)} <span class='verdict {verdict}'>"
        f"{'PASSED' if result.passed else 'FAILED'}</span></h1>"
    )
    s.append(
        f"<p class='sub'>{len(result.gate_results)} gates — {c['pass']} pass, {c['fail']} fail, "
        f"{c['missing']} missing evidence · {result.n_records} records · ontology "
        f"<code>{escape(str(ont.source))}</code> ({ont.n_nodes} nodes) · {result.seconds:.2f} s</p>"
    )
    s.append("<h2>Gates</h2>")
    order = {"missing": 0, "fail": 1, "pass": 2}
    s.append(
        _table(
            ["status", "gate", "observed", "reason"],
            (
                [
                    f"<span class='tag {r.status}'>{r.status.upper()}</span>",
                    f"<code>{escape(str(r.gate))}</code>",
                    _f(r.observed),
                    escape(r.reason),
                ]
                for r in sorted(result.gate_results, key=lambda r: order[r.status])
            ),
            num_cols=[2],
        )
    )
    views = failed_gate_views(result)
    if views:
        s.append(
            f"<h2>Per-branch scores on the hierarchy ({len(views)} failed gate{'s' if len(views) > 1 else ''})</h2>"
        )
        s.extend(
            "<div class='card'>" + hierarchy_plot(result, gate=g, key=k, root=root) + "</div>"
            for g, k, root in views
        )
    else:
        s.append(
            "<h2>Per-branch scores on the hierarchy</h2><div class='card'>"
            + hierarchy_plot(result)
            + "</div>"
        )
    s.append("<h2>Branches driving the failures</h2>")
    if result.drivers:
        s.append(
            "<p class='sub'>impact = weight × (global value − branch value): the branch's share of the "
            "shortfall beyond its size (docs/audit.md)</p>"
        )
        s.append(
            _table(
                ["gate", "node", "label", "depth", "rows", "value", "deficit share", "impact"],
                (
                    [
                        f"<code>{escape(d['gate'])}</code>",
                        escape(d["node"]),
                        escape(d["label"] or ""),
                        str(d["depth"]),
                        str(d["n"]),
                        _f(d["value"]),
                        _f(d.get("deficit_share")),
                        _f(d["impact"], 3),
                    ]
                    for d in result.drivers[: result.config.report.top_branches]
                ),
                num_cols=[3, 4, 5, 6, 7],
            )
        )
    else:
        s.append("<p class='sub'>No failing global gate with per-node evidence.</p>")
    s.append(failing_records_html(result))
    s.append("<div class='grid'>")
    rel_items: list[tuple[str, float]] = []
    for fam, rel in result.relations.items():
        from kg_rageval.ontology import RELATIONS

        for name in list(RELATIONS) + sorted(set(rel) - set(RELATIONS)):
            if name in rel:
                rel_items.append((f"{fam}: {name}" if len(result.relations) > 1 else name, float(rel[name])))
    rel_colors = ["#1e7d45" if lab.endswith("exact") else "#3b6fb6" for lab, _ in rel_items]
    s.append(
        "<div class='card'>"
        + bar_chart(rel_items, title="Confusion relations (gold → predicted)", colors=rel_colors)
        + "</div>"
    )
    ex = result.exclusions or {}
    ex_items = [(f"filter: {k}", float(v)) for k, v in (ex.get("excluded_by_filter") or {}).items()]
    if ex:
        ex_items.append(("entitlement (correct)", float(ex.get("excluded_by_entitlement", 0))))
        if ex.get("inconsistent_filter_log"):
            ex_items.append(("inconsistent filter log", float(ex["inconsistent_filter_log"])))
    ex_colors = [
        "#7f8c8d"
        if lab.startswith("entitlement")
        else "#a15c00"
        if lab.startswith("inconsistent")
        else "#c0392b"
        for lab, _ in ex_items
    ]
    s.append(
        "<div class='card'>"
        + bar_chart(
            ex_items,
            title=f"Gold documents excluded before ranking (of {ex.get('gold_documents', 0)})",
            colors=ex_colors,
        )
        + "</div>"
    )
    s.append("</div>")
    att = sorted(
        (k, m)
        for k, m in result.metrics.items()
        if "doc_attribution@" in k and "[" not in k and k.count(".") >= 2 and m.value is not None
    )
    if att:
        stage_colors = {"found": "#1e7d45", "filter": "#c0392b", "retriever": "#a15c00", "ranker": "#3b6fb6"}
        items = [(k.rsplit(".", 1)[-1], float(m.value)) for k, m in att if m.value is not None]
        s.append(
            "<div class='card'>"
            + bar_chart(
                items,
                title=f"Where gold documents were lost ({att[0][0].rsplit('.', 1)[0]}: share of eligible gold docs)",
                value_fmt="{:.1%}",
                max_value=1.0,
                colors=[stage_colors.get(n, "#3b6fb6") for n, _ in items],
            )
            + "</div>"
        )
    if ex.get("excluded_by_branch"):
        s.append(
            "<div class='card'>"
            + bar_chart(
                [
                    (f"{ont.label(b) or b}" if b in ont else b, float(v))
                    for b, v in list(ex["excluded_by_branch"].items())[:15]
                ],
                title="Filter exclusions by ontology branch",
                color="#c0392b",
            )
            + "</div>"
        )
    diag = category_diagnosis_rows(result)
    if diag is not None:
        head, drows = diag
        s.append("<h2>Where false exclusions come from</h2>")
        s.append(f'<p class="sub">{escape(head)}</p>')
        if drows:
            s.append(
                _table(
                    ["cause", "under", "label", "queries", "share"],
                    ([escape(str(c)) for c in r] for r in drows),
                    num_cols=[3, 4],
                )
            )
    s.append(
        "<h2>Coverage: intent × document type × ontology branch</h2>" + coverage_heatmap(result.coverage)
    )
    s.append("<h2>Families</h2>")
    s.append(
        _table(
            ["family", "status", "with section", "scored", "missing runs", "unscored reasons", "versions"],
            (
                [
                    escape(f),
                    escape(cnt["status"] + (f": {cnt['reason']}" if cnt["reason"] else "")),
                    str(cnt["with_section"]),
                    str(cnt["scored_records"]),
                    str(cnt["missing_runs"]),
                    escape(", ".join(f"{k}: {v}" for k, v in cnt["unscored_reasons"].items())),
                    escape(", ".join(cnt["versions"])),
                ]
                for f, cnt in result.counts.get("families", {}).items()
            ),
            num_cols=[2, 3, 4],
        )
    )
    s.append(metrics_html(result))
    s.append(ingestion_html(result, table=_table, fmt=_f, escape=escape))
    s.append(prov_trail_html(result))
    for fam, keys in result.slices.items():
        for key, groups in keys.items():
            names = sorted({m for g in groups.values() for m in g["metrics"]})[:8]
            s.append(f"<h2>{escape(fam)} by {escape(key)}</h2>")
            s.append(
                _table(
                    ["value", "rows"] + names,
                    (
                        [escape(v), str(g["n"])] + [_f(g["metrics"].get(n, {}).get("value")) for n in names]
                        for v, g in sorted(groups.items())
                    ),
                    num_cols=range(1, len(names) + 2),
                )
            )
    if result.baseline:
        s.append("<h2>Baseline comparison</h2>")
        s.append(
            f"<p class='sub'>candidate − baseline over the records both scored; baseline records "
            f"<code>{escape(result.baseline['records'])}</code></p>"
        )
        gated = [
            k for k in result.baseline["deltas"] if _qualified_delta(k, result) and _gated_delta(k, result)
        ]
        if gated:
            s.append(
                _table(
                    ["gated delta", "candidate", "baseline", "delta value", "paired CI"],
                    (_delta_row(k, result.baseline["deltas"][k]) for k in gated),
                    num_cols=[1, 2, 3],
                )
            )
        s.append("<details><summary>all paired deltas</summary>")
        s.append(
            _table(
                ["delta", "candidate", "baseline", "delta value", "paired CI"],
                (
                    _delta_row(k, d)
                    for k, d in result.baseline["deltas"].items()
                    if _qualified_delta(k, result)
                ),
                num_cols=[1, 2, 3],
            )
        )
        s.append("</details>")
        for name, rows in result.baseline.get("worst_queries", {}).items():
            if rows:
                s.append(f"<h3>Per-query deltas of <code>{escape(name)}</code> (worst first)</h3>")
                s.append(
                    _table(
                        ["record", "candidate", "baseline", "delta"],
                        (
                            [
                                escape(str(r["record_id"])),
                                _f(r["candidate"]),
                                _f(r["baseline"]),
                                _f(r["delta"]),
                            ]
                            for r in rows[:15]
                        ),
                        num_cols=[1, 2, 3],
                    )
                )
    import json

    s.append(
        "<h2>Manifest</h2><details><summary>hashes, versions, seeds</summary><pre>"
        + escape(json.dumps(result.manifest, indent=2, default=str))
        + "</pre></details>"
    )
    body = "\n".join(s)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>kg-rageval audit: {escape(result.config.name)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main><script>{SCRIPT}</script></body></html>\n"
    )


def write_html(result: AuditResult, path: str | Path) -> None:
    Path(path).write_text(html_report(result), encoding="utf-8")
