"""The dictionary linker's default ``trie`` backend (batched NumPy walk and plain-Python walk
for small calls) finds exactly the links of the reference scan (``backend="python"``, the
pre-#20 code path) and of the pyahocorasick backend, and the benchmark's pyahocorasick anchor
(benchmarks/bench_linking.py) produces the same mentions: on the bundled ontology fixtures,
the real DO and ATT&CK files, and generated dictionaries with overlapping labels, synonyms,
case, punctuation, Unicode and multi-word labels."""

from __future__ import annotations

import gc
import random
from pathlib import Path

import numpy as np
import pytest

from kg_rageval.families.linking.dictionary import (
    DictionaryLinker,
    Link,
    _greedy_same_length,
    _HashTable,
)
from kg_rageval.families.linking.testset import build_linking_set, run_linker
from kg_rageval.ontology import OntologyBuilder, load_ontology

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
NOISE = ["the", "and", "of", "-", "—", "?", "(", ")", "x_1", "É", "straße", "İstanbul", "½", "ﬁ", "日本", "Ⅻ"]


def _texts(onto, n: int, seed: int) -> list[str]:
    """Texts holding one to four surface forms (label, synonym, id, re-cased, re-punctuated,
    joined to neighbours) among noise words, plus edge cases."""
    rng = random.Random(seed)
    forms = [t for i in range(len(onto)) for t in (onto.labels[i], *onto.synonyms[i], onto.ids[i]) if t]
    out = ["", " ", "?!", "\n\n", forms[0], forms[-1].upper()]
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 4)):
            f = rng.choice(forms)
            f = rng.choice([f, f.upper(), f.lower(), f.replace(" ", "-"), f.replace(" ", ",  "), f + "s"])
            parts.append(f)
            parts.extend(rng.choices(NOISE, k=rng.randint(0, 2)))
        rng.shuffle(parts)
        out.append(rng.choice([" ", "  ", ", ", "; ", "", "\n"]).join(parts))
    return out


def _assert_same(onto, texts, **kw):
    ref = DictionaryLinker(onto, backend="python", **kw)
    trie = DictionaryLinker(onto, **kw)
    assert trie.backend == "trie"
    expected = [ref.find(t) for t in texts]
    assert trie.find_many(texts) == expected  # batched NumPy walk
    assert [trie.find(t) for t in texts] == expected  # one small call per text
    assert trie.predict_many(texts) == [[lk.to_mention() for lk in ls] for ls in expected]
    try:
        auto = DictionaryLinker(onto, backend="automaton", **kw)
    except ImportError:
        pass
    else:
        assert auto.find_many(texts) == expected
    return sum(map(len, expected))


BUNDLED = [
    "ontology/mini_attack.json",
    "ontology/mini.obo",
    "ontology/animals.ttl",
    "ontology/aliases.obo",
    "ontology/do_rare_slim_shape.obo",
    "ontology/ics_attack_deprecated.json",
    "ontology/skos.ttl",
]


@pytest.mark.parametrize("path", BUNDLED)
def test_trie_equals_reference_on_bundled_ontologies(path):
    onto = load_ontology(FIXTURES / path)
    texts = _texts(onto, 300, seed=len(path))
    found = 0
    for kw in ({}, {"ambiguous": "lca", "include_ids": True}, {"ambiguous": "first", "min_chars": 1}):
        found += _assert_same(onto, texts, **kw)
    assert found > 300


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.parametrize(
    "path", ["attack/enterprise-attack-techniques-18.1.json.gz", "doid/DO_cancer_slim.obo"]
)
def test_trie_equals_reference_on_real_ontologies(shared_data, path):
    onto = load_ontology(shared_data / path)
    assert _assert_same(onto, _texts(onto, 1500, seed=3), include_ids=True) > 1500
    recs, held = build_linking_set(onto, seed=0)
    ref = run_linker(DictionaryLinker(onto, exclude=held, backend="python"), recs)
    assert run_linker(DictionaryLinker(onto, exclude=held), recs) == ref


