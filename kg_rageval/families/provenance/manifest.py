"""The run manifest: what a reviewer needs to rerun an answer on the same snapshot.

A manifest is a JSON object (one file per run)::

    {"run_id": "run-2026-11-30-a",
     "model": {"name": "gpt-x", "version": "2026-10-01"},
     "runtime": "vllm 0.9.1",
     "decoding": {"temperature": 0.0, "top_p": 1.0, "max_tokens": 512},
     "seed": 1234,
     "corpus_hash": "sha256:…",       # kg_rageval.base.hashing.file_hash of the corpus file
     "ontology_hash": "sha256:…",     # Ontology.content_hash
     "started_at": "2026-11-30T01:00:00Z"}

:func:`check_manifest` checks that the pinned fields are recorded — ``model.version`` (and
``model.name``), a non-empty ``decoding`` object, an integer ``seed``, ``corpus_hash`` and
``ontology_hash`` — and, when the snapshot is known, that the recorded hashes equal the corpus
and ontology being audited. ``runtime`` and ``started_at`` are optional (reported, not
required). Temperature 0 alone does not guarantee determinism: the manifest pins what can be
pinned; the repeat comparison measures what actually happened.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError

REQUIRED = ("model.name", "model.version", "decoding", "seed", "corpus_hash", "ontology_hash")
OPTIONAL = ("run_id", "runtime", "started_at")


def read_manifest(path: str | Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            obj = json.load(fh)
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} (line {exc.lineno})", source=str(path)) from None
    if not isinstance(obj, dict):
        raise InputError(
            f"a run manifest must be a JSON object, found {type(obj).__name__}", source=str(path)
        )
    obj.setdefault("_source", str(path))
    return obj


def _get(manifest: dict[str, Any], dotted: str) -> Any:
    cur: Any = manifest
    for part in dotted.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _recorded(field: str, value: Any) -> bool:
    if field == "seed":
        return isinstance(value, int) and not isinstance(value, bool)
    if field == "decoding":
        return isinstance(value, dict) and bool(value)
    return isinstance(value, str) and bool(value.strip())


def check_manifest(
    manifest: dict[str, Any], *, corpus_hash: str | None = None, ontology_hash: str | None = None
) -> dict[str, Any]:
    """``{"complete": bool, "missing": [...], "mismatched": [...], "fields": {...}}``.

    ``complete`` is true when every required field is recorded and no recorded hash differs
    from the snapshot hashes given."""
    missing = [f for f in REQUIRED if not _recorded(f, _get(manifest, f))]
    mismatched = []
    for f, expected in (("corpus_hash", corpus_hash), ("ontology_hash", ontology_hash)):
        got = _get(manifest, f)
        if expected is not None and _recorded(f, got) and got != expected:
            mismatched.append({"field": f, "recorded": got, "snapshot": expected})
    fields = {f: _get(manifest, f) for f in REQUIRED + OPTIONAL}
    return {
        "source": manifest.get("_source"),
        "complete": not missing and not mismatched,
        "missing": missing,
        "mismatched": mismatched,
        "fields": fields,
    }


def compare_manifests(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    """Do repeated runs pin the same configuration? ``{"same_configuration": bool,
    "differing": [field, ...]}`` over the required fields (``None`` with fewer than 2 runs)."""
    if len(manifests) < 2:
        return {"same_configuration": None, "differing": []}
    differing = [f for f in REQUIRED if len({json.dumps(_get(m, f), sort_keys=True) for m in manifests}) > 1]
    return {"same_configuration": not differing, "differing": differing}
