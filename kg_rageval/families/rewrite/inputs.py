"""Rewrite records from one run file per variant (TREC or ranx JSON) and qrels, read with the
retrieval readers (a bad line is an error naming the file and line)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError


def records_from_runs(
    qrels_path: str | Path,
    runs: Mapping[str, str | Path],
    *,
    query_nodes: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One record per judged query: ``retrieval.gold`` from the qrels, and per variant
    (``{"raw": path, "expansion": path, "multi_query_1": path, ...}``) its ranking in trec_eval
    order; a variant's run without the query gives an empty ranking (it retrieved nothing).
    ``query_nodes`` (``{qid: node}``) sets ``gold_node``. Latency needs records."""
    from kg_rageval.families.retrieval.trec import load_qrels, load_run

    if "raw" not in runs:
        raise InputError(f"rewrite runs: the raw query's run is required (given: {sorted(runs)})")
    qrels = load_qrels(qrels_path).to_dict()
    loaded = {v: load_run(p) for v, p in runs.items()}
    out = []
    for q, grades in qrels.items():
        rec: dict[str, Any] = {
            "id": q,
            "retrieval": {"gold": dict(grades)},
            "rewrite": {
                "variants": {
                    v: {"ranked": run.ranked(q) if q in run.qindex else []} for v, run in loaded.items()
                }
            },
        }
        if query_nodes and q in query_nodes:
            rec["gold_node"] = query_nodes[q]
        out.append(rec)
    return out
