"""STIX 2.x bundles as MITRE ATT&CK hierarchies (``.json`` or gzip-compressed ``.json.gz``).

Mapping:

* **Ids** are the ATT&CK external ids (``TA0006``, ``T1003``, ``T1003.001``) from the
  ``external_references`` entry whose ``source_name`` is in ``source_names``, the first of
  them that the object carries (default :data:`SOURCE_NAMES`: ``mitre-attack``, then
  ``mitre-ics-attack`` and ``mitre-mobile-attack``, which deprecated ICS and Mobile objects
  still use — ICS 18.1 has 12 such techniques, ``T0850`` among them). An object without one
  keeps its STIX id (counted, ``objects_without_attack_id``, one warning naming each).
* **Root**: the ``x-mitre-matrix`` (id ``enterprise-attack``, node type ``matrix``) is the one
  real root and its ``tactic_refs`` are its children, so depths are matrix 0, tactic 1,
  technique 2, sub-technique 3. With ``matrix_root=False``, or a bundle without a matrix, the
  tactics are the roots and the model adds its virtual root above them (same depths). Several
  matrices in one bundle are several roots under the virtual root.
* **Tactics** (``x-mitre-tactic``, node type ``tactic``) are matched to techniques through
  ``x_mitre_shortname`` ↔ ``kill_chain_phases[].phase_name`` (kill chains named ``mitre-*``).
* **Techniques** (``attack-pattern`` with ``x_mitre_is_subtechnique`` false, node type
  ``technique``) sit under every tactic they name: several tactics, several parents.
* **Sub-techniques** (node type ``sub-technique``) sit under their technique through the
  ``subtechnique-of`` relationship. Without that relationship (ATT&CK drops it for some revoked
  or deprecated sub-techniques) the parent is the technique named by the id before the dot
  (``T1053.001`` → ``T1053``), counted as ``subtechniques_placed_by_id``.
* **Status**: ``revoked: true`` → revoked, with the target of its ``revoked-by`` relationship as
  the replacement (revoked by several: flagged ``multiple_replacements``, none recorded);
  ``x_mitre_deprecated: true`` → deprecated. Revoked and deprecated objects
  keep their last published place (their tactics or parent technique), so they remain loadable
  ids that metrics can flag. One with no tactic and no parent technique is placed directly
  under the root (the matrix, else the virtual root) and counted as
  ``unplaced_objects_under_root``; an *active* technique in that situation gets the same
  placement and a warning naming it.
* **Labels** are ``name``, **definitions** ``description``. Relationships, tactics or phases
  that name objects the bundle lacks are counted, never silently dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import InputError
from ..builder import OntologyBuilder
from ..model import Ontology
from .safety import decode_json


def read_json(path: str | Path) -> Any:
    """Decode ``path`` (plain or gzip, told apart by the magic bytes) with line-located errors."""
    p = Path(path)
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        from ...safe_io import decompress_bounded

        raw = decompress_bounded(raw, str(p))  # refuses past the max_gz_bytes limit
    return decode_json(raw, p, "a STIX 2.x bundle")


SOURCE_NAMES = ("mitre-attack", "mitre-ics-attack", "mitre-mobile-attack")
"""``source_name``s whose ``external_id`` is an ATT&CK id, in order of preference: deprecated
ICS and Mobile objects keep their ids under their domain's old source name."""


def _attack_id(obj: dict, source_names: tuple[str, ...]) -> str | None:
    """The ``external_id`` under the first of ``source_names`` the object carries."""
    found: dict[str, str] = {}
    for ref in obj.get("external_references") or ():
        if isinstance(ref, dict) and ref.get("external_id"):
            name = ref.get("source_name")
            if name in source_names and name not in found:
                found[name] = str(ref["external_id"])
    for name in source_names:
        if name in found:
            return found[name]
    return None


