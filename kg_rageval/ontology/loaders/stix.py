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
* **Version** (``Ontology.version``): the ``x_mitre_version`` of the bundle's
  ``x-mitre-collection`` object, when it has one.
* **Labels** are ``name``, **definitions** ``description``. Relationships, tactics or phases
  that name objects the bundle lacks are counted, never silently dropped.
* **Instances** (``instances=True``, the default): every other domain object — groups
  (``intrusion-set``), software (``malware``, ``tool``), mitigations (``course-of-action``),
  campaigns, data sources and components, detection strategies, analytics, … — is an instance
  of the knowledge graph (:mod:`kg_rageval.ontology.graph`) whose *kind* is its STIX type, with
  its ATT&CK id (``G0016``, ``S0002``, ``M1036``, ``C0001``, ``DS0014``, ``DC0084``), label,
  and status (revoked with its ``revoked-by`` target as replacement, deprecated) as for
  techniques. Bookkeeping objects (:data:`NOT_ENTITIES`: identities, marking definitions,
  collections) are not entities (counted ``stix_objects_not_entities``).
* **Relations**: every relationship (``uses``, ``mitigates``, ``detects``,
  ``subtechnique-of``, ``revoked-by``, ``attributed-to``, …) is a triple ``(source,
  relationship_type, target)``; ``subtechnique-of`` and ``revoked-by`` *also* build the
  hierarchy and status as above. A relationship end the bundle lacks (Enterprise 18.1's 691
  ``detects`` come from ``x-mitre-detection-strategy`` objects the bundle does not carry) is
  declared an instance with its STIX id and the kind its id's prefix names, counted
  ``instances_declared_from_refs``. An object whose ATT&CK id is already taken (the 224
  deprecated pre-2019 mitigations of Enterprise 18.1 reuse their technique's id, ``T1003``)
  keeps its STIX id, counted ``instance_ids_taken_kept_stix_id``. Withdrawn (revoked/deprecated) relationships are skipped
  and counted. The predicates' domain and range are ATT&CK's (:data:`RELATION_TYPES`), by kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.ontology.builder import OntologyBuilder
from kg_rageval.ontology.loaders.safety import decode_json
from kg_rageval.ontology.model import Ontology


def read_json(path: str | Path) -> Any:
    """Decode ``path`` (plain or gzip, told apart by the magic bytes) with line-located errors."""
    p = Path(path)
    raw: bytes | bytearray = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        from kg_rageval.base.safe_io import decompress_bounded

        raw = decompress_bounded(raw, str(p))  # refuses past the max_gz_memory_bytes limit
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc}", source=str(p)) from None
    del raw  # the parser holds one copy of the document: the text
    return decode_json(text, p, "a STIX 2.x bundle")


SOURCE_NAMES = ("mitre-attack", "mitre-ics-attack", "mitre-mobile-attack")
"""``source_name``s whose ``external_id`` is an ATT&CK id, in order of preference: deprecated
ICS and Mobile objects keep their ids under their domain's old source name."""


NOT_ENTITIES = frozenset(
    {
        "identity",
        "marking-definition",
        "x-mitre-collection",
        "relationship",
        "extension-definition",
        "language-content",
    }
)
"""STIX object types that are bookkeeping, not entities of the graph."""

