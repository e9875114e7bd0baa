"""A minimal metric family used to test the audit runner independently of the real families.

``score_stub(ontology, records)`` reads the ``labels`` section: one row per record with both a
gold and a predicted label; ``correct`` = 1 when the first predicted id equals the first gold
id. ``stub_accuracy`` = Σ correct / Σ n (missing when no record is scored). Records with gold
labels but no prediction are unscored with reason ``missing run``. Keys: ``gold_node`` and
``slice:<name>``; detail ``relation`` (:meth:`Ontology.relation` of gold → predicted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kg_rageval.records import slice_text
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, ratio


class StubFamily(Family):
    name = "stub"
    version = "1"
    stats = ("correct", "n")

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        return {
            "stub_accuracy": ratio(
                "stub_accuracy",
                sums["correct"],
                sums["n"],
                missing="no record with gold and predicted labels",
            )
        }


def score_stub(ontology: Any, records: Iterable[dict]) -> Any:
    rows, unscored = [], []
    slice_names: set[str] = set()
    for r in records:
        lab = r.get("labels")
        if not isinstance(lab, dict):
            continue
        gold, pred = lab.get("gold") or [], lab.get("pred")
        if not pred:
            unscored.append({"record_id": r["id"], "reason": "missing run"})
            continue
        g, p = gold[0], pred[0]
        row: dict[str, Any] = {
            "record_id": r["id"],
            "correct": float(g == p),
            "n": 1.0,
            "gold_node": g,
            "relation": ontology.relation(g, p),
        }
        for k, v in (r.get("slices") or {}).items():
            row[f"slice:{k}"] = slice_text(v)
            slice_names.add(f"slice:{k}")
        rows.append(row)
    return build_evaluation(
        StubFamily(), rows, keys=["gold_node", *sorted(slice_names)], details=["relation"], unscored=unscored
    )