def load_stix(
    path: str | Path,
    *,
    matrix_root: bool = True,
    source_names: tuple[str, ...] | list[str] | str = SOURCE_NAMES,
    dangling: str = "error",
    conflicts: str = "error",
    strict: bool = False,
) -> Ontology:
    """Load a STIX 2.x ATT&CK bundle (see the module docstring for the mapping).
    ``source_names``: one name or several, in order of preference; ``strict=True`` refuses
    an object revoked by several others instead of flagging it."""
    if isinstance(source_names, str):
        source_names = (source_names,)
    source_names = tuple(source_names)
    if not source_names or not all(isinstance(x, str) and x for x in source_names):
        raise InputError(f"source_names must name at least one source, got {source_names!r}", source=str(path))
    p = Path(path)
    src = str(p)
    doc = read_json(p)
    if isinstance(doc, dict) and doc.get("type") == "bundle" and isinstance(doc.get("objects"), list):
        objects = doc["objects"]
    elif isinstance(doc, list):
        objects = doc
    else:
        raise InputError(
            'expected a STIX 2.x bundle: {"type": "bundle", "objects": [...]}; found '
            + (f"a JSON object with type {doc.get('type')!r}" if isinstance(doc, dict) else type(doc).__name__),
            source=src,
        )
    b = OntologyBuilder(src)
    by_stix: dict[str, dict] = {}
    for k, obj in enumerate(objects):
        if not isinstance(obj, dict) or "type" not in obj or "id" not in obj:
            raise InputError(
                "every STIX object needs 'type' and 'id'", source=src, location=f"objects[{k}]"
            )
        by_stix[obj["id"]] = obj

    ids: dict[str, str] = {}  # stix id -> node id
    no_attack_id = 0
    kinds = ("x-mitre-matrix", "x-mitre-tactic", "attack-pattern")
    for obj in objects:
        if obj["type"] in kinds:
            aid = _attack_id(obj, source_names)
            if aid is None:
                no_attack_id += 1
                aid = obj["id"]
                b.warn("objects_without_attack_id",
                       f"{aid!r} has no external_id under {', '.join(source_names)}; kept its STIX id",
                       count=0)
            ids[obj["id"]] = aid
    if no_attack_id:
        b.warn("objects_without_attack_id", count=no_attack_id)

    def status_of(obj: dict) -> str:
        if obj.get("revoked"):
            return "revoked"
        if obj.get("x_mitre_deprecated"):
            return "deprecated"
        return "active"

    # relationships
    sub_of: dict[str, list[str]] = {}
    revoked_by: dict[str, list[str]] = {}
    unknown_refs = 0
    for k, obj in enumerate(objects):
        if obj["type"] != "relationship":
            continue
        rtype, s, t = obj.get("relationship_type"), obj.get("source_ref"), obj.get("target_ref")
        if rtype not in ("subtechnique-of", "revoked-by"):
            continue
        if s not in ids or t not in ids:
            unknown_refs += 1
            continue
        if obj.get("revoked") or obj.get("x_mitre_deprecated"):
            b.warn("withdrawn_relationships_ignored")
            continue
        (sub_of if rtype == "subtechnique-of" else revoked_by).setdefault(ids[s], []).append(ids[t])
    if unknown_refs:
        b.warn("relationships_to_unknown_objects", count=unknown_refs)

    def node(obj: dict, node_type: str) -> str:
        nid = ids[obj["id"]]
        b.add_node(
            nid,
            label=(obj.get("name") or "").strip() or None,
            definition=(obj.get("description") or "").strip() or None,
            status=status_of(obj),
            replaced_by=sorted(revoked_by.get(nid, [])),  # several: flagged by the builder
            node_type=node_type,
            where=obj["id"],
        )
        return nid

    matrices = [o for o in objects if o["type"] == "x-mitre-matrix"] if matrix_root else []
    root_ids = [node(m, "matrix") for m in matrices]
    tactic_parent: dict[str, list[str]] = {}
    for m, mid in zip(matrices, root_ids):
        for ref in m.get("tactic_refs") or ():
            if ref in ids:
                tactic_parent.setdefault(ids[ref], []).append(mid)
            else:
                b.warn("tactic_refs_unknown", f"matrix {mid!r} names {ref!r}, not in the bundle")
    by_shortname: dict[str, list[str]] = {}
    for obj in objects:
        if obj["type"] != "x-mitre-tactic":
            continue
        tid = node(obj, "tactic")
        parents = tactic_parent.get(tid)
        if parents is None and len(root_ids) == 1:
            parents = root_ids  # one matrix: every tactic belongs to it
            b.warn("tactics_not_in_matrix", f"tactic {tid!r} is not in the matrix's tactic_refs")
        for par in parents or ():
            b.add_edge(tid, par, where=obj["id"])
        short = obj.get("x_mitre_shortname")
        if short:
            by_shortname.setdefault(short, []).append(tid)

    fallback_root = root_ids[0] if len(root_ids) == 1 else None
    techniques = [o for o in objects if o["type"] == "attack-pattern"]
    technique_ids = {ids[o["id"]] for o in techniques if not o.get("x_mitre_is_subtechnique")}
    unknown_phase = 0
    for obj in techniques:
        is_sub = bool(obj.get("x_mitre_is_subtechnique"))
        nid = node(obj, "sub-technique" if is_sub else "technique")
        parents: list[str] = []
        if is_sub:
            parents = list(dict.fromkeys(sub_of.get(nid, [])))
            if not parents and "." in nid and nid.split(".")[0] in technique_ids:
                parents = [nid.split(".")[0]]
                b.warn("subtechniques_placed_by_id", f"{nid!r} has no subtechnique-of; placed under {parents[0]!r}")
        else:
            if nid in sub_of:
                b.warn("subtechnique_of_on_technique", f"{nid!r} is not a sub-technique but has subtechnique-of")
            for phase in obj.get("kill_chain_phases") or ():
                if not str(phase.get("kill_chain_name", "")).startswith("mitre-"):
                    continue
                found = by_shortname.get(phase.get("phase_name"))
                if not found:
                    unknown_phase += 1
                    continue
                parents.extend(found)
            parents = list(dict.fromkeys(parents))
        if not parents:
            if fallback_root:
                parents = [fallback_root]
            b.warn(
                "unplaced_objects_under_root",
                None if status_of(obj) != "active" else f"active {nid!r} has no tactic or parent technique; placed under the root",
            )
        for par in parents:
            b.add_edge(nid, par, where=obj["id"])
    if unknown_phase:
        b.warn("unknown_kill_chain_phases", count=unknown_phase)
    if not ids:
        raise InputError(
            "the bundle has no x-mitre-tactic, attack-pattern or x-mitre-matrix objects: nothing to load",
            source=src,
        )
    return b.build(dangling=dangling, conflicts=conflicts, strict=strict)
