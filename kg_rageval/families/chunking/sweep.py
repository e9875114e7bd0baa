"""Chunk-size / overlap sweep: Recall@k of several retrieval runs, one per chunking
configuration, against the same qrels — which chunk size is big enough?

Each run is a TREC (or ranx JSON) run over the same queries, made with one chunk ``size`` and
``overlap`` (stated per run: ``size=256,overlap=0:run.trec``). The qrels judge what the runs
rank (documents, with chunk hits mapped to their document, or passages of a shared id space);
runs are read with ``dedupe=True``: a document a query's run lists twice (two of its chunks)
keeps its first line, so it counts once.

Per run, with the retrieval family's measures (:func:`kg_rageval.families.retrieval.measures.compute`,
trec_eval's ``R@k``; the default mode's answerability rule): ``recall`` is the mean of
``R@k`` over the qrels queries with at least one relevant document (a query the run lacks
scores 0), with a percentile bootstrap CI over those queries
(:func:`kg_rageval.families.retrieval.compare.bootstrap_ci`, the same seed for every run).

**Plateau** (the smallest size after which recall stops improving), defined: the *best*
configuration is the one with the highest recall (ties: smaller size, then smaller overlap);
a size's recall is its best over its overlaps; the plateau size is the smallest size whose
recall is at least the lower end of the best configuration's CI (within the best's CI).
Bigger sizes than the plateau are not reliably better on these queries. No scorable query is
missing evidence (``MissingEvidence``), never a recall of 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.base.errors import ConfigError, InputError, MissingEvidence

_SPEC = re.compile(r"^(?P<params>[^:]*?):(?P<path>.+)$")


@dataclass(frozen=True)
class RunSpec:
    size: int
    overlap: int
    path: str


@dataclass(frozen=True)
class SweepPoint:
    size: int
    overlap: int
    run: str
    recall: float
    ci: tuple[float, float]
    n: int
    n_missing_run: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "overlap": self.overlap,
            "run": self.run,
            "recall": self.recall,
            "ci": list(self.ci),
            "n": self.n,
            "n_missing_run": self.n_missing_run,
        }


@dataclass(frozen=True)
class Sweep:
    k: int
    level: float
    n_resamples: int
    seed: int
    points: tuple[SweepPoint, ...]
    best: SweepPoint
    plateau_size: int
    by_size: dict[int, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "measure": f"R@{self.k}",
            "level": self.level,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "points": [p.to_dict() for p in self.points],
            "best": {"size": self.best.size, "overlap": self.best.overlap, "recall": self.best.recall},
            "by_size": {str(s): r for s, r in self.by_size.items()},
            "plateau_size": self.plateau_size,
            "plateau_rule": "smallest size whose recall (best over its overlaps) is >= the lower "
            "end of the best configuration's CI",
        }


def parse_run_spec(text: str) -> RunSpec:
    """``size=256,overlap=0:path`` (``overlap`` optional, default 0; sizes > 0, overlaps >= 0
    and smaller than the size); a malformed spec is a :class:`ConfigError` naming it."""
    m = _SPEC.match(text.strip())
    if not m:
        raise ConfigError(f"--run {text!r}: expected size=N[,overlap=M]:PATH")
    vals: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in m.group("params").split(","))):
        key, eq, val = part.partition("=")
        key = key.strip()
        if not eq or key not in ("size", "overlap"):
            raise ConfigError(f"--run {text!r}: {part!r} is not size=N or overlap=M")
        if key in vals:
            raise ConfigError(f"--run {text!r}: {key} given twice")
        try:
            vals[key] = int(val)
        except ValueError:
            raise ConfigError(f"--run {text!r}: {key}={val!r} is not an integer") from None
    if "size" not in vals:
        raise ConfigError(f"--run {text!r}: size=N is required")
    size, overlap = vals["size"], vals.get("overlap", 0)
    if size <= 0 or overlap < 0 or overlap >= size:
        raise ConfigError(f"--run {text!r}: need size > 0 and 0 <= overlap < size")
    return RunSpec(size, overlap, m.group("path"))


def recall_values(qrels: Any, run: Any, k: int) -> tuple[np.ndarray, int]:
    """Per-query ``R@k`` of the scorable queries (at least one relevant document) and the
    number of those the run has no ranking for (scored 0)."""
    from kg_rageval.families.retrieval.measures import compute, scored_mask

    pq = compute(qrels, run, [f"R@{k}"])
    name = str(pq.specs[0])
    mask = scored_mask(pq, pq.specs[0], "default")
    return np.asarray(pq.values[name], dtype=float)[mask], int(pq.ranked.missing[mask].sum())


def sweep(
    qrels: Any,
    runs: Sequence[tuple[RunSpec, Any]],
    *,
    k: int = 10,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Sweep:
    """Recall@k with a bootstrap CI per ``(spec, run)`` and the plateau size (module docstring)."""
    from kg_rageval.families.retrieval.compare import bootstrap_ci

    if not runs:
        raise ConfigError("chunking sweep: give at least one --run")
    seen: dict[tuple[int, int], str] = {}
    points = []
    for spec, run in runs:
        key = (spec.size, spec.overlap)
        if key in seen:
            raise ConfigError(
                f"chunking sweep: size={spec.size},overlap={spec.overlap} given twice ({seen[key]}, {spec.path})"
            )
        seen[key] = spec.path
        vals, n_missing = recall_values(qrels, run, k)
        if not len(vals):
            raise MissingEvidence(f"chunking sweep: no qrels query with a relevant document ({spec.path})")
        points.append(
            SweepPoint(
                spec.size,
                spec.overlap,
                spec.path,
                float(vals.mean()),
                bootstrap_ci(vals, n_resamples=n_resamples, level=level, seed=seed),
                len(vals),
                n_missing,
            )
        )
    points.sort(key=lambda p: (p.size, p.overlap))
    best = min(points, key=lambda p: (-p.recall, p.size, p.overlap))
    by_size: dict[int, float] = {}
    for p in points:
        by_size[p.size] = max(by_size.get(p.size, -1.0), p.recall)
    plateau = min(s for s, r in by_size.items() if r >= best.ci[0])
    return Sweep(k, level, n_resamples, seed, tuple(points), best, plateau, by_size)


def sweep_files(
    qrels_path: str | Path,
    specs: Sequence[RunSpec],
    **kw: Any,
) -> Sweep:
    """:func:`sweep` of runs read from files (TREC or ranx JSON, sniffed) against a qrels file."""
    from kg_rageval.families.retrieval.trec import load_qrels, load_run

    qrels = load_qrels(qrels_path)
    runs = []
    for s in specs:
        if not Path(s.path).is_file():
            raise InputError(f"--run {s.path}: no such file")
        runs.append((s, load_run(s.path, dedupe=True)))
    return sweep(qrels, runs, **kw)


__all__ = ["RunSpec", "Sweep", "SweepPoint", "parse_run_spec", "recall_values", "sweep", "sweep_files"]
