"""Verify a report's manifest: re-run the audit from the config it names and compare.

Kept apart from :mod:`.manifest` (which the runner uses to *build* manifests) so that the
runner and the manifest do not import each other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kg_rageval.audit.manifest import metrics_digest, numbers_of
from kg_rageval.base.safe_io import read_document


def _load_manifest(mpath: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(document, manifest)`` of a manifest file; anything malformed is an InputError (exit 2)."""
    from kg_rageval.base.errors import InputError

    if not mpath.is_file():
        raise InputError(
            "no such manifest (an audit that did not finish writing its reports leaves none)",
            source=str(mpath),
        )
    try:
        doc = json.loads(read_document(mpath, found="the manifest").decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"manifest is not JSON: {exc}", source=str(mpath)) from None
    except RecursionError:
        raise InputError("manifest is nested too deeply", source=str(mpath)) from None
    if not isinstance(doc, dict):
        raise InputError(f"manifest must be a JSON object, found {type(doc).__name__}", source=str(mpath))
    man = doc.get("manifest", doc)
    problems = []
    if not isinstance(man, dict):
        problems.append("'manifest' is not an object")
    else:
        if not isinstance(man.get("metrics_digest"), str):
            problems.append("'metrics_digest' is missing or not a string")
        for key in ("inputs", "config", "families"):
            if not isinstance(man.get(key), dict):
                problems.append(f"{key!r} is missing or not an object")
    for key in ("numbers", "reports"):
        if key in doc and not isinstance(doc[key], dict):
            problems.append(f"{key!r} is not an object")
    if problems:
        raise InputError("malformed manifest: " + "; ".join(problems), source=str(mpath))
    return doc, man


def verify_manifest(
    manifest_path: str | Path, *, config_path: str | Path | None = None, progress: bool = False
) -> dict[str, Any]:
    """Re-run the audit a manifest describes and compare.

    Returns ``{"ok": bool, "differences": [...], "digest": {...}, "exit_code": int,
    "passed": bool}``. A difference is: a report file beside the manifest whose sha256 is not
    the one recorded (or that is missing, or a manifest that vouches for no report file), a
    ``numbers`` block that does not match the manifest's own digest, a ``report.json`` whose
    verdict or gates differ from the re-run, an input the re-run reads that the manifest does
    not record, a changed input hash, a cited test-set manifest that does not verify now or
    whose hashes differ from those the report recorded (:func:`~.testset_pin.pin_differences`),
    a changed family version, a changed number or gate
    decision (each listed). ``ok`` needs no difference; the CLI also exits 1 when the verified
    audit failed its gates."""
    from kg_rageval.audit.config import load_config
    from kg_rageval.audit.reports import sha256_file
    from kg_rageval.audit.runner import run_audit
    from kg_rageval.base.errors import InputError

    mpath = Path(manifest_path)
    doc, man = _load_manifest(mpath)
    diffs: list[str] = []
    reports = doc.get("reports")
    if not reports:
        diffs.append("the manifest vouches for no report file (no 'reports' hashes)")
    for name, h in sorted((reports or {}).items()):
        p = mpath.parent / str(name)
        if Path(str(name)).name != str(name):
            diffs.append(f"report entry {name!r} is not a file name")
        elif not p.is_file():
            diffs.append(f"report file {name} is missing")
        elif sha256_file(p) != h:
            diffs.append(f"report file {name} was changed after the audit wrote it (sha256 differs)")
    numbers = doc.get("numbers")
    if isinstance(numbers, dict):
        try:
            own = metrics_digest(numbers)
        except (TypeError, ValueError):
            own = None
        if own != man.get("metrics_digest"):
            diffs.append("the manifest's 'numbers' do not match its metrics_digest (edited)")
    cpath = config_path or (man.get("config") or {}).get("path")
    if not cpath:
        raise InputError("manifest names no config file; pass --config", source=str(mpath))
    config = load_config(cpath)
    result = run_audit(config, progress=progress)
    new = result.manifest
    now = numbers_of(result)
    if (man.get("config") or {}).get("hash") != new["config"]["hash"]:
        diffs.append("config file content changed")
    old_inputs = man.get("inputs") or {}
    for k, nv in new["inputs"].items():
        v = old_inputs.get(k)
        if nv is not None and not v:
            diffs.append(f"input {k} is read by the audit but not recorded in the manifest")
            continue
        old_h = _input_hash(v)
        new_h = _input_hash(nv)
        if old_h != new_h:
            diffs.append(f"input {k} changed: {old_h} -> {new_h}")
        if (
            isinstance(v, dict)
            and isinstance(nv, dict)
            and "file_hash" in nv
            and v.get("file_hash") != nv["file_hash"]
        ):
            diffs.append(f"input {k} file changed: {v.get('file_hash')} -> {nv['file_hash']}")
    for k in old_inputs:
        if k not in new["inputs"]:
            diffs.append(f"input {k} is in the manifest but not read by the audit")
    from kg_rageval.audit.testset_pin import pin_differences

    diffs.extend(pin_differences(man.get("testset"), result.testset))
    for fam, info in (man.get("families") or {}).items():
        ninfo = new["families"].get(fam) or {}
        if not isinstance(info, dict) or info.get("versions") != ninfo.get("versions"):
            old_v = info.get("versions") if isinstance(info, dict) else info
            diffs.append(f"family {fam} version changed: {old_v} -> {ninfo.get('versions')}")
    if man.get("metrics_digest") != new["metrics_digest"]:
        diffs.append("metric values or gate decisions differ")
        if isinstance(numbers, dict):
            diffs.extend(_number_diffs(numbers, now))
    report_json = mpath.parent / "report.json"
    if "report.json" in (reports or {}) and report_json.is_file():
        try:
            rj = json.loads(read_document(report_json, found="report.json").decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            rj = None
        if not isinstance(rj, dict) or rj.get("passed") != result.passed or rj.get("gates") != now["gates"]:
            diffs.append("report.json's verdict or gates differ from the re-run")
    return {
        "ok": not diffs,
        "differences": diffs,
        "digest": {"manifest": man.get("metrics_digest"), "rerun": new["metrics_digest"]},
        "exit_code": result.exit_code,
        "passed": result.passed,
    }


def _input_hash(v: Any) -> Any:
    if not isinstance(v, dict):
        return None
    return v.get("content_hash") or v.get("hash")


def _number_diffs(old: Mapping[str, Any], now: Mapping[str, Any], limit: int = 40) -> list[str]:
    """Each differing gate decision and metric, ``  key: old -> new``."""
    out: list[str] = []
    old_gates = {g.get("gate"): g for g in old.get("gates", []) if isinstance(g, dict)}
    for g in now["gates"]:
        o = old_gates.pop(g["gate"], None)
        if o is None:
            out.append(f"  gate {g['gate']}: (absent) -> {g['status']}")
        elif (o.get("status"), o.get("observed")) != (g["status"], g["observed"]):
            out.append(
                f"  gate {g['gate']}: {o.get('status')} {o.get('observed')} -> {g['status']} {g['observed']}"
            )
    for name, o in old_gates.items():
        out.append(f"  gate {name}: {o.get('status')} -> (absent)")
    old_metrics = old.get("metrics", {}) if isinstance(old.get("metrics"), dict) else {}
    for k, m in now["metrics"].items():
        if old_metrics.get(k) != m:
            out.append(f"  {k}: {old_metrics.get(k)} -> {m}")
        if len(out) >= limit:
            out.append("  ...")
            break
    return out
