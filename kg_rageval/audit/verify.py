"""Verify a report's manifest: re-run the audit from the config it names and compare.

Kept apart from :mod:`.manifest` (which the runner uses to *build* manifests) so that the
runner and the manifest do not import each other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .manifest import numbers_of


def verify_manifest(manifest_path: str | Path, *, config_path: str | Path | None = None,
                    progress: bool = False) -> dict[str, Any]:
    """Re-run the audit a manifest describes and compare.

    Returns ``{"ok": bool, "differences": [...], "digest": {"manifest": ..., "rerun": ...}}``;
    a difference is a changed input hash, a changed family version or a changed number."""
    from ..errors import InputError
    from .config import load_config
    from .runner import run_audit

    mpath = Path(manifest_path)
    if not mpath.exists():
        raise InputError("no such manifest", source=str(mpath))
    try:
        doc = json.loads(mpath.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"manifest is not JSON: {exc}", source=str(mpath)) from None
    man = doc.get("manifest", doc)
    cpath = config_path or (man.get("config") or {}).get("path")
    if not cpath:
        raise InputError("manifest names no config file; pass --config", source=str(mpath))
    config = load_config(cpath)
    result = run_audit(config, progress=progress)
    new = result.manifest
    diffs: list[str] = []
    if (man.get("config") or {}).get("hash") != new["config"]["hash"]:
        diffs.append("config file content changed")
    for k, v in (man.get("inputs") or {}).items():
        nv = new["inputs"].get(k)
        old_h = (v or {}).get("content_hash") or (v or {}).get("hash") if v else None
        new_h = (nv or {}).get("content_hash") or (nv or {}).get("hash") if nv else None
        if old_h != new_h:
            diffs.append(f"input {k} changed: {old_h} -> {new_h}")
    for fam, info in (man.get("families") or {}).items():
        ninfo = new["families"].get(fam) or {}
        if info.get("versions") != ninfo.get("versions"):
            diffs.append(f"family {fam} version changed: {info.get('versions')} -> {ninfo.get('versions')}")
    if man.get("metrics_digest") != new["metrics_digest"]:
        diffs.append("metric values or gate decisions differ")
        old_numbers = doc.get("numbers")
        if isinstance(old_numbers, dict):
            now = numbers_of(result)
            for k, m in now["metrics"].items():
                if old_numbers.get("metrics", {}).get(k) != m:
                    diffs.append(f"  {k}: {old_numbers.get('metrics', {}).get(k)} -> {m}")
                    if len(diffs) > 40:
                        break
    return {"ok": not diffs, "differences": diffs,
            "digest": {"manifest": man.get("metrics_digest"), "rerun": new["metrics_digest"]},
            "exit_code": result.exit_code}
