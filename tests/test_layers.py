"""The folders are the floors: each top-level folder of the package is one layer, and imports
run only downwards (``docs/architecture.md``, "Floors").

Every import counts: at module level, inside functions, under ``TYPE_CHECKING``, and the
``"module:function"`` strings the declarations import lazily. A package ``__init__`` that only
re-exports its own modules is its folder's front door and does not tie the folder to itself.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kg_rageval"

FLOORS: tuple[str, ...] = (
    "__init__",  # the package root: its version, nothing else
    "base",  # errors, limits, bounded readers, hashing, formats, redaction, spooling
    "contract",  # the vocabulary of declarations: Param, MetricSpec, MetricName, id options
    "records",  # the record format: reader, field accessors, row keys, reason codes
    "ontology",  # the compiled ontology, its loaders, the id resolver
    "results",  # Evaluation, roll-ups, bootstraps, column stores
    "families",  # one package per metric family, each with its inputs
    "scoring",  # declarations, the registry, metric-name resolution, bind and stream
    "drift",  # release diffs, re-basing, per-branch stability (scores through scoring)
    "integrations",  # Dask, Neo4j write-back, ArcadeDB
    "interop",  # readers of RAGAS/DeepEval/HF/TREC RAG/BEIR/Phoenix data, joins, exports
    "audit",  # inputs, run, baseline, gates, reports
    "testset",  # golden sets from the ontology (plans from the audit's coverage)
    "monitor",  # production monitoring: windows, store, drift, review queues, alerts
    "demo",  # the bundled demo system
    "pytest_plugin",  # assert_gates and the pytest plugin
    "cli",  # the command line
)
"""The floors, lowest first. A module may import its own floor and any floor below it."""

LOAD_STRING = re.compile(r"^(kg_rageval(?:\.\w+)+):\w+$")


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for p in PACKAGE.rglob("*.py"):
        parts = list(p.relative_to(PACKAGE.parent).with_suffix("").parts)
        init = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if init else parts)] = (p, init)
    return mods


MODULES = _modules()


def _imports(module: str) -> set[str]:
    """Every module of the package that ``module`` imports (or names in a load string)."""
    path, init = MODULES[module]
    pkg = module if init else module.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [target] + [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = LOAD_STRING.match(node.value)
            targets = [m.group(1)] if m else []
        out.update(t for t in targets if t in MODULES and t != module)
    return out


IMPORTS = {m: _imports(m) for m in MODULES}


def floor_of(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def test_every_top_level_folder_and_module_is_a_declared_floor():
    tops = {
        p.stem if p.is_file() else p.name
        for p in PACKAGE.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"
    }
    assert tops == set(FLOORS), (
        f"undeclared: {sorted(tops - set(FLOORS))}, gone: {sorted(set(FLOORS) - tops)}"
    )


def test_imports_run_only_downwards():
    rank = {f: i for i, f in enumerate(FLOORS)}
    upward = sorted(
        f"{m} -> {t}" for m, ts in IMPORTS.items() for t in ts if rank[floor_of(t)] > rank[floor_of(m)]
    )
    assert not upward, "imports from a lower floor to a higher one:\n" + "\n".join(upward)


def _find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if state.get(w) == 1:
                return stack[stack.index(w) :] + [w]
            if w not in state and (found := visit(w)):
                return found
        stack.pop()
        state[v] = 2
        return None

    for v in sorted(edges):
        if v not in state and (found := visit(v)):
            return found
    return None


def test_no_import_circle_between_modules():
    """No two modules import each other, directly or through others (re-exports of a package
    ``__init__`` aside)."""
    edges = {m: {t for t in ts if not MODULES[t][1]} for m, ts in IMPORTS.items() if not MODULES[m][1]}
    cycle = _find_cycle(edges)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_no_import_circle_between_folders():
    """Folders (``families/generation``, ``ontology/loaders``, …) form no circle either: no
    folder imports one that imports it back (a package ``__init__`` re-exporting its own
    modules aside)."""

    def folder(m: str) -> str:  # a module at the package root (pytest_plugin) is a floor of its own
        return m if MODULES[m][1] or m.count(".") == 1 else m.rsplit(".", 1)[0]

    edges: dict[str, set[str]] = defaultdict(set)
    for m, ts in IMPORTS.items():
        if MODULES[m][1]:
            continue
        for t in ts:
            if folder(t) != folder(m):
                edges[folder(m)].add(folder(t))
    cycle = _find_cycle(edges)
    assert cycle is None, "folder circle: " + " -> ".join(cycle or [])


def test_the_checks_see_what_they_claim():
    """The graph reads function-level imports and load strings (so the checks above can fail)."""
    assert "kg_rageval.families.hierarchy" in IMPORTS["kg_rageval.scoring.builtin"]  # a load string
    assert (
        "kg_rageval.families.retrieval.corpus" in IMPORTS["kg_rageval.families.retrieval.inputs"]
    )  # in a function
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


LARGE_MODULES: dict[str, str] = {
    "kg_rageval.ontology.builder": "the compiler of the ontology index: one builder's state, checked, numbered and closed",
    "kg_rageval.ontology.loaders.rdf": "the RDF/OWL/SKOS loader: one reader of one family of formats and its vocabulary",
    "kg_rageval.families.linking.dictionary": "the dictionary linker: its automaton and the matching over it are one structure",
    "kg_rageval.families.linking.evaluate": "entity-linking evaluation: one NIL-aware alignment of mentions and its counts",
    "kg_rageval.families.conformance.metrics": "conformance of one structured output: schema, vocabulary, status, domain/range",
    # over 800 once ruff format wrapped the compact code (0.2.0); each is still one idea
    "kg_rageval.families.hierarchy.family": "the hierarchy family: one resolution of gold/pred pairs and its error taxonomy",
    "kg_rageval.families.relations.score": "the relations family: triples, answer sets and claims against one knowledge graph",
    "kg_rageval.scoring.builtin": "the built-in declarations: data, one Scorer per family (no logic)",
    # over 800 with #33's NumPy-only TREC path and the retrieval memos; a split by idea is pending
    "kg_rageval.families.retrieval.runs": "qrels and runs: one document table, its vocabularies and the run-reading kernels' callers",
    "kg_rageval.families.retrieval.trec": "TREC files: the compiled and the NumPy-only reader of one line format",
    "kg_rageval.families.retrieval.score": "the retrieval family over records: one pass from record fields to ranked lists",
}
"""Modules allowed over :data:`MAX_LINES`, each with the one idea that keeps it whole."""

MAX_LINES = 800


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not MODULES[m][1]))
def test_module_size(module):
    n = len(MODULES[module][0].read_text().splitlines())
    if module in LARGE_MODULES:
        assert n > MAX_LINES, f"{module} is {n} lines now: take it off LARGE_MODULES"
    else:
        assert n <= MAX_LINES, (
            f"{module} has {n} lines (over {MAX_LINES}): split it by idea, or name its one idea in LARGE_MODULES"
        )


def test_test_file_basenames_are_unique():
    """pytest imports test modules by basename (rootdir conftest, no packages): two
    ``test_drift.py`` in different folders stop the whole run at collection."""
    names = [p.name for p in (PACKAGE.parent / "tests").rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []
