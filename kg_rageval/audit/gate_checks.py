"""Checking the gates' metric names and scopes: a typo is an invalid config (exit 2), never missing evidence.

:func:`resolve_gates` resolves every gate's metric through the metric registry and checks its
slice or node before any family runs; :func:`_check_gate_metrics` rejects, once the families
ran, a gate on a metric its family does not produce.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kg_rageval.audit.config import AuditConfig
from kg_rageval.audit.evidence import MetricIndex
from kg_rageval.audit.family_runs import configured_families, family_options
from kg_rageval.audit.gates import Gate
from kg_rageval.base.errors import ConfigError
from kg_rageval.contract import MetricName, did_you_mean
from kg_rageval.scoring import REGISTRY, resolve_metric


def resolve_gates(
    gates: Iterable[Gate],
    config: AuditConfig,
    records: Iterable[dict],
    ontology: Any,
    *,
    slices: Mapping[str, set[str]] | None = None,
) -> dict[str, MetricName]:
    """Resolve every gate's metric name through the metric registry and check its scope,
    before any family runs (a streamed audit: once the records are read): an unknown metric
    (or one the family options do not produce), an unknown slice name or value, or a node the
    ontology lacks is an invalid config (exit 2) with a "did you mean" — never missing
    evidence, which would fail every audit for a typo. A slice the gate's family declares
    for its rows (:attr:`~kg_rageval.scoring.Scorer.row_slices`) is accepted with any value.
    ``slices``: the records' slice values
    (:func:`~kg_rageval.records.slice_values`) when ``records`` are not given.
    Returns ``{gate metric text: MetricName}``."""
    from kg_rageval.records import slice_values

    fams = configured_families(config)
    options = {f: family_options(config, f) for f in fams}
    values = slice_values(records) if slices is None else slices
    names: dict[str, MetricName] = {}
    bad: list[str] = []
    for g in gates:
        try:
            names.setdefault(g.metric, resolve_metric(g.metric, scope=fams, options=options))
        except ConfigError as exc:
            bad.append(f"{g}: {exc}")
            continue
        if not g.scope:
            continue
        kind, _, rest = g.scope.partition(":")
        if kind == "node":
            node = rest.strip()
            if node not in ontology:
                hint = ontology.suggest(node)
                bad.append(f"{g}: node {node!r} is not in the ontology" + (f" ({hint})" if hint else ""))
        else:
            name, _, value = rest.partition("=")
            name, value = name.strip(), value.strip()
            family = names[g.metric].family
            if family in REGISTRY and name in REGISTRY[family].row_slices:
                continue  # a slice of the family's rows: its values are known once scored
            if name not in values:
                bad.append(
                    f"{g}: no record has the slice {name!r}{did_you_mean(name, values)}"
                    + (f"; slices: {', '.join(sorted(values))}" if values else "; the records have no slices")
                )
            elif value not in values[name]:
                known = sorted(values[name])
                bad.append(
                    f"{g}: no record has {name}={value!r}{did_you_mean(value, known)}; values: "
                    + ", ".join(known[:20])
                    + (" ..." if len(known) > 20 else "")
                )
    if bad:
        raise ConfigError(
            f"{len(bad)} invalid gate{'s' if len(bad) > 1 else ''}:\n  " + "\n  ".join(bad),
            source=config.source,
        )
    return names


def _check_gate_metrics(gates: Iterable[Gate], index: MetricIndex, config: AuditConfig) -> None:
    """A gate on a metric name that no family can produce is an invalid config (exit 2), not
    missing evidence. Decided only where it is knowable: the gate names its family
    (``fam.metric``) and that family ran. A bare name stays ``missing`` when nothing produces it
    (its family may simply not be configured, which is missing evidence)."""
    import difflib

    bad = []
    for g in gates:
        name = g.metric
        mn = index.name_of(name)
        if mn.delta or mn.qualified in index.by_name or (mn.family is None and mn.metric in index.bare):
            continue
        fam = mn.family
        if (
            fam is not None
            and fam in index.runs
            and index.runs[fam].status == "ran"
            and not REGISTRY[fam].metrics
        ):
            close = difflib.get_close_matches(name, list(index.by_name), n=3)
            hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
            bad.append(f"{g}: no family produces metric {name!r}{hint}")
    if bad:
        raise ConfigError(
            f"{len(bad)} gate{'s' if len(bad) > 1 else ''} on unknown metrics:\n  " + "\n  ".join(bad),
            source=config.source,
        )
