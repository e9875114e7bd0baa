"""The data of the HTML audit report's ingestion section (:func:`ingestion_html`, called by
:mod:`kg_rageval.audit.report_html`): the worst documents of the ``parsing``
family — highest CER and lowest TEDS — each shown with an anchor (``#ingestion-doc-<n>``) that
the section's summary links to, so a reader goes from the gate to the page that failed it.

Per document: ``cer = (S + D + I) / (S + D + H)`` of its own characters (``c_*`` stats) and
``teds`` the mean over its own tables (``teds_sum / n_tables``); documents without a scored
text (tables) are not listed for that measure. Worst first, ties by record id; at most
``report.failing_records`` a list (the same cap as the failing-records section)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_NEEDED = ("c_hits", "c_sub", "c_del", "c_ins")


def worst_documents(result: Any, limit: int) -> dict[str, list[dict[str, Any]]]:
    """``{"cer": [...], "teds": [...]}``: the parsing family's worst documents (see the
    module docstring); empty lists when the family did not run or scored nothing."""
    run = result.families.get("parsing")
    out: dict[str, list[dict[str, Any]]] = {"cer": [], "teds": []}
    if run is None or not run.evaluations or limit <= 0:
        return out
    ev = run.evaluations[0]
    if not len(ev):
        return out
    ids, st = ev.per_record_stats()
    n_ref = st["c_hits"] + st["c_sub"] + st["c_del"]
    has = n_ref > 0
    if has.any():
        err = st["c_sub"] + st["c_del"] + st["c_ins"]
        cer = np.divide(err, n_ref, out=np.zeros_like(err), where=has)
        idx = [int(i) for i in np.flatnonzero(has)]
        idx.sort(key=lambda i: (-cer[i], ids[i]))
        for i in idx[:limit]:
            out["cer"].append(
                {
                    "id": str(ids[i]),
                    "cer": float(cer[i]),
                    "chars": int(n_ref[i]),
                    "sub": int(st["c_sub"][i]),
                    "del": int(st["c_del"][i]),
                    "ins": int(st["c_ins"][i]),
                }
            )
    nt = st["n_tables"]
    if (nt > 0).any():
        tm = np.divide(st["teds_sum"], nt, out=np.zeros_like(nt), where=nt > 0)
        ts = np.divide(st["teds_s_sum"], nt, out=np.zeros_like(nt), where=nt > 0)
        idx = [int(i) for i in np.flatnonzero(nt > 0)]
        idx.sort(key=lambda i: (tm[i], ids[i]))
        for i in idx[:limit]:
            out["teds"].append(
                {
                    "id": str(ids[i]),
                    "teds": float(tm[i]),
                    "teds_s": float(ts[i]),
                    "tables": int(nt[i]),
                    "missing": int(st["n_tables_missing"][i]),
                }
            )
    return out


def ingestion_html(
    result: Any,
    *,
    table: Callable[..., str],
    fmt: Callable[[Any], str],
    escape: Callable[[Any], str],
) -> str:
    """The ingestion section: the parsing family's worst documents (:mod:`.report_ingestion`);
    ``""`` when the family has no scored document. ``table`` / ``fmt`` / ``escape``: the HTML
    report's own helpers (passed in: this module is imported by :mod:`.report_html`)."""
    worst = worst_documents(result, result.config.report.failing_records)
    if not (worst["cer"] or worst["teds"]):
        return ""
    anchors: dict[str, str] = {}

    def anchor(rid: str) -> str:
        return anchors.setdefault(rid, f"ingestion-doc-{len(anchors) + 1}")

    def rid_cell(rid: str, kind: str) -> str:
        a = anchor(rid) + f"-{kind}"
        return f"<span id='{a}'></span><code>{escape(rid)}</code>"

    links = []
    for kind, label in (("cer", "highest CER"), ("teds", "lowest TEDS")):
        if worst[kind]:
            top = worst[kind][0]
            links.append(
                f"<li><a href='#ingestion-worst-{kind}'>{label}</a>: worst "
                f"<a href='#{anchor(top['id'])}-{kind}'><code>{escape(top['id'])}</code></a> "
                f"({kind} {fmt(top[kind])})</li>"
            )
    out = [
        "<h2 id='ingestion'>Ingestion: worst documents</h2>",
        "<p class='sub'>parsing family, per document, worst first (at most "
        f"{result.config.report.failing_records} a list); CER of the document's own characters, "
        "TEDS the mean of its own tables</p>",
        "<ul>" + "".join(links) + "</ul>",
    ]
    if worst["cer"]:
        out.append("<h3 id='ingestion-worst-cer'>Highest CER</h3>")
        out.append(
            table(
                ["record", "cer", "reference chars", "substitutions", "deletions", "insertions"],
                (
                    [
                        rid_cell(d["id"], "cer"),
                        fmt(d["cer"]),
                        str(d["chars"]),
                        str(d["sub"]),
                        str(d["del"]),
                        str(d["ins"]),
                    ]
                    for d in worst["cer"]
                ),
                num_cols=range(1, 6),
            )
        )
    if worst["teds"]:
        out.append("<h3 id='ingestion-worst-teds'>Lowest TEDS</h3>")
        out.append(
            table(
                ["record", "teds", "teds_s", "tables", "unrecognised"],
                (
                    [
                        rid_cell(d["id"], "teds"),
                        fmt(d["teds"]),
                        fmt(d["teds_s"]),
                        str(d["tables"]),
                        str(d["missing"]),
                    ]
                    for d in worst["teds"]
                ),
                num_cols=range(1, 5),
            )
        )
    return "".join(out)


__all__ = ["ingestion_html", "worst_documents"]
