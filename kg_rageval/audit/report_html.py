"""A self-contained HTML audit report: inline CSS and SVG, no scripts, no external assets.

Plots: per-branch scores on the hierarchy (an indented tree of bars, red below the gate's
threshold), confusion relation bars, exclusion attribution bars and a coverage heat-map.
"""

from __future__ import annotations

from html import escape as _html_escape
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from ..fmt import fmt_value
from .escape import xml_text

if TYPE_CHECKING:  # pragma: no cover
    from .result import AuditResult

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
"""


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
        out.append("<tr>" + "".join(
            f'<td class="num">{c}</td>' if i in nums else f"<td>{c}</td>" for i, c in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def bar_chart(items: list[tuple[str, float]], *, title: str, color: str = "#3b6fb6", value_fmt: str = "{:g}",
              max_value: float | None = None, colors: list[str] | None = None) -> str:
    """Horizontal bar chart as inline SVG."""
    if not items:
        return f'<p class="sub">{escape(title)}: no data.</p>'
    width, label_w, row_h = 560, 190, 22
    top = max([v for _, v in items] + [max_value or 0]) or 1.0
    h = row_h * len(items) + 8
    parts = [f'<div class="ctitle">{escape(title)}</div>'
             f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" role="img" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
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


def _primary_gate(result: "AuditResult"):
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


def _node_metric_keys(result: "AuditResult", metric: str) -> list[str]:
    cache = getattr(result, "_node_keys", None)
    if cache is None:
        cache = set()
        for d in result.nodes.values():
            cache.update(d["metrics"])
        result._node_keys = cache  # type: ignore[attr-defined]
    return sorted(k for k in cache if k == metric or k.endswith("." + metric))


def hierarchy_plot(result: "AuditResult", max_rows: int = 45) -> str:
    """Per-branch scores as an indented tree (depth ≤ 3) with one bar per node."""
    pick = _primary_gate(result)
    if pick is None or not result.nodes:
        return '<p class="sub">No metric with per-node evidence (no family attached gold nodes to its rows).</p>'
    _, gate, key = pick
    ont = result.ontology
    rows = [(nid, d) for nid, d in result.nodes.items() if d["metrics"].get(key) is not None or key in d["metrics"]]
    # keep the most populated nodes of the top levels, shown in tree (pre-)order
    rows = [r for r in rows if r[1]["depth"] <= 3]
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
        for c in idx[ptr[i]:ptr[i + 1]].tolist():
            if ont.ids[c] in keep or depth < 3:
                walk(c, depth + 1, seen)

    walk(0, 0, set())
    width, row_h, indent, label_w = 760, 20, 14, 300
    h = row_h * len(order) + 12
    parts = [f'<div class="ctitle">{escape(key)} per branch (gate <code>{escape(str(gate))}</code>; '
             f'red = violates the threshold, dashed line = threshold; n = rows)</div>'
             f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" role="img" '
             f'aria-label="per-branch {escape(key)}"><title>{escape(key)} per ontology branch</title>']
    scale = width - label_w - 110
    tx = label_w + scale * max(0.0, min(1.0, gate.threshold))
    for i, (nid, depth) in enumerate(order):
        d = result.nodes[nid]
        y = 2 + i * row_h
        v = d["metrics"].get(key)
        n = max(d["n"].values() or [0])
        lab = f"{d['label'] or nid}"
        lab = lab if len(lab) <= 34 else lab[:33] + "…"
        parts.append(f'<text x="{depth * indent}" y="{y + 13}"><title>{escape(nid)}</title>{escape(lab)}</text>')
        if v is None:
            parts.append(f'<text x="{label_w}" y="{y + 13}" fill="#a15c00">missing (n={n})</text>')
            continue
        w = scale * max(0.0, min(1.0, float(v)))
        ok = gate.compare(float(v))
        parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 7}" '
                     f'fill="{"#3b8f5a" if ok else "#c0392b"}"/>')
        parts.append(f'<text x="{label_w + scale + 8}" y="{y + 13}">{float(v):.3f} (n={n})</text>')
    parts.append(f'<line x1="{tx:.1f}" y1="0" x2="{tx:.1f}" y2="{h - 4}" stroke="#1d2330" stroke-dasharray="4 3"/>')
    parts.append("</svg>")
    return "".join(parts)


def coverage_heatmap(cov: dict[str, Any], max_branches: int = 40) -> str:
    if not cov:
        return ""
    axes = cov["axes"]
    branches = axes["branch"][:max_branches]
    counts = {(c["intent"], c["doc_type"], c["branch"]): c["n"] for c in cov["cells"]}
    thin = cov["thin_threshold"]
    head = "<tr><th>intent</th><th>doc type</th>" + "".join(
        f'<th title="{escape(b)}">{escape((cov["branch_labels"].get(b) or b)[:14])}</th>' for b in branches) + "</tr>"
    body = []
    for it in axes["intent"]:
        for dt in axes["doc_type"]:
            cells = []
            for b in branches:
                n = counts.get((it, dt, b), 0)
                cls = "c0" if n == 0 else ("c1" if n < thin else "c2")
                cells.append(f'<td class="{cls}">{n}</td>')
            body.append(f"<tr><td>{escape(it)}</td><td>{escape(dt)}</td>{''.join(cells)}</tr>")
    more = (f'<p class="sub">{len(axes["branch"]) - max_branches} more branches in the JSON report.</p>'
            if len(axes["branch"]) > max_branches else "")
    return (f'<p class="sub">{cov["n_cells"]} cells: <span class="tag" style="background:#c0392b">'
            f'{cov["n_empty"]} empty</span> <span class="tag" style="background:#a15c00">{cov["n_thin"]} thin '
            f'(&lt; {thin})</span></p><div style="overflow-x:auto"><table class="heat">{head}{"".join(body)}</table></div>{more}')


def _qualified_delta(key: str, result: "AuditResult") -> bool:
    """``delta:<family>.<metric>`` keys (unique), not the unqualified or evaluation aliases."""
    return key in set((result.baseline or {}).get("primary", ()))


def _duplicate_key(key: str, result: "AuditResult") -> bool:
    """An unqualified metric key whose ``family.metric`` twin is also in the table."""
    if "[" in key or key.startswith("delta:") or key.split(".", 1)[0] in result.families:
        return False
    return any(f"{fam}.{key}" in result.metrics for fam in result.families)


def html_report(result: "AuditResult") -> str:
    c = result.status_counts()
    verdict = "pass" if result.passed else "fail"
    ont = result.ontology
    s: list[str] = []
    s.append(f"<h1>Audit: {escape(result.config.name)} <span class='verdict {verdict}'>"
             f"{'PASSED' if result.passed else 'FAILED'}</span></h1>")
    s.append(f"<p class='sub'>{len(result.gate_results)} gates — {c['pass']} pass, {c['fail']} fail, "
             f"{c['missing']} missing evidence · {result.n_records} records · ontology "
             f"<code>{escape(str(ont.source))}</code> ({len(ont)} nodes) · {result.seconds:.2f} s</p>")
    s.append("<h2>Gates</h2>")
    order = {"missing": 0, "fail": 1, "pass": 2}
    s.append(_table(["status", "gate", "observed", "reason"], (
        [f"<span class='tag {r.status}'>{r.status.upper()}</span>", f"<code>{escape(str(r.gate))}</code>",
         _f(r.observed), escape(r.reason)]
        for r in sorted(result.gate_results, key=lambda r: order[r.status])), num_cols=[2]))
    s.append("<h2>Per-branch scores on the hierarchy</h2><div class='card'>" + hierarchy_plot(result) + "</div>")
    s.append("<h2>Branches driving the failures</h2>")
    if result.drivers:
        s.append(_table(["gate", "node", "label", "depth", "rows", "value", "impact"], (
            [f"<code>{escape(d['gate'])}</code>", escape(d["node"]), escape(d["label"] or ""), str(d["depth"]),
             str(d["n"]), _f(d["value"]), _f(d["impact"], 2)]
            for d in result.drivers[: result.config.report.top_branches]), num_cols=[3, 4, 5, 6]))
    else:
        s.append("<p class='sub'>No failing global gate with per-node evidence.</p>")
    s.append("<div class='grid'>")
    rel_items: list[tuple[str, float]] = []
    for fam, rel in result.relations.items():
        from ..ontology import RELATIONS

        for name in list(RELATIONS) + sorted(set(rel) - set(RELATIONS)):
            if name in rel:
                rel_items.append((f"{fam}: {name}" if len(result.relations) > 1 else name, float(rel[name])))
    rel_colors = ["#1e7d45" if lab.endswith("exact") else "#3b6fb6" for lab, _ in rel_items]
    s.append("<div class='card'>" + bar_chart(rel_items, title="Confusion relations (gold → predicted)",
                                                colors=rel_colors) + "</div>")
    ex = result.exclusions or {}
    ex_items = [(f"filter: {k}", float(v)) for k, v in (ex.get("excluded_by_filter") or {}).items()]
    if ex:
        ex_items.append(("entitlement (correct)", float(ex.get("excluded_by_entitlement", 0))))
    ex_colors = ["#7f8c8d" if lab.startswith("entitlement") else "#c0392b" for lab, _ in ex_items]
    s.append("<div class='card'>" + bar_chart(ex_items, title=f"Gold documents excluded before ranking "
                                              f"(of {ex.get('gold_documents', 0)})", colors=ex_colors) + "</div>")
    s.append("</div>")
    att = sorted((k, m) for k, m in result.metrics.items()
                 if "doc_attribution@" in k and "[" not in k and k.count(".") >= 2 and m.value is not None)
    if att:
        stage_colors = {"found": "#1e7d45", "filter": "#c0392b", "retriever": "#a15c00", "ranker": "#3b6fb6"}
        items = [(k.rsplit(".", 1)[-1], float(m.value)) for k, m in att]
        s.append("<div class='card'>" + bar_chart(
            items, title=f"Where gold documents were lost ({att[0][0].rsplit('.', 1)[0]}: share of eligible gold docs)",
            value_fmt="{:.1%}", max_value=1.0, colors=[stage_colors.get(n, "#3b6fb6") for n, _ in items]) + "</div>")
    if ex.get("excluded_by_branch"):
        s.append("<div class='card'>" + bar_chart(
            [(f"{ont.label(b) or b}" if b in ont else b, float(v)) for b, v in list(ex["excluded_by_branch"].items())[:15]],
            title="Filter exclusions by ontology branch", color="#c0392b") + "</div>")
    s.append("<h2>Coverage: intent × document type × ontology branch</h2>" + coverage_heatmap(result.coverage))
    s.append("<h2>Families</h2>")
    s.append(_table(["family", "status", "with section", "scored", "missing runs", "unscored reasons", "versions"], (
        [escape(f), escape(cnt["status"] + (f": {cnt['reason']}" if cnt["reason"] else "")), str(cnt["with_section"]),
         str(cnt["scored_records"]), str(cnt["missing_runs"]),
         escape(", ".join(f"{k}: {v}" for k, v in cnt["unscored_reasons"].items())), escape(", ".join(cnt["versions"]))]
        for f, cnt in result.counts.get("families", {}).items()), num_cols=[2, 3, 4]))
    s.append("<h2>Metrics</h2>")
    s.append(_table(["metric", "value", "num/den", "CI", "missing"], (
        [f"<code>{escape(k)}</code>", _f(m.value),
         (f"{m.numerator:g}/{m.denominator:g}" if m.numerator is not None and m.denominator is not None else ""),
         (f"[{m.ci[0]:.4f}, {m.ci[1]:.4f}]" if m.ci else ""), escape(m.missing or "")]
        for k, m in sorted(result.metrics.items()) if not _duplicate_key(k, result)),
        num_cols=[1]))
    for fam, keys in result.slices.items():
        for key, groups in keys.items():
            names = sorted({m for g in groups.values() for m in g["metrics"]})[:8]
            s.append(f"<h2>{escape(fam)} by {escape(key)}</h2>")
            s.append(_table(["value", "rows"] + names, (
                [escape(v), str(g["n"])] + [_f(g["metrics"].get(n, {}).get("value")) for n in names]
                for v, g in sorted(groups.items())), num_cols=range(1, len(names) + 2)))
    if result.baseline:
        s.append("<h2>Baseline comparison</h2>")
        s.append(f"<p class='sub'>candidate − baseline over the records both scored; baseline records "
                 f"<code>{escape(result.baseline['records'])}</code></p>")
        s.append("<details><summary>all paired deltas</summary>")
        s.append(_table(["delta", "candidate", "baseline", "delta value", "paired CI"], (
            [f"<code>{escape(k)}</code>", _f(d.get("candidate")), _f(d.get("baseline")), _f(d.get("value")),
             (f"[{d['ci'][0]:.4f}, {d['ci'][1]:.4f}]" if d.get("ci") else escape(d.get("missing") or ""))]
            for k, d in result.baseline["deltas"].items() if _qualified_delta(k, result)), num_cols=[1, 2, 3]))
        s.append("</details>")
        for name, rows in result.baseline.get("worst_queries", {}).items():
            if rows:
                s.append(f"<h3>Per-query deltas of <code>{escape(name)}</code> (worst first)</h3>")
                s.append(_table(["record", "candidate", "baseline", "delta"], (
                    [escape(str(r["record_id"])), _f(r["candidate"]), _f(r["baseline"]), _f(r["delta"])]
                    for r in rows[:15]), num_cols=[1, 2, 3]))
    import json

    s.append("<h2>Manifest</h2><details><summary>hashes, versions, seeds</summary><pre>"
             + escape(json.dumps(result.manifest, indent=2, default=str)) + "</pre></details>")
    body = "\n".join(s)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>kg-rageval audit: {escape(result.config.name)}</title><style>{CSS}</style></head>"
            f"<body><main>{body}</main></body></html>\n")


def write_html(result: "AuditResult", path: str | Path) -> None:
    Path(path).write_text(html_report(result), encoding="utf-8")
