"""JUnit XML for CI systems: one ``<testcase>`` per gate; a failed gate is a ``<failure>``, a
gate with missing evidence is a ``<failure type="missing-evidence">`` (it fails the build too)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET

from kg_rageval.audit.escape import xml_text

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.audit.result import AuditResult


def junit_xml(result: AuditResult) -> str:
    counts = result.status_counts()
    suite = ET.Element(
        "testsuite",
        {
            "name": xml_text(f"kg-rageval audit: {result.config.name}"),
            "tests": str(len(result.gate_results)),
            "failures": str(counts["fail"] + counts["missing"]),
            "errors": "0",
            "skipped": "0",
            "time": f"{result.seconds:.3f}",
        },
    )
    for r in result.gate_results:
        family = r.gate.metric.split(".", 1)[0] if "." in r.gate.metric else "gates"
        case = ET.SubElement(
            suite,
            "testcase",
            {"classname": xml_text(f"audit.{family}"), "name": xml_text(r.gate), "time": "0"},
        )
        if r.status == "fail":
            f = ET.SubElement(case, "failure", {"type": "gate-failed", "message": xml_text(r.reason)})
            f.text = f"{xml_text(r.gate)}: observed {r.observed}\n{xml_text(r.reason)}"
        elif r.status == "missing":
            f = ET.SubElement(case, "failure", {"type": "missing-evidence", "message": xml_text(r.reason)})
            f.text = f"{xml_text(r.gate)}: {xml_text(r.reason)}"
        else:
            out = ET.SubElement(case, "system-out")
            out.text = xml_text(r.reason)
    root = ET.Element("testsuites", {"name": "kg-rageval"})
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(result: AuditResult, path: str | Path) -> None:
    Path(path).write_text(junit_xml(result), encoding="utf-8")
