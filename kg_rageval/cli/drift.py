"""``kg-rageval ontology diff|stability`` and ``kg-rageval records rebase`` (``docs/drift.md``)."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from kg_rageval.cli.common import emit, format_option, load_ontology_cli, loader_options, table


def _release_options(f):
    """Options that load the two releases (OLD and NEW may be of different formats); every
    loader option (``--strict-ontology``, ``--conflicts``, ``--dangling``, ...) applies to both."""
    f = loader_options(f)
    f = click.option("--old-format", default=None, help="Loader of OLD when its extension does not tell.")(f)
    f = click.option("--new-format", default=None, help="Loader of NEW when its extension does not tell.")(f)
    return f


def load_releases(old: str, new: str, old_format: str | None, new_format: str | None) -> tuple[Any, Any]:
    return load_ontology_cli(old, old_format), load_ontology_cli(new, new_format)


# ---------------------------------------------------------------------- ontology diff
@click.command("diff")
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@_release_options
@click.option(
    "--branch-depth",
    type=click.IntRange(0),
    default=1,
    show_default=True,
    help="Depth of the branches changes are counted under (root = 0).",
)
@click.option(
    "--limit",
    type=click.IntRange(0),
    default=100,
    show_default=True,
    help="Entries listed per kind (0: all).",
)
@click.option("--exit-code", is_flag=True, help="Exit 1 when the releases differ (like diff(1)).")
@format_option
def diff(old, new, old_format, new_format, branch_depth, limit, exit_code, fmt) -> None:
    """What changed from release OLD to release NEW: added, removed, merged, deprecated,
    revoked (with replacements), moved, relabelled, synonyms changed; counts per kind and per
    branch, and both content hashes. OLD and NEW are any two loadable sources."""
    from kg_rageval.drift import diff_ontologies

    t0 = time.perf_counter()
    o, n = load_releases(old, new, old_format, new_format)
    t1 = time.perf_counter()
    d = diff_ontologies(o, n, branch_depth=branch_depth)
    payload = d.to_dict(limit=limit or None)
    payload["load_seconds"] = round(t1 - t0, 3)
    emit(payload, fmt, _render_diff)
    if exit_code and not payload["identical"] and any(payload["counts"].values()):
        sys.exit(1)


def _rel(r: dict) -> str:
    return f"{r['source']} ({r['version'] or 'no version'}; {r['nodes']} nodes; {r['content_hash']})"


def _render_diff(p: dict) -> str:
    lines = [f"old: {_rel(p['old'])}", f"new: {_rel(p['new'])}"]
    if p["identical"]:
        lines.append("identical content")
    lines.append(
        f"common nodes {p['common_nodes']}, stable (same place, status and labels) {p['stable_nodes']}"
    )
    rows = []
    for k, c in p["counts"].items():
        top = list(p["by_branch"].get(k, {}).items())[:3]
        rows.append([k, c, ", ".join(f"{b} {v}" for b, v in top)])
    lines.append(table(rows, ["kind", "nodes", f"top branches (depth {p['branch_depth']})"]))
    for k, entries in p["changes"].items():
        lines.append(f"\n{k}:")
        for e in entries:
            lines.append("  " + _entry_text(k, e))
        if p["truncated"].get(k):
            lines.append(f"  … and {p['truncated'][k]} more (--limit 0 for all)")
    return "\n".join(lines)


def _entry_text(kind: str, e: dict) -> str:
    head = f"{e['id']}" + (f" ({e['label']})" if e.get("label") else "")
    if kind in ("deprecated", "revoked", "reactivated"):
        return f"{head}: {e['old_status']} → {e['status']}" + (
            f", replaced by {e['replaced_by']}" if e.get("replaced_by") else ", no replacement"
        )
    if kind == "replacement_changed":
        return f"{head}: replaced by {e['old_replaced_by']} → {e['replaced_by']}"
    if kind == "merged":
        return f"{head} → alternative id of {e['into']}" + (
            f" ({e['into_label']})" if e.get("into_label") else ""
        )
    if kind == "moved":
        return f"{head}: parents {', '.join(e['old_parents']) or '—'} → {', '.join(e['new_parents']) or '—'}"
    if kind == "relabelled":
        return f"{e['id']}: {e['old_label']!r} → {e['label']!r}"
    if kind == "synonyms_changed":
        return f"{head}: +{e['added']} −{e['removed']}"
    if kind == "alias_added":
        return f"{e['id']} → {e['of']}"
    if kind == "alias_removed":
        return f"{e['id']} (was of {e['was_of']})"
    if kind == "removed":
        return head + (f", replaced by {e['replaced_by']}" if e.get("replaced_by") else "")
    return head


# ---------------------------------------------------------------------- ontology stability
@click.command("stability")
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@click.option(
    "--data",
    "-d",
    "data_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Records labelled against OLD (they are re-based onto NEW in memory).",
)
@_release_options
@click.option(
    "--branch-depth",
    type=click.IntRange(0),
    default=1,
    show_default=True,
    help="Depth of the branches reported (root = 0).",
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    help="Hierarchy metrics to compare (default: hierarchical_f1, hierarchical_precision, "
    "hierarchical_recall, exact_accuracy).",
)
@format_option
def stability(old, new, data_path, old_format, new_format, branch_depth, metrics, fmt) -> None:
    """Per branch: how many nodes changed between OLD and NEW and how much the hierarchy
    metrics moved because of the ontology alone (the same predictions scored under both
    releases, re-based onto NEW)."""
    from kg_rageval.drift.stability import stability as run

    o, n = load_releases(old, new, old_format, new_format)
    res = run(o, n, data_path, branch_depth=branch_depth, metrics=metrics or None)
    emit(res, fmt, _render_stability)


def _render_stability(p: dict) -> str:
    lines = [
        f"old: {_rel(p['old'])}",
        f"new: {_rel(p['new'])}",
        f"records {p['records']}: scored under both {p['scored_both']}, "
        f"left out {p['left_out']} (flagged by the re-base: {p['flagged']})",
    ]
    head = ["branch", "label", "changed nodes", "rows"]
    rows = []
    for b in p["branches"]:
        n = b["rows"]
        row = [
            b["branch"],
            b["label"] or "",
            b["changed_nodes"],
            n["new"] if n["old"] == n["new"] else f"{n['old']} → {n['new']}",
        ]
        for m in p["metrics"]:
            v = b["metrics"].get(m, {})
            row.append(v.get("delta"))
        rows.append(row)
    lines.append(table(rows, head + [f"Δ {m}" for m in p["metrics"]]))
    tot = p["total"]
    lines.append(
        "overall: "
        + ", ".join(f"{m} {tot[m]['old']} → {tot[m]['new']} (Δ {tot[m]['delta']})" for m in p["metrics"])
    )
    return "\n".join(lines)


# ---------------------------------------------------------------------- records rebase
@click.group("records")
def records() -> None:
    """Work on records files: re-base them onto a new ontology release."""


@records.command("rebase")
@click.option(
    "--from", "old", required=True, metavar="OLD", help="The release the records were labelled against."
)
@click.option("--to", "new", required=True, metavar="NEW", help="The release to re-base them onto.")
@click.option(
    "--data",
    "-d",
    "data_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Records file (JSONL, docs/records.md).",
)
@click.option(
    "--out",
    "-o",
    "out_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="Re-based records (JSONL; .gz compresses).",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Report file (JSON; default OUT.rebase.json).",
)
@_release_options
@click.option("--strict", is_flag=True, help="Exit 1 when a record is flagged (an id could not be mapped).")
@format_option
def rebase(old, new, data_path, out_path, report_path, old_format, new_format, strict, fmt) -> None:
    """Re-base every ontology id of the records from OLD to NEW through replacement and merge
    chains (followed transitively; cycles and forks reported). Gold ids that moved, were merged
    or retired are listed in the report; records with an id that could not be mapped are
    flagged (field "rebase"), never dropped."""
    from kg_rageval.base.outputs import refuse_overwrite
    from kg_rageval.drift.rebase import rebase_file

    refuse_overwrite(
        {"--out": out_path, "--report": report_path or out_path + ".rebase.json"},
        {"--data": data_path, "--from": old, "--to": new},
    )
    o, n = load_releases(old, new, old_format, new_format)
    rep = rebase_file(o, n, data_path, out_path, report=report_path)
    d = rep.to_dict()
    summary = {
        k: d[k]
        for k in (
            "from",
            "to",
            "input",
            "output",
            "records",
            "records_rebased",
            "records_flagged",
            "records_unchanged",
            "id_occurrences",
            "gold_ids_by_outcome",
            "notes",
            "seconds",
        )
    }
    summary["report"] = rep.output.get("report")
    emit(summary, fmt, _render_rebase)
    if strict and rep.records_flagged:
        sys.exit(1)


def _render_rebase(s: dict) -> str:
    lines = [
        f"from: {_rel(s['from'])}",
        f"to:   {_rel(s['to'])}",
        f"{s['records']} records: {s['records_rebased']} re-based, {s['records_flagged']} flagged, "
        f"{s['records_unchanged']} unchanged ({s['seconds']:.2f} s)",
    ]
    rows = [[side, k, v] for side, per in s["id_occurrences"].items() for k, v in sorted(per.items())]
    if rows:
        lines.append(table(rows, ["side", "outcome", "id occurrences"]))
    if s["gold_ids_by_outcome"]:
        lines.append(
            "gold ids by outcome: " + ", ".join(f"{k} {v}" for k, v in s["gold_ids_by_outcome"].items())
        )
    lines.extend(f"note: {n}" for n in s["notes"])
    lines.append(f"wrote {s['output']['path']} and the report {s['report']}")
    return "\n".join(lines)
