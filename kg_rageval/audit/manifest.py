"""Reproducibility manifest of an audit, and ``--verify``.

The manifest records content hashes (ontology :attr:`Ontology.content_hash` and the release it
declares, :attr:`Ontology.version`; the baseline's release when a baseline is compared; sha256 of the
records, corpus, spec, judgments, baseline and config files), the tool, Python and dependency
versions, each family's versioned name (``Family.qualified_name``) and options, the seeds and
bootstrap settings, the judge/model configuration from the config, the check of a cited test-set manifest
(``testset``: :func:`kg_rageval.audit.testset_pin.check_testset_pin`), and a *metrics digest*:
sha256 over the canonical JSON of every metric and gate decision.

:func:`kg_rageval.audit.verify.verify_manifest` re-runs the audit from the config the manifest names and compares the
input hashes and the digest: identical numbers → ``ok``.
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kg_rageval.audit.gates import metric_dict

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.audit.config import AuditConfig
    from kg_rageval.audit.result import AuditResult

DEPENDENCIES = (
    "numpy",
    "scipy",
    "networkx",
    "rdflib",
    "pydantic",
    "jsonschema",
    "pyshacl",
    "click",
    "tqdm",
    "pyyaml",
)
MANIFEST_VERSION = 1


def file_hash(path: str | Path | None) -> str | None:
    """``sha256:<hex>`` of a file's bytes (:func:`kg_rageval.base.hashing.file_hash`, the
    hash a run manifest records), ``None`` for no file."""
    from kg_rageval.base.hashing import file_hash as _sha256_of_file

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


def numbers_of(result: AuditResult) -> dict[str, Any]:
    """The numbers that ``--verify`` compares: every metric (with CI) and every gate."""
    return {
        "metrics": {k: metric_dict(m) for k, m in sorted(result.metrics.items())},
        "gates": [r.to_dict() for r in result.gate_results],
    }


def build_manifest(config: AuditConfig, inputs: Mapping[str, Any], result: AuditResult) -> dict[str, Any]:
    from kg_rageval import __version__

    ont = inputs["ontology"]
    files = {
        "records": config.path(config.records),
        "corpus": config.path(config.corpus),
        "spec": config.path(config.spec),
        "judgments": config.path(config.judgments),
        **{
            k: config.path(v)
            for k, v in (("qrels", config.qrels), ("run", config.run), ("shapes", config.shapes))
            if v is not None
        },  # the file families
        "baseline": config.path(config.baseline.records) if config.baseline else None,
        "testset_manifest": config.path(config.testset_manifest) if config.testset_manifest else None,
    }
    return redact_settings(
        {
            "manifest_version": MANIFEST_VERSION,
            "tool": {"name": "kg-rageval", "version": __version__},
            "python": platform.python_version(),
            "platform": platform.platform(terse=True),
            "dependencies": {d: _version(d) for d in DEPENDENCIES},
            "config": {
                "path": str(Path(config.source).resolve()) if config.source != "<memory>" else None,
                "hash": config.content_hash,
            },
            "inputs": {
                "ontology": _ontology_input(config, ont),
                "baseline_ontology": ((result.baseline or {}).get("release") or {}).get("baseline_ontology"),
                **{
                    k: ({"path": str(p), "hash": file_hash(p)} if p is not None and p.exists() else None)
                    for k, p in files.items()
                },
            },
            "families": {
                name: {
                    "status": run.status,
                    "versions": run.versions,
                    "options": _jsonable(run.options),
                    **_judge_usage(run),
                }
                for name, run in result.families.items()
            },
            "seeds": {"seed": config.seed, "bootstrap_seed": config.bootstrap.seed},
            "bootstrap": config.bootstrap.model_dump(),
            "judge": redact_settings(_jsonable(config.judge)),
            **({"testset": dict(result.testset)} if result.testset is not None else {}),
            "metrics_digest": metrics_digest(numbers_of(result)),
        }
    )


def _ontology_input(config: AuditConfig, ont: Any) -> dict[str, Any]:
    """The ontology's path (credentials redacted), content hash, node count and, for a file,
    its sha256 (covers what the content hash does not: definitions, synonyms of a cache)."""
    from kg_rageval.base.redact import redact

    raw = config.ontology.path
    p = config.path(raw)
    entry: dict[str, Any] = {
        "path": redact(str(p) if "://" not in raw else raw),
        "content_hash": ont.content_hash,
        "version": getattr(ont, "version", None),
        "nodes": ont.n_nodes,
        "options": _jsonable(config.ontology.options),
    }
    if "://" not in raw and p is not None and p.is_file():
        entry["file_hash"] = file_hash(p)
    return entry


def redact_settings(x: Any) -> Any:
    from kg_rageval.base.redact import redact_settings as _r

    return _r(x)


def _judge_usage(run: Any) -> dict[str, Any]:
    """``{"judge_usage": ...}`` (client settings with the key redacted, tokens, cost) when the
    family called a live judge, else nothing."""
    for ev in run.evaluations:
        if "judge_usage" in ev.meta:
            return {"judge_usage": _jsonable(ev.meta["judge_usage"])}
    return {}


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x, default=str))