def _generated(n: int, seed: int = 0):
    """``n`` multi-word labels over a small vocabulary (so labels overlap and nest), one
    reversed, hyphenated synonym each, some upper-cased, accented or with punctuation, and
    duplicate labels (ambiguous forms)."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(1, 6))) for _ in range(300)]
    vocab += ["café", "Straße", "ﬁber", "İzmir", "naïve", "x2", "7"]
    b = OntologyBuilder(f"generated-{n}")
    b.add_node("G:0", label="root")
    for i in range(1, n):
        w = rng.choices(vocab, k=rng.choice([1, 1, 2, 2, 3, 4, 6]))
        label = " ".join(w)
        label = rng.choice([label, label.upper(), label.title(), label.replace(" ", "-"), label + "."])
        b.add_node(
            f"G:{i}",
            label=label,
            synonyms=["-".join(reversed(w))],
            status=rng.choice(["active"] * 8 + ["deprecated", "revoked"]),
        )
        b.add_edge(f"G:{i}", f"G:{(i - 1) // 5}")
    return b.build(), vocab


def _generated_texts(vocab, n, seed):
    rng = random.Random(seed)
    seps = [" ", "  ", "-", ", ", " (", ") ", "_", "\t", "/"]
    return [
        "".join(w + rng.choice(seps) for w in rng.choices(vocab + NOISE, k=rng.randint(0, 14)))
        for _ in range(n)
    ]


@pytest.mark.slow
@pytest.mark.parametrize("ambiguous", ["abstain", "first", "lca"])
def test_trie_equals_reference_on_generated_dictionary(ambiguous):
    onto, vocab = _generated(4000)
    texts = _generated_texts(vocab, 1500, seed=5)
    assert _assert_same(onto, texts, ambiguous=ambiguous) > 5000


@pytest.mark.slow
def test_trie_equals_reference_on_350k_label_sample():
    """The benchmark's 350,000 realistic labels (plus synonyms): 3,000 of its queries."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from benchmarks.bench_linking import _build_realistic, _queries

    onto, labels, vocab = _build_realistic(350_000)
    texts = _queries(labels, vocab, 3000) + _generated_texts(vocab[:500], 500, seed=9)
    assert _assert_same(onto, texts) > 12_000


def test_anchor_produces_the_same_links():
    pytest.importorskip("ahocorasick")
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from benchmarks.bench_linking import AhoCorasickAnchor

    onto, vocab = _generated(2000, seed=1)
    texts = _generated_texts(vocab, 800, seed=2)
    ours = DictionaryLinker(onto, ambiguous="lca")
    got = ours.predict_many(texts)
    assert AhoCorasickAnchor(ours).predict_many(texts) == got and sum(map(len, got)) > 2000
    onto = load_ontology(FIXTURES / "ontology/mini_attack.json")
    ours = DictionaryLinker(onto, include_ids=True)
    texts = _texts(onto, 200, seed=4)
    assert AhoCorasickAnchor(ours).predict_many(texts) == ours.predict_many(texts)


def test_find_many_worked_example_and_gc_restored():
    b = OntologyBuilder("t")
    b.add_node("R", label="root")
    b.add_node("A", label="cat")
    b.add_node("B", label="cat food", synonyms=["Katzenfutter"])
    b.add_node("C", label="food bowl")
    for x in "ABC":
        b.add_edge(x, "R")
    d = DictionaryLinker(b.build())
    texts = ["Cat food bowl", "", "a cat, a food-bowl", "concat", "KATZENFUTTER!"] * 3
    assert gc.isenabled()
    got = d.find_many(texts)
    assert gc.isenabled()
    assert got[0] == [Link(0, 8, "B", 1.0, "Cat food", ("B",))]
    assert got[1] == [] and got[3] == []
    assert got[2] == [Link(2, 5, "A", 1.0, "cat", ("A",)), Link(9, 18, "C", 1.0, "food-bowl", ("C",))]
    assert got[4] == [Link(0, 12, "B", 0.9, "KATZENFUTTER", ("B",))]
    assert got == [d.find(t) for t in texts] and d.find_many([]) == [] == d.predict_many([])
    assert d.predict_many(texts)[4] == [{"start": 0, "end": 12, "id": "B", "score": 0.9}]


