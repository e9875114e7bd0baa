"""The parsing family: CER / WER counts equal jiwer's, the seed's worked example, exact
roll-ups per document class, the length ratio and its unscored records."""

from __future__ import annotations

import random

import pytest

from kg_rageval.families.parsing import char_counts, edit_counts, score_parsing, word_counts
from kg_rageval.families.parsing.align import word_tokens

SEED_REF = "Mars has two moons, Phobos and Deimos."
SEED_HYP = "Mars has two m00ns, Phobos and Deirnos."


def test_seed_worked_example():
    """Seed Part 3: jiwer.cer = 0.105, jiwer.wer = 0.286 on this pair (4/38 and 2/7)."""
    c, w = char_counts(SEED_REF, SEED_HYP), word_counts(SEED_REF, SEED_HYP)
    assert tuple(c) == (35, 3, 0, 1)  # jiwer.process_characters: hits, S, D, I
    assert tuple(w) == (5, 2, 0, 0)
    ev = score_parsing(None, [{"id": "p", "parsing": {"reference": SEED_REF, "extracted": SEED_HYP}}])
    m = ev.metrics()
    assert m["cer"].value == pytest.approx(4 / 38)
    assert f"{m['cer'].value:.3f}" == "0.105"
    assert m["wer"].value == pytest.approx(2 / 7)
    assert f"{m['wer'].value:.3f}" == "0.286"
    assert m["length_ratio"].value == pytest.approx(39 / 38)


def test_hand_worked_counts():
    assert tuple(edit_counts(list("kitten"), list("sitting"))) == (4, 2, 0, 1)
    assert tuple(edit_counts(list("abc"), [])) == (0, 0, 3, 0)
    assert tuple(edit_counts([], list("ab"))) == (0, 0, 0, 2)
    # jiwer's tie-break (rapidfuzz editops): "ab" -> "ba" is a deletion and an insertion
    assert tuple(edit_counts(list("ab"), list("ba"))) == (1, 0, 1, 1)
    # jiwer 4 wer_default: runs of 2+ whitespace collapse, a single tab does not split
    assert word_tokens("  a  b\tc \n d ") == ["a", "b\tc", "d"]


def test_counts_equal_jiwer_on_random_pairs():
    jiwer = pytest.importorskip("jiwer", reason="jiwer is the dev reference for CER / WER counts")
    rng = random.Random(7)
    for _ in range(1500):
        a = "".join(rng.choice("ab c\t") for _ in range(rng.randint(1, 14)))
        b = "".join(rng.choice("ab c\t") for _ in range(rng.randint(0, 14)))
        if not a.strip():
            continue
        o = jiwer.process_characters([a], [b])
        assert tuple(char_counts(a, b)) == (o.hits, o.substitutions, o.deletions, o.insertions), (a, b)
        if word_tokens(a):
            o = jiwer.process_words([a], [b])
            assert tuple(word_counts(a, b)) == (o.hits, o.substitutions, o.deletions, o.insertions), (a, b)


def _records():
    rng = random.Random(3)
    words = "the invoice total due amount tax rate page section table".split()
    out = []
    for i in range(30):
        ref = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
        hyp = list(ref)
        for _ in range(rng.randint(0, 4)):
            k = rng.randrange(len(hyp))
            hyp[k : k + 1] = rng.choice([[], ["x"], ["0", "o"], [hyp[k], hyp[k]]])
        out.append(
            {
                "id": f"r{i}",
                "slices": {"doc_class": ("invoice", "letter", "scan")[i % 3]},
                "gold_node": ("N1", "N2")[i % 2],
                "parsing": {"reference": ref, "extracted": "".join(hyp)},
            }
        )
    return out


def test_pooled_cer_wer_equal_jiwer_per_class():
    jiwer = pytest.importorskip("jiwer", reason="jiwer is the dev reference for CER / WER")
    recs = _records()
    ev = score_parsing(None, recs)
    refs = [r["parsing"]["reference"] for r in recs]
    hyps = [r["parsing"]["extracted"] for r in recs]
    assert ev.metrics()["cer"].value == pytest.approx(jiwer.cer(refs, hyps), abs=1e-12)
    assert ev.metrics()["wer"].value == pytest.approx(jiwer.wer(refs, hyps), abs=1e-12)
    by = ev.breakdown("slice:doc_class")
    for cls in ("invoice", "letter", "scan"):
        sub = [r for r in recs if r["slices"]["doc_class"] == cls]
        rs = [r["parsing"]["reference"] for r in sub]
        hs = [r["parsing"]["extracted"] for r in sub]
        assert by[cls]["metrics"]["cer"].value == pytest.approx(jiwer.cer(rs, hs), abs=1e-12)
        assert by[cls]["metrics"]["wer"].value == pytest.approx(jiwer.wer(rs, hs), abs=1e-12)
        ratios = [len(h.strip()) / len(r.strip()) for r, h in zip(rs, hs)]
        assert by[cls]["metrics"]["length_ratio"].value == pytest.approx(sum(ratios) / len(ratios))


