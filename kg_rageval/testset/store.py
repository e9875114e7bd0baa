"""Writing a built test set and reading sets back (``kg-rageval testset build|split|check``).

``write_build(result, out)`` writes into ``out``:

* ``records.jsonl`` — the cases (record format, sorted keys: byte-stable for a seed);
* ``ontology-heldout.kgro`` — the ontology without the NIL probes' concepts (compiled);
* ``heldout.json`` — the held-out concepts, their nearest kept concept and their documents
  (drop those from the index the system under test searches);
* ``testset-manifest.json`` — the hashed manifest (:func:`~kg_rageval.testset.check.testset_manifest`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.records import read_records, write_records
from kg_rageval.testset.config import SETS

MANIFEST_NAME = "testset-manifest.json"
BUILD_FILES = ("records.jsonl", "ontology-heldout.kgro", "heldout.json", MANIFEST_NAME)
"""The files :func:`write_build` writes into its folder."""


def write_json(path: Path, payload: Any) -> None:
    """Atomic JSON write (a temporary file renamed into place)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_build(
    result: Any,
    out: str | Path,
    *,
    ontology: Any,
    corpus_path: str | Path | None,
    n_documents: int | None,
    policy: Mapping[str, Any],
) -> dict[str, Any]:
    from kg_rageval.ontology.cache import save_compiled
    from kg_rageval.testset.check import testset_manifest

    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    rec_path = d / "records.jsonl"
    write_records(rec_path, result.records, sort_keys=True)
    save_compiled(result.heldout_ontology, d / "ontology-heldout.kgro")
    held = [
        {
            "id": cid,
            "label": ontology.label(cid),
            "nearest": result.nearest[cid],
            "documents": next(
                (
                    r["testset"]["held_out_documents"]
                    for r in result.records
                    if r["testset"].get("held_out") == cid
                ),
                [],
            ),
        }
        for cid in result.held_out
    ]
    write_json(
        d / "heldout.json",
        {
            "held_out": held,
            "heldout_ontology": "ontology-heldout.kgro",
            "content_hash": result.heldout_ontology.content_hash,
        },
    )
    manifest = testset_manifest(
        {"all": (rec_path, result.records)},
        ontology=ontology,
        corpus=corpus_path,
        n_documents=n_documents,
        policy=policy,
        paraphrase=result.paraphrase,
        heldout={
            "file": "ontology-heldout.kgro",
            "content_hash": result.heldout_ontology.content_hash,
            "held_out": len(result.held_out),
        },
    )
    write_json(d / MANIFEST_NAME, manifest)
    return manifest


def read_sets(paths: Sequence[str | Path]) -> dict[str, tuple[Path, list[dict[str, Any]]]]:
    """Sets to check: a directory holding ``<set>.jsonl`` files (the output of ``testset split``),
    or record files (each named by its stem)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = [p / f"{s}.jsonl" for s in SETS if (p / f"{s}.jsonl").exists()]
            if not found:
                raise InputError(
                    f"no {', '.join(s + '.jsonl' for s in SETS)} in the directory", source=str(p)
                )
            files.extend(found)
        else:
            files.append(p)
    out: dict[str, tuple[Path, list[dict[str, Any]]]] = {}
    for f in files:
        name = f.name.removesuffix(".gz").removesuffix(".jsonl")
        if name in out:
            raise InputError(f"two sets named {name!r}", source=str(f))
        out[name] = (f, read_records(f))
    if len(out) < 2:
        raise InputError("leakage is checked between sets: give at least two sets (or a split directory)")
    return out


def source_map(corpus_path: str | Path | None) -> dict[str, str] | None:
    """``document id -> source_id`` of a corpus file (``None`` without one)."""
    if corpus_path is None:
        return None
    from kg_rageval.records import iter_objects

    out: dict[str, str] = {}
    for _line, rid, obj in iter_objects(corpus_path):
        src = obj.get("source_id")
        out[rid] = str(src) if src not in (None, "") else rid
    return out
