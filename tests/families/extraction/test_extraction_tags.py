"""Entities from tag sequences equal seqeval's (default mode and strict IOB2 / IOBES), on a
CoNLL-2003-style sample and on 600 random sequences with malformed ones (I- without B-, types
changing mid-entity); the CoNLL reader's records and its one-line errors."""

from __future__ import annotations

import random
import warnings

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.families.extraction.tags import entities_default, entities_strict
from kg_rageval.records.conll import read_conll

seqeval = pytest.importorskip("seqeval")
from seqeval.metrics import classification_report  # noqa: E402
from seqeval.metrics.sequence_labeling import get_entities  # noqa: E402
from seqeval.scheme import IOB2, IOBES, Tokens  # noqa: E402

CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG B-ORG
rejects VBZ B-VP O O
German JJ B-NP B-MISC B-LOC
call NN I-NP O O
to TO B-VP O O
boycott VB I-VP O O
British JJ B-NP B-MISC I-MISC
lamb NN I-NP O O
. . O O O

Peter NNP B-NP B-PER B-PER
Blackburn NNP I-NP I-PER I-PER

BRUSSELS NNP B-NP B-LOC I-LOC
1996-08-22 CD I-NP O O
"""


def _strict(seq, scheme):
    return [(e.tag, e.start, e.end - 1) for e in Tokens(seq, scheme).entities]


def test_conll_sample_entities_equal_seqeval(tmp_path):
    f = tmp_path / "sample.conll"
    f.write_text(CONLL)
    recs = read_conll(f, gold_col=3, pred_col=4)
    assert [r["id"] for r in recs] == ["sample:1", "sample:2", "sample:3"]
    assert recs[0]["_line"] == 3 and recs[2]["extraction"]["tokens"] == ["BRUSSELS", "1996-08-22"]
    gold = [r["extraction"]["gold_tags"] for r in recs]
    pred = [r["extraction"]["pred_tags"] for r in recs]
    for g, p in zip(gold, pred):
        assert entities_default(g) == get_entities(g)
        assert entities_default(p) == get_entities(p)
        assert entities_strict(p, "IOB2") == _strict(p, IOB2)
    # worked by hand: the malformed I-LOC opens an entity in default mode, none in strict mode
    assert entities_default(pred[2]) == [("LOC", 0, 0)]
    assert entities_strict(pred[2], "IOB2") == []
    assert entities_default(pred[0]) == [("ORG", 0, 0), ("LOC", 2, 2), ("MISC", 6, 6)]
    assert entities_strict(pred[0], "IOB2") == [("ORG", 0, 0), ("LOC", 2, 2)]
    report = classification_report(gold, pred, output_dict=True)
    assert report["micro avg"]["precision"] == pytest.approx(
        4 / 5
    )  # ORG, MISC (I- opens it), PER, LOC (I- opens it) of 5


@pytest.mark.parametrize("scheme,cls,prefixes", [("IOB2", IOB2, "BIO"), ("IOBES", IOBES, "BIOES")])
def test_random_and_malformed_sequences_equal_seqeval(scheme, cls, prefixes):
    rng = random.Random(7)
    n_malformed = 0
    for _ in range(300):
        seq = []
        for _ in range(rng.randint(0, 14)):
            p = rng.choice(prefixes)
            seq.append("O" if p == "O" else f"{p}-{rng.choice(['PER', 'LOC', 'X-Y'])}")
        n_malformed += any(t.startswith("I-") and (i == 0 or seq[i - 1] == "O") for i, t in enumerate(seq))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert entities_default(seq) == get_entities(seq), seq
            assert entities_strict(seq, scheme) == _strict(seq, cls), seq
    assert n_malformed >= 50  # the malformed case is really exercised


def test_strict_refuses_a_prefix_outside_the_scheme():
    with pytest.raises(ValueError, match="not allowed by the IOB2 scheme"):
        entities_strict(["S-PER"], "IOB2")


def test_conll_bad_line_names_file_and_line(tmp_path):
    f = tmp_path / "bad.conll"
    f.write_text("EU B-ORG\nrejects\n")
    with pytest.raises(InputError, match=r"bad\.conll, line 2: expected a token"):
        read_conll(f)
    f.write_text("EU B-ORG\n\nPeter PER\n")
    with pytest.raises(InputError, match=r"bad\.conll, line 3: 'PER' is not a tag"):
        read_conll(f)