_TECHNIQUE_KINDS = ("technique", "sub-technique")
RELATION_TYPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "uses": (("intrusion-set", "campaign", "malware", "tool"), _TECHNIQUE_KINDS + ("malware", "tool")),
    "mitigates": (("course-of-action",), _TECHNIQUE_KINDS),
    "detects": (("x-mitre-detection-strategy", "x-mitre-data-component"), _TECHNIQUE_KINDS),
    "subtechnique-of": (("sub-technique",), ("technique",)),
    "attributed-to": (("campaign",), ("intrusion-set",)),
    "revoked-by": ((), ()),
}
"""Domain and range (kinds) of ATT&CK's relationship types (ATT&CK data model: groups,
campaigns and software use techniques and software; mitigations mitigate techniques; detection
strategies and data components detect techniques; campaigns are attributed to groups)."""


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
    instances: bool = True,
) -> Ontology:
    """Load a STIX 2.x ATT&CK bundle (see the module docstring for the mapping).
    ``source_names``: one name or several, in order of preference; ``strict=True`` refuses
    an object revoked by several others instead of flagging it; ``instances=False`` loads the
    hierarchy only (no instances, no triples)."""
    if isinstance(source_names, str):
        source_names = (source_names,)
    source_names = tuple(source_names)
    if not source_names or not all(isinstance(x, str) and x for x in source_names):
        raise InputError(
            f"source_names must name at least one source, got {source_names!r}", source=str(path)
        )
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
            + (
                f"a JSON object with type {doc.get('type')!r}"
                if isinstance(doc, dict)
                else type(doc).__name__
            ),
            source=src,
        )
    b = OntologyBuilder(src)
    for obj in objects:  # the release: an x-mitre-collection's version, when the bundle has one
        if isinstance(obj, dict) and obj.get("type") == "x-mitre-collection" and obj.get("x_mitre_version"):
            b.version = str(obj["x_mitre_version"])
            break
    by_stix: dict[str, dict] = {}
    for k, obj in enumerate(objects):
        if not isinstance(obj, dict) or "type" not in obj or "id" not in obj:
            raise InputError("every STIX object needs 'type' and 'id'", source=src, location=f"objects[{k}]")
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
                b.warn(
                    "objects_without_attack_id",
                    f"{aid!r} has no external_id under {', '.join(source_names)}; kept its STIX id",
                    count=0,
                )
            ids[obj["id"]] = aid
    inst_objs: list[dict] = []
    if instances:
        not_entities = collided = 0
        taken = set(ids.values())
        for obj in objects:
            t = obj["type"]
            if t in kinds:
                continue
            if t in NOT_ENTITIES:
                not_entities += t != "relationship"
                continue
            aid = _attack_id(obj, source_names)
            if aid is None:
                no_attack_id += 1
                aid = obj["id"]
            elif aid in taken:  # pre-2019 mitigations reuse their technique's id (T1003)
                collided += 1
                aid = obj["id"]
            taken.add(aid)
            ids[obj["id"]] = aid
            inst_objs.append(obj)
        if collided:
            b.warn(
                "instance_ids_taken_kept_stix_id",
                f"{collided} object(s) whose ATT&CK id is already a technique's or another object's "
                "id keep their STIX id",
                count=collided,
            )
        if not_entities:
            b.warn("stix_objects_not_entities", count=not_entities)
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
    from_refs: dict[str, str] = {}  # stix id -> kind of relationship ends the bundle lacks
    triples: list[tuple[str, str, str, str]] = []
    for k, obj in enumerate(objects):
        if obj["type"] != "relationship":
            continue
        rtype, s, t = obj.get("relationship_type"), obj.get("source_ref"), obj.get("target_ref")
        if not (isinstance(rtype, str) and rtype and isinstance(s, str) and isinstance(t, str)):
            raise InputError(
                "a relationship needs relationship_type, source_ref and target_ref",
                source=src,
                location=f"objects[{k}] ({obj['id']})",
            )
        if obj.get("revoked") or obj.get("x_mitre_deprecated"):
            b.warn("withdrawn_relationships_ignored")
            continue
        if instances:
            for ref in (s, t):
                if ref not in ids and ref not in by_stix and "--" in ref:
                    from_refs.setdefault(ref, ref.partition("--")[0])
            triples.append((s, rtype, t, obj["id"]))
        if rtype not in ("subtechnique-of", "revoked-by"):
            continue
        if s not in ids or t not in ids:
            unknown_refs += 1
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
        tactic_roots = tactic_parent.get(tid)
        if tactic_roots is None and len(root_ids) == 1:
            tactic_roots = root_ids  # one matrix: every tactic belongs to it
            b.warn("tactics_not_in_matrix", f"tactic {tid!r} is not in the matrix's tactic_refs")
        for par in tactic_roots or ():
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
                b.warn(
                    "subtechniques_placed_by_id",
                    f"{nid!r} has no subtechnique-of; placed under {parents[0]!r}",
                )
        else:
            if nid in sub_of:
                b.warn(
                    "subtechnique_of_on_technique", f"{nid!r} is not a sub-technique but has subtechnique-of"
                )
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
                None
                if status_of(obj) != "active"
                else f"active {nid!r} has no tactic or parent technique; placed under the root",
            )
        for par in parents:
            b.add_edge(nid, par, where=obj["id"])
    if unknown_phase:
        b.warn("unknown_kill_chain_phases", count=unknown_phase)
    for obj in inst_objs:
        nid = ids[obj["id"]]
        reps = sorted(set(revoked_by.get(nid, [])))
        if len(reps) > 1:
            b.warn(
                "multiple_replacements",
                f"{nid!r} is revoked by {', '.join(map(repr, reps))}: ambiguous, no replacement recorded",
            )
        b.add_instance(
            nid,
            label=(obj.get("name") or "").strip() or None,
            kind=obj["type"],
            status=status_of(obj),
            replaced_by=reps[0] if len(reps) == 1 else None,
            where=obj["id"],
        )
    for ref, kind in from_refs.items():
        ids[ref] = ref
        b.add_instance(ref, kind=kind, where="relationship end")
    if from_refs:
        b.warn(
            "instances_declared_from_refs",
            f"{len(from_refs)} relationship end(s) the bundle lacks declared as instances by their "
            f"STIX id (kinds: {', '.join(sorted(set(from_refs.values())))})",
            count=len(from_refs),
        )
    for s_ref, rtype, t_ref, where in triples:
        b.add_triple(ids.get(s_ref, s_ref), rtype, ids.get(t_ref, t_ref), where=where)
    if instances:
        from kg_rageval.ontology.model import Property

        for rtype in sorted({t[1] for t in triples}):
            dom, rng = RELATION_TYPES.get(rtype, ((), ()))
            b.add_property(Property(rtype, rtype, dom, rng))
    if not ids:
        raise InputError(
            "the bundle has no x-mitre-tactic, attack-pattern or x-mitre-matrix objects: nothing to load",
            source=src,
        )
    return b.build(dangling=dangling, conflicts=conflicts, strict=strict)
