"""Ontology concepts named in a text: the dictionary linker used by the generation checks.

Linking is exact label/synonym matching over the ontology:

* When ``kg_rageval.linking.dictionary.DictionaryLinker`` exists (the linking package), it is
  used: ``DictionaryLinker(ontology)`` and its ``find(text)`` (every surface form detected,
  longest first; tokens are runs of letters/digits, case- and diacritic-folded; see
  ``docs/linking.md``). A mention the linker leaves NIL because its form is ambiguous
  contributes all its tied ``candidates``.
* Otherwise a small built-in matcher: text and names are casefolded and split into word tokens
  (``\\w+``); the longest name matching at each position wins (leftmost-longest, no overlaps).
  A name shared by several concepts links to all of them (the ambiguity is the ontology's; both
  sides of every comparison see the same set). The virtual root is never linked.

Either way the result is the *set* of concept ids named in the text; counts and positions are
not used by the generation metrics.
"""

from __future__ import annotations

import re
import weakref
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from ..ontology import Ontology

_TOKEN = re.compile(r"\w+")
_MAX_NAME_TOKENS = 12

ConceptLinker = Callable[[str], frozenset[str]]
"""A linker: text → the set of ontology ids it names."""


class BuiltinDictionaryLinker:
    """Leftmost-longest exact matching of labels and synonyms (see the module docstring)."""

    name = "builtin-dictionary"

    def __init__(self, ontology: "Ontology"):
        from ..ontology import VIRTUAL_ROOT_ID

        self.ontology = ontology
        index: dict[tuple[str, ...], set[str]] = {}
        for i, (label, syns) in enumerate(zip(ontology.labels, ontology.synonyms)):
            node_id = ontology.ids[i]
            if node_id == VIRTUAL_ROOT_ID:
                continue
            for name in ((label,) if label else ()) + tuple(syns):
                toks = tuple(_TOKEN.findall(name.casefold()))
                if toks and len(toks) <= _MAX_NAME_TOKENS:
                    index.setdefault(toks, set()).add(node_id)
        self._index = {k: frozenset(v) for k, v in index.items()}
        self._max = max((len(k) for k in self._index), default=0)

    def __call__(self, text: str) -> frozenset[str]:
        toks = _TOKEN.findall(text.casefold())
        found: set[str] = set()
        i, n = 0, len(toks)
        while i < n:
            for size in range(min(self._max, n - i), 0, -1):
                hit = self._index.get(tuple(toks[i : i + size]))
                if hit:
                    found.update(hit)
                    i += size
                    break
            else:
                i += 1
        return frozenset(found)


class _ExternalLinkerAdapter:
    """Wraps the linking package's ``DictionaryLinker`` as a :data:`ConceptLinker`."""

    name = "kg_rageval.linking.dictionary.DictionaryLinker"

    def __init__(self, linker: object):
        self._linker = linker

    def __call__(self, text: str) -> frozenset[str]:
        out: set[str] = set()
        for m in self._linker.find(text):  # type: ignore[attr-defined]
            node = getattr(m, "id", None)
            if node is not None:
                out.add(str(node))
            else:
                out.update(str(c) for c in getattr(m, "candidates", ()) or ())
        return frozenset(out)


_CACHE: "weakref.WeakKeyDictionary[Ontology, ConceptLinker]" = weakref.WeakKeyDictionary()


def dictionary_linker(ontology: "Ontology", *, prefer_external: bool = True) -> ConceptLinker:
    """The concept linker for ``ontology`` (cached per ontology object).

    Uses the linking package's ``DictionaryLinker`` when it is importable and constructible
    with the ontology alone, else :class:`BuiltinDictionaryLinker`; ``linker.name`` says which.
    """
    cached = _CACHE.get(ontology)
    if cached is not None and (prefer_external or isinstance(cached, BuiltinDictionaryLinker)):
        return cached
    linker: ConceptLinker | None = None
    if prefer_external:
        try:
            from ..linking.dictionary import DictionaryLinker  # type: ignore[import-not-found]
        except ImportError:
            DictionaryLinker = None  # noqa: N806
        if DictionaryLinker is not None:
            try:
                inst = DictionaryLinker(ontology)
            except TypeError:
                inst = None
            if inst is not None and callable(getattr(inst, "find", None)):
                linker = _ExternalLinkerAdapter(inst)
    if linker is None:
        linker = BuiltinDictionaryLinker(ontology)
    _CACHE[ontology] = linker
    return linker


def linker_name(linker: ConceptLinker) -> str:
    return getattr(linker, "name", type(linker).__name__)


def concepts_in(texts: Iterable[str], linker: ConceptLinker) -> frozenset[str]:
    """Union of the concepts named in several texts."""
    out: set[str] = set()
    for t in texts:
        out |= linker(t)
    return frozenset(out)
