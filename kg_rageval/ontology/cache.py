"""The compiled cache (``.kgro``): every array of an :class:`Ontology` plus its strings.

The file is a NumPy ``.npz`` archive (no pickles: ``allow_pickle=False``) holding the CSR
arrays, the depths and status, the strings as NUL-separated UTF-8 blobs, and a JSON header
with the format version, prefixes, properties, diagnostics and the content hash. Aliases,
when there are any, are two more arrays (``alias_ids`` blob, ``alias_targets``); files without
them (written before aliases existed) load unchanged, so the format version stays 1. Reloading a
350,000-concept ontology takes a fraction of a second (``docs/performance.md``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import InputError
from .model import Ontology, Property

FORMAT = "kg-rageval-ontology"
VERSION = 1
_ARRAYS = ("parent_ptr", "parent_idx", "anc_ptr", "anc_idx", "depth_min", "depth_max", "status", "replaced_by")


def _blob(values) -> np.ndarray:
    return np.frombuffer("\x00".join(v or "" for v in values).encode("utf-8"), dtype=np.uint8)


def _unblob(arr: np.ndarray, n: int) -> list[str]:
    if n == 0:
        return []
    return arr.tobytes().decode("utf-8").split("\x00")


def save_compiled(ontology: Ontology, path: str | Path) -> Path:
    """Write ``ontology`` to ``path`` (``.kgro`` is appended when missing)."""
    p = Path(path)
    if not p.name.endswith(".kgro"):
        p = p.with_name(p.name + ".kgro")
    header = {
        "format": FORMAT,
        "version": VERSION,
        "n": len(ontology),
        "virtual_root": ontology.virtual_root,
        "prefixes": ontology.prefixes,
        "properties": [
            {"id": q.id, "label": q.label, "domain": list(q.domain), "range": list(q.range)}
            for q in ontology.properties
        ],
        "source": ontology.source,
        "diagnostics": ontology.diagnostics,
        "warnings": list(ontology.warnings),
        "content_hash": ontology.content_hash,
    }
    if ontology.placed_under_root:  # absent from older files: they load with ()
        header["placed_under_root"] = list(ontology.placed_under_root)
    syn_counts = np.asarray([len(s) for s in ontology.synonyms], dtype=np.int32)
    arrays = {name: getattr(ontology, name) for name in _ARRAYS}
    if ontology.alias_ids:
        arrays["alias_ids"] = _blob(ontology.alias_ids)
        arrays["alias_targets"] = np.asarray(ontology.alias_targets, dtype=np.int32)
    with open(p, "wb") as fh:
        np.savez(
            fh,
            header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
            ids=_blob(ontology.ids),
            labels=_blob(ontology.labels),
            label_mask=np.asarray([lab is not None for lab in ontology.labels]),
            definitions=_blob(ontology.definitions),
            definition_mask=np.asarray([d is not None for d in ontology.definitions]),
            node_types=_blob(ontology.node_types),
            type_mask=np.asarray([t is not None for t in ontology.node_types]),
            synonyms=_blob([s for syns in ontology.synonyms for s in syns]),
            synonym_counts=syn_counts,
            **arrays,
        )
    return p


STRICT_KINDS = ("alias_conflicts", "ambiguous_aliases", "multiple_replacements")
"""Diagnostics that ``strict=True`` refuses (see :meth:`OntologyBuilder.build`)."""


def load_compiled(path: str | Path, *, strict: bool = False) -> Ontology:
    """Reload an ontology written by :func:`save_compiled`. The loader options were applied
    when it was compiled; ``strict=True`` still refuses a cache whose source had upstream data
    errors (its counted :data:`STRICT_KINDS` diagnostics), as loading the source would."""
    onto = _load_compiled(path)
    found = {k: onto.diagnostics[k] for k in STRICT_KINDS if onto.diagnostics.get(k)}
    if strict and found:
        from ..errors import OntologyError

        raise OntologyError(
            "compiled from a source with upstream data errors ("
            + ", ".join(f"{k}: {v}" for k, v in found.items())
            + "), refused in strict mode; see `kg-rageval ontology inspect` for the ids",
            source=str(path),
        )
    return onto


def _load_compiled(path: str | Path) -> Ontology:
    p = Path(path)
    try:
        z = np.load(p, allow_pickle=False)
        header = json.loads(z["header"].tobytes().decode())
    except Exception as exc:  # zipfile/ValueError/KeyError: not our file
        raise InputError(f"not a kg-rageval compiled ontology: {exc}", source=str(p)) from None
    if header.get("format") != FORMAT:
        raise InputError("not a kg-rageval compiled ontology", source=str(p))
    if header.get("version") != VERSION:
        raise InputError(
            f"compiled with cache version {header.get('version')}, this kg-rageval reads "
            f"version {VERSION}; recompile it with `kg-rageval ontology compile`",
            source=str(p),
        )
    n = header["n"]

    def masked(name: str, mask: str) -> tuple:
        vals = _unblob(z[name], n)
        m = z[mask]
        if m.all():
            return tuple(vals)
        if not m.any():
            return (None,) * n
        return tuple([v if ok else None for v, ok in zip(vals, m.tolist())])

    counts = z["synonym_counts"]
    total = int(counts.sum())
    if total == 0:
        syns: tuple[tuple[str, ...], ...] = ((),) * n
    else:
        flat = _unblob(z["synonyms"], total)
        ends = np.cumsum(counts).tolist()
        starts = [0] + ends[:-1]
        syns = tuple([tuple(flat[a:b]) if a != b else () for a, b in zip(starts, ends)])
    aliases: dict = {}
    if "alias_targets" in z.files:
        targets = z["alias_targets"].astype(np.int32)
        alias_ids = tuple(_unblob(z["alias_ids"], targets.size))
        if len(alias_ids) != targets.size or (targets.size and (targets.min() < 0 or targets.max() >= n)):
            raise InputError("corrupt alias arrays in the compiled ontology; recompile it", source=str(p))
        aliases = {"alias_ids": alias_ids, "alias_targets": targets}
    return Ontology(
        ids=tuple(_unblob(z["ids"], n)),
        labels=masked("labels", "label_mask"),
        definitions=masked("definitions", "definition_mask"),
        node_types=masked("node_types", "type_mask"),
        synonyms=syns,
        virtual_root=header["virtual_root"],
        prefixes=header["prefixes"],
        properties=tuple(
            Property(q["id"], q["label"], tuple(q["domain"]), tuple(q["range"])) for q in header["properties"]
        ),
        source=header["source"],
        diagnostics=header["diagnostics"],
        warnings=tuple(header["warnings"]),
        stored_hash=header["content_hash"],
        placed_under_root=tuple(header.get("placed_under_root", ())),
        **{name: z[name] for name in _ARRAYS},
        **aliases,
    )
