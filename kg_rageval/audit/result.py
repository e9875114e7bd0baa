"""The result of an audit (what reports render); its own module so that the runner, the
manifest and the report writers import it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kg_rageval.audit.config import AuditConfig
from kg_rageval.audit.families import FamilyRun
from kg_rageval.audit.gates import GateResult
from kg_rageval.results.metric import Metric


@dataclass
class AuditResult:
    """Everything an audit decided and measured; reports render this object."""

    config: AuditConfig
    ontology: Any
    n_records: int
    families: dict[str, FamilyRun]
    metrics: dict[str, Metric]
    gate_results: list[GateResult]
    slices: dict[str, dict[str, Any]] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    drivers: list[dict[str, Any]] = field(default_factory=list)
    failing: list[dict[str, Any]] = field(default_factory=list)
    coverage: dict[str, Any] = field(default_factory=dict)
    relations: dict[str, dict[str, int]] = field(default_factory=dict)
    exclusions: dict[str, Any] = field(default_factory=dict)
    category_diagnosis: dict[str, Any] = field(default_factory=dict)
    """The retrieval family's diagnosis of its false exclusions (``{}`` without a filter replay)."""
    baseline: dict[str, Any] | None = None
    counts: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    testset: dict[str, Any] | None = None
    """The check of the cited test-set manifest (:func:`~.testset_pin.check_testset_pin`);
    ``None`` when the config cites none."""
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    chunk_size: int | None = None
    """Records per chunk when the audit streamed its records file (:mod:`.stream`); ``None``: the
    records were held in one list. Not in the reports (they are the same either way)."""

    @property
    def passed(self) -> bool:
        return bool(self.gate_results) and all(r.status == "pass" for r in self.gate_results)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def status_counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "missing": 0}
        for r in self.gate_results:
            out[r.status] += 1
        return out
