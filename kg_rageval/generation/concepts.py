"""Ontology concepts named in a text: the dictionary linker used by the generation checks.

Linking is the linking package's exact label/synonym matcher,
:class:`kg_rageval.linking.dictionary.DictionaryLinker` and its ``find(text)``: every surface
form detected, longest first; tokens are runs of letters/digits, case- and diacritic-folded
(see ``docs/linking.md``). A mention the linker leaves NIL because its form is ambiguous
contributes all its tied ``candidates`` (the ambiguity is the ontology's; both sides of every
comparison see the same set). The virtual root is never linked.

The result is the *set* of concept ids named in the text; counts and positions are not used by
the generation metrics. A scoring call links each distinct text once (:class:`MemoLinker`):
a linker is a function of the text alone.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from ..ontology import Ontology

ConceptLinker = Callable[[str], frozenset[str]]
"""A linker: text → the set of ontology ids it names."""


class DictionaryConceptLinker:
    """``DictionaryLinker(ontology, **options)`` as a :data:`ConceptLinker` (text → id set)."""

    name = "kg_rageval.linking.dictionary.DictionaryLinker"

    def __init__(self, ontology: "Ontology", **options: Any):
        from ..linking.dictionary import DictionaryLinker

        self.ontology = ontology
        self._linker = DictionaryLinker(ontology, **options)

    def __call__(self, text: str) -> frozenset[str]:
        out: set[str] = set()
        for m in self._linker.find(text):
            if m.id is not None:
                out.add(str(m.id))
            else:
                out.update(str(c) for c in m.candidates)
        return frozenset(out)


_CACHE: "weakref.WeakKeyDictionary[Ontology, ConceptLinker]" = weakref.WeakKeyDictionary()


def dictionary_linker(ontology: "Ontology") -> ConceptLinker:
    """The concept linker for ``ontology`` (a :class:`DictionaryConceptLinker`, cached per
    ontology object); ``linker.name`` says which linker it is."""
    linker = _CACHE.get(ontology)
    if linker is None:
        linker = _CACHE[ontology] = DictionaryConceptLinker(ontology)
    return linker


def linker_name(linker: ConceptLinker) -> str:
    return getattr(linker, "name", type(linker).__name__)


class MemoLinker:
    """``linker`` called once per distinct text: the first call's id set is returned for every
    later call with the same text. It remembers at most ``max_size`` texts (forgets them all
    when full: bounded memory, same results). Make one per scoring call; ``name`` is the
    wrapped linker's."""

    def __init__(self, linker: ConceptLinker, max_size: int = 1 << 16):
        self.linker = linker
        self.name = linker_name(linker)
        self.max_size = max_size
        self._seen: dict[str, frozenset[str]] = {}

    def __call__(self, text: str) -> frozenset[str]:
        got = self._seen.get(text)
        if got is None:
            if len(self._seen) >= self.max_size:
                self._seen.clear()
            got = self._seen[text] = frozenset(self.linker(text))
        return got


def memoised(linker: ConceptLinker) -> MemoLinker:
    """``linker`` wrapped in a :class:`MemoLinker` (returned as it is when it is one)."""
    return linker if isinstance(linker, MemoLinker) else MemoLinker(linker)


def concepts_in(texts: Iterable[str], linker: ConceptLinker) -> frozenset[str]:
    """Union of the concepts named in several texts."""
    texts = list(texts)
    if len(texts) == 1:
        return frozenset(linker(texts[0]))
    out: set[str] = set()
    for t in texts:
        out |= linker(t)
    return frozenset(out)
