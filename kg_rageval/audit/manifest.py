"""Reproducibility manifest of an audit, and ``--verify``.

The manifest records content hashes (ontology :attr:`Ontology.content_hash`, sha256 of the
records, corpus, spec, judgments, baseline and config files), the tool, Python and dependency
versions, each family's versioned name (``Family.qualified_name``) and options, the seeds and
bootstrap settings, the judge/model configuration from the config, and a *metrics digest*:
sha256 over the canonical JSON of every metric and gate decision.

:func:`verify_manifest` re-runs the audit from the config the manifest names and compares the
input hashes and the digest: identical numbers → ``ok``.
"""

from __future__ import annotations

import hashlib
import json
import platform
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from .gates import metric_dict

if TYPE_CHECKING:  # pragma: no cover
    from .config import AuditConfig
    from .runner import AuditResult

DEPENDENCIES = ("numpy", "scipy", "networkx", "rdflib", "pydantic", "jsonschema", "pyshacl", "click",
                "tqdm", "pyyaml")
MANIFEST_VERSION = 1


def file_hash(path: str | Path | None) -> str | None:
    """``sha256:<hex>`` of a file's bytes (:func:`kg_rageval.provenance.corpus.file_hash`, the
    hash a run manifest records), ``None`` for no file."""
    from ..provenance.corpus import file_hash as _sha256_of_file

    return None if path is None else _sha256_of_file(path)


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def metrics_digest(payload: Mapping[str, Any]) -> str:
    """sha256 over the canonical JSON (sorted keys) of the metrics and gate decisions."""
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=True, allow_nan=False).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def numbers_of(result: "AuditResult") -> dict[str, Any]:
    """The numbers that ``--verify`` compares: every metric (with CI) and every gate."""
    return {
        "metrics": {k: metric_dict(m) for k, m in sorted(result.metrics.items())},
        "gates": [r.to_dict() for r in result.gate_results],
    }


def build_manifest(config: "AuditConfig", inputs: Mapping[str, Any], result: "AuditResult") -> dict[str, Any]:
    from .. import __version__

    ont = inputs["ontology"]
    files = {
        "records": config.path(config.records),
        "corpus": config.path(config.corpus),
        "spec": config.path(config.spec),
        "judgments": config.path(config.judgments),
        "baseline": config.path(config.baseline.records) if config.baseline else None,
    }
    return {
        "manifest_version": MANIFEST_VERSION,
        "tool": {"name": "kg-rageval", "version": __version__},
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "dependencies": {d: _version(d) for d in DEPENDENCIES},
        "config": {"path": str(Path(config.source).resolve()) if config.source != "<memory>" else None,
                   "hash": config.content_hash},
        "inputs": {
            "ontology": {"path": config.ontology.path if "://" in config.ontology.path
                         else str(config.path(config.ontology.path)), "content_hash": ont.content_hash,
                         "nodes": len(ont), "options": _jsonable(config.ontology.options)},
            **{k: ({"path": str(p), "hash": file_hash(p)} if p is not None and p.exists() else None)
               for k, p in files.items()},
        },
        "families": {
            name: {"status": run.status, "versions": run.versions, "options": _jsonable(run.options),
                   **_judge_usage(run)}
            for name, run in result.families.items()
        },
        "seeds": {"seed": config.seed, "bootstrap_seed": config.bootstrap.seed},
        "bootstrap": config.bootstrap.model_dump(),
        "judge": _jsonable(config.judge),
        "metrics_digest": metrics_digest(numbers_of(result)),
    }


def _judge_usage(run: Any) -> dict[str, Any]:
    """``{"judge_usage": ...}`` (client settings with the key redacted, tokens, cost) when the
    family called a live judge, else nothing."""
    for ev in run.evaluations:
        if "judge_usage" in ev.meta:
            return {"judge_usage": _jsonable(ev.meta["judge_usage"])}
    return {}


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x, default=str))


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
