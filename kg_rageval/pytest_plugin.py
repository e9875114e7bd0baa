"""pytest plugin: release gates as tests (entry point ``pytest11`` → ``kg_rageval``).

It loads in every pytest run of anyone who installs kg-rageval, so this module imports only the
standard library and pytest; kg-rageval's audit and NumPy are imported when a gate is checked.

* :func:`assert_gates` (also the ``assert_gates`` fixture)::

      from kg_rageval.pytest_plugin import assert_gates
      assert_gates(evaluation, {"hierarchical_f1": ">= 0.8", "recall@10": ">= 0.85"},
                   ontology=onto)

  ``report_or_metrics`` may be an ``Evaluation`` (or a list of them), an audit ``AuditResult``,
  an audit JSON report / ``Evaluation.to_dict()`` dict, or a plain ``{metric: Metric | number |
  None}`` mapping. ``gates`` is ``{metric: "OP threshold"}``, a list of full gate expressions
  (``"ci_low(mrr) >= 0.5"``, ``"hierarchical_f1[node:TA0006] >= 0.7"``) or one expression,
  parsed by :func:`kg_rageval.contract.gates.parse_gate` (the audit's grammar; every metric
  alias is accepted: ``recip_rank``, ``ndcg_cut_10``, ``P(rel=2)@10``). Any gate that fails **or lacks
  evidence** (metric absent, empty denominator, no interval) raises :class:`GateFailure` (an
  ``AssertionError``) listing every such gate with its observed value and reason, and — when
  per-node evidence is available (an Evaluation with ``ontology=``, an audit result or report)
  — its worst ontology branches: the branches driving the failure, ranked as the audit ranks
  them (:func:`kg_rageval.audit.pernode.branch_impact`: impact ``w·(V − v)``, the branch's
  weight times how much worse than the global value it is; the root, branches as bad as the
  whole and branches without a value are no drivers; ties: deeper first, then id).

* ``@pytest.mark.kg_rageval_audit("audit.toml")``: after the test body passes, runs the audit
  described by the config (a path relative to the test file, else to the rootdir) and fails the
  test with the failing gates and their worst branches. The result is kept on
  ``item.kg_rageval_audit_result``. The ``kg_audit`` fixture runs an audit on demand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

MARKER = "kg_rageval_audit"
TOP_BRANCHES = 5


class GateFailure(AssertionError):
    """Some gates failed or lacked evidence; ``results`` holds every GateResult, ``failed``
    the non-passing ones, ``branches`` the worst branches per failed gate text."""

    def __init__(self, message: str, results: list, failed: list, branches: dict):
        super().__init__(message)
        self.results = results
        self.failed = failed
        self.branches = branches


# ---------------------------------------------------------------------- gate texts
def _gate_texts(gates: Mapping[str, str] | Iterable[str] | str) -> list[str]:
    if isinstance(gates, str):
        return [gates]
    if isinstance(gates, Mapping):
        out = []
        for metric, cond in gates.items():
            cond = str(cond).strip()
            out.append(f"{metric} {cond}")
        return out
    return [str(g) for g in gates]


# ---------------------------------------------------------------------- evidence
class _Evidence:
    """Flat metrics plus what is known per node (for the worst-branch listing)."""

    def __init__(
        self,
        metrics: dict,
        *,
        evaluations: list | None = None,
        ontology: Any = None,
        nodes: Mapping[str, Any] | None = None,
        families: dict[str, list] | None = None,
    ):
        self.metrics = metrics
        self.evaluations = evaluations or []
        self.ontology = ontology
        self.nodes = nodes
        self.families = families


def _as_metric(name: str, v: Any):
    from kg_rageval.results.metric import Metric

    if isinstance(v, Metric):
        return v
    if v is None:
        return Metric(name, None, missing="no value reported")
    if isinstance(v, Mapping):
        ci = v.get("ci")
        value = v.get("value")
        rows = v.get("rows")  # the count a gate's minimum of rows reads, as the audit wrote it
        return Metric(
            name,
            None if value is None else float(value),
            v.get("numerator"),
            v.get("denominator"),
            v.get("missing") if value is None else None,
            tuple(ci) if ci is not None else None,
            int(rows) if isinstance(rows, (int, float)) and not isinstance(rows, bool) else None,
        )
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"metric {name!r}: expected a Metric, a number, None or a metric dict, got {v!r}")
    return Metric(name, float(v))


def _is_evaluation(x: Any) -> bool:
    return hasattr(x, "family") and hasattr(x, "stats") and hasattr(x, "metrics") and hasattr(x, "rollup")


def _family_of(ev: Any) -> str:
    from kg_rageval.scoring import family_of_member

    return family_of_member(ev.family.name) or ev.family.name


def _evidence(obj: Any, ontology: Any) -> _Evidence:
    if _is_evaluation(obj):
        obj = [obj]
    if (
        isinstance(obj, Mapping)
        and hasattr(obj, "family")
        and obj
        and all(_is_evaluation(e) for e in obj.values())
    ):
        return _Evidence(
            {},
            evaluations=list(obj.values()),
            ontology=ontology,
            families={getattr(obj, "family"): list(obj.values())},  # noqa: B009 - an EvaluationSet, typed as a Mapping
        )
    if isinstance(obj, (list, tuple)) and obj and all(_is_evaluation(e) for e in obj):
        fams: dict[str, list] = {}
        for ev in obj:
            fams.setdefault(_family_of(ev), []).append(ev)
        return _Evidence({}, evaluations=list(obj), ontology=ontology, families=fams)
    if hasattr(obj, "gate_results") and hasattr(obj, "metrics"):  # an AuditResult
        return _Evidence(
            dict(obj.metrics), ontology=getattr(obj, "ontology", ontology), nodes=getattr(obj, "nodes", None)
        )
    if isinstance(obj, Mapping):
        if isinstance(obj.get("metrics"), Mapping):  # a report dict
            nodes = obj.get("nodes") if isinstance(obj.get("nodes"), Mapping) else None
            return _Evidence(
                {k: _as_metric(k, v) for k, v in obj["metrics"].items()}, nodes=nodes, ontology=ontology
            )
        return _Evidence({k: _as_metric(k, v) for k, v in obj.items()}, ontology=ontology)
    raise TypeError(
        "assert_gates needs an Evaluation, a list of Evaluations, an EvaluationSet, an AuditResult, a report "
        f"dict or a {{metric: value}} mapping, not {type(obj).__name__}"
    )


def _canonical(name: str, present: Mapping[str, Any], scope: list[str] | None) -> str:
    """The key a gate's metric is found under: as written when present, else its canonical
    name from the metric registry (``nDCG@10`` finds ``retrieval.ndcg@10``); a name the
    registry does not know stays as written (a plain mapping may use any names)."""
    from kg_rageval.base.errors import ConfigError
    from kg_rageval.scoring import resolve_metric

    if name in present:
        return name
    try:
        mn = resolve_metric(name, scope=scope)
    except ConfigError:
        return name
    return mn.key if mn.family is not None else name


def _decide_from_evaluations(parsed: list, ev_: _Evidence, bootstrap: Any) -> dict:
    """``{gate key: Metric}`` computed exactly as the audit does (:mod:`kg_rageval.audit.evidence`)."""
    from kg_rageval.audit.evidence import MetricIndex, gate_metrics
    from kg_rageval.audit.families import FamilyRun
    from kg_rageval.scoring import resolve_metric

    runs = {f: FamilyRun(f, "ran", evaluations=evs) for f, evs in (ev_.families or {}).items()}
    names = {g.metric: resolve_metric(g.metric, scope=list(runs)) for g in parsed}
    index = MetricIndex(runs, names)
    _check_slices(parsed, ev_)
    return {g.key: m for g, m in zip(parsed, gate_metrics(parsed, index, ev_.ontology, bootstrap, {}))}


def _check_slices(parsed: list, ev_: _Evidence) -> None:
    """A slice name or value no evaluation row has is a typo: ConfigError, as in the audit."""
    from kg_rageval.base.errors import ConfigError
    from kg_rageval.contract import did_you_mean, parse_scope
    from kg_rageval.records import slice_text

    values: dict[str, set[str]] = {}
    for ev in ev_.evaluations:
        for k, col in ev.keys.items():
            if k.startswith("slice:"):
                values.setdefault(k[6:], set()).update(
                    t for t in map(slice_text, col.tolist()) if t is not None
                )
    for g in parsed:
        if not g.scope or not g.scope.startswith("slice:"):
            continue
        _, name, scope_value = parse_scope(g.scope)
        value = scope_value or ""
        if name not in values:
            raise ConfigError(f"{g}: no row has the slice {name!r}{did_you_mean(name, values)}")
        if value not in values[name]:
            raise ConfigError(
                f"{g}: no row has {name}={value!r}{did_you_mean(value, values[name])}; values: "
                + ", ".join(sorted(values[name])[:20])
            )


# ---------------------------------------------------------------------- branches
def _branches_from_evaluations(gate: Any, ev_: _Evidence, top: int) -> list[dict]:
    onto = ev_.ontology
    if onto is None or gate.scope is not None or gate.use != "value":
        return []
    out = []
    for ev in ev_.evaluations:
        name = gate.metric.split(".", 1)[1] if gate.metric.startswith(ev.family.name + ".") else gate.metric
        if "gold_node" not in ev.keys:
            continue
        total = ev.metrics().get(name)
        if total is None or total.value is None:
            continue
        import numpy as np

        from kg_rageval.audit.pernode import branch_impact, node_metric

        got = node_metric(ev, onto, name)  # the metric on every node at once
        if got is None:
            continue
        kept, n_rows, values, den = got
        defined = np.isfinite(values) & (kept != onto.index(onto.root_id))
        weight = np.where(np.isnan(den) | (den == 0), n_rows, den)
        with np.errstate(invalid="ignore"):
            fails = defined & ~np.asarray(gate.compare(np.where(defined, values, 0.0)), dtype=bool)
        impact = branch_impact(
            np.where(defined, values, 0.0), weight, float(total.value), gate.threshold, gate.op
        )["impact"]
        for j in np.flatnonzero(fails & (impact > 1e-12)).tolist():  # only the worst are ranked
            i = int(kept[j])
            nid = onto.ids[i]
            out.append(
                _branch(
                    gate,
                    nid,
                    onto.label(nid),
                    int(onto.depth_min[i]),
                    int(round(float(n_rows[j]))),
                    float(values[j]),
                    float(weight[j]),
                    total.value,
                )
            )
    return _worst(out, top)


def _branches_from_nodes(gate: Any, ev_: _Evidence, top: int) -> list[dict]:
    if not ev_.nodes or gate.scope is not None or gate.use != "value":
        return []
    total = ev_.metrics.get(gate.metric)
    global_value = getattr(total, "value", total)
    if not isinstance(global_value, (int, float)):
        return []
    root = getattr(ev_.ontology, "root_id", None) if ev_.ontology is not None else None
    out = []
    for nid, d in ev_.nodes.items():
        if nid == root or d.get("depth") == 0:
            continue
        mets = d.get("metrics", {})
        keys = [k for k in mets if k == gate.metric or k.endswith("." + gate.metric)]
        if len(keys) != 1 or mets[keys[0]] is None:
            continue
        fam = keys[0].split(".", 1)[0]
        n = d.get("n", {})
        n = n.get(fam, 0) if isinstance(n, Mapping) else int(n or 0)
        out.append(
            _branch(
                gate, nid, d.get("label"), d.get("depth", 0), n, mets[keys[0]], float(n), float(global_value)
            )
        )
    return _worst(out, top)


def _branch(gate, nid, label, depth, n, value, weight, global_value) -> dict:
    from kg_rageval.audit.pernode import branch_impact

    ok = gate.compare(float(value))
    impact = branch_impact(float(value), weight, float(global_value), gate.threshold, gate.op)["impact"]
    return {
        "node": nid,
        "label": label,
        "depth": depth,
        "n": n,
        "value": float(value),
        "status": "pass" if ok else "fail",
        "impact": impact,
    }


def _worst(rows: list[dict], top: int) -> list[dict]:
    bad = [r for r in rows if r["status"] != "pass" and r["impact"] > 1e-12]
    bad.sort(key=lambda r: (-r["impact"], -r["depth"], r["node"]))
    return bad[:top]


def _fmt_branch(b: dict) -> str:
    label = f" {b['label']!r}" if b.get("label") else ""
    value = "missing" if b["value"] is None else f"{b['value']:.4f}"
    return f"{b['node']}{label} (depth {b['depth']}, n={b['n']}): {value}"


# ---------------------------------------------------------------------- public API
def check_gates(
    report_or_metrics: Any,
    gates: Mapping[str, str] | Iterable[str] | str,
    *,
    ontology: Any = None,
    top: int = TOP_BRANCHES,
    bootstrap: Any = None,
    min_rows: Any = None,
) -> tuple[list, dict]:
    """Decide ``gates`` without raising: ``(results, worst branches per failed gate text)``.

    On Evaluations the gates are decided exactly as the audit decides them (the same metric
    resolution, scopes and bootstrap; ``bootstrap`` defaults to the audit's defaults). A
    misspelt metric name or slice raises :class:`~kg_rageval.base.errors.ConfigError` with a "did
    you mean". ``min_rows``: the audit config's ``min_rows`` (an int, a mapping ``{default,
    metrics}`` or a :class:`~kg_rageval.contract.gates.RowMinimum`; default 30 rows, 59 for a
    p95): a gate on fewer rows is missing evidence, as in the audit."""
    from kg_rageval.audit.config import BootstrapConfig
    from kg_rageval.audit.gates import evaluate_gates
    from kg_rageval.base.errors import ConfigError
    from kg_rageval.contract.gates import parse_gate
    from kg_rageval.scoring import load_entry_points

    load_entry_points()  # plugin families resolve and trace their members back like built-in ones
    parsed = [parse_gate(t) for t in _gate_texts(gates)]
    if not parsed:
        raise ConfigError("assert_gates: no gates given (an empty gate set proves nothing)")
    ev_ = _evidence(report_or_metrics, ontology)
    if ev_.families is not None:
        metrics = _decide_from_evaluations(parsed, ev_, bootstrap or BootstrapConfig())
    else:
        metrics = {}
        for g in parsed:
            key = _canonical(g.metric, ev_.metrics, None)
            full = f"{key}[{g.scope}]" if g.scope else key
            m = ev_.metrics.get(full if full in ev_.metrics else g.key)
            if m is not None:
                metrics[g.key] = m
    results = evaluate_gates(parsed, metrics, min_rows=_row_minimum(min_rows))
    branches: dict[str, list[dict]] = {}
    for r in results:
        if r.status == "pass":
            continue
        rows = (
            _branches_from_evaluations(r.gate, ev_, top)
            if ev_.evaluations
            else _branches_from_nodes(r.gate, ev_, top)
        )
        branches[str(r.gate)] = rows
    for ev in ev_.evaluations or ():  # the per-record views the bootstrap and branches read
        if hasattr(ev, "drop_record_stats"):
            ev.drop_record_stats()
    return results, branches


def _row_minimum(min_rows: Any) -> Any:
    """``min_rows`` as the audit reads it (:class:`~kg_rageval.audit.config.MinRowsConfig`)."""
    from kg_rageval.audit.config import MinRowsConfig
    from kg_rageval.base.errors import ConfigError
    from kg_rageval.contract.gates import RowMinimum

    if min_rows is None or isinstance(min_rows, RowMinimum):
        return min_rows
    if isinstance(min_rows, int) and not isinstance(min_rows, bool):
        min_rows = {"default": min_rows}
    try:
        return MinRowsConfig.model_validate(min_rows).rule()
    except Exception as exc:  # pydantic's ValidationError: a bad argument, said in one line
        raise ConfigError(f"assert_gates: min_rows {min_rows!r} is not a minimum of rows ({exc})") from None


def format_failures(
    results: list, branches: Mapping[str, list[dict]], *, title: str = "kg-rageval gates"
) -> str:
    failed = [r for r in results if r.status != "pass"]
    lines = [f"{title}: {len(failed)} of {len(results)} gate(s) not passed"]
    for r in failed:
        lines.append(f"  {r.status.upper():<7} {r.gate}: {r.reason}")
        rows = branches.get(str(r.gate)) or []
        if rows:
            lines.append("          worst branches:")
            lines.extend(f"            - {_fmt_branch(b)}" for b in rows)
    return "\n".join(lines)


def assert_gates(
    report_or_metrics: Any,
    gates: Mapping[str, str] | Iterable[str] | str,
    *,
    ontology: Any = None,
    top: int = TOP_BRANCHES,
    min_rows: Any = None,
) -> list:
    """Raise :class:`GateFailure` unless every gate passes (missing evidence fails, and so does a
    gate on fewer rows than ``min_rows``: see :func:`check_gates`); return the GateResults
    otherwise. See the module docstring for the accepted inputs."""
    __tracebackhide__ = True
    results, branches = check_gates(report_or_metrics, gates, ontology=ontology, top=top, min_rows=min_rows)
    failed = [r for r in results if r.status != "pass"]
    if failed:
        raise GateFailure(format_failures(results, branches), results, failed, branches)
    return results


def run_audit_config(path: str | Path):
    """Load the audit config at ``path`` and run it (no progress bars)."""
    from kg_rageval.audit.config import load_config
    from kg_rageval.audit.runner import run_audit

    return run_audit(load_config(path), progress=False)


def audit_failures(result: Any, *, top: int = TOP_BRANCHES) -> str | None:
    """``None`` when the audit passed, else the failure listing with worst branches."""
    if result.passed:
        return None
    branches: dict[str, list[dict]] = {}
    for d in result.drivers:
        branches.setdefault(d["gate"], [])
        if len(branches[d["gate"]]) < top:
            branches[d["gate"]].append({**d, "value": d.get("value")})
    return format_failures(result.gate_results, branches, title=f"kg-rageval audit {result.config.name!r}")


# ---------------------------------------------------------------------- pytest hooks
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(config): run the kg-rageval audit described by the config file after the test "
        "body and fail the test when a gate fails or lacks evidence",
    )


def _resolve_config(item: pytest.Item, value: Any) -> Path:
    p = Path(value)
    if p.is_absolute():
        return p
    here = Path(str(item.path)).parent / p
    if here.exists():
        return here
    return Path(str(item.config.rootpath)) / p


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    result = yield  # the test body; a failure there propagates unchanged
    marker = item.get_closest_marker(MARKER)
    if marker is not None:
        __tracebackhide__ = True
        if not marker.args:
            raise pytest.UsageError(f"@pytest.mark.{MARKER} needs the audit config path")
        path = _resolve_config(item, marker.args[0])
        if not path.exists():
            raise AssertionError(f"{MARKER}: audit config {path} does not exist")
        audit = run_audit_config(path)
        item.kg_rageval_audit_result = audit  # type: ignore[attr-defined]
        message = audit_failures(audit, top=int(marker.kwargs.get("top", TOP_BRANCHES)))
        if message:
            raise GateFailure(
                message, list(audit.gate_results), [r for r in audit.gate_results if r.status != "pass"], {}
            )
    return result


@pytest.fixture(name="assert_gates")
def _assert_gates_fixture():
    """The :func:`assert_gates` function, for tests that prefer a fixture to an import."""
    return assert_gates


@pytest.fixture
def kg_audit():
    """``kg_audit(path) -> AuditResult``: run an audit config from a test."""
    return run_audit_config
