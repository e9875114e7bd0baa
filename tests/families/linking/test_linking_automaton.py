"""The Aho–Corasick backend of the dictionary linker finds exactly what the pure-Python scan
finds (same links, same spans, same scores and candidates)."""

from __future__ import annotations

import random

import pytest

from kg_rageval.base.errors import ConfigError
from kg_rageval.families.linking.dictionary import DictionaryLinker
from kg_rageval.ontology import OntologyBuilder

pytest.importorskip("ahocorasick")


def _ontology():
    rng = random.Random(7)
    vocab = [
        "lsass",
        "memory",
        "credential",
        "dump",
        "token",
        "cat",
        "concat",
        "ﬀ",
        "ﷺ",
        "é",
        "data",
        "from",
        "local",
        "system",
        "x1",
        "2",
    ]
    b = OntologyBuilder("automaton-test")
    b.add_node("R", label="root concept")
    seen = set()
    for i in range(1, 300):
        words = rng.choices(vocab, k=rng.choice([1, 1, 2, 2, 3, 4]))
        label = " ".join(words)
        syn = "-".join(reversed(words))
        b.add_node(f"N{i}", label=label.upper() if i % 5 == 0 else label, synonyms=[syn])
        b.add_edge(f"N{i}", f"N{(i - 1) // 4}" if i > 4 else "R")
        seen.add(label)
    return b.build(), vocab


@pytest.mark.parametrize("ambiguous", ["abstain", "first", "lca"])
def test_automaton_equals_python_scan(ambiguous):
    onto, vocab = _ontology()
    fast = DictionaryLinker(onto, ambiguous=ambiguous, backend="automaton")
    ref = DictionaryLinker(onto, ambiguous=ambiguous, backend="python")
    assert fast.backend == "automaton" and ref.backend == "python"
    rng = random.Random(11)
    found = 0
    for _ in range(2000):
        words = rng.choices(
            vocab + ["the", "and", "Concatenate", "LSASS-Memory!", "  "], k=rng.randint(0, 12)
        )
        text = rng.choice([" ", "  ", ", ", " - "]).join(words) + rng.choice(["", "?", "."])
        a, b = fast.find(text), ref.find(text)
        assert a == b, text
        found += len(a)
    assert found > 1000  # the comparison exercised real matches


def test_whole_tokens_only_and_overlaps():
    b = OntologyBuilder("t")
    b.add_node("R", label="root")
    b.add_node("A", label="cat")
    b.add_node("B", label="cat food")
    b.add_node("C", label="food bowl")
    b.add_edge("A", "R")
    b.add_edge("B", "R")
    b.add_edge("C", "R")
    d = DictionaryLinker(b.build(), backend="automaton")
    # "concat" holds "cat" as a substring but not as a token: no match
    assert d.find("concat") == []
    # overlapping forms: longest first, ties to the earlier start
    links = d.find("Cat food bowl")
    assert [(lk.start, lk.end, lk.id) for lk in links] == [(0, 8, "B")]
    assert [(lk.id, lk.form) for lk in d.find("a cat, a food-bowl")] == [("A", "cat"), ("C", "food-bowl")]


def test_backend_value_checked():
    onto, _ = _ontology()
    with pytest.raises(ConfigError, match="backend"):
        DictionaryLinker(onto, backend="fast")
