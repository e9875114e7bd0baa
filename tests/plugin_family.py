"""A metric family from outside the package, for the plugin tests: ``exact_label`` scores the
``labels`` section — ``exact_label_accuracy`` = Σ [first predicted id == first gold id] / records
with gold and a prediction. Loaded through a real entry point (``tests/scoring/test_plugins.py``
writes a ``*.dist-info/entry_points.txt`` naming ``plugin_family:EXACT_LABEL``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kg_rageval.contract.metrics import metric_specs
from kg_rageval.records import slice_text
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, ratio
from kg_rageval.scoring import Param, Scorer, declare


class ExactLabel(Family):
    name = "exact_label"
    version = "1"
    stats = ("correct", "n")

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        return {
            "exact_label_accuracy": ratio(
                "exact_label_accuracy",
                sums["correct"],
                sums["n"],
                missing="no record with gold and predicted labels",
            )
        }


def score_exact_label(ontology: Any, records: Iterable[dict], *, case_sensitive: bool = True) -> Any:
    rows, unscored, slices = [], [], set()
    for r in records:
        lab = r.get("labels")
        if not isinstance(lab, dict) or not lab.get("gold"):
            continue
        if not lab.get("pred"):
            unscored.append({"record_id": r["id"], "reason": "missing run"})
            continue
        g, p = lab["gold"][0], lab["pred"][0]
        same = g == p if case_sensitive else g.lower() == p.lower()
        row = {"record_id": r["id"], "correct": float(same), "n": 1.0, "gold_node": g}
        for k, v in (r.get("slices") or {}).items():
            row[f"slice:{k}"] = slice_text(v)
            slices.add(f"slice:{k}")
        rows.append(row)
    return build_evaluation(ExactLabel(), rows, keys=["gold_node", *sorted(slices)], unscored=unscored)


EXACT_LABEL = Scorer(
    name="exact_label",
    target="plugin_family:score_exact_label",
    sections=("labels",),
    description="Exact match of the first predicted label (a plugin family).",
    opt_in=True,  # run by an audit only when its config names it
    params=(Param("case_sensitive", "bool", True, "Compare ids case-sensitively."),),
    metrics=metric_specs(
        "exact_label",
        "exact_label",
        (
            (
                "exact_label_accuracy",
                "higher",
                "records whose first predicted id equals the first gold id / "
                "records with gold and a prediction",
            ),
        ),
    ),
)
declare(
    "exact_label",
    has=("per_node_rollup", "score_command"),
    exempt={
        "reads_ontology_ids": "compares id strings; no id policy",
        "needs_ontology": "compares id strings without the ontology",
    },
)

BROKEN = "not a Scorer"
"""What a broken entry point names (``plugin_family:BROKEN``)."""

SHADOW = Scorer(name="retrieval", target="plugin_family:score_exact_label", sections=("labels",))
"""An entry point family that tries to shadow a built-in one."""
