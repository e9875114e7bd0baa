"""No module outside ``kg_rageval/ontology/`` reads a private attribute of an ontology object
(``docs/architecture.md``, "Floors"): the compiled index offers public, read-only accessors
(``Ontology.id_index``, ``entity_id_index``, ``aliases``, ``KnowledgeGraph.has_predicate``, …).

The check is an AST walk: every ``x._name`` (``x`` not ``self``/``cls``) whose ``_name`` is a
private attribute or method some class in ``kg_rageval/ontology/`` defines is a violation.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "kg_rageval"
ONTOLOGY = PACKAGE / "ontology"


def _private_names() -> set[str]:
    """The ``_``-prefixed (not dunder) attributes and methods the ontology classes define."""
    names: set[str] = set()
    for p in ONTOLOGY.rglob("*.py"):
        for cls in ast.walk(ast.parse(p.read_text())):
            if not isinstance(cls, ast.ClassDef):
                continue
            for node in ast.walk(cls):
                n = None
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = node.name
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    n = node.target.id
                elif (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "self"
                    and isinstance(node.ctx, ast.Store)
                ):
                    n = node.attr
                if n and n.startswith("_") and not n.startswith("__"):
                    names.add(n)
    return names


PRIVATE = _private_names()


def _reads(source: str, where: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in PRIVATE
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            out.append(f"{where}:{node.lineno}: .{node.attr}")
    return out


def test_the_check_knows_the_private_index_names():
    assert {"_index", "_alias_index", "_entity_index", "_instance_index", "_predicate_index"} <= PRIVATE
    sample = "def f(self, ontology):\n    return ontology._index.get('x'), self._index, ontology.graph._predicate_index\n"
    assert sorted(_reads(sample, "s")) == ["s:2: ._index", "s:2: ._predicate_index"]


def test_no_module_outside_ontology_reads_a_private_ontology_attribute():
    bad = [
        r
        for p in sorted(PACKAGE.rglob("*.py"))
        if ONTOLOGY not in p.parents
        for r in _reads(p.read_text(), str(p.relative_to(PACKAGE.parent)))
    ]
    assert not bad, "private ontology attributes read outside kg_rageval/ontology/:\n" + "\n".join(bad)
