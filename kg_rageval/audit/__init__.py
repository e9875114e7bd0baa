"""The release gate: run every metric family over one ontology, decide gates, write reports.

Public API: :mod:`kg_rageval.audit.gates` (``Gate``, ``parse_gate``, ``evaluate_gates``),
:func:`kg_rageval.audit.config.load_config`, :func:`kg_rageval.audit.runner.run_audit`.
Submodules are imported on use so ``import kg_rageval.audit`` stays cheap.
"""

from kg_rageval.audit.gates import Gate, GateResult, evaluate_gates, parse_gate, parse_gates

__all__ = ["Gate", "GateResult", "evaluate_gates", "parse_gate", "parse_gates"]
