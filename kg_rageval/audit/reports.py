"""Write every configured report of an audit into one directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from .manifest import numbers_of

if TYPE_CHECKING:  # pragma: no cover
    from .runner import AuditResult

FILES = {"json": "report.json", "markdown": "report.md", "html": "report.html", "junit": "junit.xml"}


def prov_trail_turtle(result: "AuditResult") -> str | None:
    """The PROV-O trail (Turtle) the provenance family built for the audited run, if any."""
    run = result.families.get("provenance")
    for ev in run.evaluations if run is not None else []:
        if ev.family.name == "prov_trail" and isinstance(ev.meta.get("turtle"), str):
            return ev.meta["turtle"]
    return None


def write_reports(result: "AuditResult", out_dir: str | Path, formats: list[str] | None = None) -> dict[str, str]:
    """Write ``report.json``, ``report.md``, ``report.html``, ``junit.xml`` (as configured) and
    always ``manifest.json`` (manifest + the numbers ``--verify`` compares), and ``prov.ttl``
    (the PROV-O trail) when the provenance family built one. Returns
    ``{kind: path}``."""
    from .report_html import write_html
    from .report_json import dumps, write_json
    from .report_junit import write_junit
    from .report_markdown import write_markdown

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    formats = formats or result.config.report.formats
    written: dict[str, str] = {}
    writers = {"json": write_json, "markdown": write_markdown, "html": write_html, "junit": write_junit}
    for f in formats:
        p = out / FILES[f]
        writers[f](result, p)
        written[f] = str(p)
    trail = prov_trail_turtle(result)
    if trail is not None:
        tp = out / "prov.ttl"
        tp.write_text(trail, encoding="utf-8")
        written["prov"] = str(tp)
    mp = out / "manifest.json"
    mp.write_text(dumps({"manifest": result.manifest, "numbers": numbers_of(result)}) + "\n", encoding="utf-8")
    written["manifest"] = str(mp)
    json.loads(mp.read_text(encoding="utf-8"))
    return written
