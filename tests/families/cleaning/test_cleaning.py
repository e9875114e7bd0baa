"""The cleaning family: figures worked by hand on fixtures/cleaning/documents.jsonl.

* boilerplate (d1, d2): gold [0,10) [20,30) | [5,9); removed [0,10) [22,35) | none. Strict: 1
  match → P = 1/2, R = 1/3, F1 = 0.4; overlap: [20,30) ~ [22,35) too → P = 2/2, R = 2/3, F1 = 0.8;
* Unicode (d1–d5, 57 code points, 10 tokens): d2's ligature "ﬁ" folds under NFKC → 4/5 equal;
  d3 holds one U+200B (1/5 documents, 1/57 code points) and the token "pаypal" with a Cyrillic
  "а" (1/10 tokens, 1/5 documents); d4's all-Greek word is one script, not mixed;
* language (d1–d4): en/en (case folded), de/en, fr/null, en/en → accuracy 2/4; en F1 = 2·2 /
  (2·2 + 1) = 0.8, de and fr 0 → macro F1 = 0.8/3;
* duplicates: labelled with output d1, d2, d3 (d4 unlabelled); gold pairs {d1,d2}; predicted
  {d1,d2}, {d1,d3}, {d3,d4} → P = 1/3, R = 1, F1 = 0.5;
* PII (d1, d2, d4): gold EMAIL 0-5, PHONE 10-15 | EMAIL 3-8 | none; pred EMAIL 0-5, PHONE 11-14
  | none | PHONE 0-3 → strict 1 of 3 / 3, overlap 2 of 3 / 3;
* d6 has a section with nothing to score (no_gold).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.runner import run_audit
from kg_rageval.base.errors import InputError
from kg_rageval.cli.main import cli, main
from kg_rageval.families.cleaning import lsh_params, minhash_pairs, score_cleaning, shingles, signature
from kg_rageval.families.cleaning.unicode import is_invisible, is_mixed_script, unicode_health
from kg_rageval.records import read_records

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "fixtures" / "cleaning" / "documents.jsonl"
ONTO = ROOT / "ontologies" / "doid-cancer-slim.obo"

EXPECTED = {
    "boilerplate_precision": 1 / 2,
    "boilerplate_recall": 1 / 3,
    "boilerplate_f1": 0.4,
    "boilerplate_precision_overlap": 1.0,
    "boilerplate_recall_overlap": 2 / 3,
    "boilerplate_f1_overlap": 0.8,
    "nfc_nfkc_equal_rate": 4 / 5,
    "invisible_doc_rate": 1 / 5,
    "invisible_char_rate": 1 / 57,
    "mixed_script_token_rate": 1 / 10,
    "mixed_script_doc_rate": 1 / 5,
    "language_accuracy": 2 / 4,
    "language_macro_f1": 0.8 / 3,
    "duplicate_precision": 1 / 3,
    "duplicate_recall": 1.0,
    "duplicate_f1": 0.5,
    "pii_precision": 1 / 3,
    "pii_recall": 1 / 3,
    "pii_f1": 1 / 3,
    "pii_precision_overlap": 2 / 3,
    "pii_recall_overlap": 2 / 3,
    "pii_f1_overlap": 2 / 3,
}
ROWS = {"boilerplate": 2, "nfc": 5, "invisible": 5, "mixed": 5, "language": 4, "duplicate": 3, "pii": 3}


def _rows_of(name: str) -> int:
    return next(v for k, v in ROWS.items() if name.startswith(k))


def test_fixture_figures_by_hand():
    ev = score_cleaning(None, read_records(DATA))
    got = ev.metrics()
    assert set(got) == set(EXPECTED)
    for name, want in EXPECTED.items():
        assert got[name].value == pytest.approx(want, abs=1e-12), name
        assert got[name].rows == _rows_of(name), name
    assert [u["record_id"] for u in ev.unscored] == ["d6"]
    assert ev.unscored[0]["code"] == "no_gold"


def test_slices_add_up_and_missing_evidence_is_missing():
    ev = score_cleaning(None, read_records(DATA))
    bd = ev.breakdown("slice:doc_class")
    manual, scan, forum = bd["manual"]["metrics"], bd["scan"]["metrics"], bd["forum"]["metrics"]
    assert manual["pii_recall_overlap"].value == pytest.approx(2 / 3)  # d1 2 of 2, d2 0 of 1
    assert scan["pii_precision"].value == 0.0  # d4's spurious PHONE
    assert scan["pii_recall"].value is None  # d4 has gold [] : no labelled span
    assert manual["language_accuracy"].value == 0.5
    assert scan["language_macro_f1"].value == pytest.approx(0.5)  # en 1.0, fr 0
    for m in ("pii_recall", "boilerplate_precision", "language_accuracy", "duplicate_recall"):
        assert forum[m].value is None and forum[m].missing, m
    assert forum["nfc_nfkc_equal_rate"].value == 1.0


def test_per_language_table_equals_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    ev = score_cleaning(None, read_records(DATA))
    y_true = ["en", "de", "fr", "en"]
    y_pred = ["en", "en", "<none>", "en"]
    labels = ["de", "en", "fr"]
    rep = metrics.classification_report(
        y_true, y_pred, labels=labels, output_dict=True, zero_division=float("nan")
    )
    table = ev.meta["per_language"]
    assert sorted(table) == labels
    for lang in labels:
        for ours, theirs in (("precision", "precision"), ("recall", "recall"), ("f1", "f1-score")):
            want = rep[lang][theirs]
            got = table[lang][ours]
            assert (got is None) if want != want else got == pytest.approx(want), (lang, ours)
        assert table[lang]["support"] == rep[lang]["support"]
    assert ev.metrics()["language_macro_f1"].value == pytest.approx(rep["macro avg"]["f1-score"])
    assert ev.metrics()["language_accuracy"].value == pytest.approx(metrics.accuracy_score(y_true, y_pred))


def test_pii_per_type_and_recall_failures_first():
    ev = score_cleaning(None, read_records(DATA))
    t = ev.meta["per_pii_type"]
    assert (t["EMAIL"]["gold"], t["EMAIL"]["pred"]) == (2, 1)
    assert t["EMAIL"]["strict"] == {"precision": 1.0, "recall": 0.5, "f1": pytest.approx(2 / 3)}
    assert t["PHONE"]["strict"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert t["PHONE"]["overlap"] == {"precision": 0.5, "recall": 1.0, "f1": pytest.approx(2 / 3)}
    fails = [(f["kind"], f["record_id"], f["type"], f["start"]) for f in ev.meta["pii_failures"]]
    assert fails == [
        ("missed", "d1", "PHONE", 10),
        ("missed", "d2", "EMAIL", 3),
        ("spurious", "d1", "PHONE", 11),
        ("spurious", "d4", "PHONE", 0),
    ]


def test_a_type_mismatch_is_a_miss_and_a_spurious_span():
    recs = [
        {
            "id": "a",
            "cleaning": {
                "pii": {
                    "gold": [{"start": 0, "end": 4, "type": "NAME"}],
                    "pred": [{"start": 0, "end": 4, "type": "EMAIL"}],
                }
            },
        }
    ]
    m = score_cleaning(None, recs).metrics()
    assert (m["pii_precision_overlap"].value, m["pii_recall_overlap"].value) == (0.0, 0.0)


def test_unicode_health_units():
    for ch in ("\u200b", "\u00ad", "\ufeff", "\u2060", "\u202e", "\ufe0f", "\U000e0041", "\u3164"):
        assert is_invisible(ch), hex(ord(ch))
    for ch in ("a", " ", "\u00e9", "\u0430"):
        assert not is_invisible(ch)
    assert is_mixed_script("p\u0430ypal") and not is_mixed_script("\u0395\u03bb\u03bb\u03b7\u03bd")
    assert not is_mixed_script("東京タワー")
    h = unicode_health("\uff21BC x\u00b2")  # full-width A and a superscript two fold under NFKC
    assert (h.nfc_equals_nfkc, h.invisible, h.tokens, h.mixed_script_tokens) == (False, 0, 2, 0)


def _near_duplicate_texts() -> dict[str, str]:
    rng = random.Random(0)
    words = [f"w{i}" for i in range(40)]
    texts = {}
    for i in range(8):
        base = [rng.choice(words) for _ in range(30)]
        texts[f"d{i}"] = " ".join(base)
        one = list(base)
        one[rng.randrange(30)] = "zz"
        texts[f"d{i}x"] = " ".join(one)
        ten = list(base)
        ten[:10] = ["yy"] * 10
        texts[f"d{i}y"] = " ".join(ten)
    texts["empty"] = ""
    return texts


@pytest.mark.parametrize("threshold", [0.5, 0.8])
def test_minhash_reference_equals_datasketch(threshold):
    ds = pytest.importorskip("datasketch")
    from datasketch.lsh import _optimal_param

    assert lsh_params(threshold) == _optimal_param(threshold, 128, 0.5, 0.5)
    texts = _near_duplicate_texts()
    lsh = ds.MinHashLSH(threshold=threshold, num_perm=128)
    sigs = {}
    for doc, text in texts.items():
        sh = shingles(text)
        if not sh:
            continue
        kw = {"scheme": "legacy"} if "scheme" in ds.MinHash.__init__.__code__.co_varnames else {}
        m = ds.MinHash(num_perm=128, seed=1, **kw)
        for s in sorted(sh):
            m.update(s.encode("utf-8"))
        assert (m.hashvalues == signature(sh)).all(), doc
        sigs[doc] = m
        lsh.insert(doc, m)
    theirs = {tuple(sorted((d, o))) for d, m in sigs.items() for o in lsh.query(m) if o != d}
    ours = minhash_pairs(texts, threshold)
    assert ours == theirs
    assert len(ours) >= 2  # not vacuous: some near duplicates are flagged at either threshold
    assert all(a.rstrip("xy") == b.rstrip("xy") for a, b in ours)  # and only true ones here


def test_minhash_detector_scored_against_labelled_pairs():
    texts = _near_duplicate_texts()
    recs = []
    for doc, text in texts.items():
        root = doc.rstrip("xy") if doc != "empty" else doc
        gold = (
            []
            if doc == "empty"
            else [d for d in texts if d != doc and d.rstrip("xy") == root and d != "empty"]
        )
        recs.append({"id": doc, "cleaning": {"text": text, "duplicates": {"gold": gold}}})
    ev = score_cleaning(None, recs, minhash_threshold=0.8)
    pred = minhash_pairs(texts, 0.8)
    gold = {
        tuple(sorted((a, b))) for r in recs for a in [r["id"]] for b in r["cleaning"]["duplicates"]["gold"]
    }
    m = ev.metrics()
    assert m["duplicate_precision"].value == pytest.approx(len(pred & gold) / len(pred))
    assert m["duplicate_recall"].value == pytest.approx(len(pred & gold) / len(gold))
    assert len(gold) == 24 and ev.meta["minhash_threshold"] == 0.8


def test_bad_input_names_record_and_field(tmp_path):
    cases = {
        "cleaning.boilerplate.gold[0].end": {"boilerplate": {"gold": [[5, 5]], "removed": []}},
        "cleaning.pii.pred[0].type": {"pii": {"gold": [], "pred": [{"start": 0, "end": 1}]}},
        "cleaning.language.gold": {"language": {"gold": 7}},
        "cleaning.extra": {"extra": 1},
    }
    for field, sec in cases.items():
        with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
            score_cleaning(None, [{"id": "r1", "cleaning": sec}])
    with pytest.raises(InputError, match="cleaning.doc_id"):
        score_cleaning(
            None, [{"id": "a", "cleaning": {"doc_id": "x"}}, {"id": "b", "cleaning": {"doc_id": "x"}}]
        )
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "a", "cleaning": {"text": 3}}) + "\n")
    assert main(["score", "cleaning", "--data", str(bad)]) == 2


def test_score_cleaning_cli_json():
    res = CliRunner().invoke(cli, ["score", "cleaning", "--data", str(DATA), "--format", "json"])
    assert res.exit_code == 0, res.output
    p = json.loads(res.output)
    assert p["command"] == "score cleaning"
    assert p["metrics"]["cleaning.pii_recall_overlap"]["value"] == pytest.approx(2 / 3)
    assert p["breakdowns"]["slice:doc_class"]["manual"]["metrics"]["cleaning.boilerplate_recall"][
        "value"
    ] == pytest.approx(1 / 3)


def test_cleaning_gates_in_the_audit(tmp_path):
    gates = [
        "cleaning.pii_recall_overlap[slice:doc_class=manual] >= 0.6",
        "cleaning.pii_recall[slice:doc_class=forum] >= 0.5",
        "cleaning.nfc_nfkc_equal_rate >= 0.75",
    ]
    cfg = config_from_mapping(
        {
            "ontology": str(ONTO),
            "records": str(DATA),
            "families": {"cleaning": {}},
            "gates": gates,
            "min_rows": 1,
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    by = {str(r.gate): r for r in res.gate_results}
    g = by["cleaning.pii_recall_overlap[slice:doc_class=manual] >= 0.6"]
    assert (g.status, g.observed) == ("pass", pytest.approx(2 / 3))
    assert by["cleaning.pii_recall[slice:doc_class=forum] >= 0.5"].status == "missing"
    assert by["cleaning.nfc_nfkc_equal_rate >= 0.75"].status == "pass"


def test_default_ignorable_table_equals_the_regex_module():
    regex = pytest.importorskip("regex")
    from kg_rageval.families.cleaning.unicode import is_default_ignorable

    prop = regex.compile(r"\p{Default_Ignorable_Code_Point}")
    differ = [hex(cp) for cp in range(0x110000) if bool(prop.match(chr(cp))) != is_default_ignorable(cp)]
    assert differ == []