def test_single_text_walk_worked_example():
    """One ``find`` per text (the plain-Python walk): a longer match beats the one-token
    matches inside it; a one-token match outside every kept longer match is kept; among
    overlapping longer matches the longest wins, ties to the earlier start; non-ASCII
    tokens are folded and keep their offsets in the original text."""
    b = OntologyBuilder("t")
    b.add_node("R", label="root")
    for node, label in [
        ("A", "cat"),
        ("B", "cat food"),
        ("C", "food bowl"),
        ("D", "bowl"),
        ("E", "big cat food"),
        ("F", "crème brûlée"),
    ]:
        b.add_node(node, label=label)
        b.add_edge(node, "R")
    d = DictionaryLinker(b.build())
    assert d.find("cat food bowl") == [
        Link(0, 8, "B", 1.0, "cat food", ("B",)),
        Link(9, 13, "D", 1.0, "bowl", ("D",)),
    ]
    assert d.find("a big cat food bowl") == [
        Link(2, 14, "E", 1.0, "big cat food", ("E",)),
        Link(15, 19, "D", 1.0, "bowl", ("D",)),
    ]
    assert d.find("food bowl, cat") == [
        Link(0, 9, "C", 1.0, "food bowl", ("C",)),
        Link(11, 14, "A", 1.0, "cat", ("A",)),
    ]
    assert d.find("« CRÈME-Brûlée » cat") == [
        Link(2, 14, "F", 1.0, "CRÈME-Brûlée", ("F",)),
        Link(17, 20, "A", 1.0, "cat", ("A",)),
    ]
    assert d.find("concatenate") == [] == d.find("") == d.find("  ?")


def test_single_text_walk_separator_runs_and_overlapping_longer_matches():
    """Leading, trailing and repeated separators (token and piece indices differ), ASCII and
    not: offsets stay those of the original text. Two overlapping two-token matches take the
    general overlap path (the earlier start wins, a one-token match outside it is kept)."""
    b = OntologyBuilder("t")
    b.add_node("R", label="root")
    for node, label in [
        ("A", "cat"),
        ("B", "cat food"),
        ("C", "food bowl"),
        ("D", "bowl"),
        ("F", "crème brûlée"),
    ]:
        b.add_node(node, label=label)
        b.add_edge(node, "R")
    d = DictionaryLinker(b.build())
    texts = [
        "  Cat,, food--bowl  !",
        "\u00ab \ufb01  CR\u00c8ME--br\u00fbl\u00e9e \u00bbcat",
        "cat food bowl",
        "x  cat",
    ]
    want = [
        [Link(2, 12, "B", 1.0, "Cat,, food", ("B",)), Link(14, 18, "D", 1.0, "bowl", ("D",))],
        [
            Link(5, 18, "F", 1.0, "CR\u00c8ME--br\u00fbl\u00e9e", ("F",)),
            Link(20, 23, "A", 1.0, "cat", ("A",)),
        ],
        [Link(0, 8, "B", 1.0, "cat food", ("B",)), Link(9, 13, "D", 1.0, "bowl", ("D",))],
        [Link(3, 6, "A", 1.0, "cat", ("A",))],
    ]
    assert [d.find(t) for t in texts] == want == d.find_many(texts * 3)[:4]
    assert [d.predict(t) for t in texts] == [[lk.to_mention() for lk in ls] for ls in want]
    assert DictionaryLinker(b.build(), backend="python").find_many(texts) == want


