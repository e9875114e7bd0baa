"""Ontology concepts named in a text: the dictionary linker used by the generation checks.

Linking is the linking package's exact label/synonym matcher,
:class:`kg_rageval.families.linking.dictionary.DictionaryLinker` and its ``find(text)``: every surface
form detected, longest first; tokens are runs of letters/digits, case- and diacritic-folded
(see ``docs/linking.md``). A mention the linker leaves NIL because its form is ambiguous
contributes all its tied ``candidates`` (the ambiguity is the ontology's; both sides of every
comparison see the same set). The virtual root is never linked.

The result is the *set* of concept ids named in the text; counts and positions are not used by
the generation metrics. A scoring call links each distinct text once (:class:`MemoLinker`):
a linker is a function of the text alone. Many texts are linked in one batched call where the
linker has ``many(texts)`` (:class:`DictionaryConceptLinker`: one
:meth:`~kg_rageval.families.linking.dictionary.DictionaryLinker.find_many`, the same links as one
``find`` per text); :meth:`MemoLinker.prefetch` links a scoring call's texts up front.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.ontology import Ontology

ConceptLinker = Callable[[str], frozenset[str]]
"""A linker: text → the set of ontology ids it names."""


class DictionaryConceptLinker:
    """``DictionaryLinker(ontology, **options)`` as a :data:`ConceptLinker` (text → id set)."""

    name = "kg_rageval.families.linking.dictionary.DictionaryLinker"

    def __init__(self, ontology: Ontology, **options: Any):
        from kg_rageval.families.linking.dictionary import DictionaryLinker

        self.ontology = ontology
        self._linker = DictionaryLinker(ontology, **options)

    def __call__(self, text: str) -> frozenset[str]:
        return _concept_set(self._linker.find(text))

    def many(self, texts: Iterable[str]) -> list[frozenset[str]]:
        """``[self(t) for t in texts]`` as one batched ``find_many`` call."""
        return list(map(_concept_set, self._linker.find_many(texts)))


def _concept_set(links: Iterable[Any]) -> frozenset[str]:
    """The ids of the linked mentions; a NIL mention of an ambiguous form adds its candidates."""
    out: set[str] = set()
    for m in links:
        if m.id is not None:
            out.add(str(m.id))
        else:
            out.update(str(c) for c in m.candidates)
    return frozenset(out)


def link_many(texts: Sequence[str], linker: ConceptLinker) -> list[frozenset[str]]:
    """``[linker(t) for t in texts]``, as one batched ``linker.many(texts)`` call when the
    linker has one."""
    many = getattr(linker, "many", None)
    if many is None or len(texts) < 2:
        return [frozenset(linker(t)) for t in texts]
    return many(texts)


_CACHE: weakref.WeakKeyDictionary[Ontology, ConceptLinker] = weakref.WeakKeyDictionary()


def dictionary_linker(ontology: Ontology) -> ConceptLinker:
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

    def many(self, texts: Iterable[str]) -> list[frozenset[str]]:
        """``[self(t) for t in texts]``: the distinct texts not remembered yet linked in one
        batched call (:func:`link_many`), at most ``max_size`` at a time."""
        texts = list(texts)
        seen, size = self._seen, self.max_size
        got = {t: seen[t] for t in texts if t in seen}
        todo = [t for t in dict.fromkeys(texts) if t not in got]
        for k in range(0, len(todo), size):
            chunk = todo[k : k + size]
            if len(seen) + len(chunk) > size:
                seen.clear()
            for t, ids in zip(chunk, link_many(chunk, self.linker)):
                seen[t] = got[t] = frozenset(ids)
        return [got[t] for t in texts]

    def prefetch(self, texts: Iterable[str]) -> None:
        """Link ``texts`` now, in one batched call, so that later calls find them remembered."""
        self.many(texts)


def memoised(linker: ConceptLinker) -> MemoLinker:
    """``linker`` wrapped in a :class:`MemoLinker` (returned as it is when it is one)."""
    return linker if isinstance(linker, MemoLinker) else MemoLinker(linker)


def concepts_in(texts: Iterable[str], linker: ConceptLinker) -> frozenset[str]:
    """Union of the concepts named in several texts."""
    texts = list(texts)
    if len(texts) == 1:
        return frozenset(linker(texts[0]))
    out: set[str] = set()
    for ids in link_many(texts, linker):
        out |= ids
    return frozenset(out)
