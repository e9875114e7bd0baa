"""End to end: linking sets built from ATT&CK and the Disease Ontology (labels and synonyms as
gold mentions, held-out leaves as NIL), linked by the dictionary and embedding linkers, scored.

The figures in docs/linking.md come from ``benchmarks/bench_linking.py quality`` on the same
sets; here the checks are the properties those figures must have."""

from __future__ import annotations

import pytest

from kg_rageval.families.linking import score_linking
from kg_rageval.families.linking.dictionary import DictionaryLinker
from kg_rageval.families.linking.testset import build_linking_set, run_linker

SETS = {
    "attack": "attack/enterprise-attack-techniques-18.1.json.gz",
    "doid": "doid/DO_cancer_slim.obo",
}

pytestmark = pytest.mark.shared_data


@pytest.fixture(scope="module", params=sorted(SETS))
def linking_set(request, shared_data):
    from kg_rageval.ontology import load_ontology

    onto = load_ontology(shared_data / SETS[request.param])
    records, held = build_linking_set(onto, seed=0)
    return request.param, onto, records, held


def _v(ev):
    return {k: m.value for k, m in ev.metrics().items()}


@pytest.mark.slow
def test_linking_set_shape(linking_set):
    name, onto, records, held = linking_set
    gold = [g for r in records for g in r["mentions"]["gold"]]
    nil = [g for g in gold if g["id"] is None]
    assert len(nil) == len(held) and abs(len(held) / len(records) - 0.15) < 0.01
    for r in records:
        g = r["mentions"]["gold"][0]
        if g["id"] is None:
            # held-out leaf, nearest = its parent
            assert g["nearest"] in onto.parents(g["held_out"])
    # ATT&CK has no synonyms: its "synonym" draws fall back to the label
    expected = {"label", "case", "typo"} | ({"synonym"} if name == "doid" else set())
    assert {r["slices"]["variant"] for r in records} == expected


def test_dictionary_end_to_end(linking_set):
    name, onto, records, held = linking_set
    d = DictionaryLinker(onto, exclude=held)
    spans = score_linking(onto, run_linker(d, records, mode="gold_spans"))
    v = _v(spans)
    assert v["mention_f1"] == 1.0  # gold spans given
    assert v["over_links"] == 0  # held-out labels are unique and excluded: it abstains
    assert v["nil_recall"] == 1.0 and v["correct_abstentions"] == len(held)
    by_variant = spans.breakdown("slice:variant")
    # exact forms link; typos cannot (abstentions)
    assert by_variant["typo"]["metrics"]["strong_link_match_recall"].value < 0.2
    assert by_variant["label"]["metrics"]["strong_link_match_recall"].value > 0.6
    assert by_variant["case"]["metrics"]["strong_link_match_recall"].value == pytest.approx(
        by_variant["label"]["metrics"]["strong_link_match_recall"].value, abs=0.2
    )
    det = score_linking(onto, run_linker(d, records, mode="detect"))
    detect = _v(det)
    # detection mode cannot find held-out mentions: strong_nil_match recall is 0, not missing
    assert detect["strong_nil_match_recall"] == 0.0
    # a misspelt form still matches its intact sub-phrases: spurious mentions come from typos
    by_var = det.breakdown("slice:variant")
    assert by_var["label"]["metrics"]["mention_precision"].value > 0.8
    assert by_var["typo"]["metrics"]["mention_precision"].value < 0.5
    if name == "attack":
        # ATT&CK reuses sub-technique names under several techniques: the abstain rule shows up
        assert v["abstentions"] > 10 and v["wrong_links"] == 0
        lca = _v(
            score_linking(
                onto,
                run_linker(DictionaryLinker(onto, exclude=held, ambiguous="lca"), records, mode="gold_spans"),
            )
        )
        # the LCA of same-named sub-techniques is a tactic or the matrix: over-generalisation
        assert lca["wrong_links"] > 0
        assert lca["wrong_link_ancestor"] + lca["wrong_link_parent"] == 1.0


@pytest.mark.slow
def test_embedding_end_to_end(linking_set):
    pytest.importorskip("sentence_transformers")
    from kg_rageval.families.linking.embedding import EmbeddingLinker, load_model

    name, onto, records, held = linking_set
    e = EmbeddingLinker(onto, exclude=held, model=load_model(), nil_threshold=0.7)
    ev = score_linking(onto, run_linker(e, records, mode="gold_spans"))
    v = _v(ev)
    dic = score_linking(onto, run_linker(DictionaryLinker(onto, exclude=held), records, mode="gold_spans"))
    typo_e = ev.breakdown("slice:variant")["typo"]["metrics"]["strong_link_match_recall"].value
    typo_d = dic.breakdown("slice:variant")["typo"]["metrics"]["strong_link_match_recall"].value
    assert typo_e > typo_d + 0.3  # the re-ranker recovers misspelt mentions
    # it over-links held-out concepts, mostly to near misses of their parent
    assert v["over_links"] > 0 and v["over_link_near_rate"] > 0.6
    assert 0 < v["nil_recall"] < 1
    assert v["hierarchical_f1"] > 0.8 and v["wu_palmer"] > 0.8
