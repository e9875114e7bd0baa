"""Helpers shared by tests (moved out of ``test_audit_stream.py`` so that tests in other folders can import them;
``tests/`` is on ``sys.path``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from report_helpers import without_timings  # tests/ is on sys.path

from kg_rageval.audit.reports import write_reports
from kg_rageval.audit.runner import run_audit

ROOT = Path(__file__).resolve().parents[1]

STREAMABLE = ("hierarchy", "linking", "retrieval")


def _audit(config, size, out: Path | None = None):
    config.chunk_size = size
    res = run_audit(config, progress=False)
    if out is not None:
        write_reports(res, out)
    return res


def _report(out: Path) -> dict:
    return without_timings(json.loads((out / "report.json").read_text()))


def _files(out: Path) -> dict[str, bytes]:
    """The reports but report.json (compared scrubbed), the manifest (hashes of the reports and
    a timestamp) and the two that print the run's seconds."""
    return {
        p.name: p.read_bytes()
        for p in sorted(out.iterdir())
        if p.is_file() and p.name not in ("report.json", "manifest.json", "junit.xml", "report.html")
    }


def _write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _vehicle_records(n: int, labels_from: int = 0) -> list[dict]:
    kinds = ["sedan", "hatchback", "boat", "submarine", "car"]
    out = []
    for i in range(n):
        rec: dict = {"id": f"r{i:03d}", "query": f"q {i}", "slices": {"intent": "a" if i % 2 else "b"}}
        if i >= labels_from:
            rec["labels"] = {"gold": [kinds[i % 5]], "pred": [kinds[(i * 7) % 5]]}
        out.append(rec)
    return out


def _vehicles_config(dirpath: Path, **extra):
    shutil.copy(ROOT / "fixtures" / "audit" / "vehicles.csv", dirpath / "vehicles.csv")
    mapping = {
        "name": "v",
        "ontology": "vehicles.csv",
        "records": "records.jsonl",
        "families": {"hierarchy": {}, "relations": {}},
        "gates": ["hierarchy.hierarchical_f1 >= 0.9", "hierarchy.hierarchical_f1[slice:intent=a] >= 0.5"],
        "bootstrap": {"n_resamples": 50, "seed": 1},
        **extra,
    }
    return mapping
