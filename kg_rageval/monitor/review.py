"""Review queues: a seeded uniform random stratum with low-confidence and thumbs-down
strata oversampled beside it, each item's inclusion probability recorded, and
inverse-probability (Horvitz–Thompson / Hájek) estimates from the mixed sample
(``docs/monitoring_review.md``).

Sampling is Poisson sampling per stratum: row ``i`` enters stratum ``s`` with probability
``pi_s(i)`` (0 when it is not eligible), decided by a uniform drawn from a hash of
``(seed, stratum, record id)`` — reproducible, and independent of the order and chunking of
the input. A row in several strata is one review item with the combined probability
``pi(i) = 1 - prod_s (1 - pi_s(i))``. Strata:

* ``random``: every row, ``rate`` (default 0.02); always kept and labelled;
* ``low_confidence``: rows with ``confidence < threshold``;
* ``thumbs_down``: rows with ``feedback.thumbs == "down"``.

Without the random stratum there is no unbiased estimate of the population and the golden
set would only grow from complaints: :func:`draw` warns.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kg_rageval.monitor.traffic import TrafficRow

NO_RANDOM_WARNING = (
    "no random stratum: estimates from this sample are not population estimates and the "
    "golden set would only grow from complaints (low-confidence and thumbs-down outputs)"
)


@dataclass(frozen=True)
class Design:
    rate: float = 0.02
    low_confidence: float = 0.3
    low_confidence_rate: float = 0.5
    thumbs_down_rate: float = 0.5
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("rate", "low_confidence_rate", "thumbs_down_rate"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {v!r}")

    def probabilities(self, row: TrafficRow) -> dict[str, float]:
        out = {"random": self.rate}
        if row.confidence is not None and row.confidence < self.low_confidence:
            out["low_confidence"] = self.low_confidence_rate
        if row.feedback.get("thumbs") == "down":
            out["thumbs_down"] = self.thumbs_down_rate
        return {k: v for k, v in out.items() if v > 0}


def uniform(seed: int, stratum: str, record_id: str) -> float:
    h = hashlib.blake2b(f"{seed}\x1f{stratum}\x1f{record_id}".encode(), digest_size=8).digest()
    return (int.from_bytes(h, "big") + 0.5) / 2.0**64


@dataclass
class Item:
    record_id: str
    window: str
    branch: str
    strata: list[str]
    stratum_probabilities: dict[str, float]
    inclusion_probability: float
    row: TrafficRow | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.record_id,
            "window": self.window,
            "branch": self.branch,
            "strata": self.strata,
            "stratum_probabilities": self.stratum_probabilities,
            "inclusion_probability": self.inclusion_probability,
        }


@dataclass
class Sample:
    items: list[Item]
    n_population: int
    design: Design
    warnings: list[str]
    stratum_counts: dict[str, int]


def draw(rows: Sequence[TrafficRow], design: Design) -> Sample:
    items: list[Item] = []
    counts: dict[str, int] = {}
    for r in rows:
        probs = design.probabilities(r)
        hit = [s for s, p in probs.items() if uniform(design.seed, s, r.record_id) < p]
        if not hit:
            continue
        pi = 1.0 - math.prod(1.0 - p for p in probs.values())
        for s in hit:
            counts[s] = counts.get(s, 0) + 1
        items.append(Item(r.record_id, r.window, r.branch, hit, probs, pi, r))
    warnings = [] if design.rate > 0 else [NO_RANDOM_WARNING]
    return Sample(items, len(rows), design, warnings, counts)


def estimates(
    sample: Sample, label: Callable[[Item], float | None], *, level: float = 0.95
) -> dict[str, Any]:
    """Estimates of the population mean of ``label`` (e.g. 1 for a reviewed 'bad' answer) from
    the reviewed items (``None``: not reviewed yet, left out and counted):

    * ``horvitz_thompson``: ``sum(y / pi) / N`` over the whole mixed sample (unbiased);
    * ``hajek``: ``sum(y / pi) / sum(1 / pi)`` (ratio form, nearly unbiased, lower variance);
    * ``random_stratum``: the plain mean over the random stratum, with a Wilson interval;
    * ``naive_mixed_mean``: the plain mean over the mixed sample — biased towards the
      oversampled strata, shown only to say so.
    """
    from kg_rageval.audit.intervals import wilson

    ys = [(it, y) for it in sample.items if (y := label(it)) is not None]
    unreviewed = len(sample.items) - len(ys)
    N = sample.n_population
    out: dict[str, Any] = {"n_population": N, "n_reviewed": len(ys), "n_unreviewed": unreviewed}
    if not ys:
        out["status"] = "insufficient evidence: no reviewed items"
        return out
    ht = sum(y / it.inclusion_probability for it, y in ys)
    w = sum(1 / it.inclusion_probability for it, _ in ys)
    out["horvitz_thompson"] = {"estimate": ht / N, "from": "all strata, weighted by 1/inclusion_probability"}
    out["hajek"] = {"estimate": ht / w, "from": "all strata, weighted by 1/inclusion_probability"}
    rnd = [y for it, y in ys if "random" in it.strata]
    if rnd:
        k = sum(rnd)
        est = k / len(rnd)
        entry: dict[str, Any] = {"estimate": est, "n": len(rnd), "from": "random stratum only"}
        if all(y in (0, 1) for y in rnd):
            entry["ci"] = list(wilson(int(k), len(rnd), level))
        out["random_stratum"] = entry
    else:
        out["random_stratum"] = {"status": "insufficient evidence: no reviewed random-stratum items"}
    out["naive_mixed_mean"] = {
        "estimate": sum(y for _, y in ys) / len(ys),
        "from": "all strata, unweighted: biased towards the oversampled strata; not an estimate",
    }
    out["warnings"] = list(sample.warnings)
    return out
