"""The compiled cache (``.kgro``): every array of an :class:`Ontology` plus its strings.

The file is a NumPy ``.npz`` archive (no pickles: ``allow_pickle=False``) holding the CSR
arrays, the depths and status, the strings as NUL-separated UTF-8 blobs, and a JSON header
with the format version, prefixes, properties, diagnostics and the content hash. Aliases,
when there are any, are two more arrays (``alias_ids`` blob, ``alias_targets``); files without
them (written before aliases existed) load unchanged, so the format version stays 1. The same
holds for the knowledge graph (instances and triples): ``kg_*`` arrays, present only when the
ontology has instances or triples. Reloading a
350,000-concept ontology takes a fraction of a second (``docs/performance.md``).

Strings are stored with their byte lengths (``<name>_len``), so a NUL or any other character
in a label, definition or synonym survives the round trip unchanged (files without the
lengths, written before, are split at NUL as before).

**Verified on load.** A cache is evidence (its content hash goes into an audit manifest), so
:func:`load_compiled` refuses one that does not match itself: the arrays must be well-formed
(sizes, index ranges, level order), the content hash recomputed from the ids, labels, status,
replacements, edges and aliases must equal the stored one, and the ancestor closure and depths
recomputed from the parent arrays must equal the stored ones. A cache this machine wrote
carries a keyed digest (HMAC-SHA256 with the key of :func:`cache_key`) over its header and
arrays; when it verifies, the full recomputation is skipped (reload stays a fraction of a
second) — a modified cache no longer matches it, and without the key it cannot be forged. A
cache from elsewhere (another key, or none) is verified in full. A tampered cache (a FAIL
turned into a PASS under the genuine hash) and a malformed one are a one-line
:class:`~kg_rageval.base.errors.InputError` (exit 2), never a traceback. Definitions, synonyms and
types are not part of the content hash; the audit manifest also records the file's sha256.
The knowledge graph's arrays (``kg_*``) are covered by the keyed digest, checked for sizes and
index ranges on every load, and their content (instances, triples) is part of the content
hash, so a full verification recomputes it too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.base.machine_key import key_id, machine_key
from kg_rageval.ontology.graph import EMPTY_GRAPH, KnowledgeGraph
from kg_rageval.ontology.model import Ontology, Property

FORMAT = "kg-rageval-ontology"
VERSION = 1
_ARRAYS = (
    "parent_ptr",
    "parent_idx",
    "anc_ptr",
    "anc_idx",
    "depth_min",
    "depth_max",
    "status",
    "replaced_by",
)


def _blob(values) -> np.ndarray:
    return np.frombuffer("\x00".join(v or "" for v in values).encode("utf-8"), dtype=np.uint8)


def _lengths(values) -> np.ndarray:
    return np.asarray([len((v or "").encode("utf-8")) for v in values], dtype=np.int64)


def _unblob(arr: np.ndarray, n: int, lengths: np.ndarray | None = None) -> list[str]:
    if n == 0:
        return []
    raw = arr.tobytes()
    if lengths is None:  # files before lengths were stored: NUL-separated
        return raw.decode("utf-8").split("\x00")
    if lengths.shape != (n,) or (lengths < 0).any() or int(lengths.sum()) + n - 1 != len(raw):
        raise ValueError("string lengths do not match the string data")
    if raw.count(b"\x00") == n - 1:  # no string holds a NUL: the split is exact (and fast)
        return raw.decode("utf-8").split("\x00")
    ends = np.cumsum(lengths + 1) - 1
    starts = ends - lengths
    return [raw[a:b].decode("utf-8") for a, b in zip(starts.tolist(), ends.tolist())]


cache_key = machine_key
"""The secret key of this machine's caches (:func:`kg_rageval.base.machine_key.machine_key`):
``KG_RAGEVAL_CACHE_KEY``, else ``$XDG_CONFIG_HOME/kg-rageval/cache.key``; ``None`` when there
is none (caches are then verified in full on every load)."""
_key_id = key_id


def _mac(key: bytes, header: dict, arrays: dict) -> str:
    """HMAC-SHA256 over the header (without its ``mac``) and every array (name, dtype, shape,
    bytes), in name order."""
    h = hmac.new(key, digestmod=hashlib.sha256)
    head = {k: v for k, v in header.items() if k != "mac"}
    h.update(json.dumps(head, sort_keys=True).encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\x00{name}\x00{a.dtype.str}\x00{a.shape}\x00".encode())
        h.update(a.data.cast("B") if a.size else b"")
    return h.hexdigest()


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
        "properties": [q.as_dict() for q in ontology.properties],
        "source": ontology.source,
        "diagnostics": ontology.diagnostics,
        "warnings": list(ontology.warnings),
        "content_hash": ontology.content_hash,
        "release_version": ontology.version,
    }
    if ontology.placed_under_root:  # absent from older files: they load with ()
        header["placed_under_root"] = list(ontology.placed_under_root)
    syn_counts = np.asarray([len(s) for s in ontology.synonyms], dtype=np.int32)
    arrays = {name: getattr(ontology, name) for name in _ARRAYS}
    if ontology.alias_ids:
        arrays["alias_targets"] = np.asarray(ontology.alias_targets, dtype=np.int32)
    strings = {
        "ids": ontology.ids,
        "labels": ontology.labels,
        "definitions": ontology.definitions,
        "node_types": ontology.node_types,
        "synonyms": [s for syns in ontology.synonyms for s in syns],
    }
    if ontology.alias_ids:
        strings["alias_ids"] = ontology.alias_ids
    for name, values in strings.items():
        arrays[name] = _blob(values)
        arrays[f"{name}_len"] = _lengths(values)
    arrays["label_mask"] = np.asarray([lab is not None for lab in ontology.labels])
    arrays["definition_mask"] = np.asarray([d is not None for d in ontology.definitions])
    arrays["type_mask"] = np.asarray([t is not None for t in ontology.node_types])
    arrays["synonym_counts"] = syn_counts
    arrays.update(_graph_arrays(ontology))  # knowledge graph: only when there is one
    key = cache_key(create=True)
    if key is not None:
        header["mac_key"] = _key_id(key)
        header["mac"] = _mac(key, header, {k: np.asarray(v) for k, v in arrays.items()})
    tmp = p.with_name(p.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8), **arrays)
    tmp.replace(p)  # atomic: a crash never leaves half a cache under the final name
    return p


STRICT_KINDS = ("alias_conflicts", "ambiguous_aliases", "multiple_replacements")
"""Diagnostics that ``strict=True`` refuses (see :meth:`OntologyBuilder.build`)."""


def load_compiled(path: str | Path, *, strict: bool = False) -> Ontology:
    """Reload an ontology written by :func:`save_compiled`, verified (see the module
    docstring: a malformed or tampered file raises :class:`InputError`). The loader options
    were applied when it was compiled; ``strict=True`` still refuses a cache whose source had
    upstream data errors (its counted :data:`STRICT_KINDS` diagnostics), as loading the source
    would."""
    onto = _load_compiled(path)
    found = {k: onto.diagnostics[k] for k in STRICT_KINDS if onto.diagnostics.get(k)}
    if strict and found:
        from kg_rageval.base.errors import OntologyError

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
        raise InputError(
            f"not a kg-rageval compiled ontology ({type(exc).__name__})", source=str(p)
        ) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise InputError("not a kg-rageval compiled ontology", source=str(p))
    if header.get("version") != VERSION:
        raise InputError(
            f"compiled with cache version {header.get('version')}, this kg-rageval reads "
            f"version {VERSION}; recompile it with `kg-rageval ontology compile`",
            source=str(p),
        )
    try:
        onto, trusted = _read(z, header)
        if not trusted:
            _verify(onto, header)
    except InputError as exc:
        if getattr(exc, "limit", None):
            raise
        raise InputError(f"{exc}; recompile it with `kg-rageval ontology compile`", source=str(p)) from None
    except Exception as exc:  # KeyError, ValueError, IndexError, UnicodeDecodeError, zipfile errors
        raise InputError(
            f"corrupt compiled ontology ({type(exc).__name__}: {str(exc)[:120]}); recompile it "
            "with `kg-rageval ontology compile`",
            source=str(p),
        ) from None
    return onto


def _read(z, header: dict) -> tuple[Ontology, bool]:
    """The ontology and whether its keyed digest verified (then its stored hash is trusted)."""
    n = int(header["n"])
    files = set(z.files)
    trusted = False
    key = cache_key() if header.get("mac") else None
    if key is not None and header.get("mac_key") == _key_id(key):
        if not hmac.compare_digest(
            _mac(key, header, {k: z[k] for k in files if k != "header"}), str(header["mac"])
        ):
            raise InputError(
                "keyed digest mismatch: the arrays or header differ from what this machine's "
                "kg-rageval wrote (the cache was modified)"
            )
        trusted = True

    def strings(name: str, count: int) -> list[str]:
        return _strings(z, files, name, count)

    def masked(name: str, mask: str) -> tuple:
        return _masked(z, files, name, mask, n)

    counts = z["synonym_counts"]
    if counts.shape != (n,) or (counts < 0).any():
        raise ValueError("synonym_counts: wrong length or negative")
    total = int(counts.sum())
    if total == 0:
        syns: tuple[tuple[str, ...], ...] = ((),) * n
    else:
        flat = strings("synonyms", total)
        ends = np.cumsum(counts).tolist()
        starts = [0] + ends[:-1]
        syns = tuple([tuple(flat[a:b]) if a != b else () for a, b in zip(starts, ends)])
    aliases: dict = {}
    if "alias_targets" in files:
        targets = z["alias_targets"].astype(np.int32)
        alias_ids = tuple(strings("alias_ids", targets.size))
        if targets.size and (targets.min() < 0 or targets.max() >= n):
            raise InputError("corrupt alias arrays in the compiled ontology")
        aliases = {"alias_ids": alias_ids, "alias_targets": targets}
    arrays = {name: z[name] for name in _ARRAYS}
    _check_arrays(arrays, n)
    return Ontology(
        ids=tuple(strings("ids", n)),
        labels=masked("labels", "label_mask"),
        definitions=masked("definitions", "definition_mask"),
        node_types=masked("node_types", "type_mask"),
        synonyms=syns,
        virtual_root=bool(header["virtual_root"]),
        prefixes=dict(header["prefixes"]),
        properties=tuple(
            Property(q["id"], q["label"], tuple(q["domain"]), tuple(q["range"]), q.get("max_cardinality"))
            for q in header["properties"]
        ),
        source=str(header["source"]),
        diagnostics=dict(header["diagnostics"]),
        warnings=tuple(header["warnings"]),
        stored_hash=str(header["content_hash"]) if trusted and header.get("content_hash") else None,
        version=str(header["release_version"]) if header.get("release_version") is not None else None,
        placed_under_root=tuple(header.get("placed_under_root", ())),
        **arrays,
        **aliases,
        graph=_read_graph(z, n),
    ), trusted


# ---------------------------------------------------------------------- knowledge graph
_KG_ARRAYS = ("instance_status", "instance_replaced_by", "type_ptr", "type_idx", "s", "p", "o")


def _graph_arrays(ontology: Ontology) -> dict[str, np.ndarray]:
    """The ``kg_*`` arrays of the instances and triples (strings with their byte lengths); none
    for an ontology without them (files without them load with an empty graph, so the format
    version stays 1). They are covered by the keyed digest like every other array."""
    g = ontology.graph
    if not g:
        return {}
    out = {f"kg_{name}": np.asarray(getattr(g, name)) for name in _KG_ARRAYS}
    for name, values in (
        ("kg_instance_ids", g.instance_ids),
        ("kg_instance_labels", g.instance_labels),
        ("kg_instance_kinds", g.instance_kinds),
        ("kg_predicates", g.predicates),
    ):
        out[name] = _blob(values)
        out[f"{name}_len"] = _lengths(values)
    out["kg_label_mask"] = np.asarray([x is not None for x in g.instance_labels], dtype=bool)
    out["kg_kind_mask"] = np.asarray([x is not None for x in g.instance_kinds], dtype=bool)
    out["kg_sizes"] = np.asarray([len(g.instance_ids), len(g.predicates)], dtype=np.int64)
    return out


def _strings(z: Any, files: set[str], name: str, count: int) -> list[str]:
    """``count`` strings stored as blob ``name`` (with ``name_len`` lengths when present)."""
    vals = _unblob(z[name], count, z[f"{name}_len"] if f"{name}_len" in files else None)
    if len(vals) != count:
        raise ValueError(f"{name}: {len(vals)} strings for {count} entries")
    return vals


def _masked(z: Any, files: set[str], name: str, mask: str, count: int) -> tuple:
    """:func:`_strings` with ``None`` where the boolean array ``mask`` is false."""
    vals = _strings(z, files, name, count)
    m = z[mask]
    if m.shape != (count,):
        raise ValueError(f"{mask}: wrong length")
    if m.all():
        return tuple(vals)
    if not m.any():
        return (None,) * count
    return tuple([v if ok else None for v, ok in zip(vals, m.tolist())])


def _read_graph(z, n: int) -> KnowledgeGraph:
    """The knowledge graph of a cache, its arrays checked (sizes, index ranges, sorted unique
    triples) so that no lookup reads out of bounds; the content hash covers its content."""
    files = set(z.files)
    if "kg_sizes" not in files:
        return EMPTY_GRAPH
    m, n_pred = (int(x) for x in z["kg_sizes"])
    arrays = {name: z[f"kg_{name}"] for name in _KG_ARRAYS}
    for name, a in arrays.items():
        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise InputError(f"array kg_{name} is not a 1-d integer array")

    def strings(name: str, count: int) -> list[str]:
        return _strings(z, files, name, count)

    def masked(name: str, mask: str) -> tuple:
        return _masked(z, files, name, mask, m)

    s, q, o, tp, ti = arrays["s"], arrays["p"], arrays["o"], arrays["type_ptr"], arrays["type_idx"]
    e = n + m
    if (
        tp.size != m + 1
        or tp[0] != 0
        or (np.diff(tp) < 0).any()
        or tp[-1] != ti.size
        or arrays["instance_status"].size != m
        or arrays["instance_replaced_by"].size != m
        or not (s.size == q.size == o.size)
        or (
            s.size
            and (
                min(int(s.min()), int(o.min()), int(q.min())) < 0
                or max(int(s.max()), int(o.max())) >= e
                or int(q.max()) >= n_pred
            )
        )
        or (ti.size and (ti.min() < 0 or ti.max() >= n))
    ):
        raise InputError("corrupt knowledge-graph arrays in the compiled ontology")
    key = (s.astype(np.int64) * max(n_pred, 1) + q) * max(e, 1) + o
    if key.size > 1 and not (np.diff(key) > 0).all():
        raise InputError("knowledge-graph triples are not sorted and unique (the cache was modified)")
    return KnowledgeGraph(
        n_nodes=n,
        instance_ids=tuple(strings("kg_instance_ids", m)),
        instance_labels=masked("kg_instance_labels", "kg_label_mask"),
        instance_kinds=masked("kg_instance_kinds", "kg_kind_mask"),
        predicates=tuple(strings("kg_predicates", n_pred)),
        **arrays,
    )


def _check_arrays(a: dict[str, np.ndarray], n: int) -> None:
    """Shapes, dtypes and index ranges, so that no later lookup reads out of bounds."""
    for name in _ARRAYS:
        if a[name].ndim != 1 or a[name].dtype.kind not in "iu":
            raise InputError(f"array {name} is not a 1-d integer array")
    for ptr, idx in (("parent_ptr", "parent_idx"), ("anc_ptr", "anc_idx")):
        pp, ii = a[ptr], a[idx]
        if pp.size != n + 1 or pp[0] != 0 or (np.diff(pp) < 0).any() or pp[-1] != ii.size:
            raise InputError(f"array {ptr} is not a valid index pointer for {n} nodes")
        if ii.size and (ii.min() < 0 or ii.max() >= n):
            raise InputError(f"array {idx} points outside the {n} nodes")
    for name in ("depth_min", "depth_max", "status", "replaced_by"):
        if a[name].size != n:
            raise InputError(f"array {name} has {a[name].size} entries for {n} nodes")
    rb = a["replaced_by"]
    if rb.size and (rb.min() < -1 or rb.max() >= n):
        raise InputError("array replaced_by points outside the nodes")


def _verify(onto: Ontology, header: dict) -> None:
    """The stored content hash, closure and depths must be those of the stored nodes and edges."""
    from kg_rageval.ontology.builder import _closure

    n = len(onto)
    if len(set(onto.ids)) != n:
        raise InputError("duplicate ids in the compiled ontology")
    stored = header.get("content_hash")
    if stored is not None and onto.content_hash != stored:
        raise InputError(
            f"content hash mismatch: the file says {stored} but its nodes and edges hash to "
            f"{onto.content_hash} (the cache was modified)"
        )
    level = onto.depth_max.astype(np.int64)
    child = np.repeat(np.arange(n), np.diff(onto.parent_ptr))
    par = onto.parent_idx.astype(np.int64)
    if n and (level[0] != 0 or (np.diff(level) < 0).any()):
        raise InputError("nodes are not stored in level order (the cache was modified)")
    has_par = np.diff(onto.parent_ptr) > 0
    top = np.full(n, -1, dtype=np.int64)
    if child.size:
        np.maximum.at(top, child, level[par])
    if (level[has_par] != top[has_par] + 1).any() or (level[~has_par] != 0).any():
        raise InputError("stored depths do not follow from the edges (the cache was modified)")
    depth_min, anc_ptr, anc_idx = _closure(n, onto.parent_ptr.astype(np.int64), onto.parent_idx, level)
    if not (
        np.array_equal(depth_min, onto.depth_min)
        and np.array_equal(anc_ptr, onto.anc_ptr)
        and np.array_equal(anc_idx, onto.anc_idx)
    ):
        raise InputError(
            "the stored ancestor closure does not follow from the edges (the cache was modified)"
        )
