"""Wu-Palmer against NLTK's ``wup_similarity`` on WordNet 3.0 nouns (Debian ``wordnet-base``).

The noun hypernym graph (hypernyms + instance hypernyms) is loaded into an Ontology and our
kernel is compared with NLTK on 5,000 random noun pairs, a third of them involving synsets
with several hypernyms, plus the pairs NLTK's own docs quote. Skips when WordNet is absent
(see ``wordnet_helpers.py`` for the expected layout / ``KG_RAGEVAL_WORDNET_DIR``).
"""

from __future__ import annotations

import numpy as np
import pytest
from wordnet_helpers import LEXNAMES, lexnames_text, nltk_wordnet, noun_ontology, wordnet_dir

from kg_rageval.families.hierarchy import relation_codes, wu_palmer
from kg_rageval.ontology import RELATIONS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wordnet(tmp_path_factory):
    src = wordnet_dir()
    if src is None:
        pytest.skip("WordNet 3.0 is absent: apt-get install wordnet-base (or set KG_RAGEVAL_WORDNET_DIR)")
    pytest.importorskip("nltk")
    wn = nltk_wordnet(src, tmp_path_factory.mktemp("wordnet"))
    onto, synsets = noun_ontology(wn)
    return wn, onto, synsets


def test_lexnames_generator():
    text = lexnames_text().splitlines()
    assert len(LEXNAMES) == 45 and len(text) == 45
    assert text[3] == "03\tnoun.Tops\t1" and text[44] == "44\tadj.ppl\t3"


def test_wordnet_noun_graph(wordnet):
    wn, onto, synsets = wordnet
    assert len(onto) == len(synsets) == 82115  # WordNet 3.0 noun synsets
    assert onto.root_id == "entity.n.01" and not onto.virtual_root
    assert onto.multi_parent_count > 1000
    dog = wn.synset("dog.n.01")
    assert int(onto.depth_min[onto.index("dog.n.01")]) == dog.min_depth()
    assert int(onto.depth_max[onto.index("dog.n.01")]) == dog.max_depth()


def test_wu_palmer_matches_nltk_on_5000_noun_pairs(wordnet):
    wn, onto, synsets = wordnet
    rng = np.random.default_rng(20240601)
    n = len(onto)
    multi = np.flatnonzero(np.diff(onto.parent_ptr) > 1)
    a = rng.integers(1, n, 5000)
    b = rng.integers(1, n, 5000)
    a[:1700] = rng.choice(multi, 1700)  # multi-parent synsets on one side ...
    b[1700:2500] = rng.choice(multi, 800)  # ... or the other
    # near pairs: a synset and one of its (grand)parents or siblings
    for k in range(2500, 3300):
        node = int(a[k])
        par = onto.parent_indices(node)
        if par.size:
            p = int(par[rng.integers(par.size)])
            kids = onto.child_indices(p)
            b[k] = int(kids[rng.integers(kids.size)]) if k % 2 else p
    a[3300:3350] = b[3300:3350]  # identical synsets (the NLTK self-oddity shows up here)
    quoted = [
        ("dog.n.01", "cat.n.01"),
        ("car.n.01", "truck.n.01"),
        ("hill.n.01", "mountain.n.01"),
        ("chef.n.01", "fireman.n.01"),
        ("dog.n.01", "dog.n.01"),
    ]
    a = np.concatenate([a, onto.indices([x for x, _ in quoted])])
    b = np.concatenate([b, onto.indices([y for _, y in quoted])])
    ours = wu_palmer(onto, a, b)
    ids = onto.ids
    ref = np.array([wn.synset(ids[x]).wup_similarity(wn.synset(ids[y])) for x, y in zip(a, b)])
    bad = np.flatnonzero(np.abs(ours - ref) > 1e-12)
    assert bad.size == 0, [(ids[a[k]], ids[b[k]], ours[k], ref[k]) for k in bad[:10]]
    assert ours[-5] == pytest.approx(0.8571428571428571, abs=1e-15)  # dog/cat, NLTK's doc value
    assert ours[-2] == pytest.approx(wn.synset("chef.n.01").wup_similarity(wn.synset("fireman.n.01")))
    # the NLTK self-oddity on a famous synset: dog.n.01 against itself scores 13/14 < 1
    assert ours[-1] == pytest.approx(13 / 14, abs=1e-15) == ref[-1]
    dog = onto.indices(["dog.n.01"]).astype(np.int64)
    assert wu_palmer(onto, dog, dog, identical="one")[0] == 1.0
    assert len(set(np.round(ours, 6))) > 100  # a real spread of values, not a constant


def test_relation_codes_on_wordnet_sample(wordnet):
    _, onto, _ = wordnet
    rng = np.random.default_rng(3)
    a = rng.integers(0, len(onto), 400)
    b = np.array([int(onto.parent_indices(int(x))[0]) if x else 0 for x in a])
    b[200:] = rng.integers(0, len(onto), 200)
    codes = relation_codes(onto, a, b)
    assert [RELATIONS[c] for c in codes] == [onto.relation_index(int(x), int(y)) for x, y in zip(a, b)]
