"""The metric-family registry of the audit: ``name -> "module:function"``, imported lazily.

Each entry says which record section is the family's evidence and which extra inputs its
scoring function takes (``corpus``, ``spec``, ``judgments``; passed by keyword when the
function's signature names them). An adapter normalises whatever the function returns — one
:class:`~kg_rageval.evaluation.Evaluation`, a list/tuple/dict of them, or a small result object
holding several as attributes — into a list of Evaluations.

A family whose module cannot be imported, or whose section is absent from every record, is
*not run*: the runner reports its gates as missing evidence, never as passing.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..evaluation import Evaluation


@dataclass(frozen=True)
class FamilySpec:
    """How the audit runs one metric family.

    ``sections``: record keys whose presence is the family's evidence (any of them).
    ``extra``: keyword inputs offered to the function when its signature accepts them.
    ``requires``: inputs without which the family cannot run (e.g. retrieval needs a corpus
    to replay filters; missing → the family is not run and its gates are missing).
    """

    name: str
    target: str
    sections: tuple[str, ...]
    extra: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    description: str = ""
    loaders: tuple[tuple[str, str], ...] = ()
    """``(input name, "module:function")``: the family's own reader for that input file, called
    on its path (else the audit's generic reading — JSONL records, parsed JSON/YAML — is passed)."""

    def load(self) -> Callable[..., Any]:
        module, _, func = self.target.partition(":")
        return getattr(importlib.import_module(module), func)


REGISTRY: dict[str, FamilySpec] = {}


def register_family(spec: FamilySpec) -> None:
    """Add or replace a family (tests register stub families this way)."""
    REGISTRY[spec.name] = spec


def unregister_family(name: str) -> None:
    REGISTRY.pop(name, None)


for _spec in (
    FamilySpec("hierarchy", "kg_rageval.hierarchy:score_hierarchy", ("labels",),
               description="hierarchical P/R/F1, Wu-Palmer, confusion relations"),
    FamilySpec("linking", "kg_rageval.linking.evaluate:score_linking", ("mentions",),
               description="entity linking F1, NIL precision/recall"),
    FamilySpec("retrieval", "kg_rageval.retrieval:score_retrieval", ("retrieval",),
               extra=("corpus",), description="recall@k, MRR, nDCG, filter false exclusion",
               loaders=(("corpus", "kg_rageval.retrieval.corpus:read_corpus"),)),
    FamilySpec("conformance", "kg_rageval.conformance:score_conformance", ("answer",),
               extra=("spec",), description="schema validity, vocabulary conformance",
               loaders=(("spec", "kg_rageval.conformance.spec:load_spec"),)),
    FamilySpec("generation", "kg_rageval.generation:score_generation", ("answer",),
               extra=("corpus", "judgments"), description="faithfulness, correctness, refusal",
               loaders=(("judgments", "kg_rageval.generation.judgment:load_judgments"),)),
    FamilySpec("provenance", "kg_rageval.provenance:score_provenance", ("answer",),
               extra=("corpus",), requires=("corpus",),
               description="citation completeness, provenance depth",
               loaders=(("corpus", "kg_rageval.provenance.corpus:read_corpus"),)),
    FamilySpec("judge", "kg_rageval.judges:score_judges", ("judges",),
               description="judge calibration vs human labels, PPI, position bias, judge agreement"),
    FamilySpec("system", "kg_rageval.system:score_system", ("system",),
               description="latency quantiles per stage, cost per query, tokens, cache hit rates"),
    FamilySpec("context", "kg_rageval.system:score_context", ("context", "retrieval"),
               description="citation coverage of the context, lost-in-the-middle, compression"),
):
    register_family(_spec)

DETERMINISTIC = ("hierarchy", "linking", "retrieval", "conformance", "provenance")


class FamilyUnavailable(Exception):
    """The family's module is not importable (not installed / not written yet)."""


def load_function(spec: FamilySpec) -> Callable[..., Any]:
    try:
        return spec.load()
    except (ImportError, AttributeError) as exc:
        raise FamilyUnavailable(f"family {spec.name!r} is not available ({spec.target}: {exc})") from None


def family_inputs(spec: FamilySpec, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``inputs`` with each input the family reads itself (``spec.loaders``) re-read from its
    path (``inputs["paths"][name]``) by the family's own reader, when that reader imports."""
    out = dict(inputs)
    paths = inputs.get("paths") or {}
    for name, target in spec.loaders:
        path = paths.get(name)
        if path is None:
            continue
        module, _, func = target.partition(":")
        try:
            reader = getattr(importlib.import_module(module), func)
        except (ImportError, AttributeError):
            continue
        try:
            takes_ontology = "ontology" in inspect.signature(reader).parameters
        except (TypeError, ValueError):
            takes_ontology = False
        out[name] = reader(path, ontology=inputs["ontology"]) if takes_ontology else reader(path)
    return out


def call_family(fn: Callable[..., Any], ontology: Any, records: list, inputs: Mapping[str, Any],
                spec: FamilySpec, options: Mapping[str, Any]) -> Any:
    """Call ``fn(ontology, records, [extra inputs by keyword], **options)``; when the signature
    names ``records`` both are passed by name (so ``score_x(records, ontology)`` works too, and
    a function without an ``ontology`` parameter does not get one).

    An extra input is passed when the signature names it (or takes ``**kwargs`` and the input
    is present); a *positional-only or required* parameter named like an extra is filled too.
    """
    try:
        sig = inspect.signature(fn)
        params = sig.parameters
        var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    except (TypeError, ValueError):  # builtins
        params, var_kw = {}, True
    kwargs: dict[str, Any] = {}
    for name in spec.extra:
        if name in params or (var_kw and inputs.get(name) is not None):
            kwargs[name] = inputs.get(name)
    kwargs.update(options)
    names = [p.name for p in params.values()
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    if "records" in names:  # bind by name: any argument order, ontology optional
        kwargs["records"] = records
        if "ontology" in names:
            kwargs["ontology"] = ontology
        return fn(**kwargs)
    return fn(ontology, records, **kwargs)


def normalize_result(result: Any) -> list[Evaluation]:
    """Every :class:`Evaluation` inside ``result`` (itself, a sequence, a mapping, or the
    attributes of a result object), in a stable order, without duplicates."""
    out: list[Evaluation] = []
    seen: set[int] = set()

    def visit(obj: Any, depth: int) -> None:
        if depth > 3 or obj is None:
            return
        if isinstance(obj, Evaluation):
            if id(obj) not in seen:
                seen.add(id(obj))
                out.append(obj)
            return
        if isinstance(obj, (list, tuple)):
            for o in obj:
                visit(o, depth + 1)
            return
        if isinstance(obj, Mapping):
            for o in obj.values():
                visit(o, depth + 1)
            return
        if isinstance(obj, (str, bytes, int, float)):
            return
        if dataclasses.is_dataclass(obj):
            for f in dataclasses.fields(obj):
                visit(getattr(obj, f.name, None), depth + 1)
            return
        if hasattr(obj, "evaluations"):
            visit(getattr(obj, "evaluations"), depth + 1)
            return
        if hasattr(obj, "__dict__"):
            for o in vars(obj).values():
                visit(o, depth + 1)

    visit(result, 0)
    return out


def has_section(record: Mapping[str, Any], spec: FamilySpec) -> bool:
    return any(record.get(s) is not None for s in spec.sections)


@dataclass
class FamilyRun:
    """What happened to one family in an audit."""

    name: str
    status: str  # "ran" | "unavailable" | "no_evidence" | "error" | "missing_input"
    reason: str = ""
    evaluations: list[Evaluation] = field(default_factory=list)
    n_with_section: int = 0
    seconds: float = 0.0
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def versions(self) -> list[str]:
        return sorted({e.family.qualified_name for e in self.evaluations})