def test_duplicated_text_keeps_length_ratio_but_not_cer():
    """The caveat: a wrong text of the right length scores length_ratio 1.0; cer shows it."""
    ev = score_parsing(None, [{"id": "d", "parsing": {"reference": "abcd", "extracted": "abab"}}])
    m = ev.metrics()
    assert m["length_ratio"].value == 1.0
    assert m["cer"].value == pytest.approx(2 / 4)


def test_unscored_and_missing_evidence():
    recs = [
        {"id": "empty", "parsing": {"reference": "   ", "extracted": "text"}},
        {"id": "none", "parsing": {"reference": "abc", "extracted": None}},
        {"id": "other", "labels": {}},
    ]
    ev = score_parsing(None, recs)
    assert len(ev) == 0
    codes = {u["record_id"]: u["code"] for u in ev.unscored}
    assert codes == {"empty": "no_gold", "none": "missing_prediction", "other": "no_section"}
    m = ev.metrics()
    assert m["cer"].value is None and m["cer"].missing
    assert m["length_ratio"].value is None


def test_bad_input_names_the_field():
    from kg_rageval.base.errors import InputError

    with pytest.raises(InputError, match="parsing.extracted"):
        score_parsing(None, [{"id": "x", "parsing": {"reference": "a", "extracted": 3}}])
    with pytest.raises(InputError, match="parsing.texts"):
        score_parsing(None, [{"id": "x", "parsing": {"reference": "a", "texts": "b"}}])


def _jiwer_counts(jiwer, fn, a: str, b: str) -> tuple[int, int, int, int]:
    o = fn([a], [b])
    return (o.hits, o.substitutions, o.deletions, o.insertions)


def test_bit_parallel_counts_equal_jiwer_on_2000_pairs_with_empty_and_unicode():
    """The bit-parallel edit_counts against jiwer 4 on 2,000 random pairs: empty extractions,
    accents, combining marks, CJK, an astral emoji, tabs and newlines, lengths 0-90 (past one
    64-bit word of the bit vectors); word counts too where the reference has words."""
    jiwer = pytest.importorskip("jiwer", reason="jiwer is the dev reference for CER / WER counts")
    rng = random.Random(2026)
    alphabet = ["a", "b", "c", " ", " ", "\t", "\n", "é", "e\u0301", "東", "京", "ǅ", "😀", "ß", "0"]
    n_char = n_word = 0
    for k in range(2000):
        a = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 90)))
        if k % 10 == 0:
            b = ""
        else:
            b = "".join(rng.choice(alphabet) if rng.random() < 0.3 else ch for ch in a if rng.random() > 0.1)
            if k % 3 == 0:
                b = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 90)))
        if not a.strip():
            continue
        assert tuple(char_counts(a, b)) == _jiwer_counts(jiwer, jiwer.process_characters, a, b), (a, b)
        n_char += 1
        if word_tokens(a):
            assert tuple(word_counts(a, b)) == _jiwer_counts(jiwer, jiwer.process_words, a, b), (a, b)
            n_word += 1
    assert n_char > 1900 and n_word > 1800


def test_long_noisy_page_equals_jiwer():
    """A 10,700-character page with 20% noise: rapidfuzz takes its Hirschberg path for a matrix
    this size; the counts still agree (the figures are jiwer 4.0's)."""
    jiwer = pytest.importorskip("jiwer", reason="jiwer is the dev reference for CER / WER counts")
    from benchmarks.cer_bench import pages

    (r, h), *_ = [p for p in pages(3, 2000, 4) if p[0] != p[1]]
    c = char_counts(r, h)
    assert tuple(c) == _jiwer_counts(jiwer, jiwer.process_characters, r, h)
    assert tuple(c) == (9297, 786, 635, 654)
