"""The one ``gold_node`` rule: the ontology node a record's figures are attributed to.

Every family's rows carry the key ``gold_node`` for the per-node roll-ups and reports
(:meth:`Evaluation.rollup`, the audit's per-node section, drift stability, write-back, the
test-set planner, the pytest plugin); :func:`gold_node` decides it, in one place. It sits
below the ontology floor, so it takes a ``resolve`` callable rather than an ontology.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

Resolve = Callable[[str], "str | None"]
"""id → the canonical node id, or ``None`` when the ontology lacks it (e.g.
:meth:`kg_rageval.ontology.IdResolver.node_id`: CURIE/IRI, alternative id → concept)."""


def _one_label(record: Mapping[str, Any]) -> str | None:
    labels = record.get("labels")
    gold = labels.get("gold") if isinstance(labels, Mapping) else None
    if isinstance(gold, list):
        gold = gold[0] if len(gold) == 1 else None
    return gold if isinstance(gold, str) and gold else None


def gold_node(
    record: Mapping[str, Any], *, resolve: Resolve | None = None, fallback: str | None = None
) -> str | None:
    """The ontology node ``record``'s figures are attributed to (row key ``gold_node``).

    The first of these that names a node wins:

    1. the record's own top-level ``gold_node`` (a non-empty string): a statement of the
       record's node, above every family's guess;
    2. its gold label, when ``labels.gold`` names exactly **one** id (a one-element list or a
       string). Several gold ids name no single node (attributing the record to its first
       label would be arbitrary), and NIL gold (``[]``) names none: neither gives a node;
    3. ``fallback``: the family's own node of the record, computed by the family from its
       section (``retrieval.gold_node`` or the deepest common category of the gold documents,
       ``relations.node`` or a gold triple's end, the conformance reference output's node, the
       first gold mention's id);
    4. else ``None`` (the record is in no node's roll-up).

    Unknown ids: with ``resolve`` (id → canonical node id or ``None``), every candidate is
    resolved — an alternative id or a CURIE gives its concept's id — and a candidate the
    ontology lacks is skipped (the next step is tried). Without ``resolve`` (a family that
    scores without an ontology) the id is kept as given; the roll-ups leave an id the ontology
    lacks out (:meth:`Evaluation.node_indices` gives it ``-1``).
    """
    return gold_nodes([record], resolve=resolve, fallbacks=[fallback])[0]


def gold_nodes(
    records: Sequence[Mapping[str, Any]],
    *,
    resolve: Resolve | None = None,
    fallbacks: Sequence[str | None] | None = None,
) -> list[str | None]:
    """:func:`gold_node` of each record, ``fallbacks[i]`` the fallback of ``records[i]``
    (``None``: none); ``resolve`` (a pure function) is called once per distinct candidate."""
    memo: dict[str, str | None] = {}
    out: list[str | None] = []
    for record, fallback in zip(records, fallbacks if fallbacks is not None else [None] * len(records)):
        node = None
        for candidate in (record.get("gold_node"), _one_label(record), fallback):
            if not isinstance(candidate, str) or not candidate:
                continue
            if resolve is None:
                node = candidate
                break
            node = memo[candidate] if candidate in memo else memo.setdefault(candidate, resolve(candidate))
            if node is not None:
                break
        out.append(node)
    return out
