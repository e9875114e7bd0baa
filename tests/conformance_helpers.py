"""The hand-written ATT&CK-shaped ontology of ``fixtures/conformance/attack_like.json`` (no
loader reads that layout; see its README), shared by the conformance tests."""

from __future__ import annotations

import json
from pathlib import Path

from kg_rageval.ontology import OntologyBuilder, Property

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "conformance"


def build_attack_like():
    d = json.loads((FIX / "attack_like.json").read_text())
    b = OntologyBuilder("attack_like")
    for n in d["nodes"]:
        b.add_node(
            n["id"],
            label=n.get("label"),
            node_type=n.get("node_type"),
            status=n.get("status", "active"),
            replaced_by=n.get("replaced_by"),
        )
    for c, p in d["edges"]:
        b.add_edge(c, p)
    for p in d["properties"]:
        b.add_property(
            Property(p["id"], p.get("label"), tuple(p.get("domain", ())), tuple(p.get("range", ())))
        )
    return b.build()


TECHNIQUES = ["T1003", "T1003.001", "T1003.002", "T1059", "T1059.001", "T1059.003", "T1110", "T1110.001"]
