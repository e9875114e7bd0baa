"""The batched generation families (one ``hierarchical_counts`` call, each distinct text linked
and normalised once) give exactly the evaluations of the per-record implementation they
replaced (``generation_reference.py``, the code before issue #20): every metric, sum, row,
unscored record and meta, compared as the JSON ``to_dict`` writes, on the bundled fixtures and
on generated ATT&CK and vehicle records that reach every branch (several references, given and
linked concepts, ids the ontology lacks, refusals, missing answers, contexts, labels)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import generation_reference as ref
import pytest

from kg_rageval.base.errors import UnknownIdError
from kg_rageval.families.generation import load_judgments, score_correctness, score_generation
from kg_rageval.families.generation.concepts import (
    MemoLinker,
    concepts_in,
    dictionary_linker,
    linker_name,
    memoised,
)
from kg_rageval.families.generation.squad import SquadScorer, exact_match_score, f1_score, normalize_answer
from kg_rageval.ontology import IdOptions, load_ontology
from kg_rageval.records import read_records

pytestmark = pytest.mark.slow  # batched paths against references over generated ATT&CK records (~45 s)


ROOT = Path(__file__).resolve().parents[3]
FIX = ROOT / "fixtures"
ATTACK = ROOT / "ontologies" / "enterprise-attack-18.1.json.gz"
BREAKDOWNS = ("gold_node", "slice:intent")


def as_json(evset) -> dict:
    out = {}
    for name, ev in evset.items():
        keys = [k for k in BREAKDOWNS if k in ev.keys]
        out[name] = json.loads(json.dumps(ev.to_dict(rows=True, breakdowns=keys), allow_nan=False))
    return out


def assert_same(ontology, records, **kw) -> dict:
    new = as_json(
        score_generation(
            ontology,
            records,
            judge="none",
            **{k: v for k, v in kw.items() if k != "ids"},
            **(kw.get("ids") or {}),
        )
    )
    opts = IdOptions.of(**(kw.pop("ids", None) or {}))
    old = as_json(ref.score_generation(ontology, records, ids=opts, **kw))
    for fam in old:
        assert new[fam] == old[fam], fam
    return new


# ------------------------------------------------------------ bundled fixtures
def test_generation_fixture_equals_reference():
    onto = load_ontology(FIX / "generation" / "vehicles.csv")
    recs = list(read_records(FIX / "generation" / "records.jsonl"))
    for judgments in (None, load_judgments(FIX / "generation" / "judgments.jsonl")):
        for strip in (True, False):
            got = assert_same(onto, recs, judgments=judgments, strip_citations=strip)
    assert got["correctness"]["n_rows"] == 2 and got["unseen_concepts"]["n_rows"] == 4


@pytest.mark.parametrize(
    "path",
    [
        "generation/prov_records.jsonl",
        "generation/prov_repeat.jsonl",
        "quality/records.jsonl",
        "conformance/records.jsonl",
    ],
)
def test_other_bundled_record_files_equal_reference(path):
    recs = list(read_records(FIX / path))
    onto = load_ontology(ATTACK if path.startswith("conformance") else FIX / "generation" / "vehicles.csv")
    assert_same(onto, recs, ids={"on_unknown_gold": "count"})


# ------------------------------------------------------------ generated records
def _phrase(rng: random.Random, label: str) -> str:
    """A surface variant of a label that SQuAD normalisation may or may not equate."""
    return rng.choice(
        [
            label,
            f"The {label}.",
            label.upper(),
            f"{label}, an answer",
            f"a {label.lower()}!",
            label.split()[0],
            "",
        ]
    )


def generated(onto, n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    nodes = [i for i in range(1, len(onto)) if onto.labels[i] and int(onto.status[i]) == 0]
    recs = []
    for q in range(n):
        g, p = onto.ids[rng.choice(nodes)], onto.ids[rng.choice(nodes)]
        if rng.random() < 0.5:
            p = g
        gl, pl = onto.label(g), onto.label(p)
        rec: dict = {
            "id": f"r{q}",
            "slices": {"intent": rng.choice(["lookup", "compare"])},
            "labels": {"gold": [g]},
        }
        answer: dict = {}
        u = rng.random()
        if u < 0.06:
            answer["refused"] = True
        if u > 0.04:
            answer["text"] = _phrase(rng, pl) + rng.choice(["", " [1]", " [doc-1, doc-2].", f" and {gl}"])
        if rng.random() < 0.2:
            answer["concepts"] = rng.sample([p, g, "NOT-AN-ID"], rng.randint(0, 3))
        if rng.random() < 0.7:
            answer["confidence"] = rng.choice([0.0, 0.1, 0.15, 1.0, round(rng.random(), 3)])
        if rng.random() < 0.3 and not answer.get("refused"):
            sup = [f"claim {k}" for k in range(rng.randint(0, 3))]
            answer["judgment"] = {"claims": sup, "supported": sup[:1], "unsupported": sup[1:]}
        if answer and rng.random() < 0.95:
            rec["answer"] = answer
        reference: dict = {}
        v = rng.random()
        if v < 0.85:
            reference["answer"] = gl if v < 0.5 else [gl, _phrase(rng, gl) or gl, f"{pl} or {gl}"]
        if rng.random() < 0.8:
            reference["answerable"] = rng.random() < 0.9
        if rng.random() < 0.15:
            reference["concepts"] = rng.sample([g, p], rng.randint(1, 2))
        if rng.random() < 0.1:
            reference["correct"] = rng.random() < 0.5
        if rng.random() < 0.6:
            rec["retrieval"] = {
                "contexts": [
                    rng.choice([f"About {gl}.", {"id": "d1", "text": f"{pl} is here."}, "Nothing relevant."])
                    for _ in range(rng.randint(0, 3))
                ]
            }
            if rng.random() < 0.5:
                reference["unseen_concepts"] = rng.sample([p, g], rng.randint(0, 2))
        if reference:
            rec["reference"] = reference
        recs.append(rec)
    return recs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_attack_records_equal_reference(seed):
    onto = load_ontology(ATTACK)
    recs = generated(onto, 400, seed)
    got = assert_same(onto, recs, ids={"on_unknown_gold": "count"}, n_bins=7)
    corr = got["correctness"]
    # the records reach the branches the batching touched
    assert corr["sums"]["concept_scored"] > 100 and corr["sums"]["concepts_not_in_ontology"] > 0
    assert 0 < corr["sums"]["em_sum"] < corr["sums"]["qa_scored"]
    assert {"unanswerable", "no reference answer"} <= set(corr["unscored"])
    assert got["unseen_concepts"]["sums"]["flagged"] > 0 and got["unseen_concepts"]["sums"]["labelled"] > 0


def test_generated_vehicle_records_equal_reference():
    onto = load_ontology(FIX / "generation" / "vehicles.csv")
    recs = generated(onto, 300, 7)
    assert_same(onto, recs, ids={"on_unknown_gold": "count"}, strip_citations=False)


def test_empty_and_unscored_only_inputs_equal_reference():
    onto = load_ontology(FIX / "generation" / "vehicles.csv")
    assert_same(onto, [])
    assert_same(onto, [{"id": "a"}, {"id": "b", "reference": {"answerable": False}}])


# ------------------------------------------------------------ the parts, on their own
def test_squad_fast_paths_equal_the_official_script():
    rng = random.Random(3)
    words = [
        "a",
        "an",
        "the",
        "The",
        "Sedan",
        "sedan.",
        "car",
        "car,",
        "it's",
        "é",
        "--",
        " ",
        "\t",
        "thE",
        "anne",
    ]
    texts = ["", " ", "a", "the the", "Sedan!", "The sedan", "sedan car car", "an apple a day"]
    texts += [" ".join(rng.choice(words) for _ in range(rng.randint(0, 6))) for _ in range(300)]
    scorer = SquadScorer()
    for p in texts[:60]:
        for g in texts:
            assert normalize_answer(p) == ref.normalize_answer(p)
            assert f1_score(p, g) == float(ref.f1_score(p, g))
            assert exact_match_score(p, g) == float(ref.exact_match_score(p, g))
        refs = rng.sample(texts, 3)
        assert scorer.scores(p, refs) == (
            float(ref.metric_max_over_ground_truths(ref.exact_match_score, p, refs)),
            float(ref.metric_max_over_ground_truths(ref.f1_score, p, refs)),
        )
        assert scorer.exact_match(p, refs) == scorer.scores(p, refs)[0]


def test_memo_linker_links_each_distinct_text_once():
    onto = load_ontology(FIX / "generation" / "vehicles.csv")
    calls: list[str] = []

    def linker(text):
        calls.append(text)
        return dictionary_linker(onto)(text)

    memo = MemoLinker(linker)
    assert memo.name == linker_name(linker) == "function" and memoised(memo) is memo
    texts = ["A sedan.", "A boat", "A sedan."]
    assert concepts_in(texts, memo) == concepts_in(texts, dictionary_linker(onto)) == {"sedan", "boat"}
    assert memo("A sedan.") == {"sedan"} and calls == ["A sedan.", "A boat"]
    # bounded: a full memo forgets everything, then links again (same answers)
    small = MemoLinker(linker, max_size=2)
    calls.clear()
    assert [small(t) for t in ["A sedan.", "A boat", "A car", "A sedan."]] == [
        {"sedan"},
        {"boat"},
        {"car"},
        {"sedan"},
    ]
    assert calls == ["A sedan.", "A boat", "A car", "A sedan."] and len(small._seen) == 2


def test_bounded_caches_give_the_same_evaluations(monkeypatch):
    import kg_rageval.families.generation.concepts as concepts
    import kg_rageval.families.generation.squad as squad

    onto = load_ontology(ATTACK)
    recs = generated(onto, 200, 5)
    full = as_json(score_generation(onto, recs, on_unknown_gold="count"))
    monkeypatch.setattr(squad.SquadScorer.__init__, "__defaults__", (3,))
    monkeypatch.setattr(concepts.MemoLinker.__init__, "__defaults__", (3,))
    assert SquadScorer().max_size == 3
    assert as_json(score_generation(onto, recs, on_unknown_gold="count")) == full


def test_a_linked_id_the_ontology_lacks_still_names_the_record():
    onto = load_ontology(FIX / "generation" / "vehicles.csv")
    recs = [
        {"id": "ok", "answer": {"text": "x"}, "reference": {"answer": "y"}},
        {"id": "bad", "answer": {"text": "x"}, "reference": {"answer": "z"}},
    ]

    def linker(text):
        return frozenset({"sedan"} if text != "z" else {"ghost"})

    with pytest.raises(UnknownIdError, match="ghost") as exc:
        score_correctness(recs, onto, linker=linker)
    assert "bad" in str(exc.value)
    with pytest.raises(UnknownIdError, match="ghost") as exc:
        ref.score_correctness(recs, onto, linker=linker, ids=None)
    assert "bad" in str(exc.value)


def test_shared_row_keys_equal_each_family_on_its_own():
    """score_generation reads each record's breakdown keys and slice names once for all five
    families (``fields.shared_row_keys``); every family called on its own gives the same."""
    from kg_rageval.families.generation import (
        score_calibration,
        score_faithfulness,
        score_refusal,
        score_unseen,
    )
    from kg_rageval.families.generation.concepts import dictionary_linker
    from kg_rageval.records import fields

    onto = load_ontology(ATTACK)
    recs = generated(onto, 300, 7)
    for i, r in enumerate(recs):  # records with and without slices, several slice names
        if i % 4 == 0:
            r.pop("slices", None)
        elif i % 4 == 1:
            r["slices"] = {"intent": "lookup", "lane": ["a", "b"]}
    got = as_json(score_generation(onto, recs))
    assert fields._KEYS_MEMO.get() is None  # the shared keys live only during the call
    linker = dictionary_linker(onto)
    alone = {
        "faithfulness": score_faithfulness(recs),
        "correctness": score_correctness(recs, onto, linker=linker),
        "refusal": score_refusal(recs),
        "unseen_concepts": score_unseen(recs, onto, linker=linker),
        "calibration": score_calibration(recs),
    }
    for name, ev in alone.items():
        keys = [k for k in ("gold_node", "slice:intent", "slice:lane") if k in ev.keys]
        assert keys[-1] == "slice:lane"
        want = json.loads(json.dumps(ev.to_dict(rows=True, breakdowns=keys), allow_nan=False))
        full = score_generation(onto, recs)[name]
        assert list(full.keys) == list(ev.keys)
        assert json.loads(json.dumps(full.to_dict(rows=True, breakdowns=keys), allow_nan=False)) == want, name
    assert set(got) == set(alone)


def test_concept_linker_batches_equal_one_call_per_text(monkeypatch):
    """``DictionaryConceptLinker.many``, ``MemoLinker.many`` (chunked and cleared at a small
    ``max_size``) and ``concepts_in`` give the sets of one ``find`` per text; ``score_unseen``
    links all its texts in ONE ``find_many`` call and gives the reference's evaluation."""
    from kg_rageval.families.generation import score_unseen
    from kg_rageval.families.generation.concepts import DictionaryConceptLinker, link_many
    from kg_rageval.families.linking.dictionary import DictionaryLinker

    onto = load_ontology(ATTACK)
    recs = generated(onto, 300, 11)
    texts = [
        c if isinstance(c, str) else c["text"]
        for r in recs
        for c in [(r.get("answer") or {}).get("text") or "", *(r.get("retrieval") or {}).get("contexts", [])]
    ]
    one = DictionaryConceptLinker(onto)
    expected = [one(t) for t in texts]
    assert sum(map(bool, expected)) > 100
    assert one.many(texts) == expected == link_many(texts, one)
    assert MemoLinker(one, max_size=7).many(texts) == expected == MemoLinker(one).many(texts)
    assert concepts_in(texts, MemoLinker(one)) == frozenset().union(*expected)
    calls = {"find": 0, "find_many": 0}
    for name in calls:

        def counted(self, arg, _name=name, _fn=getattr(DictionaryLinker, name)):  # noqa: B008 - bound per name
            calls[_name] += 1
            return _fn(self, arg)

        monkeypatch.setattr(DictionaryLinker, name, counted)
    got = score_unseen(recs, onto, linker=DictionaryConceptLinker(onto))
    assert calls == {"find": 0, "find_many": 1}
    want = ref.score_unseen(recs, onto, linker=MemoLinker(one), ids=IdOptions())
    assert json.dumps(got.to_dict(rows=True)) == json.dumps(want.to_dict(rows=True))
    assert got.to_dict()["sums"]["flagged"] > 0