@pytest.mark.slow
def test_large_tables_are_not_traversed_by_the_garbage_collector():
    """The linker's big containers hold only ints or untracked tuples (or are NumPy arrays),
    so the cyclic collector's full collections, which a caller's retained ``Link`` objects
    trigger, do not walk the dictionary (that cost ~0.3 s per collection at 350k labels)."""
    onto = load_ontology(FIXTURES / "ontology/mini_attack.json")
    d = DictionaryLinker(onto)
    gc.collect()
    gc.collect()  # the first untracks the tuples inside, the second the dicts holding them
    for name in ("_forms", "_keys_of", "_vocab", "_step", "_first_step"):
        assert len(getattr(d, name)) > 0
        assert not gc.is_tracked(getattr(d, name)), name


@pytest.mark.slow
def test_links_made_are_untracked_and_keep_the_tuple_api():
    """Every ``Link`` one ``find`` makes is untracked by the cyclic collector (CPython never
    untracks a tuple subclass itself; a ``Link`` holds no container that could close a cycle)
    and is still an ordinary named tuple: equal to one built by hand and to the plain tuple,
    same hash, unpacking, attributes, ``to_mention``; freed normally after collections."""
    import pickle

    from kg_rageval.families.linking.dictionary import _untracker

    if _untracker() is None:  # pragma: no cover - not CPython
        pytest.skip("no PyObject_GC_UnTrack on this interpreter")
    b = OntologyBuilder("t")
    b.add_node("R", label="root")
    b.add_node("A", label="cat")
    b.add_node("B", label="cat food", synonyms=["Katzenfutter"])
    b.add_edge("A", "R")
    b.add_edge("B", "R")
    d = DictionaryLinker(b.build())
    got = d.find("a cat and KATZENFUTTER")
    want = [Link(2, 5, "A", 1.0, "cat", ("A",)), Link(10, 22, "B", 0.9, "KATZENFUTTER", ("B",))]
    assert got == want and [tuple(x) for x in got] == [tuple(x) for x in want]
    assert [gc.is_tracked(x) for x in got] == [False, False] and gc.is_tracked(want[0])
    assert gc.is_tracked(got)  # the list itself stays tracked: a caller may put anything in it
    assert list(map(hash, got)) == list(map(hash, want)) and set(got) == set(want)
    s, e, node, score, form, cands = got[1]
    assert (s, e, node, score, form, cands) == (10, 22, "B", 0.9, "KATZENFUTTER", ("B",))
    assert got[1].id == "B" and got[1]._replace(id="A").id == "A" and got[1].candidates == ("B",)
    assert got[1].to_mention() == {"start": 10, "end": 22, "id": "B", "score": 0.9}
    assert pickle.loads(pickle.dumps(got)) == want
    for _ in range(3):
        many = [d.find("cat food, cat") for _ in range(3000)]
        gc.collect()
        assert many[-1] == [Link(0, 8, "B", 1.0, "cat food", ("B",)), Link(10, 13, "A", 1.0, "cat", ("A",))]
        del many
    gc.collect()


def test_hash_table_lookup():
    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(0, 10**12, size=50_000))
    values = rng.integers(0, 10**6, size=keys.size)
    t = _HashTable(keys, values)
    probe = np.concatenate([keys[::-1], keys + 1, [0, 10**12 + 5]])
    expected = np.concatenate([values[::-1], np.where(np.isin(keys + 1, keys), -1, -1), [-1, -1]])
    present = dict(zip(keys.tolist(), values.tolist()))
    expected = np.array([present.get(k, -1) for k in probe.tolist()])
    assert np.array_equal(t.get(probe), expected)
    assert np.array_equal(
        _HashTable(np.array([], dtype=np.int64), np.array([], dtype=np.int64)).get(keys[:3]), [-1, -1, -1]
    )


def test_greedy_same_length_equals_sequential_greedy():
    rng = random.Random(0)
    for _ in range(500):
        length = rng.randint(1, 4)
        a = np.array(sorted(rng.sample(range(40), rng.randint(1, 25))))
        kept, last = [], -(10**9)
        for x in a.tolist():
            if x >= last + length:
                kept.append(x)
                last = x
        assert a[_greedy_same_length(a, length)].tolist() == kept
